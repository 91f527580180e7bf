"""The rank side of test_distributed.py: one process of a group.

    python dist_ranks.py CASE --rank R --world N --port P [--timeout S]

prints one line of JSON (the case's results) and exits 0, or exits non-zero
with a message on stderr. Cases whose name starts with ``torch_`` run
PyTorch's own torch.distributed (Gloo) with the same inputs, to give the
values ctorch's ranks are checked against; the others use ctorch.distributed
only (no torch import). ``init_env`` reads MASTER_ADDR, MASTER_PORT, RANK and
WORLD_SIZE from the environment (set by the test).

The model and data of the DDP case (TinyNet, ddp_data, initial_weights) are
importable, so that the test computes its single-process reference with the
very same code."""
import argparse
import faulthandler
import hashlib
import json
import os
import random
import signal
import sys
import time
from ctypes import string_at
from typing import Any, Callable, Dict, List

HERE = os.path.dirname(os.path.abspath(__file__))
PKG_ROOT = os.path.dirname(HERE)
# CTORCH_TEST_INSTALLED=1 (the wheel leg): test the installed package, not this checkout
if PKG_ROOT not in sys.path and not os.environ.get("CTORCH_TEST_INSTALLED"):
    sys.path.insert(0, PKG_ROOT)

# ---- inputs, the same on both sides (plain Python lists) ------------------------

N_ELEMS = 37  # odd, so no even chunking by accident



def torch_tcp_store(host, port, world, is_master, timeout):
    """torch.distributed.TCPStore with the classic server: torch >= 2.4 asks
    for libuv by default, which Debian's torch 2.6 lacks."""
    import torch.distributed as tdist
    try:
        return tdist.TCPStore(host, port, world, is_master, timeout, use_libuv=False)
    except TypeError:
        return tdist.TCPStore(host, port, world, is_master, timeout)

def leave_together(store: Any, rank: int, world: int, timeout: float = 30.0) -> None:
    """Returns once every rank has called it (so no rank still reads from
    another's sockets); rank 0, whose process serves the store, returns
    last. Plain add() polling: the same on torch's and ctorch's stores."""
    deadline = time.time() + timeout

    def wait_for(key: str, count: int, what: str) -> None:
        while store.add(key, 0) < count:
            if time.time() > deadline:
                raise TimeoutError("leave_together: not every rank %s" % what)
            time.sleep(0.02)

    store.add("leave/in", 1)
    wait_for("leave/in", world, "arrived")
    if rank != 0:
        store.add("leave/out", 1)
    else:
        wait_for("leave/out", world - 1, "left")


#: Set by a case whose process must end without Python's teardown (os._exit
#: once its result is printed).
EXIT_AT_ONCE = False


def f32_vals(r: int) -> List[float]:
    return [((i * (r + 1)) % 97) / 7.0 + r * 0.25 - 3.0 for i in range(N_ELEMS)]


def prod_vals(r: int) -> List[float]:
    return [1.0 + ((i + 3 * r) % 5) / 8.0 for i in range(N_ELEMS)]


def i64_vals(r: int) -> List[int]:
    return [((i + 1) * (r + 3) * 2654435761) % 100003 - 50000 for i in range(N_ELEMS)]


def big_vals(r: int, n: int = 1 << 17) -> List[float]:
    return [((i * (r + 2)) % 1013) / 17.0 for i in range(n)]


def dyadic(r: int, j: int, n: int = 5) -> List[float]:
    """Values whose sums are exact in float32 in any order (reduce_scatter)."""
    return [(r * 7 + j * 3 + k) / 8.0 - 2.0 for k in range(n)]


def subgroup_ranks(world: int) -> List[int]:
    """new_group's members, deliberately not sorted."""
    return [world - 1, 1] if world >= 3 else [1]


# ---- the collectives, once per implementation ------------------------------------

