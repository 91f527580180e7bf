"""LibTorch warnings become Python warnings; undefined tensors come back as None
(issue 13's bindings part; needs ct_warnings_* and ct_tensor_is_defined)."""
import warnings

import pytest

import ctorch
from ctorch import _lib


def test_libtorch_warning_is_a_python_warning():
    a, b = ctorch.ones(3), ctorch.ones(3)
    out = ctorch.empty(1)
    with pytest.warns(UserWarning, match="resized"):
        ctorch.ops.aten.add.out(a, b, out=out)
    assert out.shape == (3,) and out.tolist() == [2.0, 2.0, 2.0]
    assert _lib.G.warnings_count() == 0          # re-issued once, then cleared
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        ctorch.ops.aten.add.out(a, b, out=out)   # right shape: no warning


def test_undefined_results_are_none():
    x, w = ctorch.randn(1, 2, 5, 5), ctorch.randn(3, 2, 3, 3)
    g = ctorch.ops.aten.convolution(x, w, None, [1, 1], [0, 0], [1, 1], False, [0, 0], 1)
    r = ctorch.ops.aten.convolution_backward(g, x, w, [3], [1, 1], [0, 0], [1, 1], False,
                                             [0, 0], 1, [False, True, False])
    assert r[0] is None and r[2] is None
    assert r[1].shape == (3, 2, 3, 3)
    none3 = ctorch.ops.aten.convolution_backward(g, x, w, [3], [1, 1], [0, 0], [1, 1], False,
                                                 [0, 0], 1, [False, False, False])
    assert none3 == (None, None, None)


def test_size_out_of_int64_range_is_named():
    # ctypes used to wrap 2**63 to -2**63, reported as "negative size".
    with pytest.raises(ctorch.InvalidArgumentError, match=r"size at dimension 0: "
                       r"9223372036854775808 is out of range for int64") as e:
        ctorch.zeros(2**63)
    assert e.value.code == _lib.CT_ERR_INVALID_ARGUMENT
    with pytest.raises(ctorch.InvalidArgumentError,
                       match="dimension 1: -18446744073709551616 is out of range"):
        ctorch.ones(2, -2**64)
    with pytest.raises(ctorch.InvalidArgumentError, match="negative"):
        ctorch.zeros(-1)
