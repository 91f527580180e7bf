#!/usr/bin/env bash
# tests/gpu/run.sh: the one GPU-machine check for ctorch. Builds ctorch against the machine's LibTorch
# (python3's torch 2.11+cu130, with CUDA), then runs: the C tests (cmocka),
# the Python binding tests, the Julia ones where a julia is present, the CUDA
# example, the GPU benchmark, and an
# AOTInductor package compiled for CUDA (from Python and C); prints a
# summary table at the end even when steps fail.
#
# HOW TO RUN, from the repository root of a checkout on the GPU machine:
#   1. On a machine with Debian's packages first:  tests/gpu/prepare_deps.sh
#      A GPU machine without cmocka or network gets Debian's cmocka header +
#      libcmocka.so.0 copied into build-gpu-deps/cmocka (ignored by git via
#      "build*/", so it must be copied along with the checkout).
#   2. bash tests/gpu/run.sh   (under 6 minutes, see below)
#   Results: $OUT/summary.md, $OUT/logs/<step>.log (and the tail of each log on
#   stdout). Without $OUT they go to build-gpu/out.
#
# Designed to finish in under 6 minutes: every step has its own timeout, and
# a global budget (CTORCH_GPU_BUDGET_S, default 330 s) shortens or skips the
# remaining steps. A step whose prerequisite failed is reported as SKIP with
# the reason. Exit status: 0 if no step FAILed or TIMED OUT, else 1.
#
# Environment knobs: CTORCH_GPU_BUILD (build dir, default build-gpu),
# CTORCH_GPU_DEPS (default build-gpu-deps), CTORCH_GPU_BUDGET_S,
# CTORCH_GPU_JOBS (default nproc), CTORCH_BENCH_ITERS (default 50),
# CTORCH_GPU_BUILD_TYPE (default Release), CTORCH_GPU_PYTHON (default python3).
set -u

ROOT=$(cd "$(dirname "$0")/../.." && pwd)
cd "$ROOT" || exit 1
BUILD=${CTORCH_GPU_BUILD:-$ROOT/build-gpu}
DEPS=${CTORCH_GPU_DEPS:-$ROOT/build-gpu-deps}
OUTDIR=${OUT:-$BUILD/out}
LOGS=$OUTDIR/logs
BUDGET=${CTORCH_GPU_BUDGET_S:-330}
JOBS=${CTORCH_GPU_JOBS:-$(nproc 2>/dev/null || echo 4)}
ITERS=${CTORCH_BENCH_ITERS:-50}
BUILD_TYPE=${CTORCH_GPU_BUILD_TYPE:-Release}
START=$(date +%s)
mkdir -p "$BUILD" "$LOGS"
export PATH=/opt/torch/.venv/bin:/usr/local/cuda/bin:$PATH
export CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
PY=${CTORCH_GPU_PYTHON:-python3}

NAMES=() STATUSES=() SECS=() NOTES=()
record() { NAMES+=("$1"); STATUSES+=("$2"); SECS+=("$3"); NOTES+=("$4"); }
elapsed() { echo $(( $(date +%s) - START )); }

# run_step NAME LIMIT_S "shell command": runs the command under `timeout`,
# logs to $LOGS/NAME.log, records PASS / SKIP (exit 77) / TIMEOUT / FAIL.
# Returns 0 for PASS, 1 otherwise.
run_step() {
  local name=$1 limit=$2 cmd=$3
  local left=$(( BUDGET - $(elapsed) ))
  if (( left < 5 )); then
    record "$name" SKIP 0 "global time budget (${BUDGET}s) used up"
    echo "== $name: SKIP (time budget used up)"
    return 1
  fi
  (( limit > left )) && limit=$left
  local t0=$(date +%s) rc st
  timeout -k 5 "$limit" bash -c "$cmd" >"$LOGS/$name.log" 2>&1
  rc=$?
  local dt=$(( $(date +%s) - t0 ))
  case $rc in
    0) st=PASS ;;
    77) st=SKIP ;;
    124|137) st=TIMEOUT ;;
    *) st=FAIL ;;
  esac
  local note="rc=$rc, limit ${limit}s, logs/$name.log"
  [[ $st == TIMEOUT ]] && note="killed after ${limit}s, logs/$name.log"
  record "$name" "$st" "$dt" "$note"
  echo "== $name: $st (${dt}s)"
  tail -n 25 "$LOGS/$name.log" | sed 's/^/   | /'
  [[ $st == PASS ]]
}
skip_step() { record "$1" SKIP 0 "$2"; echo "== $1: SKIP ($2)"; }

