#!/bin/sh
# Sets up, builds, and runs the tests, in legs (scripts/ci/LEG.sh):
#   setup  Debian packages, Julia, Python test dependencies
#   lt113  build/ against LibTorch 1.13 and every CTest entry (C, Python, Julia, ...)
#   abi    the exported ABI against abi/libctorch.abi
#   asan   the C tests under AddressSanitizer + UBSan (build-asan/)
#   lt2    the LibTorch 2.6 leg in a cached Debian 13 chroot
#   pypi   LibTorch from PyPI's newest torch wheel, built with CUDA, every test (cached venv)
#   wheel  the libctorch wheel for that torch: built, checked, installed into a fresh venv,
#          the Python suite against it, moved, and refused next to torch 2.11
#   pypi211  the same for torch 2.11 (the GPU machine's): build + C tests
#   tsan   the concurrency test under ThreadSanitizer (build-tsan/)
#   fuzz   the libFuzzer targets, 8 s each (build-fuzz/)
#
#   scripts/test.sh            all legs, in this order (the README's test command, and CI's)
#   scripts/test.sh fuzz asan  setup, then the legs named, in the order given
#
# A leg that needs another's output builds it (build/, its models). What is
# slow to fetch is made in the background while the first legs build: the lt2
# chroot (made or unpacked), the PyPI legs' venvs (downloaded once, cached).
# CTORCH_SKIP_<LEG>=1 (ABI, ASAN, LT2, PYPI, WHEEL, PYPI211, TSAN, FUZZ) drops a leg
# from the default list.
set -eu
cd "$(dirname "$0")/.."
t0=$(date +%s)
all="lt113 abi pypi wheel pypi211 asan lt2 tsan fuzz"
if [ $# -gt 0 ]; then
  legs="$*"
else
  legs=""
  for leg in $all; do
    var="CTORCH_SKIP_$(echo "$leg" | tr a-z A-Z)"
    eval "skip=\${$var:-0}"
    [ "$skip" = 1 ] || legs="$legs $leg"
  done
fi
for leg in $legs; do
  [ -x "scripts/ci/$leg.sh" ] || { echo "test.sh: unknown leg '$leg' (legs: setup $all)" >&2; exit 2; }
done
./scripts/ci/setup.sh
lt2_prep=""
case " $legs " in
  *" lt2 "*)
    mkdir -p build
    ./scripts/ci/lt2.sh prepare >build/lt2-prepare.log 2>&1 &
    lt2_prep=$! ;;
esac
pypi_prep=""
for leg in $legs; do
  case "$leg" in
    pypi|pypi211)
      mkdir -p build
      pypi_prep="$pypi_prep $leg" ;;
    wheel)
      mkdir -p build
      pypi_prep="$pypi_prep pypi pypi211" ;;
  esac
done
if [ -n "$pypi_prep" ]; then
  (for leg in $pypi_prep; do ./scripts/ci/"$leg".sh prepare || exit 1; done) >build/pypi-prepare.log 2>&1 &
  pypi_prep=$!
fi
for leg in $legs; do
  [ "$leg" = setup ] && continue
  if [ "$leg" = lt2 ] && [ -n "$lt2_prep" ]; then
    if ! wait "$lt2_prep"; then cat build/lt2-prepare.log >&2; exit 1; fi
    cat build/lt2-prepare.log
  fi
  case "$leg" in
    pypi|pypi211|wheel)
      if [ -n "$pypi_prep" ]; then
        if ! wait "$pypi_prep"; then cat build/pypi-prepare.log >&2; exit 1; fi
        cat build/pypi-prepare.log
        pypi_prep=""
      fi ;;
  esac
  ./scripts/ci/"$leg".sh
  echo "test.sh: $leg done at $(( $(date +%s) - t0 )) s"
done
echo "all tests passed ($legs )"
