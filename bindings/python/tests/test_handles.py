"""Handle ownership: copies and pickles of every handle class own their handle
(or are refused), user integers never reach C truncated, and free() is safe
against use on another thread. What could crash the interpreter on a broken
binding runs in a child process."""
import copy
import json
import os
import pickle
import subprocess
import sys

import pytest

import ctorch
from ctorch import _lib, ops

HERE = os.path.dirname(os.path.abspath(__file__))


def _child(code, *args):
    """Runs code in a fresh interpreter (argv[1]: the test paths, then args);
    returns the JSON its last stdout line holds."""
    # the package under test: this checkout's, or the installed one (the wheel leg)
    paths = json.dumps([HERE] + ([] if os.environ.get("CTORCH_TEST_INSTALLED")
                                 else [os.path.dirname(HERE)]))
    r = subprocess.run([sys.executable, "-c", code, paths] + list(args), capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, "exit status %d\n%s" % (r.returncode, r.stderr[-3000:])
    return json.loads(r.stdout.strip().splitlines()[-1])


# ---- copies and pickles ---------------------------------------------------------------

_PRELUDE = r"""
import copy, gc, json, pickle, sys
sys.path[:0] = json.loads(sys.argv[1])
import ctorch

def make():
    m = ctorch.Module.new("M")
    m.register_parameter("w", ctorch.ones(2))
    m.define("def forward(self, x):\n    return x + self.w\n")
    s = ctorch.compile_script("def f(x: int) -> int:\n    return x + 1\n")
    t = ctorch.arange(3)
    v = ctorch.tensor([1 + 2j]).item()  # a complex: an opaque ctorch.Value
    assert type(v) is ctorch.Value
    return m, s, t, v
"""

_COPIES = _PRELUDE + r"""
how = {"copy": copy.copy, "deepcopy": copy.deepcopy,
       "pickle": lambda o: pickle.loads(pickle.dumps(o))}
out = {}
for name, fn in how.items():
    m, s, t, v = make()
    cm, cs, ct, cv = fn(m), fn(s), fn(t), fn(v)
    distinct = [cm._m != m._m, cs._s != s._s, ct._h != t._h, cv._p != v._p]
    m.w = ctorch.zeros(2)               # the copy keeps its own parameters
    del m, s, t, v
    gc.collect()
    out[name] = {"distinct": distinct, "module": cm(ctorch.ones(2)).tolist(), "script": cs.f(2),
                 "tensor": ct.tolist(), "value": repr(cv)}
    cm.free(), cs.free(), ct.free(), cv.free()
    del cm, cs, ct, cv
    gc.collect()
print(json.dumps(out))
"""


def test_copies_and_pickles_own_their_handles():
    """copy.copy, copy.deepcopy and a pickle round trip of Module, Script,
    Tensor and Value give objects with their own handles that work after the
    originals are gone (they used to share the raw handle: a double free)."""
    out = _child(_COPIES)
    for name in ("copy", "deepcopy", "pickle"):
        r = out[name]
        assert r["distinct"] == [True] * 4, name
        assert r["module"] == [2.0, 2.0], name
        assert r["script"] == 3 and r["tensor"] == [0, 1, 2], name
        assert r["value"] == "Value(1.+2.j: complex)", name


_SAVE = _PRELUDE + r"""
m, s, t, v = make()
m.eval()
with open(sys.argv[2], "wb") as f:
    pickle.dump({"module": m, "script": s, "tensor": t, "value": v, "op": ctorch.ops.aten.add},
                f)
print(json.dumps("saved"))
"""

_LOAD = r"""
import json, pickle, sys
sys.path[:0] = json.loads(sys.argv[1])
import ctorch
with open(sys.argv[2], "rb") as f:
    d = pickle.load(f)
print(json.dumps({"module": d["module"](ctorch.ones(2)).tolist(),
                  "training": d["module"].training, "script": d["script"].f(41),
                  "tensor": d["tensor"].tolist(), "value": repr(d["value"]),
                  "op": d["op"](ctorch.ones(1), ctorch.ones(1)).tolist()}))
"""


def test_pickles_load_in_another_process(tmp_path):
    path = str(tmp_path / "handles.pkl")
    assert _child(_SAVE, path) == "saved"
    r = _child(_LOAD, path)
    assert r == {"module": [2.0, 2.0], "training": False, "script": 42, "tensor": [0, 1, 2],
                 "value": "Value(1.+2.j: complex)", "op": [2.0]}


def _forking_module(tmp_path):
    """Saves a module whose forward returns a Future (torch.jit.fork); its path."""
    torch = pytest.importorskip("torch")

    class Forks(torch.nn.Module):
        def forward(self, x):
            return torch.jit.fork(torch.neg, x)

    path = str(tmp_path / "forks.pt")
    torch.jit.save(torch.jit.script(Forks()), path)
    return path


_REFUSED = r"""
import copy, json, pickle, sys
sys.path[:0] = json.loads(sys.argv[1])
import ctorch
m = ctorch.load(sys.argv[2])
fut = m(ctorch.ones(2))                 # a Future: torch.save's format cannot hold it
assert type(fut) is ctorch.Value
out = {"copy": repr(copy.copy(fut))}    # a new handle to the same value
for name, fn in (("deepcopy", copy.deepcopy), ("pickle", pickle.dumps)):
    try:
        fn(fut)
        out[name] = "no error"
    except TypeError as e:
        out[name] = str(e)
print(json.dumps(out))
"""


def test_values_torch_save_cannot_hold_are_refused(tmp_path):
    path = _forking_module(tmp_path)
    r = _child(_REFUSED, path)
    assert r["copy"] == "Value(Future: Future[Tensor])"
    for name in ("deepcopy", "pickle"):
        assert "cannot %s a ctorch.Value of type Future[Tensor]" % name in r[name], r[name]


_FUTURE_OUTLIVES = r"""
import gc, json, sys
sys.path[:0] = json.loads(sys.argv[1])
import ctorch
m = ctorch.load(sys.argv[2])
fut = m(ctorch.ones(2))
del m                                   # the module first, the Future after
gc.collect()
r = repr(fut)
del fut
print(json.dumps(r))
"""


def test_future_outlives_its_module(tmp_path):
    """A Future a method returns points into the module's code: freeing the
    module before the Future crashed the process (20 of 20 runs; Python
    frees in that order at exit). The Value keeps the module alive."""
    path = _forking_module(tmp_path)
    assert _child(_FUTURE_OUTLIVES, path) == "Value(Future: Future[Tensor])"


def test_package_copies_and_pickles_are_refused():
    p = object.__new__(ctorch.Package)  # no loaded package needed for the refusal
    p._p = None
    for fn in (copy.copy, copy.deepcopy, pickle.dumps):
        with pytest.raises(TypeError, match="ctorch.Package"):
            fn(p)


def test_tensor_copies_are_independent_tensors():
    """Tensor keeps its own semantics (test_tensor.py): copy.copy, deepcopy and
    pickles are new tensors through torch.save's format, requires_grad kept;
    each outlives the original, views and non-leaf tensors included."""
    import gc
    makers = (lambda: ctorch.ones(2, requires_grad=True),
              lambda: ctorch.ones(2, requires_grad=True) * 2,  # not a leaf
              lambda: ctorch.arange(4)[1:])                    # a view
    for make in makers:
        for fn in (copy.copy, copy.deepcopy, lambda o: pickle.loads(pickle.dumps(o))):
            t = make()
            want, grad = t.tolist(), t.requires_grad
            c = fn(t)
            assert c._h != t._h
            t.free()
            del t
            gc.collect()
            assert c.tolist() == want and c.requires_grad == grad


def test_ops_copy_as_themselves_and_pickle_by_name():
    for op in (ops.aten.add, ops.aten.add.Tensor, ops.aten.relu.default):
        assert copy.copy(op) is op and copy.deepcopy(op) is op
        assert pickle.loads(pickle.dumps(op)) is op


# ---- integers entering C ----------------------------------------------------------------

def _raises_with(number, fn, *args, **kwargs):
    with pytest.raises(ctorch.InvalidArgumentError, match=str(number)) as e:
        fn(*args, **kwargs)
    assert isinstance(e.value, ValueError) and isinstance(e.value, OverflowError)
    assert e.value.code == _lib.CT_ERR_INVALID_ARGUMENT
    return e.value


def test_integers_are_range_checked_not_truncated():
    assert issubclass(ctorch.InvalidArgumentError, ValueError)
    n = ctorch.get_num_threads()
    _raises_with(2**32 + 4, ctorch.set_num_threads, 2**32 + 4)  # ctypes made it 4
    _raises_with(2**40, ctorch.set_num_threads, 2**40)          # and this 0
    assert ctorch.get_num_threads() == n
    _raises_with(2**32 + 1, ctorch.set_num_interop_threads, 2**32 + 1)
    with pytest.raises(ctorch.CTorchTypeError, match="must be an integer"):
        ctorch.set_num_threads(2.0)
    _raises_with(2**32, ctorch.cuda.set_device, 2**32)
    _raises_with(2**40, ctorch.device, "cuda", 2**40)
    _raises_with(2**64 + 2, ctorch.eye, 2**64 + 2)              # was a 2 x 2 eye
    _raises_with(2**64 + 3, ctorch.eye, 2, 2**64 + 3)
    _raises_with(2**64 + 3, ctorch.zeros, 2**64 + 3)
    _raises_with(2**64, ctorch.tensor, [1, 2**64])
    t = ctorch.arange(6)
    _raises_with(2**70, t.__getitem__, 2**70)
    _raises_with(2**70, t.sum, dim=2**70)
    _raises_with(2**70, ops.aten.add, t, 2**70)


def test_manual_seed_takes_torchs_range():
    ctorch.manual_seed(-1)                  # wraps to 2**64 - 1, as in torch
    a = ctorch.rand(4).tolist()
    ctorch.manual_seed(2**64 - 1)
    assert ctorch.rand(4).tolist() == a
    ctorch.manual_seed(-2**63)
    b = ctorch.rand(4).tolist()
    ctorch.manual_seed(2**63)
    assert ctorch.rand(4).tolist() == b
    _raises_with(2**64, ctorch.manual_seed, 2**64)             # was seed 0
    _raises_with(-2**63 - 1, ctorch.manual_seed, -2**63 - 1)


def test_large_integers_stay_exact():
    big = 2**60 + 1                         # not exact as a C double
    assert ctorch.full((2,), big).tolist() == [big, big]
    assert ctorch.zeros(2, dtype=ctorch.int64).fill_(big).tolist() == [big, big]
    assert ctorch.arange(2**60, 2**60 + 3).tolist() == [2**60, 2**60 + 1, 2**60 + 2]
    t = ctorch.arange(5)
    t[1] = big
    assert t[1].item() == big
    # slice bounds clamp, as in Python and torch
    assert t[2**70:].tolist() == [] and t[-2**70:].shape == (5,) and t[:2**64].shape == (5,)


# ---- free() against a busy thread ---------------------------------------------------------

_BUSY = r"""
import gc, json, sys, threading, time
sys.path[:0] = json.loads(sys.argv[1])
import ctorch
try:
    from ctorch._release import _deferred   # handles whose free() waits
except ImportError:
    _deferred = {}

m = ctorch.Module.new("M")
m.register_parameter("w", ctorch.ones(64, 64))
m.define("def forward(self, x):\n    return torch.mm(x, self.w).relu()\n")
errors = set()

def hammer(x, y, mod):
    try:
        for _ in range(100000):
            x + y                                 # tensors only, GIL released
            x.sum()
            x[1].tolist()                         # tensors and values
            ctorch.ops.aten.add(x, y, alpha=2)    # the general value path
            x.shape
            mod(y)
    except ctorch.InvalidArgumentError as e:   # "use of a freed tensor / module"
        errors.add(str(e))

for i in range(int(sys.argv[2])):
    x, y = ctorch.rand(64, 64), ctorch.rand(64, 64)
    mod = m.clone()
    th = threading.Thread(target=hammer, args=(x, y, mod))
    th.start()
    time.sleep(0.0005 * (i % 4))
    (x if i % 2 else mod).free()
    th.join()
    del x, y, mod
gc.collect()
left = len(_deferred)
t = ctorch.ones(2)
t.free()                                   # no other thread: freed at once
print(json.dumps({"errors": sorted(errors), "left": left, "deferred": len(_deferred)}))
"""


def test_free_while_another_thread_uses_the_handle():
    """free() on one thread while another runs ops on the same tensor (or
    module) used to free the handle under the running call."""
    r = _child(_BUSY, "150")
    assert set(r["errors"]) <= {"use of a freed tensor", "use of a freed module"}, r
    assert r["left"] == 0 and r["deferred"] == 0   # every deferred handle was freed
