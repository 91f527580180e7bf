#!/bin/sh
# Configures and builds ctorch in build/ (or $1) with Ninja.
set -eu
cd "$(dirname "$0")/.."
dir="${1:-build}"
shift 2>/dev/null || true
cmake -S . -B "$dir" -G Ninja "$@" >/dev/null
ninja -C "$dir"
