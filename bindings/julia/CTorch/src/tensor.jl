# Tensor handles, factories and metadata.

"""
    Tensor

A handle to a torch tensor (a `ct_tensor*`). Several `Tensor`s may refer to the
same torch tensor; freeing one never invalidates another. The handle is freed by
a finalizer, or at once with [`free!`](@ref).

Index order: `size(t)`, `strides(t)` and every factory use **torch's order**
(row-major, the first dimension varies slowest), exactly as PyTorch prints them.
The array views make the Julia side explicit: [`unsafe_array`](@ref) gives the
reversed (column-major) order, [`torch_view`](@ref) keeps torch's order.

Operators follow torch's semantics: `+ - * / ^` are elementwise with
broadcasting (`*` is `torch.mul`, not a matrix product: use
[`matmul`](@ref)).
"""
mutable struct Tensor
    ptr::Ptr{Cvoid}   # ct_tensor*, owned
    val::Ptr{Cvoid}   # ct_value* holding the same tensor, owned (cheap op arguments)
    function Tensor(::Val{:own}, ptr::Ptr{Cvoid}, val::Ptr{Cvoid})
        t = new(ptr, val)
        finalizer(_finalize_tensor, t)
        return t
    end
end

# Finalizers only call non-yielding C (ct_value_free / ct_tensor_free).
function _finalize_tensor(t::Tensor)
    v = t.val
    p = t.ptr
    t.val = C_NULL
    t.ptr = C_NULL
    ct_value_free(v)
    ct_tensor_free(p)
    return nothing
end

"""
    free!(t::Tensor)

Frees the handle now instead of waiting for the garbage collector. Other
handles to the same tensor stay valid. Using `t` afterwards throws. Also polls
the release queue, so Julia arrays that torch no longer uses are un-rooted.
"""
function free!(t::Tensor)
    _finalize_tensor(t)
    _poll_release_queue()
    return nothing
end

@noinline _freed_error() = throw(CTorchError(Int32(1), "use of a freed CTorch.Tensor"))

Base.unsafe_convert(::Type{Ptr{Cvoid}}, t::Tensor) = (p = t.ptr; p == C_NULL && _freed_error(); p)
isfreed(t::Tensor) = t.ptr == C_NULL

# Takes ownership of a new ct_tensor* handle.
function _tensor_from_handle(ptr::Ptr{Cvoid})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ct_value_from_tensor(out, ptr)
    if st != 0
        ct_tensor_free(ptr)
        _throw_last_error(st)
    end
    return Tensor(Val(:own), ptr, out[])
end

# Takes ownership of a new ct_value* that holds a tensor.
function _tensor_from_value(val::Ptr{Cvoid})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ct_value_to_tensor(out, val)
    if st != 0
        ct_value_free(val)
        _throw_last_error(st)
    end
    return Tensor(Val(:own), out[], val)
end

# The ct_value* of a tensor (borrowed; valid while t lives).
@inline _value_ptr(t::Tensor) = (v = t.val; v == C_NULL && _freed_error(); v)

macro _newtensor(call)
    # `call` uses `out` as its first argument.
    out = esc(:out)
    quote
        local $out = Ref{Ptr{Cvoid}}(C_NULL)
        check($(esc(call)))
        _tensor_from_handle($out[])
    end
end

# ---- Metadata ------------------------------------------------------------------

Base.ndims(t::Tensor) = Int(ct_tensor_ndim(t))
function Base.size(t::Tensor)
    n = ndims(t)
    p = ct_tensor_sizes(t)
    return ntuple(i -> Int(unsafe_load(p, i)), n)
end
Base.size(t::Tensor, d::Integer) = (s = Ref{Int64}(0); check(ct_tensor_size(s, t, Int64(d - 1))); Int(s[]))
function Base.strides(t::Tensor)
    n = ndims(t)
    p = ct_tensor_strides(t)
    return ntuple(i -> Int(unsafe_load(p, i)), n)
