# Julia values <-> ct_value (TorchScript IValue).
#
#   nothing            <-> None
#   Bool               <-> bool
#   Integer            <-> int (Int64)
#   AbstractFloat      <-> float (Float64)
#   AbstractString, Symbol  -> str  -> String
#   Tensor             <-> Tensor (same tensor, no copy)
#   Device             <-> Device
#   Tuple              <-> Tuple
#   Vector{Bool}/{<:Integer}/{<:AbstractFloat}/{Tensor} <-> bool[]/int[]/float[]/Tensor[]
#   other AbstractVector <-> List (generic)
#   AbstractDict       <-> Dict (keys all strings, all ints or all tensors)
#   modules (objects)   -> ScriptModule
#   anything else       -> CTorch.Value (an opaque handle; passes back unchanged)

"""
    CTorch.Value

An opaque TorchScript value with no Julia equivalent (a complex number, a
generator, a non-module object, ...). It can be passed back to ctorch calls
unchanged; `repr` shows TorchScript's form, `CTorch.type_str(v)` its type.
"""
Value

function Base.show(io::IO, v::Value)
    out = Ref{Ptr{UInt8}}(C_NULL)
    check(ct_value_to_repr(out, v))
    print(io, "CTorch.Value(", _take_string(out[]), ")")
end
function type_str(v::Value)
    out = Ref{Ptr{UInt8}}(C_NULL)
    check(ct_value_type_str(out, v))
    return _take_string(out[])
end

macro _newvalue(call)
    out = esc(:out)
    quote
        local $out = Ref{Ptr{Cvoid}}(C_NULL)
        check($(esc(call)))
        $out[]
    end
end

# ---- Julia -> new ct_value* (caller frees) ------------------------------------------

_new_value(::Nothing) = @_newvalue ct_value_none(out)
_new_value(x::Bool) = @_newvalue ct_value_from_bool(out, Int32(x))
_new_value(x::Integer) = @_newvalue ct_value_from_int(out, Int64(x))
_new_value(x::AbstractFloat) = @_newvalue ct_value_from_double(out, Float64(x))
_new_value(x::Irrational) = _new_value(Float64(x))
function _new_value(x::AbstractString)
    s = String(x)
    GC.@preserve s begin
        @_newvalue ct_value_from_string(out, pointer(s), sizeof(s))
    end
end
_new_value(x::Symbol) = _new_value(String(x))
_new_value(x::Device) = @_newvalue ct_value_from_device(out, x.type, x.index)
_new_value(x::Value) = @_newvalue ct_value_ref(out, x)
_new_value(x::ScriptModule) = @_newvalue ct_value_from_module(out, x)
# A Tensor is an AbstractArray: one method for both keeps dispatch unambiguous.
_new_value(x::AbstractArray) = x isa Tensor ? (@_newvalue ct_value_from_tensor(out, x)) : _new_list_value(x)
_new_list_value(x::AbstractVector{Bool}) = (v = Int32[b for b in x]; @_newvalue ct_value_bool_list(out, v, length(v)))
_new_list_value(x::AbstractVector{<:Integer}) = (v = Int64[i for i in x]; @_newvalue ct_value_int_list(out, v, length(v)))
_new_list_value(x::AbstractVector{<:AbstractFloat}) = (v = Float64[f for f in x]; @_newvalue ct_value_double_list(out, v, length(v)))
function _new_list_value(x::AbstractVector)
    if !isempty(x) && all(e -> e isa Tensor, x)
        ptrs = P[Base.unsafe_convert(P, t) for t in x]
        return GC.@preserve x @_newvalue ct_value_tensor_list(out, ptrs, length(ptrs))
    end
    _with_values(collect(Any, x)) do ptrs
        @_newvalue ct_value_list(out, ptrs, length(ptrs))
    end
end
_new_list_value(x::AbstractArray) = throw(CTorchError(CT_ERR_TYPE,
    "a $(typeof(x)) is not a TorchScript value; wrap it as a tensor with Tensor(A) (no copy) or CTorch.tensor(A)"))
_new_value(x::Tuple) = _with_values(collect(Any, x)) do ptrs
    @_newvalue ct_value_tuple(out, ptrs, length(ptrs))
end
function _new_value(x::AbstractDict)
    ks = collect(Any, keys(x))
    vs = Any[x[k] for k in ks]
    _with_values(ks) do kp
        _with_values(vs) do vp
            @_newvalue ct_value_dict(out, kp, vp, length(kp))
        end
    end
