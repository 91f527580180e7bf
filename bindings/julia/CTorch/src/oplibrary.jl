# Operators in torch's dispatcher with kernels written in Julia (ct_library_*):
# the Julia counterpart of torch.library.Library.
#
# Threads. Every kernel is registered with CT_KERNEL_SAME_THREAD: libctorch
# calls it only on the OS thread that registered it, and a call from any
# other thread (TorchScript's fork, CUDA autograd's device threads, another
# Julia thread) fails with CT_ERR_NOT_SUPPORTED before Julia is entered
# (Julia before 1.9 cannot be entered from a thread it did not start).
#
# Rooting. No closure crosses into C. Each kernel's state (the Julia function)
# is kept in `_ROOTS` (arrays.jl) under a numeric id, and also in the
# `Library`. ctorch gets, as the kernel's ctx, a one-element marker tensor
# whose memory holds that id (ct_tensor_from_blob_queued); the kernel's
# `destroy` is the C function ct_tensor_free. So destroy never runs Julia code,
# whichever thread it runs on (ct_library_free, or the last autograd node that
# used the kernel dying later): freeing the marker puts the id on ctorch's
# release queue, and Julia un-roots the state when it polls the queue (in
# `close(lib)`, on every registration, in `CTorch.release_unused!()`, ...).

mutable struct _KernelState
    f::Any
    name::String            # "myjl::softsign (CPU)", for error messages
    idbuf::Vector{Int64}    # memory of the marker tensor: holds our id
end

"""
    CTorch.Library(ns)

A registration scope for operators of namespace `ns` in torch's dispatcher
(`ct_library_new`), as `torch.library.Library(ns, "DEF")` in PyTorch. Define
operators with [`CTorch.define`](@ref), give them Julia kernels with
[`CTorch.impl`](@ref) and an autograd formula with
[`CTorch.impl_autograd`](@ref); call them as `CTorch.ops.ns.name(args...)`,
from TorchScript models (loaded after the definition) and through every
other ctorch path that calls operators by name.

`close(lib)` (or `free!(lib)`) removes everything the library registered
(`ct_library_free`): later calls of its operators throw a `CTorchError`
(`CT_ERR_NOT_FOUND`, "... was removed"). The finalizer does the same when the
library is garbage-collected, so keep the `Library` referenced (e.g. in a
`const`) for as long as its operators are used.

Kernels run on the Julia thread that registered them, and only there (see
[`CTorch.impl`](@ref)).

```julia
lib = CTorch.Library("myjl")
CTorch.define(lib, "softsign(Tensor x) -> Tensor")
CTorch.impl(lib, "softsign", :CPU; arrays = true) do x   # x: an Array on x's memory
    y = similar(x)
    @inbounds for i in eachindex(x, y)
        y[i] = x[i] / (1 + abs(x[i]))
    end
    y                                              # the result, no copy
end
CTorch.impl(lib, "softsign", :Meta) do x          # shapes only
    CTorch.empty_like(x)
end
CTorch.impl_autograd(lib, "softsign") do args, result, grads
    x, = args
    grads[1] ./ (1 .+ abs.(x)) .^ 2                # one gradient per argument
end
y = CTorch.ops.myjl.softsign(CTorch.randn(3))
```
"""
mutable struct Library
    ptr::Ptr{Cvoid}
    ns::String
    kernels::Vector{_KernelState}   # also rooted in _ROOTS until ctorch lets go
    defined::Vector{String}
    twins::Dict{String,String}      # "ns::name" => TorchScript twin source (set_twin)
    function Library(ns::AbstractString)
        out = Ref{Ptr{Cvoid}}(C_NULL)
        check(ct_library_new(out, String(ns)))
        lib = new(out[], String(ns), _KernelState[], String[], Dict{String,String}())
        finalizer(_finalize, lib)
        return lib
    end
end

# Pure C, non-yielding: safe in a finalizer. Kernel destroys are
# ct_tensor_free (see above), so no Julia code runs inside.
function _finalize(lib::Library)
    p = lib.ptr
    lib.ptr = C_NULL
    ct_library_free(p)
    return nothing
end

