# torch.nn for Julia: the layers libctorch builds (ct_module_new_nn), torch.nn.init
# (ct_tensor_nn_init), and the torch.nn.Module methods of training on every
# ScriptModule (params, state_dict, load_state_dict!, zero_grad!).

# ---- torch.nn.Module's training methods, for every ScriptModule --------------------

# The tensors of a str -> Tensor dict value, in its order (consumes p).
function _ordered_tensors(p::Ptr{Cvoid})
    try
        ks, vs = _dict_items(p)
        return String[k for k in ks], Tensor[v for v in vs]
    finally
        ct_value_free(p)
    end
end

"""
    params(m::ScriptModule; recurse=true) -> Vector{Tensor}

The module's parameters in torch's order (`m.parameters()`), for an optimizer:
`CTorch.SGD(params(m); lr=0.1)`. The tensors are the module's own (no copy).
"""
params(m::ScriptModule; recurse::Bool = true) =
    _ordered_tensors(@_newvalue ct_module_named_parameters(out, m, Int32(recurse)))[2]

"""
    CTorch.StateDict(pairs) <: AbstractDict{String,Tensor}

A dict of name => `Tensor` that keeps its insertion order, as the
`OrderedDict` of torch's `state_dict()`: what [`state_dict`](@ref) returns.
Saved with `CTorch.pickle_save`, its entries keep that order (Python's
`list(sd)`). `StateDict(k => CTorch.clone(v) for (k, v) in state_dict(m))`
is an ordered snapshot; `sd[k] = t` replaces in place or appends,
`delete!(sd, k)` removes.
"""
struct StateDict <: AbstractDict{String,Tensor}
    keys::Vector{String}
    vals::Vector{Tensor}
    index::Dict{String,Int}
end
StateDict() = StateDict(String[], Tensor[], Dict{String,Int}())
function StateDict(kv)
    d = StateDict()
    for (k, v) in kv
        d[k] = v
    end
    return d
end
Base.length(d::StateDict) = length(d.keys)
Base.iterate(d::StateDict, i::Int = 1) =
    i > length(d.keys) ? nothing : (Pair{String,Tensor}(d.keys[i], d.vals[i]), i + 1)
Base.haskey(d::StateDict, k) = haskey(d.index, k)
Base.get(d::StateDict, k, default) = (i = get(d.index, k, 0); i == 0 ? default : d.vals[i])
function Base.setindex!(d::StateDict, v, k)
    key, t = String(k), convert(Tensor, v)
    i = get(d.index, key, 0)
    if i == 0
        push!(d.keys, key)
        push!(d.vals, t)
        d.index[key] = length(d.keys)
    else
        d.vals[i] = t
    end
    return d
end
function Base.delete!(d::StateDict, k)
    i = get(d.index, k, 0)
    i == 0 && return d
    deleteat!(d.keys, i)
    deleteat!(d.vals, i)
    delete!(d.index, k)
    for j in i:length(d.keys)
        d.index[d.keys[j]] = j
    end
    return d
end
Base.copy(d::StateDict) = StateDict(copy(d.keys), copy(d.vals), copy(d.index))
Base.empty(::StateDict) = StateDict()

"""
    state_dict(m::ScriptModule) -> CTorch.StateDict

Parameters and buffers under torch's dotted names (`"0.weight"`,
`"bn.running_mean"`), in torch's order, as `m.state_dict()`
(`ct_module_state_dict`): a [`CTorch.StateDict`](@ref) (an ordered
`AbstractDict{String,Tensor}`) of detached tensors sharing the module's memory
(`CTorch.clone` them to keep a snapshot:
`CTorch.StateDict(k => CTorch.clone(v) for (k, v) in state_dict(m))`).
"""
function state_dict(m::ScriptModule)
    ks, vs = _ordered_tensors(@_newvalue ct_module_state_dict(out, m))
    return StateDict(String[k for k in ks], Tensor[detach(v) for v in vs], Dict{String,Int}(k => i for (i, k) in enumerate(ks)))
end

"""
    load_state_dict!(m::ScriptModule, sd::AbstractDict; strict=true)
        -> (missing_keys = String[...], unexpected_keys = String[...])

`m.load_state_dict(sd, strict)`: copies each tensor of `sd` (name => Tensor,
as [`state_dict`](@ref) gives) into the parameter or buffer of that name,
without recording autograd. All or nothing: a size mismatch, or with
`strict=true` a missing or unexpected key, throws a `CTorchError` listing them
(torch's message: "Missing key(s) in state_dict: ...") and changes nothing.
"""
function load_state_dict!(m::ScriptModule, sd::AbstractDict; strict::Bool = true)
    r = _with_values(Any[sd]) do vp
        @_newvalue ct_module_load_state_dict(out, m, vp[1], Int32(strict))
    end
    missing, unexpected = from_value(r)
    return (missing_keys = String[k for k in missing], unexpected_keys = String[k for k in unexpected])