def collectives(d: Any, mk: Callable[[Any, str], Any], raw: Callable[[Any], bytes],
                rank: int, world: int, is_torch: bool) -> Dict[str, Any]:
    """The same sequence of collectives through torch.distributed (d = torch's)
    or ctorch.distributed; mk(list, dtype name) makes a tensor."""
    res: Dict[str, Any] = {}
    R = d.ReduceOp
    ops = {"sum": R.SUM, "product": R.PRODUCT, "min": R.MIN, "max": R.MAX}
    for name, op in ops.items():
        t = mk(prod_vals(rank) if name == "product" else f32_vals(rank), "float32")
        d.all_reduce(t, op=op)
        res["ar_f32_" + name] = t.tolist()
    t = mk(f32_vals(rank), "float32")
    if is_torch:  # Gloo in torch has no AVG: the sum, divided by torch
        d.all_reduce(t)
        t = t / world
    else:
        d.all_reduce(t, op=R.AVG)
    res["ar_f32_avg"] = t.tolist()
    t = mk(f32_vals(rank), "float64")
    d.all_reduce(t)
    res["ar_f64_sum"] = t.tolist()
    for name, op in dict(ops, band=R.BAND, bor=R.BOR, bxor=R.BXOR).items():
        if name == "product":
            continue
        t = mk(i64_vals(rank), "int64")
        d.all_reduce(t, op=op)
        res["ar_i64_" + name] = t.tolist()
    t = mk(f32_vals(rank) * 3, "float32").reshape(3, N_ELEMS)
    d.all_reduce(t)
    res["ar_2d"] = t.tolist()
    t = mk(big_vals(rank), "float32")
    d.all_reduce(t)
    res["ar_big_sha256"] = hashlib.sha256(raw(t)).hexdigest()
    for src in range(world):
        t = mk([rank * 10 + i for i in range(4)], "int64")
        d.broadcast(t, src)
        res["bc_i64_%d" % src] = t.tolist()
    t = mk(f32_vals(rank), "float32").reshape(1, N_ELEMS)
    d.broadcast(t, world - 1)
    res["bc_f32"] = t.tolist()
    z = mk([rank + k / 8.0 for k in range(6)], "float32").reshape(3, 2)
    outs = [mk([0.0] * 6, "float32").reshape(3, 2) for _ in range(world)]
    d.all_gather(outs, z)
    res["ag_f32"] = [o.tolist() for o in outs]
    zi = mk(i64_vals(rank)[:4], "int64")
    outs = [mk([0] * 4, "int64") for _ in range(world)]
    d.all_gather(outs, zi)
    res["ag_i64"] = [o.tolist() for o in outs]
    ins = [mk([rank * 100 + j * 10 + k for k in range(6)], "float32").reshape(2, 3)
           for j in range(world)]
    if is_torch:  # Gloo in torch has no list all_to_all: the single-tensor one
        import torch
        o = torch.empty(2 * world, 3)
        d.all_to_all_single(o, torch.cat(ins))
        res["a2a"] = [c.tolist() for c in o.chunk(world)]
    else:
        outs = [mk([0.0] * 6, "float32").reshape(2, 3) for _ in range(world)]
        d.all_to_all(outs, ins)
        res["a2a"] = [o.tolist() for o in outs]
    for name, op in (("sum", R.SUM), ("max", R.MAX)):
        ins = [mk(dyadic(rank, j), "float32") for j in range(world)]
        if is_torch:  # Gloo in torch has no reduce_scatter: reduce all, take my chunk
            import torch
            t = torch.cat(ins)
            d.all_reduce(t, op=op)
            res["rs_" + name] = t.chunk(world)[rank].tolist()
        else:
            out = mk([0.0] * 5, "float32")
            d.reduce_scatter(out, ins, op=op)
            res["rs_" + name] = out.tolist()
    d.barrier()
    res["barrier"] = True
    # point to point: a ring with isend/irecv, then rank 0 receives from any source
    t = mk([rank * 1.5 + k for k in range(3)], "float32")
    got = mk([0.0] * 3, "float32")
    ws = [d.isend(t, (rank + 1) % world, tag=5), d.irecv(got, (rank - 1) % world, tag=5)]
    for w in ws:
        w.wait()
    res["ring"] = got.tolist()
    if rank == 0:
        senders = []
        for _ in range(world - 1):
            buf = mk([0.0] * 2, "float32")
            src = d.recv(buf, tag=3)
            senders.append([src, buf.tolist()])
        res["any_source"] = sorted(senders)
    else:
        time.sleep(0.05 * (world - rank))  # arrive in another order than rank order
        d.send(mk([rank, rank * 2.5], "float32"), 0, tag=3)
    # a subgroup: only its members get a group
    g = d.new_group(subgroup_ranks(world))
    if is_torch and g is d.GroupMember.NON_GROUP_MEMBER:  # torch's "None"
        g = None
    res["ng_member"] = g is not None
    if g is not None:
        res["ng_rank"] = d.get_rank(g)
        res["ng_size"] = d.get_world_size(g)
        t = mk([rank + 1.0, 10.0 * rank], "float32")
        d.all_reduce(t, group=g)
        res["ng_sum"] = t.tolist()
        t = mk([rank * 3, rank * 5], "int64")
        d.broadcast(t, 1, group=g)  # global rank 1, a member of every subgroup here
        res["ng_bc"] = t.tolist()
    d.barrier()
    res["rank"] = d.get_rank()
    res["world"] = d.get_world_size()
    return res


