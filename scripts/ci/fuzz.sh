#!/bin/sh
# Leg "fuzz": the libFuzzer targets (tests/fuzz, ASan + coverage on libctorch,
# build-fuzz/), each for CTORCH_FUZZ_SECONDS (default 8; tests/fuzz/README.md
# has the 10-minute search). A crash in a ctorch frame fails; LibTorch-only
# crashes are reported (tests/fuzz/KNOWN_CRASHES.md). The corpus each target
# grew is kept on the machine (never in the repo) and the next run starts
# from it, so CI's short runs add up.
. "$(dirname "$0")/common.sh"
need_build
CC=clang-14 CXX=clang++-14 cmake -S . -B build-fuzz -G Ninja -DCTORCH_FUZZ=ON \
  -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
ninja -C build-fuzz fuzz_targets
fuzz_cache="${CTORCH_FUZZ_CACHE:-/var/cache/ctorch/fuzz-corpus}"
mkdir -p "$fuzz_cache" 2>/dev/null || fuzz_cache=""
/usr/bin/python3 tests/fuzz/run_fuzz.py build-fuzz --seconds "${CTORCH_FUZZ_SECONDS:-8}" \
  --models build/models --pickles build/pickles --corpus-cache "$fuzz_cache"
stage fuzz
