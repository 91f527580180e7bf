// Tensors: dtype/device codes, factories, from_blob (with deleter or release
// queue), handles and conversions, metadata accessors, printing, comparison.
#include "checks.h"
#include "internal.h"
#include "torch_version.h"

#include <ATen/ops/is_vulkan_available.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

#include <deque>
#include <mutex>
#include <sstream>
#include <vector>

namespace ct {

bool to_scalar_type(int32_t dtype, c10::ScalarType *out) noexcept {
  switch (dtype) {
    case CT_BOOL: *out = c10::kBool; return true;
    case CT_UINT8: *out = c10::kByte; return true;
    case CT_INT8: *out = c10::kChar; return true;
    case CT_INT16: *out = c10::kShort; return true;
    case CT_INT32: *out = c10::kInt; return true;
    case CT_INT64: *out = c10::kLong; return true;
    case CT_FLOAT16: *out = c10::kHalf; return true;
    case CT_BFLOAT16: *out = c10::kBFloat16; return true;
    case CT_FLOAT32: *out = c10::kFloat; return true;
    case CT_FLOAT64: *out = c10::kDouble; return true;
    case CT_COMPLEX64: *out = c10::kComplexFloat; return true;
    case CT_COMPLEX128: *out = c10::kComplexDouble; return true;
#if CT_TORCH_AT_LEAST(2, 3)
    case CT_UINT16: *out = c10::ScalarType::UInt16; return true;
    case CT_UINT32: *out = c10::ScalarType::UInt32; return true;
    case CT_UINT64: *out = c10::ScalarType::UInt64; return true;
#endif
#if CT_TORCH_AT_LEAST(2, 1)
    case CT_FLOAT8_E4M3FN: *out = c10::ScalarType::Float8_e4m3fn; return true;
    case CT_FLOAT8_E5M2: *out = c10::ScalarType::Float8_e5m2; return true;
#endif
#if CT_TORCH_AT_LEAST(2, 2)
    case CT_FLOAT8_E4M3FNUZ: *out = c10::ScalarType::Float8_e4m3fnuz; return true;
    case CT_FLOAT8_E5M2FNUZ: *out = c10::ScalarType::Float8_e5m2fnuz; return true;
#endif
    case CT_QINT8: *out = c10::kQInt8; return true;
    case CT_QUINT8: *out = c10::kQUInt8; return true;
    case CT_QINT32: *out = c10::kQInt32; return true;
    case CT_QUINT4X2: *out = c10::kQUInt4x2; return true;
    default: return false;
  }
}

int32_t from_scalar_type(c10::ScalarType st) noexcept {
  switch (st) {
    case c10::kBool: return CT_BOOL;
    case c10::kByte: return CT_UINT8;
    case c10::kChar: return CT_INT8;
    case c10::kShort: return CT_INT16;
    case c10::kInt: return CT_INT32;
    case c10::kLong: return CT_INT64;
    case c10::kHalf: return CT_FLOAT16;
    case c10::kBFloat16: return CT_BFLOAT16;
    case c10::kFloat: return CT_FLOAT32;
    case c10::kDouble: return CT_FLOAT64;
    case c10::kComplexFloat: return CT_COMPLEX64;
    case c10::kComplexDouble: return CT_COMPLEX128;
#if CT_TORCH_AT_LEAST(2, 3)
    case c10::ScalarType::UInt16: return CT_UINT16;
    case c10::ScalarType::UInt32: return CT_UINT32;
    case c10::ScalarType::UInt64: return CT_UINT64;
#endif
#if CT_TORCH_AT_LEAST(2, 1)
    case c10::ScalarType::Float8_e4m3fn: return CT_FLOAT8_E4M3FN;
    case c10::ScalarType::Float8_e5m2: return CT_FLOAT8_E5M2;
#endif
#if CT_TORCH_AT_LEAST(2, 2)
    case c10::ScalarType::Float8_e4m3fnuz: return CT_FLOAT8_E4M3FNUZ;
    case c10::ScalarType::Float8_e5m2fnuz: return CT_FLOAT8_E5M2FNUZ;
#endif
    case c10::kQInt8: return CT_QINT8;
    case c10::kQUInt8: return CT_QUINT8;
    case c10::kQInt32: return CT_QINT32;
    case c10::kQUInt4x2: return CT_QUINT4X2;
    default: return 0;
  }
}

// The LibTorch release that added a dtype ctorch has a code for; NULL for
// codes every supported release has (and for unknown codes).
static const char *dtype_needs(int32_t dtype) noexcept {
  switch (dtype) {
    case CT_UINT16:
    case CT_UINT32:
    case CT_UINT64: return "2.3";
    case CT_FLOAT8_E4M3FN:
    case CT_FLOAT8_E5M2: return "2.1";
    case CT_FLOAT8_E4M3FNUZ:
    case CT_FLOAT8_E5M2FNUZ: return "2.2";
    default: return nullptr;
  }
}

ct_status known_dtype(const char *func, int32_t dtype, c10::ScalarType *out) noexcept {
  if (to_scalar_type(dtype, out)) return CT_OK;
  if (const char *v = dtype_needs(dtype))
    return set_error(CT_ERR_NOT_SUPPORTED, "%s: dtype %s needs LibTorch >= %s (this is %s)", func,
                     ct_dtype_name(dtype), v, ct_torch_version());
  return set_error(CT_ERR_TYPE, "%s: unknown dtype code %d", func, dtype);
}

ct_status check_dtype(const char *func, int32_t dtype, c10::ScalarType *out) noexcept {
  if (ct_status s = known_dtype(func, dtype, out)) return s;
  if (c10::isQIntType(*out))
    return set_error(CT_ERR_TYPE,
                     "%s: quantized dtype %s: make quantized tensors with "
                     "ct_tensor_quantize_per_tensor/_per_channel",
                     func, ct_dtype_name(dtype));
  return CT_OK;
}

int32_t device_type_code(c10::DeviceType t) noexcept {
  switch (t) {
    case c10::DeviceType::CPU: return CT_DEVICE_CPU;
    case c10::DeviceType::CUDA: return CT_DEVICE_CUDA;
    case c10::DeviceType::Meta: return CT_DEVICE_META;
    case c10::DeviceType::MPS: return CT_DEVICE_MPS;
    case c10::DeviceType::XPU: return CT_DEVICE_XPU;
    case c10::DeviceType::HIP: return CT_DEVICE_HIP;
    case c10::DeviceType::PrivateUse1: return CT_DEVICE_PRIVATEUSE1;
    case c10::DeviceType::XLA: return CT_DEVICE_XLA;
    case c10::DeviceType::HPU: return CT_DEVICE_HPU;
#if CT_TORCH_AT_LEAST(2, 0)
    case c10::DeviceType::MTIA: return CT_DEVICE_MTIA;
#endif
    case c10::DeviceType::Lazy: return CT_DEVICE_LAZY;
    case c10::DeviceType::IPU: return CT_DEVICE_IPU;
    case c10::DeviceType::VE: return CT_DEVICE_VE;
    case c10::DeviceType::Vulkan: return CT_DEVICE_VULKAN;
    case c10::DeviceType::Metal: return CT_DEVICE_METAL;
#if CT_TORCH_AT_LEAST(2, 5)
    case c10::DeviceType::MAIA: return CT_DEVICE_MAIA;
#endif
    default: return 0;
  }
}

// The c10 device type of a ctorch code other than CPU/CUDA; false if this
// LibTorch has none.
static bool other_device_type(int32_t code, c10::DeviceType *out) noexcept {
  for (int i = 0; i < static_cast<int>(c10::COMPILE_TIME_MAX_DEVICE_TYPES); ++i) {
    auto t = static_cast<c10::DeviceType>(i);
    if (device_type_code(t) == code) {
      *out = t;
      return true;
    }
  }
  return false;
}

ct_status to_device(const char *func, int32_t device_type, int32_t device_index,
                    c10::Device *out) noexcept {
  if (device_index < -1 || device_index > 127)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: invalid device index %d", func, device_index);
  switch (device_type) {
    case CT_DEVICE_CPU:
      if (device_index != -1 && device_index != 0)
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: invalid CPU device index %d (the CPU device index is -1 or 0)", func,
                         device_index);
      *out = c10::Device(c10::DeviceType::CPU);
      return CT_OK;
    case CT_DEVICE_CUDA:
      if (!ct_cuda_is_available())
        return set_error(CT_ERR_NOT_SUPPORTED,
                         "%s: CUDA device requested but CUDA is not available in this build "
                         "of ctorch or on this machine",
                         func);
      *out = c10::Device(c10::DeviceType::CUDA, static_cast<c10::DeviceIndex>(device_index));
      return CT_OK;
    case CT_DEVICE_META: *out = c10::Device(c10::DeviceType::Meta); return CT_OK;
    default: break;
  }
  if (device_type < CT_DEVICE_MPS || device_type > CT_DEVICE_MAIA)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: unknown device type %d", func, device_type);
  c10::DeviceType t;
  if (!other_device_type(device_type, &t))
    return set_error(CT_ERR_NOT_SUPPORTED, "%s: device type %s needs a newer LibTorch (this is %s)",
                     func, ct_device_type_name(device_type), ct_torch_version());
  // LibTorch 2.x registers a Vulkan device guard even when Vulkan is absent,
  // and its factories then crash: ask Vulkan itself.
  if (!c10::impl::hasDeviceGuardImpl(t) ||
      (t == c10::DeviceType::Vulkan && !at::is_vulkan_available()))
    return set_error(CT_ERR_NOT_SUPPORTED,
                     "%s: device type %s is not available: this LibTorch (%s) has no backend "
                     "for it loaded",
                     func, ct_device_type_name(device_type), ct_torch_version());
  *out = c10::Device(t, static_cast<c10::DeviceIndex>(device_index));
  return CT_OK;
}

