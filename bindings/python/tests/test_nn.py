"""ctorch.nn against torch.nn: each layer built by ctorch and by torch under the
same seed has the same state_dict (names, order, values bit for bit), the same
forward in training and eval mode, the same gradients, the same buffer updates;
state_dicts load both ways with strict=True; a saved model opens with
torch.jit.load alone and computes the same; bad arguments get torch.nn's
messages. Run with /usr/bin/python3 (torch, numpy, pytest)."""

import math

import pytest

import ctorch
from ctorch import nn
from conftest import assert_same, to_ctorch, to_torch

torch = pytest.importorskip("torch")

# (layer, args, kwargs, input shapes or a callable making the inputs)
LAYERS = [
    ("Linear", (4, 3), {}, [(2, 4)]),
    ("Linear", (4, 3), {"bias": False}, [(5, 4)]),
    ("Bilinear", (3, 4, 2), {}, [(5, 3), (5, 4)]),
    ("Identity", (), {}, [(2, 3)]),
    ("Flatten", (), {}, [(2, 3, 4)]),
    ("Conv1d", (2, 4, 3), {"stride": 2, "padding": 1}, [(2, 2, 9)]),
    ("Conv2d", (3, 6, (3, 2)), {"groups": 3, "dilation": 2}, [(2, 3, 9, 8)]),
    ("Conv2d", (3, 4, 3), {"padding": "same", "padding_mode": "reflect"}, [(1, 3, 6, 6)]),
    ("Conv2d", (2, 4, 3), {"padding": 1, "padding_mode": "circular", "bias": False},
     [(1, 2, 5, 5)]),
    ("Conv3d", (2, 3, 2), {"padding": "valid"}, [(1, 2, 4, 4, 4)]),
    ("ConvTranspose2d", (4, 2, 3), {"stride": 2, "output_padding": 1}, [(2, 4, 5, 5)]),
    ("ConvTranspose1d", (2, 4, 3), {"groups": 2}, [(2, 2, 7)]),
    ("BatchNorm1d", (4,), {}, [(6, 4)]),
    ("BatchNorm2d", (3,), {"momentum": None}, [(4, 3, 5, 5)]),
    ("BatchNorm2d", (3,), {"affine": False, "track_running_stats": False}, [(4, 3, 2, 2)]),
    ("LayerNorm", ((3, 4),), {"eps": 1e-3}, [(2, 3, 4)]),
    ("GroupNorm", (2, 4), {}, [(3, 4, 5)]),
    ("Embedding", (10, 3), {"padding_idx": 2},
     lambda: [torch.tensor([[1, 2, 4], [9, 2, 0]])]),
    ("Embedding", (10, 3), {"max_norm": 1.0}, lambda: [torch.tensor([1, 5, 5])]),
    ("LSTM", (3, 5), {"num_layers": 2, "bidirectional": True}, [(7, 2, 3)]),
    ("LSTM", (3, 4), {"batch_first": True}, [(2, 6, 3)]),
    ("LSTM", (3, 4), {}, [(6, 3)]),
    ("GRU", (3, 4), {"num_layers": 2, "bias": False}, [(5, 2, 3)]),
    ("RNN", (3, 4), {"nonlinearity": "relu"}, [(5, 2, 3)]),
    ("MultiheadAttention", (8, 2), {}, [(5, 3, 8), (4, 3, 8), (4, 3, 8)]),
    ("MultiheadAttention", (8, 4), {"batch_first": True, "add_bias_kv": True,
                                    "add_zero_attn": True},
     lambda: [torch.randn(3, 5, 8), torch.randn(3, 4, 8), torch.randn(3, 4, 8),
              torch.tensor([[False, False, True, False]] * 3)]),
    ("MultiheadAttention", (6, 3), {"kdim": 4, "vdim": 5, "bias": False},
     lambda: [torch.randn(5, 6), torch.randn(4, 4), torch.randn(4, 5)]),
    ("TransformerEncoderLayer", (8, 2), {"dim_feedforward": 16, "dropout": 0.0},
     [(5, 3, 8)]),
    ("TransformerEncoderLayer", (8, 4), {"dim_feedforward": 12, "dropout": 0.0,
                                         "batch_first": True, "norm_first": True,
                                         "activation": "gelu"},
     [(3, 5, 8)]),
    ("MaxPool2d", (2,), {}, [(1, 2, 6, 6)]),
    ("MaxPool1d", (3,), {"stride": 2, "padding": 1, "return_indices": True}, [(1, 2, 9)]),
    ("AvgPool2d", (3,), {"stride": 2, "count_include_pad": False, "padding": 1},
     [(1, 2, 7, 7)]),
    ("AvgPool1d", (2,), {}, [(1, 2, 8)]),
    ("AdaptiveAvgPool2d", ((2, 3),), {}, [(1, 2, 7, 8)]),
    ("AdaptiveMaxPool1d", (3,), {}, [(1, 2, 8)]),
    ("ReLU", (), {}, [(3, 4)]),
    ("ReLU6", (), {}, [(3, 4)]),
    ("LeakyReLU", (0.2,), {}, [(3, 4)]),
    ("ELU", (), {"alpha": 0.5}, [(3, 4)]),
    ("SELU", (), {}, [(3, 4)]),
    ("CELU", (), {}, [(3, 4)]),
    ("GELU", (), {"approximate": "tanh"}, [(3, 4)]),
    ("SiLU", (), {}, [(3, 4)]),
    ("Mish", (), {}, [(3, 4)]),
    ("Sigmoid", (), {}, [(3, 4)]),
    ("Tanh", (), {}, [(3, 4)]),
    ("Hardtanh", (-0.5, 0.5), {}, [(3, 4)]),
    ("Hardswish", (), {}, [(3, 4)]),
    ("Hardsigmoid", (), {}, [(3, 4)]),
    ("Softplus", (), {"beta": 2.0}, [(3, 4)]),
    ("Softsign", (), {}, [(3, 4)]),
    ("Tanhshrink", (), {}, [(3, 4)]),
    ("Softmax", (), {"dim": 1}, [(3, 4)]),
    ("LogSoftmax", (0,), {}, [(3, 4)]),
]

