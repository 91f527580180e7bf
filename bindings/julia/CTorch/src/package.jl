# AOTInductor packages (.pt2): ct_package_* (LibTorch >= 2.6; older LibTorch
# throws CTorchError(CT_ERR_NOT_SUPPORTED) naming the version needed).

"""
    AOTIPackage

A model exported with `torch.export` and compiled with
`torch._inductor.aoti_compile_and_package`, loaded with
[`CTorch.load_package`](@ref). Calling it runs the model: tensors in (in the
exported order), one `Tensor` out, or a tuple for several outputs.
`metadata(p)`, `call_spec(p)`, `constant_names(p)`, `update_constants!(p, d)`,
`device(p)`. Freed by a finalizer or [`free!`](@ref).
"""
AOTIPackage  # (the type and its lifecycle: handles.jl)

"""
    CTorch.load_package(path; model_name=nothing, num_runners=1, device_index=-1) -> AOTIPackage
    CTorch.load_package(bytes::AbstractVector{UInt8}; model_name=nothing)

Loads an AOTInductor package (`.pt2`). `model_name` picks a model inside it
(default `"model"`). Needs LibTorch >= 2.6. `num_runners` model instances let that
many threads run it at once, `device_index` picks a CUDA package's device (both
need LibTorch >= 2.7's loader; from a path only).
"""
function load_package(path::AbstractString; model_name::Union{Nothing,AbstractString} = nothing,
                      num_runners::Integer = 1, device_index::Integer = -1)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    name = model_name === nothing ? nothing : String(model_name)
    cname = name === nothing ? Cstring(C_NULL) : name
    GC.@preserve name check(num_runners == 1 && device_index == -1 ?
        ct_package_load(out, path, cname) :
        ct_package_load_ext(out, path, cname, Csize_t(num_runners), Int32(device_index)))
    return AOTIPackage(Val(:own), out[])
end

"How many threads can run the package at once (`load_package(...; num_runners)`)."
num_runners(p::AOTIPackage) = (r = Ref{Csize_t}(0); check(ct_package_num_runners(r, p)); Int(r[]))

function load_package(data::AbstractVector{UInt8}; model_name::Union{Nothing,AbstractString} = nothing)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    buf = Vector{UInt8}(data)
    name = model_name === nothing ? nothing : String(model_name)
    GC.@preserve buf name check(ct_package_load_buffer(out, pointer(buf), length(buf),
                                                       name === nothing ? Cstring(C_NULL) : name))
    return AOTIPackage(Val(:own), out[])
end

const _PACKAGE_MAX_OUTPUTS = 64

function (p::AOTIPackage)(inputs...)
    ts = Tensor[x isa Tensor ? x : Tensor(x) for x in inputs]
    hs = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in ts]
    outs = fill(Ptr{Cvoid}(C_NULL), _PACKAGE_MAX_OUTPUTS)
    n = Ref{Csize_t}(0)
    GC.@preserve ts check(ct_package_run(outs, length(outs), n, p, hs, length(hs)))
    res = Tuple(_tensor(outs[i]) for i in 1:n[])
    return length(res) == 1 ? res[1] : res
end

function _package_value(f, p::AOTIPackage)
    out = Ref{Ptr{Cvoid}}(C_NULL)
    check(f(out, p))
    return from_value(out[])
end

"The package's metadata as a `Dict{String,String}` (`AOTI_DEVICE_KEY`, ...)."
metadata(p::AOTIPackage) = _package_value(ct_package_metadata, p)
"`[in_spec, out_spec]`: torch.export's serialized pytree specs (JSON strings)."
call_spec(p::AOTIPackage) = _package_value(ct_package_call_spec, p)
"Sorted dotted names of the package's constants (weights and buffers)."
constant_names(p::AOTIPackage) = _package_value(ct_package_constant_names, p)

"""
    update_constants!(p, Dict("fc1.bias" => t, ...)) -> p

Replaces constants without recompiling (a subset is fine).
"""
function update_constants!(p::AOTIPackage, constants::AbstractDict)
    names = String[String(k) for k in keys(constants)]
    ts = Tensor[(v = constants[k]; v isa Tensor ? v : Tensor(v)) for k in keys(constants)]
    ns = Ptr{UInt8}[pointer(s) for s in names]
    hs = Ptr{Cvoid}[Base.unsafe_convert(Ptr{Cvoid}, t) for t in ts]
    GC.@preserve names ts check(ct_package_update_constants(p, ns, hs, length(hs)))
    return p
end

"The `Device` the package runs on."
function device(p::AOTIPackage)
    t, i = Ref{Int32}(0), Ref{Int32}(0)
    check(ct_package_device(t, i, p))
    return Device(t[], i[])
end
