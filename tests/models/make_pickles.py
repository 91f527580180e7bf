#!/usr/bin/python3
"""Makes the torch.save pickles that tests/c/test_pickle.c loads with
ct_pickle_load / ct_pickle_load_buffer: run as
`/usr/bin/python3 tests/models/make_pickles.py OUTDIR`.

These are plain torch.save files as Python writes them (zip format, pickle
protocol 2), deliberately with the opcodes LibTorch 1.13's unpickler lacks:
APPEND (one-element lists), SETITEM (one-element dicts) and
collections.OrderedDict with a BUILD of its _metadata (a real state_dict).

For each NAME it writes OUTDIR/NAME.pt and OUTDIR/NAME.ref, the reference: the
value in a canonical text form, one node per line, that test_pickle.c
produces from the loaded ct_value and tests/models/check_pickles.py from
what Python reads back from the files the C test saves (c_NAME.pt):

    none | bool 0/1 | int N | float %.17g | str TEXT
    tensor DTYPE SIZES VALUES   (SIZES "2,3" or "-" for 0-d; VALUES the
                                 elements in row-major order, floats %.9g)
    list N | tuple N | dict N   followed by the N items (dict: key, value)

It also writes legacy.pt (pre-zip format) and proto4.pt (pickle protocol 4),
which LibTorch 1.13's unpickler rejects (ctorch's reader loads both). Python's OrderedDict is written as "dict" (C++ has one dict type, which keeps
insertion order). Idempotent: does nothing when OUTDIR/.stamp is newer than
this script. Exits 77 (CTest: skipped) when torch is not importable.
"""
import os
import sys

# Up to date? Checked before importing torch (which takes seconds).
if __name__ == "__main__" and len(sys.argv) == 2:
    _stamp = os.path.join(sys.argv[1], ".stamp")
    if os.path.exists(_stamp) and os.path.getmtime(_stamp) >= os.path.getmtime(__file__):
        sys.exit(0)

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover
    print("torch is not available; skipping", file=sys.stderr)
    sys.exit(77)


def _fmt_scalar(x, dtype):
    if dtype.is_floating_point:
        return "%.9g" % x
    if dtype == torch.bool:
        return "1" if x else "0"
    return "%d" % x


def canonical(v, out=None):
    """The reference text of v (see the module docstring)."""
    if out is None:
        out = []
    if v is None:
        out.append("none")
    elif isinstance(v, bool):
        out.append("bool %d" % int(v))
    elif isinstance(v, int):
        out.append("int %d" % v)
    elif isinstance(v, float):
        out.append("float %.17g" % v)
    elif isinstance(v, str):
        assert "\n" not in v
        out.append("str " + v)
    elif isinstance(v, torch.Tensor):
        dtype = str(v.dtype).replace("torch.", "")
        sizes = ",".join(str(s) for s in v.shape) if v.dim() > 0 else "-"
        flat = v.detach().contiguous().reshape(-1).tolist()
        vals = " ".join(_fmt_scalar(x, v.dtype) for x in flat)
        out.append(("tensor %s %s %s" % (dtype, sizes, vals)).rstrip())
    elif isinstance(v, list):
        out.append("list %d" % len(v))
        for x in v:
            canonical(x, out)
    elif isinstance(v, tuple):
        out.append("tuple %d" % len(v))
        for x in v:
            canonical(x, out)
    elif isinstance(v, dict):  # dict and OrderedDict
        out.append("dict %d" % len(v))
        for k, x in v.items():
            canonical(k, out)
            canonical(x, out)
    else:
        raise TypeError("no canonical form for %r" % type(v))
    return out


def canonical_text(v):
    return "\n".join(canonical(v)) + "\n"


def make_values():
    torch.manual_seed(0)
    # A real state_dict: OrderedDict with a _metadata attribute whose values
    # are one-element dicts ({'version': N}), running stats after one step,
    # and an int64 0-d num_batches_tracked.
    model = nn.Sequential(nn.Linear(2, 2), nn.BatchNorm1d(2))
    model.train()
    model(torch.randn(4, 2))
    state_dict = model.state_dict()
    assert hasattr(state_dict, "_metadata")

    base = torch.arange(6, dtype=torch.float32)
    values = {
        "state_dict": state_dict,
        # One-element lists (APPEND) of a tensor and of an int.
        "list1": [torch.randn(3)],
        "int_list1": [7],
        # One-element dict (SETITEM).
        "dict1": {"a": 1},
        # Nested one-element containers, mixed with longer ones.
        "nested": [
            [1],
            [[2.5]],
            {"k": [3]},
            {"one": {"two": "x"}},
            [[[torch.tensor([True, False])]]],
            [None, True, "s"],
            (4,),
        ],
        # Tuples of several sizes, with one-element lists inside.
        "tuple": (torch.ones(1), 2, "x", (3,), ([5],), (1, 2, 3, 4)),
        # Views sharing one storage: a slice and a transposed reshape.
        "view": [base, base[1:3], base.view(2, 3).t()],
        # A typical training checkpoint.
        "checkpoint": {
            "model": nn.Linear(3, 1).state_dict(),
            "epoch": 3,
            "lr": 0.1,
            "tags": ["a"],
            "best": {"loss": 0.25},
        },
    }
    return values


def main():
    if len(sys.argv) != 2:
        print("usage: make_pickles.py OUTDIR", file=sys.stderr)
        return 2
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for name, v in make_values().items():
        path = os.path.join(outdir, name + ".pt")
        torch.save(v, path + ".tmp")
        os.replace(path + ".tmp", path)
        # The file reads back in Python as the reference says.
        back = torch.load(path)
        ref = canonical_text(v)
        assert canonical_text(back) == ref, name
        with open(os.path.join(outdir, name + ".ref.tmp"), "w") as f:
            f.write(ref)
        os.replace(os.path.join(outdir, name + ".ref.tmp"), os.path.join(outdir, name + ".ref"))
    # Files LibTorch 1.13's unpickler cannot read, without a reference: the
    # legacy (pre-zip) format and a zip whose pickle uses protocol 4 (opcodes
    # such as FRAME); ctorch's reader (src/pickle/) loads them.
    small = [torch.ones(2)]
    torch.save(small, os.path.join(outdir, "legacy.pt"), _use_new_zipfile_serialization=False)
    torch.save(small, os.path.join(outdir, "proto4.pt"), pickle_protocol=4)
    with open(os.path.join(outdir, ".stamp"), "w") as f:
        f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
