#!/bin/sh
# Leg "pypi": LibTorch from PyPI's newest torch wheel (2.15.0, CUDA 13.2
# build) in a cached venv with numpy 2: build-pypi-2.15.0/ with CUDA and every
# CTest entry (scripts/ci-pypi.sh), then build-pypi-2.15.0-cpu/: the same
# wheel CPU-only with the CUDA toolkit hidden (library, two C tests, a Python
# import and a one-rank Gloo group; its own library build, cached by ccache).
# `pypi.sh prepare` only makes the venv (scripts/test.sh runs that in the
# background meanwhile).
. "$(dirname "$0")/common.sh"
version="${CTORCH_PYPI_TORCH:-2.15.0}"
if [ "${1:-}" = prepare ]; then exec ./scripts/ci-pypi.sh "$version" prepare; fi
./scripts/ci-pypi.sh "$version" full
stage "PyPI torch $version leg (CUDA build)"
./scripts/ci-pypi.sh "$version" cpu
stage "PyPI torch $version leg"