function _forget_cached_ops(ns::String)
    lock(_OP_LOCK) do
        for k in collect(keys(_OP_CACHE))
            startswith(k, ns * "::") && delete!(_OP_CACHE, k)
        end
        s = Symbol(ns)
        for k in collect(keys(_OP_CACHE_NS))
            k[1] === s && delete!(_OP_CACHE_NS, k)
        end
    end
end

"""
    close(lib::CTorch.Library)

Removes every operator and kernel `lib` registered (`ct_library_free`) and
un-roots its Julia kernels (those still used by a live autograd graph are
un-rooted once that graph is gone). Closing twice is allowed.
"""
function Base.close(lib::Library)
    was_open = lib.ptr != C_NULL
    _finalize(lib)
    empty!(lib.kernels)
    empty!(lib.twins)      # ct_library_free forgot them
    if was_open
        _forget_cached_ops(lib.ns)
        _poll_release_queue()
    end
    return nothing
end
free!(lib::Library) = close(lib)
isfreed(lib::Library) = lib.ptr == C_NULL
Base.isopen(lib::Library) = lib.ptr != C_NULL
Base.unsafe_convert(::Type{Ptr{Cvoid}}, lib::Library) =
    (p = lib.ptr; p == C_NULL && _freed_error("Library"); p)
Base.show(io::IO, lib::Library) =
    print(io, "CTorch.Library(\"", lib.ns, "\"", isopen(lib) ? "" : ", closed", ")")

"""
    CTorch.define(lib, schema; tags=String[])

Defines an operator (`ct_library_define`): `"softsign(Tensor x) -> Tensor"`
(the library's namespace is added) or `"myjl::softsign(...)"`. `tags`:
names of `torch.Tag` values. Throws a `CTorchError` (`CT_ERR_INVALID_ARGUMENT`)
for a bad schema, another namespace, or a name that is already defined.
"""
function define(lib::Library, schema::AbstractString; tags = String[])
    ts = String[String(t) for t in tags]
    ptrs = Ptr{UInt8}[pointer(t) for t in ts]
    GC.@preserve ts ptrs lib begin
        check(ct_library_define(lib, String(schema), isempty(ptrs) ? Ptr{Ptr{UInt8}}(C_NULL) : pointer(ptrs),
                                length(ptrs)))
    end
    push!(lib.defined, String(schema))
    return nothing
end

# Roots `state` and makes the marker tensor that ctorch gets as ctx.
function _kernel_ctx(state::_KernelState)
    _poll_release_queue()
    id = _root!(state)
    state.idbuf[1] = Int64(id)
    marker = Ref{Ptr{Cvoid}}(C_NULL)
    sizes = Int64[1]
    st = GC.@preserve state sizes ct_tensor_from_blob_queued(marker, pointer(state.idbuf), sizes, 1, C_NULL,
                                                             CT_INT64, CT_DEVICE_CPU, Int32(-1), Ptr{Cvoid}(id))
    if st != CT_OK
        _unroot!(id)
        _throw_last_error(st)
    end
    return marker[]
end

function _register_kernel(lib::Library, state::_KernelState, register)
    lib.ptr == C_NULL && _freed_error("Library")
    marker = _kernel_ctx(state)
    # The library owns the marker from here on: on failure ctorch already
    # called destroy (ct_tensor_free), which queued the id.
    st = GC.@preserve lib register(marker, _c_address(:ct_tensor_free))
    if st != CT_OK
        msg = unsafe_string(ct_last_error())
        _poll_release_queue()
        throw(CTorchError(st, msg))
    end
    push!(lib.kernels, state)
    return nothing
end

_key_string(key::Symbol) = String(key)
_key_string(key::AbstractString) = String(key)

