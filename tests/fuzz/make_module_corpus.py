#!/usr/bin/env python3
"""Makes tests/fuzz/corpus/module_load/: a traced module with two tensor
constants (two_consts.pt, a seed for fuzz_module_load) and two copies whose
constants.pkl gives both constants a geometry outside their 16-byte storages
(issue 40): a storage offset of 100,000,000 (const_offset.pt) and a stride of
100,000,000 (const_stride.pt). LibTorch 1.13's loader compares the two
constants with at::equal while it compiles the code (constant pooling) and
dies in at::native::cpu_equal; ct_module_load refuses both (test
tests/c/test_module_corrupt.c). Run with /usr/bin/python3 (torch 1.13):

    /usr/bin/python3 tests/fuzz/make_module_corpus.py tests/fuzz/corpus/module_load
"""
import io
import os
import struct
import sys
import zipfile

import torch

C0 = torch.arange(4.0)
C1 = torch.arange(4.0) * 2
BIG = b"J" + struct.pack("<i", 100000000)  # BININT 100,000,000


class TwoConsts(torch.nn.Module):
    def forward(self, x):
        return x + C0 + C1


def rezip(src, edit):
    """src's records in the same order, constants.pkl edited by edit()."""
    out = io.BytesIO()
    with zipfile.ZipFile(io.BytesIO(src)) as zi, zipfile.ZipFile(out, "w") as zo:
        for info in zi.infolist():
            data = zi.read(info.filename)
            if info.filename.endswith("/constants.pkl"):
                new = edit(data)
                assert new != data, "the edit did not apply"
                data = new
            zo.writestr(info, data)
    return out.getvalue()


def main(out_dir):
    os.makedirs(out_dir, exist_ok=True)
    buf = io.BytesIO()
    torch.jit.save(torch.jit.trace(TwoConsts(), torch.zeros(4)), buf)
    seed = buf.getvalue()
    # Each rebuilt tensor is (storage, offset, (size,), (stride,), ...):
    # BINPERSID BINPUT n BININT1 0 -- the offset after each persistent id.
    files = {
        "two_consts.pt": seed,
        "const_offset.pt": rezip(
            seed, lambda d: d.replace(b"Qq\x05K\x00", b"Qq\x05" + BIG).replace(b"Qq\tK\x00", b"Qq\t" + BIG)
        ),
        "const_stride.pt": rezip(seed, lambda d: d.replace(b"(K\x01t", b"(" + BIG + b"t")),
    }
    for name, data in files.items():
        with open(os.path.join(out_dir, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "corpus", "module_load"))