end
_new_value(x::Complex) = throw(CTorchError(CT_ERR_TYPE, "complex scalars cannot be passed as TorchScript values " *
                                                       "(the C API has no constructor); use a one-element tensor"))
_new_value(x) = throw(CTorchError(CT_ERR_TYPE, "cannot convert a $(typeof(x)) to a TorchScript value"))

# Calls f(ptrs::Vector{Ptr}) with borrowed ct_value* for every item of xs:
# values lend their handle, everything else is converted and freed after.
function _with_values(f, xs::AbstractVector)
    n = length(xs)
    ptrs = Vector{P}(undef, n)
    owned = falses(n)
    fill!(ptrs, C_NULL)
    try
        for i in 1:n
            x = xs[i]
            if x isa Value
                ptrs[i] = Base.unsafe_convert(P, x)
            else
                ptrs[i] = _new_value(x)
                owned[i] = true
            end
        end
        return GC.@preserve xs f(ptrs)
    finally
        for i in 1:n
            owned[i] && ct_value_free(ptrs[i])
        end
    end
end

# Same for keyword arguments: names as C strings (Symbols are interned, so
# their name pointers never move).
function _with_kwargs(f, kw)
    names = Ptr{UInt8}[Base.unsafe_convert(Ptr{UInt8}, k) for k in keys(kw)]
    _with_values(collect(Any, values(kw))) do vals
        f(names, vals)
    end
end

# Runs a C call with value arguments and keyword arguments, given as
# `cfn(out, args, nargs, kwnames, kwvalues, nkw)`; returns the ct_value* it made.
function _call_with_values(cfn, args::Tuple, kw)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _with_values(collect(Any, args)) do ap
        _with_kwargs(kw) do kn, kv
            check(cfn(out, ap, length(ap), kn, kv, length(kn)))
        end
    end
    return out[]
end

# ---- ct_value* -> Julia -----------------------------------------------------------------

"""
    CTorch.from_value(p::Ptr{Cvoid}; own=true)

Converts a ct_value* into a Julia value. With `own=true` the handle is consumed
(freed, or kept by the returned Tensor/Value).
"""
function from_value(v::Ptr{Cvoid}; own::Bool = true)
    v == C_NULL && return nothing
    tag = ct_value_tag(v)
    if tag == CT_VALUE_TENSOR
        try
            return _defined_tensor(@_newvalue ct_value_to_tensor(out, v))
        finally
            own && ct_value_free(v)
        end
    end
    if tag == CT_VALUE_OTHER || tag == CT_VALUE_OBJECT
        keep = own ? v : (@_newvalue ct_value_ref(out, v))
        tag == CT_VALUE_OBJECT && (m = _try_module(keep)) !== nothing && (ct_value_free(keep); return m)
        return Value(Val(:own), keep)
    end
    try
        return _from_value_plain(v, tag)
    finally
        own && ct_value_free(v)
    end
end

function _try_module(v::Ptr{Cvoid})
    out = Ref{Ptr{Cvoid}}(C_NULL)
    st = ct_value_to_module(out, v)
    st == CT_OK || (ct_clear_error(); return nothing)
    return ScriptModule(Val(:own), out[])
end

function _from_value_plain(v::Ptr{Cvoid}, tag::Int32)
    if tag == CT_VALUE_NONE
        return nothing
    elseif tag == CT_VALUE_BOOL
        r = Ref{Int32}(0); check(ct_value_to_bool(r, v)); return r[] != 0
    elseif tag == CT_VALUE_INT
        r = Ref{Int64}(0); check(ct_value_to_int(r, v)); return r[]
    elseif tag == CT_VALUE_DOUBLE
        r = Ref{Float64}(0); check(ct_value_to_double(r, v)); return r[]
    elseif tag == CT_VALUE_STRING
        s = Ref{Ptr{UInt8}}(C_NULL); n = Ref{Csize_t}(0)
        check(ct_value_as_string(s, n, v))
        return unsafe_string(s[], n[])
    elseif tag == CT_VALUE_DEVICE
        a = Ref{Int32}(0); b = Ref{Int32}(0)
        check(ct_value_to_device(a, b, v))
        return Device(a[], b[])
    elseif tag == CT_VALUE_TUPLE
        return Tuple(_items(v))
    elseif tag == CT_VALUE_INT_LIST
        return Int64[x for x in _items(v)]
    elseif tag == CT_VALUE_DOUBLE_LIST
        return Float64[x for x in _items(v)]
    elseif tag == CT_VALUE_BOOL_LIST
        return Bool[x for x in _items(v)]
    elseif tag == CT_VALUE_TENSOR_LIST
        items = _items(v)
        return all(x -> x isa Tensor, items) ? Tensor[x for x in items] : Union{Nothing,Tensor}[x for x in items]
    elseif tag == CT_VALUE_LIST
        items = _items(v)
        return isempty(items) ? items : [x for x in items]   # narrowest element type
    elseif tag == CT_VALUE_DICT
        ks, vs = _dict_items(v)
        isempty(ks) && return Dict{Any,Any}()
        K = mapreduce(typeof, typejoin, ks); V = mapreduce(typeof, typejoin, vs)
        return Dict{K,V}(zip(ks, vs))
    end
    throw(CTorchError(CT_ERR_INTERNAL, "unknown value tag $tag"))
