#!/bin/sh
# The Debian packages a user installs (issue 38): `cpack -G DEB` in the build tree
# makes libctorch0 and libctorch-dev; they are installed with `apt-get install
# ./....deb` (so apt resolves their dependencies on Debian's LibTorch packages), the
# consumer is built through pkg-config and through find_package(ctorch) with no
# variable pointing anywhere, run from another directory, and the packages are
# removed again (also when a step fails). Also checks `cpack -G TGZ`'s tarball.
#   tests/install/check_deb.sh BUILD_DIR
# Needs root (or sudo) and dpkg-dev (dpkg-shlibdeps); prints a note and exits 0
# where neither apt nor root is available, unless CTORCH_DEB_REQUIRED=1.
set -eu
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo -n"; else
    [ "${CTORCH_DEB_REQUIRED:-0}" = 1 ] && { echo "check_deb: needs root" >&2; exit 1; }
    echo "check_deb: skipped (needs root or sudo to install packages)"; exit 0
  fi
fi
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q ' installed$'; }
if installed libctorch0 || installed libctorch-dev; then
  echo "check_deb: libctorch0/libctorch-dev are already installed; not touching them" >&2
  exit 1
fi
work=$(mktemp -d)
cleanup() {
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 purge -y -qq \
    libctorch0 libctorch-dev >/dev/null 2>&1 || true
  rm -rf "$work"
}
trap cleanup EXIT

(cd "$build" && cpack -G DEB -B "$work/pkg" >/dev/null)
runtime=$(ls "$work"/pkg/libctorch0_*.deb)
dev=$(ls "$work"/pkg/libctorch-dev_*.deb)
depends=$(dpkg-deb -f "$runtime" Depends)
echo "check_deb: $(basename "$runtime") Depends: $depends"
case "$depends" in
  *libtorch*) ;;
  *) echo "check_deb: libctorch0 does not depend on Debian's LibTorch" >&2; exit 1 ;;
esac
dpkg-deb -c "$dev" | grep -q '/usr/include/ctorch.h' || { echo "check_deb: no header in -dev" >&2; exit 1; }
$SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=900 install -y -qq \
  "$runtime" "$dev" >/dev/null

# pkg-config, nothing set: the system's search path finds ctorch.pc
cd "$work"
unset PKG_CONFIG_PATH LD_LIBRARY_PATH CMAKE_PREFIX_PATH || true
cc -std=c99 -Wall -Werror -o consumer-pc "$here/consumer.c" $(pkg-config --cflags --libs ctorch)
mkdir elsewhere && (cd elsewhere && ../consumer-pc)
# find_package(ctorch), nothing set: CMake's default prefixes find /usr/lib/cmake/ctorch
cmake -S "$here" -B cmake-build >/dev/null
cmake --build cmake-build >/dev/null
(cd elsewhere && ../cmake-build/consumer)
# the ctorch command from the package
(cd elsewhere && env -u LD_LIBRARY_PATH ctorch info >/dev/null)

# the tarball: the same install tree, relocatable
(cd "$build" && cpack -G TGZ -B "$work/tgz" >/dev/null)
tgz=$(ls "$work"/tgz/libctorch-*.tar.gz)
tar -tzf "$tgz" | grep -q 'include/ctorch.h' && tar -tzf "$tgz" | grep -q 'libctorch.so' ||
  { echo "check_deb: the tarball lacks the header or the library" >&2; exit 1; }
echo "check_deb: passed ($(basename "$runtime"), $(basename "$dev"), $(basename "$tgz"): pkg-config and find_package with nothing set)"
