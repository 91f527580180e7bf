"""Optimizers, LR schedules, gradient clipping, autocast and loss scaling against
PyTorch's own (torch.optim, torch.optim.lr_scheduler, torch.nn.utils, torch.autocast,
torch.amp.GradScaler), run step for step on the same numbers; and checkpoints that
cross between ctorch and torch.optim both ways with training continuing identically.
Run with the Python that has torch (/usr/bin/python3 on the 1.13 leg)."""
import os

import numpy as np
import pytest

import ctorch
import ctorch.optim as cto
from conftest import to_torch

torch = pytest.importorskip("torch")

SHAPES = [(3, 4), (5,), (2, 1, 3)]


def make_params(seed=0):
    rng = np.random.default_rng(seed)
    arrays = [rng.standard_normal(s).astype(np.float32) for s in SHAPES]
    ct = [ctorch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    th = [torch.from_numpy(a.copy()).requires_grad_() for a in arrays]
    return ct, th


def set_grads(ct, th, step, seed=1, scale=1.0):
    """The same gradient for both: a fixed random part plus half the parameter."""
    rng = np.random.default_rng(seed * 1000 + step)
    for c, t in zip(ct, th):
        g = (rng.standard_normal(tuple(t.shape)).astype(np.float32) * scale
             + 0.5 * t.detach().numpy())
        c.grad = ctorch.from_numpy(g.copy())
        t.grad = torch.from_numpy(g.copy())


def assert_same(ct, th, rtol=2e-6, atol=1e-7):
    for c, t in zip(ct, th):
        np.testing.assert_allclose(c.detach().numpy(), t.detach().numpy(), rtol=rtol, atol=atol)


CASES = [
    ("SGD", {"lr": 0.1}),
    ("SGD", {"lr": 0.1, "momentum": 0.9, "weight_decay": 0.01}),
    ("SGD", {"lr": 0.05, "momentum": 0.9, "nesterov": True}),
    ("SGD", {"lr": 0.05, "momentum": 0.8, "dampening": 0.1, "maximize": True}),
    ("Adam", {}),
    ("Adam", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.1}),
    ("Adam", {"lr": 0.02, "betas": (0.8, 0.99), "maximize": True, "eps": 1e-6}),
    ("AdamW", {}),
    ("AdamW", {"lr": 0.01, "amsgrad": True, "weight_decay": 0.05}),
    ("RMSprop", {}),
    ("RMSprop", {"lr": 0.01, "momentum": 0.5, "centered": True, "weight_decay": 0.1}),
    ("Adagrad", {}),
    ("Adagrad", {"lr": 0.1, "lr_decay": 0.01, "initial_accumulator_value": 0.1,
                 "weight_decay": 0.1}),
]


@pytest.mark.parametrize("name,options", CASES, ids=["%s-%d" % (c[0], i) for i, c in enumerate(CASES)])
def test_steps_equal_torch_optim(name, options):
    ct, th = make_params()
    copt = getattr(cto, name)(ct, **options)
    topt = getattr(torch.optim, name)(th, **options)
    for step in range(6):
        set_grads(ct, th, step)
        copt.step()
        topt.step()
        assert_same(ct, th)
    # the states agree too, key for key
    cs, ts = copt.state_dict(), topt.state_dict()
    assert sorted(cs["state"]) == sorted(ts["state"])
    for i, tstate in ts["state"].items():
        assert sorted(cs["state"][i]) == sorted(tstate), (cs["state"][i].keys(), tstate.keys())
        for k, v in tstate.items():
            if isinstance(v, torch.Tensor):
                np.testing.assert_allclose(to_torch(cs["state"][i][k]).numpy(), v.numpy(),
                                           rtol=2e-6, atol=1e-7)
            else:
                assert cs["state"][i][k] == v
    for k, v in ts["param_groups"][0].items():
        if k in cs["param_groups"][0]:
            assert cs["param_groups"][0][k] == v, k


def test_a_gradient_left_undefined_skips_the_parameter():
    ct, th = make_params()
    copt, topt = cto.Adam(ct, lr=0.1), torch.optim.Adam(th, lr=0.1)
    set_grads(ct, th, 0)
    ct[1].grad, th[1].grad = None, None
    before = ct[1].detach().numpy().copy()
    copt.step()
    topt.step()
    assert_same(ct, th)
    np.testing.assert_array_equal(ct[1].detach().numpy(), before)
    assert sorted(copt.state_dict()["state"]) == sorted(topt.state_dict()["state"]) == [0, 2]