"""
    CTorch.impl(f, lib, name, key; arrays=false)

Gives operator `name` (`"softsign"`, `"softsign.overload"` or
`"myjl::softsign"`) a kernel written in Julia for dispatch key `key`: `:CPU`,
`:CUDA`, `:Meta` (inputs and output are meta tensors: compute the shape
only), `:CompositeExplicitAutograd` or `:CompositeImplicitAutograd`
(`ct_library_impl`). Use the `do` form:

```julia
CTorch.impl(lib, "softsign", :CPU) do x
    ...
end
```

`f` gets the operator's arguments in schema order as Julia values (`Tensor`,
numbers, `nothing`, vectors..., defaults filled in; tensors are new handles to
the caller's tensors, no copy: `unsafe_array(x)` views their memory) and
returns the result: a `Tensor` (allocate it with `CTorch.empty_like` and
fill it, or compute it with CTorch operations), a tuple for several results,
`nothing` for none. Returning a plain Julia `Array` is an error: wrap it
with `CTorch.tensor(A)` (copy) or `Tensor(A)` (zero-copy), or use
`arrays=true`.

# Kernels on arrays: `arrays=true`

```julia
CTorch.impl(lib, "softsign", :CPU; arrays = true) do x
    softsign!(similar(x), x)          # x, the result: Julia Arrays
end
```

With `arrays=true`, `f` gets each tensor argument as a Julia `Array` that is
a **zero-copy view of the tensor's memory** (what `unsafe_array` gives:
**dimensions reversed**, a torch (2,3,4) tensor is a 4×3×2 `Array`, so
elementwise loops over `eachindex` need no index arithmetic). A tensor that
is not contiguous is made contiguous first (then the array views that copy;
for an argument the schema marks as written, `Tensor(a!)`, the copy is
copied back into the argument after the call). The tensors are kept alive
during the call: no `GC.@preserve` is needed, but do not keep the arrays
after the kernel returns. Tensor lists arrive as vectors of arrays;
`nothing` and non-tensor arguments are passed as they are.

`f` returns an `Array` (or a tuple of them, a vector of them for a `Tensor[]`
result), or a `Tensor`. An `Array` allocated in Julia (`similar(x)`,
`zeros`, ...) becomes the result **without a copy**, in the same reversed
order (a 4×3×2 `Array` is a contiguous torch (2,3,4) tensor); torch keeps
the array alive (rooted) until it lets go of the result. Returning one of
the argument arrays returns that argument's tensor; an array that shares
only part of an argument's memory (`reshape`, a view) is copied. Do not
return an array that views other torch memory (`unsafe_array` of a tensor
made in the kernel): return that tensor instead.

The keys are `:CPU`, `:CUDA` (the kernel fails: the memory of a CUDA tensor
is not a Julia `Array`) and `:CompositeExplicitAutograd`; `:Meta` and
`:CompositeImplicitAutograd` are refused (`ArgumentError`).

Memory: each call runs inside a scope (as [`withscope`](@ref) makes): the
`Tensor` handles made during the call, the arguments' and the result's
included, are freed when the kernel returns (torch holds the result), so a
kernel's memory does not wait for Julia's GC. To keep a tensor made inside
a kernel (a cache in a global), pass it to [`keep!`](@ref) or store a
`copy`.

An exception thrown by `f` does not unwind through C: the call of the
operator throws a `CTorchError` (`CT_ERR_CALLBACK`) whose message contains the
Julia exception; `e.cause` is the exception and `showerror` prints `f`'s
frames (its backtrace). Under `autocast(:cpu)` `f` gets arguments as the
caller made them: a `BFloat16` input next to a `Float32` parameter.

Threads: the kernel is registered with `CT_KERNEL_SAME_THREAD`. It runs on the
thread that registered it, which covers eager calls (`ops.ns.name(...)`),
TorchScript models without `fork`, and CPU autograd; a call from any other
thread (another Julia thread, TorchScript's `fork`, CUDA autograd) throws
`CT_ERR_NOT_SUPPORTED` without entering Julia.
"""
function impl(f, lib::Library, name::AbstractString, key::Union{Symbol,AbstractString};
              arrays::Bool = false)
    k = _key_string(key)
    q = occursin("::", name) ? String(name) : string(lib.ns, "::", name)
    schema = _op_schema_string(q)
    if arrays
        k in ("Meta", "CompositeImplicitAutograd") &&
            throw(ArgumentError("arrays=true is for kernels that compute on memory (:CPU, :CUDA, " *
                                ":CompositeExplicitAutograd), not :$k" *
                                (k == "Meta" ? " (meta tensors have no memory)" :
                                 " (autograd would not see the computation)")))
        f = _ArrayKernel(f, _mutable_args(schema))
    end
    state = _KernelState(f, "$q ($k kernel)", Int64[0])
    if _tensors_only_schema(schema)
        # Handles in, handles out (ct_library_impl_tensors): no values.
        _register_kernel(lib, state, (ctx, destroy) ->
            ct_library_impl_tensors(lib, String(name), k, _OPT_CFUNC[], ctx, destroy,
                                    CT_KERNEL_SAME_THREAD))
    else
        _register_kernel(lib, state, (ctx, destroy) ->
            ct_library_impl(lib, String(name), k, _OPK_CFUNC[], ctx, destroy, CT_KERNEL_SAME_THREAD))
    end
    return nothing