end

"""
    zero_grad!(m::ScriptModule; set_to_none=true) -> m

`m.zero_grad()`: every parameter's gradient becomes `nothing`
(`set_to_none=true`, torch's default) or zeros.
"""
zero_grad!(m::ScriptModule; set_to_none::Bool = true) = (check(ct_module_zero_grad(m, Int32(set_to_none))); m)

"""
    CTorch.nn

torch.nn's layers, losses and containers, built by libctorch as TorchScript
modules (`ScriptModule`s: callable, trainable, `CTorch.save`-able to a file
`torch.jit.load` opens), with torch.nn's constructor arguments:

    using CTorch, CTorch.nn
    model = nn.Sequential(nn.Linear(4, 16), nn.ReLU(), nn.Linear(16, 1; bias = false))
    y = model(x)                                  # like Flux's Chain: the layers in turn
    nn.Conv2d(3, 8, (3, 3); padding = "same", dtype = Float64)
    opt = CTorch.SGD(params(model); lr = 0.1)
    load_state_dict!(model, sd); zero_grad!(model)
    init!(model_weight, :kaiming_uniform_; a = sqrt(5))

One function per layer name in [`CTorch.nn.LAYERS`](@ref) (`?CTorch.nn.Conv2d`
shows its signature); `nn.layer(name, args...; kw...)` builds any layer the
library knows, `nn.layers()` lists them with their signatures. After
`CTorch.manual_seed(s)` a layer's parameters are torch.nn's after
`torch.manual_seed(s)`.
"""
module nn

import ..CTorch
using ..CTorch: ScriptModule, Tensor, Device, StateDict, params, state_dict, load_state_dict!, zero_grad!,
                _call_with_values, _ordered_tensors, @_newvalue, ct_module_new_nn,
                ct_module_nn_layers, ct_tensor_nn_init, ct_tensor_nn_init_methods, from_value

export params, state_dict, load_state_dict!, zero_grad!, init!

"""
The layer names `CTorch.nn` has a function for (those of `ct_module_new_nn` in
this version of libctorch; `nn.layers()` lists what the loaded library builds,
`nn.layer(name, ...)` builds any of them).
"""
const LAYERS = (
    :Linear, :Bilinear, :Identity, :Flatten,
    :Conv1d, :Conv2d, :Conv3d, :ConvTranspose1d, :ConvTranspose2d, :ConvTranspose3d,
    :BatchNorm1d, :BatchNorm2d, :BatchNorm3d, :LayerNorm, :GroupNorm,
    :Dropout, :AlphaDropout, :Embedding, :RNN, :LSTM, :GRU,
    :MaxPool1d, :MaxPool2d, :MaxPool3d, :AvgPool1d, :AvgPool2d, :AvgPool3d,
    :AdaptiveAvgPool1d, :AdaptiveAvgPool2d, :AdaptiveAvgPool3d,
    :AdaptiveMaxPool1d, :AdaptiveMaxPool2d, :AdaptiveMaxPool3d,
    :ReLU, :ReLU6, :LeakyReLU, :ELU, :SELU, :CELU, :GELU, :SiLU, :Mish, :Sigmoid, :Tanh,
    :Hardtanh, :Hardswish, :Hardsigmoid, :Softplus, :Softsign, :Tanhshrink, :Softmax, :LogSoftmax,
    :CrossEntropyLoss, :NLLLoss, :MSELoss, :L1Loss, :SmoothL1Loss, :HuberLoss, :BCELoss,
    :BCEWithLogitsLoss, :KLDivLoss, :CosineEmbeddingLoss,
    :MultiheadAttention, :TransformerEncoderLayer,
    :Sequential, :ModuleList, :ModuleDict)

# Julia forms of torch's arguments: a tuple of ints (kernel_size = (3, 3)) as
# an int list, an element type (dtype = Float64) as its dtype code.
_arg(x) = x
_arg(x::Tuple{Vararg{Integer}}) = Int64[i for i in x]
_arg(::Type{T}) where {T} = CTorch.dtype_code(T)
_kwarg(k::Symbol, x) = k === :device && x !== nothing ? Device(x) : _arg(x)
function _kwargs(kw)
    ks = Tuple(keys(kw))
    return NamedTuple{ks}(map(_kwarg, ks, Tuple(values(kw))))
end

