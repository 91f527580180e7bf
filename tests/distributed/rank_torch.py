"""A rank of the mixed-language group in PyTorch's own Python
(torch.distributed with Gloo): the protocol of mixed_group.py.
Run by Debian's /usr/bin/python3 (torch 1.13) or the leg's torch."""
import sys
from datetime import timedelta

import torch
import torch.distributed as dist


def main(rank: int, world: int, port: int) -> None:
    try:  # torch >= 2.4 defaults to a libuv server, which Debian's build lacks
        store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timedelta(seconds=60),
                              use_libuv=False)
    except TypeError:
        store = dist.TCPStore("127.0.0.1", port, world, rank == 0, timedelta(seconds=60))
    dist.init_process_group("gloo", store=store, rank=rank, world_size=world,
                            timeout=timedelta(seconds=60))
    x = torch.tensor([((i * (rank + 1)) % 97) / 7.0 for i in range(1000)], dtype=torch.float32)
    dist.all_reduce(x)
    print("allreduce " + x.numpy().tobytes().hex(), flush=True)
    y = torch.tensor([rank * 10 + i for i in range(4)], dtype=torch.int64)
    dist.broadcast(y, world - 1)
    print("broadcast " + y.numpy().tobytes().hex(), flush=True)
    z = torch.tensor([rank, rank + 0.5], dtype=torch.float32)
    outs = [torch.empty(2) for _ in range(world)]
    dist.all_gather(outs, z)
    print("allgather " + b"".join(o.numpy().tobytes() for o in outs).hex(), flush=True)
    dist.barrier()
    print("done", flush=True)
    dist.destroy_process_group()


if __name__ == "__main__":
    a = sys.argv[1:]
    main(int(a[a.index("--rank") + 1]), int(a[a.index("--world") + 1]),
         int(a[a.index("--port") + 1]))