summary() {
  local f=$OUTDIR/summary.md fails=0 i
  {
    echo "# ctorch GPU run ($(date -u +%Y-%m-%dT%H:%M:%SZ), $(elapsed)s of ${BUDGET}s budget)"
    echo
    echo "| step | status | seconds | note |"
    echo "| --- | --- | --- | --- |"
    for i in "${!NAMES[@]}"; do
      echo "| ${NAMES[$i]} | ${STATUSES[$i]} | ${SECS[$i]} | ${NOTES[$i]} |"
      [[ ${STATUSES[$i]} == FAIL || ${STATUSES[$i]} == TIMEOUT ]] && fails=$((fails + 1))
    done
    echo
    if [[ -f $LOGS/gpu_bench.log ]]; then
      echo "## Benchmark"
      echo
      grep -h '^|' "$LOGS/gpu_bench.log" "$LOGS"/package_cuda.*.log 2>/dev/null || echo "(no benchmark table)"
      echo
    fi
    echo "failed or timed out: $fails"
  } >"$f"
  echo
  cat "$f"
  return $(( fails > 0 ))
}
trap 'echo "interrupted"; summary; exit 1' INT TERM

# ---- 0. Machine and torch --------------------------------------------------
run_step env 60 "
  set -x
  nvidia-smi -L || true
  command -v cmake ninja nvcc cc c++ || true
  nvcc --version | tail -n 2 || true
  $PY -c 'import torch; print(\"torch\", torch.__version__, \"cuda\", torch.version.cuda, \"available\", torch.cuda.is_available()); print(torch.utils.cmake_prefix_path)'
"
# torch's CMake directory, then the torch directory itself: TorchConfig.cmake
# would otherwise find a system LibTorch's libraries (CMakeLists.txt refuses
# that mix; Debian's libtorch-dev on the CPU machine, where this script is
# checked, is one).
TORCH_PREFIX=$($PY -c 'import os, torch; print(torch.utils.cmake_prefix_path + ";" + os.path.dirname(torch.__file__))' 2>/dev/null || true)

# ---- 1. Configure and build ctorch against torch's LibTorch (CUDA) ---------
BUILT=0
if [[ -z $TORCH_PREFIX ]]; then
  skip_step configure "python3 cannot import torch"
else
  if run_step configure 120 "
      cmake -S '$ROOT' -B '$BUILD' -G Ninja -DCMAKE_BUILD_TYPE='$BUILD_TYPE' \
        -DCMAKE_PREFIX_PATH='$TORCH_PREFIX' -DCTORCH_BUILD_TESTS=OFF \
        -DCTORCH_BUILD_EXAMPLES=OFF -DCTORCH_BUILD_BENCH=OFF"; then
    grep -E 'ctorch: CUDA support' "$LOGS/configure.log" | sed 's/^/   /'
    run_step build 200 "cmake --build '$BUILD' --target ctorch -j $JOBS" && BUILT=1
  else
    skip_step build "configure failed"
  fi
fi
LIB=$BUILD/libctorch.so

# ---- 2. The library really has CUDA and sees the GPU ------------------------
if (( BUILT )); then
  run_step cuda_enabled 30 "
    $PY - <<'EOF'
import ctypes, sys
lib = ctypes.CDLL('$LIB')
lib.ct_version.restype = ctypes.c_char_p
lib.ct_torch_version.restype = ctypes.c_char_p
c, a, n = lib.ct_cuda_is_compiled(), lib.ct_cuda_is_available(), lib.ct_cuda_device_count()
print('ctorch', lib.ct_version().decode(), 'LibTorch', lib.ct_torch_version().decode(),
      'compiled', c, 'available', a, 'devices', n)
sys.exit(0 if (c == 1 and a == 1 and n >= 1) else 1)
EOF"
else
  skip_step cuda_enabled "ctorch not built"
fi

# ---- 3. Reference models (tests/models/make_models.py) ----------------------
MODELS=$BUILD/models
if [[ -f $ROOT/tests/models/make_models.py ]]; then
  run_step models 90 "$PY '$ROOT/tests/models/make_models.py' '$MODELS'"
else
  skip_step models "tests/models/make_models.py not present"
fi

# ---- 4. C tests (cmocka from build-gpu-deps, compiled directly) -------------
CMOCKA=$DEPS/cmocka
if (( ! BUILT )); then
  skip_step c_tests "ctorch not built"
elif [[ ! -f $CMOCKA/include/cmocka.h || ! -e $CMOCKA/lib/libcmocka.so.0 ]]; then
  skip_step c_tests "no cmocka in $CMOCKA: run tests/gpu/prepare_deps.sh and carry build-gpu-deps"
