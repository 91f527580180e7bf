"""ctorch.distributed: ranks are subprocesses (dist_ranks.py, one per rank)
on loopback; their values are checked against plain-Python expectations and
against PyTorch's own torch.distributed (Gloo) run the same way with the same
inputs in separate processes. Errors are checked in-process on a one-rank
group. DDP is checked against single-process full-batch training.

    CTORCH_LIBRARY=build/libctorch.so /usr/bin/python3 -m pytest -q \\
        bindings/python/tests/test_distributed.py
"""
import copy
import importlib.util
import json
import os
import pickle
import re
import signal
import socket
import subprocess
import sys
import time
from array import array

import pytest

import ctorch
import ctorch.distributed as dist

if not dist.is_gloo_available():
    pytest.skip("this libctorch has no Gloo backend (ct_distributed_has_backend(\"gloo\") is 0;"
                " is_available() %s)" % dist.is_available(), allow_module_level=True)

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import dist_ranks as dr  # noqa: E402

RANKS_PY = os.path.join(HERE, "dist_ranks.py")
TORCH_RANKS = importlib.util.find_spec("torch") is not None
SKIP_RC = 77  # a torch rank without torch.distributed/Gloo


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def child_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k not in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "LOCAL_RANK",
                        "LOCAL_WORLD_SIZE") and not k.startswith("TORCHELASTIC")}
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(extra or {})
    return env


class Ranks:
    """One group: `world` processes of dist_ranks.py CASE, started at once."""

    def __init__(self, case, world, timeout=30, env=None, port=None):
        self.case, self.world = case, world
        self.port = free_port() if port is None else port
        self.t0 = time.time()
        self.procs = []
        for r in range(world):
            cmd = [sys.executable, RANKS_PY, case, "--rank", str(r), "--world", str(world),
                   "--port", str(self.port), "--timeout", str(timeout)]
            self.procs.append(subprocess.Popen(
                cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=HERE,
                env=child_env(env(r) if env else None)))
        self.outs = [None] * world

    def kill(self):
        """Ends the ranks still running; each first prints its threads' stacks
        (SIGUSR1, dist_ranks.py's faulthandler), shown by stderr()."""
        running = [r for r, p in enumerate(self.procs) if p.poll() is None]
        for r in running:
            self.procs[r].send_signal(signal.SIGUSR1)
        time.sleep(1.0 if running else 0)
        for r in running:
            p = self.procs[r]
            p.kill()
            out, err = p.communicate()
            self.outs[r] = ("killed, still running", out.decode(errors="replace"),
                            err.decode(errors="replace"))

    def finish(self, deadline=60, ranks=None):
        """(returncode, stdout, stderr) of each rank; a rank still running
        after `deadline` seconds since the start is a hang: all are killed."""
        for r in (range(self.world) if ranks is None else ranks):
            left = max(1.0, deadline - (time.time() - self.t0))
            try:
                out, err = self.procs[r].communicate(timeout=left)
            except subprocess.TimeoutExpired:
                self.kill()
                pytest.fail("%s: rank %d of %d still running after %.0f s (a hang)\n%s" % (
                    self.case, r, self.world, deadline, self.stderr()))
            self.outs[r] = (self.procs[r].returncode, out.decode(), err.decode())
        return self.outs

    def stderr(self):
        parts = []
        for r, p in enumerate(self.procs):
            if self.outs[r] is not None:
                parts.append("--- rank %d (exit %s):\n%s" % (r, self.outs[r][0],
                                                            self.outs[r][2][-3000:]))
        return "\n".join(parts)

    def results(self, deadline=60):
        """The JSON result of every rank; any rank failing fails the test."""
        outs = self.finish(deadline)
        if any(rc == SKIP_RC for rc, _, _ in outs) and self.case.startswith("torch_"):
            return None
        for r, (rc, out, err) in enumerate(outs):
            assert rc == 0, "%s: rank %d of %d failed:\n%s" % (self.case, r, self.world,
                                                                self.stderr())
        return [json.loads(out.strip().splitlines()[-1]) for _, out, _ in outs]


def f32(values):
    """Python floats rounded to float32, as the tensors hold them."""
    return array("f", values).tolist()


