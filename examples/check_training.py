#!/usr/bin/python3
"""What a training example saved, checked in PyTorch alone (Debian's /usr/bin/python3 with
torch; ctorch is not imported):

    check_training.py OUTDIR

Each example (C, Python, Julia) builds the same net from ctorch's torch.nn layers with one
layer written in its own language (softsign, an operator whose kernel and backward are host
code, with a TorchScript twin), trains it, and saves:
  OUTDIR/model.pt           Module.to_pytorch(): the host operator replaced by its twin
  OUTDIR/checkpoint_mid.pt  {"model": state_dict, "optimizer", "scheduler", "data", "step",
                             "rng_state": the default CPU generator's state at that step}
  OUTDIR/checkpoint.pt      the same at the end, with "probe_logits" (eval mode, x[:16]) and
                            "losses"

1. model.pt loads with torch.jit.load (no ctorch, no host language) and, in eval mode, gives
   the example's logits; its state_dict is the checkpoint's;
2. the same net built from torch.nn (make_reference) takes the checkpoint with
   load_state_dict(strict=True): its names and shapes are torch.nn's;
3. training resumes in PyTorch from checkpoint_mid.pt (weights and BatchNorm statistics,
   torch.optim.Adam's and CosineAnnealingLR's load_state_dict, the generator state, so Dropout
   draws the same masks) and follows the example's own losses to the end.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("torch is not installed for this Python: skipped")
    sys.exit(77)


def make_reference():
    """The examples' net in torch.nn (softsign is the host-language layer there)."""
    nn = torch.nn
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.BatchNorm2d(8), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Dropout(0.1), nn.Softsign(),
                         nn.Linear(128, 4))


def main(d):
    model = torch.jit.load(os.path.join(d, "model.pt"))
    final = torch.load(os.path.join(d, "checkpoint.pt"))
    x, y = final["data"]
    model.eval()
    with torch.no_grad():
        out = model(x[:16])
    torch.testing.assert_close(out, final["probe_logits"], rtol=1e-4, atol=1e-5)
    state = model.state_dict()
    assert list(state) == list(final["model"]), (list(state), list(final["model"]))
    for name, t in state.items():
        assert torch.equal(t, final["model"][name]), name
    print("model.pt in PyTorch alone: the example's logits; its state_dict is the checkpoint's")

    ref = make_reference()
    ref.load_state_dict(final["model"], strict=True)
    ref.eval()
    with torch.no_grad():
        torch.testing.assert_close(ref(x[:16]), final["probe_logits"], rtol=1e-4, atol=1e-5)
    print("the checkpoint loads into the torch.nn net (strict) and gives the same logits")

    mid = torch.load(os.path.join(d, "checkpoint_mid.pt"))
    model.load_state_dict(mid["model"])
    model.train()
    params = list(model.parameters())
    sch = mid["scheduler"]
    opt = torch.optim.Adam(params)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=sch["T_max"],
                                                       eta_min=sch["eta_min"])
    opt.load_state_dict(mid["optimizer"])
    sched.load_state_dict(sch)
    torch.set_rng_state(mid["rng_state"])
    losses = final["losses"]
    resumed = []
    for step in range(mid["step"], len(losses)):
        loss = torch.nn.functional.cross_entropy(model(x), y)
        opt.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(params, max_norm=5.0)
        opt.step()
        sched.step()
        resumed.append(loss.item())
    theirs = losses[mid["step"]:]
    print("resumed in PyTorch at step %d: losses %s" % (
        mid["step"], " ".join("%.4f/%.4f" % ab for ab in list(zip(resumed, theirs))[::5])))
    for i, (a, b) in enumerate(zip(resumed, theirs)):
        assert abs(a - b) <= 2e-3 * abs(b) + 1e-5, (mid["step"] + i, a, b)
    print("PyTorch continues the example's training: %d steps agree" % len(resumed))


if __name__ == "__main__":
    main(sys.argv[1])
