# Element types and devices.

"""
    BFloat16

torch's bfloat16 (the upper 16 bits of a Float32), as a 16-bit primitive type so
that zero-copy views of bfloat16 tensors have the right element size. Convert
with `Float32(x)` / `BFloat16(x)` (round to nearest even); arithmetic promotes
to Float32.
"""
primitive type BFloat16 <: AbstractFloat 16 end

BFloat16(x::Float32) = begin
    u = reinterpret(UInt32, x)
    if isnan(x)
        reinterpret(BFloat16, UInt16(0x7fc0) | UInt16((u >> 16) & 0x8000))
    else
        # round to nearest, ties to even
        u += 0x00007fff + ((u >> 16) & 0x00000001)
        reinterpret(BFloat16, UInt16(u >> 16))
    end
end
BFloat16(x::Real) = BFloat16(Float32(x))
BFloat16(x::BFloat16) = x
Base.Float32(x::BFloat16) = reinterpret(Float32, UInt32(reinterpret(UInt16, x)) << 16)
Base.Float64(x::BFloat16) = Float64(Float32(x))
Base.Float16(x::BFloat16) = Float16(Float32(x))
Base.convert(::Type{BFloat16}, x::Real) = BFloat16(x)
Base.convert(::Type{BFloat16}, x::BFloat16) = x
Base.promote_rule(::Type{BFloat16}, ::Type{Float32}) = Float32
Base.promote_rule(::Type{BFloat16}, ::Type{Float64}) = Float64
Base.promote_rule(::Type{BFloat16}, ::Type{Float16}) = Float32
Base.promote_rule(::Type{BFloat16}, ::Type{<:Integer}) = BFloat16
for op in (:+, :-, :*, :/, :^)
    @eval Base.$op(a::BFloat16, b::BFloat16) = BFloat16($op(Float32(a), Float32(b)))
end
Base.:-(a::BFloat16) = reinterpret(BFloat16, reinterpret(UInt16, a) ⊻ 0x8000)
Base.:(==)(a::BFloat16, b::BFloat16) = Float32(a) == Float32(b)
Base.:<(a::BFloat16, b::BFloat16) = Float32(a) < Float32(b)
Base.:<=(a::BFloat16, b::BFloat16) = Float32(a) <= Float32(b)
Base.isnan(a::BFloat16) = isnan(Float32(a))
Base.isinf(a::BFloat16) = isinf(Float32(a))
Base.isfinite(a::BFloat16) = isfinite(Float32(a))
Base.zero(::Type{BFloat16}) = reinterpret(BFloat16, 0x0000)
Base.one(::Type{BFloat16}) = reinterpret(BFloat16, 0x3f80)
Base.eps(::Type{BFloat16}) = reinterpret(BFloat16, 0x3c00)
Base.hash(a::BFloat16, h::UInt) = hash(Float32(a), h)
Base.show(io::IO, x::BFloat16) = print(io, "BFloat16(", Float32(x), ")")

# CT_<dtype> code <-> Julia element type.
# (float8 and quantized dtypes have no Julia type: their tensors have
# `OpaqueElement{code}` elements.)
const DTYPES = (Bool, UInt8, Int8, Int16, Int32, Int64, Float16, BFloat16, Float32, Float64,
                ComplexF32, ComplexF64, UInt16, UInt32, UInt64)
const DTYPE_CODES = (CT_BOOL, CT_UINT8, CT_INT8, CT_INT16, CT_INT32, CT_INT64, CT_FLOAT16,
                     CT_BFLOAT16, CT_FLOAT32, CT_FLOAT64, CT_COMPLEX64, CT_COMPLEX128,
                     CT_UINT16, CT_UINT32, CT_UINT64)

"""
    CTorch.OpaqueElement{code}

Element type of a tensor whose dtype has no Julia equivalent (a dtype code
this binding does not know). Such a tensor can be passed to ops and models;
its elements cannot be read from Julia.
"""
struct OpaqueElement{code} end

"Julia element type of a CT_<dtype> code."
julia_type(code::Integer) = 1 <= code <= length(DTYPES) ? DTYPES[code] : OpaqueElement{Int32(code)}

"CT_<dtype> code of a Julia element type."
dtype_code(::Type{OpaqueElement{code}}) where {code} = code
dtype_code(::Nothing) = CT_DTYPE_KEEP
for (T, c) in zip(DTYPES, DTYPE_CODES)
    @eval dtype_code(::Type{$T}) = $c
end
dtype_code(::Type{T}) where {T} =
    throw(CTorchError(CT_ERR_TYPE, "element type $T has no torch dtype " *
                                   "(supported: $(join(DTYPES, ", ")))"))

const TorchElType = Union{DTYPES...}

# ---- Devices ---------------------------------------------------------------

"""
    Device(type, index=-1)
    Device(:cpu), Device(:cuda), Device(:cuda, 1), Device("cuda:1")

A torch device: `type` is `:cpu` or `:cuda` (stored as the frozen CT_DEVICE_*
code), `index` -1 means the current device of that type.
"""
struct Device
    type::Int32
    index::Int32
end
const DEVICE_CODES = Dict(:cpu => CT_DEVICE_CPU, :cuda => CT_DEVICE_CUDA, :meta => CT_DEVICE_META,
                          :mps => CT_DEVICE_MPS, :xpu => CT_DEVICE_XPU, :hip => CT_DEVICE_HIP,
                          :privateuseone => CT_DEVICE_PRIVATEUSE1)
function Device(type::Symbol, index::Integer = -1)
    haskey(DEVICE_CODES, type) || throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "unknown device type :$type (use one of $(join(sort!(collect(keys(DEVICE_CODES))), ", ")))"))
    Device(DEVICE_CODES[type], Int32(index))
end
function Device(s::AbstractString)
    parts = split(s, ':')
    length(parts) == 1 && return Device(Symbol(parts[1]))
    length(parts) == 2 && return Device(Symbol(parts[1]), parse(Int, parts[2]))
    throw(CTorchError(CT_ERR_INVALID_ARGUMENT, "bad device string \"$s\""))
end
Device(d::Device) = d
device_type_symbol(d::Device) = Symbol(unsafe_string(ct_device_type_name(d.type)))
function Base.show(io::IO, d::Device)
    print(io, "Device(\"", device_type_symbol(d))
    d.index >= 0 && print(io, ":", d.index)
    print(io, "\")")
end
iscuda(d::Device) = d.type == CT_DEVICE_CUDA
iscpu(d::Device) = d.type == CT_DEVICE_CPU

const CPU = Device(CT_DEVICE_CPU, Int32(-1))

# A device keyword: nothing (keep / default), Symbol, String or Device.
_device(::Nothing) = Device(CT_DEVICE_KEEP, Int32(-1))
_device(d) = Device(d)
