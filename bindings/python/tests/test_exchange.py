"""Zero-copy exchange with numpy and torch: from_numpy, numpy(), DLPack both
ways. Pointer equality plus a write visible on the other side; capsules
consumed exactly once; deleters counted."""
import gc
import sys
import weakref

import numpy as np
import pytest
import torch

import ctorch
from ctorch import _interop


def test_from_numpy_zero_copy_both_directions():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ctorch.from_numpy(a)
    assert t.data_ptr() == a.ctypes.data
    assert t.shape == (3, 4) and t.strides == (4, 1) and t.dtype is ctorch.float32
    t[0, 0] = 100.0           # ctorch write, numpy sees it
    assert a[0, 0] == 100.0
    a[2, 3] = -5.0            # numpy write, ctorch sees it
    assert t[2, 3].item() == -5.0


@pytest.mark.parametrize("dt", ["bool", "uint8", "int8", "int16", "int32", "int64", "float16",
                                "float32", "float64", "complex64", "complex128"])
def test_from_numpy_dtypes(dt):
    a = (np.arange(6) % 2).astype(dt).reshape(2, 3)
    t = ctorch.from_numpy(a)
    assert t.dtype is ctorch.get_dtype(dt)
    assert t.data_ptr() == a.ctypes.data
    back = t.numpy()
    assert back.dtype == a.dtype and np.array_equal(back, a)
    assert back.ctypes.data == a.ctypes.data


def test_from_numpy_strided_views():
    a = np.arange(24, dtype=np.int64).reshape(4, 6)
    v = a[::2, 1::2]
    t = ctorch.from_numpy(v)
    assert t.strides == (12, 2) and t.data_ptr() == v.ctypes.data
    assert t.tolist() == v.tolist()
    with pytest.raises(ctorch.InvalidArgumentError, match="negative strides"):
        ctorch.from_numpy(a[::-1])
    with pytest.raises(ctorch.CTorchTypeError, match="dtype"):
        ctorch.from_numpy(np.array(["x"]))
    with pytest.raises(ctorch.CTorchTypeError, match="byte-swapped"):
        ctorch.from_numpy(np.arange(3, dtype=">i4"))


@pytest.mark.parametrize("route", ["dlpack", "blob"])
def test_from_numpy_keeps_array_alive_and_deleter_runs_once(route):
    # a writable array goes through numpy's DLPack export (numpy's deleter),
    # a read-only one through ct_tensor_from_blob (ctorch's Python deleter)
    a = np.ones(1000)
    if route == "blob":
        a.flags.writeable = False
    base_refs = sys.getrefcount(a)
    stats0 = dict(_interop.blob_stats)
    if route == "blob":
        with pytest.warns(UserWarning, match="not writable"):
            t = ctorch.from_numpy(a)
    else:
        t = ctorch.from_numpy(a)
    v = t[10:20]              # a view of the same memory
    assert sys.getrefcount(a) == base_refs + 1
    n = t.numpy()
    del t
    gc.collect()
    assert sys.getrefcount(a) == base_refs + 1  # the view and n still use the memory
    del v
    assert sys.getrefcount(a) == base_refs + 1  # n holds its own handle
    del n
    gc.collect()
    assert sys.getrefcount(a) == base_refs
    n_blobs = 1 if route == "blob" else 0
    assert _interop.blob_stats["released"] - stats0["released"] == n_blobs
    assert _interop.blob_stats["created"] - stats0["created"] == n_blobs


def test_from_numpy_array_outlives_python_name():
    t = ctorch.from_numpy(np.full(5, 3.0))  # the only reference is now torch's
    gc.collect()
    assert t.sum().item() == 15.0


def test_numpy_zero_copy_and_lifetime():
    t = ctorch.arange(6, dtype=ctorch.float64).reshape(2, 3)
    a = t.numpy()
    assert a.ctypes.data == t.data_ptr() and a.shape == (2, 3) and a.dtype == np.float64
    assert a.strides == (24, 8)
    a[1, 2] = 42.0
    assert t[1, 2].item() == 42.0
    t.add_(1.0)
    assert a[0, 0] == 1.0
    t.free()                   # the array keeps the memory alive
    gc.collect()
    assert a[1, 2] == 43.0
    tt = ctorch.arange(6).reshape(2, 3).t()
    b = tt.numpy()
    assert b.strides == (8, 24) and b.tolist() == [[0, 3], [1, 4], [2, 5]]
    assert np.asarray(ctorch.ones(2)).tolist() == [1.0, 1.0]
    assert ctorch.zeros(0, 3).numpy().shape == (0, 3)
    assert ctorch.tensor(5).numpy().shape == ()


