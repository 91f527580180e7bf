"""Shared parts of the `ctorch` command's tests (test_ctorch_cli.py, ctorch_cli_checks.py):
the command and the models folder from the command line, running the command, reference
models and their recorded inputs and outputs."""
import concurrent.futures
import json
import os
import subprocess
import sys

import torch

EXE, MODELS = sys.argv[1], sys.argv[2]
PACKAGES = os.environ.get("CTORCH_TEST_PACKAGES", "")


def ctorch(*args, check=None):
    r = subprocess.run([EXE, *map(str, args)], capture_output=True, text=True, timeout=300)
    if check is not None:
        assert r.returncode == check, f"ctorch {args}: exit {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r


def ctorch_all(arg_lists, check=None):
    """ctorch once per argument list, two at a time (each start loads LibTorch,
    about a second here); the results in order."""
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        return list(pool.map(lambda args: ctorch(*args, check=check), arg_lists))


def npy_header(shape):
    """A version 1.0 .npy header for float32 data of `shape` (a string, written as is)."""
    h = ("{'descr': '<f4', 'fortran_order': False, 'shape': %s, }" % shape).encode()
    h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
    return b"\x93NUMPY\x01\x00" + len(h).to_bytes(2, "little") + h


def model(name):
    return os.path.join(MODELS, name + ".pt")


def io(name):
    return torch.load(os.path.join(MODELS, name + "_io.pt"))


def libtorch_version():
    d = json.loads(ctorch("info", "--json", check=0).stdout)
    return tuple(int(x) for x in d["libtorch"].split(".")[:2])


HAVE_AOTI = libtorch_version() >= (2, 6)


def package(name):
    return os.path.join(PACKAGES, name + ".pt2")


def spinning_model(directory):
    """Saves, in directory, a TorchScript model whose forward never returns
    (for --timeout); returns its path."""
    class Spin(torch.nn.Module):
        def forward(self, x):
            i = 0
            while True:
                i += 1
                if i < 0:
                    break
            return x + i

    path = os.path.join(directory, "spin.pt")
    torch.jit.script(Spin()).save(path)
    return path