else
  mkdir -p "$BUILD/ctests"
  for src in "$ROOT"/tests/c/test_*.c; do
    name=$(basename "$src" .c)
    extra=""  # the C kernels test_op_library registers
    [[ $name == test_op_library ]] && extra="'$ROOT/tests/kernels/test_kernels.c'"
    if run_step "c.$name.build" 60 "
        cc -std=gnu99 -O1 -g -Wall -Wextra -I'$ROOT/include' -I'$ROOT/tests/c' \
          -I'$CMOCKA/include' '$src' $extra -o '$BUILD/ctests/$name' \
          -L'$BUILD' -lctorch '$CMOCKA/lib/libcmocka.so.0' -lpthread -lm -ldl \
          -Wl,-rpath,'$BUILD':'$CMOCKA/lib'"; then
      # Drop the build row on success to keep the table short.
      unset 'NAMES[-1]' 'STATUSES[-1]' 'SECS[-1]' 'NOTES[-1]'
      NAMES=("${NAMES[@]}") STATUSES=("${STATUSES[@]}") SECS=("${SECS[@]}") NOTES=("${NOTES[@]}")
      run_step "c.$name" 60 "cd '$BUILD' && CTORCH_TEST_MODELS='$MODELS' \
          CTORCH_SOURCE_DIR='$ROOT' '$BUILD/ctests/$name'"
    fi
  done
fi

# ---- 5. Python binding tests, CUDA visible ---------------------------------
if (( ! BUILT )); then
  skip_step python_tests "ctorch not built"
elif [[ ! -d $ROOT/bindings/python/tests ]]; then
  skip_step python_tests "bindings/python/tests not present"
else
  run_step python_tests 120 "cd '$ROOT' && CTORCH_LIBRARY='$LIB' CTORCH_TEST_MODELS='$MODELS' \
      CTORCH_SOURCE_DIR='$ROOT' PYTHONPATH='$ROOT/bindings/python'\${PYTHONPATH:+:\$PYTHONPATH} \
      $PY -m pytest bindings/python/tests -q -rs -p no:cacheprovider"
fi

# ---- 5b. Julia binding tests (CUDA kernels from Julia), if a julia is here --
# The device machine has no Julia (shared/recipes/gpu.md); one on PATH, or
# $JULIA, runs the suite (its CUDA cases skip without a device).
JL=${JULIA:-$(command -v julia || true)}
if (( ! BUILT )); then
  skip_step julia_tests "ctorch not built"
elif [[ -z $JL ]]; then
  skip_step julia_tests "no julia on this machine (set JULIA=/path/to/julia to run the suite)"
else
  run_step julia_tests 180 "cd '$ROOT' && CTORCH_LIBRARY='$LIB' CTORCH_TEST_MODELS='$MODELS' \
      JULIA_NUM_THREADS=2 JULIA='$JL' scripts/julia bindings/julia/CTorch/test/runtests.jl"
fi

# ---- 6. CUDA example (examples/cuda) ---------------------------------------
if (( ! BUILT )); then
  skip_step cuda_example "ctorch not built"
else
  run_step cuda_example 90 "
    cmake -S '$ROOT/examples/cuda' -B '$BUILD/example-cuda' -G Ninja \
      -DCMAKE_CUDA_COMPILER=\$(command -v nvcc) -DCMAKE_CUDA_ARCHITECTURES=90 \
      -DCTORCH_BUILD_DIR='$BUILD' \
    && cmake --build '$BUILD/example-cuda' \
    && '$BUILD/example-cuda/h_example'"
fi

# ---- 7. GPU benchmark: ResNet-50 + small op, ctorch vs C++ -----------------
RESNET=$BUILD/resnet50_traced.pt
if (( ! BUILT )); then
  skip_step gpu_bench "ctorch not built"
else
  run_step resnet50_trace 90 "
    $PY - <<'EOF'
import torch, torchvision
m = torchvision.models.resnet50().eval()  # random weights: no network here
with torch.no_grad():
    t = torch.jit.trace(m, torch.randn(1, 3, 224, 224))
t.save('$RESNET')
print('saved', '$RESNET')
EOF" && trace_ok=1 || trace_ok=0
  if run_step gpu_bench.build 150 "
      cmake -S '$ROOT/tests/gpu' -B '$BUILD/gpu-bench' -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DCMAKE_PREFIX_PATH='$TORCH_PREFIX' -DCTORCH_BUILD_DIR='$BUILD' \
      && cmake --build '$BUILD/gpu-bench' -j $JOBS"; then
    if (( trace_ok )); then
      run_step gpu_bench 120 "'$BUILD/gpu-bench/gpu_bench' '$RESNET' $ITERS 10"
    else
      skip_step gpu_bench "tracing ResNet-50 failed"
    fi
  else
    skip_step gpu_bench "gpu_bench did not build"
  fi