def close(got, want, tol=1e-5):
    if isinstance(want, list):
        return isinstance(got, list) and len(got) == len(want) and \
            all(close(g, w, tol) for g, w in zip(got, want))
    return abs(got - want) <= tol * max(1.0, abs(want))


# ---- every collective, against PyTorch's ranks and plain-Python values ------------

@pytest.fixture(scope="module", params=[2, 4], ids=["world2", "world4"])
def coll(request):
    """(ctorch results, torch results or None) per rank; both groups run at once."""
    world = request.param
    ct = Ranks("collectives", world)
    th = Ranks("torch_collectives", world) if TORCH_RANKS else None
    try:
        got = ct.results()
        want = th.results() if th else None
    finally:
        ct.kill()
        if th:
            th.kill()
    return world, got, want


def vs_torch(coll, prefix):
    """Every result key starting with prefix: ctorch's == torch's, exactly,
    on every rank (the same inputs, the same Gloo algorithms)."""
    world, ct, th = coll
    assert any(k.startswith(prefix) for k in ct[0]), prefix
    if th is None:
        pytest.skip("no torch.distributed with Gloo to compare with (checked against "
                    "plain-Python values only)")
    for r in range(world):
        keys = sorted(k for k in set(ct[r]) | set(th[r]) if k.startswith(prefix))
        for k in keys:
            assert ct[r].get(k, "missing") == th[r].get(k, "missing"), \
                "rank %d %s: ctorch %r, torch %r" % (r, k, ct[r].get(k), th[r].get(k))


def test_all_reduce(coll):
    world, ct, _ = coll
    rows = [f32(dr.f32_vals(r)) for r in range(world)]
    ints = [dr.i64_vals(r) for r in range(world)]
    want_i = {"sum": sum, "min": min, "max": max}
    for r in range(world):
        res = ct[r]
        assert res["rank"] == r and res["world"] == world
        assert close(res["ar_f32_sum"], [sum(c) for c in zip(*rows)])
        assert close(res["ar_f32_avg"], [sum(c) / world for c in zip(*rows)])
        assert close(res["ar_f32_min"], [min(c) for c in zip(*rows)], 0)
        assert close(res["ar_f32_max"], [max(c) for c in zip(*rows)], 0)
        prod = [1.0] * dr.N_ELEMS
        for q in range(world):
            prod = [a * b for a, b in zip(prod, dr.prod_vals(q))]
        assert close(res["ar_f32_product"], prod)
        assert close(res["ar_f64_sum"], [sum(c) for c in zip(*[dr.f32_vals(q)
                                                               for q in range(world)])], 1e-12)
        for name, f in want_i.items():
            assert res["ar_i64_" + name] == [f(c) for c in zip(*ints)], name
        band, bor, bxor = list(ints[0]), list(ints[0]), list(ints[0])
        for q in range(1, world):
            band = [a & b for a, b in zip(band, ints[q])]
            bor = [a | b for a, b in zip(bor, ints[q])]
            bxor = [a ^ b for a, b in zip(bxor, ints[q])]
        assert (res["ar_i64_band"], res["ar_i64_bor"], res["ar_i64_bxor"]) == (band, bor, bxor)
        assert close(res["ar_2d"], [res["ar_f32_sum"]] * 3)  # sums in another order
        assert res["ar_big_sha256"] == ct[0]["ar_big_sha256"]
    vs_torch(coll, "ar_")


def test_broadcast(coll):
    world, ct, _ = coll
    for r in range(world):
        for src in range(world):
            assert ct[r]["bc_i64_%d" % src] == [src * 10 + i for i in range(4)]
        assert ct[r]["bc_f32"] == [f32(dr.f32_vals(world - 1))]
    vs_torch(coll, "bc_")


def test_all_gather(coll):
    world, ct, _ = coll
    for r in range(world):
        assert ct[r]["ag_f32"] == [[[q + k / 8.0 for k in (i, i + 1)] for i in (0, 2, 4)]
                                   for q in range(world)]
        assert ct[r]["ag_i64"] == [dr.i64_vals(q)[:4] for q in range(world)]
    vs_torch(coll, "ag_")


