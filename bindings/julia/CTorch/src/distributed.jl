# Distributed training as torch.distributed has it (ct_store_*,
# ct_process_group_*, the collectives, ct_work_*, ct_ddp_*), over LibTorch's
# own engine (c10d; backend "gloo" on the CPU, "nccl" with CUDA). Julia ranks,
# C ranks, Python ranks through ctorch and PyTorch's own Python ranks (same
# LibTorch version) form one group.
#
# Blocking. A collective (and a rendezvous, a store `get`, `wait(work)`) is a
# plain ccall: it blocks the Julia thread that makes it until it is done or
# its timeout runs out (Julia 1.5 cannot yield during a ccall). Other Julia
# threads go on, but the garbage collector waits for the call to return.
# Every wait ends by its timeout, with a CTorchError (CT_ERR_TIMEOUT, or
# CT_ERR_IO when a peer's connection broke) naming this rank and the
# operation: a peer that died never hangs the others.
#
# Handles (Store, ProcessGroup, Work, DistributedDataParallel) are freed by
# finalizers, or at once with `close`/`free!`. Finalizers only call the
# non-yielding ct_*_free. Ranks are torch's: 0-based numbers (as MPI.jl's),
# while lists indexed by rank (`all_gather!`'s outputs) are Julia vectors:
# rank r is element r + 1.

"""
    CTorch.Distributed

torch.distributed for CTorch tensors (c10d through libctorch): stores,
process groups, collectives, point-to-point, and data-parallel training.

```julia
using CTorch, CTorch.Distributed
const dist = CTorch.Distributed
pg = init_process_group()                    # under torchrun: MASTER_ADDR, RANK, ... (env://)
t = CTorch.ones(4)
all_reduce!(pg, t)                           # in place: the sum over the ranks
dist.rank(pg), world_size(pg)
ddp = DistributedDataParallel(pg, model)     # a ScriptModule; or (f, pg, params)
loss = lossfn(ddp(x), y); backward(loss)     # gradients averaged while backward runs
```

`rank` is not exported (LinearAlgebra exports one): write `Distributed.rank(pg)`.
"""
module Distributed

using ..CTorch: CTorch, P, Tensor, ScriptModule, CTorchError, check,
                named_parameters, named_buffers, requires_grad, empty_like, _param_vector, _ptrs,
                CT_ERR_INVALID_ARGUMENT, CT_ERR_NOT_SUPPORTED,
                CT_REDUCE_SUM, CT_REDUCE_AVG, CT_REDUCE_PRODUCT, CT_REDUCE_MIN, CT_REDUCE_MAX,
                CT_REDUCE_BAND, CT_REDUCE_BOR, CT_REDUCE_BXOR,
                CT_DDP_FIND_UNUSED, CT_DDP_GRAD_AS_BUCKET_VIEW,
                ct_free, ct_distributed_is_compiled, ct_distributed_has_backend,
                ct_store_new_tcp, ct_store_new_file, ct_store_new_prefix, ct_store_port,
                ct_store_set, ct_store_get, ct_store_add, ct_store_free, ct_process_group_new,
                ct_process_group_new_from_env, ct_process_group_new_from_url,
                ct_process_group_new_subgroup,
                ct_process_group_rank, ct_process_group_size, ct_process_group_free,
                ct_process_group_all_reduce, ct_process_group_broadcast,
                ct_process_group_all_gather, ct_process_group_reduce_scatter,
                ct_process_group_all_to_all, ct_process_group_barrier, ct_process_group_send,
                ct_process_group_recv, ct_work_wait, ct_work_is_completed, ct_work_source_rank,
                ct_work_free, ct_ddp_new, ct_ddp_new_module, ct_ddp_prepare_backward, ct_ddp_free
import ..CTorch: free!, isfreed, _cfree
using ..CTorch: _Handle, _own

export is_available, is_gloo_available, is_nccl_available, Store, TCPStore, FileStore, PrefixStore, port, add!,
       ProcessGroup, init_process_group, new_group, world_size,
       all_reduce!, all_gather!, all_gather, reduce_scatter!, all_to_all!, barrier,
       send, recv!, Work, is_completed, source_rank,
       DistributedDataParallel, DDP, prepare_backward!, parameters

