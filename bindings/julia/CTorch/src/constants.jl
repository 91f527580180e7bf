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
        (:CT_FLOAT64, 10), (:CT_COMPLEX64, 11), (:CT_COMPLEX128, 12), (:CT_DTYPE_KEEP, -1),
        # devices
        (:CT_DEVICE_KEEP, 0), (:CT_DEVICE_CPU, 1), (:CT_DEVICE_CUDA, 2),
        # value tags
        (:CT_VALUE_NONE, 0), (:CT_VALUE_BOOL, 1), (:CT_VALUE_INT, 2), (:CT_VALUE_DOUBLE, 3),
        (:CT_VALUE_STRING, 4), (:CT_VALUE_TENSOR, 5), (:CT_VALUE_DEVICE, 6),
        (:CT_VALUE_LIST, 7), (:CT_VALUE_TUPLE, 8), (:CT_VALUE_DICT, 9),
        (:CT_VALUE_INT_LIST, 10), (:CT_VALUE_DOUBLE_LIST, 11), (:CT_VALUE_BOOL_LIST, 12),
        (:CT_VALUE_TENSOR_LIST, 13), (:CT_VALUE_OBJECT, 14), (:CT_VALUE_OTHER, 15))
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