LOSSES = [
    ("CrossEntropyLoss", (), {"label_smoothing": 0.1},
     lambda: [torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])]),
    ("CrossEntropyLoss", (), {"weight": torch.tensor([1.0, 2.0, 0.5, 1.0]),
                              "ignore_index": 1, "reduction": "sum"},
     lambda: [torch.randn(5, 4), torch.tensor([0, 3, 1, 1, 2])]),
    ("NLLLoss", (), {"reduction": "none"},
     lambda: [torch.randn(5, 4).log_softmax(1), torch.tensor([0, 3, 1, 1, 2])]),
    ("MSELoss", (), {}, [(3, 4), (3, 4)]),
    ("L1Loss", (), {"reduction": "sum"}, [(3, 4), (3, 4)]),
    ("SmoothL1Loss", (), {"beta": 0.5}, [(3, 4), (3, 4)]),
    ("HuberLoss", (), {"delta": 0.3}, [(3, 4), (3, 4)]),
    ("BCELoss", (), {}, lambda: [torch.rand(3, 4), torch.rand(3, 4)]),
    ("BCEWithLogitsLoss", (), {"pos_weight": torch.tensor([1.0, 2.0, 3.0, 4.0])},
     lambda: [torch.randn(3, 4), torch.rand(3, 4)]),
    ("KLDivLoss", (), {"reduction": "batchmean"},
     lambda: [torch.randn(3, 4).log_softmax(1), torch.rand(3, 4)]),
    ("CosineEmbeddingLoss", (), {"margin": 0.2},
     lambda: [torch.randn(3, 4), torch.randn(3, 4), torch.tensor([1.0, -1.0, 1.0])]),
]


def make_inputs(spec):
    torch.manual_seed(123)
    if callable(spec):
        return spec()
    return [torch.randn(*shape) for shape in spec]


