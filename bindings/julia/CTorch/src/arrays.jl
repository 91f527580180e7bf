# Zero-copy bridges between torch memory and Julia arrays, both ways.

# ---- Rooting Julia objects while torch (or a C callback) uses them ------------
#
# Julia objects handed to ctorch (arrays wrapped with from_blob, custom autograd
# function state) are kept in `_ROOTS` under a numeric id, which is what ctorch
# gets as `ctx`. When torch lets go, ctorch appends the id to its release queue
# (ct_tensor_from_blob_queued). Julia is never called back from a foreign
# thread: the queue is polled when tensors are created from Julia arrays, in
# `free!`, in `release_unused!()`, and when a custom autograd function is
# applied.

const _ROOTS = Dict{UInt,Any}()
const _ROOTS_LOCK = ReentrantLock()
const _NEXT_ID = Threads.Atomic{UInt}(1)
const _POLL_BUF = Vector{Ptr{Cvoid}}(undef, 256)

function _root!(obj)
    id = Threads.atomic_add!(_NEXT_ID, UInt(1))
    lock(_ROOTS_LOCK) do
        _ROOTS[id] = obj
    end
    return id
end

function _unroot!(id::UInt)
    lock(_ROOTS_LOCK) do
        delete!(_ROOTS, id)
    end
    return nothing
end

function _poll_release_queue()
    isempty(_ROOTS) && return 0         # nothing of ours can be in the queue
    released = 0
    lock(_ROOTS_LOCK) do
        buf = _POLL_BUF
        n = Ref{Csize_t}(0)
        while true
            check(ct_release_queue_poll(buf, length(buf), n))
            for i in 1:Int(n[])
                id = UInt(buf[i])
                if haskey(_ROOTS, id)
                    delete!(_ROOTS, id)
                    released += 1
                end
            end
            n[] < length(buf) && break
        end
    end
    return released
end

"""
    CTorch.release_unused!() -> Int

Polls ctorch's release queue and un-roots every Julia array (and custom
autograd function state) that torch no longer uses; returns how many were
released. Call it after `GC.gc()` to give memory back promptly; it also runs
automatically whenever a Julia array is wrapped as a tensor, on `free!`, and
when a custom autograd function is applied.
"""
release_unused!() = _poll_release_queue()

# free!(t::Tensor) polls the queue: the tensor may have been the last user of a Julia array.
_after_free(::Tensor) = (_poll_release_queue(); nothing)

"Number of Julia objects currently rooted because torch may still use them."
rooted_count() = lock(() -> length(_ROOTS), _ROOTS_LOCK)

# ---- Julia arrays as tensors (no copy) --------------------------------------------

"""
    Tensor(A::Array; requires_grad=false)
    Tensor(P::PermutedDimsArray; requires_grad=false)   # of an Array

Wraps the memory of a Julia array as a torch tensor, **without copying**
(`ct_tensor_from_blob_queued`), in the binding's one index order:
`size(t) == size(A)`, `t[I] == A[I]`, and writes on either side are seen by
the other.

A column-major `Array` becomes a tensor with strides `strides(A)` (not
"contiguous" in torch's row-major sense; torch ops accept it). For a tensor
that is contiguous for torch, wrap a reversed view of the array:
`Tensor(PermutedDimsArray(A, (2, 1)))` is the (3,4) contiguous tensor over the
memory of a 4×3 `A` (any permutation works; its strides are kept).

`A` stays rooted (it cannot be garbage-collected) until torch lets go of the
memory, i.e. after every tensor and view using it is freed and the release
queue is polled. Do not resize `A` (`push!`, `resize!`) while torch uses it.
"""
Tensor(A::Array{T,N}; requires_grad::Bool = false) where {T,N} =
    _wrap_julia_memory(A, A, size(A), strides(A), requires_grad)
Tensor(P::PermutedDimsArray{T,N,perm,iperm,Array{T,N}}; requires_grad::Bool = false) where {T,N,perm,iperm} =
    _wrap_julia_memory(parent(P), P, size(P), strides(P), requires_grad)
Tensor(t::Tensor) = t

