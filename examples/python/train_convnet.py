#!/usr/bin/env python3
"""Trains a small conv net from Python with ctorch alone (no torch import): the net is
built from ctorch.nn's layers (torch.nn's Conv2d, BatchNorm2d, ReLU, MaxPool2d, Flatten,
Dropout, Linear), with one layer written in numpy on zero-copy memory: softsign, an
operator whose kernel and backward are Python, with a TorchScript twin. Training uses
ctorch's Adam, a cosine schedule and gradient clipping. Saves the model for PyTorch
(Module.to_pytorch: the twin in place of the Python kernel) and checkpoints in
torch.save's format that PyTorch resumes (examples/check_training.py).

    CTORCH_LIBRARY=build/libctorch.so python3 examples/python/train_convnet.py [OUTDIR] [STEPS]

Needs numpy (the custom layer). Prints the loss falling.
"""
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "bindings", "python"))

import numpy as np  # noqa: E402

import ctorch  # noqa: E402
from ctorch import nn  # noqa: E402


# The host-language layer: y = x / (1 + |x|) in numpy. arrays=True: the kernel and its
# backward get numpy arrays on the tensors' own memory and return arrays (no copies).
@ctorch.library.op("examples::softsign", "(Tensor x) -> Tensor", arrays=True)
def softsign(x):
    return x / (1 + np.abs(x))


def _setup(ctx, inputs, output):
    ctx.x = inputs[0]


def _backward(ctx, g):
    return g / (1 + np.abs(ctx.x)) ** 2


softsign.register_autograd(_backward, setup_context=_setup, arrays=True)
# Its twin: what PyTorch runs in the saved model (checked against the kernel below).
softsign.register_twin("def softsign(x: Tensor) -> Tensor:\n"
                       "    return x / (1 + torch.abs(x))\n")


def softsign_layer():
    m = ctorch.Module.new("Softsign")
    m.define("def forward(self, x):\n    return torch.ops.examples.softsign(x)\n")
    return m


def build_model():
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), softsign_layer(),
                         nn.Linear(128, 4))


def make_data(n, gen):
    """n 8x8 images of 4 classes: a bright bar in one of four places, plus noise."""
    x = ctorch.ops.aten.randn([n, 1, 8, 8], generator=gen)
    y = ctorch.ops.aten.randint(4, [n], generator=gen)
    xs, ys = x.numpy(), y.numpy()  # zero-copy views: the writes land in the tensors
    for i, k in enumerate(ys):
        r = 1 + 2 * int(k)
        xs[i, 0, r:r + 2, :] += 0.7  # (the last bar is one row)
    return x, y


def main(outdir, steps):
    os.makedirs(outdir, exist_ok=True)
    softsign.check_twin(ctorch.randn(4, 5))
    gen = ctorch.Generator().manual_seed(0)
    x, y = make_data(256, gen)
    ctorch.manual_seed(0)
    model = build_model()
    params = model.parameters()
    opt = ctorch.optim.Adam(params, lr=0.02)
    sched = ctorch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps, eta_min=0.001)
    lossf = nn.CrossEntropyLoss()
    losses = []
    for step in range(steps):
        if step == steps // 2:  # a checkpoint mid-way: PyTorch resumes from it
            save(os.path.join(outdir, "checkpoint_mid.pt"), model, opt, sched, x, y, step)
        loss = lossf(model(x), y)
        opt.zero_grad()
        loss.backward()
        ctorch.nn.utils.clip_grad_norm_(params, max_norm=5.0)
        opt.step()
        sched.step()
        losses.append(loss.item())
        if step % 10 == 0 or step == steps - 1:
            print("step %3d  loss %.4f  lr %.5f" % (step, losses[-1], sched.get_last_lr()[0]))
    assert losses[-1] < 0.5 * losses[0], losses
    model.eval()
    with ctorch.no_grad():
        probe = model(x[:16])
    model.to_pytorch().save(os.path.join(outdir, "model.pt"))
    save(os.path.join(outdir, "checkpoint.pt"), model, opt, sched, x, y, steps,
         probe_logits=probe, losses=losses)
    print("saved %s/model.pt (for PyTorch), checkpoint_mid.pt and checkpoint.pt" % outdir)


def save(path, model, opt, sched, x, y, step, **extra):
    """A checkpoint in torch.save's format: the model's and optimizer's state_dicts, the
    schedule's state (torch's CosineAnnealingLR.load_state_dict takes it), the data, and
    the default generator's state (Dropout's masks)."""
    ctorch.save_pickle(dict({"model": {k: v.detach().clone() for k, v in model.state_dict().items()},
                             "optimizer": opt.state_dict(), "scheduler": sched.state_dict(),
                             "data": (x, y), "step": step,
                             "rng_state": ctorch.default_generator().get_state()}, **extra), path)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "train_out",
         int(sys.argv[2]) if len(sys.argv) > 2 else 60)
