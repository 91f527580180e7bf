# TorchScript modules and compiled scripts.

"""
    ScriptModule

A TorchScript module (`torch.jit.ScriptModule`), loaded with
[`CTorch.load`](@ref) or built with `ScriptModule(class_name)` +
[`define!`](@ref). Calling it runs a method:

    m(x, y)                 # forward(x, y)
    m(:encode, x; k=1)      # any method by name (a Symbol first argument)
    CTorch.call(m, "encode", x; k=1)

Arguments and results are converted as described in `CTorch.from_value`
(tensors pass by reference, without copying). Many threads may run the same
module at once. Freed by a finalizer or [`free!`](@ref).
"""
ScriptModule

"""
    CTorch.load(path; device=nothing) -> ScriptModule

Loads a TorchScript archive written by `torch.jit.save` / `ScriptModule.save`.
`device` (`:cpu`, `:cuda`, `"cuda:1"`, a `Device`) is the map_location;
`nothing` keeps the saved devices.
"""
function load(path::AbstractString; device = nothing)
    d = _device(device)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_module_load(out, path, d.type, d.index))
    return ScriptModule(Val(:own), out[])
end

"""
    CTorch.verify(path) -> path

Checks an untrusted TorchScript archive (`ct_module_verify`) or, with
`pickle=true`, a `torch.save` file (`ct_pickle_verify`) without running it;
throws a `CTorchError` naming the problem.
"""
verify(path::AbstractString; pickle::Bool = false) =
    (check(pickle ? ct_pickle_verify(path) : ct_module_verify(path)); path)

"Loads a TorchScript archive from bytes in memory."
function load(data::AbstractVector{UInt8}; device = nothing)
    d = _device(device)
    buf = Vector{UInt8}(data)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    GC.@preserve buf check(ct_module_load_buffer(out, buf, length(buf), d.type, d.index))
    return ScriptModule(Val(:own), out[])
end

"""
    ScriptModule(class_name)

A new empty module of class `__torch__.<class_name>`; add tensors with
[`register_parameter!`](@ref)/[`register_buffer!`](@ref), submodules with
[`register_module!`](@ref), and methods with [`define!`](@ref).
"""
function ScriptModule(class_name::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_module_new(out, class_name))
    return ScriptModule(Val(:own), out[])
end

"Compiles TorchScript source (methods using `self`) into the module."
define!(m::ScriptModule, source::AbstractString) = (check(ct_module_define(m, source)); m)
register_parameter!(m::ScriptModule, name::AbstractString, t::Tensor; requires_grad::Bool = true) =
    (check(ct_module_register_parameter(m, name, t, Int32(requires_grad))); m)
register_buffer!(m::ScriptModule, name::AbstractString, t::Tensor) =
    (check(ct_module_register_buffer(m, name, t)); m)
register_module!(m::ScriptModule, name::AbstractString, child::ScriptModule) =
    (check(ct_module_register_module(m, name, child)); m)

"""
    forward(m::ScriptModule, args...)

Runs `forward(args...)`. When every argument is a Tensor and the method's
schema returns one Tensor or a tuple of Tensors, the call goes through
`ct_module_forward_tensors`: one C call, no value handles. Anything else
takes the general path. The choice is made from the schema before the
method runs, so a method runs exactly once per call.
"""
function forward(m::ScriptModule, args...)
    if args isa Tuple{Vararg{Tensor}}
        r = _forward_tensors(m, args)
        r === nothing || return r
    end
    out = Ref{Ptr{Cvoid}}(C_NULL)
    _with_values(collect(Any, args)) do ap
        check(ct_module_forward(out, m, ap, length(ap)))
    end
    return from_value(out[])
end

const _MAX_FORWARD_OUTPUTS = 16

