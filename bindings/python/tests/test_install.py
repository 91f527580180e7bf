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
    # --no-deps: a library built against PyPI's torch makes the package require it, and
    # the outer venv's torch is visible here only through a .pth (the wheel leg tests the
    # requirement with torch installed next to the package)
    r = subprocess.run([py, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation",
                        str(src)], env=env, capture_output=True, text=True, timeout=600)
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


def test_a_library_for_another_torch_is_refused(tmp_path):
    """setup.py never bundles a library linked against another LibTorch than the target
    environment's torch (a build/ against Debian's LibTorch into a venv with PyPI's torch
    aborted at import): a fake torch whose torch/lib has its own libtorch_cpu.so."""
    fake = tmp_path / "site" / "torch"
    (fake / "lib").mkdir(parents=True)
    (fake / "__init__.py").write_text("__version__ = '9.9.0'\n")
    (fake / "version.py").write_text("__version__ = '9.9.0'\ncuda = None\n")
    (fake / "lib" / "libtorch_cpu.so").write_bytes(b"not a library")
    src = _copy_package(tmp_path)
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH, PIP_NO_INDEX="1",
               PYTHONPATH=str(tmp_path / "site"))
    r = _pip(["wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "w"),
              str(src)], env)
    assert r.returncode != 0
    out = r.stdout + r.stderr
    assert "9.9.0" in out and "cannot be mixed" in out and "cmake_prefix_path" in out, out[-2000:]


def _copy_package(tmp_path):
    src = tmp_path / "src"   # a copy: the build must not write into the checkout
    shutil.copytree(PKG_ROOT, src, ignore=shutil.ignore_patterns(
        "__pycache__", "build", "*.egg-info", "*.so*"))
    return src


def _pip(args, env, cwd=None):
    r = subprocess.run([sys.executable, "-m", "pip"] + args, env=env, cwd=cwd,
                       capture_output=True, text=True, timeout=600)
    if r.returncode != 0 and "No module named pip" in r.stderr:
        pytest.skip("pip is not installed (Debian: python3-pip)")
    return r


def test_a_wheel_with_the_library_is_tagged_for_its_platform(tmp_path):
    """The wheel that carries libctorch.so says so: py3-none-<platform>, not
    py3-none-any, and Root-Is-Purelib: false; its version is the header's."""
    import zipfile
    src, out = _copy_package(tmp_path), tmp_path / "wheels"
    env = dict(os.environ, CTORCH_LIBRARY=ctorch.LIBRARY_PATH, PIP_NO_INDEX="1")
    r = _pip(["wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(out), str(src)], env)
    assert r.returncode == 0, r.stdout + r.stderr
    wheels = list(out.glob("libctorch-*.whl"))  # the distribution's name (issue 38)
    assert len(wheels) == 1, wheels
    name = wheels[0].name
    # linux_<arch> next to a system LibTorch; manylinux_2_N next to PyPI's torch
    assert name.startswith("libctorch-%s-py3-none-" % ctorch.version()), name
    assert "-py3-none-linux_" in name or "-py3-none-manylinux_2_" in name, name
    with zipfile.ZipFile(str(wheels[0])) as z:
        names = z.namelist()
        wheel_meta = z.read([n for n in names if n.endswith(".dist-info/WHEEL")][0]).decode()
    assert "ctorch/libctorch.so" in names
    # the type information ships too: the marker and the generated op stubs
    for f in ("py.typed", "_tensor_ops.pyi", "_aten_ops.pyi", "_function_ops.pyi"):
        assert "ctorch/" + f in names, f
    assert "Root-Is-Purelib: false" in wheel_meta
    assert "Tag: py3-none-linux_" in wheel_meta or "Tag: py3-none-manylinux_2_" in wheel_meta
    assert "ctorch/_build_info.py" in names  # what the library was built against


def test_install_without_a_library_stops_with_a_clear_message(tmp_path):
    src = _copy_package(tmp_path)
    empty = tmp_path / "empty"
    empty.mkdir()
    env = {k: v for k, v in os.environ.items()
           if k not in ("CTORCH_LIBRARY", "CTORCH_PREFIX", "LD_LIBRARY_PATH", "CTORCH_PURE")}
    env.update(PIP_NO_INDEX="1", PKG_CONFIG_PATH=str(empty), PKG_CONFIG_LIBDIR=str(empty))
    r = _pip(["wheel", "-q", "--no-build-isolation", "--no-deps", "-w", str(tmp_path / "w"),
              str(src)], env)
    assert r.returncode != 0
    assert "no libctorch.so to bundle" in r.stdout + r.stderr


def test_the_version_has_one_home():
    """include/ctorch.h's CTORCH_VERSION_STRING: the library, the package and CMake say it."""
    import re
    from conftest import header  # noqa: F401 (skips outside the source tree)
    header()
    root = os.path.dirname(os.path.dirname(PKG_ROOT))
    with open(os.path.join(root, "include", "ctorch.h")) as f:
        v = re.search(r'#define CTORCH_VERSION_STRING "([^"]+)"', f.read()).group(1)
    assert ctorch.version() == ctorch.__version__ == v
    with open(os.path.join(PKG_ROOT, "pyproject.toml")) as f:
        assert not re.search(r"^version\s*=", f.read(), re.M)
    with open(os.path.join(root, "CMakeLists.txt")) as f:
        assert "project(ctorch VERSION ${CTORCH_HEADER_VERSION}" in f.read()