def test_numpy_views_with_offsets_and_odd_strides():
    base = ctorch.arange(24, dtype=ctorch.float32).reshape(4, 6)
    for t in (base[1:3, 2:5],            # storage offset, rows apart
              base[:, ::2],              # step
              base[2],                   # a row: offset into the storage
              ctorch.arange(3).reshape(3, 1).expand(3, 4),  # stride 0
              base.t()[1:, 1:],
              base[1:3],                 # contiguous, at an offset
              ctorch.arange(4).unsqueeze(1).t()):  # contiguous, odd stride on a size-1 dim
        a = t.numpy()
        assert a.ctypes.data == t.data_ptr()
        assert a.tolist() == t.tolist()
        # strides agree wherever they matter (a size-1 dim's stride is never used)
        assert [s for n, s in zip(a.shape, a.strides) if n > 1] == \
            [s * t.element_size() for n, s in zip(t.shape, t.stride()) if n > 1]
        # the array's base covers exactly the bytes the view reaches
        last = sum((n - 1) * s for n, s in zip(t.shape, t.stride())) + 1
        assert len(memoryview(a.base).cast("B")) == last * t.element_size()
    a = base[1:3, 2:5].numpy()
    a[0, 0] = -1.0
    assert base[1, 2].item() == -1.0


def test_from_numpy_routes_agree():
    """numpy's DLPack export and ct_tensor_from_blob give the same tensors;
    what DLPack refuses takes the blob route with its errors and warnings."""
    for a in (np.arange(12.0).reshape(3, 4), np.arange(12, dtype=np.int32)[::3],
              np.arange(6, dtype=np.uint8).reshape(2, 3).T, np.array(2.5),
              np.zeros((0, 3), np.float32), np.array([True, False]),
              np.arange(4, dtype=np.complex64), np.arange(4, dtype=np.float16)):
        t = ctorch.from_numpy(a)
        assert t.shape == a.shape and t.numpy().dtype == a.dtype
        assert t.numpy().tolist() == a.tolist()
        if a.size:
            assert t.data_ptr() == a.ctypes.data
    with pytest.raises(ValueError, match="negative strides"):
        ctorch.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(TypeError, match="byte-swapped"):
        ctorch.from_numpy(np.arange(3, dtype=">i4"))
    ro = np.arange(3.0)
    ro.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        assert ctorch.from_numpy(ro).tolist() == [0.0, 1.0, 2.0]


def test_numpy_refuses_grad_and_bfloat16_options():
    with pytest.raises(ctorch.InvalidArgumentError, match="detach"):
        ctorch.ones(2, requires_grad=True).numpy()
    b = ctorch.tensor([1.0, 2.0, -0.5]).to(ctorch.bfloat16)
    with pytest.raises(TypeError, match="bfloat16"):
        b.numpy()
    bits = b.numpy(bfloat16="uint16")
    assert bits.dtype == np.uint16 and bits.ctypes.data == b.data_ptr()
    assert bits.tolist() == [0x3F80, 0x4000, 0xBF00]
    f = b.numpy(bfloat16="float32")
    assert f.dtype == np.float32 and f.tolist() == [1.0, 2.0, -0.5]
    assert np.asarray(b).dtype == np.float32


def test_dlpack_from_torch_zero_copy():
    x = torch.arange(12.0).reshape(3, 4)
    t = ctorch.from_dlpack(x)
    assert t.data_ptr() == x.data_ptr() and t.shape == (3, 4) and t.strides == (4, 1)
    t[0] = 9.0
    assert x[0].tolist() == [9.0] * 4
    x[2, 3] = -1.0
    assert t[2, 3].item() == -1.0
    v = ctorch.from_dlpack(x[:, 1::2])
    assert v.data_ptr() == x[:, 1::2].data_ptr() and v.strides == (4, 2)