"""
    nn.layer(name, args...; kwargs...) -> ScriptModule

torch.nn's layer `name` (`"Linear"`, `:Conv2d`, ...) built by
`ct_module_new_nn` with torch.nn's constructor arguments: positional, then
keywords with torch's names. Julia tuples of ints stand for torch's tuples
(`kernel_size = (3, 3)`), an element type for a dtype (`dtype = Float64`),
`:cpu`/`"cuda:0"`/a `Device` for `device`. Errors (an unknown layer, an
argument missing, unknown, of the wrong type or out of range) are
`CTorchError`s with torch's message.
"""
function layer(name::Union{AbstractString,Symbol}, args...; kwargs...)
    s = String(name)
    p = _call_with_values((out, a...) -> ct_module_new_nn(out, s, a...), map(_arg, args), _kwargs(kwargs))
    return ScriptModule(Val(:own), p)
end

const _LAYER_SIGNATURES = Ref{Union{Nothing,Dict{String,String}}}(nothing)

"""
    nn.layers() -> Dict{String,String}

Every layer the loaded libctorch builds, name => signature
(`"nn::Linear(int in_features, int out_features, bool bias=True, *, ...) -> ()"`).
"""
function layers()
    d = _LAYER_SIGNATURES[]
    d === nothing || return copy(d)
    v = from_value(@_newvalue ct_module_nn_layers(out))
    d = Dict{String,String}(String(k) => String(x) for (k, x) in v)
    _LAYER_SIGNATURES[] = d
    return copy(d)
end

"""
    nn.init_methods() -> Dict{String,String}

torch.nn.init's initializers [`init!`](@ref) runs, name => signature.
"""
init_methods() =
    Dict{String,String}(String(k) => String(x) for (k, x) in from_value(@_newvalue ct_tensor_nn_init_methods(out)))

# A layer's signature in its docstring, read from the library when the
# docstring is shown (the library is loaded at run time, after this file is
# compiled): Julia prints each interpolated object of a docstring lazily.
struct _Signature
    name::String
end
function Base.print(io::IO, s::_Signature)
    sig = CTorch.isloaded() ? get(try layers() catch; Dict{String,String}() end, s.name, nothing) : nothing
    print(io, sig === nothing ? "(not in the loaded libctorch)" : sig)
end
Base.show(io::IO, s::_Signature) = print(io, s)

const _NOTES = Dict(
    :Sequential => "`Sequential(layers...)` chains its modules, like Flux's `Chain`: `m(x)` " *
                   "runs them in turn. The modules are shared, not copied; their parameters " *
                   "are named `\"0.weight\"`, `\"2.bias\"`, ... by position (counting from 0).",
    :ModuleList => "`ModuleList([m1, m2])`: a vector of modules (shared), named `\"0\"`, `\"1\"`, ...",
    :ModuleDict => "`ModuleDict(Dict(\"enc\" => m1))`: modules (shared) under names.")

for name in LAYERS
    s = String(name)
    doc = Expr(:string,
               "    CTorch.nn.$s(args...; kwargs...) -> ScriptModule\n\n" *
               "torch.nn.$s, built by libctorch (`ct_module_new_nn`) as a TorchScript module, " *
               "with torch.nn's arguments and defaults: positional, then keywords with torch's " *
               "names. Tuples of ints for sizes (`(3, 3)`), an element type for `dtype`, " *
               "`:cpu`/`\"cuda:0\"` for `device`; see [`CTorch.nn.layer`](@ref).\n\n" *
               (haskey(_NOTES, name) ? _NOTES[name] * "\n\n" : "") *
               "Signature (`nn.layers()`):\n\n    ",
               :(_Signature($s)), "\n")
    @eval begin
        function $name(args...; kwargs...)
            return layer($s, args...; kwargs...)
        end
        @doc $doc $name
        export $name
    end
end

"""
    init!(t::Tensor, method, args...; kwargs...) -> t

torch.nn.init's initializer `method` (`:kaiming_uniform_`, `:xavier_normal_`,
`:orthogonal_`, `:normal_`, `:constant_`, ...; `nn.init_methods()` lists them
with their signatures; the trailing `_` may be left out) on `t` in place,
without recording autograd, with torch's arguments:

    init!(w, :kaiming_uniform_; a = sqrt(5))
    init!(b, :uniform_, -0.1, 0.1)
    init!(w, :normal_; std = 0.02, generator = CTorch.Generator())

The same numbers as torch.nn.init after the same `CTorch.manual_seed`.
"""
function init!(t::Tensor, method::Union{AbstractString,Symbol}, args...; kwargs...)
    m = String(method)
    endswith(m, "_") || (m *= "_")
    _call_with_values((out, a...) -> ct_tensor_nn_init(t, m, a...), map(_arg, args), _kwargs(kwargs))
    return t
end

end # module nn