end
Base.stride(t::Tensor, d::Integer) = strides(t)[d]
Base.length(t::Tensor) = Int(ct_tensor_numel(t))
Base.eltype(t::Tensor) = julia_type(ct_tensor_dtype(t))
"CT_<dtype> code of the tensor."
dtype(t::Tensor) = ct_tensor_dtype(t)
"The tensor's [`Device`](@ref)."
device(t::Tensor) = Device(ct_tensor_device_type(t), ct_tensor_device_index(t))
"Raw address of the first element (host or device memory), storage offset applied."
data_ptr(t::Tensor) = ct_tensor_data_ptr(t)
Base.pointer(t::Tensor) = Ptr{eltype(t)}(data_ptr(t))
storage_offset(t::Tensor) = Int(ct_tensor_storage_offset(t))
is_contiguous(t::Tensor) = ct_tensor_is_contiguous(t) == 1
requires_grad(t::Tensor) = ct_tensor_requires_grad(t) == 1
is_defined(t::Tensor) = ct_tensor_is_defined(t) == 1
Base.isempty(t::Tensor) = length(t) == 0

function Base.string(t::Tensor)
    isfreed(t) && return "CTorch.Tensor(<freed>)"
    out = Ref{Ptr{UInt8}}(C_NULL)
    check(ct_tensor_to_string(out, t))
    return _take_string(out[])
end

function Base.show(io::IO, t::Tensor)
    if isfreed(t)
        print(io, "CTorch.Tensor(<freed>)")
    elseif get(io, :compact, false)
        print(io, "Tensor{", eltype(t), "}(", join(size(t), "×"), ", ", device_type_symbol(device(t)), ")")
    else
        print(io, string(t))
    end
end
Base.show(io::IO, ::MIME"text/plain", t::Tensor) = print(io, isfreed(t) ? "CTorch.Tensor(<freed>)" : string(t))

# ---- Factories -----------------------------------------------------------------

_sizes(dims::Tuple) = Int64[d for d in dims]
_sizes(dims::AbstractVector) = Int64[d for d in dims]

for (jl, c) in ((:empty, :ct_tensor_empty), (:zeros, :ct_tensor_zeros), (:ones, :ct_tensor_ones),
                (:rand, :ct_tensor_rand), (:randn, :ct_tensor_randn))
    @eval begin
        """
            CTorch.$($(string(jl)))([T=Float32,] dims...; device=:cpu, requires_grad=false)

        A new torch tensor with sizes `dims` in torch's order (`torch.$($(string(jl)))`).
        """
        function $jl(::Type{T}, dims::Union{Tuple,AbstractVector}; device = :cpu, requires_grad::Bool = false) where {T}
            s = _sizes(dims)
            d = Device(device)
            @_newtensor $c(out, s, length(s), dtype_code(T), d.type, d.index, Int32(requires_grad))
        end
        $jl(::Type{T}, dims::Integer...; kw...) where {T} = $jl(T, dims; kw...)
        $jl(dims::Integer...; kw...) = $jl(Float32, dims; kw...)
        $jl(dims::Union{Tuple,AbstractVector}; kw...) = $jl(Float32, dims; kw...)
    end
end

"""
    CTorch.full(dims, value; dtype=Float32, device=:cpu, requires_grad=false)
"""
function full(dims, value::Real; dtype::Type = Float32, device = :cpu, requires_grad::Bool = false)
    s = _sizes(dims isa Integer ? (dims,) : dims)
    d = Device(device)
    @_newtensor ct_tensor_full(out, s, length(s), Float64(value), dtype_code(dtype), d.type, d.index, Int32(requires_grad))
end

"""
    CTorch.arange([T=Int64,] start, stop[, step]; device=:cpu)

Like `torch.arange(start, stop, step)`: `stop` is excluded.
"""
function arange(::Type{T}, start::Real, stop::Real, step::Real = 1; device = :cpu, requires_grad::Bool = false) where {T}
    d = Device(device)
    @_newtensor ct_tensor_arange(out, Float64(start), Float64(stop), Float64(step), dtype_code(T), d.type, d.index, Int32(requires_grad))
