# Every C handle type, defined in one loop (as Julia's LibGit2 does): a
# mutable struct owning one pointer, a finalizer that frees it, `free!`,
# `isfreed`, and `unsafe_convert` to the `Ptr{Cvoid}` the C calls take.
# Finalizers only call the non-yielding `ct_*_free` (Tensor's is the C function
# `ct_tensor_free_slot` itself: `_tensor_finalizer`). (`ct_op` handles are
# cached for the life of the process and never freed: `Op` in ops.jl.)

@noinline _freed_error(what::String) = throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "use of a freed CTorch.$what"))

for (T, params, super, cfree) in (
        (:Tensor, (:T, :N), :(AbstractArray{T,N}), :ct_tensor_free),
        (:Value, (), :Any, :ct_value_free),
        (:ScriptModule, (), :Any, :ct_module_free),
        (:Script, (), :Any, :ct_script_free),
        (:Generator, (), :Any, :ct_generator_free),
        (:CUDAEvent, (), :Any, :ct_cuda_event_free),
        (:CUDAGraph, (), :Any, :ct_cuda_graph_free),
        (:Optimizer, (), :Any, :ct_optimizer_free),
        (:GradScaler, (), :Any, :ct_grad_scaler_free),
        (:AOTIPackage, (), :Any, :ct_package_free))
    head = isempty(params) ? T : Expr(:curly, T, params...)
    call = :($head(::Val{:own}, p::Ptr{Cvoid}))
    sig = isempty(params) ? call : Expr(:where, call, params...)
    ctor = Expr(:function, sig, quote
        x = new(p)
        $(T === :Tensor ? :(_tensor_finalizer(x)) : :(finalizer(_finalize, x)))
        $(T === :Tensor ? :(_in_scope(x)) : nothing)
        return x
    end)
    @eval begin
        mutable struct $head <: $super
            ptr::Ptr{Cvoid}
            $ctor
        end
        function _finalize(x::$T)
            p = x.ptr
            x.ptr = C_NULL
            $cfree(p)
            return nothing
        end
        free!(x::$T) = (_finalize(x); _after_free(x); nothing)
        isfreed(x::$T) = x.ptr == C_NULL
        Base.unsafe_convert(::Type{Ptr{Cvoid}}, x::$T) =
            (p = x.ptr; p == C_NULL && _freed_error($(string(T))); p)
    end
end

_after_free(x) = nothing

# Handle types that hold more than the pointer (the distributed ones): a
# `ptr` field, `_cfree(x)` naming their C free function, the same lifecycle.
abstract type _Handle end
function _cfree end  # _cfree(x::T): T's C free function

_handle_name(x) = string(nameof(typeof(x)))
Base.unsafe_convert(::Type{Ptr{Cvoid}}, x::_Handle) =
    (p = x.ptr; p == C_NULL && _freed_error(_handle_name(x)); p)
isfreed(x::_Handle) = x.ptr == C_NULL
free!(x::_Handle) = (_finalize(x); nothing)
"`close(x)`: frees the handle now (as the finalizer would); closing twice is allowed."
Base.close(x::_Handle) = free!(x)

# Pure C and non-yielding: safe in a finalizer.
function _finalize(x::_Handle)
    p = x.ptr
    x.ptr = C_NULL
    _cfree(x)(p)
    return nothing
end

function _own(x::_Handle)
    finalizer(_finalize, x)
    return x
end

# A Tensor's finalizer is C: `ct_tensor_free_slot` gets the dead object's
# address, whose first (only) field is the handle, frees it and clears the
# field (an object freed earlier with `free!` holds C_NULL: nothing to do).
# No Julia function is called for it when the GC collects the object (a
# Julia finalizer is a dynamic call per dead object); it runs where Julia
# runs finalizers, as the Julia one did. A library without the function
# (older than the binding) gets the Julia finalizer.
@inline function _tensor_finalizer(x)
    f = _fp_ct_tensor_free_slot[]
    f == C_NULL ? finalizer(_finalize, x) : finalizer(f, x)
    return nothing
end

"""
    free!(x)

Frees a handle (`Tensor`, `Value`, `ScriptModule`, `Script`) now instead of
waiting for the garbage collector; other handles to the same object stay
valid. Using `x` afterwards throws a `CTorchError`; freeing twice is allowed.
"""
free!

"`isfreed(x)`: `true` once the handle was freed with [`free!`](@ref)."
isfreed