end

# The schema of defined operator "ns::name[.overload]", or "" when not found
# (ct_library_impl then reports it).
function _op_schema_string(q::String)
    dot = findfirst('.', q)
    base, overload = dot === nothing ? (q, "") : (q[1:dot-1], q[dot+1:end])
    op = Ref{Ptr{Cvoid}}(C_NULL)
    ct_op_find(op, base, overload) == CT_OK || return ""
    try
        s = Ref{Ptr{UInt8}}(C_NULL)
        return ct_op_schema(s, op[], 0) == CT_OK ? unsafe_string(s[]) : ""
    finally
        ct_op_free(op[])
    end
end

# Whether every argument and return of `schema` is a plain `Tensor`.
function _tensors_only_schema(schema::AbstractString)
    m = match(r"^[^(]*\((.*)\)\s*->\s*(.*)$", schema)
    m === nothing && return false
    args, rets = strip(m.captures[1]), strip(m.captures[2])
    startswith(rets, "(") && endswith(rets, ")") && (rets = strip(rets[2:end-1]))
    (isempty(args) || isempty(rets)) && return false
    plain(item) = (w = split(strip(item)); !isempty(w) && w[1] == "Tensor" && length(w) <= 2)
    return all(plain, split(args, ',')) && all(plain, split(rets, ','))
end

"""
    CTorch.impl_autograd(backward, lib, name; arrays=false)

Gives operator `name` an autograd formula (`ct_library_impl_autograd`): the
forward runs the operator's device kernel, and when an input requires grad
the result gets a graph node (named `"ns::name"`) whose backward calls

```julia
CTorch.impl_autograd(lib, "softsign") do args, result, grads
    ...   # return one gradient per argument
end
```

with `args` the forward's arguments (a tuple, tensors detached), `result` its
result (a `Tensor`, or a tuple when the operator returns several) and `grads`
a tuple with one incoming gradient per result (`nothing` where torch has
none). It returns one gradient per argument, as a tuple or vector (`nothing`
for an argument without one; entries for non-tensor arguments are ignored),
or, for a one-argument operator, the gradient itself. Each gradient has its
argument's shape. The operator's returns must all be tensors.

The backward runs inside `CTorch.backward` / `CTorch.autograd_grad` on the
calling thread for CPU tensors; for CUDA tensors torch runs it on its device
thread, where the call fails with `CT_ERR_NOT_SUPPORTED` (same-thread kernel,
see [`CTorch.impl`](@ref)). Errors thrown by `backward` come back as a
`CTorchError` (`CT_ERR_CALLBACK`) from the backward call, with the exception
as `e.cause` and its frames in `showerror`.

With `arrays=true`, `args`, `result` and `grads` hold Julia `Array`s in place
of tensors (zero-copy views of the tensors' memory, contiguous, dimensions
reversed, as for [`CTorch.impl`](@ref)`(...; arrays=true)`; `nothing` stays
`nothing`), and `backward` returns `Array`s (or `Tensor`s, or `nothing`),
one per argument, which become the gradients without a copy:

```julia
CTorch.impl_autograd(lib, "softsign"; arrays = true) do (x,), y, (gy,)
    gy ./ (1 .+ abs.(x)) .^ 2
end
```
"""
function impl_autograd(backward, lib::Library, name::AbstractString; arrays::Bool = false)
    q = occursin("::", name) ? String(name) : string(lib.ns, "::", name)
    state = _KernelState(arrays ? _ArrayBackward(backward) : backward, "$q (autograd backward)", Int64[0])
    _register_kernel(lib, state, (ctx, destroy) ->
        ct_library_impl_autograd(lib, String(name), _OPB_CFUNC[], ctx, destroy, CT_KERNEL_SAME_THREAD))
    return nothing
end

