"""Library finding, versions, the signature table and errors."""
import os
import shutil
import subprocess
import sys

import pytest

import ctorch
from ctorch import _lib

PKG_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_versions():
    assert ctorch.version() == "0.1.0"
    assert ctorch.abi_version() == ctorch.ABI_VERSION == 2
    assert ctorch.torch_version()[0].isdigit()
    assert os.path.exists(ctorch.LIBRARY_PATH)


def test_every_header_function_is_declared():
    """The signature table covers every CT_API function of include/ctorch.h
    with the header's argument and return types, and nothing else."""
    from conftest import header
    h = header()
    names = {f.name for f in h.functions}
    assert len(names) > 150
    # the binding declares exactly the header's functions (none pending, no
    # fallbacks: a library lacking one is refused at import)
    assert names == set(_lib.SIGNATURES)
    # and with the header's types: the table is what the generator makes of
    # this header now (a changed parameter type fails here until regenerated)
    import gen_bindings
    want = {}
    exec(gen_bindings.python_text(h), want)
    from ctorch import _capi
    assert want["SIGNATURES"] == _capi.SIGNATURES


def test_error_classes_and_codes():
    with pytest.raises(ctorch.NotFoundError) as ei:
        ctorch.ops.aten.no_such_op_anywhere
    with pytest.raises(ctorch.InvalidArgumentError) as ei:
        ctorch.empty(-1)
    e = ei.value
    assert e.code == 1 and isinstance(e, ValueError) and isinstance(e, ctorch.Error)
    assert "negative" in str(e) or "-1" in str(e)
    with pytest.raises(ctorch.CTorchTypeError) as ei:
        ctorch.rand(2, dtype=ctorch.int64)
    assert ei.value.code == 2 and isinstance(ei.value, TypeError)
    with pytest.raises(ctorch.CTorchIndexError) as ei:
        ctorch.ones(2, 3).size(5)
    assert ei.value.code == 3 and isinstance(ei.value, IndexError)
    with pytest.raises(ctorch.NotFoundError) as ei:
        ctorch.load("/nonexistent/model.pt")
    assert ei.value.code == 4 and "/nonexistent/model.pt" in str(ei.value)
    with pytest.raises(ctorch.CTorchIOError) as ei:
        ctorch.load(b"this is not a model")
    assert ei.value.code == 5
    with pytest.raises(ctorch.TorchError) as ei:
        ctorch.ones(2, 3) @ ctorch.ones(2, 3)
    assert ei.value.code == 8 and "mat" in str(ei.value)
    if not ctorch.cuda.is_compiled():
        with pytest.raises(ctorch.NotSupportedError) as ei:
            ctorch.ones(2, device="cuda")
        assert ei.value.code == 7


def test_error_message_is_full_last_error():
    with pytest.raises(ctorch.Error) as ei:
        ctorch.ops.aten.add.Tensor(ctorch.ones(2), "x")
    msg = str(ei.value)
    assert "aten::add" in msg and "schema" in msg
    assert ei.value.message == msg


def test_status_of_unknown_code_maps_to_base_error():
    _lib.G.set_error(77, b"custom failure")
    err = _lib.error_from_status(77)
    assert type(err) is ctorch.Error and err.code == 77 and str(err) == "custom failure"
    _lib.G.clear_error()


def test_library_not_found_lists_every_place(tmp_path):
    """A copy of the package outside the tree, with a bad CTORCH_LIBRARY and
    no libctorch on the loader path: the error names every place tried."""
    pkg = tmp_path / "ctorch"
    shutil.copytree(os.path.dirname(ctorch.__file__), pkg,  # the package under test
                    ignore=shutil.ignore_patterns("*.so*", "__pycache__", "_build_info.py"))
    env = dict(os.environ, CTORCH_LIBRARY=str(tmp_path / "nope" / "libctorch.so"),
               PYTHONPATH=str(tmp_path), LD_LIBRARY_PATH="")
    r = subprocess.run([sys.executable, "-c", "import ctorch"], env=env, cwd=str(tmp_path),
                       capture_output=True, text=True)
    assert r.returncode != 0
    assert "LibraryNotFoundError" in r.stderr
    assert "CTORCH_LIBRARY" in r.stderr and "nope" in r.stderr
    assert "package directory" in r.stderr and "system loader" in r.stderr


