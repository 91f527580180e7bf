#!/usr/bin/python3
"""Makes the AOTInductor packages (.pt2) that tests/c/test_package.c and
bindings/python/tests/test_package.py check: run as
`/usr/bin/python3 tests/models/make_packages.py OUTDIR`.

Each model NAME is exported with torch.export, compiled with
torch._inductor.aoti_compile_and_package into OUTDIR/NAME.pt2, and its eager
results are saved in OUTDIR/NAME_io.pt (torch.save of a dict: "inputs" and
"outputs" tuples, plus per-model extras):

  mlp      Linear-ReLU-Linear, one input, one output; its weights are also
           the ones swapped: "new_names" (the constants torch's loader lists,
           sorted), "new_tensors" and "new_outputs" give a replacement of all
           of them and the eager result
  multi    three inputs (float, float, int64) and three outputs, exported
           with a dynamic batch dimension; "batches" holds (inputs, outputs)
           for batch sizes 2, 5 and 17

  custom_op a model that calls the custom operator ctaoti::softsign, whose
           schema and fake kernel are defined here with torch.library; the
           real kernel is registered at test time through ctorch
           (tests/c/test_op_library.c). When this torch cannot compile it,
           custom_op_unsupported.txt says why instead.

plus bad packages: not_a_zip.pt2, wrong_contents.pt2 (a zip without a
model), cuda_device.pt2 (mlp with its device changed to CUDA). With a torch
that has no AOTInductor packaging (Debian 12's 1.13) it writes only
OUTDIR/unsupported.txt and exits 0, so the tests check the not-supported
path. Idempotent: does nothing when OUTDIR/.stamp is newer than this script.
Compiling takes about 10 s per model on two cores.

`make_packages.py --bench OUTDIR` makes only the benchmark's packages instead:
OUTDIR/convnet.pt2 (a small conv net, input 1x3x64x64) and, with
torchvision, OUTDIR/resnet18.pt2 (input 1x3x224x224); see bench/bench_package.cpp.
"""
import importlib
import os
import sys
import zipfile

if len(sys.argv) == 2 and sys.argv[1] != "--bench":
    _stamp = os.path.join(sys.argv[1], ".stamp")
    if os.path.exists(_stamp) and os.path.getmtime(_stamp) >= os.path.getmtime(__file__):
        sys.exit(0)

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover
    print("torch is not available; skipping", file=sys.stderr)
    sys.exit(77)


class MLP(nn.Module):
    def __init__(self, n_in=8, hidden=16, n_out=4):
        super().__init__()
        self.fc1 = nn.Linear(n_in, hidden)
        self.fc2 = nn.Linear(hidden, n_out)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


class Multi(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.randn(6, 6))

    def forward(self, x, y, n):
        return x @ self.w + y, (x * y).sum(1) + n.to(torch.float32), n * 2


def compile_package(module, args, path, dynamic_shapes=None):
    ep = torch.export.export(module, args, dynamic_shapes=dynamic_shapes)
    torch._inductor.aoti_compile_and_package(ep, package_path=path)


def as_tuple(out):
    return tuple(out) if isinstance(out, (tuple, list)) else (out,)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 16, 3, padding=1)
        self.c2 = nn.Conv2d(16, 32, 3, stride=2, padding=1)
        self.fc = nn.Linear(32, 10)

    def forward(self, x):
        x = torch.relu(self.c2(torch.relu(self.c1(x))))
        return self.fc(x.mean((2, 3)))


def bench_packages(outdir):
    os.makedirs(outdir, exist_ok=True)
    torch.manual_seed(0)
    with torch.no_grad():
        compile_package(ConvNet().eval(), (torch.randn(1, 3, 64, 64),),
                        os.path.join(outdir, "convnet.pt2"))
        try:
            import torchvision
        except ImportError:
            print("torchvision is not available; resnet18.pt2 skipped", file=sys.stderr)
            return 0
        compile_package(torchvision.models.resnet18(weights=None).eval(),
                        (torch.randn(1, 3, 224, 224),), os.path.join(outdir, "resnet18.pt2"))
    return 0


class UsesCustomOp(nn.Module):
    def forward(self, x):
        return torch.ops.ctaoti.softsign(x * 2) + 1


