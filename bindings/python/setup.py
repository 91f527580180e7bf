"""Build hook: copies libctorch.so into the package, so that an installed
ctorch imports from any directory without CTORCH_LIBRARY.

Where the library comes from, first found: $CTORCH_LIBRARY, then the build
trees of the source checkout this package sits in (build/ first). Without
one the package is built pure, and finds the library at import time (see
README.md, "Installing").
"""
import os
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def find_library():
    env = os.environ.get("CTORCH_LIBRARY")
    if env:
        if not os.path.isfile(env):
            raise SystemExit("CTORCH_LIBRARY=%s: no such file" % env)
        return env
    if not os.path.isfile(os.path.join(ROOT, "include", "ctorch.h")):
        return None
    dirs = sorted(d for d in os.listdir(ROOT) if d.startswith("build"))
    if "build" in dirs:
        dirs.remove("build")
        dirs.insert(0, "build")
    for d in dirs:
        p = os.path.join(ROOT, d, "libctorch.so")
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
