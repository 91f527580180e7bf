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
#   scripts/ci-pypi.sh VERSION cpu      build-pypi-VERSION-cpu/: the library, a C test and
#                                       the Python package's import on a machine without the
#                                       CUDA toolkit (hidden in a mount namespace as root, else
#                                       by the environment and -DCTORCH_CPU_ONLY=ON): the
#                                       CTORCH_CPU_ONLY fallback (cmake/torch.cmake)
#   scripts/ci-pypi.sh VERSION prepare  only make sure the cached venv exists
#
# The venv ($CACHE/venv-torch-VERSION: torch==VERSION, numpy 2, pytest,
# setuptools, wheel; about 5.4 GB, 6-7 minutes to install) is made once with
# the `python3` first on PATH (CTORCH_PYPI_PYTHON overrides) and reused while
# its marker file says it is complete. Nothing here needs a GPU: the CUDA
# tests skip with their reason. Checks that libctorch.so links libtorch_cuda
# and the CUDA runtime, so a CUDA-less build cannot pass for this leg.
#
# Every build against the wheel has Gloo through src/shims/gloo (CMakeLists.txt
# says why that is safe); this checks that libctorch.so defines no gloo::
# symbol, so nothing of Gloo's layout was compiled into it.
#
# Environment: CTORCH_PYPI_CACHE (default /var/cache/ctorch), CTORCH_PYPI_BUILD
# (the build directory, default build-pypi-VERSION, -cpu appended for cpu).
set -eu
cd "$(dirname "$0")/.."
repo=$(pwd)
version="${1:?usage: ci-pypi.sh VERSION full|c|prepare}"
mode="${2:-full}"
cache="${CTORCH_PYPI_CACHE:-/var/cache/ctorch}"
venv="$cache/venv-torch-$version"
py="${CTORCH_PYPI_PYTHON:-python3}"
build="${CTORCH_PYPI_BUILD:-build-pypi-$version}"
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
case "$mode" in full|c|build|cpu) ;; *) echo "ci-pypi: unknown mode $mode" >&2; exit 2;; esac