def case_collectives(a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch
    import ctorch.distributed as dist
    store = dist.TCPStore("127.0.0.1", a.port, a.world, a.rank == 0, a.timeout)
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=a.timeout)
    dts = {"float32": ctorch.float32, "float64": ctorch.float64, "int64": ctorch.int64}
    res = collectives(dist, lambda v, dt: ctorch.tensor(v, dtype=dts[dt]),
                      lambda t: string_at(t.data_ptr(), t.nbytes), a.rank, a.world, False)
    dist.destroy_process_group()
    return res


def case_torch_collectives(a: argparse.Namespace) -> Dict[str, Any]:
    from datetime import timedelta
    try:
        import torch
        import torch.distributed as dist
        ok = dist.is_available() and dist.is_gloo_available()
    except ImportError:
        ok = False
    if not ok:
        print("torch.distributed with Gloo is not available in %s" % sys.executable,
              file=sys.stderr)
        sys.exit(77)
    store = torch_tcp_store("127.0.0.1", a.port, a.world, a.rank == 0,
                            timedelta(seconds=a.timeout))
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=timedelta(seconds=a.timeout))
    res = collectives(dist, lambda v, dt: torch.tensor(v, dtype=getattr(torch, dt)),
                      lambda t: t.numpy().tobytes(), a.rank, a.world, True)
    # No destroy_process_group: torch 2.6's deadlocks now and then (its main
    # thread joins Gloo's workers holding the GIL while a worker frees a
    # tensor's Python object, which needs it; seen on 2 cores under load, in 1
    # run of 4 of the world-4 tests to 1 of ~20 groups).
    # The reference's values are what count: the ranks leave together and
    # end without teardown.
    leave_together(store, a.rank, a.world, a.timeout)
    global EXIT_AT_ONCE
    EXIT_AT_ONCE = True
    return res


# ---- asynchronous work --------------------------------------------------------------

