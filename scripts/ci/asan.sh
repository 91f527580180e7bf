#!/bin/sh
# Leg "asan": the C tests again under AddressSanitizer + UndefinedBehaviorSanitizer
# (build-asan/). allocator_may_return_null: the out-of-memory tests ask for
# petabytes and expect CT_ERR_OUT_OF_MEMORY, not an ASan abort. LibTorch itself
# is not instrumented; tests/lsan.supp and tests/ubsan.supp list (and explain)
# the only reports we suppress, all from inside LibTorch.
. "$(dirname "$0")/common.sh"
./scripts/build.sh build-asan -DCTORCH_SANITIZE=ON -DCTORCH_BUILD_BENCH=OFF -DCTORCH_BUILD_EXAMPLES=OFF
cd build-asan
ASAN_OPTIONS="detect_leaks=1:detect_odr_violation=0:allocator_may_return_null=1:${ASAN_OPTIONS:-}" \
LSAN_OPTIONS="suppressions=$PWD/../tests/lsan.supp:print_suppressions=0" \
UBSAN_OPTIONS="halt_on_error=1:print_stacktrace=1:suppressions=$PWD/../tests/ubsan.supp" \
  ctest --output-on-failure -j2 -R '^c\.'
cd ..
python3 scripts/ci/check_skips.py asan build-asan/Testing/Temporary/LastTest.log
stage "C tests under ASan+UBSan"
