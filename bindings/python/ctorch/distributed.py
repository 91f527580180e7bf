"""Distributed training as ``torch.distributed`` has it (C: ct_store_*,
ct_process_group_*, ct_process_group_all_reduce ..., ct_ddp_*), over LibTorch's own engine
(c10d, backend Gloo on the CPU). Ranks using this module, C and Julia ranks,
and PyTorch's own Python ranks (same LibTorch version) join one group::

    import ctorch.distributed as dist
    dist.init_process_group("gloo")              # under torchrun: env://
    t = ctorch.ones(4); dist.all_reduce(t)       # in place, like torch
    model = dist.DistributedDataParallel(module) # gradients averaged during backward

Every wait ends by the group's timeout: a peer that dies or never comes
raises ``TimeoutError`` (``ctorch.Error``) or ``OSError`` naming this rank and
the operation, never hangs. Collectives release the GIL while they wait."""

from ctypes import byref, c_int32, c_int64, c_size_t, c_void_p
from datetime import timedelta
from typing import Any, List, Optional, Sequence, Union

from . import _release
from ._lib import C, G, InvalidArgumentError, check, take_buffer

__all__ = ["ReduceOp", "Store", "TCPStore", "FileStore", "PrefixStore", "ProcessGroup", "Work",
           "is_available", "is_gloo_available", "is_nccl_available", "init_process_group", "is_initialized", "destroy_process_group",
           "new_group", "get_rank", "get_world_size", "all_reduce", "broadcast", "all_gather",
           "reduce_scatter", "all_to_all", "barrier", "send", "recv", "isend", "irecv",
           "DistributedDataParallel"]

Timeout = Union[timedelta, float, int]
_DEFAULT_TIMEOUT = timedelta(minutes=30)  # torch.distributed's default_pg_timeout


def _seconds(t: Optional[Timeout], default: Optional[Timeout] = None) -> float:
    t = default if t is None else t
    if t is None:
        return 0.0
    return t.total_seconds() if isinstance(t, timedelta) else float(t)


def is_available() -> bool:
    """Whether this libctorch has LibTorch's distributed engine."""
    return bool(G.distributed_is_compiled())


def is_gloo_available() -> bool:
    """Whether backend "gloo" (CPU tensors) is in this libctorch."""
    return bool(G.distributed_has_backend(b"gloo"))


def is_nccl_available() -> bool:
    """Whether backend "nccl" (CUDA tensors) is in this libctorch; a group
    also needs a CUDA device."""
    return bool(G.distributed_has_backend(b"nccl"))


class ReduceOp:
    """torch.distributed.ReduceOp's members, as the C codes (CT_REDUCE_*)."""
    SUM, AVG, PRODUCT, MIN, MAX, BAND, BOR, BXOR = range(8)


class _Handle(_release.Handle):
    __slots__ = ("_p", "__weakref__")
    _no_copy = "it is a live connection"


class Store(_Handle):
    """A key-value store the ranks meet at (c10d's Store)."""
    __slots__ = ()
    _free_c = G.store_free
    _handle_kind = "Store"

    def set(self, key: str, value: Union[str, bytes]) -> None:
        data = value.encode() if isinstance(value, str) else bytes(value)
        check(C.store_set(self._ptr(), key.encode(), data, len(data)))

    def get(self, key: str) -> bytes:
        """The value under key, waiting (up to the store's timeout) until it is set."""
        data, n = c_void_p(), c_size_t()
        check(C.store_get(byref(data), byref(n), self._ptr(), key.encode()))
        return take_buffer(data.value, n.value)

    def add(self, key: str, amount: int) -> int:
        out = c_int64()
        check(C.store_add(byref(out), self._ptr(), key.encode(), int(amount)))
        return out.value


def _store(p: Optional[int]) -> Store:
    s = Store.__new__(Store)
    s._p = p
    return s


def TCPStore(host_name: str, port: int, world_size: Optional[int] = None,
             is_master: bool = False, timeout: Timeout = timedelta(seconds=300)) -> Store:
    """c10d's TCPStore, with torch.distributed.TCPStore's arguments (port 0
    with is_master: any free port, see ``.port``)."""
    out = c_void_p()
    check(C.store_new_tcp(byref(out), host_name.encode(), int(port), int(bool(is_master)),
                          -1 if world_size is None else int(world_size), _seconds(timeout)))
    s = _store(out.value)
    return s


