// Tensors: factories, handles and conversions, metadata accessors (one at a
// time and ct_tensor_metadata), printing, comparison. Codes are in codes.cpp,
// tensors over caller memory in from_blob.cpp.
#include "checks.h"
#include "internal.h"
#include "torch_version.h"

#include <ATen/ScalarOps.h>

#include <cmath>
#include <sstream>
#include <vector>

namespace {

// Validated tensor options for the factories.
ct_status factory_options(const char *func, int32_t dtype, int32_t device_type,
                          int32_t device_index, int32_t requires_grad, at::TensorOptions *out) {
  c10::ScalarType st;
  c10::Device dev(c10::DeviceType::CPU);
  if (ct_status s = ct::check_dtype(func, dtype, &st)) return s;
  if (ct_status s = ct::to_device(func, device_type, device_index, &dev)) return s;
  if (requires_grad && !(c10::isFloatingType(st) || c10::isComplexType(st)))
    return ct::set_error(CT_ERR_TYPE, "%s: requires_grad needs a floating or complex dtype, got %s",
                         func, ct_dtype_name(dtype));
  *out = at::TensorOptions().dtype(st).device(dev).requires_grad(requires_grad != 0);
  return CT_OK;
}

// Shared body of the size-taking factories.
template <class Make>
ct_status make_sized(const char *func, ct_tensor **out, const int64_t *sizes, size_t ndim,
                     int32_t dtype, int32_t device_type, int32_t device_index,
                     int32_t requires_grad, Make make) {
  return ct::guard(func, [&] {
    if (!out) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'out' is NULL", func);
    if (ct_status s = ct::check_sizes(func, sizes, ndim)) return s;
    at::TensorOptions opts;
    if (ct_status s = factory_options(func, dtype, device_type, device_index, requires_grad, &opts))
      return s;
    at::IntArrayRef shape(sizes, ndim);
    at::Tensor t;
    t = make(shape, opts.requires_grad(false));  // a leaf; requires_grad set below
    if (requires_grad) t.set_requires_grad(true);
    *out = ct::new_tensor(std::move(t));
    return CT_OK;
  });
}

// make_sized for the random factories, which need a floating dtype.
template <class Make>
ct_status make_random(const char *func, ct_tensor **out, const int64_t *sizes, size_t ndim,
                      int32_t dtype, int32_t device_type, int32_t device_index,
                      int32_t requires_grad, Make make) {
  c10::ScalarType st;
  if (ct::to_scalar_type(dtype, &st) && !c10::isFloatingType(st) && !c10::isComplexType(st))
    return ct::set_error(CT_ERR_TYPE, "%s: needs a floating dtype, got %s", func,
                         ct_dtype_name(dtype));
  return make_sized(func, out, sizes, ndim, dtype, device_type, device_index, requires_grad, make);
}

// An undefined tensor is refused by name rather than by LibTorch's message.
#define CT_CHECK_DEFINED(h)                                     \
  do {                                                          \
    if (!(h)->t.defined())                                      \
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,             \
                           "%s: argument '%s' is an undefined " \
                           "tensor",                            \
                           ct_fn_, #h);                         \
  } while (0)

// ct_tensor_equal and ct_tensor_allclose: *out = 1 when same(a, b), for two
// defined tensors (and tolerances that are >= 0).
template <class Same>
ct_status compare(const char *ct_fn_, int32_t *out, const ct_tensor *a, const ct_tensor *b,
                  bool tolerances_ok, Same same) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(a);
    CT_CHECK_NOT_NULL(b);
    CT_CHECK_DEFINED(a);
    CT_CHECK_DEFINED(b);
    CT_CHECK_ARG(tolerances_ok, "%s: rtol and atol must be >= 0", ct_fn_);
    *out = same(a->t, b->t) ? 1 : 0;
    return CT_OK;
  });
}

}  // namespace

