#!/usr/bin/python3
"""Checks that Python's torch reads what ctorch writes.

usage: check_c_module.py MODULE.pt IO.pt
MODULE.pt was saved by ct_module_save; IO.pt by ct_pickle_save with
{"inputs": [...], "output": ...}. Loads both with torch.jit.load / torch.load,
runs forward on the inputs and compares with the output. Exits 77 (CTest:
skipped) when torch or the files are missing.
"""
import os
import sys


def main():
    if len(sys.argv) != 3:
        print(__doc__, file=sys.stderr)
        return 2
    try:
        import torch
    except ImportError:
        print("torch is not available; skipping", file=sys.stderr)
        return 77
    path, io_path = sys.argv[1], sys.argv[2]
    if not (os.path.exists(path) and os.path.exists(io_path)):
        print("missing %s or %s (run c.test_models first); skipping" % (path, io_path), file=sys.stderr)
        return 77
    m = torch.jit.load(path)
    io = torch.load(io_path)
    out = m(*io["inputs"])
    want = io["output"]
    if not torch.allclose(out, want, rtol=1e-5, atol=1e-6):
        print("mismatch:\n%s\n%s" % (out, want), file=sys.stderr)
        return 1
    # Keyword default defined in C survives the round trip.
    out3 = m(*io["inputs"], k=3)
    if not torch.allclose(out3, want * 1.5, rtol=1e-5, atol=1e-6):
        print("keyword default mismatch", file=sys.stderr)
        return 1
    print("ok: %s" % [n for n, _ in m.named_parameters()])
    return 0


if __name__ == "__main__":
    sys.exit(main())