"torch.distributed's default process-group timeout (30 minutes), in seconds."
const DEFAULT_TIMEOUT = 1800.0
"torch.distributed.TCPStore's default timeout (300 s)."
const STORE_TIMEOUT = 300.0

"Whether this libctorch was built with LibTorch's distributed engine (c10d)."
is_available() = ct_distributed_is_compiled() == 1
"Whether backend \"gloo\" (CPU tensors) is in this libctorch."
is_gloo_available() = ct_distributed_has_backend("gloo") == 1
"Whether backend \"nccl\" (CUDA tensors) is in this libctorch (a group also needs a CUDA device)."
is_nccl_available() = ct_distributed_has_backend("nccl") == 1

@noinline _invalid(msg::AbstractString) = throw(CTorchError(CT_ERR_INVALID_ARGUMENT, msg))

_seconds(t::Real) = Float64(t)
_seconds(::Nothing) = 0.0           # the C default (the group's timeout)

_i32(x::Integer, what) = typemin(Int32) <= x <= typemax(Int32) ? Int32(x) :
    _invalid("$what $x is out of range")

# ---- handle types ---------------------------------------------------------------

# Their lifecycle (free!, isfreed, close, the finalizer) is CTorch._Handle's
# (handles.jl); each type names its C free function (_cfree, below).
CTorch._handle_name(x::_Handle) = "Distributed." * string(nameof(typeof(x)))
Base.copy(x::_Handle) = throw(ArgumentError("a $(nameof(typeof(x))) is a live connection and cannot be copied"))
Base.deepcopy_internal(x::_Handle, ::IdDict) = copy(x)

# ---- stores ---------------------------------------------------------------------

"""
    Store

A key-value store the ranks meet at (c10d's Store): made by [`TCPStore`](@ref),
[`FileStore`](@ref) or [`PrefixStore`](@ref). `store[key] = value` (a `String`
or bytes), `store[key]` (the bytes, as `Vector{UInt8}`; waits until the key
is set, up to the store's timeout), [`add!`](@ref)`(store, key, n)`.
"""
mutable struct Store <: _Handle
    ptr::P
    kind::Symbol
    Store(p::P, kind::Symbol) = _own(new(p, kind))
end

"""
    TCPStore(host, port; world_size = nothing, is_master = false, timeout = 300)

c10d's TCPStore (torch.distributed.TCPStore's arguments): `is_master = true`
runs the store server on `port` (`0`: any free port, read it with
[`port`](@ref)) and connects to it; otherwise it connects to `host:port`,
retrying until `timeout` (seconds), which is also the store's default wait.
`world_size`: the number of ranks that will connect (`nothing`: unknown).
The master's server stops when its handle is freed (a process group made
from it keeps it alive).
"""
function TCPStore(host::AbstractString, port::Integer; world_size::Union{Integer,Nothing} = nothing,
                  is_master::Bool = false, timeout::Real = STORE_TIMEOUT)
    out = Ref{P}(C_NULL)
    ws = world_size === nothing ? Int32(-1) : _i32(world_size, "world_size")
    check(ct_store_new_tcp(out, String(host), _i32(port, "port"), Int32(is_master), ws, _seconds(timeout)))
    return Store(out[], :tcp)
end

"""
    FileStore(path, world_size = 1; timeout = 300)

c10d's FileStore on a file every rank can reach (created if missing; removed
when the last of `world_size` ranks frees its store). A read of a missing key
fails after `timeout` seconds.
"""
function FileStore(path::AbstractString, world_size::Integer = 1; timeout::Real = 300)
    out = Ref{P}(C_NULL)
    check(ct_store_new_file(out, String(path), _i32(world_size, "world_size"), _seconds(timeout)))
    return Store(out[], :file)
end

