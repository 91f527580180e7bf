#!/bin/sh
# Leg "lt113": build/ against Debian 12's LibTorch 1.13 and every CTest entry
# (C, header, abuse, op sweep, install, Python, Julia, CLI, documents).
. "$(dirname "$0")/common.sh"
./scripts/build.sh build
stage "build (LibTorch 1.13)"
(cd build && ctest --output-on-failure -j2)
stage "ctest (LibTorch 1.13)"
