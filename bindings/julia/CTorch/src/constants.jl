# Names for the header's constants (the constants themselves are generated
# from include/ctorch.h into capi_generated.jl).

"Status code => its header name (`CT_ERR_TYPE`, ...)."
const STATUS_NAMES = Dict{Int32,String}(
    CT_OK => "CT_OK", CT_ERR_INVALID_ARGUMENT => "CT_ERR_INVALID_ARGUMENT",
    CT_ERR_TYPE => "CT_ERR_TYPE", CT_ERR_INDEX => "CT_ERR_INDEX",
    CT_ERR_NOT_FOUND => "CT_ERR_NOT_FOUND", CT_ERR_IO => "CT_ERR_IO",
    CT_ERR_OUT_OF_MEMORY => "CT_ERR_OUT_OF_MEMORY", CT_ERR_NOT_SUPPORTED => "CT_ERR_NOT_SUPPORTED",
    CT_ERR_TORCH => "CT_ERR_TORCH", CT_ERR_CALLBACK => "CT_ERR_CALLBACK",
    CT_ERR_INTERNAL => "CT_ERR_INTERNAL", CT_ERR_TIMEOUT => "CT_ERR_TIMEOUT")
