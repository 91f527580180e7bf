# Every torch operator by name, and Julia operators on Tensor.

"""
    CTorch.Op

A resolved torch operator (a `ct_op*`): one overload (`"aten::add.Tensor"`) or
a whole overload set (`"aten::add"`, resolved against the arguments at each
call). Call it like a function: `op(args...; kwargs...)`. Arguments are
converted as in module calls (tensors are passed by reference, no copy);
the result is `nothing`, one Julia value, or a tuple.

Handles are cached for the life of the process and are safe to use from any
number of threads. Get one with [`CTorch.op`](@ref) or `CTorch.ops.ns.name`.
"""
struct Op
    ptr::Ptr{Cvoid}
    name::String
    # Bit n set: n positional tensors and no keywords bind this single
    # overload, which returns one Tensor (ct_op_call_tensors path).
    tensor_mask::UInt32
end

const _OP_CACHE = Dict{String,Op}()
const _OP_CACHE_NS = Dict{Tuple{Symbol,Symbol},Op}()
const _OP_LOCK = ReentrantLock()

function _split_op_name(q::AbstractString)
    i = findfirst("::", q)
    i === nothing && throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "operator name \"$q\" is not qualified (use \"aten::add\")"))
    rest = q[last(i)+1:end]
    j = findfirst(isequal('.'), rest)
    j === nothing && return (String(q), nothing)
    ov = String(rest[j+1:end])
    return (String(q[1:last(i)] * rest[1:j-1]), ov == "default" ? "" : ov)
end

"""
    CTorch.op(qualified_name) -> Op

Looks up (once; cached) an operator such as `"aten::add.Tensor"` (one
overload; `"aten::neg.default"` is the unnamed one), `"aten::add"` (the
overload set) or a custom op `"myns::scale"`. Calls with tensors only and no
keywords to a single overload that returns one Tensor use
`ct_op_call_tensors` (no value wrapping); the choice is made here, once.
Throws `CTorchError` (`CT_ERR_NOT_FOUND`) for unknown names.
"""
function op(q::AbstractString)
    q = String(q)
    lock(_OP_LOCK) do
        get!(_OP_CACHE, q) do
            name, overload = _split_op_name(q)
            out = Ref{Ptr{Cvoid}}(C_NULL)
            check(ct_op_find(out, name, overload === nothing ? Cstring(C_NULL) : overload))
            Op(out[], q, _tensor_mask(out[]))
        end
    end
end

function Base.show(io::IO, o::Op)
    print(io, "CTorch.Op(\"", o.name, "\")")
end
function Base.show(io::IO, ::MIME"text/plain", o::Op)
    print(io, "CTorch.Op(\"", o.name, "\")")
    for s in schemas(o)
        print(io, "\n  ", s)
    end
end

"The schema strings of an op's overloads."
function schemas(o::Op)
    n = Int(ct_op_num_overloads(o.ptr))
    out = String[]
    for i in 0:n-1
        s = Ref{Ptr{UInt8}}(C_NULL)
        check(ct_op_schema(s, o.ptr, i))
        push!(out, unsafe_string(s[]))
    end
    return out
end

# --- which calls may take the tensors-only path -------------------------------------

const _MAX_TENSOR_ARGS = 8

# Decided once per op (at lookup): bit n is set when n tensor arguments bind
# the op through ct_op_call_tensors (libctorch's ct_op_tensors_only says so)
# and it returns exactly one result. Only for single-overload handles:
# libctorch resolves an overload set in its general binder either way, and
# ct_op_call_tensors measured slower than ct_op_call there
# (bench/bench_julia.jl, "ops.aten.add(a, b)").
function _tensor_mask(p::Ptr{Cvoid})
    ct_op_num_overloads(p) == 1 || return UInt32(0)
    nr = Ref{Csize_t}(0)
    check(ct_op_num_returns(nr, p, 0))
    nr[] == 1 || return UInt32(0)
    mask = UInt32(0)
    ok = Ref{Int32}(0)
    for n in 1:_MAX_TENSOR_ARGS
        check(ct_op_tensors_only(ok, p, n))
        ok[] == 1 && (mask |= UInt32(1) << n)
    end
    return mask
end

# --- calling ---------------------------------------------------------------------

# Tensors in, one tensor out (ct_op_call_tensors): no ct_value per argument or
# for the result. The handles live in a stack tuple.
@inline function _call_tensors1(p::Ptr{Cvoid}, args::NTuple{N,Tensor}) where {N}
    r = Ref(map(t -> Base.unsafe_convert(P, t), args))
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve args r ct_op_call_tensors(out, 1, p, Base.unsafe_convert(Ptr{P}, r), N)
    st == CT_OK || _throw_last_error(st)
    _check_warnings()
    return _tensor_like(out[], args[1])