"""
    PrefixStore(prefix, store)

A view of `store` whose keys all start with `prefix * "/"` (torch's argument
order). The view keeps `store` alive.
"""
function PrefixStore(prefix::AbstractString, store::Store)
    out = Ref{P}(C_NULL)
    check(ct_store_new_prefix(out, store, String(prefix)))
    return Store(out[], :prefix)
end

"The port a TCP store listens on (master) or connects to."
port(s::Store) = (r = Ref{Int32}(0); check(ct_store_port(r, s)); Int(r[]))

function Base.setindex!(s::Store, value::Union{AbstractString,AbstractVector{UInt8}}, key::AbstractString)
    data = value isa AbstractString ? Vector{UInt8}(String(value)) : Vector{UInt8}(value)
    check(ct_store_set(s, String(key), data, length(data)))
    return s
end

function Base.getindex(s::Store, key::AbstractString)
    data = Ref{Ptr{Cvoid}}(C_NULL)
    n = Ref{Csize_t}(0)
    check(ct_store_get(data, n, s, String(key)))
    buf = Vector{UInt8}(undef, n[])
    GC.@preserve buf unsafe_copyto!(pointer(buf), Ptr{UInt8}(data[]), n[])
    ct_free(data[])
    return buf
end

"""
    add!(store, key, n = 1) -> Int

Adds `n` to the integer under `key` (created as 0) and returns the new value.
"""
function add!(s::Store, key::AbstractString, n::Integer = 1)
    r = Ref{Int64}(0)
    check(ct_store_add(r, s, String(key), Int64(n)))
    return Int(r[])
end

function Base.show(io::IO, s::Store)
    if isfreed(s)
        print(io, "Store(<freed>)")
    elseif s.kind === :tcp
        print(io, "TCPStore(port ", port(s), ")")
    else
        print(io, s.kind === :file ? "FileStore" : "PrefixStore", "()")
    end
end

# ---- process groups --------------------------------------------------------------

"""
    ProcessGroup

A group of ranks (c10d's ProcessGroup): [`init_process_group`](@ref),
[`new_group`](@ref); `Distributed.rank(pg)`, [`world_size`](@ref)`(pg)`.
Free it on every rank once its collectives are done (`close(pg)`, or the
finalizer); work still in flight finishes or fails.
"""
mutable struct ProcessGroup <: _Handle
    ptr::P
    ProcessGroup(p::P) = _own(new(p))
end

_backend(b::Union{AbstractString,Symbol}) = String(b)

"""
    ProcessGroup(store; rank, world_size, backend = "gloo", timeout = 1800)

What `torch.distributed.init_process_group(backend, store=store, rank=rank,
world_size=world_size, timeout=timeout)` makes, including its start-up
barrier: returns once all `world_size` ranks have joined (every rank calls
it), or throws after `timeout` seconds saying how many came. The group keeps
`store` alive.
"""
function ProcessGroup(store::Store; rank::Integer, world_size::Integer,
                      backend::Union{AbstractString,Symbol} = "gloo", timeout::Real = DEFAULT_TIMEOUT)
    out = Ref{P}(C_NULL)
    check(ct_process_group_new(out, store, _backend(backend), _i32(rank, "rank"),
                               _i32(world_size, "world_size"), _seconds(timeout)))
    return ProcessGroup(out[])
end

"""
    init_process_group(; backend = "gloo", store = nothing, rank = -1, world_size = -1,
                       timeout = 1800, init_method = nothing) -> ProcessGroup

torch.distributed.init_process_group, returning the group:

- with `store` (and `rank`, `world_size`): [`ProcessGroup`](@ref)`(store; ...)`;
- without (or `init_method = "env://"`): from torchrun's environment
  (`MASTER_ADDR`, `MASTER_PORT`, and `RANK`, `WORLD_SIZE` where `rank`,
  `world_size` are -1; rank 0 runs the store, or all join torchrun's agent store);
- `init_method = "tcp://host:port"` or `"file:///path"` (with `rank`,
  `world_size`, or `?rank=R&world_size=N` in the URL): rank 0 runs the TCP store,
  or a FileStore on a shared file. The store layout is torch's, so PyTorch ranks
  given the same URL join the same group.

Every rank calls it; it returns when all have joined. Timeouts in seconds.
"""
function init_process_group(; backend::Union{AbstractString,Symbol} = "gloo", store::Union{Store,Nothing} = nothing,
                            rank::Integer = -1, world_size::Integer = -1, timeout::Real = DEFAULT_TIMEOUT,
                            init_method::Union{AbstractString,Nothing} = nothing)
    if store !== nothing
        init_method === nothing || _invalid("init_process_group: give store or init_method, not both")
        return ProcessGroup(store; rank = rank, world_size = world_size, backend = backend, timeout = timeout)
    end
    out = Ref{P}(C_NULL)
    url = init_method === nothing ? "env://" : String(init_method)
    check(ct_process_group_new_from_url(out, url, _backend(backend), _i32(rank, "rank"),
                                        _i32(world_size, "world_size"), _seconds(timeout)))
    return ProcessGroup(out[])