def test_library_found_in_package_dir_and_build_tree(tmp_path):
    """Without CTORCH_LIBRARY, a libctorch.so next to the package files wins."""
    pkg = tmp_path / "ctorch"
    shutil.copytree(os.path.dirname(ctorch.__file__), pkg,  # the package under test
                    ignore=shutil.ignore_patterns("*.so*", "__pycache__"))
    shutil.copy(ctorch.LIBRARY_PATH, pkg / "libctorch.so")
    env = dict(os.environ, PYTHONPATH=str(tmp_path))
    env.pop("CTORCH_LIBRARY", None)
    r = subprocess.run([sys.executable, "-c", "import ctorch; print(ctorch.LIBRARY_PATH)"],
                       env=env, cwd=str(tmp_path), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == str(pkg / "libctorch.so")


def test_candidates_order(monkeypatch):
    monkeypatch.setenv("CTORCH_LIBRARY", "/x/libctorch.so")
    c = list(_lib._candidates())
    kinds = [k for k, _ in c]
    assert kinds[0] == "CTORCH_LIBRARY"
    assert kinds.index("package directory") < kinds.index("system loader")
    if "build tree" in kinds:
        builds = [p for k, p in c if k == "build tree"]
        assert kinds.index("package directory") < kinds.index("build tree") < \
            kinds.index("system loader")
        if any(os.sep + "build" + os.sep in p for p in builds):
            assert os.sep + "build" + os.sep in builds[0]  # build/ preferred


def test_settings():
    n = ctorch.get_num_threads()
    assert n >= 1
    ctorch.set_num_threads(n)
    with pytest.raises(ctorch.InvalidArgumentError):
        ctorch.set_num_threads(0)
    ctorch.manual_seed(3)
    a = ctorch.rand(4)
    ctorch.manual_seed(3)
    assert ctorch.rand(4).equal(a)
    assert ctorch.is_grad_enabled()
    with ctorch.no_grad():
        assert not ctorch.is_grad_enabled()
        x = ctorch.ones(2, requires_grad=True)
        assert not (x * 2).requires_grad
    assert ctorch.is_grad_enabled()
    with ctorch.inference_mode():
        assert ctorch._lib.G.inference_mode_is_enabled() == 1
    assert ctorch._lib.G.inference_mode_is_enabled() == 0
    assert ctorch.cuda.is_available() in (True, False)
    assert ctorch.cuda.device_count() >= 0


def test_stdlib_only_interpreter():
    """The binding imports and works with no site-packages at all (-I -S)."""
    code = ("import sys; sys.path.insert(0, %r); import ctorch; "
            "a = ctorch.arange(6).reshape(2, 3); b = (a * 2 + 1)[1]; "
            "assert b.tolist() == [7, 9, 11], b.tolist(); "
            "assert 'numpy' not in sys.modules and 'torch' not in sys.modules; "
            "print('ok')" % PKG_ROOT)
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH)
    r = subprocess.run(["/usr/bin/python3", "-I", "-S", "-c", code], env=env,
                       capture_output=True, text=True)
    # -I ignores CTORCH_LIBRARY? No: -I ignores PYTHON* variables only.
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "ok"


def test_path_python3_without_numpy():
    """The `python3` first on PATH (a stdlib-only interpreter on the dev
    machines) imports ctorch. Skipped where there is no such interpreter."""
    exe = shutil.which("python3")
    if not exe or os.path.realpath(exe) == os.path.realpath(sys.executable):
        pytest.skip("no separate python3 on PATH")
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH, PYTHONPATH=PKG_ROOT)
    r = subprocess.run([exe, "-c", "import ctorch; print((ctorch.ones(3) + 1).tolist())"],
                       env=env, capture_output=True, text=True)
    if r.returncode != 0 and "No module named" in r.stderr and "ctypes" in r.stderr:
        pytest.skip("that python3 has no ctypes")
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "[2.0, 2.0, 2.0]"


def test_older_library_is_refused(tmp_path):
    """A library that lacks a function of the binding (older, same ABI version)
    is refused at import with the names, not given a fallback path."""
    import subprocess
    import sys
    code = ("import ctypes, sys\n"
            "real = ctypes.CDLL.__getattr__\n"
            "def hide(self, name):\n"
            "    if name == 'ct_module_method_results': raise AttributeError(name)\n"
            "    return real(self, name)\n"
            "ctypes.CDLL.__getattr__ = hide\n"
            "sys.path.insert(0, %r)\n"
            "try:\n"
            "    import ctorch\n"
            "except Exception as e:\n"
            "    print(type(e).__name__, e)\n" % PKG_ROOT)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert "LibraryNotFoundError" in r.stdout, r.stdout + r.stderr
    assert "older than this ctorch binding" in r.stdout
    assert "ct_module_method_results" in r.stdout
