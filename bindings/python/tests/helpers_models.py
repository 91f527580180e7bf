"""Small TorchScript models made by the tests themselves (torch.jit.script
needs the source in a real file)."""
import os
from typing import Dict, List, Tuple

import torch


class AE(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.enc = torch.nn.Linear(4, 2)
        self.dec = torch.nn.Linear(2, 4)
        self.register_buffer("scale", torch.tensor([2.0]))

    def forward(self, x):
        return self.dec(self.enc(x)) * self.scale

    @torch.jit.export
    def encode(self, x):
        return self.enc(x)

    @torch.jit.export
    def kinds(self, t: Tuple[torch.Tensor, int], l: List[torch.Tensor],
              d: Dict[str, torch.Tensor], s: str = "x"):
        return (t[0] + t[1], [x * 2 for x in l], {k + s: v + 1 for k, v in d.items()})


class TupleOut(torch.nn.Module):
    def forward(self, x):
        return x + 1, x * 2

    @torch.jit.export
    def as_list(self, x) -> List[torch.Tensor]:
        return [x, x - 1]

    @torch.jit.export
    def mixed(self, x) -> Tuple[torch.Tensor, int]:
        return x, 3


class UsesForeign(torch.nn.Module):
    def forward(self, x):
        return torch.ops.pytest_ns.twice(x) + 1


def save_foreign(path):
    """Run in a SEPARATE process: registers pytest_ns::twice with torch (to be
    able to script a call to it) and saves a model calling it. The test
    process then registers the op with ctorch from Python and loads it."""
    lib = torch.library.Library("pytest_ns", "DEF")
    lib.define("twice(Tensor x) -> Tensor")
    lib.impl("twice", lambda x: x * 2, "CPU")
    m = torch.jit.script(UsesForeign())
    torch.jit.save(m, path)


def save(name, outdir, **kw):
    torch.manual_seed(0)
    m = torch.jit.script({"ae": AE, "tuple_out": TupleOut}[name]())
    path = os.path.join(outdir, name + ".pt")
    torch.jit.save(m, path, _extra_files=kw.get("extra_files", {}))
    return path, m


if __name__ == "__main__":
    import sys
    save_foreign(sys.argv[1])