def test_all_to_all(coll):
    world, ct, _ = coll
    for r in range(world):
        # outputs[j] is rank j's inputs[r]
        assert ct[r]["a2a"] == [[[j * 100 + r * 10 + k for k in (i, i + 1, i + 2)]
                                 for i in (0, 3)] for j in range(world)]
    vs_torch(coll, "a2a")


def test_reduce_scatter(coll):
    """Gloo in torch has no reduce_scatter: torch's ranks all-reduce the
    concatenated inputs and take their chunk (what reduce_scatter means)."""
    world, ct, _ = coll
    for r in range(world):
        cols = list(zip(*[dr.dyadic(q, r) for q in range(world)]))
        assert ct[r]["rs_sum"] == [sum(c) for c in cols]
        assert ct[r]["rs_max"] == [max(c) for c in cols]
    vs_torch(coll, "rs_")


def test_point_to_point_and_barrier(coll):
    world, ct, _ = coll
    for r in range(world):
        assert ct[r]["barrier"] is True
        prev = (r - 1) % world
        assert ct[r]["ring"] == [prev * 1.5 + k for k in range(3)]
    # recv from any source returns the sender, whose values arrived
    assert ct[0]["any_source"] == [[q, [q, q * 2.5]] for q in range(1, world)]
    vs_torch(coll, "ring")
    vs_torch(coll, "any_source")


def test_new_group(coll):
    """Members get a group (ranks in sorted order, src a global rank as in
    torch), non-members None."""
    world, ct, _ = coll
    members = sorted(dr.subgroup_ranks(world))
    for r in range(world):
        res = ct[r]
        assert res["ng_member"] == (r in members), r
        if r in members:
            assert res["ng_rank"] == members.index(r)
            assert res["ng_size"] == len(members)
            assert res["ng_sum"] == [sum(q + 1.0 for q in members),
                                     sum(10.0 * q for q in members)]
            assert res["ng_bc"] == [3, 5]  # global rank 1's
        else:
            assert "ng_rank" not in res
    vs_torch(coll, "ng_")


# ---- asynchronous work ---------------------------------------------------------------

def test_async_work():
    res = Ranks("async", 2).results()
    r0, r1 = res
    # rank 1 joins the all_reduce 1.5 s late: a 0.3 s wait runs out, the work goes on
    assert r0["done_at_start"] is False
    name, is_ctorch_error, message = r0["short_wait"]
    assert name == "CTorchTimeoutError" and is_ctorch_error
    assert "all_reduce on rank 0 of 2" in message and "did not finish within 0.3 s" in message
    assert 0.25 <= r0["short_wait_s"] < 1.2
    assert r0["done_after_short_wait"] is False
    for r in res:
        assert r["wait"] is True and r["wait_again"] is True and r["done"] is True
        assert r["ar"] == [3.0] * 5
        assert r["works_done"] == [True] * 5
        assert r["bc"] == [10.0, 11.0, 12.0, 13.0]
        assert r["ag"] == [[0.0, 0.5], [1.0, 1.5]]
    assert r0["recv_short_wait"] == "CTorchTimeoutError"
    assert r0["recv"] == [7.0, 8.0, 9.0] and r0["recv_done"] is True
    assert (r0["rs"], r1["rs"]) == ([1.0, 2.0], [3.0, 2.0])
    assert (r0["a2a"], r1["a2a"]) == ([[0.0, -1.0], [10.0, -1.0]], [[1.0, -1.0], [11.0, -1.0]])
    assert r0["any_source"] == [1, [42.0]]
    assert r0["any_source_recv"] == 1 and r0["any_source_recv_value"] == [43.0]


# ---- initialization ----------------------------------------------------------------

def test_init_methods():
    """init_process_group from torchrun's variables (init_method None and
    "env://") and from "tcp://host:port"; the three groups run at once."""
    groups = []
    for case in ("init_env", "init_env_url"):
        port = free_port()
        groups.append(Ranks(case, 2, timeout=20, env=lambda r, port=port: {
            "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": str(port), "RANK": str(r),
            "WORLD_SIZE": "2"}, port=0))
    groups.append(Ranks("init_tcp", 2, timeout=20))
    try:
        for g in groups:
            for r, res in enumerate(g.results()):
                assert res == {"before": False, "after": True, "rank": r, "world": 2,
                               "sum": [2.0, 1.0], "destroyed": True}, (g.case, res)
    finally:
        for g in groups:
            g.kill()


