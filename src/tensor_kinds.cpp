// Tensors beyond plain strided ones: layouts, memory formats, quantized
// tensors (scale, zero point, integer representation, creation) and sparse
// index/value accessors.
#include "internal.h"

#include <cmath>
#include <sstream>

namespace {

bool layout_code(c10::Layout l, int32_t *out) {
  switch (l) {
    case c10::kStrided: *out = CT_LAYOUT_STRIDED; return true;
    case c10::kSparse: *out = CT_LAYOUT_SPARSE_COO; return true;
    case c10::kSparseCsr: *out = CT_LAYOUT_SPARSE_CSR; return true;
    case c10::kSparseCsc: *out = CT_LAYOUT_SPARSE_CSC; return true;
    case c10::kSparseBsr: *out = CT_LAYOUT_SPARSE_BSR; return true;
    case c10::kSparseBsc: *out = CT_LAYOUT_SPARSE_BSC; return true;
    case c10::kMkldnn: *out = CT_LAYOUT_MKLDNN; return true;
    default: return false;
  }
}

bool to_memory_format(int32_t code, c10::MemoryFormat *out) {
  switch (code) {
    case CT_MEMORY_FORMAT_CONTIGUOUS: *out = c10::MemoryFormat::Contiguous; return true;
    case CT_MEMORY_FORMAT_CHANNELS_LAST: *out = c10::MemoryFormat::ChannelsLast; return true;
    case CT_MEMORY_FORMAT_CHANNELS_LAST_3D: *out = c10::MemoryFormat::ChannelsLast3d; return true;
    default: return false;
  }
}

// A tensor argument and its name in messages.
struct NamedInput {
  const char *name;
  const ct_tensor *t;
};

// The argument is a handle of a defined tensor.
ct_status check_defined(const char *ct_fn_, const NamedInput &in) {
  if (in.t == nullptr)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument '%s' is NULL", ct_fn_, in.name);
  if (!in.t->t.defined())
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor is undefined", ct_fn_);
  return CT_OK;
}

#define CT_CHECK_DEFINED(h)                                                 \
  do {                                                                      \
    if (ct_status s_ = check_defined(ct_fn_, NamedInput{#h, h})) return s_; \
  } while (0)

// The tensor is quantized with one of the schemes in `per_channel` (true:
// per-channel schemes, false: per-tensor ones); -1 accepts any scheme.
ct_status check_quantized(const char *ct_fn_, const at::Tensor &t, int per_channel) {
  if (!t.is_quantized())
    return ct::set_error(CT_ERR_TYPE, "%s: the tensor is not quantized (dtype %s)", ct_fn_,
                         c10::toString(t.scalar_type()));
  if (per_channel < 0) return CT_OK;
  c10::QScheme q = t.qscheme();
  bool pc = q == c10::kPerChannelAffine || q == c10::kPerChannelSymmetric ||
            q == c10::kPerChannelAffineFloatQParams;
  if (pc != (per_channel != 0))
    return ct::set_error(CT_ERR_TYPE, "%s: the tensor is quantized %s, not %s", ct_fn_,
                         pc ? "per channel" : "per tensor", pc ? "per tensor" : "per channel");
  return CT_OK;
}

ct_status quantized_dtype(const char *ct_fn_, int32_t dtype, c10::ScalarType *st) {
  if (ct_status s = ct::known_dtype(ct_fn_, dtype, st)) return s;
  if (!c10::isQIntType(*st))
    return ct::set_error(CT_ERR_TYPE, "%s: dtype %s is not a quantized dtype", ct_fn_,
                         ct_dtype_name(dtype));
  return CT_OK;
}

// The quantized accessors: `get` reads a number or a new handle from a tensor
// that passes check_quantized(per_channel).
template <class Out, class Get>
ct_status quantized_part(const char *ct_fn_, Out *out, const ct_tensor *t, int per_channel,
                         Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    if (ct_status s = check_quantized(ct_fn_, t->t, per_channel)) return s;
    *out = get(t->t);
    return CT_OK;
  });
}

// The memory-format calls: `get` reads the answer for a known format.
template <class Out, class Get>
ct_status with_memory_format(const char *ct_fn_, Out *out, const ct_tensor *t,
                             int32_t memory_format, Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    c10::MemoryFormat mf;
    CT_CHECK_ARG(to_memory_format(memory_format, &mf), "%s: unknown memory format %d", ct_fn_,
                 memory_format);
    *out = get(t->t, mf);
    return CT_OK;
  });
}

// The quantizing factories: every input must be a defined tensor; `make`
// builds the result, given the quantized dtype `dtype` (kDtypeOfInput: the
// make_* calls, whose dtype comes from the integer tensor).
constexpr int32_t kDtypeOfInput = INT32_MIN;

// A quantization scale must be a positive finite number: LibTorch accepts
// 0, negative, NaN and infinite scales and then divides by them.
void check_scale(const char *func, double scale) {
  if (!(scale > 0) || !std::isfinite(scale))
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: scale must be positive and finite, got %g", func,
              scale);
}