end

const _FastArg = Union{Tensor,Real}

# The lean path: tensors and numbers only, no keywords. The argument values
# live in a stack tuple and are freed after the call.
@inline function _call_raw(p::Ptr{Cvoid}, args::Tuple{Vararg{_FastArg,N}}) where {N}
    vals = map(_new_value, args)
    r = Ref(vals)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = GC.@preserve r ct_op_call(out, p, N == 0 ? Ptr{P}(C_NULL) : Base.unsafe_convert(Ptr{P}, r), N,
                                   Ptr{Ptr{UInt8}}(C_NULL), Ptr{P}(C_NULL), 0)
    foreach(ct_value_free, vals)
    st == CT_OK || _throw_last_error(st)
    _check_warnings()
    return out[]
end

_call_generic(p::Ptr{Cvoid}, args::Tuple, kw) =
    _call_with_values((out, a...) -> ct_op_call(out, p, a...), args, kw)

@inline function (o::Op)(args...; kw...)
    if isempty(kw) && args isa Tuple{Tensor,Vararg{Tensor}} &&
       (o.tensor_mask >> length(args)) & 1 != 0
        return _call_tensors1(o.ptr, args)
    elseif isempty(kw) && args isa Tuple{Vararg{_FastArg}}
        return from_value(_call_raw(o.ptr, args))
    else
        return from_value(_call_generic(o.ptr, args, kw))
    end
end

# Result known to be one tensor (Julia operators): skips the generic conversion.
@inline function _as_tensor(v::Ptr{Cvoid})
    x = from_value(v)
    x isa Tensor || throw(CTorchError(CT_ERR_TYPE, "expected a tensor result, got $(typeof(x))"))
    return x
end

"""
    CTorch.call_tensor(op, args...)

Like `op(args...)` for tensor/number arguments, with the result asserted to be
one `Tensor` (type-stable; the fastest way to call an op from Julia, fastest
with a single overload such as `"aten::add.Tensor"` and tensor arguments).
"""
@inline call_tensor(o::Op, args::_FastArg...) = _as_tensor(_call_raw(o.ptr, args))
@inline function call_tensor(o::Op, a::Tensor, args::Tensor...)
    (o.tensor_mask >> (1 + length(args))) & 1 != 0 && return _call_tensors1(o.ptr, (a, args...))
    return _as_tensor(_call_raw(o.ptr, (a, args...)))
end

# --- ops.<namespace>.<name> ---------------------------------------------------------

struct OpsRoot end
struct OpNamespace
    name::Symbol
end

"""
    CTorch.ops

Every registered operator by name, as in PyTorch's `torch.ops`:
`CTorch.ops.aten.add(a, b; alpha=2)`, `CTorch.ops.aten.var"add.Tensor"(a, b)`,
`CTorch.ops.myns.scale(x, 2.0)`. `ops.aten.add` is an [`Op`](@ref) (cached).
"""
const ops = OpsRoot()

Base.getproperty(::OpsRoot, ns::Symbol) = OpNamespace(ns)
function Base.getproperty(ns::OpNamespace, name::Symbol)
    nsname = getfield(ns, :name)
    key = (nsname, name)
    o = lock(_OP_LOCK) do
        get(_OP_CACHE_NS, key, nothing)
    end
    o === nothing || return o
    o = op(string(nsname, "::", name))
    lock(_OP_LOCK) do
        _OP_CACHE_NS[key] = o
    end
    return o
end
Base.show(io::IO, ::OpsRoot) = print(io, "CTorch.ops")
Base.show(io::IO, ns::OpNamespace) = print(io, "CTorch.ops.", getfield(ns, :name))

"""
    CTorch.list_ops() -> Vector{String}

Every registered operator as "ns::name" or "ns::name.overload".
"""
list_ops() = from_value(@_newvalue ct_op_list(out))

# --- Julia operators on Tensor: Julia's array semantics --------------------------------
#
# As for `Array` (bindings/julia/README.md, "Operators"): `+`/`-` need equal
# shapes, `*` is the matrix product (and scaling by a number), `^` the matrix
# power, reductions without `dims` give numbers, `==` compares whole tensors.
# Elementwise work is the `.`-forms (broadcasting, arrays.jl). Result element
# types follow Julia's promotion (a Float32 tensor times 2.5 is Float64, as for
# an Array). Everything runs as torch ops and records autograd.

# Resolved on first use (after __init__ loaded the library). Single overloads
# (".default" for the unnamed one): no overload resolution per call, and
# all-tensor calls take ct_op_call_tensors.
mutable struct LazyOp
    name::String
    op::Op   # ptr C_NULL until first use