@pytest.mark.parametrize("url", ["tcp://127.0.0.1:{port}", "file://{dir}/store"])
def test_init_method_urls_meet_pytorch(url, tmp_path):
    """A PyTorch rank and ctorch ranks given the same init_method URL form one group
    (issue 41: ctorch's tcp:// once built a bare store, and both sides timed out)."""
    if not TORCH_RANKS:
        pytest.skip("no torch to form a mixed group with")
    # USE_LIBUV=0: torch >= 2.4's tcp:// asks for a libuv store by default, and Debian's
    # torch 2.6 is built without libuv (its own init_process_group fails otherwise)
    g = Ranks("init_mixed", 3, timeout=20,
              env=lambda r: {"CT_TEST_INIT_URL": url, "CT_TEST_DIR": str(tmp_path),
                             "USE_LIBUV": "0"})
    try:
        outs = g.finish(60)
        if outs[0][0] == SKIP_RC:
            pytest.skip("no torch.distributed with Gloo")
        for r, (rc, out, err) in enumerate(outs):
            assert rc == 0, "rank %d failed:\n%s" % (r, g.stderr())
            res = json.loads(out.strip().splitlines()[-1])
            assert res == {"rank": r, "sum": [3.0, 3.0]}, res
    finally:
        g.kill()


def test_init_method_errors():
    for url, msg in [("udp://127.0.0.1:1", "scheme 'udp' is not tcp, file or env"),
                     ("127.0.0.1:1", "is not a URL"),
                     ("tcp://127.0.0.1", "has no host:port"),
                     ("tcp://127.0.0.1:99999", "port='99999' is not an integer in 1..65535"),
                     ("tcp://127.0.0.1:1?rank=0&world_size=1&oops", "has no '='"),
                     ("tcp://127.0.0.1:1?world_size=3",
                      "world_size 1 disagrees with the init_method's world_size=3")]:
        with pytest.raises(ctorch.InvalidArgumentError, match=re.escape(msg)):
            dist.init_process_group("gloo", init_method=url, rank=0, world_size=1, timeout=2)
    assert not dist.is_initialized()
    with pytest.raises(ctorch.InvalidArgumentError, match="world_size is -1 and the init_method"):
        dist.init_process_group("gloo", init_method="tcp://127.0.0.1:1", rank=0, timeout=2)


def test_destroy_with_work_in_flight():
    """Destroying a group while Gloo's worker still holds the last reference
    to a numpy-backed tensor (its deleter takes the GIL) must not deadlock:
    the free waits for the worker with the GIL released. torch 2.6's own
    destroy_process_group deadlocks this way (seen in its reference ranks)."""
    pytest.importorskip("numpy")
    res = Ranks("free_in_flight", 2, timeout=20).results(deadline=30)
    for r in res:
        assert r["array"] == [3.0] * 4, res
    assert res[0]["destroy_s"] > 0.5, res  # it did wait for rank 1's late part


# ---- a peer that dies or hangs ---------------------------------------------------------

@pytest.mark.parametrize("world", [2, 3])
def test_peer_killed(world):
    """The last rank is SIGKILLed after joining: every other rank's next
    collective fails (TimeoutError or OSError) within timeout + margin,
    naming the dead rank."""
    timeout = 5
    g = Ranks("peer_dies", world, timeout=timeout)
    try:
        outs = g.finish(deadline=timeout + 20)
    finally:
        g.kill()
    assert outs[-1][0] == -signal.SIGKILL, g.stderr()
    for r in range(world - 1):
        rc, out, _ = outs[r]
        assert rc == 0, g.stderr()
        res = json.loads(out.strip().splitlines()[-1])
        assert res["error"] is not None, "rank %d: the all_reduce succeeded" % r
        assert res["timeout_error"] or res["os_error"], res
        assert "all_reduce" in res["message"] and "on rank %d of %d" % (r, world) in \
            res["message"], res["message"]
        assert "the process of rank %d has exited" % (world - 1) in res["message"], res["message"]
        assert res["seconds"] < timeout + 6, res