fi

# ---- 8. AOTInductor package compiled for CUDA, run from Python and C -------
# A small conv net (tests/models/make_packages.py's ConvNet, batch 8) exported
# and compiled for CUDA here; run through ctorch.load_package next to eager,
# TorchScript (Module::forward) and torch's own aoti_load_package, and through
# ct_package_run next to AOTIModelPackageLoader::run (bench_package, built
# with gpu_bench in step 7). Outputs are checked against eager.
PKG=$BUILD/convnet_cuda.pt2
PKG_IO=$BUILD/convnet_cuda_io.pt
if (( ! BUILT )); then
  skip_step package_cuda.compile "ctorch not built"
else
  run_step package_cuda.compile 150 "cd '$ROOT' && $PY - <<'EOF'
import sys, time, torch
sys.path.insert(0, 'tests/models')
import make_packages as mp
torch.manual_seed(0)
m = mp.ConvNet().eval().cuda()
x = torch.randn(8, 3, 64, 64, device='cuda')
with torch.no_grad():
    ep = torch.export.export(m, (x,))
    t0 = time.time()
    torch._inductor.aoti_compile_and_package(ep, package_path='$PKG')
torch.save({'state': m.state_dict(), 'x': x.cpu()}, '$PKG_IO')
print('compiled for CUDA in %.1f s' % (time.time() - t0))
EOF" && pkg_ok=1 || pkg_ok=0
  if (( pkg_ok )); then
    run_step package_cuda.python 90 "cd '$ROOT' && CTORCH_LIBRARY='$LIB' \
        PYTHONPATH='$ROOT/bindings/python'\${PYTHONPATH:+:\$PYTHONPATH} $PY - <<'EOF'
import sys, time, torch, ctorch
sys.path.insert(0, 'tests/models')
import make_packages as mp
d = torch.load('$PKG_IO')
m = mp.ConvNet().eval().cuda()
m.load_state_dict(d['state'])
x = d['x'].cuda()
with torch.no_grad():
    ref = m(x)
    ts = torch.jit.trace(m, x)
p = ctorch.load_package('$PKG')
assert p.device.type == 'cuda', p.device
cx = ctorch.from_dlpack(x)
out = p(cx)
torch.testing.assert_close(torch.from_dlpack(out), ref, rtol=1e-3, atol=1e-4)
# On a caller's stream (ct_package_run_on_stream), and 2 runners from 4 threads.
s = torch.cuda.Stream()
with torch.cuda.stream(s):
    out_s = p.run(cx, stream=s)
s.synchronize()
torch.testing.assert_close(torch.from_dlpack(out_s), ref, rtol=1e-3, atol=1e-4)
import threading
p2 = ctorch.load_package('$PKG', num_runners=2)
errs = []
def work():
    try:
        for _ in range(10):
            torch.testing.assert_close(torch.from_dlpack(p2(cx)), ref, rtol=1e-3, atol=1e-4)
    except Exception as e:
        errs.append(e)
th = [threading.Thread(target=work) for _ in range(4)]
[t.start() for t in th]; [t.join() for t in th]
assert not errs, errs[:2]
tp = torch._inductor.aoti_load_package('$PKG')
def bench(f, n=200):
    for _ in range(10): f()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(n): f()
    torch.cuda.synchronize(); return (time.perf_counter() - t0) / n * 1e6
with torch.no_grad():
    rows = [('eager (torch, Python)', bench(lambda: m(x))),
            ('TorchScript Module::forward (torch.jit.trace, Python)', bench(lambda: ts(x))),
            ('aoti_load_package (torch, Python)', bench(lambda: tp(x))),
            ('ctorch.load_package (ctorch, Python)', bench(lambda: p(cx)))]
for name, us in rows:
    print('| CUDA .pt2 ConvNet 8x3x64x64: %s | %.1f us |' % (name, us))
EOF"
    if [[ -x $BUILD/gpu-bench/bench_package ]]; then
      run_step package_cuda.c 90 "'$BUILD/gpu-bench/bench_package' '$PKG' 8 3 64 64"
    else
      skip_step package_cuda.c "bench_package was not built (step 7)"
    fi
  else
    skip_step package_cuda.python "compiling the CUDA package failed"
  fi
fi

summary
exit $?
