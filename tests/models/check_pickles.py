#!/usr/bin/python3
"""Reads back, with Python's torch.load, the files tests/c/test_pickle.c saved
with ct_pickle_save: run as `/usr/bin/python3 tests/models/check_pickles.py DIR`
where DIR is the OUTDIR of make_pickles.py.

For every reference DIR/NAME.ref (see make_pickles.py) the C test writes
DIR/c_NAME.pt; each must load in Python (with torch.load's default, which is
weights_only=True since torch 2.6, and with weights_only False and True) and have the same canonical form as the
original (OrderedDict compares as dict). The views in c_view.pt must still
share one storage. Exits 77 (CTest: skipped) when torch is not importable.
"""
import glob
import os
import sys

try:
    import torch
except ImportError:  # pragma: no cover
    print("torch is not available; skipping", file=sys.stderr)
    sys.exit(77)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from make_pickles import canonical_text  # noqa: E402


def _weights_only_loads(path):
    try:
        torch.load(path, weights_only=True)
        return True
    except Exception:
        return False


def main():
    if len(sys.argv) != 2:
        print("usage: check_pickles.py DIR", file=sys.stderr)
        return 2
    d = sys.argv[1]
    refs = sorted(glob.glob(os.path.join(d, "*.ref")))
    if not refs:
        print("no references in %s" % d, file=sys.stderr)
        return 1
    bad = 0
    for ref_path in refs:
        name = os.path.basename(ref_path)[: -len(".ref")]
        path = os.path.join(d, "c_" + name + ".pt")
        with open(ref_path) as f:
            ref = f.read()
        # Both ways: torch.load's default (weights_only=True since torch 2.6,
        # which refuses torch.jit type tags), and weights_only=False / True
        # explicitly on every torch that has the argument (1.13 and later).
        for kw in ({}, {"weights_only": False}, {"weights_only": True}):
            if kw.get("weights_only") and not _weights_only_loads(os.path.join(d, name + ".pt")):
                # This torch's weights-only reader refuses Python's own file
                # too (1.13 lacks opcodes such as BINFLOAT): nothing to compare.
                continue
            try:
                got = canonical_text(torch.load(path, **kw))
            except Exception as e:  # report every file, not just the first
                print("%s: cannot load with torch.load(%s): %s" % (path, kw, e))
                bad += 1
                continue
            if got != ref:
                print("%s (torch.load(%s)) differs from %s:\n--- got\n%s--- expected\n%s"
                      % (path, kw, ref_path, got, ref))
                bad += 1
            else:
                print("%s: ok (torch.load(%s))" % (path, kw))
    view = torch.load(os.path.join(d, "c_view.pt"))
    ptr = view[0].storage().data_ptr()
    if not all(t.storage().data_ptr() == ptr for t in view):
        print("c_view.pt: the views no longer share one storage")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
