# CTorchError and status checking.

"""
    CTorchError(code, message)

Raised for every failing libctorch call. `code` is the frozen `CT_ERR_*` status
(`CTorch.CT_ERR_TYPE`, ...; names in `CTorch.STATUS_NAMES`); `message` is the
full text of `ct_last_error()` (first line short, C++/TorchScript detail after
it).
"""
struct CTorchError <: Exception
    code::Int32
    message::String
end

function Base.showerror(io::IO, e::CTorchError)
    print(io, "CTorchError(", get(STATUS_NAMES, e.code, string(e.code)), "): ", e.message)
end

@noinline function _throw_last_error(status::Int32)
    msg = unsafe_string(ct_last_error())
    _check_warnings()
    throw(CTorchError(status, msg))
end

"Throws a `CTorchError` carrying `ct_last_error()` unless `status == CT_OK`; shows LibTorch's warnings."
@inline check(status::Int32) = (status == CT_OK || _throw_last_error(status); _check_warnings(); nothing)

# LibTorch's warnings: libctorch keeps them per thread (ct_warnings_*) instead
# of printing them; CTorch shows them as `@warn` after the call that raised them.
@inline _check_warnings() = (ct_warnings_count() != 0 && _show_warnings(); nothing)
@noinline function _show_warnings()
    n = ct_warnings_count()
    msgs = [unsafe_string(ct_warnings_get(i)) for i in 0:n-1]
    ct_warnings_clear()
    for m in msgs
        @warn "LibTorch: " * m
    end
    return true
end

# Reads and frees a caller-owned C string (char ** out-parameter).
function _take_string(p::Ptr{UInt8})
    p == C_NULL && return nothing
    s = unsafe_string(p)
    ct_free(p)
    return s
end
