#!/bin/sh
# Puts the libunwind that Debian 11's julia 1.5.3 was built against (libunwind8
# 1.3.2) into DESTDIR/libunwind.so.8, without touching the system's libunwind.
#
# Why: on Debian 12 the system libunwind8 is 1.6, with which Julia 1.5.3
# segfaults (in unw_step) whenever a Julia exception is thrown through
# JIT-compiled code. Preloading this copy fixes it:
#   LD_PRELOAD=/lib/x86_64-linux-gnu/libgcc_s.so.1:DESTDIR/libunwind.so.8 julia ...
# Needs apt sources with Debian 11 (bullseye), as set up by the Julia install
# recipe. Usage: get-libunwind.sh DESTDIR   (e.g. build/julia-libunwind)
set -eu
dest=${1:?usage: get-libunwind.sh DESTDIR}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
(cd "$tmp" && apt-get download -q libunwind8=1.3.2-2 >/dev/null 2>&1 && dpkg-deb -x libunwind8_1.3.2-2_amd64.deb root)
mkdir -p "$dest"
cp -L "$tmp/root/usr/lib/x86_64-linux-gnu/libunwind.so.8" "$dest/libunwind.so.8"
echo "$dest/libunwind.so.8"
