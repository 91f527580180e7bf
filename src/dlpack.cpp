// DLPack export and import, legacy (DLManagedTensor) and versioned
// (DLManagedTensorVersioned, DLPack 1.x), implemented here rather than through
// at::toDLPack, whose signature and DLPack version differ between LibTorch
// releases. The struct declarations come from ctorch.h; the static_asserts
// below pin their layout to the DLPack specification (x86-64/aarch64 LP64).
#include "checks.h"
#include "internal.h"

#include <atomic>
#include <cstring>
#include <sstream>
#include <memory>
#include <vector>

static_assert(sizeof(DLPackVersion) == 8, "DLPackVersion layout");
static_assert(sizeof(DLDevice) == 8, "DLDevice layout");
static_assert(sizeof(DLDataType) == 4, "DLDataType layout");
static_assert(offsetof(DLTensor, data) == 0, "DLTensor.data");
static_assert(offsetof(DLTensor, device) == 8, "DLTensor.device");
static_assert(offsetof(DLTensor, ndim) == 16, "DLTensor.ndim");
static_assert(offsetof(DLTensor, dtype) == 20, "DLTensor.dtype");
static_assert(offsetof(DLTensor, shape) == 24, "DLTensor.shape");
static_assert(offsetof(DLTensor, strides) == 32, "DLTensor.strides");
static_assert(offsetof(DLTensor, byte_offset) == 40, "DLTensor.byte_offset");
static_assert(sizeof(DLTensor) == 48, "DLTensor size");
static_assert(offsetof(DLManagedTensor, manager_ctx) == 48, "DLManagedTensor.manager_ctx");
static_assert(offsetof(DLManagedTensor, deleter) == 56, "DLManagedTensor.deleter");
static_assert(sizeof(DLManagedTensor) == 64, "DLManagedTensor size");
static_assert(offsetof(DLManagedTensorVersioned, version) == 0, "Versioned.version");
static_assert(offsetof(DLManagedTensorVersioned, manager_ctx) == 8, "Versioned.manager_ctx");
static_assert(offsetof(DLManagedTensorVersioned, deleter) == 16, "Versioned.deleter");
static_assert(offsetof(DLManagedTensorVersioned, flags) == 24, "Versioned.flags");
static_assert(offsetof(DLManagedTensorVersioned, dl_tensor) == 32, "Versioned.dl_tensor");
static_assert(sizeof(DLManagedTensorVersioned) == 80, "Versioned size");

