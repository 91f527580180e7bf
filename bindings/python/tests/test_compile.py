"""ctorch operators inside PyTorch 2's compiler, in the process of a PyTorch
user: torch.library.opcheck passes every test, torch.compile (eager,
aot_eager, inductor; static and dynamic shapes) runs inference and training
through them with eager's gradients, in any order with eager use, and an
error raised by torch's dispatch modes inside a ctorch call comes out as
itself. Needs torch >= 2.4 sharing libctorch's LibTorch (the PyPI and lt2
legs); skipped elsewhere."""
import ctypes
import itertools
import os

import pytest

import ctorch
from ctorch.library import Library, op

torch = pytest.importorskip("torch")
if not hasattr(torch.library, "opcheck"):
    pytest.skip("torch %s has no torch.library.opcheck (2.4+)" % torch.__version__,
                allow_module_level=True)
if not torch.__version__.startswith(ctorch.torch_version().split("+")[0][:4]):
    pytest.skip("PyTorch %s is not the LibTorch ctorch uses (%s)"
                % (torch.__version__, ctorch.torch_version()), allow_module_level=True)

_names = itertools.count()


def _ns():
    return "ctcomp%d" % next(_names)


def _softsign_op(ns):
    """ns::softsign from Python: a numpy kernel, a fake kernel, and a
    backward written with ctorch operators and Python scalars."""
    @op(ns + "::softsign", "(Tensor x) -> Tensor", arrays=True)
    def softsign(a):
        import numpy
        return a / (1 + numpy.abs(a))

    @softsign.register_fake
    def _(x):
        return ctorch.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.x = inputs[0]

    def backward(ctx, g):  # Python numbers with +, ** and a comparison, as users write
        d = (1 + ctx.x.abs()) ** 2
        return g / d * (ctx.x == ctx.x) + 0 * (ctx.x > 0)

    softsign.register_autograd(backward, setup_context=setup)
    return softsign


def _affine_op(ns):
    """ns::affine(Tensor x, Tensor w, float a, int k) -> (Tensor, Tensor):
    several inputs and outputs, non-Tensor arguments, ctorch kernels."""
    @op(ns + "::affine", "(Tensor x, Tensor w, float a, int k) -> (Tensor, Tensor)")
    def affine(x, w, a, k):
        return x * w * a, x + k

    @affine.register_fake
    def _(x, w, a, k):
        return ctorch.empty_like(x), ctorch.empty_like(x)

    def setup(ctx, inputs, output):
        ctx.x, ctx.w, ctx.a = inputs[0], inputs[1], inputs[2]

    def backward(ctx, g1, g2):
        gx = g1 * ctx.w * ctx.a
        if g2 is not None:
            gx = gx + g2
        return gx, g1 * ctx.x * ctx.a, None, None

    affine.register_autograd(backward, setup_context=setup)
    return affine


def _c_softsign(ns):
    """ns::softsign with C kernels (tests/kernels) and a backward that calls
    the C operator ns::softsign_grad."""
    path = os.environ.get("CTORCH_TEST_KERNELS")
    if not path or not os.path.exists(path):
        pytest.skip("CTORCH_TEST_KERNELS (libctorch_test_kernels.so) not set")
    k = ctypes.CDLL(path)
    k.ctk_register_softsign_traceable.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    k.ctk_register_softsign_traceable.restype = ctypes.c_int32
    lib = Library(ns)
    assert k.ctk_register_softsign_traceable(lib._handle, ns.encode()) == 0
    return lib


def _reset():
    torch._dynamo.reset()


_inductor_why = []


def _need_inductor():
    """Skips when inductor cannot compile here (no C++ compiler or Python
    headers): the reason, found once."""
    if not _inductor_why:
        try:
            torch.compile(lambda t: t * 2 + 1, backend="inductor")(torch.ones(3))
            _inductor_why.append("")
        except Exception as e:  # what inductor lacks on this machine
            _inductor_why.append("%s: %s" % (type(e).__name__, str(e).splitlines()[0][:200]))
        _reset()
    if _inductor_why[0]:
        pytest.skip("inductor cannot compile here: " + _inductor_why[0])