def test_dlpack_to_torch_and_numpy_zero_copy():
    t = ctorch.arange(6, dtype=ctorch.float32)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == t.data_ptr()
    x[0] = 50.0
    assert t[0].item() == 50.0
    n = np.from_dlpack(t)  # numpy 1.24 makes DLPack imports read-only
    assert n.ctypes.data == t.data_ptr()
    t[1] = 7.0
    assert n[1] == 7.0
    t.free()
    gc.collect()
    assert x[1].item() == 7.0 and n[0] == 50.0  # the consumers keep the memory


def test_dlpack_from_numpy_versioned_fallback():
    a = np.arange(5, dtype=np.int16)
    t = ctorch.from_dlpack(a)
    assert t.data_ptr() == a.ctypes.data and t.dtype is ctorch.int16
    t[0] = 3
    assert a[0] == 3


def test_dlpack_device_and_protocol_arguments():
    t = ctorch.ones(3)
    assert t.__dlpack_device__() == (1, 0)
    c1 = t.__dlpack__()
    assert "dltensor" in repr(c1) and "versioned" not in repr(c1)
    c2 = t.__dlpack__(max_version=(1, 0))
    assert "dltensor_versioned" in repr(c2)
    c3 = t.__dlpack__(max_version=(0, 8))
    assert "versioned" not in repr(c3)
    c4 = t.__dlpack__(max_version=(1, 1), copy=True)
    u = ctorch.from_dlpack(c4)
    assert u.data_ptr() != t.data_ptr() and u.equal(t)
    c5 = t.__dlpack__(dl_device=(1, 0), copy=False)
    assert ctorch.from_dlpack(c5).data_ptr() == t.data_ptr()
    with pytest.raises(ValueError):
        t.__dlpack__(stream=5)
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0), copy=False)


def test_capsules_consumed_exactly_once_and_deleted_when_unused():
    t = ctorch.arange(4, dtype=ctorch.float32)
    s0 = dict(_interop.dlpack_stats)
    for mv in (None, (1, 0)):
        cap = t.__dlpack__(max_version=mv)
        u = ctorch.from_dlpack(cap)
        assert "used_" in repr(cap)
        assert u.data_ptr() == t.data_ptr()
        with pytest.raises(BufferError, match="already consumed"):
            ctorch.from_dlpack(cap)
        del cap
    gc.collect()
    # consumed capsules are not deleted by their destructor
    assert _interop.dlpack_stats["unconsumed_deleted"] == s0["unconsumed_deleted"]
    # unconsumed capsules delete their managed tensor exactly once
    for mv in (None, (1, 0)):
        cap = t.__dlpack__(max_version=mv)
        del cap
    gc.collect()
    assert _interop.dlpack_stats["unconsumed_deleted"] == s0["unconsumed_deleted"] + 2
    with pytest.raises(ctorch.CTorchTypeError):
        ctorch.from_dlpack(object())


def test_dlpack_producer_deleter_runs_when_last_tensor_dies():
    """The producer's (torch's) deleter runs once ctorch frees the last
    tensor: seen as the producer's storage being released (weakref on the
    torch tensor's owner is not available, so watch the tensor's refcount)."""
    x = torch.arange(8.0)
    base = sys.getrefcount(x)
    t = ctorch.from_dlpack(x.__dlpack__())
    v = t[2:]
    del t
    gc.collect()
    # torch's DLPack capsule holds an ATen reference, not a Python one; watch
    # memory reuse instead: the data stays valid while v lives
    assert v.tolist() == [2.0, 3.0, 4.0, 5.0, 6.0, 7.0]
    del v
    gc.collect()
    assert sys.getrefcount(x) == base


def test_numpy_capsule_deleter_releases_array():
    a = np.arange(10.0)
    base = sys.getrefcount(a)
    t = ctorch.from_dlpack(a)
    assert sys.getrefcount(a) == base + 1  # numpy's managed tensor holds a
    del t
    gc.collect()
    assert sys.getrefcount(a) == base      # ctorch ran numpy's deleter once


def test_ops_accept_numpy_and_torch_arguments_zero_copy():
    a = np.ones(3, dtype=np.float32)
    x = torch.full((3,), 2.0)
    r = ctorch.ops.aten.mul(a, x)
    assert r.tolist() == [2.0, 2.0, 2.0]
    ctorch.ops.aten.add_(a, 1.0)  # in place on numpy's memory
    assert a.tolist() == [2.0, 2.0, 2.0]