end
LazyOp(name::String) = LazyOp(name, Op(C_NULL, name, UInt32(0)))
@inline function _op(l::LazyOp)
    o = l.op
    o.ptr == C_NULL || return o
    return (l.op = op(l.name))
end
@inline _t(l::LazyOp, args::_FastArg...) = call_tensor(_op(l), args...)

const _ADD_T = LazyOp("aten::add.Tensor")
const _ADD_S = LazyOp("aten::add.Scalar")
const _SUB_T = LazyOp("aten::sub.Tensor")
const _SUB_S = LazyOp("aten::sub.Scalar")
const _MUL_T = LazyOp("aten::mul.Tensor")
const _MUL_S = LazyOp("aten::mul.Scalar")
const _DIV_T = LazyOp("aten::div.Tensor")
const _DIV_S = LazyOp("aten::div.Scalar")
const _NEG = LazyOp("aten::neg.default")
const _POW_TT = LazyOp("aten::pow.Tensor_Tensor")
const _POW_TS = LazyOp("aten::pow.Tensor_Scalar")
const _MATMUL = LazyOp("aten::matmul.default")
const _MM = LazyOp("aten::mm.default")
const _MV = LazyOp("aten::mv.default")
const _MATRIX_POWER = LazyOp("aten::matrix_power.default")
const _T = LazyOp("aten::t.default")
const _SUM = LazyOp("aten::sum.default")
const _MEAN = LazyOp("aten::mean.default")
const _PROD = LazyOp("aten::prod.default")
const _MAX = LazyOp("aten::max.default")
const _MIN = LazyOp("aten::min.default")

# `t` with element type S (Julia's promotion result); `t` itself when it has it.
@inline _with_eltype(t::Tensor{T}, ::Type{S}) where {T,S} = T === S ? t : to(t, S)

@noinline _shape_error(a, b) = throw(DimensionMismatch(
    "dimensions must match: a has dims $(axes(a)), b has dims $(axes(b)) (use .+ / .- to broadcast)"))

# The result type of f on these element types: Base.promote_op (not public
# API), or f on ones where a Julia lacks it.
_promote_op_fallback(f::F, ::Type{A}) where {F,A} = typeof(f(one(A)))
_promote_op_fallback(f::F, ::Type{A}, ::Type{B}) where {F,A,B} = typeof(f(one(A), one(B)))
@static if isdefined(Base, :promote_op)
    _promote_op(f::F, ::Type{A}) where {F,A} = Base.promote_op(f, A)
    _promote_op(f::F, ::Type{A}, ::Type{B}) where {F,A,B} = Base.promote_op(f, A, B)
else
    _promote_op(f::F, ::Type{A}) where {F,A} = _promote_op_fallback(f, A)
    _promote_op(f::F, ::Type{A}, ::Type{B}) where {F,A,B} = _promote_op_fallback(f, A, B)
end

# `+` and `-` as for Julia arrays: equal shapes (Julia's promote_shape, which
# also accepts trailing singleton dimensions, then broadcasting).
for (f, op) in ((:+, :_ADD_T), (:-, :_SUB_T))
    @eval function Base.$f(a::Tensor{A,N}, b::Tensor{B,N}) where {A,B,N}
        size(a) == size(b) || _shape_error(a, b)
        S = _promote_op($f, A, B)
        return _t($op, _with_eltype(a, S), _with_eltype(b, S))
    end
    @eval function Base.$f(a::Tensor, b::Tensor)
        Base.promote_shape(axes(a), axes(b))       # DimensionMismatch as for arrays
        return broadcast($f, a, b)
    end
end
Base.:-(a::Tensor{T}) where {T} = _t(_NEG, _with_eltype(a, _promote_op(-, T)))
Base.:+(a::Tensor) = a

# Scaling by a number (as `Array * Number`), with Julia's element type.
for (f, op) in ((:*, :_MUL_S), (:/, :_DIV_S))
    @eval Base.$f(a::Tensor{T}, b::Real) where {T} = _t($op, _with_eltype(a, _promote_op($f, T, typeof(b))), b)
end
Base.:*(a::Real, b::Tensor{T}) where {T} = _t(_MUL_S, _with_eltype(b, _promote_op(*, typeof(a), T)), a)
Base.:\(a::Real, b::Tensor) = b / a

# The matrix product, as for Julia's matrices and vectors (`Array(a) * Array(b)`).
_prod_eltype(::Type{A}, ::Type{B}) where {A,B} = typeof(zero(A) * zero(B) + zero(A) * zero(B))
@noinline _matmul_error(a, b) = throw(DimensionMismatch(
    "matrix A has dimensions $(size(a)), matrix B has dimensions $(size(b))"))