def case_async(a: argparse.Namespace) -> Dict[str, Any]:
    """Rank 1 is late on purpose: rank 0's short waits run out, its long ones
    do not; every async collective's values are checked here."""
    import ctorch
    import ctorch.distributed as dist
    store = dist.TCPStore("127.0.0.1", a.port, a.world, a.rank == 0, a.timeout)
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=a.timeout)
    r, n = a.rank, a.world
    res: Dict[str, Any] = {}
    # an all_reduce that rank 1 joins late
    t = ctorch.full((5,), float(r + 1))
    if r == 1:
        time.sleep(1.5)
    w = dist.all_reduce(t, async_op=True)
    assert isinstance(w, dist.Work), type(w)
    if r == 0:
        res["done_at_start"] = w.is_completed()
        t0 = time.time()
        try:
            w.wait(0.3)
            res["short_wait"] = "returned"
        except TimeoutError as e:
            res["short_wait"] = [type(e).__name__, isinstance(e, ctorch.Error), str(e)]
        res["short_wait_s"] = time.time() - t0
        res["done_after_short_wait"] = w.is_completed()
    res["wait"] = w.wait()
    res["wait_again"] = w.wait(0.01)  # a finished work answers at once, again
    res["done"] = w.is_completed()
    res["ar"] = t.tolist()
    # an irecv whose sender is late; the short wait times out, then it arrives
    if r == 0:
        buf = ctorch.zeros(3)
        w = dist.irecv(buf, 1, tag=9)
        try:
            w.wait(timedelta_seconds(0.2))
            res["recv_short_wait"] = "returned"
        except TimeoutError as e:
            res["recv_short_wait"] = type(e).__name__
        w.wait()
        res["recv"] = buf.tolist()
        res["recv_done"] = w.is_completed()
    elif r == 1:
        time.sleep(1.0)
        dist.isend(ctorch.tensor([7.0, 8.0, 9.0]), 0, tag=9).wait()
    # every collective in its async form, all in flight at once
    b = ctorch.tensor([float(r * 10 + i) for i in range(4)])
    ag_out = [ctorch.zeros(2) for _ in range(n)]
    rs_out = ctorch.zeros(2)
    a2a_out = [ctorch.zeros(2) for _ in range(n)]
    works = [dist.broadcast(b, n - 1, async_op=True),
             dist.all_gather(ag_out, ctorch.tensor([r, r + 0.5]), async_op=True),
             dist.reduce_scatter(rs_out, [ctorch.tensor([r + j, 1.0]) for j in range(n)],
                                 async_op=True),
             dist.all_to_all(a2a_out, [ctorch.tensor([10.0 * r + j, -1.0]) for j in range(n)],
                             async_op=True),
             dist.barrier(async_op=True)]
    # the tensors given to the works must stay alive without our references
    for w in works:
        w.wait()
    res["works_done"] = [w.is_completed() for w in works]
    res["bc"] = b.tolist()
    res["ag"] = [o.tolist() for o in ag_out]
    res["rs"] = rs_out.tolist()
    res["a2a"] = [o.tolist() for o in a2a_out]
    # recv from any source, through irecv: the Work tells the sender
    if r == 0:
        buf = ctorch.zeros(1)
        w = dist.irecv(buf, None)
        w.wait()
        res["any_source"] = [w.source_rank(), buf.tolist()]
        res["any_source_recv"] = dist.recv(buf)
        res["any_source_recv_value"] = buf.tolist()
    else:
        dist.send(ctorch.tensor([42.0]), 0)
        dist.send(ctorch.tensor([43.0]), 0)
    dist.destroy_process_group()
    return res


def timedelta_seconds(s: float) -> Any:
    from datetime import timedelta
    return timedelta(seconds=s)


def case_free_in_flight(a: argparse.Namespace) -> Dict[str, Any]:
    """Rank 0 starts an all_reduce on a tensor sharing a numpy array, drops
    the tensor and the Work, and destroys the group while rank 1 is still
    asleep: Gloo's worker thread then drops the last reference, whose
    deleter needs the GIL, while the main thread waits for that worker."""
    import numpy
    import ctorch
    import ctorch.distributed as dist
    store = dist.TCPStore("127.0.0.1", a.port, a.world, a.rank == 0, a.timeout)
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=a.timeout)
    arr = numpy.full(4, float(a.rank + 1), dtype=numpy.float32)
    res: Dict[str, Any] = {}
    if a.rank == 0:
        t = ctorch.from_numpy(arr)
        w = dist.all_reduce(t, async_op=True)
        del t, w
    else:
        time.sleep(1.5)
        dist.all_reduce(ctorch.from_numpy(arr))
    t0 = time.time()
    dist.destroy_process_group()
    res["destroy_s"] = time.time() - t0
    res["array"] = arr.tolist()  # the all_reduce finished before destroy returned
    # rank 0 must not exit (closing its sockets) while rank 1 still reads from them
    leave_together(store, a.rank, a.world, a.timeout)
    return res


