"""The documented install (README "Installing"): a fresh venv with
--system-site-packages, `pip install --no-build-isolation bindings/python`,
then `import ctorch` from any directory with no environment variable: the
package build copies libctorch.so into the installed package."""
import os
import shutil
import subprocess
import sys

import pytest

import ctorch
from conftest import PKG_ROOT


def test_fresh_venv_install_imports_from_anywhere(tmp_path):
    venv = tmp_path / "venv"
    r = subprocess.run([sys.executable, "-m", "venv", "--system-site-packages", str(venv)],
                       capture_output=True, text=True)
    if r.returncode != 0:
        pytest.skip("no venv module: " + r.stderr[-200:])
    py = str(venv / "bin" / "python")
    if sys.prefix != sys.base_prefix:
        # The tests run in a venv themselves (the PyPI torch leg): its packages
        # (setuptools, wheel, torch) are the "system" ones the install may use.
        site_dir = subprocess.run([py, "-c", "import sysconfig; print(sysconfig.get_path('purelib'))"],
                                  capture_output=True, text=True, check=True).stdout.strip()
        with open(os.path.join(site_dir, "outer-venv.pth"), "w") as f:
            f.write("\n".join(p for p in sys.path if p.endswith("site-packages")) + "\n")
    src = tmp_path / "src"   # a copy: the build must not write into the checkout
    shutil.copytree(PKG_ROOT, src, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", "*.so*"))
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH, PIP_NO_INDEX="1")
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-build-isolation", str(src)],
                       env=env, capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not installed (Debian: python3-pip)")
    assert r.returncode == 0, r.stdout + r.stderr
    env.pop("CTORCH_LIBRARY")
    env.pop("PYTHONPATH", None)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    r = subprocess.run([py, "-c", "import ctorch; print(ctorch.LIBRARY_PATH); "
                        "print((ctorch.ones(2) + 1).tolist())"],
                       cwd=str(elsewhere), env=env, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    lib_path, values = r.stdout.split("\n")[:2]
    assert lib_path.startswith(str(venv)) and lib_path.endswith("ctorch/libctorch.so")
    assert values == "[2.0, 2.0]"
