"""The LSTM guard (ctorch.lstm_guard_*): nn.LSTM without grad gives float64's
results through ctorch on whatever CPU this runs on; the guard routes around
oneDNN's LSTM kernel exactly where its probe finds it wrong (never on CPUs
without AVX-512), for Python's torch in the same process too.
CTORCH_TEST_LSTM_ONEDNN_ERROR and CTORCH_TEST_LSTM_ONEDNN_TRAINING_ERROR skew
oneDNN's kernels (test hooks) so that detection and routes are checked end to
end where oneDNN is right."""
import io
import json
import os
import subprocess
import sys

import pytest

import ctorch
from conftest import to_ctorch, to_torch

torch = pytest.importorskip("torch")

TORCH2 = int(ctorch.torch_version().split(".")[0]) >= 2


def _cpu_has_avx512():
    try:
        with open("/proc/cpuinfo") as f:
            return any(l.startswith("flags") and " avx512f" in l for l in f)
    except OSError:
        return False


def _model_and_input(bidirectional):
    g = torch.Generator().manual_seed(7)
    lstm = torch.nn.LSTM(8, 3, num_layers=2, batch_first=True, bidirectional=bidirectional)
    with torch.no_grad():
        for p in lstm.parameters():
            p.copy_(torch.rand(p.shape, generator=g) - 0.5)
    x = torch.rand(2, 5, 8, generator=g) - 0.5
    return lstm.eval(), x


def _float64_reference(lstm, x):
    out, (h, c) = lstm.double()(x.double())
    lstm.float()
    return torch.cat([out.flatten(), h.flatten(), c.flatten()])


class _Wrap(torch.nn.Module):
    # A scripted nn.LSTM alone has forward_tensor/forward_packed, no forward.
    def __init__(self, lstm):
        super().__init__()
        self.lstm = lstm

    def forward(self, x):
        return self.lstm(x)


def _scripted_bytes(lstm):
    buf = io.BytesIO()
    torch.jit.save(torch.jit.script(_Wrap(lstm)), buf)
    return buf.getvalue()


def _ctorch_no_grad_error(lstm, x, mode=ctorch.no_grad):
    m = ctorch.load(_scripted_bytes(lstm))
    want = _float64_reference(lstm, x)
    with mode():
        out, (h, c) = m(to_ctorch(x))
    got = torch.cat([to_torch(t).flatten() for t in (out, h, c)]).double()
    return float((got - want).abs().max())


@pytest.mark.parametrize("bidirectional", [False, True])
def test_no_grad_lstm_matches_float64(bidirectional):
    lstm, x = _model_and_input(bidirectional)
    assert _ctorch_no_grad_error(lstm, x) <= 1e-5
    # Python's torch in the same process gets the same protection.
    with torch.no_grad():
        out, (h, c) = lstm(x)
    got = torch.cat([out.flatten(), h.flatten(), c.flatten()]).double()
    assert float((got - _float64_reference(lstm, x)).abs().max()) <= 1e-5


def test_state_agrees_with_probe():
    lstm, x = _model_and_input(False)
    _ctorch_no_grad_error(lstm, x)
    state = ctorch.lstm_guard_state()
    if not TORCH2:
        assert state == -1
        with pytest.raises(ctorch.NotSupportedError, match="no oneDNN LSTM kernel"):
            ctorch.lstm_guard_check()
        return
    err = ctorch.lstm_guard_check()
    print("probe error %.3g, state %d, AVX-512 %s" % (err, state, _cpu_has_avx512()))
    assert state == (1 if err > 1e-3 else 0)
    if not _cpu_has_avx512():
        assert state == 0  # nothing switched off


def test_switch():
    with pytest.raises(ValueError, match="mode must be"):
        ctorch.lstm_guard_set(2)
    if not TORCH2:
        with pytest.raises(ctorch.NotSupportedError, match="no oneDNN LSTM kernel"):
            ctorch.lstm_guard_set(True)
        return
    before = ctorch.lstm_guard_state()
    lstm, x = _model_and_input(True)
    try:
        ctorch.lstm_guard_set(True)
        assert ctorch.lstm_guard_state() == 1
        assert _ctorch_no_grad_error(lstm, x) <= 1e-5
        assert _ctorch_no_grad_error(lstm, x, ctorch.inference_mode) <= 1e-5
        ctorch.lstm_guard_set(False)
        assert ctorch.lstm_guard_state() == 0
    finally:
        ctorch.lstm_guard_set(None)
    assert ctorch.lstm_guard_state() == before


_CHILD = r"""
import io, json, sys, warnings
sys.path[:0] = json.loads(sys.argv[1])
import torch, ctorch
from test_lstm_guard import _model_and_input, _ctorch_no_grad_error
lstm, x = _model_and_input(True)
before = ctorch.lstm_guard_state()
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    err = _ctorch_no_grad_error(lstm, x)
print(json.dumps({"before": before, "error": err, "after": ctorch.lstm_guard_state(),
                  "warnings": [str(m.message) for m in w],
                  "probe": ctorch.lstm_guard_check() if before != -1 else None}))
"""


def _child(env):
    e = dict(os.environ, **env)
    here = os.path.dirname(os.path.abspath(__file__))
    # the package under test: this checkout's, or the installed one (the wheel leg)
    paths = json.dumps([here] + ([] if os.environ.get("CTORCH_TEST_INSTALLED")
                                 else [os.path.dirname(here)]))
    r = subprocess.run([sys.executable, "-c", _CHILD, paths], env=e, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout.strip().splitlines()[-1])


@pytest.mark.skipif(not TORCH2, reason="no oneDNN LSTM kernel before LibTorch 2")
def test_detects_and_routes_around_a_wrong_onednn():
    r = _child({"CTORCH_TEST_LSTM_ONEDNN_ERROR": "0.25"})
    assert r["before"] == 2 and r["after"] == 1
    assert r["error"] <= 1e-5
    assert any("oneDNN's LSTM kernel gives wrong results" in m and "training kernel" in m
               for m in r["warnings"])
    assert abs(r["probe"] - 0.25) < 0.01  # oneDNN's path is skewed: the route gave the above
    r = _child({"CTORCH_TEST_LSTM_ONEDNN_ERROR": "0.25",
                "CTORCH_TEST_LSTM_ONEDNN_TRAINING_ERROR": "0.5"})
    assert r["after"] == 1 and r["error"] <= 1e-5
    assert any("through ctorch's own LSTM layer" in m for m in r["warnings"])


def test_environment_switch():
    r = _child({"CTORCH_LSTM_GUARD": "0"})
    assert r["before"] == (0 if TORCH2 else -1) and r["after"] == r["before"]
    r = _child({"CTORCH_LSTM_GUARD": "1"})
    assert r["before"] == (1 if TORCH2 else -1)
    assert r["error"] <= 1e-5
