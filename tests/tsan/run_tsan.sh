#!/bin/sh
# Runs a TSan-instrumented test; fails on any ThreadSanitizer report that
# survives tsan.supp (which lists LibTorch-only frames) or on test failure.
set -u
here=$(cd "$(dirname "$0")" && pwd)
log=$(mktemp)
trap 'rm -f "$log"' EXIT
# OpenMP's barriers are invisible to TSan (libgomp is not instrumented).
OMP_NUM_THREADS=1 TSAN_OPTIONS="suppressions=$here/tsan.supp halt_on_error=0 exitcode=66 \
second_deadlock_stack=1 report_signal_unsafe=0 ${TSAN_OPTIONS:-}" "$@" >"$log" 2>&1
rc=$?
cat "$log"
reports=$(grep -c "^WARNING: ThreadSanitizer" "$log")
echo "tsan: $reports report(s) after suppressions, exit status $rc"
[ "$reports" -eq 0 ] && [ "$rc" -eq 0 ]