end

"""
    new_group(pg, ranks = 0:world_size(pg)-1; timeout = nothing) -> Union{ProcessGroup,Nothing}

torch.distributed.new_group: a group of the given ranks of `pg` (0-based, each
once, any order; the subgroup's rank `i` is the `i+1`-th smallest of them).
Every rank of `pg` calls it, members or not; non-members get `nothing`.
`timeout` (seconds): `nothing` for `pg`'s.
"""
function new_group(pg::ProcessGroup, ranks = 0:world_size(pg)-1; timeout::Union{Real,Nothing} = nothing)
    rs = Int32[_i32(r, "rank") for r in ranks]
    out = Ref{P}(C_NULL)
    check(ct_process_group_new_subgroup(out, pg, rs, length(rs), _seconds(timeout)))
    return out[] == C_NULL ? nothing : ProcessGroup(out[])
end

"This rank in `pg` (0-based, as in torch and MPI). Not exported: LinearAlgebra has a `rank`."
rank(pg::ProcessGroup) = Int(ct_process_group_rank(pg))
"The number of ranks in `pg`."
world_size(pg::ProcessGroup) = Int(ct_process_group_size(pg))

Base.show(io::IO, pg::ProcessGroup) = isfreed(pg) ? print(io, "ProcessGroup(<freed>)") :
    print(io, "ProcessGroup(rank ", rank(pg), " of ", world_size(pg), ")")

# ---- work ------------------------------------------------------------------------

"""
    Work

An operation started with `async = true`. `wait(w; timeout)` before reading
or writing its tensors (it throws the operation's error; a wait that runs
out throws `CT_ERR_TIMEOUT` and the operation goes on); `is_completed(w)`
(`isready(w)`) never blocks; `source_rank(w)` after a receive from any rank.
The tensors stay alive until the work ends, even if `w` is freed.
"""
mutable struct Work <: _Handle
    ptr::P
    keep::Any          # the Julia objects of the tensors in use
    Work(p::P, keep) = _own(new(p, keep))
end

"""
    wait(w::Work; timeout = nothing)

Waits until the operation is done (`timeout` seconds; `nothing`: the group's
timeout) and throws its error if it failed (again on every later wait).
"""
function Base.wait(w::Work; timeout::Union{Real,Nothing} = nothing)
    check(ct_work_wait(w, _seconds(timeout)))
    return nothing
end

"`true` once the operation has finished, successfully or not (then `wait` returns at once)."
is_completed(w::Work) = (r = Ref{Int32}(0); check(ct_work_is_completed(r, w)); r[] == 1)
Base.isready(w::Work) = is_completed(w)

"The rank a completed receive from any rank (`recv!(pg, t)`) came from."
source_rank(w::Work) = (r = Ref{Int32}(0); check(ct_work_source_rank(r, w)); Int(r[]))

Base.show(io::IO, w::Work) = print(io, "Work(", isfreed(w) ? "<freed>" : is_completed(w) ? "completed" : "running", ")")

# ---- collectives -----------------------------------------------------------------