def test_peer_hangs():
    """The last rank is stopped (alive, silent): the others time out after
    the group's timeout with TimeoutError, not later."""
    timeout = 2
    g = Ranks("peer_hangs", 2, timeout=timeout)
    try:
        rc, out, _ = g.finish(deadline=timeout + 20, ranks=[0])[0]
    finally:
        g.kill()  # SIGKILL ends the stopped rank too
    assert rc == 0, g.stderr()
    res = json.loads(out.strip().splitlines()[-1])
    assert res["error"] == "CTorchTimeoutError" and res["timeout_error"], res
    assert "all_reduce on rank 0 of 2" in res["message"], res["message"]
    assert "did not finish within %.1f s" % timeout in res["message"], res["message"]
    assert timeout - 0.5 <= res["seconds"] < timeout + 6, res


# ---- data parallel ----------------------------------------------------------------------

def reference_training():
    """One process, the full batch, no distributed: what DDP must reproduce."""
    net = dr.TinyNet(dr.initial_weights(7))
    x, y = dr.ddp_data()
    dr.train(net, net.parameters(), x, y)
    return [p.detach().tolist() for p in net.parameters()]


def flat(x):
    return [v for e in x for v in flat(e)] if isinstance(x, list) else [x]


def test_ddp_matches_full_batch():
    g = Ranks("ddp", 2)
    want = reference_training()
    res = g.results()
    start0 = [p for p in flat(dr.initial_weights(7))]
    # DDP copied rank 0's parameters into rank 1 (which started elsewhere)
    assert close(flat(res[1]["start"]), f32(start0), 0)
    assert not close(flat(dr.initial_weights(8)), f32(start0), 1e-3)
    assert flat(res[0]["final"]) == flat(res[1]["final"])  # every rank, the same bits
    diff = max(abs(a - b) for a, b in zip(flat(res[0]["final"]), flat(want)))
    assert diff <= 1e-5, "DDP vs full batch: max difference %g" % diff
    # and training moved the parameters at all
    assert max(abs(a - b) for a, b in zip(flat(want), f32(start0))) > 1e-2


# ---- errors, in this process, on a one-rank group -------------------------------------

@pytest.fixture
def store():
    s = dist.TCPStore("127.0.0.1", 0, 1, True, 10)
    yield s
    if dist.is_initialized():
        dist.destroy_process_group()
    s.free()


@pytest.fixture
def group(store):
    assert store.port > 0
    dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=10)
    yield dist


def test_one_rank_group_works(group):
    assert dist.is_initialized() and dist.get_rank() == 0 and dist.get_world_size() == 1
    t = ctorch.tensor([1.0, 2.0])
    dist.all_reduce(t)
    dist.all_reduce(t, op=dist.ReduceOp.AVG)
    assert t.tolist() == [1.0, 2.0]
    out = [ctorch.zeros(2)]
    dist.all_gather(out, t)
    assert out[0].tolist() == [1.0, 2.0]
    g = dist.new_group([0])
    assert isinstance(g, dist.ProcessGroup) and g.rank() == 0 and g.size() == 1
    assert g.ranks == [0]  # its members, as global ranks
    assert repr(g) == "<ProcessGroup rank 0 of 1>"
    dist.broadcast(t, 0, group=g)
    g.free()