def test_param_groups_and_changing_options_between_steps():
    ct, th = make_params()
    copt = cto.SGD([{"params": ct[:2]}, {"params": ct[2:], "lr": 0.5, "momentum": 0.5}],
                   lr=0.1, momentum=0.9)
    topt = torch.optim.SGD([{"params": th[:2]}, {"params": th[2:], "lr": 0.5, "momentum": 0.5}],
                           lr=0.1, momentum=0.9)
    assert len(copt.param_groups) == 2
    assert copt.param_groups[1]["lr"] == 0.5 and copt.param_groups[0]["momentum"] == 0.9
    assert [p is q or p.data_ptr() == q.data_ptr()
            for p, q in zip(copt.param_groups[1]["params"], ct[2:])] == [True]
    for step in range(5):
        if step == 2:
            for og in (copt, topt):
                og.param_groups[0]["lr"] = 0.02
                og.param_groups[1]["momentum"] = 0.0
        set_grads(ct, th, step)
        copt.step()
        topt.step()
        assert_same(ct, th)
    assert copt.param_groups[0]["lr"] == 0.02
    ct_extra, th_extra = make_params(5)
    copt.add_param_group({"params": ct_extra, "lr": 0.3})
    topt.add_param_group({"params": th_extra, "lr": 0.3})
    assert copt.param_groups[2]["momentum"] == 0.9  # the constructor's
    set_grads(ct + ct_extra, th + th_extra, 9)
    copt.step()
    topt.step()
    assert_same(ct + ct_extra, th + th_extra)


def test_zero_grad_sets_to_none_or_zeroes():
    ct, th = make_params()
    opt = cto.SGD(ct, lr=0.1)
    set_grads(ct, th, 0)
    opt.zero_grad(set_to_none=False)
    assert all(float(p.grad.abs().sum().item()) == 0.0 for p in ct)
    opt.zero_grad()
    assert all(p.grad is None for p in ct)


def test_closure_form():
    ct, _ = make_params()
    opt = cto.SGD(ct, lr=0.1)
    calls = []

    def closure():
        opt.zero_grad()
        loss = sum(((p * p).sum() for p in ct), ctorch.zeros(()))
        loss.backward()
        calls.append(ctorch.is_grad_enabled())
        return loss

    loss = opt.step(closure)
    assert calls == [True] and loss.item() > 0


def _train(opt, params, grads_from, steps, offset):
    for step in range(steps):
        grads_from(step + offset)
        opt.step()


@pytest.mark.parametrize("name,options", [("Adam", {"lr": 0.01, "amsgrad": True}),
                                          ("SGD", {"lr": 0.1, "momentum": 0.9}),
                                          ("RMSprop", {"lr": 0.01, "centered": True,
                                                       "momentum": 0.3}),
                                          ("Adagrad", {"lr": 0.1}),
                                          ("AdamW", {"lr": 0.01})])
def test_checkpoint_ctorch_to_torch_and_back(tmp_path, name, options):
    """ctorch trains 3 steps and saves (save_pickle); torch loads it (torch.load,
    load_state_dict) and both continue 3 steps identically; then torch saves and
    ctorch resumes from torch's file, again continuing identically."""
    ct, th = make_params()
    copt = getattr(cto, name)(ct, **options)
    for step in range(3):
        set_grads(ct, th, step)
        copt.step()
    path = str(tmp_path / "ckpt.pt")
    ctorch.save_pickle({"model": {str(i): p.detach() for i, p in enumerate(ct)},
                        "optimizer": copt.state_dict()}, path)

    ckpt = torch.load(path)
    th = [ckpt["model"][str(i)].clone().requires_grad_() for i in range(len(ct))]
    topt = getattr(torch.optim, name)(th, **options)
    topt.load_state_dict(ckpt["optimizer"])
    assert_same(ct, th, rtol=0, atol=0)
    for step in range(3, 6):
        set_grads(ct, th, step)
        copt.step()
        topt.step()
        assert_same(ct, th)

    torch.save({"model": [p.detach() for p in th], "optimizer": topt.state_dict()}, path)
    back = ctorch.load_pickle(path)
    ct2 = [p.clone().requires_grad_() for p in back["model"]]
    copt2 = getattr(cto, name)(ct2, **options)
    copt2.load_state_dict(back["optimizer"])
    for step in range(6, 9):
        set_grads(ct2, th, step)
        copt2.step()
        topt.step()
        assert_same(ct2, th)


