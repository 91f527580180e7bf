#!/usr/bin/python3
"""Makes the TorchScript models and reference data that tests/c/test_models.c
checks: run as `/usr/bin/python3 tests/models/make_models.py OUTDIR`.

For each model NAME it writes OUTDIR/NAME.pt (torch.jit.save) and
OUTDIR/NAME_io.pt (torch.save of a dict with at least "inputs": [...] and
"output", plus "param_names" / "buffer_names" in Python's order). It also
writes plain torch.save pickles (state_dict.pt, tensor.pt, tensor_list.pt,
tensor_tuple.pt). Idempotent: does nothing when OUTDIR/.stamp is newer than
this script. Exits 77 (CTest: skipped) when torch is not importable.
"""
import glob
import json
import os
import subprocess
import sys
from typing import Dict, List, Optional, Tuple

# Up to date? Checked before importing torch (which takes seconds).
if len(sys.argv) == 2:
    _stamp = os.path.join(sys.argv[1], ".stamp")
    if os.path.exists(_stamp) and os.path.getmtime(_stamp) >= os.path.getmtime(__file__):
        sys.exit(0)

try:
    import torch
    from torch import Tensor, nn
except ImportError:  # pragma: no cover
    print("torch is not available; skipping", file=sys.stderr)
    sys.exit(77)


class Gate(nn.Module):
    """A parameter and a data-dependent branch."""

    def __init__(self):
        super().__init__()
        self.weight = nn.Parameter(torch.randn(4, 4))
        self.bias = nn.Parameter(torch.randn(4))

    def forward(self, x: Tensor) -> Tensor:
        if bool(x.sum() > 0):
            return torch.matmul(x, self.weight) + self.bias
        else:
            return torch.relu(x) - self.bias


class Seq(nn.Module):
    """An LSTM with a (h, c) tuple state in and out."""

    def __init__(self):
        super().__init__()
        self.lstm = nn.LSTM(input_size=5, hidden_size=7, num_layers=1, batch_first=True)
        self.head = nn.Linear(7, 3)

    def forward(self, x: Tensor, state: Tuple[Tensor, Tensor]) -> Tuple[Tensor, Tuple[Tensor, Tensor]]:
        out, (h, c) = self.lstm(x, state)
        return self.head(out), (h, c)


class Containers(nn.Module):
    """Dict, list, str, int, float and Optional in and out."""

    def forward(self, d: Dict[str, Tensor], l: List[int], s: str, i: int, f: float,
                o: Optional[Tensor]) -> Tuple[Dict[str, Tensor], List[int], str, int, float,
                                              Optional[Tensor]]:
        out: Dict[str, Tensor] = {}
        for k, v in d.items():
            out[k + "_scaled"] = v * f
        l2 = l + [i, len(s)]
        r: Optional[Tensor] = None
        if o is not None:
            r = o + 1
        return out, l2, s + "!", i * 2, f / 2.0, r


class Multi(nn.Module):
    """Several exported methods, one with keyword defaults."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Linear(6, 3)
        self.dec = nn.Linear(3, 6)

    def forward(self, x: Tensor) -> Tensor:
        return self.decode(self.encode(x), 1.0, 0)

    @torch.jit.export
    def encode(self, x: Tensor) -> Tensor:
        return torch.tanh(self.enc(x))

    @torch.jit.export
    def decode(self, z: Tensor, scale: float = 1.0, shift: int = 0) -> Tensor:
        return self.dec(z) * scale + shift


class ConvBN(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(3, 4, 3, padding=1)
        self.bn = nn.BatchNorm2d(4)

    def forward(self, x: Tensor) -> Tensor:
        return torch.relu(self.bn(self.conv(x)))


class Dtypes(nn.Module):
    def forward(self, x: Tensor) -> Tuple[Tensor, Tensor, Tensor]:
        return x.argmax(dim=1), x > 0, x.to(torch.float64) * 2


class NonContig(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return (x * 2).t()


class Nms(nn.Module):
    """Needs torchvision's custom op library (ct_load_library) to load."""

    def forward(self, boxes: Tensor, scores: Tensor) -> Tensor:
        return torch.ops.torchvision.nms(boxes, scores, 0.5)


class WithMeta(nn.Module):
    def forward(self, x: Tensor) -> Tensor:
        return x + 1


def lstm_reference(seq, x, st):
    """seq(x, st), computed so that it is right on every CPU.

    LibTorch 2.x with oneDNN gives wrong nn.LSTM results under no_grad /
    inference mode on AVX-512 CPUs (Debian 13's torch 2.6: max error 0.26;
    right with grad on, with oneDNN off, or with ONEDNN_MAX_CPU_ISA=AVX2).
    The reference is computed with grad on (no oneDNN RNN path) and checked
    against a float64 run, so a wrong reference fails here, not in the tests.
    """
    with torch.enable_grad():
        out = seq(x, st)
        out = (out[0].detach(), (out[1][0].detach(), out[1][1].detach()))
        eager = Seq()
        eager.load_state_dict(seq.state_dict())
        ref = eager.double()(x.double(), (st[0].double(), st[1].double()))
    for got, want in ((out[0], ref[0]), (out[1][0], ref[1][0]), (out[1][1], ref[1][1])):
        err = (got.double() - want.detach()).abs().max().item()
        if err > 1e-5:
            raise SystemExit("make_models.py: LSTM reference differs from float64 by %g" % err)
    return out


def names(m):
    return ([n for n, _ in m.named_parameters()], [n for n, _ in m.named_buffers()])