end
arange(start::Real, stop::Real, step::Real = 1; kw...) =
    arange(all(x -> x isa Integer, (start, stop, step)) ? Int64 : Float32, start, stop, step; kw...)
arange(stop::Real; kw...) = arange(0, stop; kw...)

"CTorch.eye([T=Float32,] n, m=n; device=:cpu)"
function eye(::Type{T}, n::Integer, m::Integer = n; device = :cpu, requires_grad::Bool = false) where {T}
    d = Device(device)
    @_newtensor ct_tensor_eye(out, Int64(n), Int64(m), dtype_code(T), d.type, d.index, Int32(requires_grad))
end
eye(n::Integer, m::Integer = n; kw...) = eye(Float32, n, m; kw...)

"""
    CTorch.empty_like(t; dtype=eltype(t), device=device(t))

A new, uninitialised, **contiguous** torch tensor with `t`'s sizes. Use it to let
torch own the output of a Julia kernel (the seed's `g(x)`).
"""
empty_like(t::Tensor; dtype::Type = eltype(t), device = CTorch.device(t), requires_grad::Bool = false) =
    empty(dtype, size(t); device = device, requires_grad = requires_grad)
zeros_like(t::Tensor; dtype::Type = eltype(t), device = CTorch.device(t), requires_grad::Bool = false) =
    zeros(dtype, size(t); device = device, requires_grad = requires_grad)
ones_like(t::Tensor; dtype::Type = eltype(t), device = CTorch.device(t), requires_grad::Bool = false) =
    ones(dtype, size(t); device = device, requires_grad = requires_grad)

"""
    CTorch.tensor(A::AbstractArray; order=:reversed, device=:cpu)
    CTorch.tensor(x::Number)

A torch tensor holding a **copy** of `A` (see `Tensor(A)` for the zero-copy
constructor). `order=:reversed` gives torch sizes `reverse(size(A))` with the same
memory layout; `order=:same` keeps the index order (torch sizes `size(A)`,
`t[i-1,j-1] == A[i,j]`).
"""
function tensor(A::AbstractArray{T}; order::Symbol = :reversed, device = :cpu) where {T}
    order in (:reversed, :same) || throw(ArgumentError("order must be :reversed or :same"))
    B = order === :reversed ? Array{T}(A) : permutedims(Array{T}(A), ndims(A):-1:1)
    s = Int64[d for d in reverse(size(B))]
    d = Device(device)
    GC.@preserve B begin
        @_newtensor ct_tensor_from_data(out, pointer(B), s, length(s), dtype_code(T), d.type, d.index)
    end
end
function tensor(x::T; device = :cpu) where {T<:Number}
    r = Ref{T}(x)
    d = Device(device)
    GC.@preserve r begin
        @_newtensor ct_tensor_from_data(out, Base.unsafe_convert(Ptr{T}, r), C_NULL, 0, dtype_code(T), d.type, d.index)
    end
end

# ---- Conversions -------------------------------------------------------------------

"A new handle to the same tensor (same storage, same autograd identity)."
newref(t::Tensor) = @_newtensor ct_tensor_ref(out, t)
"Deep copy (differentiable, like `torch.clone`)."
clone(t::Tensor) = @_newtensor ct_tensor_clone(out, t)
"Shares storage, detached from autograd."
detach(t::Tensor) = @_newtensor ct_tensor_detach(out, t)
"`t` itself (new handle) if contiguous, else a contiguous copy."
contiguous(t::Tensor) = @_newtensor ct_tensor_contiguous(out, t)
"`copy(t)` is a deep copy ([`clone`](@ref)), as `copy` of a Julia array."
Base.copy(t::Tensor) = clone(t)