const _OPS = Dict{Symbol,Int32}(
    :sum => CT_REDUCE_SUM, :avg => CT_REDUCE_AVG, :product => CT_REDUCE_PRODUCT,
    :prod => CT_REDUCE_PRODUCT, :min => CT_REDUCE_MIN, :max => CT_REDUCE_MAX,
    :band => CT_REDUCE_BAND, :bor => CT_REDUCE_BOR, :bxor => CT_REDUCE_BXOR)

_op(op::Symbol) = (c = get(_OPS, op, nothing); c === nothing ?
    _invalid("unknown reduction $(repr(op)); one of $(join(sort!(collect(keys(_OPS))), ", ")), " *
             "or +, *, min, max, &, |, xor") : c)
_op(op::AbstractString) = _op(Symbol(lowercase(op)))
_op(op::Integer) = _i32(op, "reduction code")
_op(::typeof(+)) = CT_REDUCE_SUM
_op(::typeof(*)) = CT_REDUCE_PRODUCT
_op(::typeof(min)) = CT_REDUCE_MIN
_op(::typeof(max)) = CT_REDUCE_MAX
_op(::typeof(&)) = CT_REDUCE_BAND
_op(::typeof(|)) = CT_REDUCE_BOR
_op(::typeof(xor)) = CT_REDUCE_BXOR
_op(op) = _invalid("unknown reduction $(repr(op))")

# start(work_out) makes the C call. Blocking: work_out is NULL and the result is
# `done`; async: a Work keeping `keep` alive.
function _run(start, keep, async::Bool, done)
    if !async
        check(start(Ptr{P}(C_NULL)))
        return done
    end
    out = Ref{P}(C_NULL)
    check(start(out))
    return Work(out[], keep)
end

function _tensor_list(pg::ProcessGroup, ts, what)
    v = Tensor[t for t in ts]
    n = world_size(pg)
    length(v) == n || _invalid("$what has $(length(v)) tensors, the group $n ranks")
    return v
end

"""
    all_reduce!(pg, t; op = :sum, async = false) -> t (or a Work)

`t` becomes the reduction of every rank's `t`, in place. `op`: `:sum`,
`:avg`, `:product`, `:min`, `:max`, `:band`, `:bor`, `:bxor` (or `+`, `*`,
`min`, `max`, `&`, `|`, `xor`). Tensors must be dense and contiguous (for
torch) with the same dtype and size on every rank. `async = true` returns a
[`Work`](@ref) at once: `wait` for it before using `t`.
"""
function all_reduce!(pg::ProcessGroup, t::Tensor; op = :sum, async::Bool = false)
    code = _op(op)
    return _run(w -> ct_process_group_all_reduce(w, pg, t, code), t, async, t)
end

"""
    broadcast!(pg, t, root; async = false) -> t (or a Work)

`t` becomes rank `root`'s `t` on every rank (torch's `broadcast(t, src=root)`).
"""
Base.broadcast!(pg::ProcessGroup, t::Tensor, root::Integer; async::Bool = false) =
    _run(w -> ct_process_group_broadcast(w, pg, t, _i32(root, "root")), t, async, t)

"""
    all_gather!(pg, outs, t; async = false) -> outs (or a Work)

`outs[r+1]` becomes rank `r`'s `t` (`outs`: `world_size(pg)` tensors like `t`).
"""
function all_gather!(pg::ProcessGroup, outs::AbstractVector, t::Tensor; async::Bool = false)
    os = _tensor_list(pg, outs, "outs")
    ptrs = _ptrs(os)
    return GC.@preserve os _run(w -> ct_process_group_all_gather(w, pg, ptrs, t), (os, t), async, outs)
end

"""
    all_gather(pg, t) -> Vector{Tensor}

Every rank's `t`, in rank order (new tensors).
"""
all_gather(pg::ProcessGroup, t::Tensor) =
    all_gather!(pg, Tensor[empty_like(t) for _ in 1:world_size(pg)], t)

