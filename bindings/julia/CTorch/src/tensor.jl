# Tensor handles, factories and metadata.

"""
    Tensor{T,N} <: AbstractArray{T,N}

A handle to a torch tensor (one `ct_tensor*`) with element type `T` and `N`
dimensions. Several `Tensor`s may refer to the same torch tensor; freeing one
never invalidates another. Freed by a finalizer, or at once with
[`free!`](@ref).

**One index convention**: `size(t)` is torch's `t.shape`, `t[i,j]` is torch's
`t[i-1,j-1]` (Julia indices are 1-based), and `Array(t)`, `Tensor(A)`,
`collect`, iteration, broadcasting and `dims=` all use that same order. A CPU
tensor is an `AbstractArray` whose elements are read and written in torch's
memory (no copy). [`unsafe_array`](@ref) is the one exception: the raw memory
as a plain `Array`, dimensions reversed.

Array functions (`size`, indexing, `reshape`, `vec`, `sum(t; dims)`, `Array`,
`collect`) and operators behave as for Julia arrays in that index order
(`reshape` is column-major as in Julia; torch's row-major one is
`ops.aten.reshape`): `*` is the matrix product, `+`/`-` need equal shapes,
the `.`-forms broadcast with Julia's rules, reductions without `dims` are
numbers, `==` is one Bool. All of them run as torch ops and record autograd
(bindings/julia/README.md, "Operators").
"""
Tensor

# Constructors of Tensor{T,N} for every dtype and up to 8 dimensions, made
# once: building the type from run-time T and N (apply_type) costs far more
# than the C call that made the tensor.
const _MAX_FAST_NDIM = 8
const _MAKERS = [Any[@eval(p -> Tensor{$T,$N}(Val(:own), p)) for N in 0:_MAX_FAST_NDIM] for T in DTYPES]

# Takes ownership of a new ct_tensor* handle.
function _tensor(p::Ptr{Cvoid})
    code = ct_tensor_dtype(p)
    n = Int(ct_tensor_ndim(p))
    1 <= code <= length(DTYPES) && n <= _MAX_FAST_NDIM && return _MAKERS[code][n+1](p)::Tensor
    return Tensor{julia_type(code),n}(Val(:own), p)
end

# Same, when the result is most likely of `like`'s type (elementwise ops):
# then the constructor is called statically.
@inline function _tensor_like(p::Ptr{Cvoid}, ::Tensor{T,N}) where {T,N}
    T <: TorchElType && ct_tensor_dtype(p) == dtype_code(T) && ct_tensor_ndim(p) == N &&
        return Tensor{T,N}(Val(:own), p)
    return _tensor(p)
end

# An undefined tensor (e.g. a gradient an op was told not to compute) is `nothing`.
_defined_tensor(p::Ptr{Cvoid}) = ct_tensor_is_defined(p) == 1 ? _tensor(p) : (ct_tensor_free(p); nothing)

macro _newtensor(call)
    # `call` uses `out` as its first argument.
    out = esc(:out)
    quote
        local $out = Ref{Ptr{Cvoid}}(C_NULL)
        check($(esc(call)))
        _tensor($out[])
    end
end

# ---- Metadata ------------------------------------------------------------------

@noinline _rank_changed(t::Tensor{T,N}, n) where {T,N} = throw(CTorchError(CT_ERR_INVALID_ARGUMENT,
    "this Tensor{$T,$N} handle now has $n dimensions (changed in place, e.g. by unsqueeze_); " *
    "use CTorch.newref(t) for a handle of the new shape"))

@inline function _check_rank(t::Tensor{T,N}) where {T,N}
    n = ct_tensor_ndim(t)
    n == N || _rank_changed(t, n)
    return nothing
end

"`size(t)`: torch's `t.shape` (the index order of the whole binding)."
function Base.size(t::Tensor{T,N}) where {T,N}
    _check_rank(t)
    p = ct_tensor_sizes(t)
    return ntuple(i -> Int(unsafe_load(p, i)), Val(N))
end
function Base.strides(t::Tensor{T,N}) where {T,N}
    _check_rank(t)
    p = ct_tensor_strides(t)
    return ntuple(i -> Int(unsafe_load(p, i)), Val(N))
end
Base.stride(t::Tensor, d::Integer) = strides(t)[d]
Base.length(t::Tensor) = Int(ct_tensor_numel(t))
"CT_<dtype> code of the tensor."
dtype(t::Tensor) = ct_tensor_dtype(t)
const LAYOUTS = Dict(CT_LAYOUT_STRIDED => :strided, CT_LAYOUT_SPARSE_COO => :sparse_coo,
                     CT_LAYOUT_SPARSE_CSR => :sparse_csr, CT_LAYOUT_SPARSE_CSC => :sparse_csc,
                     CT_LAYOUT_SPARSE_BSR => :sparse_bsr, CT_LAYOUT_SPARSE_BSC => :sparse_bsc,
                     CT_LAYOUT_MKLDNN => :mkldnn)