namespace {

bool to_dl_dtype(c10::ScalarType st, DLDataType *out) {
  uint8_t code;
  switch (ct::from_scalar_type(st)) {
    case CT_BOOL: code = kDLBool; break;
    case CT_UINT8:
    case CT_UINT16:
    case CT_UINT32:
    case CT_UINT64: code = kDLUInt; break;
    case CT_INT8:
    case CT_INT16:
    case CT_INT32:
    case CT_INT64: code = kDLInt; break;
    case CT_FLOAT16:
    case CT_FLOAT32:
    case CT_FLOAT64: code = kDLFloat; break;
    case CT_BFLOAT16: code = kDLBfloat; break;
    case CT_COMPLEX64:
    case CT_COMPLEX128: code = kDLComplex; break;
    case CT_FLOAT8_E4M3FN: code = kDLFloat8_e4m3fn; break;
    case CT_FLOAT8_E5M2: code = kDLFloat8_e5m2; break;
    case CT_FLOAT8_E4M3FNUZ: code = kDLFloat8_e4m3fnuz; break;
    case CT_FLOAT8_E5M2FNUZ: code = kDLFloat8_e5m2fnuz; break;
    default: return false;  // quantized dtypes: no DLPack code
  }
  out->code = code;
  out->bits = static_cast<uint8_t>(c10::elementSize(st) * 8);
  out->lanes = 1;
  return true;
}

// The ctorch dtype code of a DLPack dtype (whether or not this LibTorch has
// it); 0 if none.
int32_t from_dl_dtype(DLDataType d) {
  if (d.lanes != 1) return 0;
  switch (d.code) {
    case kDLBool: return d.bits == 8 ? CT_BOOL : 0;
    case kDLUInt:
      switch (d.bits) {
        case 8: return CT_UINT8;
        case 16: return CT_UINT16;
        case 32: return CT_UINT32;
        case 64: return CT_UINT64;
      }
      return 0;
    case kDLInt:
      switch (d.bits) {
        case 8: return CT_INT8;
        case 16: return CT_INT16;
        case 32: return CT_INT32;
        case 64: return CT_INT64;
      }
      return 0;
    case kDLFloat:
      switch (d.bits) {
        case 16: return CT_FLOAT16;
        case 32: return CT_FLOAT32;
        case 64: return CT_FLOAT64;
      }
      return 0;
    case kDLBfloat: return d.bits == 16 ? CT_BFLOAT16 : 0;
    case kDLComplex: return d.bits == 64 ? CT_COMPLEX64 : d.bits == 128 ? CT_COMPLEX128 : 0;
    case kDLFloat8_e4m3fn: return d.bits == 8 ? CT_FLOAT8_E4M3FN : 0;
    case kDLFloat8_e5m2: return d.bits == 8 ? CT_FLOAT8_E5M2 : 0;
    case kDLFloat8_e4m3fnuz: return d.bits == 8 ? CT_FLOAT8_E4M3FNUZ : 0;
    case kDLFloat8_e5m2fnuz: return d.bits == 8 ? CT_FLOAT8_E5M2FNUZ : 0;
  }
  return 0;
}

// Owns the exported tensor and the shape/strides arrays the DLTensor points to.
template <class Managed>
struct ExportCtx {
  Managed managed;
  at::Tensor tensor;
  std::vector<int64_t> shape, strides;
};

template <class Managed>
void export_deleter(Managed *self) {
  if (self) delete static_cast<ExportCtx<Managed> *>(self->manager_ctx);
}

template <class Managed>
ct_status export_tensor(const char *func, Managed **out, const ct_tensor *t, int32_t copy,
                        int64_t stream, uint64_t *flags) {
  if (!out) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'out' is NULL", func);
  if (!t) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 't' is NULL", func);
  const at::Tensor &src = t->t;
  if (!src.defined())
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: the tensor is undefined", func);
  if (src.layout() != c10::kStrided)
    return ct::set_error(CT_ERR_NOT_SUPPORTED,
                         "%s: a tensor with layout %s cannot be exported as DLPack (only "
                         "strided tensors); convert it with ct_tensor_to_dense first",
                         func, ct::layout_name(src.layout()));
  if (src.requires_grad())
    return ct::set_error(CT_ERR_NOT_SUPPORTED,
                         "%s: cannot export a tensor that requires grad; detach it first", func);
  DLDataType dt;
  if (!to_dl_dtype(src.scalar_type(), &dt))
    return ct::set_error(CT_ERR_TYPE, "%s: dtype %s has no DLPack equivalent", func,
                         c10::toString(src.scalar_type()));
  int32_t dev_type = ct::device_type_code(src.device().type());
  if (dev_type != CT_DEVICE_CPU && dev_type != CT_DEVICE_CUDA)  // equal to kDLCPU, kDLCUDA
    return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: device %s cannot be exported", func,
                         src.device().str().c_str());
  if (src.is_cuda() && stream != -1) {
    if (ct_status s = ct::cuda_make_safe_for_stream(src, stream)) return s;
  }
  // Owned here until handed to the caller, so a throw below frees it.
  auto owner = std::make_unique<ExportCtx<Managed>>();
  ExportCtx<Managed> *ctx = owner.get();
  ctx->tensor = copy ? src.clone() : src;
  const at::Tensor &x = ctx->tensor;
  ctx->shape.assign(x.sizes().begin(), x.sizes().end());
  ctx->strides.assign(x.strides().begin(), x.strides().end());
  DLTensor &dl = ctx->managed.dl_tensor;
  dl.data = x.numel() > 0 ? x.data_ptr() : nullptr;
  dl.device.device_type = static_cast<DLDeviceType>(dev_type);
  dl.device.device_id = x.is_cuda() ? x.device().index() : 0;
  dl.ndim = static_cast<int32_t>(x.dim());
  dl.dtype = dt;
  dl.shape = ctx->shape.data();
  dl.strides = ctx->strides.data();
  dl.byte_offset = 0;
  ctx->managed.manager_ctx = ctx;
  ctx->managed.deleter = &export_deleter<Managed>;
  if (flags) *flags = copy ? DLPACK_FLAG_BITMASK_IS_COPIED : 0;
  *out = &owner.release()->managed;
  return CT_OK;
}

// The producer's tensor, released (its deleter called) at most once by
// whichever comes first: the failure path of the import or the storage's
// deleter, which LibTorch may also run while unwinding a throwing from_blob.
template <class Managed>
struct Producer {
  Managed *m;
  std::atomic<bool> released{false};
  explicit Producer(Managed *p) : m(p) {}
  void release() noexcept {
    if (!released.exchange(true) && m && m->deleter) m->deleter(m);
  }
};

// Releases the producer on scope exit unless the import committed.
template <class Managed>
struct ReleaseUnlessCommitted {
  std::shared_ptr<Producer<Managed>> p;
  bool committed = false;
  ~ReleaseUnlessCommitted() {
    if (!committed) p->release();
  }
};

