"""Which torch a wheel of ctorch was built for, and the check made before libctorch is
loaded: a library built against one torch's libraries loaded next to another torch
crashes (segfault, bus error), so `import ctorch` refuses first, in either import order,
with both versions and what to install.

`_build_info.py` (written by setup.py into a wheel or install; absent in a source
checkout) records the torch the bundled library was linked against."""
import os
import re
import sys
from typing import Optional

try:
    from . import _build_info  # type: ignore[attr-defined]
except ImportError:  # a source checkout: the library is found as before, no check
    _build_info = None

#: "2.15.0+cu130" for a wheel built against PyPI's torch 2.15.0 (CUDA 13.0 build);
#: "1.13.1 (system LibTorch)" for one bundling a library built against Debian's; None in
#: a source checkout.
BUILT_WITH_TORCH: Optional[str] = getattr(_build_info, "BUILT_WITH_TORCH", None)


def _minor(v: str) -> str:
    m = re.match(r"(\d+)\.(\d+)", v)
    return "%s.%s" % (m.group(1), m.group(2)) if m else v


def _installed_torch() -> Optional[str]:
    """The torch of this environment: the imported one, else the installed distribution
    (without importing it)."""
    mod = sys.modules.get("torch")
    if mod is not None and getattr(mod, "__version__", None):
        return str(mod.__version__)
    try:
        from importlib import metadata
    except ImportError:  # Python 3.7
        return None
    try:
        return metadata.version("torch")
    except metadata.PackageNotFoundError:
        return None


def check() -> None:
    """Raises ImportError when this environment's torch is not the one the bundled
    libctorch was built for (wheels built against PyPI's torch only)."""
    if _build_info is None or getattr(_build_info, "TORCH_SOURCE", "") != "pypi":
        return
    if os.environ.get("CTORCH_LIBRARY"):  # the user chose a library: theirs to match
        return
    want = _build_info.TORCH_VERSION
    have = _installed_torch()
    if have is None:
        raise ImportError(
            "ctorch %s (libctorch) was built for torch %s, and this environment has no "
            "torch: pip install 'torch==%s.*'" % (_build_info.CTORCH_VERSION, want, _minor(want)))
    if _minor(have) != _minor(want):
        raise ImportError(
            "ctorch %s (libctorch) was built for torch %s, but this environment has torch %s; "
            "its libraries cannot be mixed. Install the torch it was built for "
            "(pip install 'torch==%s.*') or a libctorch built for torch %s "
            "(pip install 'libctorch' matching it, or build it: bindings/python/README.md)"
            % (_build_info.CTORCH_VERSION, want, have, _minor(want), _minor(have)))


def load_torch() -> None:
    """A wheel built against PyPI's torch imports it before its library is loaded, as
    torchvision does: torch's libraries (and the CUDA ones it preloads) are then in the
    process, whatever site-packages holds them; the $ORIGIN-relative RUNPATH is the way in
    for the ctorch command, which has no Python."""
    if _build_info is not None and getattr(_build_info, "TORCH_SOURCE", "") == "pypi" \
            and not os.environ.get("CTORCH_LIBRARY"):
        import torch  # noqa: F401
