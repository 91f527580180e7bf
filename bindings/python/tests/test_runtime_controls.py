"""Backend switches and random generators against PyTorch itself: the
switches ctorch sets are the ones torch reads when both use one LibTorch (the
same process on every leg), and generator states cross between
torch.Generator and ctorch.Generator drawing the same numbers."""
import copy
import pickle

import pytest

import ctorch

torch = pytest.importorskip("torch")


def same_libtorch():
    """True when torch and libctorch share one LibTorch in this process."""
    with open("/proc/self/maps") as f:
        libs = {line.split()[-1] for line in f if "libtorch_cpu" in line}
    return len(libs) == 1


SWITCHES = [  # (ctorch object, attribute, torch object)
    (ctorch.backends.cudnn, "benchmark", torch.backends.cudnn),
    (ctorch.backends.cudnn, "deterministic", torch.backends.cudnn),
    (ctorch.backends.cudnn, "allow_tf32", torch.backends.cudnn),
    (ctorch.backends.cudnn, "enabled", torch.backends.cudnn),
    (ctorch.backends.cuda.matmul, "allow_tf32", torch.backends.cuda.matmul),
    (ctorch.backends.cuda.matmul, "allow_fp16_reduced_precision_reduction",
     torch.backends.cuda.matmul),
    (ctorch.backends.mkldnn, "enabled", torch.backends.mkldnn),
]


@pytest.mark.parametrize("ct_obj,name,torch_obj", SWITCHES, ids=[s[1] for s in SWITCHES])
def test_switches_are_torchs(ct_obj, name, torch_obj):
    torch.ones(1)  # LibTorch loaded by both
    if not same_libtorch():
        pytest.skip("torch and libctorch load different LibTorch libraries here")
    was = getattr(ct_obj, name)
    assert was == bool(getattr(torch_obj, name))
    try:
        setattr(ct_obj, name, not was)
        assert getattr(ct_obj, name) == (not was)
        assert bool(getattr(torch_obj, name)) == (not was)  # torch sees ctorch's setting
        setattr(torch_obj, name, was)
        assert getattr(ct_obj, name) == was                 # and the reverse
    finally:
        setattr(ct_obj, name, was)


def test_deterministic_and_precision_are_torchs():
    if not same_libtorch():
        pytest.skip("torch and libctorch load different LibTorch libraries here")
    try:
        ctorch.use_deterministic_algorithms(True, warn_only=True)
        assert torch.are_deterministic_algorithms_enabled()
        assert torch.is_deterministic_algorithms_warn_only_enabled()
        torch.use_deterministic_algorithms(False)
        assert not ctorch.are_deterministic_algorithms_enabled()
        assert not ctorch.is_deterministic_algorithms_warn_only_enabled()
        ctorch.set_float32_matmul_precision("medium")
        assert torch.get_float32_matmul_precision() == "medium"
        torch.set_float32_matmul_precision("high")
        assert ctorch.get_float32_matmul_precision() == "high"
        assert ctorch.backends.cuda.matmul.allow_tf32
    finally:
        ctorch.use_deterministic_algorithms(False)
        ctorch.set_float32_matmul_precision("highest")


def test_switch_refusals():
    with pytest.raises(ctorch.InvalidArgumentError, match="precision must be"):
        ctorch.set_float32_matmul_precision("fast")
    with pytest.raises(AttributeError):
        ctorch.backends.cudnn.benchmrk = True
    v = torch.__version__.split(".")
    if (int(v[0]), int(v[1])) < (2, 0):  # this LibTorch has no mem-efficient SDPA switch
        with pytest.raises(ctorch.NotSupportedError, match="needs LibTorch >= 2.0"):
            ctorch.backends.cuda.mem_efficient_sdp_enabled()
    else:
        assert ctorch.backends.cuda.mem_efficient_sdp_enabled() in (True, False)


def rand_ct(g, n=16):
    return ctorch.ops.aten.rand([n], generator=g).tolist()


def test_torch_state_draws_the_same_in_ctorch():
    """torch.Generator.get_state() bytes set into a ctorch generator give
    PyTorch's numbers, and ctorch's state gives them back in PyTorch."""
    tg = torch.Generator().manual_seed(20261203)
    torch.rand(5, generator=tg)  # a state mid-stream, not just after seeding
    g = ctorch.Generator().set_state(bytes(tg.get_state().tolist()))
    assert rand_ct(g) == torch.rand(16, generator=tg).tolist()
    assert g.get_state().tolist() == tg.get_state().tolist()
    tg2 = torch.Generator()
    tg2.set_state(torch.tensor(g.get_state().tolist(), dtype=torch.uint8))
    assert torch.randn(8, generator=tg2).tolist() == ctorch.ops.aten.randn([8], generator=g).tolist()