def test_load_state_dict_keeps_the_loaded_options_and_copies_the_state():
    ct, th = make_params()
    topt = torch.optim.Adam(th, lr=0.03, betas=(0.7, 0.9))
    set_grads(ct, th, 0)
    topt.step()
    sd = ctorch.load_pickle(_saved(topt.state_dict()))
    copt = cto.Adam(ct)
    copt.load_state_dict(sd)
    assert copt.param_groups[0]["lr"] == 0.03 and copt.param_groups[0]["betas"] == (0.7, 0.9)
    # a copy: changing the loaded dict leaves the optimizer alone
    sd["state"][0]["exp_avg"].zero_()
    assert float(copt.state_dict()["state"][0]["exp_avg"].abs().sum().item()) > 0


def _saved(obj):
    import io
    buf = io.BytesIO()
    torch.save(obj, buf)
    return buf.getvalue()


def test_bad_options_and_inputs_fail_cleanly():
    ct, _ = make_params()
    E = ctorch.InvalidArgumentError
    with pytest.raises(E, match="adam has no option 'lrr'"):
        cto.Adam(ct, lrr=0.1)
    with pytest.raises(E, match="Invalid learning rate: -1"):
        cto.SGD(ct, lr=-1.0)
    with pytest.raises(E, match="Invalid learning rate: nan"):
        cto.SGD(ct, lr=float("nan"))
    with pytest.raises(E, match="Invalid beta parameter at index 1: 1"):
        cto.Adam(ct, betas=(0.9, 1.0))
    with pytest.raises(E, match="'betas' must be a pair of numbers"):
        cto.Adam(ct, betas=(0.9,))
    with pytest.raises(E, match="Nesterov momentum requires a momentum and zero dampening"):
        cto.SGD(ct, lr=0.1, nesterov=True)
    with pytest.raises(E, match="'amsgrad' must be a bool"):
        cto.Adam(ct, amsgrad=1.5)
    with pytest.raises(ctorch.NotSupportedError, match="capturable=True is not supported"):
        cto.Adam(ct, capturable=True)
    with pytest.raises(ValueError, match="empty parameter list"):
        cto.Adam([])
    with pytest.raises(E, match="non-leaf"):
        cto.Adam([ct[0] * 2])
    with pytest.raises(E, match="appears twice"):
        cto.Adam([ct[0], ct[0]])
    opt = cto.Adam(ct[:1])
    with pytest.raises(E, match="appears twice"):
        opt.add_param_group({"params": [ct[0]]})
    with pytest.raises(E, match="unknown algorithm 'lion'"):
        type("Lion", (cto.Optimizer,), {"__slots__": (), "_algorithm": "lion"})(ct)
    # a refused change leaves the group as it was
    with pytest.raises(E, match="Invalid epsilon value"):
        opt.param_groups[0]["eps"] = -1.0
    assert opt.param_groups[0]["eps"] == 1e-8
    opt.param_groups[0]["initial_lr"] = 0.5  # names torch code stores in groups are kept
    assert opt.state_dict()["param_groups"][0]["initial_lr"] == 0.5
    with pytest.raises(TypeError, match="optimizer cannot be pickled"):
        import pickle
        pickle.dumps(opt)


def test_load_state_dict_refuses_what_does_not_match():
    ct, th = make_params()
    copt = cto.Adam(ct)
    topt = torch.optim.Adam(th)
    set_grads(ct, th, 0)
    topt.step()
    good = topt.state_dict()
    E = ctorch.InvalidArgumentError
    with pytest.raises(E, match="no 'param_groups'"):
        copt.load_state_dict({"state": {}})
    small = cto.Adam(ct[:2])
    with pytest.raises(E, match="doesn't match the size"):
        small.load_state_dict(ctorch.load_pickle(_saved(good)))
    bad = ctorch.load_pickle(_saved(good))
    bad["state"][0]["exp_avg"] = ctorch.zeros(7)
    with pytest.raises(E, match=r"state 'exp_avg' of parameter 0 has shape \[7\]"):
        copt.load_state_dict(bad)
    bad = ctorch.load_pickle(_saved(good))
    bad["state"][9] = bad["state"].pop(0)
    with pytest.raises(E, match="parameter 9, which no group lists"):
        copt.load_state_dict(bad)
    assert copt.state_dict()["state"] == {}  # unchanged after each refusal
    # amsgrad turned on after the state was made: a clean error, as torch's KeyError
    copt.load_state_dict(ctorch.load_pickle(_saved(good)))
    copt.param_groups[0]["amsgrad"] = True
    set_grads(ct, th, 1)
    with pytest.raises(E, match="no tensor 'max_exp_avg_sq'"):
        copt.step()