"The tensor's layout as a Symbol (`:strided`, `:sparse_coo`, ...; torch's `t.layout`)."
layout(t::Tensor) = (r = Ref{Int32}(0); check(ct_tensor_layout(r, t)); LAYOUTS[r[]])
"The tensor's [`Device`](@ref)."
device(t::Tensor) = Device(ct_tensor_device_type(t), ct_tensor_device_index(t))
"Raw address of the first element (host or device memory), storage offset applied."
data_ptr(t::Tensor) = ct_tensor_data_ptr(t)
Base.pointer(t::Tensor{T}) where {T} = Ptr{T}(data_ptr(t))
storage_offset(t::Tensor) = Int(ct_tensor_storage_offset(t))
is_contiguous(t::Tensor) = ct_tensor_is_contiguous(t) == 1
requires_grad(t::Tensor) = ct_tensor_requires_grad(t) == 1
is_defined(t::Tensor) = ct_tensor_is_defined(t) == 1
"Bytes of the tensor's elements (`t.nbytes`)."
nbytes(t::Tensor) = Int(ct_tensor_nbytes(t))
"`true` for a CPU tensor in page-locked memory."
is_pinned(t::Tensor) = ct_tensor_is_pinned(t) == 1
"A copy in page-locked memory (needs CUDA), for faster host-to-device copies."
pin_memory(t::Tensor) = @_newtensor ct_tensor_pin_memory(out, t)

"""
    CTorch.TensorInfo

Every piece of a tensor's metadata, as `ct_tensor_metadata` fills it (the C
struct's layout, generated from the header into capi_generated.jl).
`sizes`/`strides` are borrowed: valid while the tensor lives and its metadata
does not change.
"""
TensorInfo

"`CTorch.tensor_info(t)`: a [`TensorInfo`](@ref), in one C call."
@inline function tensor_info(t::Tensor)
    r = Ref(TensorInfo(sizeof(TensorInfo), 0, 0, 0, 0, 0, 0, 0, 0, C_NULL, C_NULL, C_NULL))
    check(ct_tensor_metadata(r, t))
    return r[]
end

"`torch_string(t)`: torch's own text for the tensor (every element; `print(t)` in C++)."
function torch_string(t::Tensor)
    out = Ref{Ptr{UInt8}}(C_NULL)
    check(ct_tensor_to_string(out, t))
    return _take_string(out[])
end

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
function empty_like(t::Tensor{T,N}; dtype::Type = T, device = nothing,
                    requires_grad::Bool = false) where {T,N}
    if device === nothing && !requires_grad
        # One C call (ct_tensor_empty_like): no size or device queries.
        out = Ref{Ptr{Cvoid}}(C_NULL)
        if dtype === T
            check(ct_tensor_empty_like(out, t, CT_DTYPE_KEEP))
            return Tensor{T,N}(Val(:own), out[])
        end
        check(ct_tensor_empty_like(out, t, dtype_code(dtype)))
        return Tensor{dtype,N}(Val(:own), out[])
    end
    return empty(dtype, size(t); device = device === nothing ? CTorch.device(t) : device,
                 requires_grad = requires_grad)
end
zeros_like(t::Tensor; dtype::Type = eltype(t), device = CTorch.device(t), requires_grad::Bool = false) =
    zeros(dtype, size(t); device = device, requires_grad = requires_grad)
ones_like(t::Tensor; dtype::Type = eltype(t), device = CTorch.device(t), requires_grad::Bool = false) =
    ones(dtype, size(t); device = device, requires_grad = requires_grad)

"""
    CTorch.tensor(A::AbstractArray; device=:cpu)
    CTorch.tensor(x::Number; device=:cpu)

A new, contiguous torch tensor holding a **copy** of `A`, with `size(t) ==
size(A)` and `t[I] == A[I]` (see `Tensor(A)` for the zero-copy constructor).
"""
function tensor(A::AbstractArray{T,N}; device = :cpu) where {T,N}
    B = N <= 1 ? Array{T,N}(A) : permutedims(Array{T,N}(A), ntuple(i -> N + 1 - i, N))
    s = Int64[d for d in size(A)]
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
    Array(t::Tensor)

