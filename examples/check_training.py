#!/usr/bin/python3
"""What a training example saved, checked in PyTorch (Debian's /usr/bin/python3 with torch):

    check_training.py OUTDIR

1. OUTDIR/model.pt (TorchScript, the custom layer's TorchScript twin inside) loads with
   torch.jit.load and gives the logits the example's host-language layer gave;
2. OUTDIR/checkpoint.pt's weights are the model's;
3. training resumes in PyTorch from OUTDIR/checkpoint_mid.pt (weights, torch.optim.Adam's
   load_state_dict, CosineAnnealingLR's load_state_dict) and follows the example's own losses
   for the remaining steps.
"""
import os
import sys

try:
    import torch
except ImportError:
    print("torch is not installed for this Python: skipped")
    sys.exit(77)


def main(d):
    model = torch.jit.load(os.path.join(d, "model.pt"))
    final = torch.load(os.path.join(d, "checkpoint.pt"))
    x, y = final["data"]
    with torch.no_grad():
        out = model(x[:16])
    torch.testing.assert_close(out, final["probe_logits"], rtol=1e-4, atol=1e-5)
    for name, p in model.named_parameters():
        assert torch.equal(p.detach(), final["model"][name]), name
    print("model.pt in PyTorch: the example's logits; checkpoint weights: the model's")

    mid = torch.load(os.path.join(d, "checkpoint_mid.pt"))
    with torch.no_grad():
        for name, p in model.named_parameters():
            p.copy_(mid["model"][name])
    params = list(model.parameters())
    sch = mid["scheduler"]
    opt = torch.optim.Adam(params)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=sch["T_max"],
                                                       eta_min=sch["eta_min"])
    opt.load_state_dict(mid["optimizer"])
    sched.load_state_dict(sch)
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