@pytest.fixture
def ops():
    """(name, torch op, example args) for each kind of operator."""
    made = []
    ns = _ns()
    made.append(_softsign_op(ns))
    made.append(_affine_op(ns))
    made.append(_c_softsign(ns + "c"))
    x = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    w = torch.randn(3, 4, dtype=torch.float64, requires_grad=True)
    yield [("python", getattr(torch.ops, ns).softsign.default, (x,)),
           ("several", getattr(torch.ops, ns).affine.default, (x, w, 1.5, 2)),
           ("c", getattr(torch.ops, ns + "c").softsign.default, (x,))]
    for m in made:
        m.close()
    _reset()


def test_opcheck_every_test(ops):
    """torch.library.opcheck's tests, all of them, for operators defined
    from Python (one and several inputs/outputs, non-Tensor arguments) and
    from C; once before and once after eager use."""
    for name, f, args in ops:
        for when in ("first", "after eager use"):
            res = torch.library.opcheck(f, args)
            bad = {k: v for k, v in res.items() if v != "SUCCESS"}
            assert not bad and res, (name, when, res)
            f(*args)  # eager use between the rounds


def _model(name, f):
    """A loss of (x, w) through operator f (x*w, and w itself for "several")."""
    def g(x, w):
        out = f(x * w, w, 1.5, 2) if name == "several" else f(x * w)
        out = out[0] + out[1] if isinstance(out, tuple) else out
        return (out * out).sum()
    return g


def _grads(fn, x, w):
    x = x.detach().clone().requires_grad_(True)
    w = w.detach().clone().requires_grad_(True)
    loss = fn(x, w)
    loss.backward()
    return loss.detach(), x.grad, w.grad


@pytest.mark.parametrize("backend", ["eager", "aot_eager", "inductor"])
@pytest.mark.parametrize("eager_first", [True, False], ids=["eager_first", "compile_first"])
def test_compile_training_equals_eager(ops, backend, eager_first):
    """torch.compile forward and backward through every kind of operator,
    static and dynamic shapes, in either order with eager use: loss and
    gradients equal eager's."""
    if backend == "inductor" and not eager_first:
        pytest.skip("one inductor order is enough for the suite's time (compiles take seconds)")
    if backend == "inductor":
        _need_inductor()
    for name, f, args in ops:
        fn = _model(name, f)
        x = torch.randn(5, 4, dtype=torch.float64)
        w = torch.randn(5, 4, dtype=torch.float64)
        want = None
        if eager_first:
            want = _grads(fn, x, w)
        for dynamic in (False, True):
            _reset()
            got = _grads(torch.compile(fn, backend=backend, dynamic=dynamic), x, w)
            if want is None:
                want = _grads(fn, x, w)
            for a, b in zip(got, want):
                assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (name, backend, dynamic)
        if backend != "inductor":  # another shape: the dynamic graph is reused
            x2, w2 = torch.randn(7, 4, dtype=torch.float64), torch.randn(7, 4, dtype=torch.float64)
            cf = torch.compile(fn, backend=backend, dynamic=True)
            for a, b in zip(_grads(cf, x2, w2), _grads(fn, x2, w2)):
                assert torch.allclose(a, b, rtol=1e-10, atol=1e-12), (name, backend, "7x4")


def test_compile_inference(ops):
    """torch.compile under no_grad, and the graph records the operators."""
    for name, f, args in ops:
        fn = _model(name, f)
        x, w = torch.randn(2, 4, dtype=torch.float64), torch.randn(2, 4, dtype=torch.float64)
        with torch.no_grad():
            want = fn(x, w)
            for backend in ("eager", "aot_eager"):
                _reset()
                got = torch.compile(fn, backend=backend)(x, w)
                assert torch.allclose(got, want, rtol=1e-12), (name, backend)
        gm = torch.fx.experimental.proxy_tensor.make_fx(fn, tracing_mode="fake")(x, w)
        assert str(f).split(".")[0] in str(gm.graph) or f.name() in str(gm.graph), gm.graph


