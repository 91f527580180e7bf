#!/bin/sh
# Sets up, builds, and runs every test: C (cmocka), header and ABI checks,
# install check, Python (pytest), Julia; then the C tests once more under
# AddressSanitizer + UndefinedBehaviorSanitizer (build-asan/); then the
# LibTorch 2.6 leg in a Debian 13 chroot, the TSan and fuzz legs.
set -eu
cd "$(dirname "$0")/.."
# Object files are cached by path relative to the checkout, so a fresh clone
# elsewhere still hits the cache a previous run filled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
# -g builds would otherwise hash the build directory's absolute path (no hit
# from another clone), and the precompiled header needs the PCH sloppiness.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
t0=$(date +%s)
stage() { echo "test.sh: $1 done at $(( $(date +%s) - t0 )) s"; }
./scripts/setup.sh
stage setup
# The LibTorch 2.6 chroot (debootstrap + apt, mostly network and disk) is made
# or unpacked from its cache in the background while the 1.13 leg builds and
# tests; the 2.6 leg below waits for it. CTORCH_SKIP_LT2=1 skips that leg.
lt2_prep=""
if [ "${CTORCH_SKIP_LT2:-0}" != "1" ]; then
  mkdir -p build
  ./scripts/ci-libtorch2.sh prepare >build/lt2-prepare.log 2>&1 &
  lt2_prep=$!
fi
./scripts/build.sh build
stage build
(cd build && ctest --output-on-failure -j2)
stage "ctest (LibTorch 1.13)"
# Issue 13: the public ABI against the release baseline (abi/check.sh; a
# removed or changed function or struct fails, added functions pass).
# CTORCH_SKIP_ABI=1 skips it.
if [ "${CTORCH_SKIP_ABI:-0}" != "1" ]; then
  abi/check.sh build/libctorch.so
  abi/check.sh --self-test build/libctorch.so
  stage "ABI check"
fi
if [ "${CTORCH_SKIP_ASAN:-0}" != "1" ]; then
  ./scripts/build.sh build-asan -DCTORCH_SANITIZE=ON -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF
  # allocator_may_return_null: the out-of-memory tests ask for petabytes and
  # expect CT_ERR_OUT_OF_MEMORY, not an ASan abort. LibTorch itself is not
  # instrumented; tests/lsan.supp and tests/ubsan.supp list (and explain)
  # the only reports we suppress, all from inside LibTorch.
  (cd build-asan && \
   ASAN_OPTIONS="detect_leaks=1:detect_odr_violation=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}" \
   LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp:print_suppressions=0" \
   UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/../tests/ubsan.supp" \
   ctest --output-on-failure -j2 -R '^c\.')
  stage "C tests under ASan+UBSan"
fi
# LibTorch 2.6 leg: the same build and tests against Debian 13's LibTorch 2.6,
# torch 2.6 and numpy 2.2 in a cached trixie chroot (scripts/ci-libtorch2.sh;
# needs root or sudo): C tests with reference models and .pt2 packages made by
# torch 2.6, the Python suite, the install and documents checks (Julia stays on
# the 1.13 leg: Debian 13 has no Julia).
if [ -n "$lt2_prep" ]; then
  if ! wait "$lt2_prep"; then cat build/lt2-prepare.log >&2; exit 1; fi
  cat build/lt2-prepare.log
  ./scripts/ci-libtorch2.sh
  stage "LibTorch 2.6 leg"
fi
# ---- Issue 13: sanitizer and fuzz builds ---------------------------------------
# The generated abuse test (abuse.generated) and the concurrency test
# (c.test_concurrency) already ran with ctest above. Both legs below run by
# default; CTORCH_SKIP_TSAN=1 / CTORCH_SKIP_FUZZ=1 skip them. Each builds only
# what it runs (warm ccache: about a minute each on 2 cores).
# TSan: libctorch + tests/c/test_concurrency.c built with -fsanitize=thread
# (clang-14); a report with a ctorch frame fails (tests/tsan/tsan.supp).
if [ "${CTORCH_SKIP_TSAN:-0}" != "1" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsan -G Ninja -DCTORCH_TSAN=ON \
    -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C build-tsan test_concurrency
  (cd build-tsan && ctest --output-on-failure -R '^tsan\.')
fi
# Fuzz: the libFuzzer targets (tests/fuzz, ASan + coverage on libctorch),
# each for CTORCH_FUZZ_SECONDS (default 8 here; tests/fuzz/run_fuzz.py
# --seconds 600 for a longer search); a crash in a ctorch frame fails,
# LibTorch-only crashes are reported (tests/fuzz/KNOWN_CRASHES.md).
if [ "${CTORCH_SKIP_FUZZ:-0}" != "1" ]; then
  CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCTORCH_FUZZ=ON \
    -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
  ninja -C build-fuzz fuzz_targets
  # The corpus each target grew is kept on the machine (never in the repo) and
  # the next run starts from it, so CI's short runs add up.
  fuzz_cache="${CTORCH_FUZZ_CACHE:-/var/cache/ctorch/fuzz-corpus}"
  mkdir -p "$fuzz_cache" 2>/dev/null || fuzz_cache=""
  /usr/bin/python3 tests/fuzz/run_fuzz.py build-fuzz --seconds "${CTORCH_FUZZ_SECONDS:-8}" \
    --models build/models --pickles build/pickles --corpus-cache "$fuzz_cache"
fi
echo "all tests passed"
