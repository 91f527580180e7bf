# Broadcasting over tensors (`t .+ v`, `t .* t`, `exp.(t)`, `t .= x`): Julia's
# rules, computed by torch ops.
#
# Julia's broadcasting aligns dimensions from the first (a length-2 vector
# against a 2×3 matrix is a column), torch's from the last. Every tensor
# operand is given trailing singleton dimensions up to the result's rank (a
# view), after which both agree; shapes are checked by Julia first
# (DimensionMismatch). Each call in the fused expression is one torch op on
# whole tensors, in Julia's result element type (Float32 .* 2.5 is Float64, as
# for arrays). Julia arrays in the expression are copied to tensors; numbers
# are passed as scalars. Functions with no torch op here (closures, ...) run
# element by element over the CPU tensors' memory instead.

using Base.Broadcast: Broadcasted

# A Tensor argument makes the result a Tensor.
struct TensorStyle <: Broadcast.AbstractArrayStyle{Any} end
TensorStyle(::Val) = TensorStyle()
Base.BroadcastStyle(::Type{<:Tensor}) = TensorStyle()
Base.BroadcastStyle(::TensorStyle, ::Broadcast.DefaultArrayStyle) = TensorStyle()

function Base.similar(bc::Broadcasted{TensorStyle}, ::Type{S}) where {S}
    S <: TorchElType || return similar(Array{S}, axes(bc))
    return empty(S, map(length, axes(bc)))
end

# ---- the functions torch computes --------------------------------------------------

# f => torch op of one tensor; `true`: the input is converted to the result's
# element type first (arithmetic), `false`: taken as it is (predicates).
const _BC_UNARY = IdDict{Any,Tuple{Union{LazyOp,Nothing},Bool}}(
    (-) => (LazyOp("aten::neg.default"), true),
    (+) => (nothing, true), identity => (nothing, true), float => (nothing, true),
    abs => (LazyOp("aten::abs.default"), true),
    abs2 => (LazyOp("aten::square.default"), true),
    inv => (LazyOp("aten::reciprocal.default"), true),
    exp => (LazyOp("aten::exp.default"), true),
    exp2 => (LazyOp("aten::exp2.default"), true),
    expm1 => (LazyOp("aten::expm1.default"), true),
    log => (LazyOp("aten::log.default"), true),
    log2 => (LazyOp("aten::log2.default"), true),
    log10 => (LazyOp("aten::log10.default"), true),
    log1p => (LazyOp("aten::log1p.default"), true),
    sqrt => (LazyOp("aten::sqrt.default"), true),
    sin => (LazyOp("aten::sin.default"), true),
    cos => (LazyOp("aten::cos.default"), true),
    tan => (LazyOp("aten::tan.default"), true),
    asin => (LazyOp("aten::asin.default"), true),
    acos => (LazyOp("aten::acos.default"), true),
    atan => (LazyOp("aten::atan.default"), true),
    sinh => (LazyOp("aten::sinh.default"), true),
    cosh => (LazyOp("aten::cosh.default"), true),
    tanh => (LazyOp("aten::tanh.default"), true),
    floor => (LazyOp("aten::floor.default"), true),
    ceil => (LazyOp("aten::ceil.default"), true),
    round => (LazyOp("aten::round.default"), true),
    trunc => (LazyOp("aten::trunc.default"), true),
    isnan => (LazyOp("aten::isnan.default"), false),
    isinf => (LazyOp("aten::isinf.default"), false),
    isfinite => (LazyOp("aten::isfinite.default"), false),
    (!) => (LazyOp("aten::logical_not.default"), false))

# Rounding a float; for integers these are the identity in Julia.
const _BC_ROUNDING = (floor, ceil, round, trunc)

