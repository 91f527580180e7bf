#!/bin/sh
# Leg "lt2": the same build and tests against Debian 13's LibTorch 2.6, torch
# 2.6 and numpy 2.2 in a cached trixie chroot (scripts/ci-libtorch2.sh; needs
# root or sudo): C tests with reference models and .pt2 packages made by torch
# 2.6, the Python suite, the install and documents checks (Julia stays on the
# 1.13 leg: Debian 13 has no Julia). `lt2.sh prepare` only makes or unpacks
# the cached chroot (scripts/test.sh runs it in the background meanwhile).
. "$(dirname "$0")/common.sh"
if [ "${1:-}" = prepare ]; then
  exec ./scripts/ci-libtorch2.sh prepare
fi
./scripts/ci-libtorch2.sh
stage "LibTorch 2.6 leg"
