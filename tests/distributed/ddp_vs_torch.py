"""ctorch's DistributedDataParallel against PyTorch's own.

Trains one small model (Linear 4->8, tanh, Linear 8->2; MSE; SGD lr 0.1,
momentum 0.9; 10 steps on a batch of 16, split 8/8 by rank) three ways, all
at once:

  - 2 ranks of ctorch.distributed.DistributedDataParallel (ctorch's Python
    binding, ctypes only: no torch in those processes);
  - 2 ranks of torch.nn.parallel.DistributedDataParallel (Gloo);
  - plain torch in this process, on the full batch.

Both DDP flavours start rank 1 from other weights than rank 0, so DDP's
initial broadcast from rank 0 has to happen for the results to agree. The
initial weights and the data are plain lists made here, the same for all.
Every final parameter must agree with every other to 1e-5; the maximum
difference is printed.

  CTORCH_LIBRARY=build/libctorch.so /usr/bin/python3 tests/distributed/ddp_vs_torch.py

Exit 0: passed; 77: skipped (no torch.distributed with Gloo); else failed."""
import argparse
import json
import os
import random
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
STEPS, BATCH, WORLD, LR, MOMENTUM, TOL = 10, 16, 2, 0.1, 0.9, 1e-5
DEADLINE = 120  # seconds for all ranks; a rank still running then is a hang


def initial_weights(rank: int) -> list:
    """[w1 (8x4), b1 (8), w2 (2x8), b2 (2)] as lists; other values for rank 1."""
    rnd = random.Random(100 + rank)

    def m(rows: int, cols: int) -> list:
        return [[rnd.uniform(-0.6, 0.6) for _ in range(cols)] for _ in range(rows)]
    return [m(8, 4), m(1, 8)[0], m(2, 8), m(1, 2)[0]]


def data() -> tuple:
    rnd = random.Random(7)
    x = [[rnd.uniform(-1, 1) for _ in range(4)] for _ in range(BATCH)]
    y = [[rnd.uniform(-1, 1) for _ in range(2)] for _ in range(BATCH)]
    return x, y


def my_rows(rank: int) -> slice:
    per = BATCH // WORLD
    return slice(rank * per, (rank + 1) * per)


def flat(x) -> list:
    return [v for e in x for v in flat(e)] if isinstance(x, list) else [x]


# ---- the three trainers ----------------------------------------------------------

def rank_ctorch(rank: int, port: int) -> list:
    sys.path.insert(0, os.path.join(ROOT, "bindings", "python"))
    import ctorch
    import ctorch.distributed as dist
    ctorch.set_num_threads(1)
    store = dist.TCPStore("127.0.0.1", port, WORLD, rank == 0, 60)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD, timeout=60)

    class Net:  # Linear(4, 8), tanh, Linear(8, 2), as torch.nn.Linear computes them
        def __init__(self, weights: list) -> None:
            self.params = [ctorch.tensor(w, requires_grad=True) for w in weights]

        def parameters(self) -> list:
            return list(self.params)

        def __call__(self, x):
            w1, b1, w2, b2 = self.params
            return (x @ w1.t() + b1).tanh() @ w2.t() + b2

    net = Net(initial_weights(rank))
    model = dist.DistributedDataParallel(net)
    x, y = data()
    xt, yt = ctorch.tensor(x[my_rows(rank)]), ctorch.tensor(y[my_rows(rank)])
    opt = ctorch.optim.SGD(model.parameters(), lr=LR, momentum=MOMENTUM)
    for _ in range(STEPS):
        opt.zero_grad()
        loss = ((model(xt) - yt) ** 2).mean()
        loss.backward()
        opt.step()
    out = [p.detach().tolist() for p in net.parameters()]
    model.free()
    dist.destroy_process_group()
    return out


def torch_model(weights: list):
    import torch
    model = torch.nn.Sequential(torch.nn.Linear(4, 8), torch.nn.Tanh(), torch.nn.Linear(8, 2))
    with torch.no_grad():
        for p, w in zip(model.parameters(), weights):
            p.copy_(torch.tensor(w))
    return model


def torch_train(model, params, x: list, y: list) -> None:
    import torch
    xt, yt = torch.tensor(x), torch.tensor(y)
    opt = torch.optim.SGD(params, lr=LR, momentum=MOMENTUM)
    loss_fn = torch.nn.MSELoss()
    for _ in range(STEPS):
        opt.zero_grad()
        loss_fn(model(xt), yt).backward()
        opt.step()


