#!/bin/sh
# Leg "wheel": the `libctorch` wheel a pip user installs (issue 38). Builds it against the
# pinned newest PyPI torch (build-pypi-VERSION/, made by the pypi leg or here), checks it
# (scripts/ci/check_wheel.py), installs it into a fresh venv that sees only that torch (and
# numpy, pytest: the cached venv's site-packages through a .pth; nothing of ctorch), runs
# the Python suite against the installed package from another directory, runs the ctorch
# command, moves the venv and imports again, and installs it next to another torch
# (CTORCH_WHEEL_OTHER_TORCH, the 2.11 venv of the pypi211 leg) to see the refusal.
. "$(dirname "$0")/common.sh"
version="${CTORCH_PYPI_TORCH:-2.15.0}"
other="${CTORCH_WHEEL_OTHER_TORCH:-2.11.0}"
cache="${CTORCH_PYPI_CACHE:-/var/cache/ctorch}"
build="build-pypi-$version"
root=$(pwd)
[ -f "$build/libctorch.so" ] && [ -f "$build/tools/ctorch" ] || ./scripts/ci-pypi.sh "$version" build
# the reference models, made by that torch (the pypi leg made them already)
[ -d "$build/models" ] || (cd "$build" && ctest -R '^models\.make$' >/dev/null)
./scripts/ci-pypi.sh "$other" prepare
vpy="$cache/venv-torch-$version/bin/python"
out="$root/build/wheel"
rm -rf "$out"; mkdir -p "$out"
(cd bindings/python && rm -rf build *.egg-info &&
 CTORCH_LIBRARY="$root/$build/libctorch.so" "$vpy" -m pip wheel -q --no-deps --no-build-isolation \
   --disable-pip-version-check . -w "$out")
rm -rf bindings/python/build bindings/python/*.egg-info
whl=$(ls "$out"/libctorch-*.whl)
python3 scripts/ci/check_wheel.py "$whl" "$version"
stage "wheel built and checked"

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# venv_with TORCH_VERSION DIR: a fresh venv that has only what `pip install torch==X.Y
# numpy pytest` gives (the cached venv's packages, hard-linked: seconds, no network), so
# torch sits next to ctorch in one site-packages as it does for a pip user.
venv_with() {
  base=$("$cache/venv-torch-$1/bin/python" -c 'import sys; print(sys._base_executable)')
  "$base" -m venv --without-pip "$2"
  from=$("$cache/venv-torch-$1/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  to=$("$2/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
  cp -al "$from/." "$to/" 2>/dev/null || cp -a "$from/." "$to/"
}
venv_with "$version" "$work/venv"
# --no-deps: the venv's own (older) setuptools would make pip try to fetch the newer one
# torch asks for; the torch requirement is checked below against what is installed.
"$work/venv/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps "$whl"
"$work/venv/bin/python" -c "
import importlib.metadata as m, re
req = [r for r in m.requires('libctorch') or [] if r.startswith('torch')]
have = m.version('torch')
assert req and re.fullmatch(r'torch ?==(\d+\.\d+)\.\*', req[0]), req
assert have.startswith(re.search(r'==(\S+)\.\*', req[0]).group(1) + '.'), (req, have)
print('wheel: installed; requires', req[0], '- this venv has torch', have)"
cd "$work"
unset CTORCH_LIBRARY PYTHONPATH || true
"$work/venv/bin/python" -c "
import ctorch, torch, os
assert ctorch.__file__.startswith('$work/venv/'), ctorch.__file__
assert ctorch.LIBRARY_PATH.startswith('$work/venv/'), ctorch.LIBRARY_PATH
assert ctorch.BUILT_WITH_TORCH.startswith('$version'), ctorch.BUILT_WITH_TORCH
print('wheel: import ctorch from', os.path.dirname(ctorch.__file__), 'built with torch', ctorch.BUILT_WITH_TORCH)"
"$work/venv/bin/ctorch" info | head -3
CTORCH_TEST_INSTALLED=1 CTORCH_TEST_MODELS="$root/$build/models" \
  "$work/venv/bin/python" -m pytest -q -rs -p no:cacheprovider -x "$root/bindings/python/tests" \
  >"$work/pytest.log" 2>&1 || { cat "$work/pytest.log"; exit 1; }
cat "$work/pytest.log"
python3 "$root/scripts/ci/check_skips.py" wheel "$work/pytest.log"
stage "Python suite against the installed wheel"
# moved: the RUNPATH is relative, the package finds its library
mv "$work/venv" "$work/moved"
"$work/moved/bin/python" -c "import ctorch; print('wheel: moved venv imports, ones(2) =', ctorch.ones(2).tolist())"
# next to another torch: a clear refusal in either import order, before any crash
venv_with "$other" "$work/other"
"$work/other/bin/python" -m pip install -q --disable-pip-version-check --no-index --no-deps "$whl"
for code in "import ctorch" "import torch, ctorch" "import ctorch, torch"; do
  set +e
  msg=$("$work/other/bin/python" -c "$code" 2>&1)
  rc=$?
  set -e
  [ "$rc" -eq 1 ] || { echo "wheel: '$code' next to torch $other gave rc $rc (want 1: ImportError)"; echo "$msg"; exit 1; }
  echo "$msg" | grep -q "built for torch $version" && echo "$msg" | grep -q "has torch $other" ||
    { echo "wheel: '$code' next to torch $other: the message does not name both versions:"; echo "$msg"; exit 1; }
done
echo "wheel: next to torch $other: $(echo "$msg" | tail -1)"
stage "wheel leg"