function Base.:*(a::Tensor{A,2}, b::Tensor{B,2}) where {A,B}
    size(a, 2) == size(b, 1) || _matmul_error(a, b)
    S = _prod_eltype(A, B)
    return _t(_MM, _with_eltype(a, S), _with_eltype(b, S))
end
function Base.:*(a::Tensor{A,2}, b::Tensor{B,1}) where {A,B}
    size(a, 2) == size(b, 1) || _matmul_error(a, b)
    S = _prod_eltype(A, B)
    return _t(_MV, _with_eltype(a, S), _with_eltype(b, S))
end
# A vector is an n×1 matrix (Julia: vector * 1×m matrix = n×m).
Base.:*(a::Tensor{A,1}, b::Tensor{B,2}) where {A,B} = reshape(a, (length(a), 1)) * b

"""
    a^n

The matrix power of a square matrix (`torch.linalg.matrix_power`), as `A^n`
for a Julia matrix; elementwise powers are `a .^ n`.
"""
function Base.:^(a::Tensor{T,2}, n::Integer) where {T}
    size(a, 1) == size(a, 2) || throw(DimensionMismatch("matrix is not square: dimensions are $(size(a))"))
    return call_tensor(_op(_MATRIX_POWER), a, Int(n))
end

# Transposes are torch views (`t.t()`), so `t'` is a Tensor sharing memory.
Base.adjoint(t::Tensor{<:Real,2}) = _t(_T, t)
Base.transpose(t::Tensor{<:Real,2}) = _t(_T, t)
Base.adjoint(t::Tensor{<:Real,1}) = reshape(t, (1, length(t)))
Base.transpose(t::Tensor{<:Real,1}) = reshape(t, (1, length(t)))

"""
    matmul(a, b)

`torch.matmul` (matrix product with torch's broadcasting rules over batch
dimensions). For matrices and vectors it equals `a * b` (Julia's `*`).
"""
matmul(a::Tensor, b::Tensor) = _t(_MATMUL, a, b)

# Julia's 1-based `dims` (an Int, a tuple or a range) as torch's 0-based dims.
function _torch_dims(t::Tensor, dims)
    n = ndims(t)
    ds = dims isa Integer ? (dims,) : dims
    return Int64[(1 <= d <= n ? d - 1 : throw(ArgumentError("dims: dimension $d out of range 1:$n"))) for d in ds]
end

@noinline _empty_reduction(f) = throw(ArgumentError("reducing over an empty collection is not allowed ($f of an empty Tensor)"))

# The number a 0-dim result holds, freeing the result at once.
function _number(r::Tensor)
    x = item(r)
    free!(r)
    return x
end

"""
    sum(t::Tensor; dims=:)
    prod(t; dims=:), maximum(t; dims=:), minimum(t; dims=:), CTorch.mean(t; dims=:)

As for Julia arrays: without `dims`, a number (`torch.sum(t).item()`); with
`dims` (1-based, an Int, a tuple or a range) a Tensor keeping those
dimensions with size 1. The element type is Julia's (torch's agree: integer
sums and products are Int64). For a tensor to differentiate (a loss), use the
op: `ops.aten.sum(t)`.
"""
function Base.sum(t::Tensor; dims = :)
    dims === Colon() && return _number(_t(_SUM, t))
    return ops.aten.var"sum.dim_IntList"(t, _torch_dims(t, dims); keepdim = true)::Tensor
end
function Base.prod(t::Tensor; dims = :)
    dims === Colon() && return _number(_t(_PROD, t))
    r = t
    for d in _torch_dims(t, dims)   # torch's prod takes one dim at a time
        r = ops.aten.var"prod.dim_int"(r, d; keepdim = true)::Tensor
    end
    return r === t ? clone(t) : r
end
for (f, all1, dimop) in ((:maximum, :_MAX, "amax"), (:minimum, :_MIN, "amin"))
    @eval function Base.$f(t::Tensor; dims = :)
        if dims === Colon()
            length(t) == 0 && _empty_reduction($(string(f)))
            return _number(_t($all1, t))
        end
        return op($("aten::" * dimop * ".default"))(t, _torch_dims(t, dims); keepdim = true)::Tensor
    end
end
"`CTorch.mean(t; dims=:)`: like `sum`, the mean (a number, or a Tensor keeping `dims`)."
function mean(t::Tensor{T}; dims = :) where {T}
    t = _with_eltype(t, typeof(zero(T) / 1))     # integers: Float64, as Julia's mean
    dims === Colon() && return _number(_t(_MEAN, t))
    return ops.aten.var"mean.dim"(t, _torch_dims(t, dims); keepdim = true)::Tensor
end