ct_status check_sizes(const char *func, const int64_t *sizes, size_t ndim) noexcept {
  if (ndim > 0 && sizes == nullptr)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: sizes is NULL but ndim is %zu", func, ndim);
  if (ndim > 64) return set_error(CT_ERR_INVALID_ARGUMENT, "%s: ndim %zu exceeds 64", func, ndim);
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) {
    if (sizes[i] < 0)
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: negative size %lld in dimension %zu", func,
                       static_cast<long long>(sizes[i]), i);
    if (__builtin_mul_overflow(numel, sizes[i], &numel))
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: the number of elements overflows int64", func);
  }
  return CT_OK;
}

ct_status check_extent(const char *func, const void *data, uint64_t byte_offset,
                       const int64_t *sizes, const int64_t *strides, size_t ndim,
                       size_t element_size, bool check_alignment) noexcept {
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i)
    if (__builtin_mul_overflow(numel, sizes[i], &numel))
      return set_error(CT_ERR_INVALID_ARGUMENT, "%s: the number of elements overflows int64", func);
  if (strides)
    for (size_t i = 0; i < ndim; ++i)
      if (strides[i] < 0)
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: negative stride %lld in dimension %zu: torch tensors cannot have "
                         "negative strides; pass a contiguous copy (e.g. numpy.ascontiguousarray)",
                         func, static_cast<long long>(strides[i]), i);
  int64_t nbytes = 0;
  if (__builtin_mul_overflow(numel, static_cast<int64_t>(element_size), &nbytes))
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the byte size (%lld elements of %zu bytes) overflows int64", func,
                     static_cast<long long>(numel), element_size);
  if (byte_offset >= kMaxAddress)
    return set_error(CT_ERR_INVALID_ARGUMENT, "%s: byte_offset %llu is beyond any address", func,
                     static_cast<unsigned long long>(byte_offset));
  if (numel == 0) {
    // No element is read, but LibTorch still computes contiguous strides
    // (products of the sizes) and extents from sizes and strides: these
    // must not overflow either, or they come out negative and LibTorch
    // misreads them (found by fuzz_dlpack: a crash in clone()).
    int64_t prod = 1, reach = 0;
    for (size_t i = 0; i < ndim; ++i) {
      int64_t sz = sizes[i] > 0 ? sizes[i] : 1, step = 0;
      if (__builtin_mul_overflow(prod, sz, &prod) ||
          (strides && (__builtin_mul_overflow(sz - 1, strides[i], &step) ||
                       __builtin_add_overflow(reach, step, &reach))))
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: the sizes or strides overflow int64 (dimension %zu), even though "
                         "the tensor is empty",
                         func, i);
    }
    return CT_OK;
  }
  // Highest element index reached: sum of (size - 1) * stride.
  int64_t last = 0;
  if (strides) {
    for (size_t i = 0; i < ndim; ++i) {
      int64_t step;
      if (__builtin_mul_overflow(sizes[i] - 1, strides[i], &step) ||
          __builtin_add_overflow(last, step, &last))
        return set_error(CT_ERR_INVALID_ARGUMENT,
                         "%s: the strides reach beyond int64 elements (dimension %zu)", func, i);
    }
  } else {
    last = numel - 1;
  }
  int64_t extent;
  if (__builtin_add_overflow(last, int64_t(1), &extent) ||
      __builtin_mul_overflow(extent, static_cast<int64_t>(element_size), &extent))
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the memory extent of the strides overflows int64 bytes", func);
  uint64_t start = reinterpret_cast<uintptr_t>(data) + byte_offset;
  if (start < byte_offset || start >= kMaxAddress ||
      static_cast<uint64_t>(extent) > kMaxAddress - start)
    return set_error(CT_ERR_INVALID_ARGUMENT,
                     "%s: the tensor's %lld bytes at address 0x%llx reach beyond any address", func,
                     static_cast<long long>(extent), static_cast<unsigned long long>(start));
  if (check_alignment && element_size > 1) {
    // The full element size, complex types included: c10::complex<T> is
    // alignas(2 * sizeof(T)), and LibTorch's kernels use aligned vector loads
    // on it (a complex128 at an 8-byte boundary crashed clone(); found by
    // fuzz_dlpack).
    uint64_t align = element_size;
    if (start % align != 0)
      return set_error(CT_ERR_INVALID_ARGUMENT,
                       "%s: data + byte_offset (0x%llx) is not aligned to the element type "
                       "(%llu bytes)",
                       func, static_cast<unsigned long long>(start),
                       static_cast<unsigned long long>(align));
  }
  return CT_OK;
}

}  // namespace ct

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

