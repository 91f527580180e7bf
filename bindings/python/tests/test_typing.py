"""The package's type hints are real: mypy --strict is clean on the package
and on user code that uses it (Debian's python3-mypy)."""
import os
import subprocess
import sys

import pytest

from conftest import PKG_ROOT

USER_CODE = '''
import ctorch

def f(x: ctorch.Tensor) -> ctorch.Tensor:
    return (x + 1) * 2 - x @ x.T

y: ctorch.Tensor = f(ctorch.ones(3, 3))
shape: tuple[int, ...] = y.shape
d: ctorch.dtype = y.dtype
with ctorch.no_grad():
    z = ctorch.relu(y)
m: ctorch.Module = ctorch.Module.new("M")
'''


def _mypy(*args, cwd):
    try:
        import mypy  # noqa: F401
    except ImportError:
        pytest.skip("mypy is not installed (Debian: python3-mypy)")
    env = dict(os.environ, MYPYPATH=PKG_ROOT)
    return subprocess.run([sys.executable, "-m", "mypy", "--strict", "--no-incremental",
                           "--cache-dir", os.devnull, *args], cwd=cwd, env=env,
                          capture_output=True, text=True, timeout=600)


def test_mypy_strict_on_the_package():
    r = _mypy("ctorch", cwd=PKG_ROOT)
    assert r.returncode == 0, r.stdout + r.stderr


def test_mypy_strict_on_user_code(tmp_path):
    (tmp_path / "user.py").write_text(USER_CODE)
    r = _mypy("user.py", cwd=str(tmp_path))
    assert r.returncode == 0, r.stdout + r.stderr