# ---- kernels on arrays (arrays=true) ----------------------------------------------
#
# The wrappers below turn a kernel written on Julia Arrays into one on tensors:
# each tensor argument becomes `unsafe_array` of it (of `contiguous(t)` when it
# is not contiguous); returned Arrays become tensors over their memory
# (`Tensor(PermutedDimsArray(A, (N,...,1)))`: contiguous for torch, sizes
# reversed back, A rooted until torch lets go). The tensors the arrays view
# are handles made in the kernel's scope, freed after the call returns; the
# wrappers also hold them (GC.@preserve) while the Julia function runs.

struct _ArrayKernel{F}
    f::F
    mutable_args::Vector{Int}      # indices of `Tensor(a!)` arguments: copied back
end

struct _ArrayBackward{F}
    f::F
end

# The tensors seen during one call: the array given to the kernel, the tensor
# it views, and the argument tensor (different when a contiguous copy was made).
struct _ArrayArg
    array::Array
    tensor::Tensor
    original::Tensor
end

function _to_array!(seen::Vector{_ArrayArg}, x)
    if x isa Tensor
        c = is_contiguous(x) ? x : contiguous(x)
        A = unsafe_array(c)
        push!(seen, _ArrayArg(A, c, x))
        return A
    elseif x isa Tuple
        return map(e -> _to_array!(seen, e), x)
    elseif x isa AbstractVector && !isempty(x) && all(e -> e isa Tensor || e === nothing, x)
        return Any[_to_array!(seen, e) for e in x]
    end
    return x
end

# A Julia array of numbers (the only arrays that become tensors).
_is_data_array(r) = r isa Array && isbitstype(eltype(r)) && eltype(r) <: TorchElType

function _memory_overlaps(a::Array, b::Array)
    (isempty(a) || isempty(b)) && return false
    pa, pb = UInt(pointer(a)), UInt(pointer(b))
    return pa < pb + sizeof(b) && pb < pa + sizeof(a)
end

# `A` (column-major, N dims) as a torch-contiguous tensor of sizes reverse(size(A)).
_array_as_tensor(A::Array{T,N}) where {T,N} =
    N <= 1 ? Tensor(A) : Tensor(PermutedDimsArray(A, ntuple(i -> N + 1 - i, N)))

function _from_array(seen::Vector{_ArrayArg}, r)
    if _is_data_array(r)
        for a in seen
            a.array === r && return a.tensor                      # an argument itself
        end
        for a in seen
            # Shares an argument's memory (a reshape, a view): Tensor(r) would
            # not keep that memory alive, so copy.
            _memory_overlaps(a.array, r) && return _array_as_tensor(copy(r))
        end
        return _array_as_tensor(r)
    elseif r isa Tuple
        return map(e -> _from_array(seen, e), r)
    elseif r isa AbstractVector && !(r isa Tensor) && !isempty(r) && !_is_data_array(r) &&
           any(e -> _is_data_array(e) || e isa Tensor, r)
        v = Any[_from_array(seen, e) for e in r]
        return all(e -> e isa Tensor, v) ? Tensor[e for e in v] : v
    elseif r isa AbstractArray && !(r isa Tensor)
        throw(ArgumentError("the kernel returned a $(typeof(r)); with arrays=true return an Array " *
                            "(of a torch element type), a Tensor, or a tuple of them"))
    end
    return r
end

# Writes back the contiguous copies of `Tensor(a!)` arguments.
function _copy_back!(seen::Vector{_ArrayArg}, args, mutable_args::Vector{Int})
    for i in mutable_args
        i <= length(args) || continue
        x = args[i]
        x isa Tensor || continue
        for a in seen
            if a.original === x && a.tensor !== x
                check(ct_tensor_copy_(x, a.tensor, Int32(0)))
                break
            end
        end
    end
    return nothing
end

function (k::_ArrayKernel)(args...)
    seen = _ArrayArg[]
    xs = map(a -> _to_array!(seen, a), args)
    res = GC.@preserve seen k.f(xs...)
    isempty(k.mutable_args) || _copy_back!(seen, args, k.mutable_args)
    return _from_array(seen, res)
end

function (k::_ArrayBackward)(args, result, grads)
    seen = _ArrayArg[]
    xs = _to_array!(seen, args)
    r = _to_array!(seen, result)
    gs = _to_array!(seen, grads)
    res = GC.@preserve seen k.f(xs, r, gs)
    return _from_array(seen, res)