// The library-owned release queue for garbage-collected hosts.
std::mutex release_mutex;
ct::ForkSafe release_mutex_fork_safe(release_mutex);
std::deque<void *> &release_queue() {
  static auto *q = new std::deque<void *>();  // never destroyed: deleters may run at exit
  return *q;
}

void push_release(void *ctx) {
  std::lock_guard<std::mutex> lock(release_mutex);
  release_queue().push_back(ctx);
}

ct_status wrap_blob(const char *func, ct_tensor **out, void *data, const int64_t *sizes,
                    size_t ndim, const int64_t *strides, int32_t dtype, int32_t device_type,
                    int32_t device_index, std::function<void(void *)> deleter) {
  if (!out) return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'out' is NULL", func);
  if (ct_status s = ct::check_sizes(func, sizes, ndim)) return s;
  c10::ScalarType st;
  c10::Device dev(c10::DeviceType::CPU);
  if (ct_status s = ct::check_dtype(func, dtype, &st)) return s;
  if (ct_status s = ct::to_device(func, device_type, device_index, &dev)) return s;
  int64_t numel = 1;
  for (size_t i = 0; i < ndim; ++i) numel *= sizes[i];
  if (!data && numel > 0)
    return ct::set_error(CT_ERR_INVALID_ARGUMENT, "%s: argument 'data' is NULL", func);
  if (ct_status s =
          ct::check_extent(func, data, 0, sizes, strides, ndim, c10::elementSize(st), false))
    return s;
  auto opts = at::TensorOptions().dtype(st).device(dev);
  at::IntArrayRef shape(sizes, ndim);
  at::Tensor t;
  if (strides) {
    t = torch::from_blob(data, shape, at::IntArrayRef(strides, ndim), std::move(deleter), opts);
  } else {
    t = torch::from_blob(data, shape, std::move(deleter), opts);
  }
  *out = ct::new_tensor(std::move(t));
  return CT_OK;
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

size_t ct_dtype_element_size(int32_t dtype) {
  switch (dtype) {
    case CT_UINT16: return 2;
    case CT_UINT32: return 4;
    case CT_UINT64: return 8;
    case CT_FLOAT8_E4M3FN:
    case CT_FLOAT8_E5M2:
    case CT_FLOAT8_E4M3FNUZ:
    case CT_FLOAT8_E5M2FNUZ: return 1;
    default: break;
  }
  c10::ScalarType st;
  if (!ct::to_scalar_type(dtype, &st)) return 0;
  return c10::elementSize(st);
}

const char *ct_dtype_name(int32_t dtype) {
  switch (dtype) {
    case CT_BOOL: return "bool";
    case CT_UINT8: return "uint8";
    case CT_INT8: return "int8";
    case CT_INT16: return "int16";
    case CT_INT32: return "int32";
    case CT_INT64: return "int64";
    case CT_FLOAT16: return "float16";
    case CT_BFLOAT16: return "bfloat16";
    case CT_FLOAT32: return "float32";
    case CT_FLOAT64: return "float64";
    case CT_COMPLEX64: return "complex64";
    case CT_COMPLEX128: return "complex128";
    case CT_UINT16: return "uint16";
    case CT_UINT32: return "uint32";
    case CT_UINT64: return "uint64";
    case CT_FLOAT8_E4M3FN: return "float8_e4m3fn";
    case CT_FLOAT8_E5M2: return "float8_e5m2";
    case CT_FLOAT8_E4M3FNUZ: return "float8_e4m3fnuz";
    case CT_FLOAT8_E5M2FNUZ: return "float8_e5m2fnuz";
    case CT_QINT8: return "qint8";
    case CT_QUINT8: return "quint8";
    case CT_QINT32: return "qint32";
    case CT_QUINT4X2: return "quint4x2";
    default: return "unknown";
  }
}

int32_t ct_dtype_is_supported(int32_t dtype) {
  c10::ScalarType st;
  return ct::to_scalar_type(dtype, &st) ? 1 : 0;
}

const char *ct_device_type_name(int32_t device_type) {
  switch (device_type) {
    case CT_DEVICE_CPU: return "cpu";
    case CT_DEVICE_CUDA: return "cuda";
    case CT_DEVICE_META: return "meta";
    case CT_DEVICE_MPS: return "mps";
    case CT_DEVICE_XPU: return "xpu";
    case CT_DEVICE_HIP: return "hip";
    case CT_DEVICE_PRIVATEUSE1: return "privateuseone";
    case CT_DEVICE_XLA: return "xla";
    case CT_DEVICE_HPU: return "hpu";
    case CT_DEVICE_MTIA: return "mtia";
    case CT_DEVICE_LAZY: return "lazy";
    case CT_DEVICE_IPU: return "ipu";
    case CT_DEVICE_VE: return "ve";
    case CT_DEVICE_VULKAN: return "vulkan";
    case CT_DEVICE_METAL: return "metal";
    case CT_DEVICE_MAIA: return "maia";
    default: return "unknown";
  }
}

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

ct_status ct_tensor_from_blob(ct_tensor **out, void *data, const int64_t *sizes, size_t ndim,
                              const int64_t *strides, int32_t dtype, int32_t device_type,
                              int32_t device_index, ct_deleter deleter, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    std::function<void(void *)> del;
    if (deleter)
      del = [deleter, ctx](void *p) { deleter(p, ctx); };
    else
      del = [](void *) {};
    return wrap_blob(ct_fn_, out, data, sizes, ndim, strides, dtype, device_type, device_index,
                     std::move(del));
  });
}

