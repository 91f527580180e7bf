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


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        if PURE:
            self.announce("ctorch: CTORCH_PURE=1: the pure package, no library bundled", 2)
            return
        lib = find_library()
        if lib is None:
            raise SystemExit(NO_LIBRARY)
        dest = os.path.join(self.build_lib, "ctorch", "libctorch.so")
        self.announce("ctorch: bundling %s" % os.path.realpath(lib), 2)
        shutil.copyfile(os.path.realpath(lib), dest)


class PlatformWheel(bdist_wheel):
    """A wheel that carries libctorch.so is platform-specific (not Root-Is-Purelib), but
    the Python code is plain ctypes: any Python 3 (py3-none-<platform>)."""

    def finalize_options(self):
        super().finalize_options()
        self.root_is_pure = PURE

    def get_tag(self):
        if PURE:
            return super().get_tag()
        plat = sysconfig.get_platform().replace("-", "_").replace(".", "_")
        return "py3", "none", plat


class LibraryDistribution(Distribution):
    """Installs into platlib (the wheel's root), as a package with a native library does."""

    def has_ext_modules(self):
        return not PURE


setup(version=version(), distclass=LibraryDistribution,
      cmdclass={"build_py": BuildPyWithLibrary, "bdist_wheel": PlatformWheel})
