# The header's frozen #define codes under the header's own names (a test
# compares them with include/ctorch.h).

for (name, v) in (
        # status
        (:CT_OK, 0), (:CT_ERR_INVALID_ARGUMENT, 1), (:CT_ERR_TYPE, 2), (:CT_ERR_INDEX, 3),
        (:CT_ERR_NOT_FOUND, 4), (:CT_ERR_IO, 5), (:CT_ERR_OUT_OF_MEMORY, 6),
        (:CT_ERR_NOT_SUPPORTED, 7), (:CT_ERR_TORCH, 8), (:CT_ERR_CALLBACK, 9),
        (:CT_ERR_INTERNAL, 10),
        # dtypes
        (:CT_BOOL, 1), (:CT_UINT8, 2), (:CT_INT8, 3), (:CT_INT16, 4), (:CT_INT32, 5),
        (:CT_INT64, 6), (:CT_FLOAT16, 7), (:CT_BFLOAT16, 8), (:CT_FLOAT32, 9),
        (:CT_FLOAT64, 10), (:CT_COMPLEX64, 11), (:CT_COMPLEX128, 12), (:CT_UINT16, 13),
        (:CT_UINT32, 14), (:CT_UINT64, 15), (:CT_FLOAT8_E4M3FN, 16), (:CT_FLOAT8_E5M2, 17),
        (:CT_FLOAT8_E4M3FNUZ, 18), (:CT_FLOAT8_E5M2FNUZ, 19), (:CT_QINT8, 20), (:CT_QUINT8, 21),
        (:CT_QINT32, 22), (:CT_QUINT4X2, 23), (:CT_DTYPE_KEEP, -1),
        # devices
        (:CT_DEVICE_KEEP, 0), (:CT_DEVICE_CPU, 1), (:CT_DEVICE_CUDA, 2), (:CT_DEVICE_META, 3),
        (:CT_DEVICE_MPS, 4), (:CT_DEVICE_XPU, 5), (:CT_DEVICE_HIP, 6), (:CT_DEVICE_PRIVATEUSE1, 7),
        # layouts
        (:CT_LAYOUT_STRIDED, 0), (:CT_LAYOUT_SPARSE_COO, 1), (:CT_LAYOUT_SPARSE_CSR, 2),
        (:CT_LAYOUT_SPARSE_CSC, 3), (:CT_LAYOUT_SPARSE_BSR, 4), (:CT_LAYOUT_SPARSE_BSC, 5),
        (:CT_LAYOUT_MKLDNN, 6),
        # more device types, memory formats, quantization schemes
        (:CT_DEVICE_XLA, 8),
        (:CT_DEVICE_HPU, 9),
        (:CT_DEVICE_MTIA, 10),
        (:CT_DEVICE_LAZY, 11),
        (:CT_DEVICE_IPU, 12),
        (:CT_DEVICE_VE, 13),
        (:CT_DEVICE_VULKAN, 14),
        (:CT_DEVICE_METAL, 15),
        (:CT_DEVICE_MAIA, 16),
        (:CT_MEMORY_FORMAT_CONTIGUOUS, 0),
        (:CT_MEMORY_FORMAT_CHANNELS_LAST, 1),
        (:CT_MEMORY_FORMAT_CHANNELS_LAST_3D, 2),
        (:CT_QSCHEME_PER_TENSOR_AFFINE, 1),
        (:CT_QSCHEME_PER_CHANNEL_AFFINE, 2),
        (:CT_QSCHEME_PER_TENSOR_SYMMETRIC, 3),
        (:CT_QSCHEME_PER_CHANNEL_SYMMETRIC, 4),
        (:CT_QSCHEME_PER_CHANNEL_AFFINE_FLOAT_QPARAMS, 5),
        # value tags
        (:CT_VALUE_NONE, 0), (:CT_VALUE_BOOL, 1), (:CT_VALUE_INT, 2), (:CT_VALUE_DOUBLE, 3),
        (:CT_VALUE_STRING, 4), (:CT_VALUE_TENSOR, 5), (:CT_VALUE_DEVICE, 6),
        (:CT_VALUE_LIST, 7), (:CT_VALUE_TUPLE, 8), (:CT_VALUE_DICT, 9),
        (:CT_VALUE_INT_LIST, 10), (:CT_VALUE_DOUBLE_LIST, 11), (:CT_VALUE_BOOL_LIST, 12),
        (:CT_VALUE_TENSOR_LIST, 13), (:CT_VALUE_OBJECT, 14), (:CT_VALUE_OTHER, 15),
        # what ct_module_forward_tensors gives for a method (ct_module_method_results)
        (:CT_RESULT_OTHER, 0), (:CT_RESULT_TENSOR, 1), (:CT_RESULT_TUPLE, 2), (:CT_RESULT_LIST, 3))
    @eval const $name = Int32($v)
end

"Status code => its header name (`CT_ERR_TYPE`, ...)."
const STATUS_NAMES = Dict{Int32,String}(
    CT_OK => "CT_OK", CT_ERR_INVALID_ARGUMENT => "CT_ERR_INVALID_ARGUMENT",
    CT_ERR_TYPE => "CT_ERR_TYPE", CT_ERR_INDEX => "CT_ERR_INDEX",
    CT_ERR_NOT_FOUND => "CT_ERR_NOT_FOUND", CT_ERR_IO => "CT_ERR_IO",
    CT_ERR_OUT_OF_MEMORY => "CT_ERR_OUT_OF_MEMORY", CT_ERR_NOT_SUPPORTED => "CT_ERR_NOT_SUPPORTED",
    CT_ERR_TORCH => "CT_ERR_TORCH", CT_ERR_CALLBACK => "CT_ERR_CALLBACK",
    CT_ERR_INTERNAL => "CT_ERR_INTERNAL")
