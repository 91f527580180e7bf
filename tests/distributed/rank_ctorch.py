"""A rank of the mixed-language group through ctorch's Python binding
(ctypes only, no torch): the protocol of mixed_group.py. Any Python 3.8+."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "bindings", "python"))
import ctorch  # noqa: E402
from ctypes import string_at  # noqa: E402
import ctorch.distributed as dist  # noqa: E402


def raw(t) -> bytes:
    return string_at(t.data_ptr(), t.nbytes)


def main(rank: int, world: int, port: int) -> None:
    store = dist.TCPStore("127.0.0.1", port, world, rank == 0, 60)
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world, timeout=60)
    x = ctorch.tensor([((i * (rank + 1)) % 97) / 7.0 for i in range(1000)], dtype=ctorch.float32)
    dist.all_reduce(x)
    print("allreduce " + raw(x).hex(), flush=True)
    y = ctorch.tensor([rank * 10 + i for i in range(4)], dtype=ctorch.int64)
    dist.broadcast(y, world - 1)
    print("broadcast " + raw(y).hex(), flush=True)
    z = ctorch.tensor([rank, rank + 0.5], dtype=ctorch.float32)
    outs = [ctorch.empty(2) for _ in range(world)]
    dist.all_gather(outs, z)
    print("allgather " + b"".join(raw(o) for o in outs).hex(), flush=True)
    dist.barrier()
    print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[a.index("--rank") + 1]), int(a[a.index("--world") + 1]),
         int(a[a.index("--port") + 1]))
