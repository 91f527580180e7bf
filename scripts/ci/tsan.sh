#!/bin/sh
# Leg "tsan": libctorch + tests/c/test_concurrency.c and test_optim.c built with
# -fsanitize=thread (clang-14, build-tsan/); a report with a ctorch frame
# fails (tests/tsan/tsan.supp).
. "$(dirname "$0")/common.sh"
CC=clang-14 CXX=clang++-14 cmake -S . -B build-tsan -G Ninja -DCTORCH_TSAN=ON \
  -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF >/dev/null
ninja -C build-tsan test_concurrency test_optim test_op_library
(cd build-tsan && ctest --output-on-failure -R '^tsan\.')
stage "TSan"