extern "C" {

// ---- Factories -------------------------------------------------------------

// The size-taking factories without extra arguments: `maker` is make_sized or
// make_random, `fn` the at:: factory, called as fn(sizes, options).
#define CT_SIZED_FACTORY(name, maker, fn)                                                     \
  ct_status name(ct_tensor **out, const int64_t *sizes, size_t ndim, int32_t dtype,           \
                 int32_t device_type, int32_t device_index, int32_t requires_grad) {          \
    return maker(__func__, out, sizes, ndim, dtype, device_type, device_index, requires_grad, \
                 [](at::IntArrayRef s, const at::TensorOptions &o) { return fn(s, o); });     \
  }

CT_SIZED_FACTORY(ct_tensor_empty, make_sized, at::empty)
CT_SIZED_FACTORY(ct_tensor_zeros, make_sized, at::zeros)
CT_SIZED_FACTORY(ct_tensor_ones, make_sized, at::ones)
CT_SIZED_FACTORY(ct_tensor_rand, make_random, at::rand)
CT_SIZED_FACTORY(ct_tensor_randn, make_random, at::randn)

ct_status ct_tensor_full(ct_tensor **out, const int64_t *sizes, size_t ndim, double value,
                         int32_t dtype, int32_t device_type, int32_t device_index,
                         int32_t requires_grad) {
  return make_sized(
      __func__, out, sizes, ndim, dtype, device_type, device_index, requires_grad,
      [value](at::IntArrayRef s, const at::TensorOptions &o) { return at::full(s, value, o); });
}

ct_status ct_tensor_wrapped_number(ct_tensor **out, double value, int32_t dtype) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    *out = nullptr;
    if (dtype != CT_BOOL && dtype != CT_INT64 && dtype != CT_FLOAT64)
      return ct::set_error(CT_ERR_TYPE,
                           "%s: dtype must be CT_BOOL, CT_INT64 or CT_FLOAT64 (a Python bool, "
                           "int or float), got %d",
                           ct_fn_, static_cast<int>(dtype));
    CT_CHECK_ARG(dtype != CT_INT64 || (std::fabs(value) <= 9007199254740992.0 &&
                                       value == std::trunc(value)),
                 "%s: %g is not an integer that a double holds exactly (|n| <= 2^53)", ct_fn_,
                 value);
    c10::Scalar s = dtype == CT_BOOL    ? c10::Scalar(value != 0.0)
                    : dtype == CT_INT64 ? c10::Scalar(static_cast<int64_t>(value))
                                        : c10::Scalar(value);
    at::Tensor t = c10::scalar_to_tensor(s);  // no dispatch: CPU's static path
    t.unsafeGetTensorImpl()->set_wrapped_number(true);
    *out = ct::new_tensor(std::move(t));
    return CT_OK;
  });
}

ct_status ct_tensor_empty_like(ct_tensor **out, const ct_tensor *t, int32_t dtype) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_DEFINED(t);
    at::TensorOptions o = t->t.options().requires_grad(false);
    if (dtype != CT_DTYPE_KEEP) {
      c10::ScalarType st;
      if (!ct::to_scalar_type(dtype, &st))
        return ct::set_error(CT_ERR_TYPE, "%s: unknown dtype code %d", ct_fn_,
                             static_cast<int>(dtype));
      o = o.dtype(st);
    }
#if CT_TORCH_AT_LEAST(2, 0)
    // sym_sizes: a tracer's fake tensor may have symbolic sizes (a Meta kernel
    // under torch.compile with dynamic shapes), which sizes() refuses.
    *out = ct::new_tensor(at::empty_symint(t->t.sym_sizes(), o));
#else
    *out = ct::new_tensor(at::empty(t->t.sizes(), o));
#endif
    return CT_OK;
  });
}

ct_status ct_tensor_arange(ct_tensor **out, double start, double end, double step, int32_t dtype,
                           int32_t device_type, int32_t device_index, int32_t requires_grad) {
  if (!(step != 0.0) || (end - start) * step < 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: step %g does not lead from %g to %g",
                         __func__, step, start, end);
  return make_sized(
      __func__, out, nullptr, 0, dtype, device_type, device_index, requires_grad,
      [=](at::IntArrayRef, const at::TensorOptions &o) { return at::arange(start, end, step, o); });
}

ct_status ct_tensor_eye(ct_tensor **out, int64_t n, int64_t m, int32_t dtype, int32_t device_type,
                        int32_t device_index, int32_t requires_grad) {
  if (n < 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: n must be >= 0, got %lld", __func__,
                         static_cast<long long>(n));
  return make_sized(
      __func__, out, nullptr, 0, dtype, device_type, device_index, requires_grad,
      [=](at::IntArrayRef, const at::TensorOptions &o) { return at::eye(n, m < 0 ? n : m, o); });
}

ct_status ct_tensor_from_data(ct_tensor **out, const void *data, const int64_t *sizes, size_t ndim,
                              int32_t dtype, int32_t device_type, int32_t device_index) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    if (ct_status s = ct::check_sizes(ct_fn_, sizes, ndim)) return s;
    at::TensorOptions opts;
    if (ct_status s = factory_options(ct_fn_, dtype, device_type, device_index, 0, &opts)) return s;
    at::IntArrayRef shape(sizes, ndim);
    int64_t numel = c10::multiply_integers(shape);
    if (!data && numel > 0)
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'data' is NULL", ct_fn_);
    at::Tensor t = at::empty(shape, opts.device(c10::kCPU));
    if (numel > 0) std::memcpy(t.data_ptr(), data, t.nbytes());
    if (!opts.device().is_cpu()) t = t.to(opts.device());
    *out = ct::new_tensor(std::move(t));
    return CT_OK;
  });
}