# ---- LR schedules ----

SCHEDULES = [
    ("StepLR", {"step_size": 3, "gamma": 0.5}, "SGD"),
    ("ExponentialLR", {"gamma": 0.9}, "SGD"),
    ("LinearLR", {"start_factor": 0.1, "total_iters": 4}, "SGD"),
    ("CosineAnnealingLR", {"T_max": 5, "eta_min": 0.001}, "Adam"),
    ("OneCycleLR", {"max_lr": 0.5, "total_steps": 12}, "SGD"),
    ("OneCycleLR", {"max_lr": 0.05, "total_steps": 12, "anneal_strategy": "linear",
                    "three_phase": True}, "Adam"),
]


@pytest.mark.parametrize("name,kwargs,opt_name", SCHEDULES,
                         ids=["%s-%d" % (s[0], i) for i, s in enumerate(SCHEDULES)])
def test_schedules_equal_torch_lr_scheduler(name, kwargs, opt_name):
    ct, th = make_params()
    okw = {"lr": 0.1, "momentum": 0.9} if opt_name == "SGD" else {"lr": 0.1}
    copt = getattr(cto, opt_name)([{"params": ct[:1]}, {"params": ct[1:], "lr": 0.2}], **okw)
    topt = getattr(torch.optim, opt_name)([{"params": th[:1]}, {"params": th[1:], "lr": 0.2}],
                                          **okw)
    cs = getattr(cto.lr_scheduler, name)(copt, **kwargs)
    ts = getattr(torch.optim.lr_scheduler, name)(topt, **kwargs)
    steps = 11 if name == "OneCycleLR" else 12
    for step in range(steps):
        assert cs.get_last_lr() == ts.get_last_lr(), step  # bit for bit
        for cg, tg in zip(copt.param_groups, topt.param_groups):
            assert cg["lr"] == tg["lr"]
            for k in ("momentum", "betas"):
                if k in tg:
                    assert cg[k] == tg[k], (step, k)
        set_grads(ct, th, step)
        copt.step()
        topt.step()
        cs.step()
        ts.step()
        assert_same(ct, th, rtol=1e-5, atol=1e-6)


def test_lambda_schedule_and_resuming():
    ct, th = make_params()
    copt, topt = cto.SGD(ct, lr=0.1), torch.optim.SGD(th, lr=0.1)
    cs = cto.lr_scheduler.LambdaLR(copt, lambda e: 0.95 ** e)
    ts = torch.optim.lr_scheduler.LambdaLR(topt, lambda e: 0.95 ** e)
    for _ in range(4):
        copt.step(), topt.step(), cs.step(), ts.step()
        assert cs.get_last_lr() == ts.get_last_lr()
    sd = cs.state_dict()
    assert sd["last_epoch"] == 4 and "optimizer" not in sd
    with pytest.raises(KeyError, match="initial_lr"):
        cto.lr_scheduler.StepLR(cto.SGD(ct, lr=0.1), 2, last_epoch=3)


# ---- gradient clipping ----

@pytest.mark.parametrize("norm_type", [2.0, 1.0, float("inf"), 3.0])
@pytest.mark.parametrize("max_norm", [0.5, 100.0])
def test_clip_grad_norm_equals_torch(norm_type, max_norm):
    ct, th = make_params()
    set_grads(ct, th, 0, scale=3.0)
    cn = ctorch.nn.utils.clip_grad_norm_(ct, max_norm, norm_type)
    tn = torch.nn.utils.clip_grad_norm_(th, max_norm, norm_type)
    assert cn.shape == () and abs(cn.item() - tn.item()) <= 1e-6 * abs(tn.item())
    for c, t in zip(ct, th):
        np.testing.assert_allclose(c.grad.numpy(), t.grad.numpy(), rtol=1e-6, atol=1e-7)


