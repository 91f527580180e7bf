"""The `ctorch` command of a wheel (console script): runs the bundled binary
(ctorch/bin/ctorch, next to the package's libctorch.so) with the same arguments."""
import os
import sys


def main() -> None:
    exe = os.path.join(os.path.dirname(os.path.abspath(__file__)), "bin", "ctorch")
    if not os.path.isfile(exe):
        sys.exit("ctorch: this installation has no ctorch command (%s is missing; the wheel "
                 "bundles it when the build tree has one)" % exe)
    from . import _torch_match
    try:
        _torch_match.check()
    except ImportError as e:
        sys.exit("ctorch: %s" % e)
    os.execv(exe, [exe] + sys.argv[1:])


if __name__ == "__main__":
    main()
