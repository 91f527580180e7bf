#!/bin/sh
# Installs what ctorch needs on Debian 12, skipping what is already there.
# Julia comes from Debian 11's archive (Debian 12 has none), pinned low so
# nothing else is downgraded (bindings/julia/README.md explains the start line).
set -eu
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
pkgs="cmake ninja-build g++ pkg-config ccache libtorch-dev libcmocka-dev python3 python3-numpy \
python3-pytest python3-torch python3-torchvision python3-venv python3-setuptools python3-pip \
python3-matplotlib python3-mypy libcjson-dev libgloo-dev \
clang-14 libclang-rt-14-dev llvm-14 abigail-tools patchelf dpkg-dev"
missing=""
for p in $pkgs; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  echo "setup: installing$missing"
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq $missing >/dev/null
fi
if ! command -v julia >/dev/null 2>&1; then
  echo "setup: installing julia (Debian 11 archive)"
  uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
  [ -n "$uri" ] || uri=$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list)
  printf 'deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] %s bullseye main\n' "$uri" |
    $SUDO tee /etc/apt/sources.list.d/bullseye-julia.list >/dev/null
  printf 'Package: *\nPin: release n=bullseye\nPin-Priority: 100\n' |
    $SUDO tee /etc/apt/preferences.d/bullseye-julia >/dev/null
  $SUDO apt-get -o DPkg::Lock::Timeout=900 update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get -o DPkg::Lock::Timeout=900 install -y -qq julia >/dev/null
fi
# Debian 11's julia 1.5.3 segfaults with Debian 12's libunwind 1.6 on any Julia
# exception; keep the libunwind it was built against beside it (not system-wide).
jl_unwind=/opt/ctorch/julia-libunwind
if [ ! -f "$jl_unwind/libunwind.so.8" ]; then
  echo "setup: fetching libunwind 1.3.2 for julia into $jl_unwind"
  $SUDO sh "$(dirname "$0")/../bindings/julia/get-libunwind.sh" "$jl_unwind" >/dev/null
fi
echo "setup: done"