def test_clip_grad_norm_nonfinite_and_empty():
    ct, th = make_params()
    set_grads(ct, th, 0)
    g = ct[0].grad
    g[0, 0] = float("inf")
    before = [p.grad.numpy().copy() for p in ct]
    with pytest.raises(ctorch.InvalidArgumentError, match="non-finite"):
        ctorch.nn.utils.clip_grad_norm_(ct, 1.0, error_if_nonfinite=True)
    for p, b in zip(ct, before):
        np.testing.assert_array_equal(p.grad.numpy(), b)  # left alone
    assert ctorch.nn.utils.clip_grad_norm_(ct, 1.0).item() == float("inf")
    fresh, _ = make_params()
    assert ctorch.nn.utils.clip_grad_norm_(fresh, 1.0).item() == 0.0  # no gradients


def test_clip_grad_value_equals_torch():
    ct, th = make_params()
    set_grads(ct, th, 0, scale=3.0)
    ctorch.nn.utils.clip_grad_value_(ct, 0.7)
    torch.nn.utils.clip_grad_value_(th, 0.7)
    for c, t in zip(ct, th):
        np.testing.assert_array_equal(c.grad.numpy(), t.grad.numpy())
    assert max(float(c.grad.abs().max().item()) for c in ct) <= 0.7


# ---- autocast ----

def test_cpu_autocast_runs_matmul_in_bfloat16_like_torch():
    a = np.random.default_rng(0).standard_normal((8, 8)).astype(np.float32)
    ca, ta = ctorch.from_numpy(a), torch.from_numpy(a)
    assert not ctorch.amp.is_autocast_enabled("cpu")
    with ctorch.autocast("cpu"):
        assert ctorch.amp.is_autocast_enabled("cpu")
        assert ctorch.amp.get_autocast_dtype("cpu") is ctorch.bfloat16
        r = ctorch.mm(ca, ca)
        with ctorch.autocast("cpu", enabled=False):
            assert ctorch.mm(ca, ca).dtype is ctorch.float32
        assert ctorch.mm(ca, ca).dtype is ctorch.bfloat16
    assert not ctorch.amp.is_autocast_enabled("cpu")
    assert r.dtype is ctorch.bfloat16
    assert ctorch.mm(ca, ca).dtype is ctorch.float32
    with torch.autocast("cpu", dtype=torch.bfloat16):
        tr = torch.mm(ta, ta)
    np.testing.assert_array_equal(r.float().numpy(), tr.float().numpy())


def test_autocast_errors():
    with pytest.raises(ctorch.InvalidArgumentError, match="CT_FLOAT16 or CT_BFLOAT16"):
        with ctorch.autocast("cpu", dtype=ctorch.float64):
            pass
    with pytest.raises(ValueError, match="'cpu' or 'cuda'"):
        ctorch.autocast("tpu")
    assert not ctorch.amp.is_autocast_enabled("cpu")


def test_autocast_is_per_thread():
    import threading
    seen = []
    with ctorch.autocast("cpu"):
        t = threading.Thread(target=lambda: seen.append(ctorch.amp.is_autocast_enabled("cpu")))
        t.start()
        t.join()
    assert seen == [False]


# ---- loss scaling ----

def test_grad_scaler_scales_unscales_skips_and_grows():
    ct, th = make_params()
    opt = cto.SGD(ct, lr=0.1)
    s = ctorch.amp.GradScaler("cpu", init_scale=8.0, growth_interval=2)
    assert s.get_scale() == 8.0
    loss = (ct[0] * ct[0]).sum()
    scaled = s.scale(loss)
    assert scaled.item() == pytest.approx(8 * loss.item())
    scaled.backward()
    np.testing.assert_allclose(ct[0].grad.numpy(), 16 * ct[0].detach().numpy(), rtol=1e-6)
    s.unscale_(opt)
    np.testing.assert_allclose(ct[0].grad.numpy(), 2 * ct[0].detach().numpy(), rtol=1e-6)
    with pytest.raises(ctorch.InvalidArgumentError, match="already been called"):
        s.unscale_(opt)
    before = ct[0].detach().numpy().copy()
    assert s.step(opt) is True
    np.testing.assert_allclose(ct[0].detach().numpy(), before - 0.1 * 2 * before, rtol=1e-6)
    with pytest.raises(ctorch.InvalidArgumentError, match="step\\(\\) has already been called"):
        s.step(opt)
    s.update()
    assert s.get_scale() == 8.0  # one good step of two
    opt.zero_grad()
    s.scale((ct[0] * ct[0]).sum()).backward()
    s.step(opt), s.update()
    assert s.get_scale() == 16.0  # grown after growth_interval good steps
    opt.zero_grad()
    s.scale((ct[0] * ct[0]).sum()).backward()
    ct[0].grad[0, 0] = float("nan")
    before = ct[0].detach().numpy().copy()
    assert s.step(opt) is False  # skipped
    np.testing.assert_array_equal(ct[0].detach().numpy(), before)
    s.update()
    assert s.get_scale() == 8.0  # backed off
    assert s.state_dict() == {"scale": 8.0, "growth_factor": 2.0, "backoff_factor": 0.5,
                              "growth_interval": 2, "_growth_tracker": 0}
    with pytest.raises(ctorch.InvalidArgumentError, match="No inf checks"):
        s.update()