// ---- Handles and conversions ------------------------------------------------

void ct_tensor_free(ct_tensor *t) { delete t; }

void ct_tensor_free_slot(ct_tensor **slot) {
  if (!slot) return;
  ct_tensor *t = *slot;
  *slot = nullptr;
  delete t;
}

#define CT_UNARY_TENSOR_OP(fname, needs_defined, expr)   \
  ct_status fname(ct_tensor **out, const ct_tensor *t) { \
    const char *const ct_fn_ = __func__;                 \
    return ct::guard(ct_fn_, [&] {                       \
      CT_CHECK_NOT_NULL(out);                            \
      CT_CHECK_NOT_NULL(t);                              \
      if (needs_defined) CT_CHECK_DEFINED(t);            \
      const at::Tensor &x = t->t;                        \
      *out = ct::new_tensor(expr);                       \
      return CT_OK;                                      \
    });                                                  \
  }

CT_UNARY_TENSOR_OP(ct_tensor_ref, false, x)
CT_UNARY_TENSOR_OP(ct_tensor_clone, true, x.clone())
CT_UNARY_TENSOR_OP(ct_tensor_detach, true, x.detach())
CT_UNARY_TENSOR_OP(ct_tensor_contiguous, true, x.contiguous())

ct_status ct_tensor_to(ct_tensor **out, const ct_tensor *t, int32_t device_type,
                       int32_t device_index, int32_t dtype, int32_t non_blocking, int32_t copy) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_DEFINED(t);
    c10::ScalarType st = t->t.scalar_type();
    c10::Device dev = t->t.device();
    if (dtype != CT_DTYPE_KEEP)
      if (ct_status s = ct::check_dtype(ct_fn_, dtype, &st)) return s;
    if (device_type != CT_DEVICE_KEEP)
      if (ct_status s = ct::to_device(ct_fn_, device_type, device_index, &dev)) return s;
    *out = ct::new_tensor(t->t.to(dev, st, non_blocking != 0, copy != 0));
    return CT_OK;
  });
}

ct_status ct_tensor_copy_(ct_tensor *dst, const ct_tensor *src, int32_t non_blocking) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(dst);
    CT_CHECK_NOT_NULL(src);
    CT_CHECK_DEFINED(dst);
    CT_CHECK_DEFINED(src);
    dst->t.copy_(src->t, non_blocking != 0);
    return CT_OK;
  });
}

ct_status ct_tensor_fill_(ct_tensor *t, double value) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(t);
    CT_CHECK_DEFINED(t);
    t->t.fill_(value);
    return CT_OK;
  });
}

// ---- Metadata -----------------------------------------------------------------

// An undefined tensor (a null at::Tensor, e.g. an unused gradient) answers
// like NULL in every accessor: LibTorch's own accessors throw or lie for it.
static inline bool defined(const ct_tensor *t) { return t && t->t.defined(); }

int64_t ct_tensor_ndim(const ct_tensor *t) { return defined(t) ? t->t.dim() : -1; }
const int64_t *ct_tensor_sizes(const ct_tensor *t) {
  return defined(t) ? t->t.sizes().data() : nullptr;
}
const int64_t *ct_tensor_strides(const ct_tensor *t) {
  // Sparse and other strideless layouts throw on strides().
  if (!defined(t) || t->t.layout() != c10::kStrided) return nullptr;
  return t->t.strides().data();
}

// Size or stride of one dimension (negative dims count from the end).
static ct_status dim_query(const char *ct_fn_, int64_t *out, const ct_tensor *t, int64_t dim,
                           bool stride) {
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    if (!t->t.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor is undefined", ct_fn_);
    if (stride && t->t.layout() != c10::kStrided)
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: a tensor with layout %s has no strides",
                           ct_fn_, ct::layout_name(t->t.layout()));
    int64_t nd = t->t.dim();
    int64_t d = dim < 0 ? dim + nd : dim;
    if (d < 0 || d >= nd)
      return ct::set_error(CT_ERR_INDEX, "%s: dimension %lld out of range for a %lld-d tensor",
                           ct_fn_, static_cast<long long>(dim), static_cast<long long>(nd));
    *out = stride ? t->t.strides()[d] : t->t.sizes()[d];
    return CT_OK;
  });
}

ct_status ct_tensor_size(int64_t *out, const ct_tensor *t, int64_t dim) {
  return dim_query(__func__, out, t, dim, false);
}

ct_status ct_tensor_stride(int64_t *out, const ct_tensor *t, int64_t dim) {
  return dim_query(__func__, out, t, dim, true);
}