"""
    Tensor(A::AbstractArray; requires_grad=false)

Any other Julia array: **without copying** when `A` is a strided view of an
`Array` with non-negative strides (`view(A, 1:2, :)`, `@view A[:, 3]`,
`reshape(view(...))`, `A'` and `transpose(A)` of a real `Array`): the
tensor shares `A`'s memory and keeps its parent rooted, as `Tensor(::Array)`;
otherwise (`1:5`, a `BitArray`, a reversed range view, lazy arrays) a copy
into a new `Array` that the tensor wraps.
"""
function Tensor(A::AbstractArray{T,N}; requires_grad::Bool = false) where {T,N}
    root = _array_root(A)
    if root !== nothing && eltype(root) === T && isbitstype(T) && length(A) > 0
        st = _strides_of(A)
        st !== nothing && all(>=(0), st) &&
            return _wrap_julia_memory(root, A, size(A), st, requires_grad, _pointer_of(A, root, st))
    end
    return Tensor(collect(T, A); requires_grad = requires_grad)     # a copy, wrapped
end

# The Array under a chain of wrappers (parent), or nothing.
_array_root(A::Array) = A
_array_root(A::AbstractArray) = (p = parent(A); p === A ? nothing : _array_root(p))
# Adjoint and Transpose (LinearAlgebra, not a dependency) of a real vector or matrix.
_is_lazy_transpose(A) = nameof(typeof(A)) in (:Adjoint, :Transpose) &&
    nameof(parentmodule(typeof(A))) === :LinearAlgebra && eltype(A) <: Real && parent(A) isa Array
function _strides_of(A::AbstractArray)
    if _is_lazy_transpose(A)
        P = parent(A)
        return ndims(P) == 1 ? (stride(P, 1), stride(P, 1)) : (stride(P, 2), stride(P, 1))
    end
    A isa StridedArray || return nothing
    return strides(A)
end
_pointer_of(A, root, st) = _is_lazy_transpose(A) ? pointer(root) : pointer(A)

function _wrap_julia_memory(A::Array{T}, X, dims, st, requires_grad::Bool, ptr::Ptr = pointer(A)) where {T}
    code = dtype_code(T)
    _poll_release_queue()
    sizes = Int64[d for d in dims]
    strides = Int64[s for s in st]
    id = _root!(A)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    status = GC.@preserve A ct_tensor_from_blob_queued(out, ptr, sizes, length(sizes), strides, code,
                                                       CT_DEVICE_CPU, Int32(-1), Ptr{Cvoid}(id))
    if status != CT_OK
        _unroot!(id)          # on failure nothing is queued: we still own A
        _throw_last_error(status)
    end
    t = _tensor(out[])
    requires_grad && requires_grad!(t, true)
    return t
end

# ---- Tensors as Julia arrays (no copy) ---------------------------------------------

@noinline _not_cpu(t::Tensor, what) = throw(CTorchError(CT_ERR_NOT_SUPPORTED,
    "$what: the tensor is on $(device(t)); only CPU tensors are Julia arrays element by element. " *
    "Copy it first: Array(t), or CTorch.to(t, :cpu)"))
@inline _check_cpu(t::Tensor, what) = (ct_tensor_device_type(t) == CT_DEVICE_CPU || _not_cpu(t, what); nothing)

@noinline _opaque_error(T) = throw(CTorchError(CT_ERR_TYPE, "elements of dtype $(T) cannot be read from Julia"))
_check_readable(::Type{T}) where {T} = T <: OpaqueElement ? _opaque_error(T) : nothing

_wrap(::Type{T}, p::Ptr{Cvoid}, dims::NTuple{N,Int}) where {T,N} =
    p == C_NULL ? Array{T,N}(undef, dims) :        # no elements: nothing to alias
    unsafe_wrap(Array, Ptr{T}(p), dims; own = false)

