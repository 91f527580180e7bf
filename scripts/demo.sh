#!/bin/sh
# Sets up, builds, and runs the demo: a C array wrapped by torch with no copy,
# then one model loaded and run from C, Python and Julia. The model is the
# embedded default that examples/c/run_model.c builds from TorchScript source
# and saves as build/demo_model.pt (pass another .pt as $1 to use it instead,
# and its input shape as $2 for Julia, e.g. 1,3,224,224); then Julia trains a
# small conv net (examples/julia/train_convnet.jl) and PyTorch resumes it.
set -eu
cd "$(dirname "$0")/.."
./scripts/setup.sh
./scripts/build.sh build
export CTORCH_LIBRARY="$PWD/build/libctorch.so"
echo; echo "== C: zero-copy wrap of a C array =="
./build/examples/example_wrap_array
model="${1:-$PWD/build/demo_model.pt}"
echo; echo "== C: load and run a model =="
(cd build && ./examples/example_run_model ${1:+"$1"})
if [ -f examples/python/demo.py ]; then
  echo; echo "== Python (ctypes, no torch import) =="
  /usr/bin/python3 examples/python/demo.py "$model"
fi
if [ -f examples/julia/demo.jl ] && command -v julia >/dev/null 2>&1; then
  echo; echo "== Julia (ccall) =="
  scripts/julia examples/julia/demo.jl "$model" "${2:-2,8}"
fi
if [ -f examples/julia/train_convnet.jl ] && command -v julia >/dev/null 2>&1; then
  echo; echo "== Julia: train a conv net (a Julia-loop layer inside; Adam, cosine, clipping) =="
  scripts/julia examples/julia/train_convnet.jl build/train_julia 40
  echo; echo "== PyTorch resumes what Julia saved =="
  /usr/bin/python3 examples/check_training.py build/train_julia
fi