end

# Indices of the schema's arguments written by the operator (`Tensor(a!) x`).
function _mutable_args(schema::AbstractString)
    m = match(r"^[^(]*\((.*)\)\s*->", schema)
    m === nothing && return Int[]
    args, depth, start, items = m.captures[1], 0, 1, SubString{String}[]
    for (i, c) in pairs(args)
        if c in ('(', '[')
            depth += 1
        elseif c in (')', ']')
            depth -= 1
        elseif c == ',' && depth == 0
            push!(items, SubString(args, start, prevind(args, i)))
            start = nextind(args, i)
        end
    end
    isempty(strip(args)) || push!(items, SubString(args, start))
    out, n = Int[], 0
    for it in items
        w = strip(it)
        w == "*" && continue                     # keyword-only marker, not an argument
        n += 1
        occursin(r"^Tensor\??\([a-z0-9.]+!\)", w) && push!(out, n)
    end
    return out
end

# ---- TorchScript twins: the operator for PyTorch without ctorch -------------------

_qualified(lib::Library, name::AbstractString) =
    occursin("::", name) ? String(name) : string(lib.ns, "::", name)

"""
    CTorch.set_twin(lib, name, source)

Gives operator `name` (defined by `lib`) its TorchScript twin
(`ct_library_set_twin`): `source` defines one function named as the operator,
taking its arguments and returning its results, written with torch's own
operators only:

```julia
CTorch.set_twin(lib, "softsign",
                "def softsign(x: Tensor) -> Tensor:\\n    return x / (1 + torch.abs(x))\\n")
```

The twin is what [`CTorch.to_pytorch`](@ref) puts in place of the operator's
calls, so a model with Julia layers loads in PyTorch without ctorch or Julia;
it is not run otherwise ([`CTorch.check_twin`](@ref) compares it with the
Julia kernel). A second call replaces the twin; `close(lib)` forgets it.
Throws a `CTorchError`: `CT_ERR_INVALID_ARGUMENT` (the operator is not
defined by `lib`, no such function, a different number of arguments or
results), `CT_ERR_TORCH` (the TorchScript compiler's message).
"""
function set_twin(lib::Library, name::AbstractString, source::AbstractString)
    src = String(source)
    GC.@preserve lib check(ct_library_set_twin(lib, String(name), src))
    lib.twins[_qualified(lib, name)] = src
    return nothing
end

"""
    CTorch.check_twin(lib, name, args...; rtol=1e-5, atol=1e-6)

A test of operator `name`'s twin ([`CTorch.set_twin`](@ref)): runs the
operator (its Julia kernel) and the twin (compiled with
[`CTorch.Script`](@ref)) on `args` and compares the results and, for the
floating-point tensor arguments, the gradients (of the sum of the results,
through the operator's autograd formula and through the twin). The tensors in
`args` are not changed (each side gets detached copies). Returns `nothing`;
throws an `AssertionError` naming the largest difference (or the mismatching
shape, count, value) otherwise, an `ArgumentError` when the operator has no
twin.

```julia
CTorch.check_twin(lib, "softsign", CTorch.randn(4, 5))
```
"""
function check_twin(lib::Library, name::AbstractString, args...; rtol::Real = 1e-5, atol::Real = 1e-6)
    q = _qualified(lib, name)
    src = get(lib.twins, q, nothing)
    src === nothing && throw(ArgumentError("$q has no twin (CTorch.set_twin)"))
    withscope() do
        _check_twin(q, src, args, Float64(rtol), Float64(atol))
    end
    return nothing
end

