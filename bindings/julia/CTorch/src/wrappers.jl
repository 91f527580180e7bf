# Base's array wrappers applied to a Tensor give Tensors (torch views or ops,
# which autograd records), never a SubArray/ReshapedArray/PermutedDimsArray
# whose copy would silently drop the gradient: reshape with a Colon, view,
# selectdim (through view), PermutedDimsArray, permutedims, reverse, and
# getindex with ranges. A wrapper made by hand around a Tensor that requires
# grad is refused in a broadcast, with what to use instead.

const _TensorIndex = Union{Int,AbstractRange{Int},Colon}

function Base.reshape(t::Tensor, dims::Tuple{Vararg{Union{Int,Colon}}})
    count(d -> d isa Colon, dims) == 1 || throw(DimensionMismatch("new dimensions $dims may have at most one omitted dimension specified by Colon()"))
    known = foldl(*, (d for d in dims if d isa Int); init = 1)
    (known == 0 || length(t) % known != 0) &&
        throw(DimensionMismatch("array size $(length(t)) must be divisible by the product of the new dimensions $dims"))
    return reshape(t, map(d -> d isa Colon ? length(t) ÷ known : d, dims))
end
Base.reshape(t::Tensor, d1::Union{Int,Colon}, dims::Union{Int,Colon}...) = reshape(t, (d1, dims...))
Base.reshape(t::Tensor, d1::Int, dims::Int...) = reshape(t, (d1, dims...))
Base.reshape(t::Tensor{T,1}, ::Colon) where {T} = reshape(t, (length(t),))

@noinline _view_index_error(i) = throw(ArgumentError(
    "a Tensor view takes Int, Colon and ranges with a positive step (torch slices); " *
    "got a $(typeof(i)): index a copy with Array(t)[...] or select with CTorch.ops.aten.index_select"))

# torch's view of t at Julia indices I (one per dimension); Ints drop their
# dimension, as for view/getindex of Julia arrays.
function _torch_slice(t::Tensor{T,N}, I::NTuple{N,_TensorIndex}) where {T,N}
    checkbounds(t, I...)
    r = t
    d = 0                                  # torch dimension of I[k] in r
    for k in 1:N
        i = I[k]
        if i isa Int
            r = ops.aten.select(r, d, i - 1)
            continue
        elseif i isa Colon || (first(i) == 1 && length(i) == size(t, k) && step(i) == 1)
        elseif step(i) > 0 || length(i) <= 1
            isempty(i) ? (r = ops.aten.slice(r, d, 0, 0, 1)) :
                (r = ops.aten.slice(r, d, first(i) - 1, last(i), max(step(i), 1)))
        else
            _view_index_error(i)
        end
        d += 1
    end
    return r === t ? ops.aten.alias(t)::Tensor : r::Tensor
end

Base.view(t::Tensor{T,N}, I::Vararg{_TensorIndex,N}) where {T,N} = _torch_slice(t, I)
function Base.view(t::Tensor, I...)
    length(I) == 1 && I[1] isa Colon && return vec(t)      # linear: the column-major vector
    bad = findfirst(i -> !(i isa _TensorIndex), I)
    bad === nothing && throw(ArgumentError("a Tensor view takes one index per dimension ($(ndims(t))), got $(length(I))"))
    _view_index_error(I[bad])
end

# t[ranges...]: a copy, as for arrays, that autograd records (slice + clone).
Base.getindex(t::Tensor{T,N}, I::Vararg{_TensorIndex,N}) where {T,N} =
    ops.aten.clone(_torch_slice(t, I))
# Other indices (vectors, masks, linear ranges): Julia's copy, element by
# element, which autograd cannot record: refused for a tensor that requires grad.
function Base.getindex(t::Tensor, I...)
    all(i -> i isa Integer, I) || !requires_grad(t) ||
        throw(ArgumentError("t[$(join(map(i -> typeof(i), I), ", "))] copies element by element, without " *
                            "the gradient of a Tensor that requires grad; index with Int, Colon and ranges " *
                            "(one per dimension) or use CTorch.ops.aten.index_select"))
    return invoke(getindex, Tuple{AbstractArray,Vararg{Any}}, t, I...)
end

Base.PermutedDimsArray(t::Tensor{T,N}, perm) where {T,N} =
    ops.aten.permute(t, Int64[p - 1 for p in _check_perm(perm, N)])
function Base.permutedims(t::Tensor{T,N}, perm) where {T,N}
    p = PermutedDimsArray(t, perm)
    return is_contiguous(p) ? ops.aten.clone(p) : ops.aten.contiguous(p)   # a copy, as for arrays
end
Base.permutedims(t::Tensor{T,2}) where {T} = permutedims(t, (2, 1))
function _check_perm(perm, N)
    p = Tuple(perm)
    (length(p) == N && isperm(p)) || throw(ArgumentError("no valid permutation of dimensions"))
    return p
end

function Base.reverse(t::Tensor{T,N}; dims = :) where {T,N}
    ds = dims isa Colon ? (1:N) : dims isa Integer ? (dims,) : dims
    return ops.aten.flip(t, Int64[d - 1 for d in ds])
end

# ---- wrappers made by hand -----------------------------------------------------------

_wrapped_tensor(A::Tensor) = A
_wrapped_tensor(A::AbstractArray) = (p = parent(A); p === A ? nothing : _wrapped_tensor(p))
_wrapped_tensor(x) = nothing

const _TensorWrapper = Union{SubArray{<:Any,<:Any,<:Tensor},Base.ReshapedArray{<:Any,<:Any,<:Tensor},
                             PermutedDimsArray{<:Any,<:Any,<:Any,<:Any,<:Tensor}}
Base.BroadcastStyle(::Type{<:_TensorWrapper}) = TensorStyle()

@noinline _wrapper_grad_error(A) = throw(ArgumentError(
    "a $(nameof(typeof(A))) of a Tensor that requires grad would be copied without its gradient; " *
    "use reshape/view/PermutedDimsArray/permutedims on the Tensor itself (they return Tensors)"))
function _check_wrapper_grad(A::AbstractArray)
    t = _wrapped_tensor(A)
    t === nothing || !requires_grad(t) || _wrapper_grad_error(A)
    return nothing
end