"""
    reduce_scatter!(pg, out, ins; op = :sum, async = false) -> out (or a Work)

`out` becomes the reduction over the ranks of their `ins[rank(pg)+1]`
(`ins`: `world_size(pg)` tensors like `out`).
"""
function reduce_scatter!(pg::ProcessGroup, out::Tensor, ins::AbstractVector; op = :sum, async::Bool = false)
    is = _tensor_list(pg, ins, "ins")
    code = _op(op)
    ptrs = _ptrs(is)
    return GC.@preserve is _run(w -> ct_process_group_reduce_scatter(w, pg, out, ptrs, code), (out, is), async, out)
end

"""
    all_to_all!(pg, outs, ins; async = false) -> outs (or a Work)

`outs[r+1]` becomes rank `r`'s `ins[rank(pg)+1]` (`world_size(pg)` tensors each).
"""
function all_to_all!(pg::ProcessGroup, outs::AbstractVector, ins::AbstractVector; async::Bool = false)
    os = _tensor_list(pg, outs, "outs")
    is = _tensor_list(pg, ins, "ins")
    po, pi = _ptrs(os), _ptrs(is)
    return GC.@preserve os is _run(w -> ct_process_group_all_to_all(w, pg, po, pi), (os, is), async, outs)
end

"""
    barrier(pg; async = false)

Returns (or the Work completes) once every rank of `pg` has reached it.
"""
barrier(pg::ProcessGroup; async::Bool = false) = _run(w -> ct_process_group_barrier(w, pg), nothing, async, nothing)

"""
    send(pg, t, dst; tag = 0, async = false)

Sends `t` to rank `dst`; a matching [`recv!`](@ref) (same `tag`) receives it.
"""
send(pg::ProcessGroup, t::Tensor, dst::Integer; tag::Integer = 0, async::Bool = false) =
    _run(w -> ct_process_group_send(w, pg, t, _i32(dst, "dst"), _i32(tag, "tag")), t, async, nothing)

"""
    recv!(pg, t, src = nothing; tag = 0, async = false) -> the source rank (or a Work)

Receives into `t` from rank `src` (`nothing`: from any rank); returns the
rank it came from. With `async = true`: a Work; `source_rank(w)` after `wait(w)`.
"""
function recv!(pg::ProcessGroup, t::Tensor, src::Union{Integer,Nothing} = nothing;
               tag::Integer = 0, async::Bool = false)
    s = src === nothing ? Int32(-1) : _i32(src, "src")
    w = _run(w -> ct_process_group_recv(w, pg, t, s, _i32(tag, "tag")), t, true, nothing)
    async && return w
    try
        wait(w)
        return src === nothing ? source_rank(w) : Int(src)
    finally
        close(w)
    end
end

# ---- data parallel ---------------------------------------------------------------

"""
    ddp = DistributedDataParallel(pg, m::ScriptModule; bucket_mb = 25,
                                  find_unused_parameters = false, gradient_as_bucket_view = false)
    ddp = DistributedDataParallel(f, pg, params; buffers = Tensor[], ...)   # f: the forward
    ddp = DistributedDataParallel(pg, params; buffers = Tensor[], ...)      # no forward
    DDP(...)                                                                 # the same

torch.nn.parallel.DistributedDataParallel over c10d's Reducer. Made on every
rank of `pg` (collective): rank 0's parameters and buffers are copied into
every rank's (in place). Then each step:

```julia
out = ddp(x)                  # the forward (m(x) or f(x)), then prepare_backward!
loss = lossfn(out, y)
backward(loss)                # gradients all-reduced (averaged) in buckets while it runs
step!(opt); zero_grad!(opt)
```

Without a forward, call [`prepare_backward!`](@ref)`(ddp, outputs)` with the
forward's outputs before each `backward`. `params`: tensors that require
grad (used in place), in the same order with the same sizes on every rank.
`find_unused_parameters = true` allows parameters that get no gradient in a
step. Keep `ddp` referenced while training (freeing it during a backward is
not allowed); `parameters(ddp)` are the parameters it reduces.
"""
mutable struct DistributedDataParallel{F} <: _Handle
    ptr::P
    group::ProcessGroup
    forward::F
    params::Vector{Tensor}
    buffers::Vector{Tensor}
    DistributedDataParallel{F}(p::P, pg, f::F, ps, bs) where {F} = _own(new{F}(p, pg, f, ps, bs))
