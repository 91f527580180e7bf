#!/bin/sh
# One command for every benchmark: builds a Release tree (build-bench/), runs
# the C++ ABI-cost programs (bench_call, bench_model, bench_scale, bench_memory),
# the small-op breakdown, the Python and Julia benchmarks when their runtimes are
# present, and a leak check of the C tests; then writes bench/RESULTS.md and the
# ratio chart bench/ratios.svg. Usage:
#
#   bench/run.sh [--quick] [--no-build] [--no-leak-check] [--lt2]
#
# --lt2 also times AOTInductor packages (.pt2) on the LibTorch 2.6 leg
# (scripts/ci-libtorch2.sh bench: root, the trixie chroot; the packages are
# compiled there first, minutes on 2 cores).
#
# Environment: CTORCH_BENCH_BUILD (default build-bench), CTORCH_BENCH_OUT
# (raw logs and JSON, default $CTORCH_BENCH_BUILD/bench-results),
# CTORCH_BENCH_RESULTS (default bench/RESULTS.md), CTORCH_BENCH_CHART (default
# bench/ratios.svg). Takes about 8-10 minutes
# on a 2-core machine (the first build of build-bench/ comes on top).
set -u
cd "$(dirname "$0")/.."
ROOT=$PWD
BUILD=${CTORCH_BENCH_BUILD:-build-bench}
OUT=${CTORCH_BENCH_OUT:-$BUILD/bench-results}
RESULTS=${CTORCH_BENCH_RESULTS:-bench/RESULTS.md}
QUICK=""
BUILD_IT=1
LEAKS=1
LT2=0
for a in "$@"; do
  case "$a" in
    --quick) QUICK=--quick ;;
    --no-build) BUILD_IT=0 ;;
    --no-leak-check) LEAKS=0 ;;
    --lt2) LT2=1 ;;
    *) echo "usage: bench/run.sh [--quick] [--no-build] [--no-leak-check] [--lt2]" >&2; exit 2 ;;
  esac
