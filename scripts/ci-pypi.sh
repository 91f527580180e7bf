#!/bin/sh
# The PyPI LibTorch legs: ctorch built against the LibTorch inside PyPI's
# `torch` wheel (a CUDA build), from a cached virtual environment.
#
#   scripts/ci-pypi.sh VERSION full     build-pypi-VERSION/ with CUDA, then every CTest entry
#                                       (C tests with models and .pt2 packages made by that
#                                       torch, the Python suite against it and numpy 2, Julia,
#                                       install, documents, the CUDA example compiled by nvcc)
#   scripts/ci-pypi.sh VERSION c        the same build without benchmarks, then the C tests
#                                       and what they need (models, packages, header, install)
#   scripts/ci-pypi.sh VERSION build    only the build (no benchmarks), for the wheel leg
#   scripts/ci-pypi.sh VERSION prepare  only make sure the cached venv exists
#
# The venv ($CACHE/venv-torch-VERSION: torch==VERSION, numpy 2, pytest,
# setuptools, wheel; about 5.4 GB, 6-7 minutes to install) is made once with
# the `python3` first on PATH (CTORCH_PYPI_PYTHON overrides) and reused while
# its marker file says it is complete. Nothing here needs a GPU: the CUDA
# tests skip with their reason. Checks that libctorch.so links libtorch_cuda
# and the CUDA runtime, so a CUDA-less build cannot pass for this leg.
#
# Environment: CTORCH_PYPI_CACHE (default /var/cache/ctorch).
set -eu
cd "$(dirname "$0")/.."
version="${1:?usage: ci-pypi.sh VERSION full|c|prepare}"
mode="${2:-full}"
cache="${CTORCH_PYPI_CACHE:-/var/cache/ctorch}"
venv="$cache/venv-torch-$version"
py="${CTORCH_PYPI_PYTHON:-python3}"
build="build-pypi-$version"
log() { echo "ci-pypi($version): $*"; }
t0=$(date +%s)
mkdir -p "$cache"

# torchvision is installed where PyPI has the release made for this torch
# (none for the newest torch yet; the tests that use it skip without it).
torchvision_for() {
  case "$1" in
    2.11.*) echo torchvision==0.26.0 ;;
    *) echo "" ;;
  esac
}

make_venv() {
  (
    flock 9
    if [ -f "$venv/.ctorch-complete" ]; then exit 0; fi
    log "making $venv with $($py --version 2>&1) (minutes: the CUDA wheels are large)"
    rm -rf "$venv"
    "$py" -m venv "$venv"
    "$venv/bin/python" -m pip install -q --disable-pip-version-check --no-input \
      "torch==$version" "numpy>=2" pytest setuptools wheel $(torchvision_for "$version") \
      >"$cache/pip-torch-$version.log" 2>&1 || { tail -n 30 "$cache/pip-torch-$version.log" >&2; exit 1; }
    touch "$venv/.ctorch-complete"
    log "venv made in $(( $(date +%s) - t0 )) s"
  ) 9>"$cache/lock-venv-$version"
}

make_venv
[ "$mode" = prepare ] && exit 0
case "$mode" in full|c|build) ;; *) echo "ci-pypi: unknown mode $mode" >&2; exit 2;; esac

vpy="$venv/bin/python"
torch_dir=$("$vpy" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
log "torch $("$vpy" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)'), numpy $("$vpy" -c 'import numpy; print(numpy.__version__)')"
bench=ON
[ "$mode" = full ] || bench=OFF
# The torch directory itself first: TorchConfig.cmake would otherwise find a
# system LibTorch's libraries (CMakeLists.txt says why).
./scripts/build.sh "$build" -DCMAKE_PREFIX_PATH="$torch_dir/share/cmake;$torch_dir" \
  -DCTORCH_TEST_PYTHON="$vpy" -DCTORCH_BUILD_BENCH=$bench
log "built in $(( $(date +%s) - t0 )) s"
for lib in libtorch_cuda.so libc10_cuda.so libcudart.so; do
  ldd "$build/libctorch.so" | grep -q "$lib" ||
    { echo "ci-pypi: $build/libctorch.so does not link $lib (ldd below)" >&2; ldd "$build/libctorch.so" >&2; exit 1; }
done
log "libctorch.so links libtorch_cuda, c10_cuda and the CUDA runtime"
[ "$mode" = build ] && exit 0
cd "$build"
if [ "$mode" = full ]; then
  ctest --output-on-failure -j2 --timeout 900
else
  # The fixtures these need (models, packages) run first on their own.
  ctest --output-on-failure -j2 --timeout 900 -R '^(c\.|header\.|install\.|example\.c_|cuda\.)'
fi
log "passed in $(( $(date +%s) - t0 )) s"