A Julia `Array` holding a **copy** of a tensor's elements (any device, any
layout), in the binding's one index order: `size(Array(t)) == size(t)` and
`Array(t)[I] == t[I]`. `collect(t)` and `convert(Array, t)` are the same.
"""
function Base.Array(t::Tensor{T,N}) where {T,N}
    _check_readable(T)
    c = iscpu(device(t)) ? contiguous(t) : contiguous(to(t; device = :cpu))
    A = GC.@preserve c (N <= 1 ? copy(unsafe_array(T, c)) :
                        permutedims(unsafe_array(T, c), ntuple(i -> N + 1 - i, N)))
    free!(c)
    return A::Array{T,N}
end
Base.Array{T}(t::Tensor{S,N}) where {T,S,N} = Array{T,N}(Array(t))
Base.collect(t::Tensor) = Array(t)

"The value of a one-element tensor, as a Julia number (`t.item()`)."
function item(t::Tensor)
    length(t) == 1 || throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "item: tensor has $(length(t)) elements, not 1"))
    return Array(t)[1]
end

# ---- Library-wide helpers ----------------------------------------------------------

"Seeds torch's generators (`torch.manual_seed`)."
manual_seed(seed::Integer) = check(ct_manual_seed(UInt64(seed)))
num_threads() = Int(ct_num_threads())
set_num_threads(n::Integer) = check(ct_set_num_threads(Int32(n)))
num_interop_threads() = Int(ct_num_interop_threads())
set_num_interop_threads(n::Integer) = check(ct_set_num_interop_threads(Int32(n)))

"""
    lstm_guard!(mode)

Where float32 LSTM layers without grad run (`ct_lstm_guard_set_mode`): `nothing`
probes oneDNN's kernel once and routes around it where it is wrong (the
default), `false` uses oneDNN's kernel as LibTorch does, `true` always ctorch's
own LSTM layer. Process-wide; call it at start-up.
"""
lstm_guard!(mode::Union{Nothing,Bool}) =
    check(ct_lstm_guard_set_mode(mode === nothing ? Int32(-1) : Int32(mode)))
"`-1` nothing to guard, `0` oneDNN's LSTM kernel in use, `1` ctorch's layer in use, `2` not probed yet."
lstm_guard_state() = Int(ct_lstm_guard_route())
"Probes now: the largest difference between oneDNN's no-grad LSTM and ctorch's layer (`ct_lstm_guard_check`)."
lstm_guard_check() = (r = Ref{Float64}(0); check(ct_lstm_guard_check(r)); r[])
cuda_is_available() = ct_cuda_is_available() == 1
cuda_is_compiled() = ct_cuda_is_compiled() == 1
cuda_device_count() = Int(ct_cuda_device_count())
cuda_synchronize(device::Integer = -1) = check(ct_cuda_synchronize(Int32(device)))
cuda_current_device() = (r = Ref{Int32}(0); check(ct_cuda_current_device(r)); Int(r[]))
cuda_set_device(device::Integer) = check(ct_cuda_set_device(Int32(device)))
cuda_empty_cache() = check(ct_cuda_empty_cache())
cuda_manual_seed_all(seed::Integer) = check(ct_cuda_manual_seed_all(UInt64(seed)))
cuda_memory_allocated(device::Integer = -1) = (r = Ref{Csize_t}(0); check(ct_cuda_memory_allocated(r, Int32(device))); Int(r[]))
cuda_memory_reserved(device::Integer = -1) = (r = Ref{Csize_t}(0); check(ct_cuda_memory_reserved(r, Int32(device))); Int(r[]))
"torch's current CUDA stream of `device` (a `cudaStream_t` as a pointer)."
cuda_current_stream(device::Integer = -1) = (r = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_current_stream(r, Int32(device))); r[])
"Makes `stream` torch's current stream on `device`; returns the previous one."
cuda_set_stream(stream::Ptr{Cvoid}, device::Integer = -1) =
    (r = Ref{Ptr{Cvoid}}(C_NULL); check(ct_cuda_set_stream(r, Int32(device), stream)); r[])
cuda_stream_synchronize(stream::Ptr{Cvoid}, device::Integer = -1) = check(ct_cuda_stream_synchronize(Int32(device), stream))
cuda_stream_wait_stream(waiting::Ptr{Cvoid}, producer::Ptr{Cvoid}, device::Integer = -1) =
    check(ct_cuda_stream_wait_stream(Int32(device), waiting, producer))
"Loads a shared library that registers custom TorchScript operators."
load_library(path::AbstractString) = check(ct_load_library(path))
version() = VersionNumber(unsafe_string(ct_version()))
torch_version() = unsafe_string(ct_torch_version())

"Grad mode is per thread. `grad_enabled!(false)` is `torch.set_grad_enabled(False)`."
grad_enabled() = ct_grad_mode_is_enabled() == 1
grad_enabled!(on::Bool) = (ct_grad_mode_set_enabled(Int32(on)); on)
"Runs `f()` with grad mode off on this thread (`torch.no_grad()`)."
function no_grad(f)
    old = grad_enabled()
    ct_grad_mode_set_enabled(Int32(0))
    try
        return f()
    finally
        ct_grad_mode_set_enabled(Int32(old))
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
