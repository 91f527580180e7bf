# The raw C API: one Julia function per C function of include/ctorch.h, same
# name, same argument order (`@cfunc`, generated into capi_generated.jl with
# the header's constants), plus `UNBOUND`, the functions CTorch's Julia API
# deliberately does not use and why. Everything else in CTorch calls C through
# these wrappers.
#
# The library path is only known at run time (see library.jl), so every C
# function is called through a function pointer resolved once in `__init__`
# and stored in a `const Ref`. A call costs one load plus an indirect call.

const P = Ptr{Cvoid}

# (symbol, slot) pairs filled by `_resolve_symbols!`.
const _SYMBOLS = Tuple{Symbol,Base.RefValue{Ptr{Cvoid}}}[]

@noinline function _missing_symbol(name::Symbol)
    throw(CTorchError(CT_ERR_NOT_SUPPORTED, "libctorch is not loaded, or $(_LIBPATH[]) does not " *
                                 "export $(name); see the error CTorch logged when it loaded"))
end

"""
    @cfunc name RetType (ArgTypes...)

Declares the raw wrapper `name(args...) = ccall(<resolved name>, RetType, (ArgTypes...), args...)`.
"""
macro cfunc(name, ret, argtypes)
    fp = Symbol("_fp_", name)
    n = length(argtypes.args)
    args = [Symbol("a", i) for i in 1:n]
    quote
        const $(esc(fp)) = Ref{Ptr{Cvoid}}(C_NULL)
        push!(_SYMBOLS, ($(QuoteNode(name)), $(esc(fp))))
        @inline function $(esc(name))($(args...))
            p = $(esc(fp))[]
            p == C_NULL && _missing_symbol($(QuoteNode(name)))
            ccall(p, $(esc(ret)), $(esc(argtypes)), $(args...))
        end
    end
end

"The address of a C function of libctorch, to hand to C as a callback."
_c_address(name::Symbol) = (e = _SYMBOLS[findfirst(e -> e[1] === name, _SYMBOLS)]; e[2][])

# One `@cfunc` per function of include/ctorch.h, and the header's constants:
# generated from the header by scripts/gen_bindings.py.
include("capi_generated.jl")

"""
    CTorch.UNBOUND

Functions of include/ctorch.h that CTorch's Julia API deliberately does not
use, with the reason. Their raw `@cfunc` wrappers exist like every other
function's (generated), for code that knows what it is doing.
"""
const UNBOUND = Dict{String,String}(
    "ct_tensor_from_blob" =>
        "its deleter is a C function pointer that torch may call on any thread, and Julia " *
        "before 1.9 cannot be entered from a foreign thread; Tensor(A) uses " *
        "ct_tensor_from_blob_queued (the release queue) instead",
    "ct_op_register" =>
        "the kernel is a C callback that TorchScript may run on its own (inter-op) threads, " *
        "which Julia before 1.9 cannot be entered from, and it can never be removed; use " *
        "CTorch.Library (ct_library_* with CT_KERNEL_SAME_THREAD) for operators with Julia " *
        "kernels, or register C/C++ ops and load them with CTorch.load_library")