# The tensors-only call: one Tensor, a tuple of Tensors, or `nothing` when the
# method's schema returns something else (ct_module_method_results, read
# before anything runs; a List[Tensor] takes the general path too, since its
# length is known only after the run).
function _forward_tensors(m::ScriptModule, args::NTuple{N,Tensor}, method = nothing) where {N}
    name = method === nothing ? Cstring(C_NULL) : method
    kind = Ref{Int32}(0)
    count = Ref{Int64}(0)
    st = GC.@preserve m ct_module_method_results(kind, count, m, name)
    st == CT_OK || _throw_last_error(st)
    (kind[] == CT_RESULT_TENSOR || kind[] == CT_RESULT_TUPLE) || return nothing
    k = Int(count[])
    ins = Ref(map(t -> Base.unsafe_convert(P, t), args))
    inp = N == 0 ? Ptr{P}(C_NULL) : Base.unsafe_convert(Ptr{P}, ins)
    n = Ref{Csize_t}(0)
    if k <= _MAX_FORWARD_OUTPUTS
        outs = Ref(ntuple(_ -> C_NULL, Val(_MAX_FORWARD_OUTPUTS)))
        st = GC.@preserve m args ins outs ct_module_forward_tensors(
            Base.unsafe_convert(Ptr{P}, outs), _MAX_FORWARD_OUTPUTS, n, m, name, inp, N)
        st == CT_OK || _throw_last_error(st)
        _check_warnings()
        kind[] == CT_RESULT_TENSOR && return _tensor(outs[][1])
        return ntuple(i -> _tensor(outs[][i]), k)
    end
    many = fill(C_NULL, k)  # more results than the fixed slots hold
    st = GC.@preserve m args ins many ct_module_forward_tensors(many, k, n, m, name, inp, N)
    st == CT_OK || _throw_last_error(st)
    _check_warnings()
    return Tuple(_tensor(p) for p in many)
end

"""
    CTorch.call(m::ScriptModule, method, args...; kwargs...)

Runs any method by name with positional and keyword arguments (missing ones
take the schema's defaults).
"""
function call(m::ScriptModule, method::Union{AbstractString,Symbol}, args...; kw...)
    if isempty(kw) && args isa Tuple{Vararg{Tensor}}
        r = _forward_tensors(m, args, String(method))
        r === nothing || return r
    end
    name = String(method)
    return from_value(_call_with_values((out, a...) -> ct_module_call(out, m, name, a...), args, kw))
end

(m::ScriptModule)(method::Symbol, args...; kw...) = call(m, method, args...; kw...)
function (m::ScriptModule)(args...; kw...)
    isempty(kw) && return forward(m, args...)
    return call(m, "forward", args...; kw...)
end

"Dict of method name => schema string."
method_schemas(m::ScriptModule) = from_value(@_newvalue ct_module_methods(out, m))

"""
    named_parameters(m; recurse=true) -> Dict{String,Tensor}

The module's parameters under Python's dotted names. The tensors are the
module's own (no copy): writing through `unsafe_array` changes the model.
"""
named_parameters(m::ScriptModule; recurse::Bool = true) =
    _tensor_dict(from_value(@_newvalue ct_module_named_parameters(out, m, Int32(recurse))))
"Buffers (running statistics, ...) under dotted names; no copy."
named_buffers(m::ScriptModule; recurse::Bool = true) =
    _tensor_dict(from_value(@_newvalue ct_module_named_buffers(out, m, Int32(recurse))))
"Child modules (all descendants with `recurse=true`) under dotted names."
named_children(m::ScriptModule; recurse::Bool = false) =
    from_value(@_newvalue ct_module_named_children(out, m, Int32(recurse)))
_tensor_dict(d::AbstractDict) = Dict{String,Tensor}(String(k) => v for (k, v) in d)

"Gets an attribute (dotted names allowed: \"layer1.0.conv1.weight\")."
getattr(m::ScriptModule, name::AbstractString) = from_value(@_newvalue ct_module_get_attr(out, m, name))
"Sets an attribute (converted to a TorchScript value)."
function setattr!(m::ScriptModule, name::AbstractString, x)
    _with_values(Any[x]) do p
        check(ct_module_set_attr(m, name, p[1]))
    end
    return m
end

"""
    to(m::ScriptModule; device=nothing, dtype=nothing, non_blocking=false)
    to(m, device), to(m, T::Type)

Moves parameters and buffers in place (only floating ones change dtype).
"""
function to(m::ScriptModule; device = nothing, dtype = nothing, non_blocking::Bool = false)
    d = _device(device)
    check(ct_module_to(m, d.type, d.index, dtype_code(dtype), Int32(non_blocking)))
    return m
end
to(m::ScriptModule, ::Type{T}; kw...) where {T} = to(m; dtype = T, kw...)
to(m::ScriptModule, d::Union{Symbol,AbstractString,Device}; kw...) = to(m; device = d, kw...)

