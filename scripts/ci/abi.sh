#!/bin/sh
# Leg "abi": the public ABI against the release baseline (abi/check.sh; a
# removed or changed function or struct fails, added functions pass).
. "$(dirname "$0")/common.sh"
[ -f build/libctorch.so ] || ./scripts/build.sh build
abi/check.sh build/libctorch.so
abi/check.sh --self-test build/libctorch.so
stage "ABI check"
