#!/bin/sh
# Leg "lt113": build/ against Debian 12's LibTorch 1.13 and every CTest entry
# (C, header, abuse, op sweep, install, Python, Julia, CLI, documents), then the
# Debian packages cpack makes (tests/install/check_deb.sh).
. "$(dirname "$0")/common.sh"
./scripts/build.sh build
stage "build (LibTorch 1.13)"
(cd build && ctest --output-on-failure -j2)
stage "ctest (LibTorch 1.13)"
# Every skip is one this leg expects (tests/skips/lt113.txt), and each listed one happened.
python3 scripts/ci/check_skips.py lt113 build/Testing/Temporary/LastTest.log
# The Debian packages: made with cpack, installed with apt, used through
# pkg-config and find_package with nothing set, removed again.
CTORCH_DEB_REQUIRED=1 ./tests/install/check_deb.sh build
stage "Debian packages"