done
mkdir -p "$OUT"
rm -f "$OUT"/*.json "$OUT"/*.txt "$OUT"/*.log
cut -d' ' -f1-3 /proc/loadavg > "$OUT/loadavg_start.txt"
date -u '+%Y-%m-%d %H:%M:%S UTC' > "$OUT/date.txt"
T0=$(date +%s)
step() { echo; echo "==== $* ($(( $(date +%s) - T0 )) s)"; }

if [ "$BUILD_IT" = 1 ]; then
  step "build ($BUILD, Release)"
  if [ ! -f "$BUILD/build.ninja" ]; then
    cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release || exit 1
  fi
  ninja -C "$BUILD" -j2 || exit 1
fi
LIB=$ROOT/$BUILD/libctorch.so
[ -f "$LIB" ] || { echo "no $LIB: build first" >&2; exit 1; }
# The traced resnet18 the model tests use (the build makes it with Debian's
# python3 + torchvision); made here if missing.
RESNET=$BUILD/models/resnet18.pt
[ -f "$RESNET" ] || [ ! -f build/models/resnet18.pt ] || RESNET=build/models/resnet18.pt
[ -f "$RESNET" ] || /usr/bin/python3 tests/models/make_models.py "$BUILD/models" || true

for g in call model scale memory train custom; do
  step "C++ group $g (bench_$g)"
  "$BUILD/bench/bench_$g" $QUICK --resnet "$RESNET" --json "$OUT/$g.json" 2>&1 | tee "$OUT/$g.txt"
done

step "C++: small-op breakdown (bench_c)"
if [ -n "$QUICK" ]; then R=40; else R=120; fi
"$BUILD/bench/bench_c" $R 2000 2>&1 | tee "$OUT/bench_c.txt"

step "Distributed (bench/bench_distributed.py, 2 ranks on loopback)"
if /usr/bin/python3 -c 'import torch.distributed as d; assert d.is_gloo_available()' 2>/dev/null; then
  CTORCH_LIBRARY=$LIB timeout 900 /usr/bin/python3 bench/bench_distributed.py $QUICK \
    --json "$OUT/distributed.json" 2>&1 | grep -v 'socket.cpp' | tee "$OUT/distributed.txt"
else
  echo "skipped: /usr/bin/python3 has no torch.distributed with Gloo" | tee "$OUT/distributed.txt"
fi
step "Python (bench/bench_python.py)"
if [ -f bench/bench_python.py ] && /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  CTORCH_LIBRARY=$LIB timeout 300 /usr/bin/python3 bench/bench_python.py $QUICK \
    --json "$OUT/python.json" 2>&1 | tee "$OUT/python.txt"
else
  echo "skipped: bench/bench_python.py or /usr/bin/python3 with torch missing" | tee "$OUT/python.txt"
fi

step "Python profile (bench/profile_python.py: where x + y, numpy(), from_numpy spend it)"
if /usr/bin/python3 -c 'import torch, numpy' 2>/dev/null; then
  CTORCH_LIBRARY=$LIB timeout 300 /usr/bin/python3 bench/profile_python.py \
    --json "$OUT/python_profile.json" 2>&1 | tee "$OUT/python_profile.txt"
fi

step "Julia (bench/bench_julia.jl)"
if [ -f bench/bench_julia.jl ] && command -v julia >/dev/null 2>&1; then
  PRE=/lib/x86_64-linux-gnu/libgcc_s.so.1
  [ -f /opt/ctorch/julia-libunwind/libunwind.so.8 ] && PRE=$PRE:/opt/ctorch/julia-libunwind/libunwind.so.8
  CTORCH_LIBRARY=$LIB LD_PRELOAD=$PRE timeout 300 julia --startup-file=no \
    --project=bindings/julia/CTorch bench/bench_julia.jl "$OUT/julia.json" 2>&1 | tee "$OUT/julia.txt"
else
  echo "skipped: julia or bench/bench_julia.jl missing" | tee "$OUT/julia.txt"
fi

step "AOTInductor packages on LibTorch 2.6 (scripts/ci-libtorch2.sh bench)"
if [ "$LT2" = 1 ]; then
  CTORCH_LT2_BENCH_OUT=$ROOT/$OUT/package.txt ./scripts/ci-libtorch2.sh bench 2>&1 |
    tee "$OUT/package.log" | grep -E '^\||ci-libtorch2|bench_package' || true
else
  echo "skipped (--lt2 runs it)"
fi

step "leak check"
# LeakSanitizer over every C test of the ASan build, when there is one.
if [ "$LEAKS" = 1 ] && [ -d build-asan/tests ]; then
  for t in build-asan/tests/test_*; do
    [ -x "$t" ] || continue
    n=$(basename "$t")
    ( cd build-asan/tests && CTORCH_TEST_MODELS=$ROOT/build-asan/models \
        CTORCH_TEST_PICKLES=$ROOT/build-asan/pickles CTORCH_SOURCE_DIR=$ROOT \
        ASAN_OPTIONS=detect_leaks=1:detect_odr_violation=0 \
        timeout 120 "./$n" > "$ROOT/$OUT/lsan_$n.log" 2>&1 ; echo "exit $?" >> "$ROOT/$OUT/lsan_$n.log" )
    echo "$n: $(grep -c 'leak of' "$OUT/lsan_$n.log") leak reports"
  done
fi
# valgrind memcheck on three C tests of this build (bounded).
if [ "$LEAKS" = 1 ] && command -v valgrind >/dev/null 2>&1; then
  for n in test_tensor test_op test_foreign_op; do
    [ -x "$BUILD/tests/$n" ] || continue
    ( cd "$BUILD/tests" && CTORCH_TEST_MODELS=$ROOT/$BUILD/models CTORCH_SOURCE_DIR=$ROOT \
        timeout 240 valgrind --leak-check=full --show-leak-kinds=definite \
        --num-callers=30 "./$n" > "$ROOT/$OUT/valgrind_$n.log" 2>&1 ; echo "exit $?" >> "$ROOT/$OUT/valgrind_$n.log" )
    grep "definitely lost:" "$OUT/valgrind_$n.log" | sed "s/^/$n: /"
  done
fi

step "report"
/usr/bin/python3 bench/report.py "$OUT" "$RESULTS" --build "$BUILD" --seconds $(( $(date +%s) - T0 )) \
  --chart "${CTORCH_BENCH_CHART:-bench/ratios.svg}" $QUICK
echo "total $(( $(date +%s) - T0 )) s"