def test_errors_bad_arguments(group):
    t = ctorch.ones(3)
    with pytest.raises(ctorch.InvalidArgumentError, match=r"unknown reduce op 99"):
        dist.all_reduce(t, op=99)
    with pytest.raises(ValueError, match=r"bitwise reduce ops need an integer"):
        dist.all_reduce(t, op=dist.ReduceOp.BAND)
    with pytest.raises(ValueError, match=r"AVG needs a floating dtype"):
        dist.all_reduce(ctorch.ones(2, dtype=ctorch.int64), op=dist.ReduceOp.AVG)
    with pytest.raises(ValueError, match=r"tensor_list has 2 tensors, the group 1 ranks"):
        dist.all_gather([t, t], t)
    with pytest.raises(ValueError, match=r"input_list has 0 tensors, the group 1 ranks"):
        dist.reduce_scatter(t, [])
    with pytest.raises(ValueError, match=r"input_tensor_list has 2 tensors"):
        dist.all_to_all([t], [t, t])
    with pytest.raises(ctorch.InvalidArgumentError, match=r"outputs\[0\] is Long\[3\] but must "
                       r"be Float\[3\]"):
        dist.all_gather([ctorch.ones(3, dtype=ctorch.int64)], t)
    nc = ctorch.ones(3, 2).t()
    assert not nc.is_contiguous()
    for call in (lambda: dist.all_reduce(nc), lambda: dist.broadcast(nc, 0)):
        with pytest.raises(ctorch.InvalidArgumentError, match=r"tensor must be contiguous"):
            call()
    with pytest.raises(ctorch.InvalidArgumentError, match=r"root 1 is outside the group's "
                       r"ranks 0\.\.0"):
        dist.broadcast(t, 1)
    with pytest.raises(ValueError, match=r"dst 3 is outside"):
        dist.send(t, 3)
    with pytest.raises(ValueError, match=r"dst 0 is this rank"):
        dist.isend(t, 0)
    with pytest.raises(ValueError, match=r"src 2 is outside"):
        dist.recv(t, 2)
    with pytest.raises(ValueError, match=r"rank 1 is outside 0\.\.0"):
        dist.new_group([1])
    # a subgroup takes global ranks (as torch): 0 is its only member
    g = dist.new_group([0])
    with pytest.raises(ctorch.InvalidArgumentError, match=r"src 1 is not a member of the group"):
        dist.broadcast(t, 1, group=g)
    g.free()
    # the group still works after all these
    dist.all_reduce(t)
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_errors_backend_and_rank(store):
    # "nccl" needs a build with NCCL (PyPI's CUDA torch) and a CUDA device
    if not dist.is_nccl_available():
        with pytest.raises(ctorch.NotSupportedError, match=r"backend 'nccl' is not in this "
                           r"ctorch build") as e:
            dist.init_process_group("nccl", store=store, rank=0, world_size=1, timeout=5)
        assert isinstance(e.value, NotImplementedError)
    elif not ctorch.cuda.is_available():
        with pytest.raises(ctorch.NotSupportedError, match=r"backend 'nccl' needs a CUDA "
                           r"device, and none is visible"):
            dist.init_process_group("nccl", store=store, rank=0, world_size=1, timeout=5)
    with pytest.raises(ctorch.InvalidArgumentError, match=r"unknown backend 'mpi-ish'"):
        dist.init_process_group("mpi-ish", store=store, rank=0, world_size=1, timeout=5)
    with pytest.raises(ctorch.InvalidArgumentError, match=r"rank 1 is outside 0\.\.0"):
        dist.init_process_group("gloo", store=store, rank=1, world_size=1, timeout=5)
    with pytest.raises(ValueError, match=r"timeout_s must be finite"):
        dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=0)
    with pytest.raises(ValueError, match=r"init_method scheme 'mpi' is not tcp, file or env"):
        dist.init_process_group("gloo", init_method="mpi://x", rank=0, world_size=1)
    assert not dist.is_initialized()  # nothing above left a half-made group
    dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=5)
    with pytest.raises(RuntimeError, match=r"initialize the default process group twice"):
        dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=5)


FORK_CHILD = r"""
import json, os, signal, sys, time
import ctorch, ctorch.distributed as dist
store = dist.TCPStore("127.0.0.1", 0, 1, True, 10)
dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=10)
groups = [dist.new_group([0]) for _ in range(8)]
dist.all_reduce(ctorch.ones(2))
w = dist.all_reduce(ctorch.ones(2), async_op=True)
t0 = time.time()
pid = os.fork()
if pid == 0:  # the child: destroys what the parent made, then ends as Python ends
    signal.alarm(20)
    for g in groups:
        dist.destroy_process_group(g)
    dist.destroy_process_group()
    store.free()
    sys.exit(0)
_, status = os.waitpid(pid, 0)
took = time.time() - t0
w.wait()
dist.all_reduce(ctorch.ones(2))  # the parent's groups are untouched
for g in groups:
    g.free()
dist.destroy_process_group()
print(json.dumps({"status": status, "child_s": took}))
"""