vpy="$venv/bin/python"
torch_dir=$("$vpy" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
log "torch $("$vpy" -c 'import torch; print(torch.__version__, "CUDA", torch.version.cuda)'), numpy $("$vpy" -c 'import numpy; print(numpy.__version__)')"
# libctorch.so has Gloo (src/shims/gloo) and no Gloo code or vtable of its own.
check_gloo() {
  if nm -C --defined-only "$1/libctorch.so" | grep -E ' (gloo::|vtable for c10d::ProcessGroupGloo::GlooStore|.*for gloo::)'; then
    echo "ci-pypi: $1/libctorch.so defines Gloo symbols (above): src/shims/gloo must stay declarations only" >&2
    exit 1
  fi
  CTORCH_LIBRARY="$1/libctorch.so" PYTHONPATH="$PWD/bindings/python" "$vpy" -c '
import torch, ctorch.distributed as dist
assert dist.is_gloo_available(), "no Gloo in this build"' ||
    { echo "ci-pypi: $1/libctorch.so has no Gloo backend" >&2; exit 1; }
  log "$1/libctorch.so has Gloo (src/shims/gloo) and defines no gloo:: symbol"
}

if [ "$mode" = cpu ]; then
  build="${CTORCH_PYPI_BUILD:-build-pypi-$version}-cpu"
  # Hide the toolkit: as root, in a private mount namespace (empty tmpfs over
  # /usr/local/cuda*, /dev/null over nvcc and the toolkit's libraries outside
  # it), so the default CTORCH_CPU_ONLY=AUTO must notice on its own; else only
  # through the environment, with CTORCH_CPU_ONLY=ON.
  if [ -z "${CTORCH_PYPI_HIDDEN:-}" ] && [ "$(id -u)" = 0 ] && unshare -m true 2>/dev/null; then
    exec unshare -m sh -c '
      for d in /usr/local/cuda-* /usr/local/cuda; do
        [ -d "$d" ] && [ ! -L "$d" ] && mount -t tmpfs none "$d"
      done
      for f in /usr/local/bin/nvcc /usr/local/bin/cudafe++ /usr/local/bin/__nvcc_device_query /usr/local/lib/libcud*; do
        [ -e "$f" ] && mount --bind /dev/null "$f"
      done
      CTORCH_PYPI_HIDDEN=namespace exec "$0" "$1" cpu' "$PWD/scripts/ci-pypi.sh" "$version"
  fi
  cpu_only=ON
  [ "${CTORCH_PYPI_HIDDEN:-}" = namespace ] && cpu_only=AUTO
  path=$(printf %s "$PATH" | tr : '\n' | grep -vi cuda | paste -sd: -)
  unset CUDA_HOME CUDA_PATH CUDACXX CUDAToolkit_ROOT LIBRARY_PATH CPATH
  export PATH="$path" CUDA_TOOLKIT_ROOT_DIR=/nonexistent
  # Run, not looked up: a shell's `command -v` names a non-executable file too.
  if nvcc --version >/dev/null 2>&1 || /usr/local/cuda/bin/nvcc --version >/dev/null 2>&1; then
    echo "ci-pypi: the CUDA toolkit is still visible (nvcc: $(command -v nvcc))" >&2; exit 1
  fi
  log "CPU-only build without the CUDA toolkit (hidden by ${CTORCH_PYPI_HIDDEN:-the environment}, CTORCH_CPU_ONLY=$cpu_only)"
  mkdir -p "$build"
  cmake -S . -B "$build" -G Ninja -DCMAKE_PREFIX_PATH="$torch_dir/share/cmake;$torch_dir" \
    -DCTORCH_TEST_PYTHON="$vpy" -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF \
    -DCTORCH_CPU_ONLY=$cpu_only >"$build/ctorch-configure.log" 2>&1 ||
    { cat "$build/ctorch-configure.log" >&2; exit 1; }
  grep -q "ctorch: CPU-only against the torch" "$build/ctorch-configure.log" ||
    { cat "$build/ctorch-configure.log" >&2; echo "ci-pypi: the configure did not go CPU-only" >&2; exit 1; }
  if grep -E '^(CUDA|CUDAToolkit|CMAKE_CUDA)[A-Za-z_]*:' "$build/CMakeCache.txt"; then
    echo "ci-pypi: the CPU-only configure looked for CUDA (above)" >&2; exit 1
  fi
  ninja -C "$build" ctorch test_tensor test_distributed
  log "CPU-only library built in $(( $(date +%s) - t0 )) s"
  if ldd "$build/libctorch.so" | grep -E 'libtorch_cuda|libc10_cuda|libtorch\.so'; then
    echo "ci-pypi: the CPU-only libctorch.so links CUDA parts of torch (above)" >&2; exit 1
  fi
  check_gloo "$build"
  (cd "$build" && ctest --output-on-failure -j2 --timeout 300 -R '^c\.test_(tensor|distributed)$')
  CTORCH_LIBRARY="$build/libctorch.so" PYTHONPATH="$PWD/bindings/python" "$vpy" -c '
import torch, ctorch, ctorch.distributed as dist
t = ctorch.tensor([1.0, 2.0, 3.0])
assert (t * 2).tolist() == [2.0, 4.0, 6.0]
assert not ctorch.cuda.is_available() and not dist.is_nccl_available()
store = dist.TCPStore("127.0.0.1", 0, 1, True, 30)
dist.init_process_group("gloo", store=store, rank=0, world_size=1, timeout=30)
dist.all_reduce(t)
assert t.tolist() == [1.0, 2.0, 3.0]
dist.destroy_process_group()
print("ci-pypi: ctorch imported against the CPU-only build; a one-rank Gloo all_reduce ran")'
  log "CPU-only leg passed in $(( $(date +%s) - t0 )) s"
  exit 0
fi

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
check_gloo "$build"
[ "$mode" = build ] && exit 0
cd "$build"
if [ "$mode" = full ]; then
  ctest --output-on-failure -j2 --timeout 900
else
  # The fixtures these need (models, packages) run first on their own.
  ctest --output-on-failure -j2 --timeout 900 -R '^(c\.|header\.|install\.|example\.c_|cuda\.)'
fi
# Every skip is one this mode expects (tests/skips/pypi-MODE.txt), and each listed one happened.
python3 "$repo/scripts/ci/check_skips.py" "pypi-$mode" Testing/Temporary/LastTest.log
log "passed in $(( $(date +%s) - t0 )) s"