def test_scalar_operands_are_wrapped_numbers():
    """A Python scalar in a ctorch expression goes as torch's own form, a
    wrapped number: a dispatch mode sees the number (so FakeTensorMode
    accepts it also after eager use cached it), and dtypes follow torch's
    promotion for Python scalars, 0-dim tensors included."""
    real = ctorch.ones(3)
    assert (real + 1).tolist() == [2.0, 2.0, 2.0]  # caches the scalar 1
    seen = []

    class Log(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append((str(func), [type(a).__name__ for a in args]))
            return func(*args, **(kwargs or {}))

    with Log():
        z = real + 1
        z2 = 2.5 * real
    assert z.tolist() == [2.0, 2.0, 2.0] and z2.tolist() == [2.5] * 3
    assert seen[0] == ("aten.add.Tensor", ["Tensor", "int"]), seen
    assert sorted(seen[1][1]) == ["Tensor", "float"], seen
    import operator
    for shape, dt, n, f in [((3,), "float32", 2.5, operator.mul), ((3,), "int32", 1, operator.add),
                            ((), "int32", 1, operator.add), ((3,), "int32", 1.5, operator.add),
                            ((), "float16", 2.0, operator.mul), ((3,), "int64", 2, operator.pow),
                            ((3,), "bool", True, operator.and_), ((), "uint8", 3, operator.sub)]:
        got = f(ctorch.ones(shape, dtype=getattr(ctorch, dt if dt != "bool" else "bool_")), n)
        want = f(torch.ones(shape, dtype=getattr(torch, dt)), n)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1], (shape, dt, n)
        assert got.tolist() == want.tolist(), (shape, dt, n)


def test_dispatch_mode_error_comes_out_as_itself():
    """An exception raised by a torch dispatch mode inside a ctorch call is
    that exception (not SystemError), on the hot operator path, the generic
    path and the GIL-releasing functions."""
    class Refuse(Exception):
        pass

    class Mode(torch.utils._python_dispatch.TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            raise Refuse(str(func))

    a, b = ctorch.ones(2), ctorch.ones(2)
    calls = [lambda: a + b, lambda: a + 1, lambda: a.clone(), lambda: ctorch.ops.aten.mul(a, b),
             lambda: ctorch.ops.aten.add(a, b, alpha=2), lambda: ctorch.zeros(2),
             lambda: a.sum()]
    for call in calls:
        with Mode():
            with pytest.raises(Refuse) as info:
                call()
        assert not isinstance(info.value.__context__, SystemError)
    assert (a + b).tolist() == [2.0, 2.0]  # and nothing is left set


def test_export_and_aotinductor_package(tmp_path):
    """torch.export of a model calling a ctorch operator with C kernels,
    compiled and packaged by AOTInductor, run by ctorch (ctorch.package,
    the operator's C kernel in this process): PyTorch's eager output. The
    same from a C program: tests/c/test_op_library.c (custom_op.pt2)."""
    if not hasattr(torch._inductor, "aoti_compile_and_package"):
        pytest.skip("torch %s has no AOTInductor packaging" % torch.__version__)
    _need_inductor()
    ns = _ns() + "c"
    lib = _c_softsign(ns)
    f = getattr(torch.ops, ns).softsign

    class M(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.lin = torch.nn.Linear(4, 3)

        def forward(self, x):
            return f(self.lin(x)) * 2

    m = M().eval()
    x = torch.randn(5, 4)
    with torch.no_grad():
        want = m(x)
        ep = torch.export.export(m, (x,))
    assert ns in str(ep.graph)
    path = torch._inductor.aoti_compile_and_package(ep, package_path=str(tmp_path / "m.pt2"))
    pkg = ctorch.load_package(path)
    got = pkg(ctorch.from_dlpack(x))
    got = got[0] if isinstance(got, tuple) else got
    assert torch.allclose(torch.from_dlpack(got), want, rtol=1e-5, atol=1e-6)
    pkg.free()
    lib.close()