def test_destroy_in_forked_child():
    """A fork() child of a rank destroys the groups (and the store) its
    parent made, then exits as Python exits (atexit included): it must
    neither hang nor wait on the parent's heartbeat threads, which are not in
    the child (0.2 s per group at exit before, and a hang when the fork came
    while a beat held its lock)."""
    out = subprocess.run([sys.executable, "-c", FORK_CHILD], capture_output=True, text=True,
                         timeout=60, cwd=HERE, env=child_env(
                             {"PYTHONPATH": os.path.dirname(os.path.dirname(ctorch.__file__))}))
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    assert res["status"] == 0, res
    assert res["child_s"] < 1.0, res  # 9 groups: 1.8 s at exit before


def test_second_default_group_on_one_store(store):
    """init_process_group twice on one store (the first group destroyed): the reused
    group name is named at once (it timed out after 3 s blaming GLOO_SOCKET_IFNAME)."""
    dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=3)
    dist.destroy_process_group()
    t0 = time.time()
    with pytest.raises(ValueError, match="this store already holds process group '0'"):
        dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=3)
    assert time.time() - t0 < 1 and not dist.is_initialized()
    p = dist.PrefixStore("second", store)
    dist.init_process_group("gloo", store=p, rank=0, world_size=1, timeout=3)
    dist.barrier()
    dist.destroy_process_group()
    p.free()


def test_errors_before_init():
    assert not dist.is_initialized()
    msg = r"Default process group has not been initialized"
    for call in (lambda: dist.all_reduce(ctorch.ones(1)), dist.barrier, dist.get_rank,
                 dist.get_world_size, dist.new_group, dist.destroy_process_group):
        with pytest.raises(RuntimeError, match=msg):
            call()


def test_no_pickling_or_copying(group, store):
    w = dist.all_reduce(ctorch.ones(2), async_op=True)
    g = dist.new_group()
    try:
        for obj in (store, dist.PrefixStore("p", store), g, w):
            name = type(obj).__name__
            with pytest.raises(TypeError, match="a %s cannot be pickled: it is a live "
                               "connection" % name):
                pickle.dumps(obj)
            for cp in (copy.copy, copy.deepcopy):
                with pytest.raises(TypeError, match="cannot be copied"):
                    cp(obj)
        w.wait()
        ddp = dist.DistributedDataParallel(dr.TinyNet(dr.initial_weights(7)))
        with pytest.raises(TypeError, match="cannot be pickled"):
            pickle.dumps(ddp)
        ddp.free()
    finally:
        g.free()


def test_use_after_free(group, store):
    w = dist.all_reduce(ctorch.ones(2), async_op=True)
    w.wait()
    w.free()
    w.free()  # twice is fine
    for call in (w.wait, w.is_completed, w.source_rank):
        with pytest.raises(ValueError, match="use of a freed Work"):
            call()
    g = dist.new_group([0])
    g.free()
    assert repr(g) == "<ProcessGroup (freed)>"
    with pytest.raises(ValueError, match="use of a freed ProcessGroup"):
        dist.all_reduce(ctorch.ones(2), group=g)
    with pytest.raises(ValueError, match="use of a freed ProcessGroup"):
        g.rank()
    net = dr.TinyNet(dr.initial_weights(7))
    ddp = dist.DistributedDataParallel(net)
    ddp.free()
    with pytest.raises(ValueError, match="use of a freed DistributedDataParallel"):
        ddp(ctorch.ones(1, 4))
    s = dist.TCPStore("127.0.0.1", 0, 1, True, 5)
    s.free()
    with pytest.raises(ValueError, match="use of a freed Store"):
        s.set("k", "v")
    with pytest.raises(ValueError, match="use of a freed Store"):
        s.port