def custom_op_package(path):
    """custom_op.pt2: a model calling ctaoti::softsign (schema and fake kernel
    here; the eager kernel only for the expected outputs)."""
    global _custom_lib
    try:
        _custom_lib = torch.library.Library("ctaoti", "DEF")
        _custom_lib.define("softsign(Tensor x) -> Tensor")
        torch.library.register_fake("ctaoti::softsign", lambda x: torch.empty_like(x),
                                    lib=_custom_lib)
        _custom_lib.impl("softsign", lambda x: x / (1 + x.abs()), "CPU")
        m = UsesCustomOp().eval()
        x = torch.randn(4, 5)
        compile_package(m, (x,), path("custom_op.pt2"))
        torch.save({"inputs": (x,), "outputs": (m(x),)}, path("custom_op_io.pt"))
    except Exception as e:  # kept as the test's expected not-supported, with the reason
        with open(path("custom_op_unsupported.txt"), "w") as f:
            f.write("torch %s: %s: %s\n" % (torch.__version__, type(e).__name__, e))
        print("custom_op.pt2 not made: %s" % e, file=sys.stderr)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--bench":
        return bench_packages(sys.argv[2])
    if len(sys.argv) != 2:
        print("usage: make_packages.py OUTDIR", file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    stamp = os.path.join(outdir, ".stamp")
    try:
        inductor = importlib.import_module("torch._inductor")
    except ImportError:
        inductor = None
    if not hasattr(inductor, "aoti_compile_and_package"):
        with open(os.path.join(outdir, "unsupported.txt"), "w") as f:
            f.write("torch %s has no torch._inductor.aoti_compile_and_package\n" % torch.__version__)
        print("torch %s: no AOTInductor packaging; no packages made" % torch.__version__)
        with open(stamp, "w") as f:
            f.write("unsupported\n")
        return 0

    torch.manual_seed(0)
    path = lambda name: os.path.join(outdir, name)  # noqa: E731

    with torch.no_grad():
        mlp = MLP().eval()
        x = torch.randn(3, 8)
        compile_package(mlp, (x,), path("mlp.pt2"))
        out = mlp(x)
        # The constants the package can swap are the ones torch's own loader lists
        # (inductor may fold some, e.g. torch 2.6 folds fc2.bias into its kernel):
        # new_names is that list, sorted, and new_outputs is eager with exactly
        # those weights replaced (the folded ones keep their compiled values).
        swappable = sorted(torch._inductor.aoti_load_package(path("mlp.pt2")).get_constant_fqns())
        new = {k: torch.randn_like(v) for k, v in sorted(mlp.state_dict().items())
               if k in swappable}
        if sorted(new) != swappable:
            raise SystemExit("make_packages.py: the loader lists constants the MLP lacks: %r"
                             % swappable)
        mlp.load_state_dict(new, strict=False)
        torch.save({"inputs": (x,), "outputs": (out,), "new_names": tuple(new),
                    "new_tensors": tuple(new.values()), "new_outputs": (mlp(x),)},
                   path("mlp_io.pt"))

        multi = Multi().eval()
        batch = torch.export.Dim("batch", min=2, max=64)
        ins = (torch.randn(4, 6), torch.randn(4, 6), torch.arange(4, dtype=torch.int64))
        compile_package(multi, ins, path("multi.pt2"),
                        dynamic_shapes=({0: batch}, {0: batch}, {0: batch}))
        batches = []
        for b in (2, 5, 17):
            bi = (torch.randn(b, 6), torch.randn(b, 6), torch.arange(b, dtype=torch.int64) - 2)
            batches.append((bi, as_tuple(multi(*bi))))
        torch.save({"inputs": ins, "outputs": as_tuple(multi(*ins)), "batches": tuple(batches)},
                   path("multi_io.pt"))

        custom_op_package(path)

    # Bad packages.
    with open(path("not_a_zip.pt2"), "wb") as f:
        f.write(b"this is not a zip archive\n" * 4)
    with zipfile.ZipFile(path("wrong_contents.pt2"), "w") as z:
        z.writestr("archive/data/readme.txt", "no model in here\n")
    with zipfile.ZipFile(path("mlp.pt2")) as src, \
            zipfile.ZipFile(path("cuda_device.pt2"), "w") as dst:
        changed = False
        for info in src.infolist():
            data = src.read(info.filename)
            if info.filename.endswith("_metadata.json") and b'"cpu"' in data:
                data = data.replace(b'"cpu"', b'"cuda"')
                changed = True
            dst.writestr(info, data)
        if not changed:
            raise SystemExit("make_packages.py: no device in mlp.pt2's metadata")

    with open(stamp, "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
