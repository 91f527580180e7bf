# Printing tensors as Julia prints arrays: dimensions, element type, device,
# and the elements in the binding's index order with the middle elided.
# torch's own text (every element) is `torch_string(t)`.

# Base.dims2string and Base.print_array are not public API: used where the
# running Julia has them, with the same text made by hand otherwise.
_dims_string(d::Dims, base::Bool = isdefined(Base, :dims2string)) = base ? Base.dims2string(d) :
    isempty(d) ? "0-dimensional" : length(d) == 1 ? "$(d[1])-element" : join(map(string, d), "×")
function _print_elements(io::IO, A::AbstractArray, base::Bool = isdefined(Base, :print_array))
    base && return Base.print_array(io, A)
    text = sprint((o, x) -> show(o, MIME"text/plain"(), x), A; context = io)
    i = findfirst(isequal('\n'), text)           # the summary line is printed already
    i === nothing || print(io, SubString(text, nextind(text, i)))
    return nothing
end

_device_string(d::Device) = string(device_type_symbol(d), d.index >= 0 ? ":$(d.index)" : "")

function Base.summary(io::IO, t::Tensor{T,N}) where {T,N}
    if isfreed(t)
        print(io, "CTorch.Tensor(<freed>)")
        return
    end
    print(io, _dims_string(size(t)), " Tensor{", T, ",", N, "} on ", _device_string(device(t)))
    requires_grad(t) && print(io, ", requires_grad")
end

# The elements to print: the zero-copy view on the CPU, a copy otherwise.
_printable(t::Tensor) = iscpu(device(t)) ? torch_view(t) : Array(t)

# A meta tensor has no elements to print: its shape, device and dtype as torch
# prints them, `tensor(..., device='meta', size=(2, 3))`.
_is_meta(t::Tensor) = !isfreed(t) && device_type_symbol(device(t)) === :meta
function _show_meta(io::IO, t::Tensor{T}) where {T}
    sz = size(t)
    print(io, "tensor(..., device='meta', size=(", join(sz, ", "), length(sz) == 1 ? ",)" : ")")
    T === Float32 || print(io, ", dtype=torch.", unsafe_string(ct_dtype_name(dtype_code(T))))
    print(io, ")")
end

function Base.show(io::IO, ::MIME"text/plain", t::Tensor{T}) where {T}
    summary(io, t)
    _is_meta(t) && return (print(io, ":\n"); _show_meta(io, t))
    (isfreed(t) || T <: OpaqueElement || isempty(t)) && return
    print(io, ":\n")
    ctx = IOContext(io, :limit => true, :typeinfo => T,
                    :compact => get(io, :compact, ndims(t) > 1))
    GC.@preserve t _print_elements(ctx, _printable(t))
end

function Base.show(io::IO, t::Tensor{T}) where {T}
    if isfreed(t) || T <: OpaqueElement
        summary(io, t)
        return
    end
    _is_meta(t) && return _show_meta(io, t)
    print(io, "Tensor(")
    GC.@preserve t show(IOContext(io, :limit => true), _printable(t))
    iscpu(device(t)) || print(io, "; device = \"", _device_string(device(t)), "\"")
    print(io, ")")
end