# ---- initialization -------------------------------------------------------------------

def _init_and_check(init: Callable[[], None], a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch
    import ctorch.distributed as dist
    res: Dict[str, Any] = {"before": dist.is_initialized()}
    init()
    res["after"] = dist.is_initialized()
    res["rank"], res["world"] = dist.get_rank(), dist.get_world_size()
    t = ctorch.tensor([1.0, float(dist.get_rank())])
    dist.all_reduce(t)
    res["sum"] = t.tolist()
    dist.destroy_process_group()
    res["destroyed"] = not dist.is_initialized()
    return res


def case_init_env(a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch.distributed as dist
    return _init_and_check(lambda: dist.init_process_group("gloo", timeout=a.timeout), a)


def case_init_env_url(a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch.distributed as dist
    return _init_and_check(lambda: dist.init_process_group(
        "gloo", init_method="env://", timeout=timedelta_seconds(a.timeout)), a)


def case_init_tcp(a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch.distributed as dist
    return _init_and_check(lambda: dist.init_process_group(
        "gloo", init_method="tcp://127.0.0.1:%d" % a.port, rank=a.rank, world_size=a.world,
        timeout=a.timeout), a)


def case_init_mixed(a: argparse.Namespace) -> Dict[str, Any]:
    """Rank 0 is PyTorch, the others ctorch; all call init_process_group with the
    same init_method URL (CT_TEST_INIT_URL, "{port}" and "{dir}" filled in), as
    issue 41 asks: torch's store layout comes from the C library for every URL."""
    url = os.environ["CT_TEST_INIT_URL"].format(port=a.port, dir=os.environ.get("CT_TEST_DIR", ""))
    res: Dict[str, Any] = {"rank": a.rank}
    if a.rank == 0:
        from datetime import timedelta
        try:
            import torch
            import torch.distributed as dist
            ok = dist.is_available() and dist.is_gloo_available()
        except ImportError:
            ok = False
        if not ok:
            print("torch.distributed with Gloo is not available", file=sys.stderr)
            sys.exit(77)
        dist.init_process_group("gloo", init_method=url, rank=a.rank, world_size=a.world,
                                timeout=timedelta(seconds=a.timeout))
        t = torch.tensor([1.0, float(a.rank)])
        dist.all_reduce(t)
        dist.barrier()
        # no destroy_process_group (see case_torch_collectives): end at once
        global EXIT_AT_ONCE
        EXIT_AT_ONCE = True
    else:
        import ctorch
        import ctorch.distributed as dist
        dist.init_process_group("gloo", init_method=url, rank=a.rank, world_size=a.world,
                                timeout=a.timeout)
        t = ctorch.tensor([1.0, float(a.rank)])
        dist.all_reduce(t)
        dist.barrier()
        dist.destroy_process_group()
    res["sum"] = t.tolist()
    return res


# ---- a peer dies -------------------------------------------------------------------------

def case_peer_dies(a: argparse.Namespace) -> Dict[str, Any]:
    """The last rank is killed (SIGKILL, no clean-up; peer_hangs: stopped,
    SIGSTOP) after the group is up; the others' next collective must fail
    within the timeout plus a margin."""
    import ctorch
    import ctorch.distributed as dist
    store = dist.TCPStore("127.0.0.1", a.port, a.world, a.rank == 0, a.timeout)
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=a.timeout)
    dist.barrier()
    if a.rank == a.world - 1:
        sys.stdout.flush()
        os.kill(os.getpid(), signal.SIGSTOP if a.case == "peer_hangs" else signal.SIGKILL)
    time.sleep(0.2)  # let it die first
    t = ctorch.ones(1 << 16)
    t0 = time.time()
    try:
        dist.all_reduce(t)
        return {"error": None}
    except Exception as e:  # reported, checked by the test
        return {"error": type(e).__name__, "timeout_error": isinstance(e, TimeoutError),
                "os_error": isinstance(e, OSError), "message": str(e),
                "seconds": time.time() - t0}


# ---- data parallel --------------------------------------------------------------------

DDP_STEPS = 10
DDP_BATCH = 16


def initial_weights(seed: int) -> List[List[Any]]:
    """Linear 4->8, Linear 8->2 as nested lists ([w1, b1, w2, b2])."""
    rnd = random.Random(seed)

    def m(rows: int, cols: int) -> List[List[float]]:
        return [[rnd.uniform(-0.5, 0.5) for _ in range(cols)] for _ in range(rows)]
    return [m(8, 4), m(1, 8)[0], m(2, 8), m(1, 2)[0]]


def ddp_data() -> Any:
    rnd = random.Random(1234)
    x = [[rnd.uniform(-1, 1) for _ in range(4)] for _ in range(DDP_BATCH)]
    y = [[rnd.uniform(-1, 1) for _ in range(2)] for _ in range(DDP_BATCH)]
    return x, y


class TinyNet:
    """Not a ctorch.Module: an object with parameters() and __call__, as
    DistributedDataParallel accepts."""

    def __init__(self, weights: List[List[Any]]) -> None:
        import ctorch
        self.w1, self.b1, self.w2, self.b2 = [ctorch.tensor(v, requires_grad=True)
                                              for v in weights]

    def parameters(self) -> List[Any]:
        return [self.w1, self.b1, self.w2, self.b2]

    def __call__(self, x: Any) -> Any:
        h = (x @ self.w1.t() + self.b1).tanh()
        return h @ self.w2.t() + self.b2


def train(model: Any, params: List[Any], x: List[List[float]], y: List[List[float]],
          steps: int = DDP_STEPS) -> None:
    import ctorch
    xt, yt = ctorch.tensor(x), ctorch.tensor(y)
    opt = ctorch.optim.SGD(params, lr=0.1, momentum=0.9)
    for _ in range(steps):
        opt.zero_grad()
        loss = ((model(xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()


def case_ddp(a: argparse.Namespace) -> Dict[str, Any]:
    import ctorch.distributed as dist
    store = dist.TCPStore("127.0.0.1", a.port, a.world, a.rank == 0, a.timeout)
    dist.init_process_group("gloo", store=store, rank=a.rank, world_size=a.world,
                            timeout=a.timeout)
    net = TinyNet(initial_weights(7 if a.rank == 0 else 8))  # rank 1 differs: DDP copies 0's
    model = dist.DistributedDataParallel(net)
    res: Dict[str, Any] = {"start": [p.detach().tolist() for p in net.parameters()]}
    x, y = ddp_data()
    per = DDP_BATCH // a.world
    rows = slice(a.rank * per, (a.rank + 1) * per)
    train(model, model.parameters(), x[rows], y[rows])
    res["final"] = [p.detach().tolist() for p in net.parameters()]
    model.free()
    dist.destroy_process_group()
    return res


case_peer_hangs = case_peer_dies  # SIGSTOP instead: alive, but never answers

CASES = {name[5:]: f for name, f in globals().items() if name.startswith("case_")}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("case", choices=sorted(CASES))
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--timeout", type=float, default=30.0, help="group timeout, seconds")
    a = ap.parse_args()
    # the test sends SIGUSR1 to a rank it finds hung: every thread's stack goes to stderr
    faulthandler.register(signal.SIGUSR1, all_threads=True)
    try:
        res = CASES[a.case](a)
    except Exception as e:
        import traceback
        traceback.print_exc()
        print("rank %d of %d, case %s: %s: %s" % (a.rank, a.world, a.case, type(e).__name__, e),
              file=sys.stderr)
        return 1
    print(json.dumps(res), flush=True)
    if EXIT_AT_ONCE:
        sys.stderr.flush()
        os._exit(0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