def rank_torch(rank: int, port: int) -> list:
    from datetime import timedelta
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    try:  # torch >= 2.4 asks for a libuv server, which Debian's torch 2.6 lacks
        store = dist.TCPStore("127.0.0.1", port, WORLD, rank == 0, timedelta(seconds=60),
                              use_libuv=False)
    except TypeError:
        store = dist.TCPStore("127.0.0.1", port, WORLD, rank == 0, timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=WORLD,
                            timeout=timedelta(seconds=60))
    net = torch_model(initial_weights(rank))
    model = torch.nn.parallel.DistributedDataParallel(net)
    x, y = data()
    torch_train(model, model.parameters(), x[my_rows(rank)], y[my_rows(rank)])
    out = [p.detach().tolist() for p in net.parameters()]
    dist.destroy_process_group()
    return out


def single_torch() -> list:
    import torch
    torch.set_num_threads(1)
    net = torch_model(initial_weights(0))
    x, y = data()
    torch_train(net, net.parameters(), x, y)
    return [p.detach().tolist() for p in net.parameters()]


# ---- the driver --------------------------------------------------------------------

def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--role", choices=["ctorch", "torch"], help="(internal) run one rank")
    ap.add_argument("--rank", type=int)
    ap.add_argument("--port", type=int)
    a = ap.parse_args()
    if a.role:
        out = (rank_ctorch if a.role == "ctorch" else rank_torch)(a.rank, a.port)
        print(json.dumps(out), flush=True)
        if a.role == "torch":
            # torch 2.15's own ranks (no ctorch in them) end now and then with "terminate
            # called without an active exception" while the interpreter tears down, after
            # DDP and destroy_process_group returned (1 run in 8 here): torch's exit is not
            # this test's subject, so its ranks leave without the teardown
            sys.stderr.flush()
            os._exit(0)
        return 0

    try:
        import torch.distributed as tdist
        if not (tdist.is_available() and tdist.is_gloo_available()):
            raise ImportError("torch.distributed has no Gloo")
    except ImportError as e:
        print("SKIP: %s: %s" % (sys.executable, e))
        return 77
    lib = os.environ.get("CTORCH_LIBRARY")
    if lib:
        import ctypes
        if not ctypes.CDLL(lib).ct_distributed_has_backend(b"gloo"):
            print("SKIP: this libctorch has no Gloo backend (c10d with Gloo)")
            return 77

    t0 = time.time()
    env = dict(os.environ, PYTHONDONTWRITEBYTECODE="1")
    for k in ("MASTER_ADDR", "MASTER_PORT", "RANK", "WORLD_SIZE", "TORCHELASTIC_USE_AGENT_STORE"):
        env.pop(k, None)
    procs = {}
    for role in ("ctorch", "torch"):
        port = free_port()
        for rank in range(WORLD):
            procs["%s rank %d" % (role, rank)] = subprocess.Popen(
                [sys.executable, os.path.abspath(__file__), "--role", role, "--rank", str(rank),
                 "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    results = {"torch, one process, full batch": single_torch()}
    failed = []
    for name, p in procs.items():
        try:
            out, err = p.communicate(timeout=max(1.0, DEADLINE - (time.time() - t0)))
        except subprocess.TimeoutExpired:
            for q in procs.values():
                q.kill()
            print("FAIL: %s still running after %d s (a hang)" % (name, DEADLINE))
            return 1
        if p.returncode != 0:
            failed.append("%s exited with %d:\n%s" % (name, p.returncode,
                                                      err.decode()[-3000:]))
            continue
        results[name] = json.loads(out.decode().strip().splitlines()[-1])
    if failed:
        print("FAIL:\n" + "\n".join(failed))
        return 1

    ref_name = "torch, one process, full batch"
    ref = flat(results[ref_name])
    start = flat(initial_weights(0))
    moved = max(abs(a - b) for a, b in zip(ref, start))
    worst = 0.0
    for name, params in results.items():
        got = flat(params)
        if len(got) != len(ref):
            print("FAIL: %s has %d parameter values, %s %d" % (name, len(got), ref_name,
                                                              len(ref)))
            return 1
        diff = max(abs(a - b) for a, b in zip(got, ref))
        print("%-32s max |difference| from %s: %.3g" % (name, ref_name, diff))
        worst = max(worst, diff)
    print("max difference %.3g (tolerance %g); training moved the parameters by up to %.3g; "
          "%.1f s" % (worst, TOL, moved, time.time() - t0))
    if moved < 1e-2:
        print("FAIL: the parameters hardly moved: nothing was trained")
        return 1
    if worst > TOL:
        print("FAIL: the final parameters disagree by more than %g" % TOL)
        return 1
    print("PASS: ctorch DDP (2 ranks), torch DDP (2 ranks) and full-batch torch agree")
    return 0


if __name__ == "__main__":
    sys.exit(main())