template <class Managed>
ct_status import_tensor(const char *func, ct_tensor **out, Managed *src, bool read_only) {
  ReleaseUnlessCommitted<Managed> guard{std::make_shared<Producer<Managed>>(src)};
  if (!out) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'out' is NULL", func);
  const DLTensor &dl = src->dl_tensor;
  c10::ScalarType st;
  int32_t code = from_dl_dtype(dl.dtype);
  if (!code)
    return ct::set_error(CT_ERR_TYPE, "%s: unsupported DLPack dtype (code %u, bits %u, lanes %u)",
                         func, dl.dtype.code, dl.dtype.bits, dl.dtype.lanes);
  if (ct_status s = ct::known_dtype(func, code, &st)) return s;
  if (dl.ndim < 0 || dl.ndim > 64)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: invalid ndim %d", func, dl.ndim);
  if (dl.ndim > 0 && !dl.shape)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: DLTensor.shape is NULL", func);
  c10::Device dev(c10::DeviceType::CPU);
  switch (dl.device.device_type) {
    case kDLCPU:
    case kDLCUDAHost: break;
    case kDLCUDA:
    case kDLCUDAManaged:
      if (!ct_cuda_is_available())
        return ct::set_error(CT_ERR_NOT_SUPPORTED,
                             "%s: a CUDA DLPack tensor cannot be imported: CUDA is not available",
                             func);
      if (dl.device.device_id < 0 || dl.device.device_id >= ct_cuda_device_count())
        return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: invalid CUDA device id %d", func,
                             dl.device.device_id);
      dev = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(dl.device.device_id));
      break;
    default:
      return ct::set_error(CT_ERR_NOT_SUPPORTED, "%s: unsupported DLPack device type %d", func,
                           static_cast<int>(dl.device.device_type));
  }
  size_t ndim = static_cast<size_t>(dl.ndim);
  if (ct_status s = ct::check_sizes(func, dl.shape, ndim)) return s;
  at::IntArrayRef shape(dl.shape, ndim);
  int64_t numel = c10::multiply_integers(shape);
  if (!dl.data && numel > 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: DLTensor.data is NULL", func);
  if (ct_status s = ct::check_extent(func, dl.data, dl.byte_offset, dl.shape, dl.strides, ndim,
                                     c10::elementSize(st), true))
    return s;
  char *data = static_cast<char *>(dl.data) + dl.byte_offset;
  auto opts = at::TensorOptions().dtype(st).device(dev);
  at::Tensor t;
  bool own = !read_only;
  if (!dl.data) {
    // Nothing to alias (no elements). from_blob would never run a deleter
    // for a NULL pointer, so the producer would not be released (found by
    // fuzz_dlpack): an empty tensor of this shape, producer released now.
    t = dl.strides ? at::empty_strided(shape, at::IntArrayRef(dl.strides, ndim), opts)
                   : at::empty(shape, opts);
    own = false;
  } else if (read_only) {
    // Torch tensors are writable: never alias read-only memory, copy it.
    at::Tensor view = dl.strides
                          ? at::from_blob(data, shape, at::IntArrayRef(dl.strides, ndim), opts)
                          : at::from_blob(data, shape, opts);
    t = view.clone(at::MemoryFormat::Preserve);
    // guard releases the producer's tensor now
  } else {
    std::shared_ptr<Producer<Managed>> p = guard.p;
    auto deleter = [p](void *) { p->release(); };
    t = dl.strides ? at::from_blob(data, shape, at::IntArrayRef(dl.strides, ndim), deleter, opts)
                   : at::from_blob(data, shape, deleter, opts);
  }
  *out = ct::new_tensor(std::move(t));
  // Zero-copy: the tensor's storage owns the producer now.
  if (own) guard.committed = true;
  return CT_OK;
}

}  // namespace

extern "C" {

ct_status ct_tensor_to_dlpack(DLManagedTensor **out, const ct_tensor *t, int32_t copy,
                              int64_t stream) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    return export_tensor<DLManagedTensor>(ct_fn_, out, t, copy, stream, nullptr);
  });
}

ct_status ct_tensor_to_dlpack_versioned(DLManagedTensorVersioned **out, const ct_tensor *t,
                                        int32_t copy, int64_t stream) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(out);
    DLManagedTensorVersioned *m = nullptr;
    uint64_t flags = 0;
    if (ct_status s = export_tensor<DLManagedTensorVersioned>(ct_fn_, &m, t, copy, stream, &flags))
      return s;
    m->version.major = DLPACK_MAJOR_VERSION;
    m->version.minor = DLPACK_MINOR_VERSION;
    m->flags = flags;
    *out = m;
    return CT_OK;
  });
}

ct_status ct_tensor_from_dlpack(ct_tensor **out, DLManagedTensor *src) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(src);
    return import_tensor(ct_fn_, out, src, false);
  });
}

ct_status ct_tensor_from_dlpack_versioned(ct_tensor **out, DLManagedTensorVersioned *src) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(src);
    if (src->version.major != 1) {
      ct_status s = ct::set_error(CT_ERR_NOT_SUPPORTED,
                                  "%s: DLPack version %u.%u is not supported (need 1.x)", ct_fn_,
                                  src->version.major, src->version.minor);
      Producer<DLManagedTensorVersioned>(src).release();  // after reading the version
      return s;
    }
    bool read_only = (src->flags & DLPACK_FLAG_BITMASK_READ_ONLY) != 0;
    return import_tensor(ct_fn_, out, src, read_only);
  });
}

}  // extern "C"