def _port(self: Store) -> int:
    out = c_int32()
    check(G.store_port(byref(out), self._ptr()))
    return out.value


Store.port = property(_port)  # type: ignore[attr-defined]


def FileStore(file_name: str, world_size: int = 1, timeout: float = 300.0) -> Store:
    """c10d's FileStore; a get of a missing key fails after `timeout` seconds."""
    out = c_void_p()
    check(C.store_new_file(byref(out), file_name.encode(), int(world_size), float(timeout)))
    return _store(out.value)


def PrefixStore(prefix: str, store: Store) -> Store:
    out = c_void_p()
    check(G.store_new_prefix(byref(out), store._ptr(), prefix.encode()))
    return _store(out.value)


class ProcessGroup(_Handle):
    """A group of ranks (c10d's ProcessGroup); ``rank()`` and ``size()`` (this
    rank in the group, as ``get_rank(group)``). As in torch.distributed, the
    ranks passed with a group (``src``, ``dst``) and returned by ``recv`` are
    global ranks (of the default group); ``ranks`` lists the group's members
    as global ranks, in group-rank order."""
    __slots__ = ("_ranks",)
    _ranks: Optional[List[int]]  # None: the default group (group ranks are global ones)

    # Without the GIL: freeing the last reference joins Gloo's worker
    # threads, and a worker may be dropping the last reference to a tensor
    # whose deleter takes the GIL (a numpy array's): a deadlock with it held.
    _free_c = C.process_group_free
    _handle_kind = "ProcessGroup"

    def rank(self) -> int:
        return int(G.process_group_rank(self._ptr()))

    def size(self) -> int:
        return int(G.process_group_size(self._ptr()))

    @property
    def ranks(self) -> List[int]:
        return list(range(self.size())) if self._ranks is None else list(self._ranks)

    def __repr__(self) -> str:
        if not self._p:
            return "<ProcessGroup (freed)>"
        return "<ProcessGroup rank %d of %d>" % (self.rank(), self.size())


def _group(p: Optional[int], ranks: Optional[List[int]] = None) -> Optional[ProcessGroup]:
    if not p:
        return None
    g = ProcessGroup.__new__(ProcessGroup)
    g._p = p
    g._ranks = ranks
    return g


def _group_rank(g: ProcessGroup, rank: int, what: str) -> int:
    """The group rank of global rank ``rank`` (torch.distributed's
    src/dst arguments are global ranks, also with a group)."""
    rank = int(rank)
    if g._ranks is None:
        return rank
    if rank not in g._ranks:
        raise InvalidArgumentError("%s %d is not a member of the group (its global ranks: %s)"
                                   % (what, rank, g._ranks))
    return g._ranks.index(rank)


def _global_rank(g: ProcessGroup, group_rank: int) -> int:
    return group_rank if g._ranks is None else g._ranks[group_rank]


class Work(_Handle):
    """An operation started with ``async_op=True``: ``wait()`` before reading
    the tensors; the tensors stay alive until it ends."""
    __slots__ = ("_keep",)
    _keep: List[Any]  # the tensors the operation uses, alive until it ends

    _free_c = C.work_free  # without the GIL: it may hold the group's last reference
    _handle_kind = "Work"

    def wait(self, timeout: Optional[Timeout] = None) -> bool:
        """Waits (default: the group's timeout); raises the operation's error."""
        check(C.work_wait(self._ptr(), _seconds(timeout)))
        return True

    def is_completed(self) -> bool:
        out = c_int32()
        check(G.work_is_completed(byref(out), self._ptr()))
        return bool(out.value)

    def source_rank(self) -> int:
        """The sender of a finished recv from any source, as a rank of the
        work's group (``recv`` returns it as a global rank)."""
        out = c_int32()
        check(G.work_source_rank(byref(out), self._ptr()))
        return out.value


# ---- the default group ------------------------------------------------------

_default: Optional[ProcessGroup] = None