def test_big_exchange_roundtrip():
    a = np.random.rand(1 << 18).astype(np.float32)  # 1 MiB
    t = ctorch.from_numpy(a)
    x = torch.from_dlpack(t)
    assert x.data_ptr() == a.ctypes.data
    b = np.from_dlpack(ctorch.from_dlpack(x))
    assert b.ctypes.data == a.ctypes.data


def test_clean_interpreter_shutdown(tmp_path):
    """Deleter-backed tensors, unconsumed capsules, autograd graphs with Python
    callbacks and registered Python ops all alive at exit: the process exits
    cleanly, with no 'Exception ignored' noise."""
    import os
    import subprocess
    script = tmp_path / "shutdown.py"
    script.write_text('''
import ctorch, numpy as np, torch
a = np.ones(10)
t = ctorch.from_numpy(a)
v = t[2:]
cap = t.__dlpack__()
cap2 = ctorch.ones(3).__dlpack__(max_version=(1, 0))
x = torch.from_dlpack(ctorch.from_numpy(np.arange(4.0)))
class Cyc: pass
c = Cyc(); c.self = c; c.t = ctorch.from_numpy(np.zeros(3))
class F(ctorch.autograd.Function):
    @staticmethod
    def forward(ctx, x): return x * 2
    @staticmethod
    def backward(ctx, g): return g * 2
y = F.apply(ctorch.ones(2, requires_grad=True))
ctorch.library.register("sd::f(Tensor x) -> Tensor", lambda x: x)
m = ctorch.Module.new("M"); m.define("def forward(self, x):\\n    return sd.f(x)\\n")
print("ok")
''')
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    env = dict(os.environ, PYTHONPATH=root, CTORCH_LIBRARY=ctorch.LIBRARY_PATH)
    r = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"
    assert "Exception ignored" not in r.stderr and "Traceback" not in r.stderr


def test_numpy_takes_handle_and_metadata_in_one_call():
    """Tensor.numpy() on a tensor with no cached metadata takes the handle and
    the metadata in one C call (ct_tensor_ref_info) and caches the metadata;
    with cached metadata it takes only the handle (ct_tensor_ref)."""
    t = ctorch.arange(6, dtype=ctorch.float32).reshape(2, 3)
    t._m = None
    a = t.numpy()
    assert t._m is not None and t._m.shape == (2, 3) and t._m.data == t.data_ptr()
    assert a.ctypes.data == t.data_ptr() and a.tolist() == [[0, 1, 2], [3, 4, 5]]
    t.add_(1.0)               # in place: the cached metadata is read again afterwards
    b = t.numpy()
    assert b.ctypes.data == a.ctypes.data and b[1, 2] == 6.0
    del t
    gc.collect()
    assert a[0, 0] == 1.0     # each array holds its own handle
    with pytest.raises(ctorch.InvalidArgumentError, match="requires grad"):
        ctorch.ones(2, requires_grad=True).numpy()


def test_from_numpy_blob_route_byte_strides_checked_in_c():
    """The blob route passes numpy's byte strides to ct_tensor_wrap
    (CT_BLOB_BYTE_STRIDES); a stride that is not a whole number of elements is
    refused there, and the array is not kept."""
    raw = np.zeros(64, dtype=np.uint8)
    odd = np.lib.stride_tricks.as_strided(raw[:8].view(np.float32), shape=(3,), strides=(6,),
                                          writeable=False)
    stats0 = dict(_interop.blob_stats)
    refs0 = len(_interop._blob_refs)
    with pytest.warns(UserWarning, match="not writable"):
        with pytest.raises(ctorch.InvalidArgumentError, match="not a multiple of the element size"):
            ctorch.from_numpy(odd)
    assert len(_interop._blob_refs) == refs0 and _interop.blob_stats == stats0
    ro = np.arange(12.0).reshape(3, 4)[:, ::2]
    ro.flags.writeable = False
    with pytest.warns(UserWarning, match="not writable"):
        t = ctorch.from_numpy(ro)
    assert t.strides == (4, 2) and t.data_ptr() == ro.ctypes.data and t.tolist() == ro.tolist()
    del t
    gc.collect()
    assert _interop.blob_stats["released"] - stats0["released"] == 1
