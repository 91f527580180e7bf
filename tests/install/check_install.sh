#!/bin/sh
# Installs the build tree into a scratch prefix, then builds tests/install/consumer.c
# against it once through CMake (find_package(ctorch)) and once through pkg-config.
set -eu
build="$1"; work="$2"
here=$(cd "$(dirname "$0")" && pwd)
rm -rf "$work"; mkdir -p "$work"
cmake --install "$build" --prefix "$work/prefix" >/dev/null
libdir=$(ls -d "$work"/prefix/lib*/ | head -n1)
# 1. CMake package
cmake -S "$here" -B "$work/cmake-build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
cmake --build "$work/cmake-build" >/dev/null
LD_LIBRARY_PATH="$libdir" "$work/cmake-build/consumer"
# 2. pkg-config
pc="pkg-config --define-variable=prefix=$work/prefix"
cc -std=c99 -Wall -Werror -o "$work/consumer-pc" "$here/consumer.c" \
  $(PKG_CONFIG_PATH="$libdir/pkgconfig" $pc --cflags --libs ctorch)
LD_LIBRARY_PATH="$libdir" "$work/consumer-pc"
echo "install check passed (cmake and pkg-config)"