"""
    to(t::Tensor; device=nothing, dtype=nothing, non_blocking=false, copy=false)
    to(t, device), to(t, T::Type)

Converts device and/or element type; `nothing` keeps that part.
"""
function to(t::Tensor; device = nothing, dtype = nothing, non_blocking::Bool = false, copy::Bool = false)
    d = _device(device)
    @_newtensor ct_tensor_to(out, t, d.type, d.index, dtype_code(dtype), Int32(non_blocking), Int32(copy))
end
to(t::Tensor, ::Type{T}; kw...) where {T} = to(t; dtype = T, kw...)
to(t::Tensor, d::Union{Symbol,AbstractString,Device}; kw...) = to(t; device = d, kw...)

"`dst.copy_(src)`: copies values, converting dtype/device and broadcasting."
Base.copyto!(dst::Tensor, src::Tensor) = (check(ct_tensor_copy_(dst, src, Int32(0))); dst)
Base.fill!(t::Tensor, v::Real) = (check(ct_tensor_fill_(t, Float64(v))); t)

"`torch.equal`: same shape and values."
function Base.:(==)(a::Tensor, b::Tensor)
    r = Ref{Int32}(0)
    check(ct_tensor_equal(r, a, b))
    return r[] == 1
end
function Base.isapprox(a::Tensor, b::Tensor; rtol::Real = 1e-5, atol::Real = 1e-8, nans::Bool = false)
    r = Ref{Int32}(0)
    check(ct_tensor_allclose(r, a, b, Float64(rtol), Float64(atol), Int32(nans)))
    return r[] == 1
end

"""
    Array(t::Tensor; order=:reversed)

A Julia `Array` holding a **copy** of a tensor's data (any device, any
layout). `order=:reversed` gives `reverse(size(t))` (same memory order as
torch); `order=:same` gives `size(t)` with torch's index order.
"""
function Base.Array(t::Tensor; order::Symbol = :reversed)
    c = device(t).type == 1 ? contiguous(t) : contiguous(to(t; device = :cpu))
    A = copy(unsafe_array(c))
    free!(c)
    order === :reversed && return A
    order === :same && return ndims(A) <= 1 ? A : permutedims(A, ndims(A):-1:1)
    throw(ArgumentError("order must be :reversed or :same"))
end

"The value of a one-element tensor, as a Julia number."
function item(t::Tensor)
    length(t) == 1 || throw(CTorchError(Int32(1), "item: tensor has $(length(t)) elements, not 1"))
    return Array(t)[1]
end

# ---- Library-wide helpers ----------------------------------------------------------

"Seeds torch's generators (`torch.manual_seed`)."
manual_seed(seed::Integer) = check(ct_manual_seed(UInt64(seed)))
num_threads() = Int(ct_get_num_threads())
set_num_threads(n::Integer) = check(ct_set_num_threads(Int32(n)))
cuda_is_available() = ct_cuda_is_available() == 1
cuda_is_compiled() = ct_cuda_is_compiled() == 1
cuda_device_count() = Int(ct_cuda_device_count())
cuda_synchronize(device::Integer = -1) = check(ct_cuda_synchronize(Int32(device)))
"Loads a shared library that registers custom TorchScript operators."
load_library(path::AbstractString) = check(ct_load_library(path))
version() = VersionNumber(unsafe_string(ct_version()))
torch_version() = unsafe_string(ct_torch_version())

"Grad mode is per thread. `grad_enabled!(false)` is `torch.set_grad_enabled(False)`."
grad_enabled() = ct_grad_mode_is_enabled() == 1
grad_enabled!(on::Bool) = (ct_grad_mode_set(Int32(on)); on)
"Runs `f()` with grad mode off on this thread (`torch.no_grad()`)."
function no_grad(f)
    old = grad_enabled()
    ct_grad_mode_set(Int32(0))
    try
        return f()
    finally
        ct_grad_mode_set(Int32(old))
    end
end
"Runs `f()` in inference mode on this thread (`torch.inference_mode()`)."
function inference_mode(f, on::Bool = true)
    check(ct_inference_mode_push(Int32(on)))
    try
        return f()
    finally
        check(ct_inference_mode_pop())
    end
end