ct_status ct_tensor_from_blob_queued(ct_tensor **out, void *data, const int64_t *sizes, size_t ndim,
                                     const int64_t *strides, int32_t dtype, int32_t device_type,
                                     int32_t device_index, void *ctx) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    return wrap_blob(ct_fn_, out, data, sizes, ndim, strides, dtype, device_type, device_index,
                     [ctx](void *) { push_release(ctx); });
  });
}

ct_status ct_release_queue_poll(void **ctxs, size_t capacity, size_t *n) {
  const char *const ct_fn_ = __func__;
  return ct::guard(ct_fn_, [&] {
    CT_CHECK_NOT_NULL(n);
    if (capacity > 0) CT_CHECK_NOT_NULL(ctxs);
    std::lock_guard<std::mutex> lock(release_mutex);
    auto &q = release_queue();
    size_t k = 0;
    while (k < capacity && !q.empty()) {
      ctxs[k++] = q.front();
      q.pop_front();
    }
    *n = k;
    return CT_OK;
  });
}

size_t ct_release_queue_length(void) {
  std::lock_guard<std::mutex> lock(release_mutex);
  return release_queue().size();
}

// ---- Handles and conversions ------------------------------------------------

void ct_tensor_free(ct_tensor *t) { delete t; }

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
int32_t ct_tensor_defined(const ct_tensor *t) { return defined(t) ? 1 : 0; }

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

extern "C" ct_status ct_tensor_info_get(ct_tensor_info *out, const ct_tensor *t) {
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
