"""Build hook: copies libctorch.so into the package, so that an installed
ctorch imports from any directory without CTORCH_LIBRARY.

Where the library comes from, first found: $CTORCH_LIBRARY, the build trees
of the source checkout this package sits in (build/ first), an installed
prefix ($CTORCH_PREFIX, LD_LIBRARY_PATH, pkg-config). Without one the package
is built pure, and finds the library at import time (see README.md,
"Installing").
"""
import glob
import os
import shutil
import subprocess

from setuptools import setup
from setuptools.command.build_py import build_py

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


class BuildPyWithLibrary(build_py):
    def run(self):
        super().run()
        lib = find_library()
        if lib is None:
            self.announce("ctorch: no libctorch.so found; installing the pure package", 2)
            return
        dest = os.path.join(self.build_lib, "ctorch", "libctorch.so")
        self.announce("ctorch: bundling %s" % os.path.realpath(lib), 2)
        shutil.copyfile(os.path.realpath(lib), dest)


setup(cmdclass={"build_py": BuildPyWithLibrary})
