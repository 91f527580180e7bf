#!/usr/bin/python3
"""Makes the files tests/c/test_dtypes.c checks against PyTorch: run as
`/usr/bin/python3 tests/models/make_dtype_models.py OUTDIR`.

  qlinear.pt  TorchScript module: forward(x: quint8 tensor) -> quint8 tensor
              (a quantized Linear with a per-channel qint8 weight), and
              weight() -> that per-channel weight.
  qref.pt     torch.save dict: x (float32 input), x_scale, x_zero_point
              (float64/int64 0-d), out_int (the output's int_repr), out_scale,
              out_zero_point, out_float (dequantized), w_int, w_scales,
              w_zero_points, w_axis, qt_int (int_repr of
              quantize_per_tensor(x, 0.05, 10, quint8)), q4_int (same, quint4x2).
  f8ref.pt    (torch >= 2.1 only) torch.save dict: for each float8 dtype NAME
              it has, NAME_bits (its bytes, uint8) and NAME_float (float32) of
              the same values; u16/u32/u64 as int64 with their bytes (uint8).
Idempotent: nothing to do when OUTDIR/.stamp is newer than this script.
Exits 77 (CTest: skipped) when torch is not importable.
"""
import os
import sys

if __name__ == "__main__" and len(sys.argv) == 2:
    _stamp = os.path.join(sys.argv[1], ".stamp")
    if os.path.exists(_stamp) and os.path.getmtime(_stamp) >= os.path.getmtime(__file__):
        sys.exit(0)

try:
    import torch
    from torch import nn
except ImportError:  # pragma: no cover
    print("torch is not available; skipping", file=sys.stderr)
    sys.exit(77)

try:
    from torch.ao.nn.quantized import Linear as QLinear
except ImportError:  # pragma: no cover
    from torch.nn.quantized import Linear as QLinear


class QModel(nn.Module):
    def __init__(self):
        super().__init__()
        self.fc = QLinear(4, 3, dtype=torch.qint8)
        w = torch.tensor([[0.5, -0.25, 0.75, 1.0],
                          [-1.0, 0.5, 0.25, -0.5],
                          [0.1, 0.2, -0.3, 0.4]])
        qw = torch.quantize_per_channel(w, torch.tensor([0.01, 0.02, 0.005], dtype=torch.double),
                                        torch.zeros(3, dtype=torch.long), 0, torch.qint8)
        self.fc.set_weight_bias(qw, torch.tensor([0.1, -0.2, 0.3]))
        self.fc.scale = 0.03
        self.fc.zero_point = 64

    def forward(self, x):
        return self.fc(x)

    @torch.jit.export
    def weight(self):
        return self.fc.weight()


def main(out):
    os.makedirs(out, exist_ok=True)
    torch.manual_seed(0)
    m = torch.jit.script(QModel().eval())
    m.save(os.path.join(out, "qlinear.pt"))
    x = torch.tensor([[0.5, -1.0, 2.0, 0.25], [1.5, 0.0, -0.5, 1.0]])
    qx = torch.quantize_per_tensor(x, 0.02, 100, torch.quint8)
    y = m(qx)
    w = m.weight()
    ref = {
        "x": x,
        "x_scale": torch.tensor(0.02, dtype=torch.double),
        "x_zero_point": torch.tensor(100),
        "out_int": y.int_repr(),
        "out_scale": torch.tensor(y.q_scale(), dtype=torch.double),
        "out_zero_point": torch.tensor(y.q_zero_point()),
        "out_float": y.dequantize(),
        "w_int": w.int_repr(),
        "w_scales": w.q_per_channel_scales(),
        "w_zero_points": w.q_per_channel_zero_points(),
        "w_axis": torch.tensor(w.q_per_channel_axis()),
        "qt_int": torch.quantize_per_tensor(x, 0.05, 10, torch.quint8).int_repr(),
        "q4_int": torch.quantize_per_tensor(x, 0.5, 3, torch.quint4x2).int_repr(),
    }
    torch.save(ref, os.path.join(out, "qref.pt"))

    f8 = {}
    vals = torch.tensor([0.5, 1.0, -2.0, 3.5, 0.0, 6.0])
    for name in ["float8_e4m3fn", "float8_e5m2", "float8_e4m3fnuz", "float8_e5m2fnuz"]:
        dt = getattr(torch, name, None)
        if dt is None:
            continue
        q = vals.to(dt)
        f8[name + "_bits"] = q.view(torch.uint8).clone()
        f8[name + "_float"] = q.to(torch.float32)
    for name in ["uint16", "uint32", "uint64"]:
        dt = getattr(torch, name, None)
        if dt is None:
            continue
        v = torch.tensor([0, 1, 40000, 12345], dtype=torch.int64)
        u = v.to(dt)
        f8[name + "_bits"] = u.view(torch.uint8).clone()
        f8[name + "_int"] = v
    path = os.path.join(out, "f8ref.pt")
    if f8:
        torch.save(f8, path)
    elif os.path.exists(path):
        os.remove(path)
    with open(os.path.join(out, ".stamp"), "w"):
        pass


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: make_dtype_models.py OUTDIR")
    main(sys.argv[1])