# f => (op on two tensors, op on tensor and number or nothing, f with its
# arguments swapped or nothing, convert inputs to the result's element type).
const _BC_BINARY = IdDict{Any,Tuple{LazyOp,Union{LazyOp,Nothing},Any,Bool}}(
    (+) => (_ADD_T, _ADD_S, +, true),
    (-) => (_SUB_T, _SUB_S, nothing, true),
    (*) => (_MUL_T, _MUL_S, *, true),
    (/) => (_DIV_T, _DIV_S, nothing, true),
    (^) => (_POW_TT, _POW_TS, nothing, true),
    rem => (LazyOp("aten::fmod.Tensor"), LazyOp("aten::fmod.Scalar"), nothing, true),
    max => (LazyOp("aten::maximum.default"), LazyOp("aten::clamp_min.default"), max, true),
    min => (LazyOp("aten::minimum.default"), LazyOp("aten::clamp_max.default"), min, true),
    (==) => (LazyOp("aten::eq.Tensor"), LazyOp("aten::eq.Scalar"), (==), false),
    (!=) => (LazyOp("aten::ne.Tensor"), LazyOp("aten::ne.Scalar"), (!=), false),
    (<) => (LazyOp("aten::lt.Tensor"), LazyOp("aten::lt.Scalar"), (>), false),
    (<=) => (LazyOp("aten::le.Tensor"), LazyOp("aten::le.Scalar"), (>=), false),
    (>) => (LazyOp("aten::gt.Tensor"), LazyOp("aten::gt.Scalar"), (<), false),
    (>=) => (LazyOp("aten::ge.Tensor"), LazyOp("aten::ge.Scalar"), (<=), false),
    (&) => (LazyOp("aten::bitwise_and.Tensor"), LazyOp("aten::bitwise_and.Scalar"), (&), true),
    (|) => (LazyOp("aten::bitwise_or.Tensor"), LazyOp("aten::bitwise_or.Scalar"), (|), true),
    xor => (LazyOp("aten::bitwise_xor.Tensor"), LazyOp("aten::bitwise_xor.Scalar"), xor, true))

# ---- can torch compute it? -------------------------------------------------------------

_bc_leaf_ok(::Tensor) = true
_bc_leaf_ok(A::AbstractArray) = eltype(A) <: TorchElType && isconcretetype(eltype(A))
_bc_leaf_ok(x::Real) = x isa TorchElType
_bc_leaf_ok(::AbstractIrrational) = true
_bc_leaf_ok(r::Base.RefValue) = _bc_leaf_ok(r[]) && !(r[] isa AbstractArray)
_bc_leaf_ok(x) = false
_bc_leaf_ok(bc::Broadcasted) = _bc_ok(bc)

_is_literal_pow(bc::Broadcasted) = bc.f === Base.literal_pow && length(bc.args) == 3 &&
    bc.args[1] isa Base.RefValue{typeof(^)} && bc.args[3] isa Base.RefValue{<:Val}

function _bc_ok(bc::Broadcasted)
    S = Broadcast.combine_eltypes(bc.f, bc.args)
    (isconcretetype(S) && S <: TorchElType) || return false
    if _is_literal_pow(bc)
        p = typeof(bc.args[3][]).parameters[1]
        return p isa Real && _bc_leaf_ok(bc.args[2])
    end
    n = length(bc.args)
    if n == 1
        haskey(_BC_UNARY, bc.f) || return false
    elseif n == 2
        haskey(_BC_BINARY, bc.f) || return false
    else
        return false
    end
    return all(_bc_leaf_ok, bc.args)
end

# ---- computing it ------------------------------------------------------------------------

# A tensor operand with trailing singleton dimensions up to rank N (a view),
# so that torch's broadcasting (aligned from the last dimension) is Julia's.
function _bc_pad(t::Tensor{T,M}, N::Int) where {T,M}
    M >= N && return t
    return ops.aten.reshape(t, Int64[size(t)..., ntuple(_ -> 1, N - M)...])::Tensor
end

_bc_eval(t::Tensor, N, dev) = _bc_pad(t, N)
_bc_eval(A::AbstractArray, N, dev) =
    (_check_wrapper_grad(A); _bc_pad(dev === nothing ? tensor(A) : tensor(A; device = dev), N))
_bc_eval(x::Real, N, dev) = x
_bc_eval(x::AbstractIrrational, N, dev) = Float64(x)
_bc_eval(r::Base.RefValue, N, dev) = _bc_eval(r[], N, dev)

_cast(x::Tensor, ::Type{S}) where {S} = _with_eltype(x, S)
_cast(x, ::Type{S}) where {S} = x
_scalar_tensor(x::Real, like::Tensor) = tensor(x; device = device(like))

