#!/bin/sh
# Installs the build tree into a scratch prefix, then builds tests/install/consumer.c
# against it through CMake (find_package(ctorch)) and through pkg-config (no variable
# overrides; the prefix is moved first, so the .pc must be relocatable), and once more
# against the build tree itself (-Dctorch_DIR=<build>).
set -eu
build="$1"; work="$2"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/installed" >/dev/null
mv "$work/installed" "$work/prefix"   # relocated after install
libdir=$(dirname "$(find "$work/prefix" -name 'libctorch.so' | head -n1)")
# 1. CMake package from the installed prefix
cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
# every consumer starts with no LD_LIBRARY_PATH: the RPATHs must find libctorch and LibTorch
env -u LD_LIBRARY_PATH "$work/cmake-build/consumer"
# 2. pkg-config, exactly as the README says
PKG_CONFIG_PATH="$libdir/pkgconfig"; export PKG_CONFIG_PATH
inc=$(pkg-config --variable=includedir ctorch)
[ -f "$inc/ctorch.h" ] || { echo "pkg-config includedir $inc has no ctorch.h" >&2; exit 1; }
cc -std=c99 -Wall -Werror -o "$work/consumer-pc" "$here/consumer.c" \
  $(pkg-config --cflags --libs ctorch)
env -u LD_LIBRARY_PATH "$work/consumer-pc"
# 3. The build tree as ctorch_DIR (ctorchTargets.cmake exported there); the consumer
#    runs without LD_LIBRARY_PATH through CMake's build-tree RPATH.
cmake -S "$here" -B "$work/buildtree-consumer" -Dctorch_DIR="$(cd "$build" && pwd)" >/dev/null
cmake --build "$work/buildtree-consumer" >/dev/null
"$work/buildtree-consumer/consumer"
echo "install check passed (cmake, relocated pkg-config, build tree as ctorch_DIR)"