function _check_twin(q::String, src::String, args::Tuple, rtol::Float64, atol::Float64)
    script = Script(src)
    fname = split(split(q, "::"; limit = 2)[2], '.')[1]
    fns = String[String(f) for f in functions(script)]
    fname in fns || (fname = fns[1])
    leaves() = map(a -> a isa Tensor ?
                   (c = clone(detach(a)); eltype(c) <: AbstractFloat && requires_grad!(c); c) : a, args)
    flat(x) = x isa Tuple || (x isa AbstractVector && !(x isa Tensor)) ? collect(Any, x) : Any[x]
    a1, a2 = leaves(), leaves()
    got = flat(op(q)(a1...))
    want = flat(call(script, fname, a2...))
    length(got) == length(want) ||
        throw(AssertionError("$q returns $(length(got)) values, its twin $(length(want))"))
    for (i, (x, y)) in enumerate(zip(got, want))
        _compare_twin("result $i", q, x, y, rtol, atol)
    end
    outs = [(x, y) for (x, y) in zip(got, want)
            if x isa Tensor && y isa Tensor && requires_grad(x) && requires_grad(y)]
    isempty(outs) && return nothing
    backward(sum(ops.aten.sum(x) for (x, _) in outs))
    backward(sum(ops.aten.sum(y) for (_, y) in outs))
    for (i, (p, r)) in enumerate(zip(a1, a2))
        p isa Tensor && requires_grad(p) || continue
        gp, gr = grad(p), grad(r)
        (gp === nothing) == (gr === nothing) ||
            throw(AssertionError("gradient of argument $i: only one of $q and its twin has one"))
        gp === nothing || _compare_twin("gradient of argument $i", q, gp, gr, rtol, atol)
    end
    return nothing
end

function _compare_twin(what, q, x, y, rtol, atol)
    if x isa Tensor
        y isa Tensor || throw(AssertionError("$what: a Tensor, the twin's a $(typeof(y))"))
        size(x) == size(y) ||
            throw(AssertionError("$what: shape $(size(x)), twin $(size(y))"))
        xs = vec(Array{Float64}(Array(detach(x))))
        ys = vec(Array{Float64}(Array(detach(y))))
        bad, diff = false, 0.0
        for (p, r) in zip(xs, ys)
            d = abs(p - r)
            bad |= d > atol + rtol * abs(r) || isnan(p) != isnan(r)
            isnan(d) || (diff = max(diff, d))
        end
        bad && throw(AssertionError("$what of $q and its twin differ by up to $diff"))
    elseif !isequal(x, y)
        throw(AssertionError("$what: $(repr(x)), twin $(repr(y))"))
    end
    return nothing
end

# ---- trampolines -------------------------------------------------------------------

function _kernel_state(ctx::Ptr{Cvoid})
    id = UInt(unsafe_load(Ptr{Int64}(ct_tensor_data_ptr(ctx))))
    # Always locked: `nthreads() == 1` does not mean one thread (Julia >= 1.9's
    # interactive threads are not counted), and uncontended it costs ~20 ns.
    lock(_ROOTS_LOCK)
    try
        return _ROOTS[id]::_KernelState
    finally
        unlock(_ROOTS_LOCK)
    end
end

_borrowed_values(vals::Ptr{Ptr{Cvoid}}, n::Csize_t) =
    Any[from_value(unsafe_load(vals, i); own = false) for i in 1:Int(n)]

function _kernel_failed(state, e, bt)
    what = state === nothing ? "Julia kernel" : state.name
    msg = try
        "Julia exception in $what: " * sprint(showerror, e)
    catch
        "Julia exception in $what (message unavailable)"
    end
    msg = replace(msg, '\0' => ' ')
    _record_callback_error(e, bt, msg)
    return ct_set_error(CT_ERR_CALLBACK, msg)
end

# Each kernel call runs in a scope of its own (see `withscope`): the handles
# made during the call (the arguments', the result's once ctorch holds it as
# a value, temporaries) are freed when it returns, not left to the GC, which
# kept a 1M-float result's 4 MB alive per call. `keep!` keeps one.
_open_kernel_scope() = _push_scope!()

function _close_kernel_scope(made::Vector{Any})
    ts = _task_scopes()
    popped = _pop_scope!(ts, made)
    for x in made
        _finalize(x)
    end
    popped ? _give_scope_list(made, ts) : empty!(made)
    return nothing
end

# The frame of every trampoline: the kernel's state and scope, and any Julia
# exception turned into a status (never unwound through C).
function _kernel_call(body, ctx::Ptr{Cvoid})::Int32
    state = nothing
    made = _open_kernel_scope()
    try
        state = _kernel_state(ctx)
        return body(state, made)
    catch e
        return _kernel_failed(state, e, catch_backtrace())
    finally
        _close_kernel_scope(made)
    end
end

