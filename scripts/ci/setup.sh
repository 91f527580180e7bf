#!/bin/sh
# Leg "setup": Debian packages, Julia, Python test dependencies (scripts/setup.sh).
. "$(dirname "$0")/common.sh"
./scripts/setup.sh
stage setup
