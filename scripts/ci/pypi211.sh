#!/bin/sh
# Leg "pypi211": LibTorch from PyPI's torch 2.11.0 wheel (the GPU machine's
# version), so tests/gpu/run.sh never meets a first compile error there:
# build-pypi-2.11.0/ with CUDA and the C tests (scripts/ci-pypi.sh).
# `pypi211.sh prepare` only makes the venv.
. "$(dirname "$0")/common.sh"
if [ "${1:-}" = prepare ]; then exec ./scripts/ci-pypi.sh 2.11.0 prepare; fi
./scripts/ci-pypi.sh 2.11.0 c
stage "PyPI torch 2.11.0 leg (build + C tests)"