def as_ctorch_kwargs(kwargs):
    return {k: to_ctorch(v) for k, v in kwargs.items()}


def both(name, args, kwargs, seed=0):
    torch.manual_seed(seed)
    ref = getattr(torch.nn, name)(*args, **kwargs)
    ctorch.manual_seed(seed)
    mine = getattr(nn, name)(*args, **as_ctorch_kwargs(kwargs))
    return ref, mine


def detached(sd):
    return {k: to_torch(v.detach()) for k, v in sd.items()}


def check_state(mine, ref):
    got, want = detached(mine.state_dict()), ref.state_dict()
    assert list(got) == list(want)
    for k in want:
        assert got[k].dtype == want[k].dtype, k
        assert torch.equal(got[k], want[k]), k


def run_both(ref, mine, inputs, grad=True):
    xs_ref = [x.clone().requires_grad_(grad and x.is_floating_point()) for x in inputs]
    xs_mine = [to_ctorch(x.clone()) for x in inputs]
    for x in xs_mine:
        if grad and x.dtype.is_floating_point:
            x.requires_grad_(True)
    return ref(*xs_ref), mine(*xs_mine), xs_ref, xs_mine


def total(out):
    """A scalar from every floating tensor of an output (for backward)."""
    if isinstance(out, (tuple, list)):
        return sum(total(o) for o in out if total(o) is not None)
    if out.dtype.is_floating_point:
        return (out * out).sum()
    return None


@pytest.mark.parametrize("name,args,kwargs,inputs", LAYERS,
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(LAYERS)])
def test_layer_equals_torch(name, args, kwargs, inputs):
    ref, mine = both(name, args, kwargs)
    check_state(mine, ref)
    xs = make_inputs(inputs)
    for mode in ("train", "eval"):
        getattr(ref, mode)()
        getattr(mine, mode)()
        assert mine.training == ref.training
        want, got, xr, xm = run_both(ref, mine, xs)
        assert_same(got, want, rtol=1e-5, atol=1e-6)
        t_ref = total(want)
        if t_ref is not None and t_ref.requires_grad:
            t_ref.backward()
            total(got).backward()
            for (k, p), (k2, q) in zip(ref.named_parameters(), mine.named_parameters().items()):
                assert k == k2
                assert_same(q.grad, p.grad, rtol=1e-4, atol=1e-5)
            for a, b in zip(xr, xm):
                if a.grad is not None:
                    assert_same(b.grad, a.grad, rtol=1e-4, atol=1e-5)
            ref.zero_grad()
            mine.zero_grad()
            assert all(p.grad is None for p in mine.parameters())
        check_state(mine, ref)  # running statistics moved alike


@pytest.mark.parametrize("name,args,kwargs,inputs", LOSSES,
                         ids=[f"{s[0]}-{i}" for i, s in enumerate(LOSSES)])