def test_stores(tmp_path):
    s = dist.TCPStore("127.0.0.1", 0, 1, True, 1)
    try:
        s.set("a", "xyz")
        s.set("long", b"\0" * 1000)
        assert s.get("a") == b"xyz" and s.get("long") == b"\0" * 1000
        assert (s.add("n", 5), s.add("n", -2)) == (5, 3)
        s.set("txt", "abc")  # add() to it used to make the server drop this client for good
        with pytest.raises(ValueError, match="key 'txt' holds 'abc', not an integer"):
            s.add("txt", 1)
        assert s.add("n", 1) == 4 and s.get("txt") == b"abc"
        p = dist.PrefixStore("pre", s)
        p.set("k", b"v")
        assert s.get("pre/k") == b"v" and p.get("k") == b"v"
        with pytest.raises(ctorch.NotSupportedError, match="not a TCP store"):
            p.port
        t0 = time.time()
        with pytest.raises(TimeoutError, match="could not get 'missing'"):
            s.get("missing")
        assert time.time() - t0 < 5
        c = dist.TCPStore("127.0.0.1", s.port, None, False, 5)  # a client of the same store
        assert c.get("a") == b"xyz" and c.port == s.port
        c.free()
        p.free()
    finally:
        s.free()
    f = dist.FileStore(str(tmp_path / "fs"), 1, timeout=1.0)
    f.set("x", "1")
    assert f.get("x") == b"1" and f.add("c", 2) == 2
    f.set("long", b"z" * 5000)  # longer than any first guess at a buffer
    assert f.get("long") == b"z" * 5000 and f.get("x") == b"1"
    t0 = time.time()
    with pytest.raises(TimeoutError, match="missing"):  # the store's timeout, not 300 s
        f.get("missing")
    assert time.time() - t0 < 10
    f.free()
    with pytest.raises(ValueError, match=r"port 70000 is outside 0\.\.65535"):
        dist.TCPStore("127.0.0.1", 70000, 1, True, 1)


class Alternating:
    """Uses parameter a on even calls and b on odd ones: the set of unused parameters
    changes every step."""

    def __init__(self):
        self.a = ctorch.tensor([1.0, 2.0], requires_grad=True)
        self.b = ctorch.tensor([3.0, 4.0], requires_grad=True)
        self.calls = 0

    def parameters(self):
        return [self.a, self.b]

    def __call__(self, x):
        self.calls += 1
        return (x * (self.a if self.calls % 2 else self.b)).sum()


def test_ddp_find_unused_when_the_unused_set_changes(group):
    """Issue 40 item 7: with find_unused_parameters, a change of the unused set between
    steps (and a prepare_backward without outputs after a step) segfaulted in
    Reducer::search_unused_parameters -> Logger::log_if_graph_static: ctorch attached no
    c10d::Logger, which torch's DDP always does."""
    net = Alternating()
    ddp = dist.DistributedDataParallel(net, find_unused_parameters=True)
    x = ctorch.tensor([1.0, 1.0])
    for step in range(4):
        for p in net.parameters():
            p.grad = None
        ddp(x).backward()
        used, unused = (net.a, net.b) if step % 2 == 0 else (net.b, net.a)
        assert used.grad.tolist() == [1.0, 1.0], step
        assert unused.grad is None or unused.grad.tolist() == [0.0, 0.0], step
    from ctorch._lib import G
    assert G.ddp_prepare_backward(ddp._ptr(), None, 0) == 0  # no outputs after a step
    ddp.free()


def test_ddp_one_rank_is_plain_training(group):
    """A one-rank DDP (averaging over one rank) is plain training, step for step."""
    net = dr.TinyNet(dr.initial_weights(7))
    ddp = dist.DistributedDataParallel(net)
    assert ddp.parameters() == net.parameters()
    x, y = dr.ddp_data()
    dr.train(ddp, ddp.parameters(), x, y, steps=3)
    ref = dr.TinyNet(dr.initial_weights(7))
    dr.train(ref, ref.parameters(), x, y, steps=3)
    assert flat([p.detach().tolist() for p in net.parameters()]) == \
        flat([p.detach().tolist() for p in ref.parameters()])
    ddp.free()
