"""DLPack across library versions: numpy 2.x asks for and gives versioned
(DLPack 1.x) capsules, torch 2.6 still only legacy ones; numpy 1.24 and
torch 1.13 (Debian 12) only legacy. ctorch must exchange zero-copy with each
in both directions. Proxies record what the consumer asked for, so each test
shows which protocol was used (the LibTorch 2 leg runs numpy 2.2 and torch
2.6; the Debian 12 leg numpy 1.24 and torch 1.13)."""
import inspect

import numpy as np
import pytest
import torch

import ctorch

NUMPY2 = int(np.__version__.split(".")[0]) >= 2
# torch >= 2.7's Tensor.__dlpack__ takes max_version (DLPack 1.x capsules).
TORCH_HAS_MAX_VERSION = "max_version" in inspect.signature(torch.Tensor.__dlpack__).parameters
DTYPES = ["float32", "float64", "int32", "int64", "uint8", "int8", "int16"]


class Recorder:
    """Forwards the DLPack protocol to `inner`, recording the keywords of each
    __dlpack__ call and whether the capsule was versioned."""

    def __init__(self, inner):
        self.inner = inner
        self.calls = []

    def __dlpack_device__(self):
        return self.inner.__dlpack_device__()

    def __dlpack__(self, **kw):
        self.calls.append(dict(kw))
        cap = self.inner.__dlpack__(**kw)
        self.calls[-1]["_capsule"] = capsule_name(cap)
        return cap


def capsule_name(cap):
    import ctypes
    f = ctypes.pythonapi.PyCapsule_GetName
    f.restype, f.argtypes = ctypes.c_char_p, [ctypes.py_object]
    return f(cap).decode()


def last_capsule(rec):
    return rec.calls[-1]["_capsule"]


def export_3x4(dt, consumer):
    """A 3x4 ctorch tensor of dtype `dt`, what `consumer` (np.from_dlpack or
    torch.from_dlpack) makes of it, and the Recorder between them."""
    t = ctorch.arange(12).reshape(3, 4).to(ctorch.get_dtype(dt))
    rec = Recorder(t)
    return t, consumer(rec), rec


def assert_writes_shared(t, other):
    """ctorch tensor `t` and the numpy array or torch tensor `other` are one
    buffer: a write on either side is seen on the other."""
    t[0, 1] = 5
    assert other[0, 1].item() == 5
    other[2, 3] = 3
    assert t[2, 3].item() == 3


@pytest.mark.parametrize("dt", DTYPES)
def test_numpy_to_ctorch(dt):
    a = (np.arange(12) % 7).astype(dt).reshape(3, 4)
    rec = Recorder(a)
    t = ctorch.from_dlpack(rec)
    # numpy 2 gives a versioned capsule when asked; numpy 1.x knows no
    # max_version, and ctorch falls back to the legacy protocol.
    assert last_capsule(rec) == ("dltensor_versioned" if NUMPY2 else "dltensor")
    assert t.data_ptr() == a.ctypes.data and t.shape == (3, 4)
    assert t.dtype is ctorch.get_dtype(dt)
    assert_writes_shared(t, a)


@pytest.mark.parametrize("dt", DTYPES)
def test_ctorch_to_numpy(dt):
    t, a, rec = export_3x4(dt, np.from_dlpack)
    if NUMPY2:
        # numpy 2.x asks for max_version (1, 0) or newer; ctorch gives versioned.
        assert tuple(rec.calls[-1]["max_version"]) >= (1, 0)
        assert last_capsule(rec) == "dltensor_versioned"
    else:
        assert last_capsule(rec) == "dltensor"
    assert a.ctypes.data == t.data_ptr() and a.dtype == np.dtype(dt)
    assert np.array_equal(a, np.arange(12).reshape(3, 4).astype(dt))
    # ctorch exports writable memory (no DLPACK_FLAG_BITMASK_READ_ONLY), but
    # numpy 1.x and numpy 2.2 mark every DLPack import read-only (2.2 even its
    # own arrays'): a write on the ctorch side shows in numpy, and where numpy
    # allows writes they show in ctorch.
    t[1, 2] = 7
    assert a[1, 2] == 7
    if a.flags.writeable:
        a[1, 1] = 9
        assert t[1, 1].item() == 9
    else:
        with pytest.raises(ValueError, match="read-only"):
            a[1, 1] = 9


@pytest.mark.parametrize("dt", DTYPES)
def test_torch_to_ctorch(dt):
    x = torch.arange(12).reshape(3, 4).to(getattr(torch, dt))
    rec = Recorder(x)
    t = ctorch.from_dlpack(rec)
    # torch 2.6's Tensor.__dlpack__ has no max_version (TypeError on the first
    # try), so the capsule is legacy there; torch >= 2.7 gives a versioned one.
    assert last_capsule(rec) == ("dltensor_versioned" if TORCH_HAS_MAX_VERSION else "dltensor")
    assert t.data_ptr() == x.data_ptr()
    assert_writes_shared(t, x)


@pytest.mark.parametrize("dt", DTYPES)
def test_ctorch_to_torch(dt):
    t, x, rec = export_3x4(dt, torch.from_dlpack)
    # torch 2.6 accepts only legacy capsules: ctorch must give one when the
    # consumer does not pass max_version; torch >= 2.7 asks for a versioned one.
    assert last_capsule(rec) == ("dltensor_versioned" if TORCH_HAS_MAX_VERSION else "dltensor")
    assert x.data_ptr() == t.data_ptr()
    assert torch.equal(x, torch.arange(12).reshape(3, 4).to(getattr(torch, dt)))
    assert_writes_shared(t, x)


def test_numpy_to_ctorch_to_torch_and_back_is_one_buffer():
    a = np.linspace(0, 1, 10, dtype=np.float32)
    t = ctorch.from_dlpack(a)
    x = torch.from_dlpack(t)
    b = np.from_dlpack(ctorch.from_dlpack(x))
    assert a.ctypes.data == t.data_ptr() == x.data_ptr() == b.ctypes.data
    x[3] = -1.0
    assert a[3] == -1.0 and b[3] == -1.0 and t[3].item() == -1.0


def test_read_only_numpy_array():
    a = np.arange(6, dtype=np.float64)
    a.flags.writeable = False
    if NUMPY2:
        # Exported only as a versioned capsule flagged read-only: ctorch copies
        # (torch tensors are always writable).
        t = ctorch.from_dlpack(a)
        assert t.data_ptr() != a.ctypes.data
        assert t.tolist() == a.tolist()
        t[0] = 42.0
        assert a[0] == 0.0
    else:
        # numpy 1.x refuses to export read-only arrays at all.
        with pytest.raises(BufferError):
            ctorch.from_dlpack(a)


def test_bool_both_ways_with_numpy():
    if not NUMPY2:
        pytest.skip("numpy 1.24 has no kDLBool export")
    a = np.array([True, False, True])
    t = ctorch.from_dlpack(a)
    assert t.dtype is ctorch.bool_ and t.data_ptr() == a.ctypes.data
    b = np.from_dlpack(t)
    assert b.dtype == np.bool_ and b.tolist() == [True, False, True]