end

# The keys and values of a dict value, in its (insertion) order.
function _dict_items(v::Ptr{Cvoid})
    n = Ref{Csize_t}(0)
    check(ct_value_length(n, v))
    ks = Vector{Any}(undef, n[]); vs = Vector{Any}(undef, n[])
    for i in 1:Int(n[])
        kp = Ref{Ptr{Cvoid}}(C_NULL); vp = Ref{Ptr{Cvoid}}(C_NULL)
        check(ct_value_dict_item(kp, vp, v, i - 1))
        ks[i] = from_value(kp[])
        vs[i] = from_value(vp[])
    end
    return ks, vs
end

function _items(v::Ptr{Cvoid})
    n = Ref{Csize_t}(0)
    check(ct_value_length(n, v))
    items = Vector{Any}(undef, n[])
    for i in 1:Int(n[])
        ip = @_newvalue ct_value_get(out, v, i - 1)
        items[i] = from_value(ip)
    end
    return items
end

"""
    CTorch.to_value(x) -> CTorch.Value

Converts a Julia value to an explicit TorchScript value handle (normally not
needed: every call converts its arguments).
"""
to_value(x) = Value(Val(:own), _new_value(x))

"""
    CTorch.pickle_load(path)

Loads a file written by Python's `torch.save` (tensors, state_dicts, lists,
tuples, dicts of tensors and scalars) and converts it to Julia values.
"""
pickle_load(path::AbstractString) = from_value(@_newvalue ct_pickle_load(out, path))

"""
    CTorch.pickle_save(x, path)

Writes `x` (converted to a TorchScript value) in `torch.save`'s format, readable
by Python's `torch.load`.
"""
function pickle_save(x, path::AbstractString)
    _with_values(Any[x]) do ptrs
        check(ct_pickle_save(ptrs[1], path))
    end
    return path
end

"`CTorch.pickle_load(data::Vector{UInt8})`: like `pickle_load(path)`, from bytes in memory."
function pickle_load(data::AbstractVector{UInt8})
    buf = Vector{UInt8}(data)
    GC.@preserve buf from_value(@_newvalue ct_pickle_load_buffer(out, pointer(buf), length(buf)))
end

"`CTorch.pickle_bytes(x) -> Vector{UInt8}`: `x` in `torch.save`'s format, in memory."
function pickle_bytes(x)
    data = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{Csize_t}(0)
    _with_values(Any[x]) do ptrs
        check(ct_pickle_save_buffer(data, n, ptrs[1]))
    end
    return _take_bytes(data[], n[])
end

# Copies and frees a caller-owned buffer (void **data_out, size_t *size_out).
function _take_bytes(p::Ptr{Cvoid}, n::Integer)
    bytes = Vector{UInt8}(undef, n)
    n > 0 && unsafe_copyto!(pointer(bytes), Ptr{UInt8}(p), n)
    ct_free(p)
    return bytes
end

"""
    CTorch.dict_get(v::Value, key)

Looks up `key` in a TorchScript dict value without converting the whole dict
(`ct_value_dict_get` / `ct_value_dict_get_str`).
"""
dict_get(v::Value, key::AbstractString) = from_value(@_newvalue ct_value_dict_get_str(out, v, key))
dict_get(v::Value, key) = _with_values(Any[key]) do k
    from_value(@_newvalue ct_value_dict_get(out, v, k[1]))
end