"""
    unsafe_array(t::Tensor) -> Array{T,N}

The tensor's memory as a Julia `Array`, **no copy**, with the dimensions
**reversed**: a torch (2,3,4) tensor is a Julia 4×3×2 array and
`A[i,j,k] == t[k-1,j-1,i-1]`. The tensor must be on the CPU and contiguous
(otherwise a `CTorchError` says so; use [`torch_view`](@ref) or
`contiguous(t)`).

The array does **not** keep the tensor alive: it is valid only while `t` (or
another handle to the same memory) lives and is not resized. Keep `t`
referenced (e.g. `GC.@preserve t ...`, or use [`with_array`](@ref)).

The element type of an op's result is only known at run time; put loops
behind a function barrier (`kernel!(unsafe_array(y), unsafe_array(x))`) so
they compile for the concrete type.
"""
function unsafe_array(t::Tensor{T,N}) where {T,N}
    _check_cpu(t, "unsafe_array")
    _check_readable(T)
    is_contiguous(t) || throw(CTorchError(CT_ERR_INVALID_ARGUMENT,
        "unsafe_array: tensor is not contiguous (sizes $(size(t)), strides $(strides(t))); " *
        "use torch_view(t) for a strided view or unsafe_array(contiguous(t)) for a copy"))
    return _wrap(T, data_ptr(t), reverse(size(t)))::Array{T,N}
end

"""
    unsafe_array(::Type{T}, t::Tensor)

Like `unsafe_array(t)`, asserting the element type (a `CTorchError` if it
differs), which makes the element type inferable.
"""
function unsafe_array(::Type{T}, t::Tensor) where {T}
    eltype(t) === T || throw(CTorchError(CT_ERR_TYPE, "unsafe_array: tensor has element type $(eltype(t)), not $T"))
    return unsafe_array(t)::Array{T}
end

"""
    StridedTensorView{T,N} <: AbstractArray{T,N}

A zero-copy view of a CPU tensor with arbitrary strides, in torch's index
order (`A[i,j] == t[i-1,j-1]`). It holds the `Tensor`, so the memory stays
valid while the view is reachable. Returned by `torch_view` for non-contiguous
tensors.
"""
struct StridedTensorView{T,N} <: AbstractArray{T,N}
    ptr::Ptr{T}
    dims::NTuple{N,Int}
    strides::NTuple{N,Int}
    tensor::Tensor
end
Base.size(A::StridedTensorView) = A.dims
Base.strides(A::StridedTensorView) = A.strides
Base.stride(A::StridedTensorView, d::Integer) = A.strides[d]
Base.IndexStyle(::Type{<:StridedTensorView}) = IndexCartesian()
Base.elsize(::Type{StridedTensorView{T,N}}) where {T,N} = sizeof(T)
Base.pointer(A::StridedTensorView) = A.ptr
Base.unsafe_convert(::Type{Ptr{T}}, A::StridedTensorView{T}) where {T} = A.ptr
@inline function _offset(A::StridedTensorView{T,N}, I::NTuple{N,Int}) where {T,N}
    o = 0
    @inbounds for d in 1:N
        o += (I[d] - 1) * A.strides[d]
    end
    return o
end
@inline function Base.getindex(A::StridedTensorView{T,N}, I::Vararg{Int,N}) where {T,N}
    @boundscheck checkbounds(A, I...)
    return GC.@preserve A unsafe_load(A.ptr, _offset(A, I) + 1)
end
@inline function Base.setindex!(A::StridedTensorView{T,N}, v, I::Vararg{Int,N}) where {T,N}
    @boundscheck checkbounds(A, I...)
    GC.@preserve A unsafe_store!(A.ptr, convert(T, v), _offset(A, I) + 1)
    return A
end

function _strided_view(::Type{T}, t::Tensor, dims::NTuple{N,Int}, st::NTuple{N,Int}) where {T,N}
    p = data_ptr(t)
    if p == C_NULL   # no elements
        return StridedTensorView{T,N}(Ptr{T}(C_NULL), dims, st, t)
    end
    return StridedTensorView{T,N}(Ptr{T}(p), dims, st, t)
end

