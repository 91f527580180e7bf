#!/usr/bin/python3
"""Makes the checkpoints tests/c/test_checkpoints.c loads with ct_pickle_load:
run as `/usr/bin/python3 tests/models/make_checkpoints.py OUTDIR`. They hold
what real checkpoints hold besides tensors, and what LibTorch's own
unpickler refuses:

  optim.pt     {"epoch", "model" (state_dict), "optimizer" (Adam state_dict
               after one step), "args" (argparse.Namespace), "best_acc"
               (numpy.float64), "step" (numpy.int64), "hist" (float32 numpy
               array), "mask" (bool numpy array), "fortran" (Fortran-ordered
               float64 numpy array), "classes" (a set)}
  legacy.pt    {"w", "b", "row" (a view of w)} saved with
               _use_new_zipfile_serialization=False (pre-1.6 format)
  module.pt    a whole nn.Sequential(Linear(3, 2), ReLU()) (torch.save(model))
  plain.pkl    pickle.dump(argparse.Namespace(...), protocol=4)
  sparse.pt    {"coo", "csr" (sparse tensors), "coo_dense", "csr_dense"}
               (torch._utils._rebuild_sparse_tensor)
  sparse_bad.pt  a COO tensor whose index is past its size (made unchecked),
               which torch.load refuses too
  ref.pt       the expected tensors as a plain state-dict-like dict
               (readable by every ctorch): model weights, optimizer moments,
               the numpy arrays as tensors, legacy w/b/row, module weights.
Idempotent: nothing to do when OUTDIR/.stamp is newer than this script.
Exits 77 (CTest: skipped) when torch or numpy is not importable.
"""
import os
import sys

if __name__ == "__main__" and len(sys.argv) == 2:
    _stamp = os.path.join(sys.argv[1], ".stamp")
    if os.path.exists(_stamp) and os.path.getmtime(_stamp) >= os.path.getmtime(__file__):
        sys.exit(0)

try:
    import argparse
    import pickle
    import warnings

    import numpy as np
    import torch
    from torch import nn
except ImportError:  # pragma: no cover
    print("torch or numpy is not available; skipping", file=sys.stderr)
    sys.exit(77)


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    model = nn.Linear(3, 2)
    opt = torch.optim.Adam(model.parameters(), lr=0.01)
    model(torch.ones(4, 3)).sum().backward()
    opt.step()
    args = argparse.Namespace(lr=0.01, epochs=10, name="run1", betas=(0.9, 0.999), resume=None)
    hist = np.array([[1.5, 2.5], [3.5, -4.0]], dtype=np.float32)
    mask = np.array([True, False, True])
    fortran = np.asfortranarray(np.arange(6, dtype=np.float64).reshape(2, 3))
    torch.save({
        "epoch": 3,
        "model": model.state_dict(),
        "optimizer": opt.state_dict(),
        "args": args,
        "best_acc": np.float64(0.875),
        "step": np.int64(1200),
        "hist": hist,
        "mask": mask,
        "fortran": fortran,
        "classes": {"cat"},
    }, os.path.join(out, "optim.pt"))

    w = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = torch.tensor([1, -2], dtype=torch.int64)
    torch.save({"w": w, "b": b, "row": w[1]}, os.path.join(out, "legacy.pt"),
               _use_new_zipfile_serialization=False)

    seq = nn.Sequential(nn.Linear(3, 2), nn.ReLU())
    torch.save(seq, os.path.join(out, "module.pt"))

    with open(os.path.join(out, "plain.pkl"), "wb") as f:
        pickle.dump(argparse.Namespace(lr=0.5, tags=["a", "b"], depth=4), f, protocol=4)

    coo = torch.sparse_coo_tensor([[0, 2, 3], [1, 0, 2]], [1.5, -2.0, 4.0], (4, 3))
    with warnings.catch_warnings():  # "Sparse CSR tensor support is in beta state"
        warnings.simplefilter("ignore")
        csr = torch.tensor([[0.0, 1.0, 0.0], [2.0, 0.0, 3.0]]).to_sparse_csr()
    torch.save({"coo": coo, "csr": csr, "coo_dense": coo.to_dense(), "csr_dense": csr.to_dense()},
               os.path.join(out, "sparse.pt"))
    bad_args = (torch.tensor([[0, 9]]), torch.tensor([1.0, 2.0]), (4,))
    if hasattr(torch, "_sparse_coo_tensor_unsafe"):  # torch 1.13
        bad = torch._sparse_coo_tensor_unsafe(*bad_args)
    else:
        bad = torch.sparse_coo_tensor(*bad_args, check_invariants=False)
    torch.save({"bad": bad}, os.path.join(out, "sparse_bad.pt"))

    st = opt.state_dict()["state"][0]
    torch.save({
        "model.weight": model.weight.detach(),
        "model.bias": model.bias.detach(),
        "exp_avg": st["exp_avg"],
        "exp_avg_sq": st["exp_avg_sq"],
        "hist": torch.from_numpy(hist),
        "mask": torch.from_numpy(mask),
        "fortran": torch.from_numpy(np.ascontiguousarray(fortran)),
        "w": w, "b": b, "row": w[1].clone(),
        "seq.0.weight": seq[0].weight.detach(),
        "seq.0.bias": seq[0].bias.detach(),
    }, os.path.join(out, "ref.pt"))
    with open(os.path.join(out, ".stamp"), "w"):
        pass


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_checkpoints.py OUTDIR")
    main(sys.argv[1])