function _bc_eval(bc::Broadcasted, N, dev)
    S = Broadcast.combine_eltypes(bc.f, bc.args)
    if _is_literal_pow(bc)
        x = _bc_eval(bc.args[2], N, dev)
        p = typeof(bc.args[3][]).parameters[1]
        x isa Tensor || return Base.literal_pow(^, x, Val(p))
        return _bc_result(_t(_POW_TS, _cast(x, S), p), S)
    end
    args = map(a -> _bc_eval(a, N, dev), bc.args)
    if length(args) == 1
        x = args[1]
        x isa Tensor || return bc.f(x)
        op, convert_input = _BC_UNARY[bc.f]
        if bc.f in _BC_ROUNDING && !(eltype(x) <: AbstractFloat)
            op = nothing                      # Julia: the identity on integers
        end
        xc = convert_input ? _cast(x, S) : x
        op === nothing && return xc === x ? clone(x) : xc
        return _bc_result(_t(op, xc), S)
    end
    a, b = args
    (a isa Tensor || b isa Tensor) || return bc.f(a, b)
    tt, ts, swapped, convert_inputs = _BC_BINARY[bc.f]
    if convert_inputs
        a, b = _cast(a, S), _cast(b, S)
    end
    a isa Tensor && b isa Tensor && return _bc_result(_t(tt, a, b), S)
    if a isa Tensor                           # tensor, number
        ts === nothing && return _bc_result(_t(tt, a, _scalar_tensor(b, a)), S)
        return _bc_result(_t(ts, a, b), S)
    end
    if swapped !== nothing                    # number, tensor
        tt, ts = _BC_BINARY[swapped]
        ts !== nothing && return _bc_result(_t(ts, b, a), S)
    end
    return _bc_result(_t(tt, _scalar_tensor(a, b), b), S)
end

# torch's result in Julia's element type.
_bc_result(r::Tensor, ::Type{S}) where {S} = _with_eltype(r, S)

# The device of the first tensor operand (Julia arrays are copied there).
_bc_device(bc::Broadcasted) = (for a in bc.args; d = _bc_device(a); d === nothing || return d; end; nothing)
_bc_device(t::Tensor) = device(t)
_bc_device(x) = nothing

# The whole expression as torch ops: a new Tensor (never one of the operands).
function _bc_compute(bc::Broadcasted)
    N = length(axes(bc))
    r = _bc_eval(bc, N, _bc_device(bc))
    return r
end

function Base.copy(bc::Broadcasted{TensorStyle})
    _bc_ok(bc) && return _bc_compute(bc)
    # A function without a torch op: element by element (CPU tensors).
    return invoke(copy, Tuple{Broadcasted}, bc)
end

# ---- element by element (functions torch does not have here) -----------------------

# The same broadcast over the tensors' zero-copy views (callers keep the
# tensors alive: they are referenced by `bc`).
_over_views(bc::Broadcasted{S}) where {S} =
    Broadcasted{S}(bc.f, map(_over_views, bc.args), bc.axes)
_over_views(t::Tensor) = torch_view(t)
_over_views(x) = x

_copyto_loop!(dest::Tensor, bc::Broadcasted{Nothing}) =
    (GC.@preserve dest bc copyto!(torch_view(dest), _over_views(bc)); dest)
_copyto_loop!(dest::AbstractArray, bc::Broadcasted{Nothing}) =
    (GC.@preserve dest bc copyto!(_over_views(dest), _over_views(bc)); dest)

# ---- into an existing array (`t .= ...`, `t .*= 2`, `A .= t .+ 1`) ---------------------

# The result is computed first, then copied in (torch's copy_: any overlap
# between the destination and the operands is safe, as in Julia).
function Base.copyto!(dest::Tensor, bc::Broadcasted{TensorStyle})
    if _bc_ok(bc)
        r = _bc_compute(bc)
        r isa Tensor ? copyto!(dest, _bc_pad(r, ndims(dest))) : fill!(dest, r)
        return dest
    end
    return _copyto_loop!(dest, convert(Broadcasted{Nothing}, bc))
end
Base.copyto!(dest::Tensor, bc::Broadcasted{Nothing}) = _copyto_loop!(dest, bc)
function Base.copyto!(dest::AbstractArray, bc::Broadcasted{TensorStyle})
    if _bc_ok(bc)
        r = _bc_compute(bc)
        r isa Tensor ? broadcast!(identity, dest, Array(r)) : fill!(dest, r)
        return dest
    end
    return _copyto_loop!(dest, convert(Broadcasted{Nothing}, bc))
end