def init_process_group(backend: str = "gloo", init_method: Optional[str] = None,
                       timeout: Timeout = _DEFAULT_TIMEOUT, world_size: int = -1, rank: int = -1,
                       store: Optional[Store] = None) -> None:
    """torch.distributed.init_process_group: with ``store`` (and rank, world_size), or an
    ``init_method`` URL, "env://" (the default: torchrun's environment), "tcp://host:port" or
    "file:///path" (with rank and world_size, or "?rank=R&world_size=N" in the URL); the
    store layout is torch's, so PyTorch ranks given the same URL join the same group."""
    global _default
    if _default is not None:
        raise RuntimeError("trying to initialize the default process group twice!")
    out = c_void_p()
    t = _seconds(timeout)
    if store is not None:
        check(C.process_group_new(byref(out), store._ptr(), backend.encode(), int(rank),
                                  int(world_size), t))
    else:
        url = "env://" if init_method is None else str(init_method)
        check(C.process_group_new_from_url(byref(out), url.encode(), backend.encode(), int(rank),
                                           int(world_size), t))
    _default = _group(out.value)


def is_initialized() -> bool:
    return _default is not None


def _pg(group: Optional[ProcessGroup]) -> ProcessGroup:
    g = group if group is not None else _default
    if g is None:
        raise RuntimeError("Default process group has not been initialized, please make sure "
                           "to call init_process_group.")
    return g


def destroy_process_group(group: Optional[ProcessGroup] = None) -> None:
    global _default
    g = _pg(group)
    if g is _default:
        _default = None
    g.free()


def new_group(ranks: Optional[Sequence[int]] = None,
              timeout: Optional[Timeout] = None) -> Optional[ProcessGroup]:
    """torch.distributed.new_group: every rank of the default group calls
    it; ranks that are not members get None."""
    g = _pg(None)
    rs = list(range(g.size())) if ranks is None else [int(r) for r in ranks]
    arr = (c_int32 * len(rs))(*rs)
    out = c_void_p()
    check(C.process_group_new_subgroup(byref(out), g._ptr(), arr, len(rs), _seconds(timeout)))
    return _group(out.value, sorted(rs))


def get_rank(group: Optional[ProcessGroup] = None) -> int:
    return _pg(group).rank()


def get_world_size(group: Optional[ProcessGroup] = None) -> int:
    return _pg(group).size()


# ---- collectives ------------------------------------------------------------

def _run(start: Any, keep: List[Any], async_op: bool) -> Optional[Work]:
    """start(work_out) calls C; blocking when async_op is False."""
    if not async_op:
        check(start(None))
        return None
    out = c_void_p()
    check(start(byref(out)))
    w = Work.__new__(Work)
    w._p = out.value
    w._keep = keep
    return w


def _arr(ts: Sequence[Any]) -> Any:
    return (c_void_p * len(ts))(*[t._ptr() for t in ts])


