// The C codes of dtypes and devices: CT_* codes to and from LibTorch's types
// (to_scalar_type, device_type_code, to_device), their checks with the
// release a code needs, and their names (ct_dtype_name, ct_device_type_name,
// layout_name).
#include "checks.h"
#include "internal.h"
#include "torch_version.h"

#include <ATen/ops/is_vulkan_available.h>
#include <c10/core/impl/DeviceGuardImplInterface.h>

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

// Name of a layout for messages ("sparse COO").
ct_status to_optional_device(const char *func, int32_t device_type, int32_t device_index,
                             c10::optional<c10::Device> *out) {
  if (device_type == CT_DEVICE_KEEP) {
    *out = c10::nullopt;
    return CT_OK;
  }
  c10::Device d(c10::kCPU);
  ct_status st = to_device(func, device_type, device_index, &d);
  if (st != CT_OK) return st;
  *out = d;
  return CT_OK;
}

const char *layout_name(c10::Layout l) noexcept {
  switch (l) {
    case c10::kStrided: return "strided";
    case c10::kSparse: return "sparse COO";
    case c10::kSparseCsr: return "sparse CSR";
    case c10::kSparseCsc: return "sparse CSC";
    case c10::kSparseBsr: return "sparse BSR";
    case c10::kSparseBsc: return "sparse BSC";
    case c10::kMkldnn: return "mkldnn";
    default: return "non-strided";
  }
}

}  // namespace ct

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

}  // extern "C"