"""
    torch_view(t::Tensor) -> AbstractArray

A zero-copy view of a CPU tensor in **torch's index order**:
`A[i,j,k] == t[i-1,j-1,k-1]` and `size(A) == size(t)`.

- contiguous tensors: `PermutedDimsArray(unsafe_array(t), (N,...,1))` (for 0-
  and 1-dimensional tensors the plain `Array`, the orders being the same); it is
  valid only while `t` lives, like `unsafe_array`.
- non-contiguous tensors (transposes, slices, expands, `Tensor(A; order=:same)`):
  a [`StridedTensorView`](@ref) that uses torch's strides and keeps `t` alive.

Writes through the view change the tensor. Never a copy, never reordered data.
"""
function torch_view(t::Tensor)
    _check_cpu(t, "torch_view")
    T = eltype(t)
    if is_contiguous(t)
        A = unsafe_array(t)
        N = ndims(A)
        N <= 1 && return A
        return PermutedDimsArray(A, ntuple(i -> N + 1 - i, N))
    end
    return _strided_view(T, t, size(t), strides(t))
end

"""
    with_array(f, t::Tensor)

Calls `f(unsafe_array(t))` while keeping `t` alive (`GC.@preserve`); returns
`f`'s result. Also a function barrier, so `f` compiles for the element type.
"""
with_array(f, t::Tensor) = GC.@preserve t f(unsafe_array(t))

"`with_view(f, t)`: `f(torch_view(t))` with `t` kept alive."
with_view(f, t::Tensor) = GC.@preserve t f(torch_view(t))

# ---- A CPU Tensor as an AbstractArray -------------------------------------------------
#
# Elements are read and written in torch's memory, in torch's index order
# (t[i,j] is torch's t[i-1,j-1]). Broadcasting runs over the zero-copy views
# and writes into torch memory; `t .+ 1` allocates its result with torch.

@noinline _index_error(t, I) = throw(BoundsError(t, I))

# Address of element I (1-based, torch order) after device and bounds checks:
# one C call (ct_tensor_metadata).
@inline function _element_ptr(t::Tensor{T,N}, I::NTuple{N,Int}) where {T,N}
    _check_readable(T)
    info = tensor_info(t)
    info.device_type == CT_DEVICE_CPU || _not_cpu(t, "indexing")
    info.ndim == N || _rank_changed(t, info.ndim)
    sz, st, data = info.sizes, info.strides, info.data
    o = 0
    @inbounds for d in 1:N
        i = I[d]
        (1 <= i <= unsafe_load(sz, d)) || _index_error(t, I)
        o += (i - 1) * unsafe_load(st, d)
    end
    return Ptr{T}(data) + o * sizeof(T)
end

Base.IndexStyle(::Type{<:Tensor}) = IndexCartesian()
@inline Base.getindex(t::Tensor{T,N}, I::Vararg{Int,N}) where {T,N} =
    GC.@preserve t unsafe_load(_element_ptr(t, I))
@inline function Base.setindex!(t::Tensor{T,N}, v, I::Vararg{Int,N}) where {T,N}
    x = convert(T, v)
    GC.@preserve t unsafe_store!(_element_ptr(t, I), x)
    return t
end

"""
    similar(t::Tensor, [T, dims])

A new, uninitialised, contiguous torch tensor on `t`'s device (a plain `Array`
when `T` has no torch dtype).
"""
Base.similar(t::Tensor, ::Type{S}, dims::Dims) where {S} =
    S <: TorchElType ? empty(S, dims; device = device(t)) : Array{S}(undef, dims)

# Column-major, as for every Julia array: a new tensor, sharing memory when
# torch can express it as a view.
function Base.reshape(t::Tensor{T,N}, dims::Dims) where {T,N}
    prod(dims) == length(t) || throw(DimensionMismatch("new dimensions $dims must be consistent with array size $(length(t))"))
    r = N <= 1 ? t : ops.aten.permute(t, collect(N-1:-1:0))
    r = ops.aten.reshape(r, Int64[reverse(dims)...])
    return length(dims) <= 1 ? r : ops.aten.permute(r, collect(length(dims)-1:-1:0))
end
Base.vec(t::Tensor) = reshape(t, (length(t),))

# Broadcasting (`t .+ v`, `f.(t)`, `t .= ...`): broadcast.jl.