def save(outdir, name, module, inputs, output, **extra):
    module.save(os.path.join(outdir, name + ".pt"), **({"_extra_files": extra.pop("_extra_files")}
                                                      if "_extra_files" in extra else {}))
    p, b = names(module)
    # LibTorch 1.13's pickle reader (ct_pickle_load) lacks the APPEND and
    # SETITEM opcodes that Python uses for one-element lists and dicts
    # (pytorch#67902, fixed in 2.x by pytorch#104027): store one input as a
    # tuple.
    if len(inputs) == 1:
        inputs = tuple(inputs)
    io = {"inputs": inputs, "output": output, "param_names": p, "buffer_names": b}
    io.update({k: tuple(v) if isinstance(v, list) and len(v) == 1 else v for k, v in extra.items()})
    torch.save(io, os.path.join(outdir, name + "_io.pt"))


def main():
    if len(sys.argv) != 2:
        print("usage: make_models.py OUTDIR", file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    stamp = os.path.join(outdir, ".stamp")
    if os.path.exists(stamp) and os.path.getmtime(stamp) >= os.path.getmtime(__file__):
        return 0
    torch.manual_seed(0)
    torch.set_num_threads(1)

    with torch.no_grad():
        # Traced torchvision resnet18 (random weights), eval mode.
        try:
            import torchvision

            net = torchvision.models.resnet18(weights=None).eval()
            x = torch.randn(1, 3, 64, 64)
            traced = torch.jit.trace(net, (x,))
            save(outdir, "resnet18", traced, [x], traced(x))

            # A model that calls torchvision::nms, and the library registering it.
            import torchvision.ops  # noqa: F401  (registers torchvision::nms)

            nms = torch.jit.script(Nms())
            boxes = torch.tensor([[0, 0, 10, 10], [1, 1, 11, 11], [20, 20, 30, 30]],
                                 dtype=torch.float32)
            scores = torch.tensor([0.9, 0.8, 0.7])
            save(outdir, "nms", nms, [boxes, scores], nms(boxes, scores))
            lib = next(p for p in glob.glob(os.path.join(os.path.dirname(torchvision.__file__),
                                                         "_C*.so")))
            # PyPI's torchvision links libtorch_python (Python's C API): a C
            # program cannot load it, so c.test_load_library skips there.
            needed = subprocess.run(["readelf", "-d", lib], capture_output=True, text=True).stdout
            if "libtorch_python" in needed:
                print("torchvision's %s needs libtorch_python (Python's C API); the C "
                      "ct_load_library test skips" % lib, file=sys.stderr)
            else:
                with open(os.path.join(outdir, "torchvision_lib.txt"), "w") as f:
                    f.write(lib)
        except ImportError:
            print("torchvision is not available; resnet18 skipped", file=sys.stderr)

        gate = torch.jit.script(Gate())
        xp = torch.randn(3, 4).abs()
        xn = -xp
        save(outdir, "gate", gate, [xp], gate(xp), inputs_neg=[xn], output_neg=gate(xn))

        seq = torch.jit.script(Seq().eval())
        x = torch.randn(2, 4, 5)
        st = (torch.randn(1, 2, 7), torch.randn(1, 2, 7))
        save(outdir, "lstm", seq, [x, st], lstm_reference(seq, x, st))

        cont = torch.jit.script(Containers())
        ins = [{"a": torch.arange(3.0), "b": torch.ones(2, 2)}, [1, 2], "hey", 5, 1.5, None]
        ins2 = list(ins)
        ins2[5] = torch.zeros(2)
        save(outdir, "containers", cont, ins, cont(*ins), inputs_opt=ins2, output_opt=cont(*ins2))

        multi = torch.jit.script(Multi())
        x = torch.randn(2, 6)
        z = multi.encode(x)
        save(outdir, "multi", multi, [x], multi(x), encode_out=z, decode_in=(z,),
             decode_kwargs={"scale": 2.0, "shift": 3}, decode_out=multi.decode(z, scale=2.0, shift=3),
             decode_default_out=multi.decode(z))

        cb = ConvBN()
        with torch.enable_grad():
            cb.train()
            for _ in range(3):
                cb(torch.randn(4, 3, 8, 8) + 1.0)
        cb.eval()
        cbs = torch.jit.script(cb)
        x = torch.randn(2, 3, 8, 8)
        save(outdir, "convbn", cbs, [x], cbs(x))

        dt = torch.jit.script(Dtypes())
        x = torch.randn(3, 5)
        save(outdir, "dtypes", dt, [x], dt(x))

        nc = torch.jit.script(NonContig())
        x = torch.randn(3, 4)
        save(outdir, "noncontig", nc, [x], nc(x))

        wm = torch.jit.script(WithMeta())
        meta = json.dumps({"name": "with_meta", "version": 3})
        x = torch.ones(2)
        save(outdir, "with_meta", wm, [x], wm(x), meta=meta,
             _extra_files={"meta.json": meta, "notes.txt": "hello"})

        # Plain torch.save pickles.
        # A plain dict: an OrderedDict state_dict carries _metadata with
        # one-element dicts that LibTorch 1.13 cannot unpickle (see above).
        torch.save(dict(Gate().state_dict()), os.path.join(outdir, "state_dict.pt"))
        t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
        torch.save(t, os.path.join(outdir, "tensor.pt"))
        torch.save([t, t * 2, torch.tensor([1, 2, 3])], os.path.join(outdir, "tensor_list.pt"))
        torch.save((t, t.t()), os.path.join(outdir, "tensor_tuple.pt"))

    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