def all_reduce(tensor: Any, op: int = ReduceOp.SUM, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    return _run(lambda w: C.process_group_all_reduce(w, g._ptr(), tensor._ptr(), int(op)), [tensor], async_op)


def broadcast(tensor: Any, src: int, group: Optional[ProcessGroup] = None,
              async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    root = _group_rank(g, src, "src")
    return _run(lambda w: C.process_group_broadcast(w, g._ptr(), tensor._ptr(), root), [tensor], async_op)


def all_gather(tensor_list: List[Any], tensor: Any, group: Optional[ProcessGroup] = None,
               async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    if len(tensor_list) != g.size():
        raise ValueError("tensor_list has %d tensors, the group %d ranks"
                         % (len(tensor_list), g.size()))
    arr = _arr(tensor_list)
    return _run(lambda w: C.process_group_all_gather(w, g._ptr(), arr, tensor._ptr()),
                [tensor, list(tensor_list)], async_op)


def reduce_scatter(output: Any, input_list: List[Any], op: int = ReduceOp.SUM,
                   group: Optional[ProcessGroup] = None, async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    if len(input_list) != g.size():
        raise ValueError("input_list has %d tensors, the group %d ranks"
                         % (len(input_list), g.size()))
    arr = _arr(input_list)
    return _run(lambda w: C.process_group_reduce_scatter(w, g._ptr(), output._ptr(), arr, int(op)),
                [output, list(input_list)], async_op)


def all_to_all(output_tensor_list: List[Any], input_tensor_list: List[Any],
               group: Optional[ProcessGroup] = None, async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    for name, ts in (("output", output_tensor_list), ("input", input_tensor_list)):
        if len(ts) != g.size():
            raise ValueError("%s_tensor_list has %d tensors, the group %d ranks"
                             % (name, len(ts), g.size()))
    outs, ins = _arr(output_tensor_list), _arr(input_tensor_list)
    return _run(lambda w: C.process_group_all_to_all(w, g._ptr(), outs, ins),
                [list(output_tensor_list), list(input_tensor_list)], async_op)


def barrier(group: Optional[ProcessGroup] = None, async_op: bool = False) -> Optional[Work]:
    g = _pg(group)
    return _run(lambda w: C.process_group_barrier(w, g._ptr()), [], async_op)


def isend(tensor: Any, dst: int, group: Optional[ProcessGroup] = None, tag: int = 0) -> Work:
    g = _pg(group)
    d = _group_rank(g, dst, "dst")
    w = _run(lambda w: C.process_group_send(w, g._ptr(), tensor._ptr(), d, int(tag)), [tensor], True)
    assert w is not None
    return w


def irecv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
          tag: int = 0) -> Work:
    g = _pg(group)
    s = -1 if src is None else _group_rank(g, src, "src")
    w = _run(lambda w: C.process_group_recv(w, g._ptr(), tensor._ptr(), s, int(tag)), [tensor], True)
    assert w is not None
    return w


def send(tensor: Any, dst: int, group: Optional[ProcessGroup] = None, tag: int = 0) -> None:
    isend(tensor, dst, group, tag).wait()


def recv(tensor: Any, src: Optional[int] = None, group: Optional[ProcessGroup] = None,
         tag: int = 0) -> int:
    """Receives into tensor; returns the sender's global rank (as torch does)."""
    w = irecv(tensor, src, group, tag)
    w.wait()
    return _global_rank(_pg(group), w.source_rank()) if src is None else int(src)


# ---- data parallel ------------------------------------------------------------

class DistributedDataParallel(_release.Handle):
    """torch.nn.parallel.DistributedDataParallel over c10d's Reducer: rank 0's
    parameters and buffers are copied to every rank here, and calling the
    wrapper runs the module and readies the gradient all-reduce, which then
    runs in buckets while backward runs (gradients averaged over the group).
    ``module``: anything with ``parameters()`` (and optionally ``buffers()``)
    that is called with the inputs (a ctorch.Module, or a plain object)."""

    _free_c = C.ddp_free  # C: see ProcessGroup
    _handle_kind = "DistributedDataParallel"
    _no_copy = "it holds a live process group; copy or pickle its module"

    def __init__(self, module: Any, process_group: Optional[ProcessGroup] = None,
                 bucket_cap_mb: float = 25, find_unused_parameters: bool = False,
                 gradient_as_bucket_view: bool = False) -> None:
        self.module = module
        self.process_group = _pg(process_group)
        self._params = [p for p in module.parameters() if p.requires_grad]
        self._buffers = list(module.buffers()) if hasattr(module, "buffers") else []
        flags = (1 if find_unused_parameters else 0) | (2 if gradient_as_bucket_view else 0)
        out = c_void_p()
        check(C.ddp_new(byref(out), self.process_group._ptr(), _arr(self._params),
                        len(self._params), _arr(self._buffers), len(self._buffers),
                        float(bucket_cap_mb), flags))
        self._p: Optional[int] = out.value

    def parameters(self) -> List[Any]:
        return list(self._params)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        out = self.module(*args, **kwargs)
        outs = _tensors_in(out)
        check(G.ddp_prepare_backward(self._ptr(), _arr(outs), len(outs)))
        return out

    forward = __call__



def _tensors_in(x: Any) -> List[Any]:
    """The tensors in a forward's result (tensors, lists, tuples, dicts)."""
    if hasattr(x, "_ptr") and hasattr(x, "requires_grad"):
        return [x]
    if isinstance(x, (list, tuple)):
        return [t for v in x for t in _tensors_in(v)]
    if isinstance(x, dict):
        return [t for v in x.values() for t in _tensors_in(v)]
    return []