"Evaluation mode (`m.eval()`), in place, recursively; returns `m`."
eval!(m::ScriptModule) = (check(ct_module_eval(m)); m)
"Training mode (`m.train(on)`), in place, recursively; returns `m`."
train!(m::ScriptModule, on::Bool = true) = (check(ct_module_train(m, Int32(on))); m)
"`CTorch.eval(m)` is `eval!(m)` (`m.eval()` in PyTorch)."
eval(m::ScriptModule) = eval!(m)
"`CTorch.train(m, on=true)` is `train!(m, on)`."
train(m::ScriptModule, on::Bool = true) = train!(m, on)
is_training(m::ScriptModule) = ct_module_is_training(m) == 1
"Deep copy (parameters and buffers copied)."
Base.deepcopy(m::ScriptModule) = ScriptModule(Val(:own), @_newvalue ct_module_clone(out, m))
"""
    CTorch.to_pytorch(m::ScriptModule) -> ScriptModule

A copy of `m` for PyTorch (`ct_module_to_pytorch`): every call of an operator
with a Julia kernel ([`CTorch.Library`](@ref)) in its methods is replaced by
that operator's TorchScript twin ([`CTorch.set_twin`](@ref)), so the copy,
saved with [`CTorch.save`](@ref), opens with `torch.jit.load` in a Python
without ctorch or Julia, and keeps running here after the library is closed.
Parameters and buffers are copied (as `deepcopy`). Throws a `CTorchError`
(`CT_ERR_NOT_SUPPORTED`) naming every operator without a twin.
"""
to_pytorch(m::ScriptModule) = ScriptModule(Val(:own), @_newvalue ct_module_to_pytorch(out, m))
"`torch.jit.freeze`: a new, frozen module (eval mode)."
freeze(m::ScriptModule) = ScriptModule(Val(:own), @_newvalue ct_module_freeze(out, m))

"""
    save(m::ScriptModule, path; extra_files=Dict{String,String}())

Writes a TorchScript archive that Python's `torch.jit.load` reads.
"""
function save(m::ScriptModule, path::AbstractString; extra_files::AbstractDict = Dict{String,String}())
    _with_extra_files(extra_files) do p
        check(ct_module_save(m, path, p))
    end
    return path
end

"`CTorch.save_bytes(m; extra_files)`: the TorchScript archive as bytes in memory."
function save_bytes(m::ScriptModule; extra_files::AbstractDict = Dict{String,String}())
    data = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{Csize_t}(0)
    _with_extra_files(extra_files) do p
        check(ct_module_save_buffer(data, n, m, p))
    end
    return _take_bytes(data[], n[])
end

_with_extra_files(f, extra::AbstractDict) =
    isempty(extra) ? f(C_NULL) : _with_values(p -> f(p[1]), Any[Dict{String,String}(extra)])

"The extra files stored in the archive the module was loaded from (`Dict{String,String}`)."
extra_files(m::ScriptModule) =
    Dict{String,String}(from_value(@_newvalue ct_module_extra_files(out, m)))
"Every attribute (parameters, buffers, submodules, plain attributes) under dotted names."
named_attributes(m::ScriptModule; recurse::Bool = false) =
    from_value(@_newvalue ct_module_named_attributes(out, m, Int32(recurse)))
"`torch.jit.optimize_for_inference`: a new, frozen and optimized module."
optimize_for_inference(m::ScriptModule) =
    ScriptModule(Val(:own), @_newvalue ct_module_optimize_for_inference(out, m))

function Base.show(io::IO, m::ScriptModule)
    if m.ptr == C_NULL
        print(io, "ScriptModule(<freed>)")
    else
        ms = try
            sort!(collect(keys(method_schemas(m))))
        catch
            String[]
        end
        print(io, "ScriptModule(methods: ", join(ms, ", "), ")")
    end
end

# ---- Compiled TorchScript functions ----------------------------------------------

"""
    Script(source)

TorchScript functions compiled from source (no module):

    s = CTorch.Script("def f(x: Tensor, k: int = 2):\\n    return x * k\\n")
    s(:f, x; k=3)
"""
Script

"Compiles TorchScript source into a [`Script`](@ref)."
function Script(source::AbstractString)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(ct_script_compile(out, source))
    return Script(Val(:own), out[])
end
functions(s::Script) = from_value(@_newvalue ct_script_functions(out, s))
function call(s::Script, fn::Union{AbstractString,Symbol}, args...; kw...)
    name = String(fn)
    return from_value(_call_with_values((out, a...) -> ct_script_call(out, s, name, a...), args, kw))
end
(s::Script)(fn::Symbol, args...; kw...) = call(s, fn, args...; kw...)