void check_scales(const char *func, const at::Tensor &scales) {
  if (scales.numel() == 0) return;
  at::Tensor s = scales.to(at::kDouble);
  if (!(s > 0).logical_and(s.isfinite()).all().item<bool>())
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: every scale must be positive and finite", func);
}

// The axis a per-channel tensor is quantized along: one of t's dimensions.
void check_axis(const char *func, const at::Tensor &t, int64_t axis) {
  int64_t n = t.dim();
  if (axis < -n || axis >= n || n == 0)
    ct::raise(CT_ERR_INVALID_ARGUMENT, "%s: axis %lld is not a dimension of a %lld-d tensor", func,
              static_cast<long long>(axis), static_cast<long long>(n));
}

template <class Make>
ct_status quantized_factory(const char *ct_fn_, ct_tensor **out,
                            std::initializer_list<NamedInput> inputs, int32_t dtype, Make make) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    for (const NamedInput &in : inputs)
      if (ct_status s = check_defined(ct_fn_, in)) return s;
    c10::ScalarType st = c10::ScalarType::Undefined;
    if (dtype != kDtypeOfInput)
      if (ct_status s = quantized_dtype(ct_fn_, dtype, &st)) return s;
    *out = ct::new_tensor(make(st));
    return CT_OK;
  });
}

// The sparse accessors: `get` returns the part of a tensor of an accepted layout.
template <class Get>
ct_status sparse_part(const char *ct_fn_, ct_tensor **out, const ct_tensor *t,
                      std::initializer_list<c10::Layout> layouts, const char *what, Get get) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    c10::Layout l = t->t.layout();
    for (c10::Layout ok : layouts)
      if (l == ok) {
        *out = ct::new_tensor(get(t->t));
        return CT_OK;
      }
    std::ostringstream os;
    os << l;
    return ct::set_error(CT_ERR_TYPE, "%s: needs %s, got layout %s", ct_fn_, what,
                         os.str().c_str());
  });
}

bool row_compressed(c10::Layout l) { return l == c10::kSparseCsr || l == c10::kSparseBsr; }

}  // namespace

extern "C" {

ct_status ct_tensor_layout(int32_t *out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    if (!layout_code(t->t.layout(), out)) {
      std::ostringstream os;
      os << t->t.layout();
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: layout %s has no ctorch code", ct_fn_,
                           os.str().c_str());
    }
    return CT_OK;
  });
}

ct_status ct_tensor_is_contiguous_format(int32_t *out, const ct_tensor *t, int32_t memory_format) {
  return with_memory_format(
      __func__, out, t, memory_format,
      [](const at::Tensor &x, c10::MemoryFormat mf) { return x.is_contiguous(mf) ? 1 : 0; });
}

ct_status ct_tensor_contiguous_format(ct_tensor **out, const ct_tensor *t, int32_t memory_format) {
  return with_memory_format(
      __func__, out, t, memory_format,
      [](const at::Tensor &x, c10::MemoryFormat mf) { return ct::new_tensor(x.contiguous(mf)); });
}

ct_status ct_tensor_suggest_memory_format(int32_t *out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    switch (t->t.suggest_memory_format()) {
      case c10::MemoryFormat::ChannelsLast: *out = CT_MEMORY_FORMAT_CHANNELS_LAST; break;
      case c10::MemoryFormat::ChannelsLast3d: *out = CT_MEMORY_FORMAT_CHANNELS_LAST_3D; break;
      default: *out = CT_MEMORY_FORMAT_CONTIGUOUS; break;
    }
    return CT_OK;
  });
}

// ---- Quantized tensors --------------------------------------------------------

ct_status ct_tensor_q_scheme(int32_t *out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    if (ct_status s = check_quantized(ct_fn_, t->t, -1)) return s;
    switch (t->t.qscheme()) {
      case c10::kPerTensorAffine: *out = CT_QSCHEME_PER_TENSOR_AFFINE; break;
      case c10::kPerChannelAffine: *out = CT_QSCHEME_PER_CHANNEL_AFFINE; break;
      case c10::kPerTensorSymmetric: *out = CT_QSCHEME_PER_TENSOR_SYMMETRIC; break;
      case c10::kPerChannelSymmetric: *out = CT_QSCHEME_PER_CHANNEL_SYMMETRIC; break;
      case c10::kPerChannelAffineFloatQParams:
        *out = CT_QSCHEME_PER_CHANNEL_AFFINE_FLOAT_QPARAMS;
        break;
      default:
        return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: quantization scheme without a code",
                             ct_fn_);
    }
    return CT_OK;
  });
}

ct_status ct_tensor_q_scale(double *out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, 0, [](const at::Tensor &x) { return x.q_scale(); });
}

ct_status ct_tensor_q_zero_point(int64_t *out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, 0, [](const at::Tensor &x) { return x.q_zero_point(); });
}

