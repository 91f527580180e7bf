"""all_reduce and a DDP step with 2 ranks on loopback (Gloo): ctorch's Python
binding (ctypes over the C ABI) against torch.distributed in PyTorch's own
Python, same store protocol and backend, side by side in one run.

  CTORCH_LIBRARY=build/libctorch.so /usr/bin/python3 bench/bench_distributed.py [--quick] [--json F]

Prints one row per case: median seconds per call of each, and the ratio
ctorch / torch (targets: <= 1.05 for 64 MiB, <= 1.2 for 1 KiB, <= 1.1 for a
DDP step). Needs /usr/bin/python3's torch (for the torch rows) and a libctorch
with distributed; the ranks are processes of this file."""
import json
import os
import socket
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
SIZES = [("1 KiB", 256), ("1 MiB", 256 * 1024), ("64 MiB", 16 * 1024 * 1024)]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_main(kind: str, rank: int, port: int, quick: bool) -> None:
    if kind == "torch":
        import torch
        import torch.distributed as dist
        from datetime import timedelta
        try:
            store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timedelta(seconds=60),
                                  use_libuv=False)
        except TypeError:
            store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, timedelta(seconds=60))
        dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
        ones = lambda n: torch.ones(n)  # noqa: E731
        nn_lin = torch.nn.Linear
        DDP = torch.nn.parallel.DistributedDataParallel
        mse = lambda a, b: ((a - b) ** 2).mean()  # noqa: E731
        SGD = torch.optim.SGD
        randn = torch.randn
        torch.manual_seed(0)
    else:
        sys.path.insert(0, os.path.join(HERE, "..", "bindings", "python"))
        import ctorch
        import ctorch.distributed as dist
        store = dist.TCPStore("127.0.0.1", port, 2, rank == 0, 60)
        dist.init_process_group("gloo", store=store, rank=rank, world_size=2)
        ones = lambda n: ctorch.ones(n)  # noqa: E731
        DDP = dist.DistributedDataParallel
        mse = lambda a, b: ((a - b) ** 2).mean()  # noqa: E731
        SGD = ctorch.optim.SGD
        randn = ctorch.randn
    out = {}
    for name, n in SIZES:
        t = ones(n)
        reps = (5 if n > 10 ** 6 else 50) if quick else (20 if n > 10 ** 6 else 500)
        for _ in range(3):
            dist.all_reduce(t)
        times = []
        for _ in range(reps):
            dist.barrier()
            t0 = time.perf_counter()
            dist.all_reduce(t)
            times.append(time.perf_counter() - t0)
        times.sort()
        out["all_reduce " + name] = times[len(times) // 2]
    # A DDP step: a 3-layer MLP 256-512-512-10, batch 64 per rank.
    if kind == "torch":
        model = torch.nn.Sequential(nn_lin(256, 512), torch.nn.Tanh(), nn_lin(512, 512),
                                    torch.nn.Tanh(), nn_lin(512, 10))
        ddp = DDP(model)
        params = list(ddp.parameters())
    else:
        ws = [randn(512, 256) * 0.05, randn(512) * 0, randn(512, 512) * 0.05, randn(512) * 0,
              randn(10, 512) * 0.05, randn(10) * 0]
        for w in ws:
            w.requires_grad_(True)

        class MLP:
            def parameters(self):
                return ws

            def __call__(self, x):
                h = (x @ ws[0].t() + ws[1]).tanh()
                h = (h @ ws[2].t() + ws[3]).tanh()
                return h @ ws[4].t() + ws[5]
        ddp = DDP(MLP())
        params = ws
    opt = SGD(params, lr=0.01)
    x, y = randn(64, 256), randn(64, 10)
    steps = 10 if quick else 60
    times = []
    for i in range(steps + 3):
        dist.barrier()
        t0 = time.perf_counter()
        opt.zero_grad()
        loss = mse(ddp(x), y)
        loss.backward()
        opt.step()
        if i >= 3:
            times.append(time.perf_counter() - t0)
    times.sort()
    out["DDP step (MLP 256-512-512-10, batch 64/rank)"] = times[len(times) // 2]
    if rank == 0:
        print(json.dumps(out), flush=True)


def run(kind: str, quick: bool) -> dict:
    port = free_port()
    ps = [subprocess.Popen([sys.executable, __file__, "--rank", kind, str(r), str(port)]
                           + (["--quick"] if quick else []),
                           stdout=subprocess.PIPE, stderr=subprocess.DEVNULL) for r in range(2)]
    outs = [p.communicate(timeout=900)[0] for p in ps]
    if any(p.returncode for p in ps):
        sys.exit("%s ranks failed" % kind)
    return json.loads(outs[0].decode().strip().splitlines()[-1])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--rank":
        rank_main(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), "--quick" in sys.argv)
        return
    quick = "--quick" in sys.argv
    c, t = run("ctorch", quick), run("torch", quick)
    if "--json" in sys.argv:
        with open(sys.argv[sys.argv.index("--json") + 1], "w") as f:
            json.dump({"ctorch": c, "torch": t}, f, indent=1)
    print("%-46s %12s %12s %7s" % ("2 ranks, gloo, loopback", "ctorch (s)", "torch (s)", "ratio"))
    for k in c:
        print("%-46s %12.6f %12.6f %7.2f" % (k, c[k], t[k], c[k] / t[k]))


if __name__ == "__main__":
    main()