int64_t ct_tensor_numel(const ct_tensor *t) { return defined(t) ? t->t.numel() : -1; }
int64_t ct_tensor_storage_offset(const ct_tensor *t) {
  return defined(t) && t->t.layout() == c10::kStrided ? t->t.storage_offset() : -1;
}
size_t ct_tensor_element_size(const ct_tensor *t) {
  return t && t->t.defined() ? t->t.element_size() : 0;
}
size_t ct_tensor_nbytes(const ct_tensor *t) {
  return t && t->t.defined() ? static_cast<size_t>(t->t.numel()) * t->t.element_size() : 0;
}
int32_t ct_tensor_dtype(const ct_tensor *t) {
  return t && t->t.defined() ? ct::from_scalar_type(t->t.scalar_type()) : 0;
}
int32_t ct_tensor_device_type(const ct_tensor *t) {
  return t && t->t.defined() ? ct::device_type_code(t->t.device().type()) : 0;
}
int32_t ct_tensor_device_index(const ct_tensor *t) {
  if (!t || !t->t.defined() || t->t.device().is_cpu()) return -1;
  return t->t.device().index();
}
void *ct_tensor_data_ptr(const ct_tensor *t) {
  // All inline: an undefined or storage-less (e.g. sparse) tensor has a null
  // storage here. Hot in bindings, so no calls into libc10.
  if (!t) return nullptr;
  const c10::TensorImpl *impl = t->t.unsafeGetTensorImpl();
  const c10::Storage &st = impl->unsafe_storage();
  if (!st || impl->numel() == 0 || !st.data()) return nullptr;  // meta: no memory
  return const_cast<char *>(static_cast<const char *>(st.data())) +
         impl->storage_offset() * static_cast<int64_t>(impl->itemsize());
}
int32_t ct_tensor_is_contiguous(const ct_tensor *t) {
  return defined(t) && t->t.layout() == c10::kStrided && t->t.is_contiguous() ? 1 : 0;
}
int32_t ct_tensor_requires_grad(const ct_tensor *t) {
  return t && t->t.defined() && t->t.requires_grad() ? 1 : 0;
}
int32_t ct_tensor_is_defined(const ct_tensor *t) { return defined(t) ? 1 : 0; }

ct_status ct_tensor_to_string(char **out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    std::ostringstream os;
    if (t->t.defined())
      os << t->t;
    else
      os << "[ Tensor (undefined) ]";
    *out = ct::dup_string(os.str());
    return CT_OK;
  });
}

ct_status ct_tensor_equal(int32_t *out, const ct_tensor *a, const ct_tensor *b) {
  return compare(__func__, out, a, b, true,
                 [](const at::Tensor &x, const at::Tensor &y) { return x.equal(y); });
}

ct_status ct_tensor_allclose(int32_t *out, const ct_tensor *a, const ct_tensor *b, double rtol,
                             double atol, int32_t equal_nan) {
  return compare(__func__, out, a, b, rtol >= 0 && atol >= 0,
                 [&](const at::Tensor &x, const at::Tensor &y) {
                   return x.allclose(y, rtol, atol, equal_nan != 0);
                 });
}

}  // extern "C"

// ---- All metadata in one call (issue 12; owner: helper "src") ----------------

extern "C" ct_status ct_tensor_metadata(ct_tensor_info *out, const ct_tensor *t) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    CT_CHECK_NOT_NULL(t);
    if (out->size < sizeof(ct_tensor_info))
      return ct::set_error(CT_ERR_INVALID_ARGUMENT,
                           "%s: out->size is %zu, expected at least %zu (set it to "
                           "sizeof(ct_tensor_info))",
                           ct_fn_, out->size, sizeof(ct_tensor_info));
    if (!t->t.defined())
      return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor is undefined", ct_fn_);
    const c10::TensorImpl *impl = t->t.unsafeGetTensorImpl();
    const bool strided = impl->layout() == c10::kStrided;
    const c10::Device d = impl->device();
    out->dtype = ct::from_scalar_type(c10::typeMetaToScalarType(impl->dtype()));
    out->device_type = ct::device_type_code(d.type());
    out->device_index = d.is_cpu() ? -1 : d.index();
    out->ndim = static_cast<int32_t>(impl->dim());
    out->requires_grad = impl->requires_grad() ? 1 : 0;
    out->is_contiguous = strided && impl->is_contiguous() ? 1 : 0;
    out->numel = impl->numel();
    out->storage_offset = strided ? impl->storage_offset() : 0;
    out->data = ct_tensor_data_ptr(t);
    out->sizes = impl->sizes().data();
    out->strides = strided ? impl->strides().data() : nullptr;
    return CT_OK;
  });
}