ct_status ct_tensor_q_per_channel_scales(ct_tensor **out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, 1, [](const at::Tensor &x) {
    return ct::new_tensor(x.q_per_channel_scales());
  });
}

ct_status ct_tensor_q_per_channel_zero_points(ct_tensor **out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, 1, [](const at::Tensor &x) {
    return ct::new_tensor(x.q_per_channel_zero_points());
  });
}

ct_status ct_tensor_q_per_channel_axis(int64_t *out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, 1,
                        [](const at::Tensor &x) { return x.q_per_channel_axis(); });
}

ct_status ct_tensor_int_repr(ct_tensor **out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, -1,
                        [](const at::Tensor &x) { return ct::new_tensor(x.int_repr()); });
}

ct_status ct_tensor_dequantize(ct_tensor **out, const ct_tensor *t) {
  return quantized_part(__func__, out, t, -1,
                        [](const at::Tensor &x) { return ct::new_tensor(x.dequantize()); });
}

ct_status ct_tensor_quantize_per_tensor(ct_tensor **out, const ct_tensor *t, double scale,
                                        int64_t zero_point, int32_t dtype) {
  const char *fn = __func__;
  return quantized_factory(fn, out, {{"t", t}}, dtype, [&](c10::ScalarType st) {
    check_scale(fn, scale);
    return at::quantize_per_tensor(t->t, scale, zero_point, st);
  });
}

ct_status ct_tensor_quantize_per_channel(ct_tensor **out, const ct_tensor *t,
                                         const ct_tensor *scales, const ct_tensor *zero_points,
                                         int64_t axis, int32_t dtype) {
  const char *fn = __func__;
  return quantized_factory(fn, out, {{"t", t}, {"scales", scales}, {"zero_points", zero_points}},
                           dtype, [&](c10::ScalarType st) {
                             check_axis(fn, t->t, axis);
                             check_scales(fn, scales->t);
                             return at::quantize_per_channel(t->t, scales->t, zero_points->t, axis,
                                                             st);
                           });
}

ct_status ct_tensor_make_per_tensor_quantized(ct_tensor **out, const ct_tensor *int_repr,
                                              double scale, int64_t zero_point) {
  const char *fn = __func__;
  return quantized_factory(fn, out, {{"int_repr", int_repr}}, kDtypeOfInput, [&](c10::ScalarType) {
    check_scale(fn, scale);
    return at::_make_per_tensor_quantized_tensor(int_repr->t, scale, zero_point);
  });
}

ct_status ct_tensor_make_per_channel_quantized(ct_tensor **out, const ct_tensor *int_repr,
                                               const ct_tensor *scales,
                                               const ct_tensor *zero_points, int64_t axis) {
  const char *fn = __func__;
  return quantized_factory(
      fn, out, {{"int_repr", int_repr}, {"scales", scales}, {"zero_points", zero_points}},
      kDtypeOfInput, [&](c10::ScalarType) {
        check_axis(fn, int_repr->t, axis);
        check_scales(fn, scales->t);
        return at::_make_per_channel_quantized_tensor(int_repr->t, scales->t, zero_points->t, axis);
      });
}

// ---- Sparse tensors -----------------------------------------------------------

ct_status ct_tensor_sparse_indices(ct_tensor **out, const ct_tensor *t) {
  return sparse_part(__func__, out, t, {c10::kSparse}, "a sparse COO tensor",
                     [](const at::Tensor &x) { return x._indices(); });
}

ct_status ct_tensor_sparse_values(ct_tensor **out, const ct_tensor *t) {
  return sparse_part(
      __func__, out, t,
      {c10::kSparse, c10::kSparseCsr, c10::kSparseCsc, c10::kSparseBsr, c10::kSparseBsc},
      "a sparse tensor",
      [](const at::Tensor &x) { return x.layout() == c10::kSparse ? x._values() : x.values(); });
}

ct_status ct_tensor_sparse_compressed_indices(ct_tensor **out, const ct_tensor *t) {
  return sparse_part(__func__, out, t,
                     {c10::kSparseCsr, c10::kSparseCsc, c10::kSparseBsr, c10::kSparseBsc},
                     "a compressed sparse tensor (CSR, CSC, BSR, BSC)", [](const at::Tensor &x) {
                       return row_compressed(x.layout()) ? x.crow_indices() : x.ccol_indices();
                     });
}

ct_status ct_tensor_sparse_plain_indices(ct_tensor **out, const ct_tensor *t) {
  return sparse_part(__func__, out, t,
                     {c10::kSparseCsr, c10::kSparseCsc, c10::kSparseBsr, c10::kSparseBsc},
                     "a compressed sparse tensor (CSR, CSC, BSR, BSC)", [](const at::Tensor &x) {
                       return row_compressed(x.layout()) ? x.col_indices() : x.row_indices();
                     });
}

ct_status ct_tensor_to_dense(ct_tensor **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_DEFINED(t);
    *out = ct::new_tensor(t->t.layout() == c10::kStrided ? t->t : t->t.to_dense());
    return CT_OK;
  });
}

}  // extern "C"