def test_loss_equals_torch(name, args, kwargs, inputs):
    ref, mine = both(name, args, kwargs)
    check_state(mine, ref)
    xs = make_inputs(inputs)
    want, got, xr, xm = run_both(ref, mine, xs)
    assert_same(got, want, rtol=1e-5, atol=1e-6)
    want.sum().backward()
    got.sum().backward()
    assert_same(xm[0].grad, xr[0].grad, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("fn,args", [
    ("cross_entropy", lambda: (torch.randn(4, 3), torch.tensor([0, 2, 1, 1]))),
    ("nll_loss", lambda: (torch.randn(4, 3), torch.tensor([0, 2, 1, 1]))),
    ("mse_loss", lambda: (torch.randn(4, 3), torch.randn(4, 3))),
    ("l1_loss", lambda: (torch.randn(4, 3), torch.randn(4, 3))),
    ("smooth_l1_loss", lambda: (torch.randn(4, 3), torch.randn(4, 3))),
    ("binary_cross_entropy_with_logits", lambda: (torch.randn(4, 3), torch.rand(4, 3))),
    ("kl_div", lambda: (torch.randn(4, 3), torch.rand(4, 3))),
    ("relu", lambda: (torch.randn(4, 3),)),
    ("gelu", lambda: (torch.randn(4, 3),)),
    ("linear", lambda: (torch.randn(4, 3), torch.randn(2, 3), torch.randn(2))),
])
def test_functional_equals_torch(fn, args):
    xs = args()
    want = getattr(torch.nn.functional, fn)(*xs)
    got = getattr(nn.functional, fn)(*[to_ctorch(x) for x in xs])
    assert_same(got, want)


def conv_net(lib, host_layer=None):
    n = lib.nn if lib is torch else nn
    layers = [n.Conv2d(1, 4, 3, padding=1), n.BatchNorm2d(4), n.ReLU(), n.Dropout(0.25),
              n.MaxPool2d(2), n.Flatten(), n.Linear(4 * 4 * 4, 3)]
    if host_layer is not None:
        layers.insert(3, host_layer)
    return n.Sequential(*layers)


def test_model_trains_like_torch():
    torch.manual_seed(7)
    ref = conv_net(torch)
    ctorch.manual_seed(7)
    mine = conv_net(ctorch)
    check_state(mine, ref)
    ref.eval()
    mine.eval()  # dropout off: the steps are deterministic
    opt_ref = torch.optim.SGD(ref.parameters(), lr=0.1, momentum=0.9)
    opt = ctorch.optim.SGD(mine.parameters(), lr=0.1, momentum=0.9)
    torch.manual_seed(1)
    x, y = torch.randn(8, 1, 8, 8), torch.randint(0, 3, (8,))
    lossf_ref, lossf = torch.nn.CrossEntropyLoss(), nn.CrossEntropyLoss()
    for _ in range(5):
        opt_ref.zero_grad()
        l_ref = lossf_ref(ref(x), y)
        l_ref.backward()
        opt_ref.step()
        opt.zero_grad()
        loss = lossf(mine(to_ctorch(x)), to_ctorch(y))
        loss.backward()
        opt.step()
        assert float(loss) == pytest.approx(float(l_ref), rel=1e-5)
    got = detached(mine.state_dict())
    for k, v in ref.state_dict().items():
        assert torch.allclose(got[k].to(v.dtype), v, rtol=1e-4, atol=1e-6), k


def test_state_dict_loads_both_ways():
    torch.manual_seed(3)
    ref = conv_net(torch)
    ctorch.manual_seed(4)  # another seed: loading must change everything
    mine = conv_net(ctorch)
    res = mine.load_state_dict(ref.state_dict())
    assert res.missing_keys == [] and res.unexpected_keys == []
    check_state(mine, ref)
    ctorch.manual_seed(5)
    other = conv_net(ctorch)
    torch.manual_seed(6)
    back = conv_net(torch)
    back.load_state_dict(detached(other.state_dict()), strict=True)
    check_state(other, back)
    # through a torch.save pickle file, as colleagues exchange them
    data = ctorch.save_pickle({k: v.detach() for k, v in other.state_dict().items()})
    import io
    loaded = torch.load(io.BytesIO(data))
    assert list(loaded) == list(back.state_dict())


def test_load_state_dict_errors_change_nothing():
    ctorch.manual_seed(0)
    m = nn.Sequential(nn.Linear(2, 3), nn.BatchNorm1d(3))
    before = detached(m.state_dict())
    sd = dict(before)
    sd["0.weight"] = torch.zeros(3, 2)
    del sd["1.running_var"]
    sd["extra"] = torch.zeros(1)
    with pytest.raises(ctorch.InvalidArgumentError) as e:
        m.load_state_dict(sd)
    assert 'Missing key(s) in state_dict: "1.running_var".' in str(e.value)
    assert 'Unexpected key(s) in state_dict: "extra".' in str(e.value)
    check_unchanged = detached(m.state_dict())
    for k in before:
        assert torch.equal(check_unchanged[k], before[k]), k
    res = m.load_state_dict(sd, strict=False)
    assert res.missing_keys == ["1.running_var"] and res.unexpected_keys == ["extra"]
    assert torch.equal(to_torch(m.state_dict()["0.weight"].detach()), torch.zeros(3, 2))
    with pytest.raises(ctorch.InvalidArgumentError, match="size mismatch for 0.weight"):
        m.load_state_dict({"0.weight": torch.zeros(2, 2)}, strict=False)
    with pytest.raises(TypeError, match="not a Tensor"):
        m.load_state_dict({"0.weight": 3}, strict=False)


def test_saved_model_opens_in_torch(tmp_path):
    ctorch.manual_seed(0)
    mine = conv_net(ctorch)
    mine.eval()
    path = str(tmp_path / "net.pt")
    mine.save(path)
    loaded = torch.jit.load(path)
    loaded.eval()
    x = torch.randn(2, 1, 8, 8)
    assert_same(mine(to_ctorch(x)), loaded(x))
    assert list(loaded.state_dict()) == list(mine.state_dict())
    assert loaded.original_name == "Sequential"
    assert getattr(loaded, "0").original_name == "Conv2d"


def test_own_layer_inside_sequential():
    scale = ctorch.Module.new("Scale")
    scale.register_parameter("s", ctorch.full([1], 2.0))
    scale.define("def forward(self, x):\n    return x * self.s\n")
    m = nn.Sequential(nn.Linear(3, 2), scale, nn.Tanh())
    x = ctorch.randn(4, 3)
    lin = m.named_children()["0"]
    want = (x.detach().numpy() @ lin.weight.detach().numpy().T + lin.bias.detach().numpy()) * 2
    import numpy as np
    assert np.allclose(m(x).detach().numpy(), np.tanh(want), atol=1e-6)
    assert list(m.state_dict()) == ["0.weight", "0.bias", "1.s"]


def test_containers():
    a, b = nn.Linear(2, 2), nn.ReLU()
    lst = nn.ModuleList([a, b])
    assert list(lst.named_children()) == ["0", "1"]
    d = nn.ModuleDict({"enc": a, "act": b})
    assert list(d.named_children()) == ["enc", "act"]
    seq = nn.Sequential({"enc": nn.Linear(2, 3), "act": nn.ReLU()})
    assert list(seq.state_dict()) == ["enc.weight", "enc.bias"]
    assert seq(ctorch.randn(1, 2)).shape == (1, 3)
    # shared, as torch.nn: the container holds the module itself
    with ctorch.no_grad():
        a.weight.zero_()
    assert float(lst.named_children()["0"].weight.abs().sum()) == 0.0


def test_dtype_and_device_arguments():
    torch.manual_seed(0)
    ref = torch.nn.Linear(3, 2, dtype=torch.float64)
    ctorch.manual_seed(0)
    mine = nn.Linear(3, 2, dtype=ctorch.float64, device="cpu")
    check_state(mine, ref)


@pytest.mark.parametrize("method,args,kwargs,shape", [
    ("kaiming_uniform_", (math.sqrt(5),), {}, (4, 3)),
    ("kaiming_normal_", (), {"mode": "fan_out", "nonlinearity": "relu"}, (4, 3, 2)),
    ("xavier_uniform_", (), {"gain": 2.0}, (5, 3)),
    ("xavier_normal_", (), {}, (5, 3)),
    ("orthogonal_", (), {}, (3, 5)),
    ("orthogonal_", (1.5,), {}, (6, 2, 2)),
    ("trunc_normal_", (), {"std": 0.02}, (4, 4)),
    ("trunc_normal_", (), {"a": 2.0, "b": 3.0}, (6, 5)),  # newer torch: the uniform branch
    ("uniform_", (-0.1, 0.3), {}, (7,)),
    ("normal_", (), {"mean": 1.0}, (7,)),
    ("constant_", (0.25,), {}, (3,)),
    ("eye_", (), {}, (3, 4)),
    ("dirac_", (), {}, (4, 2, 3)),
    ("zeros_", (), {}, (2,)),
])
def test_init_equals_torch(method, args, kwargs, shape):
    torch.manual_seed(11)
    want = getattr(torch.nn.init, method)(torch.empty(*shape), *args, **kwargs)
    ctorch.manual_seed(11)
    t = ctorch.empty(*shape)
    got = getattr(nn.init, method)(t, *args, **kwargs)
    assert got is t
    assert torch.allclose(to_torch(t), want, rtol=1e-6, atol=1e-7)


@pytest.mark.parametrize("call,error,message", [
    (lambda: nn.Conv2d(3, 4, 3, groups=0), ctorch.InvalidArgumentError,
     "groups must be a positive integer"),
    (lambda: nn.Conv2d(3, 4, 3, groups=2), ctorch.InvalidArgumentError,
     "in_channels must be divisible by groups"),
    (lambda: nn.Conv2d(3, 4, 3, stride=2, padding="same"), ctorch.InvalidArgumentError,
     "padding='same' is not supported for strided convolutions"),
    (lambda: nn.Conv2d(3, 4, 3, padding="full"), ctorch.InvalidArgumentError,
     "Invalid padding string 'full'"),
    (lambda: nn.Conv2d(3, 4, 3, padding_mode="mirror"), ctorch.InvalidArgumentError,
     "padding_mode must be one of"),
    (lambda: nn.Conv2d(3, 4, (3, 3, 3)), ctorch.InvalidArgumentError, "kernel_size"),
    (lambda: nn.Linear(4), ctorch.InvalidArgumentError, "out_features"),
    (lambda: nn.Linear(4, -1), ctorch.InvalidArgumentError, "negative dimension"),
    (lambda: nn.Linear("a", 2), TypeError, "in_features"),
    (lambda: nn.Linear(4, 2, bais=False), ctorch.InvalidArgumentError, "bais"),
    (lambda: nn.Dropout(1.5), ctorch.InvalidArgumentError,
     "dropout probability has to be between 0 and 1, but got 1.5"),
    (lambda: nn.LSTM(3, 0), ctorch.InvalidArgumentError, "hidden_size must be greater than zero"),
    (lambda: nn.LSTM(3, 4, proj_size=2), ctorch.NotSupportedError, "proj_size"),
    (lambda: nn.GroupNorm(3, 4), ctorch.InvalidArgumentError,
     "num_channels must be divisible by num_groups"),
    (lambda: nn.Embedding(5, 2, padding_idx=5), ctorch.InvalidArgumentError,
     "Padding_idx must be within num_embeddings"),
    (lambda: nn.CrossEntropyLoss(reduction="avg"), ctorch.InvalidArgumentError,
     "avg is not a valid value for reduction"),
    (lambda: nn.MSELoss(size_average=True), ctorch.NotSupportedError, "deprecated"),
    (lambda: nn.Sequential(nn.ReLU(), 3), TypeError, "not a module"),
    (lambda: nn.ModuleDict({"a.b": nn.ReLU()}), ctorch.InvalidArgumentError, "contains"),
    (lambda: nn.Linear(2, 2, dtype=ctorch.int64), TypeError, "floating point"),
])
def test_bad_arguments_get_torch_messages(call, error, message):
    with pytest.raises(error) as e:
        call()
    assert message in str(e.value)


def test_unknown_layer_names_the_known_ones():
    from ctorch.nn import _new
    with pytest.raises(ctorch.InvalidArgumentError) as e:
        _new(b"Linaer", (), {})
    assert "unknown layer 'Linaer'" in str(e.value) and "Linear" in str(e.value)


def test_layers_are_listed_with_signatures():
    layers = nn.layers()
    assert layers["Linear"].startswith("nn::Linear(int in_features, int out_features")
    for name in layers:
        assert callable(getattr(nn, name)), name
        assert hasattr(torch.nn, name), name  # every name is torch.nn's


def test_runtime_errors_are_torch_messages():
    bn = nn.BatchNorm2d(3)
    with pytest.raises(ctorch.Error, match="expected 4D input"):
        bn(ctorch.randn(2, 3))
    with pytest.raises(ctorch.Error, match="Expected more than 1 value per channel"):
        nn.BatchNorm1d(3)(ctorch.randn(1, 3))


# ---- layers written in Python travel to PyTorch through their twins ----------

PSOFTSIGN_TWIN = "def psoftsign(x: Tensor) -> Tensor:\n    return x / (1 + x.abs())\n"


@pytest.fixture
def psoftsign():
    import numpy as np

    @ctorch.library.op("nntwin::psoftsign", "(Tensor x) -> Tensor")
    def op(x):
        a = x.numpy()
        return ctorch.from_numpy(a / (1 + np.abs(a)))

    def backward(ctx, g):
        a = ctx.x.numpy()
        return ctorch.from_numpy(g.numpy() / (1 + np.abs(a)) ** 2)

    def setup(ctx, inputs, output):
        ctx.x = inputs[0]

    op.register_autograd(backward, setup_context=setup)
    yield op
    op.close()


def host_layer():
    m = ctorch.Module.new("PSoftsign")
    m.define("def forward(self, x):\n    return torch.ops.nntwin.psoftsign(x)\n")
    return m


def load_in_plain_torch(path, x):
    """torch.jit.load in a fresh interpreter without ctorch; returns the output
    on x (or the error text)."""
    import subprocess
    import sys
    code = ("import sys, torch\n"
            "m = torch.jit.load(sys.argv[1]); m.eval()\n"
            "x = torch.load(sys.argv[2])\n"
            "torch.save(m(x), sys.argv[3])\n")
    xp, yp = path + ".x", path + ".y"
    torch.save(x, xp)
    r = subprocess.run([sys.executable, "-c", code, path, xp, yp], capture_output=True,
                       text=True, env={"PATH": "/usr/bin:/bin"})
    if r.returncode != 0:
        return r.stderr
    return torch.load(yp)


def test_check_twin_compares_kernel_and_twin(psoftsign):
    with pytest.raises(ValueError, match="no twin"):
        psoftsign.check_twin(ctorch.randn(4))
    psoftsign.register_twin(PSOFTSIGN_TWIN)
    psoftsign.check_twin(ctorch.randn(3, 4))
    psoftsign.register_twin("def psoftsign(x: Tensor) -> Tensor:\n    return x / (2 + x.abs())\n")
    with pytest.raises(AssertionError, match="result 0 of nntwin::psoftsign and its twin differ"):
        psoftsign.check_twin(ctorch.randn(3, 4))


def test_twin_must_match_the_operator(psoftsign):
    with pytest.raises(ctorch.InvalidArgumentError, match="takes 2 arguments"):
        psoftsign.register_twin("def psoftsign(x: Tensor, y: Tensor) -> Tensor:\n    return x\n")
    with pytest.raises(ctorch.InvalidArgumentError, match="named 'psoftsign'"):
        psoftsign.register_twin("def a(x: Tensor) -> Tensor:\n    return x\n"
                                "def b(x: Tensor) -> Tensor:\n    return x\n")
    with pytest.raises(ctorch.TorchError):
        psoftsign.register_twin("def psoftsign(x: Tensor) -> Tensor:\n    return x +\n")
    with pytest.raises(ctorch.InvalidArgumentError, match="not defined by this library"):
        psoftsign.lib.set_twin("other", PSOFTSIGN_TWIN)


def test_model_with_host_layer_saved_for_pytorch(psoftsign, tmp_path):
    ctorch.manual_seed(0)
    model = nn.Sequential(nn.Linear(3, 4), host_layer(), nn.Linear(4, 2))
    x = torch.randn(5, 3)
    want = to_torch(model(to_ctorch(x)).detach())
    # trains through the Python kernel and its backward
    out = model(to_ctorch(x))
    out.sum().backward()
    assert model.named_parameters()["0.weight"].grad is not None
    # saved as is: PyTorch cannot load it (the Python kernel is not there)
    plain = str(tmp_path / "plain.pt")
    model.save(plain)
    err = load_in_plain_torch(plain, x)
    assert isinstance(err, str) and "nntwin::psoftsign" in err
    # without a twin, to_pytorch names the operator
    with pytest.raises(ctorch.NotSupportedError, match="nntwin::psoftsign"):
        model.to_pytorch()
    psoftsign.register_twin(PSOFTSIGN_TWIN)
    psoftsign.check_twin(ctorch.randn(4, 4))
    portable = str(tmp_path / "portable.pt")
    pt = model.to_pytorch()
    pt.save(portable)
    got = load_in_plain_torch(portable, x)
    assert isinstance(got, torch.Tensor), got
    assert torch.allclose(got, want, atol=1e-6)
    # the original is unchanged: it still runs the Python kernel (closed: fails)
    psoftsign.close()
    with pytest.raises(ctorch.Error, match="psoftsign"):
        model(to_ctorch(x))
    assert torch.allclose(to_torch(pt(to_ctorch(x)).detach()), want, atol=1e-6)


def test_array_kernels_get_the_tensors_memory():
    """arrays=True: the kernel and backward get numpy arrays on the tensors' own memory (pointer
    equality, a write shows in the tensor) and return arrays that become results without a
    copy."""
    import numpy as np
    seen = {}

    @ctorch.library.op("nnarr::scale_rows", "(Tensor x, Tensor w) -> Tensor", arrays=True)
    def scale_rows(x, w):
        assert isinstance(x, np.ndarray) and isinstance(w, np.ndarray)
        seen["x"] = x.ctypes.data
        out = x * w[:, None]
        seen["out"] = out.ctypes.data
        return out

    def setup(ctx, inputs, output):
        assert isinstance(inputs[0], np.ndarray) and isinstance(output, np.ndarray)
        ctx.x, ctx.w = inputs

    def backward(ctx, g):
        assert isinstance(g, np.ndarray)
        return g * ctx.w[:, None], (g * ctx.x).sum(1)

    scale_rows.register_autograd(backward, setup_context=setup, arrays=True)
    try:
        x = ctorch.randn(3, 4)
        w = ctorch.tensor([1.0, 2.0, 3.0])
        y = scale_rows(x, w)
        assert seen["x"] == x.data_ptr()       # the kernel read x's memory
        assert seen["out"] == y.data_ptr()     # the result is the kernel's array
        assert np.allclose(y.numpy(), x.numpy() * np.array([1, 2, 3.0])[:, None])
        # a non-contiguous input arrives contiguous
        xt = ctorch.randn(4, 3).t()
        assert np.allclose(scale_rows(xt, w).numpy(), xt.numpy() * np.array([1, 2, 3.0])[:, None])
        # gradients through the numpy backward equal torch's for the same formula
        tx = torch.tensor(x.numpy(), requires_grad=True)
        tw = torch.tensor(w.numpy(), requires_grad=True)
        (tx * tw[:, None]).pow(2).sum().backward()
        x.requires_grad_(True)
        w.requires_grad_(True)
        scale_rows(x, w).pow(2).sum().backward()
        assert np.allclose(x.grad.numpy(), tx.grad.numpy())
        assert np.allclose(w.grad.numpy(), tw.grad.numpy())

        # a write through the array lands in the tensor
        @ctorch.library.op("nnarr::fill_", "(Tensor(a!) x) -> ()", arrays=True)
        def fill_(x):
            x[...] = 7.0
        z = ctorch.zeros(5)
        fill_(z)
        assert z.numpy().tolist() == [7.0] * 5
        fill_.close()
    finally:
        scale_rows.close()


def test_array_kernel_writes_reach_a_non_contiguous_argument():
    """A written argument (Tensor(a!)) that had to be made contiguous for the kernel gets the
    array's contents back."""
    @ctorch.library.op("nnarr2::fill_", "(Tensor(a!) x) -> ()", arrays=True)
    def fill_(x):
        x[...] = 7.0
    try:
        z = ctorch.zeros(3, 4).t()
        assert not z.is_contiguous()
        fill_(z)
        assert z.numpy().tolist() == [[7.0] * 3] * 4
    finally:
        fill_.close()