def test_seeds_match_torch():
    g = ctorch.Generator().manual_seed(7)
    assert g.initial_seed() == 7
    assert rand_ct(g) == torch.rand(16, generator=torch.Generator().manual_seed(7)).tolist()
    assert ctorch.Generator().initial_seed() == torch.Generator().initial_seed()
    assert ctorch.Generator().manual_seed(-1).initial_seed() == 2 ** 64 - 1


def test_default_generator_drives_plain_ops():
    ctorch.manual_seed(3)
    a = ctorch.ops.aten.rand([6]).tolist()
    d = ctorch.default_generator()
    assert d.initial_seed() == 3
    d.manual_seed(3)
    assert ctorch.ops.aten.rand([6]).tolist() == a


def test_generator_copies_and_pickles():
    g = ctorch.Generator().manual_seed(11)
    for other in (copy.copy(g), copy.deepcopy(g), pickle.loads(pickle.dumps(g))):
        assert other._ptr() != g._ptr()
        assert rand_ct(other) == rand_ct(copy.copy(g))
    before = g.get_state().tolist()
    rand_ct(copy.deepcopy(g))
    assert g.get_state().tolist() == before  # a copy draws from its own state
    assert str(g.device) == "cpu" and "initial seed 11" in repr(g)


def test_generator_refusals():
    g = ctorch.Generator()
    with pytest.raises(ctorch.CTorchTypeError, match="uint8 tensor, not Float"):
        g.set_state(ctorch.zeros(5056))
    with pytest.raises(ctorch.InvalidArgumentError, match="wrong size|size") as ei:
        g.set_state(ctorch.zeros(10, dtype=ctorch.uint8))
    assert ei.value.function == "ct_generator_set_state"
    if not ctorch.cuda.is_available():
        with pytest.raises(ctorch.NotSupportedError, match="CUDA"):
            ctorch.Generator("cuda")


# ---- CUDA runtime controls: on a machine without a GPU each says so ---------------

CUDA_CALLS = [
    ("max_memory_allocated", lambda: ctorch.cuda.max_memory_allocated()),
    ("max_memory_reserved", lambda: ctorch.cuda.max_memory_reserved(0)),
    ("reset_peak_memory_stats", lambda: ctorch.cuda.reset_peak_memory_stats()),
    ("memory_stats", lambda: ctorch.cuda.memory_stats()),
    ("set_memory_fraction", lambda: ctorch.cuda.set_per_process_memory_fraction(0.5)),
    ("stream_from_pool", lambda: ctorch.cuda.stream_from_pool()),
    ("event_new", lambda: ctorch.cuda.Event(enable_timing=True)),
    ("graph_new", lambda: ctorch.cuda.CUDAGraph()),
]


@pytest.mark.skipif(ctorch.cuda.is_available(), reason="a CUDA device is here")
@pytest.mark.parametrize("name,call", CUDA_CALLS, ids=[c[0] for c in CUDA_CALLS])
def test_cuda_controls_without_a_device(name, call):
    with pytest.raises(ctorch.NotSupportedError) as ei:
        call()
    assert ei.value.function == "ct_cuda_" + name
    if not ctorch.cuda.is_compiled():
        assert "CUDA is not supported in this build of ctorch" in str(ei.value)
    else:
        assert "no CUDA device is available" in str(ei.value)


@pytest.mark.skipif(not ctorch.cuda.is_available(), reason="needs a CUDA device")
def test_cuda_graph_replays_the_eager_result():
    x = ctorch.ones(256, 256, device="cuda")
    ctorch.cuda.reset_peak_memory_stats()
    g = ctorch.cuda.CUDAGraph()
    with g.capture():
        y = x * 2 + 1
    x.fill_(5)
    g.replay()
    ctorch.cuda.synchronize()
    assert y.cpu().tolist() == (x * 2 + 1).cpu().tolist()
    start, end = ctorch.cuda.Event(enable_timing=True), ctorch.cuda.Event(enable_timing=True)
    start.record()
    x @ x
    end.record()
    end.synchronize()
    assert end.query() and start.elapsed_time(end) > 0
    stats = ctorch.cuda.memory_stats()
    assert stats["allocated_bytes.all.peak"] == ctorch.cuda.max_memory_allocated()