function _op_kernel_trampoline(ctx::Ptr{Cvoid}, args::Ptr{Ptr{Cvoid}}, n::Csize_t,
                               out::Ptr{Ptr{Cvoid}})::Int32
    unsafe_store!(out, C_NULL)
    return _kernel_call(ctx) do state, made
        res = state.f(_borrowed_values(args, n)...)
        res isa AbstractArray && !(res isa Tensor) &&
            throw(ArgumentError("the kernel returned a $(typeof(res)); return a Tensor " *
                                "(CTorch.tensor(A) copies an Array, Tensor(A) wraps it)"))
        unsafe_store!(out, _new_value(res))
        CT_OK
    end
end

# f on the borrowed input tensors; up to three without a Vector and a splat.
function _call_on_tensors(f, inputs::Ptr{Ptr{Cvoid}}, n::Int)
    t(i) = _borrowed_tensor(unsafe_load(inputs, i))
    n == 1 && return f(t(1))
    n == 2 && return f(t(1), t(2))
    n == 3 && return f(t(1), t(2), t(3))
    return f(_borrowed_tensors(inputs, Csize_t(n))...)
end

function _op_tensor_kernel_trampoline(ctx::Ptr{Cvoid}, inputs::Ptr{Ptr{Cvoid}}, n_in::Csize_t,
                                      outputs::Ptr{Ptr{Cvoid}}, n_out::Csize_t)::Int32
    return _kernel_call(ctx) do state, made
        res = _call_on_tensors(state.f, inputs, Int(n_in))
        outs = res isa Tensor ? (res,) : res isa Tuple ? res :
            throw(ArgumentError("the kernel returned a $(typeof(res)); return a Tensor " *
                                "(CTorch.tensor(A) copies an Array, Tensor(A) wraps it)"))
        length(outs) == n_out ||
            throw(ArgumentError("the kernel returned $(length(outs)) results, expected $(Int(n_out))"))
        for i in 1:Int(n_out)
            o = outs[i]
            o isa Tensor ||
                throw(ArgumentError("result $i is a $(typeof(o)); expected a Tensor"))
            if o.ptr != C_NULL && any(m -> m === o, made)
                # Made in this call and not kept: hand its handle over as is.
                unsafe_store!(outputs, o.ptr, i)
                o.ptr = C_NULL
            else
                _store_new_handle!(outputs, i, o)
            end
        end
        CT_OK
    end
end

function _op_backward_trampoline(ctx::Ptr{Cvoid}, args::Ptr{Ptr{Cvoid}}, n_args::Csize_t,
                                 result::Ptr{Cvoid}, grads::Ptr{Ptr{Cvoid}}, n_out::Csize_t,
                                 grad_inputs::Ptr{Ptr{Cvoid}})::Int32
    return _kernel_call(ctx) do state, made
        xs = Tuple(_borrowed_values(args, n_args))
        r = from_value(result; own = false)
        gs = Tuple(_borrowed_tensors(grads, n_out))
        res = state.f(xs, r, gs)
        gins = (n_args == 1 && (res isa Tensor || res === nothing)) ? (res,) : Tuple(res)
        length(gins) == n_args ||
            throw(ArgumentError("backward returned $(length(gins)) gradients, expected $(Int(n_args)) " *
                                "(one per argument)"))
        for i in 1:Int(n_args)
            xs[i] isa Tensor || continue
            g = gins[i]
            g === nothing || g isa Tensor ||
                throw(ArgumentError("gradient $i is a $(typeof(g)); expected a Tensor or nothing"))
            _store_new_handle!(grad_inputs, i, g)
        end
        CT_OK
    end
end

const _OPK_CFUNC = Ref{Ptr{Cvoid}}(C_NULL)
const _OPB_CFUNC = Ref{Ptr{Cvoid}}(C_NULL)
const _OPT_CFUNC = Ref{Ptr{Cvoid}}(C_NULL)

function _init_op_callbacks!()
    # the C signatures come from the header (capi_generated.jl's macros)
    _OPK_CFUNC[] = @ct_op_fn(_op_kernel_trampoline)
    _OPT_CFUNC[] = @ct_tensor_kernel_fn(_op_tensor_kernel_trampoline)
    _OPB_CFUNC[] = @ct_op_backward_fn(_op_backward_trampoline)
    return nothing
end