def test_grad_scaler_state_crosses_to_torch_and_back():
    s = ctorch.amp.GradScaler("cpu", init_scale=1024.0, growth_interval=7)
    sd = ctorch.load_pickle(_saved(s.state_dict()))
    assert sd["scale"] == 1024.0 and sd["growth_interval"] == 7
    s2 = ctorch.amp.GradScaler("cpu")
    s2.load_state_dict({"scale": 32.0, "growth_factor": 3.0, "backoff_factor": 0.25,
                        "growth_interval": 5, "_growth_tracker": 2})
    assert s2.get_scale() == 32.0 and s2.state_dict()["_growth_tracker"] == 2
    with pytest.raises(ctorch.InvalidArgumentError, match="growth factor must be > 1.0"):
        ctorch.amp.GradScaler("cpu", growth_factor=0.5)
    with pytest.raises(ctorch.InvalidArgumentError, match="empty"):
        s2.load_state_dict({})
    off = ctorch.amp.GradScaler("cpu", enabled=False)
    assert off.state_dict() == {}
    t = ctorch.ones(2)
    assert off.scale(t).data_ptr() == t.data_ptr()


@pytest.mark.skipif(not hasattr(torch, "amp") or not hasattr(torch.amp, "GradScaler"),
                    reason="torch.amp.GradScaler (CPU) needs torch >= 2.3")
def test_grad_scaler_follows_torch_step_for_step():
    ct, th = make_params()
    copt, topt = cto.SGD(ct, lr=0.01), torch.optim.SGD(th, lr=0.01)
    try:
        ts = torch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    except Exception as e:  # pragma: no cover
        pytest.skip("torch has no CPU GradScaler: %s" % e)
    cs = ctorch.amp.GradScaler("cpu", init_scale=4.0, growth_interval=2)
    for step in range(7):
        set_grads(ct, th, step)
        if step in (2, 5):
            ct[1].grad[0] = float("inf")
            th[1].grad[0] = float("inf")
        cs.scale(ctorch.ones(())), ts.scale(torch.ones(()))  # torch's scale() makes its state
        for p in ct:
            p.grad = p.grad * cs.get_scale()
        for p in th:
            p.grad = p.grad * ts.get_scale()
        cs.step(copt), ts.step(topt)
        cs.update(), ts.update()
        assert cs.get_scale() == ts.get_scale(), step
        assert_same(ct, th)
    assert cs.state_dict() == ts.state_dict()


# ---- CUDA (the GPU script runs these; skipped without a device) ----

cuda = pytest.mark.skipif(not ctorch.cuda.is_available() or not torch.cuda.is_available(),
                          reason="needs a CUDA device")


@cuda
def test_cuda_adam_equals_torch_on_cuda():
    ct, th = make_params()
    ct = [p.detach().to("cuda").requires_grad_() for p in ct]
    th = [p.detach().cuda().requires_grad_() for p in th]
    copt = cto.Adam(ct, lr=0.01, amsgrad=True)
    topt = torch.optim.Adam(th, lr=0.01, amsgrad=True, foreach=False)
    for step in range(4):
        rng = np.random.default_rng(step)
        for c, t in zip(ct, th):
            g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
            c.grad = ctorch.from_numpy(g.copy()).to("cuda")
            t.grad = torch.from_numpy(g.copy()).cuda()
        copt.step()
        topt.step()
    for c, t in zip(ct, th):
        np.testing.assert_allclose(c.detach().cpu().numpy(), t.detach().cpu().numpy(),
                                   rtol=2e-6, atol=1e-7)


