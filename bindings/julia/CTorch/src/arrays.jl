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

"Number of Julia objects currently rooted because torch may still use them."
rooted_count() = lock(() -> length(_ROOTS), _ROOTS_LOCK)

# ---- Julia arrays as tensors (no copy) --------------------------------------------

"""
    Tensor(A::Array; order=:reversed, requires_grad=false)

Wraps the memory of a Julia `Array` as a torch tensor, **without copying**
(`ct_tensor_from_blob_queued`). Writes on either side are visible on the other.

- `order=:reversed` (default): torch sizes are `reverse(size(A))` with
  contiguous row-major strides: a Julia 4×3×2 array becomes a (2,3,4) tensor and
  `A[i,j,k] == t[k-1,j-1,i-1]`. This is what `unsafe_array(t)` gives back.
- `order=:same`: torch sizes are `size(A)` with column-major strides
  `(1, size(A,1), ...)`, so `A[i,j,k] == t[i-1,j-1,k-1]`. The tensor is not
  contiguous in torch's sense (torch ops accept it; `unsafe_array` refuses it;
  `torch_view` works).

`A` stays rooted (it cannot be garbage-collected) until torch lets go of the
memory, i.e. after every tensor and view using it is freed and the release
queue is polled. Do not resize `A` (`push!`, `resize!`) while torch uses it.
"""
function Tensor(A::Array{T,N}; order::Symbol = :reversed, requires_grad::Bool = false) where {T,N}
    code = dtype_code(T)
    _poll_release_queue()
    if order === :reversed
        sizes = Int64[size(A, N + 1 - i) for i in 1:N]
        strides = Ptr{Int64}(C_NULL)
        strides_arr = Int64[]
    elseif order === :same
        sizes = Int64[size(A, i) for i in 1:N]
        strides_arr = Vector{Int64}(undef, N)
        s = 1
        for i in 1:N
            strides_arr[i] = s
            s *= max(size(A, i), 1)
        end
        strides = pointer(strides_arr)
    else
        throw(ArgumentError("order must be :reversed or :same, got :$order"))
    end
    id = _root!(A)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve A strides_arr ct_tensor_from_blob_queued(out, pointer(A), sizes, N, strides, code,
                                                               Int32(1), Int32(-1), Ptr{Cvoid}(id))
    if st != 0
        _unroot!(id)          # on failure nothing is queued: we still own A
        _throw_last_error(st)
    end
    t = _tensor_from_handle(out[])
    requires_grad && requires_grad!(t, true)
    return t
end

Tensor(t::Tensor) = t

# ---- Tensors as Julia arrays (no copy) ---------------------------------------------

@noinline function _check_cpu(t::Tensor, what)
    d = device(t)
    iscpu(d) || throw(CTorchError(Int32(7), "$what: tensor is on $(d); only CPU tensors can be " *
                                            "viewed as Julia arrays (see README: CUDA)"))
end

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

The element type is only known at run time; put loops behind a function
barrier (`kernel!(unsafe_array(t))`) so they compile for the concrete type.
"""
function unsafe_array(t::Tensor)
    _check_cpu(t, "unsafe_array")
    is_contiguous(t) || throw(CTorchError(Int32(1),
        "unsafe_array: tensor is not contiguous (sizes $(size(t)), strides $(strides(t))); " *
        "use torch_view(t) for a strided view or unsafe_array(contiguous(t)) for a copy"))
    return _wrap(eltype(t), data_ptr(t), reverse(size(t)))
end

"""
    unsafe_array(::Type{T}, t::Tensor)

Like `unsafe_array(t)`, asserting the element type (a `CTorchError` if it
differs), which makes the element type inferable.
"""
function unsafe_array(::Type{T}, t::Tensor) where {T}
    eltype(t) === T || throw(CTorchError(Int32(2), "unsafe_array: tensor has element type $(eltype(t)), not $T"))
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
