#!/usr/bin/env python3
"""Trains a small conv net from Python with ctorch alone (no torch import): the
net is TorchScript built in place, one layer is written in numpy on zero-copy
memory (a custom autograd function), and training uses ctorch's Adam, a cosine
schedule and gradient clipping. Saves the model (TorchScript) and a checkpoint
in torch.save's format that PyTorch resumes (examples/check_training.py).

    CTORCH_LIBRARY=build/libctorch.so python3 examples/python/train_convnet.py [OUTDIR] [STEPS]

Needs numpy (the custom layer). Prints the loss falling.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))

import numpy as np  # noqa: E402

import ctorch  # noqa: E402

# The net: conv -> relu -> pool -> flatten (features), then the custom layer,
# then a linear head. `forward` holds the custom layer's TorchScript twin, so
# the saved model runs whole in PyTorch.
SOURCE = """
def features(self, x):
    h = torch.relu(torch.conv2d(x, self.conv_w, self.conv_b, [1, 1], [1, 1]))
    return torch.flatten(torch.max_pool2d(h, [2, 2]), 1)
def head(self, h):
    return torch.linear(h, self.fc_w, self.fc_b)
def forward(self, x):
    h = self.features(x)
    return self.head(h / (1 + torch.abs(h)))
"""


class Softsign(ctorch.autograd.Function):
    """y = x / (1 + |x|) in numpy, on the tensors' own memory."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        a = x.detach().contiguous().numpy()
        return ctorch.from_numpy(a / (1 + np.abs(a)))

    @staticmethod
    def backward(ctx, g):
        x, = ctx.saved_tensors
        a = x.detach().contiguous().numpy()
        return ctorch.from_numpy(g.detach().contiguous().numpy() / (1 + np.abs(a)) ** 2)


def make_data(n, gen):
    """n 8x8 images of 4 classes: a bright bar in one of four places, plus noise."""
    x = ctorch.ops.aten.randn([n, 1, 8, 8], generator=gen)
    y = ctorch.ops.aten.randint(4, [n], generator=gen)
    xs, ys = x.numpy(), y.numpy()  # zero-copy views: the writes land in the tensors
    for i, k in enumerate(ys):
        r = 1 + 2 * int(k)
        xs[i, 0, r:r + 2, :] += 0.7  # (the last bar is one row)
    return x, y


def build_model(gen):
    m = ctorch.Module.new("ConvNet")
    init = {"conv_w": [8, 1, 3, 3], "conv_b": [8], "fc_w": [4, 128], "fc_b": [4]}
    for name, shape in init.items():
        w = ctorch.ops.aten.randn(shape, generator=gen) * (0.3 if name.startswith("conv") else 0.1)
        m.register_parameter(name, w)
    m.define(SOURCE)
    return m


def main(outdir, steps):
    os.makedirs(outdir, exist_ok=True)
    gen = ctorch.Generator().manual_seed(0)
    x, y = make_data(256, gen)
    model = build_model(gen)
    params = model.parameters()
    opt = ctorch.optim.Adam(params, lr=0.02)
    sched = ctorch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=0.001)
    losses = []
    for step in range(steps):
        if step == steps // 2:  # a checkpoint mid-way: PyTorch resumes from it
            save(os.path.join(outdir, "checkpoint_mid.pt"), model, opt, sched, x, y, step)
        logits = model.head(Softsign.apply(model.features(x)))
        loss = ctorch.ops.aten.cross_entropy_loss(logits, y)
        opt.zero_grad()
        loss.backward()
        ctorch.nn.utils.clip_grad_norm_(params, max_norm=5.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            print("step %3d  loss %.4f  lr %.5f" % (step, losses[-1], sched.get_last_lr()[0]))
    assert losses[-1] < 0.5 * losses[0], losses
    with ctorch.no_grad():
        probe = model(x[:16])
    model.save(os.path.join(outdir, "model.pt"))
    save(os.path.join(outdir, "checkpoint.pt"), model, opt, sched, x, y, steps,
         probe_logits=probe, losses=losses)
    print("saved %s/model.pt, checkpoint_mid.pt and checkpoint.pt" % outdir)


def save(path, model, opt, sched, x, y, step, **extra):
    """A checkpoint in torch.save's format: model and optimizer state_dicts, the
    schedule's state (torch's CosineAnnealingLR.load_state_dict takes it), the data."""
    ctorch.save_pickle(dict({"model": {k: v.clone() for k, v in model.state_dict().items()},
                             "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                             "data": (x, y), "step": step}, **extra), path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train_out",
         int(sys.argv[2]) if len(sys.argv) > 2 else 60)