@cuda
def test_cuda_autocast_and_grad_scaler_follow_torch():
    a = ctorch.randn(8, 8).to("cuda")
    with ctorch.autocast("cuda"):
        assert ctorch.mm(a, a).dtype is ctorch.float16
    assert ctorch.mm(a, a).dtype is ctorch.float32
    ct, th = make_params()
    ct = [p.detach().to("cuda").requires_grad_() for p in ct]
    th = [p.detach().cuda().requires_grad_() for p in th]
    copt, topt = cto.SGD(ct, lr=0.01), torch.optim.SGD(th, lr=0.01)
    cs = ctorch.amp.GradScaler("cuda", init_scale=4.0, growth_interval=2)
    ts = torch.amp.GradScaler("cuda", init_scale=4.0, growth_interval=2)
    for step in range(6):
        rng = np.random.default_rng(step)
        cs.scale(ctorch.ones(()).to("cuda")), ts.scale(torch.ones((), device="cuda"))
        for c, t in zip(ct, th):
            g = rng.standard_normal(tuple(t.shape)).astype(np.float32)
            if step == 3:
                g.flat[0] = np.inf
            c.grad = ctorch.from_numpy(g * cs.get_scale()).to("cuda")
            t.grad = torch.from_numpy(g * ts.get_scale()).cuda()
        assert cs.step(copt) == (step != 3)
        ts.step(topt)
        cs.update(), ts.update()
        assert cs.get_scale() == ts.get_scale(), step
    for c, t in zip(ct, th):
        np.testing.assert_allclose(c.detach().cpu().numpy(), t.detach().cpu().numpy(),
                                   rtol=2e-6, atol=1e-7)


@pytest.mark.parametrize("name", ["Adam", "AdamW", "RMSprop", "Adagrad"])
def test_load_state_dict_refuses_a_bad_or_missing_step(name):
    # A loaded state whose 'step' is missing or of the wrong type: a
    # torch.optim-style InvalidArgumentError at load time (was LibTorch's
    # "INTERNAL ASSERT FAILED ... report a bug" or "not in the map" at the
    # next step, after earlier parameters had moved), the optimizer unchanged.
    ct, th = make_params()
    copt = getattr(cto, name)(ct, lr=0.1)
    topt = getattr(torch.optim, name)(th, lr=0.1)
    set_grads(ct, th, 0)
    topt.step()
    good = _saved(topt.state_dict())
    before = [p.detach().numpy().copy() for p in ct]

    def snapshot():
        return {i: {k: float(v.sum().item()) for k, v in st.items()}
                for i, st in copt.state_dict()["state"].items()}
    initial = snapshot()  # {} but Adagrad's (made at construction)
    E = ctorch.InvalidArgumentError
    cases = [
        (lambda s: s.__setitem__("step", "abc"), r"'step' of parameter 1 is a String; it must be "
         r"a singleton tensor or a number \(torch.optim: `state_steps` argument must contain"),
        (lambda s: s.__setitem__("step", ctorch.zeros(3)), r"'step' of parameter 1 is a tensor "
         r"of 3 elements of Float; it must be a singleton real tensor"),
        (lambda s: s.__setitem__("step", [1, 2]), r"'step' of parameter 1 is a GenericList"),
        (lambda s: s.pop("step"), r"the state of parameter 1 has no 'step' \(torch.optim's "
         + name.lower() + r" keeps one .*KeyError: 'step'\)"),
    ]
    for change, message in cases:
        bad = ctorch.load_pickle(good)
        change(bad["state"][1])
        with pytest.raises(E, match=message) as info:
            copt.load_state_dict(bad)
        assert "INTERNAL ASSERT" not in str(info.value)
        assert "not in the map" not in str(info.value)
        # unchanged: no state loaded, the parameters as they were
        assert snapshot() == initial
        assert all((p.detach().numpy() == b).all() for p, b in zip(ct, before))
    set_grads(ct, th, 1)
    copt.step()
    # a step saved as a number (torch < 1.12's checkpoints) still loads
    old = ctorch.load_pickle(good)
    for s in old["state"].values():
        s["step"] = 1
    copt.load_state_dict(old)
    copt.step()
