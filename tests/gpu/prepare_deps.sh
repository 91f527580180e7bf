#!/usr/bin/env bash
# Run on the CPU machine BEFORE calling the device tool: puts what the GPU
# machine lacks into build-gpu-deps/ (ignored by git through "build*/"), which
# the device call must carry:  carry: ["build-gpu-deps"].
#
# The GPU machine has no cmocka and no network. Debian's libcmocka-dev is
# installed here, so we copy its header and shared library (no download; the
# library only needs glibc, and Ubuntu 24.04's is newer than Debian 12's).
# If libcmocka is not installed here, fall back to `apt-get download` +
# `dpkg -x` (needs apt access on this machine).
set -eu
ROOT=$(cd "$(dirname "$0")/../.." && pwd)
DEST=${1:-$ROOT/build-gpu-deps}/cmocka
rm -rf "$DEST"
mkdir -p "$DEST/include" "$DEST/lib"

lib=$(ls /usr/lib/*/libcmocka.so.0.* 2>/dev/null | head -n1 || true)
if [[ -n "$lib" && -f /usr/include/cmocka.h ]]; then
  cp /usr/include/cmocka.h "$DEST/include/"
  [[ -f /usr/include/cmocka_pbc.h ]] && cp /usr/include/cmocka_pbc.h "$DEST/include/"
  cp "$lib" "$DEST/lib/"
else
  tmp=$(mktemp -d)
  (cd "$tmp" && apt-get download libcmocka0 libcmocka-dev >/dev/null)
  for deb in "$tmp"/*.deb; do dpkg -x "$deb" "$tmp/x"; done
  cp "$tmp"/x/usr/include/cmocka*.h "$DEST/include/"
  cp "$tmp"/x/usr/lib/*/libcmocka.so.0.* "$DEST/lib/"
  rm -rf "$tmp"
fi
base=$(basename "$(ls "$DEST"/lib/libcmocka.so.0.* | head -n1)")
ln -sf "$base" "$DEST/lib/libcmocka.so.0"
ln -sf libcmocka.so.0 "$DEST/lib/libcmocka.so"
echo "cmocka ready in $DEST:"
ls -l "$DEST/include" "$DEST/lib"
