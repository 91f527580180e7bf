#!/usr/bin/python3
"""Reads back, with Python's torch.load, the files tests/c/test_pickle.c saved
with ct_pickle_save: run as `/usr/bin/python3 tests/models/check_pickles.py DIR`
where DIR is the OUTDIR of make_pickles.py.

For every reference DIR/NAME.ref (see make_pickles.py) the C test writes
DIR/c_NAME.pt; each must load in Python and have the same canonical form as the
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
        try:
            got = canonical_text(torch.load(path))
        except Exception as e:  # report every file, not just the first
            print("%s: cannot load: %s" % (path, e))
            bad += 1
            continue
        if got != ref:
            print("%s differs from %s:\n--- got\n%s--- expected\n%s" % (path, ref_path, got, ref))
            bad += 1
        else:
            print("%s: ok" % path)
    view = torch.load(os.path.join(d, "c_view.pt"))
    ptr = view[0].storage().data_ptr()
    if not all(t.storage().data_ptr() == ptr for t in view):
        print("c_view.pt: the views no longer share one storage")
        bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