end
const DDP = DistributedDataParallel

_cfree(::Store) = ct_store_free
_cfree(::ProcessGroup) = ct_process_group_free
_cfree(::Work) = ct_work_free
_cfree(::DistributedDataParallel) = ct_ddp_free

_flags(find_unused::Bool, as_view::Bool) =
    (find_unused ? CT_DDP_FIND_UNUSED : Int32(0)) | (as_view ? CT_DDP_GRAD_AS_BUCKET_VIEW : Int32(0))

function DistributedDataParallel(pg::ProcessGroup, m::ScriptModule; bucket_mb::Real = 25,
                                 find_unused_parameters::Bool = false, gradient_as_bucket_view::Bool = false)
    out = Ref{P}(C_NULL)
    check(ct_ddp_new_module(out, pg, m, Float64(bucket_mb), _flags(find_unused_parameters, gradient_as_bucket_view)))
    ps = Tensor[t for t in values(named_parameters(m)) if requires_grad(t)]
    bs = Tensor[t for t in values(named_buffers(m))]
    return DistributedDataParallel{ScriptModule}(out[], pg, m, ps, bs)
end

function DistributedDataParallel(f, pg::ProcessGroup, params; buffers = Tensor[], bucket_mb::Real = 25,
                                 find_unused_parameters::Bool = false, gradient_as_bucket_view::Bool = false)
    ps = _param_vector(params)
    bs = _param_vector(buffers)
    pp, pb = _ptrs(ps), _ptrs(bs)
    out = Ref{P}(C_NULL)
    GC.@preserve ps bs check(ct_ddp_new(out, pg, pp, length(pp), pb, length(pb), Float64(bucket_mb),
                                        _flags(find_unused_parameters, gradient_as_bucket_view)))
    return DistributedDataParallel{typeof(f)}(out[], pg, f, ps, bs)
end

DistributedDataParallel(pg::ProcessGroup, params; kw...) = DistributedDataParallel(nothing, pg, params; kw...)

"The parameters `ddp` reduces (the module's that require grad, or those given)."
parameters(ddp::DistributedDataParallel) = copy(ddp.params)

"""
    prepare_backward!(ddp, outputs) -> ddp

Before each `backward`: `outputs` are the forward's results (a `Tensor`, or
tensors inside tuples, named tuples, arrays, dicts; `nothing` for none, which
needs `find_unused_parameters`). Calling `ddp(args...)` does this for you.
"""
function prepare_backward!(ddp::DistributedDataParallel, outputs)
    ts = Tensor[]
    _collect_tensors!(ts, outputs)
    pt = _ptrs(ts)
    GC.@preserve ts check(ct_ddp_prepare_backward(ddp, pt, length(pt)))
    return ddp
end

_collect_tensors!(ts, x::Tensor) = push!(ts, x)
_collect_tensors!(ts, x::Union{Tuple,NamedTuple,AbstractArray}) = (for v in x; _collect_tensors!(ts, v); end; ts)
_collect_tensors!(ts, x::AbstractDict) = (for v in values(x); _collect_tensors!(ts, v); end; ts)
_collect_tensors!(ts, x::Pair) = (_collect_tensors!(ts, x.second); ts)
_collect_tensors!(ts, x) = ts

"""
    ddp(args...; kw...)

The wrapped forward (`m(args...)` or `f(args...)`), then
[`prepare_backward!`](@ref) with its result, which it returns.
"""
function (ddp::DistributedDataParallel)(args...; kw...)
    ddp.forward === nothing && _invalid("this DistributedDataParallel was made without a forward; " *
        "call prepare_backward!(ddp, outputs) before backward, or make it with DDP(f, pg, params)")
    out = ddp.forward(args...; kw...)
    prepare_backward!(ddp, out)
    return out
end

Base.show(io::IO, ddp::DistributedDataParallel) = isfreed(ddp) ? print(io, "DistributedDataParallel(<freed>)") :
    print(io, "DistributedDataParallel(", length(ddp.params), " parameters, ", ddp.group, ")")

end # module Distributed
