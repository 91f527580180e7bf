#!/bin/sh
# The LibTorch 2.x leg: builds and tests ctorch against Debian 13 (trixie)'s
# LibTorch 2.6 / torch 2.6 / numpy 2.2 in a trixie chroot on this Debian 12
# machine: debootstrap, then Debian 13's packages inside (the README, "Tested
# LibTorch versions", says how it is cached). Needs root (or sudo).
#
#   scripts/ci-libtorch2.sh            prepare the chroot (or reuse the cache), build, test
#   scripts/ci-libtorch2.sh prepare    only make sure the cached chroot exists
#   scripts/ci-libtorch2.sh bench      build bench_package and time .pt2 packages (a conv
#                                      net, resnet18) through ctorch against
#                                      AOTIModelPackageLoader; rows go to
#                                      $CTORCH_LT2_BENCH_OUT (default
#                                      build-bench/bench-results/package.txt)
#
# The chroot is made once with debootstrap from the mirror configured in
# /etc/apt/sources.list.d/debian.sources (read now, never written down here)
# and kept as $CACHE/trixie-<hash of the package list>.tar.zst; later runs
# unpack it (about half a minute). $CACHE/ccache keeps the compiler cache.
# Julia is not tested here: Debian 13 has no Julia (the 1.13 leg runs it).
#
# Environment: CTORCH_LT2_CACHE (default /var/cache/ctorch),
# CTORCH_LT2_ROOT (where the chroot is unpacked; default /var/tmp/ctorch-lt2),
# CTORCH_LT2_KEEP=1 leaves the unpacked chroot in place after the run.
set -eu
cd "$(dirname "$0")/.."
src_dir=$(pwd)

SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
if [ -n "$SUDO" ]; then exec sudo -E sh "$0" "$@"; fi

mode="${1:-all}"
cache="${CTORCH_LT2_CACHE:-/var/cache/ctorch}"
root="${CTORCH_LT2_ROOT:-/var/tmp/ctorch-lt2}"
suite=trixie
# Everything the leg needs inside the chroot. Changing this list makes a new
# cache key (the old tarball is removed when the new one is written).
pkgs="libtorch-dev python3-torch python3-numpy python3-pytest python3-torchvision \
python3-setuptools python3-venv python3-pip libcmocka-dev libcjson-dev libgloo-dev cmake ninja-build g++ make pkg-config ccache"

key=$(printf '%s %s v1\n' "$suite" "$pkgs" | sha256sum | cut -c1-16)
tarball="$cache/$suite-$key.tar.zst"
mkdir -p "$cache" "$cache/ccache"

log() { echo "ci-libtorch2: $*"; }
now() { date +%s; }
t_start=$(now)

mirror_uri() {
  # The first URI of the main archive (not -security) configured on this machine.
  uri=$(awk '/^URIs:/ {print $2}' /etc/apt/sources.list.d/debian.sources 2>/dev/null |
        grep -v security | head -n1 || true)
  [ -n "$uri" ] || uri=$(awk '/^deb / && $0 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null || true)
  [ -n "$uri" ] || { echo "ci-libtorch2: no Debian mirror configured" >&2; exit 1; }
  echo "$uri"
}

mounted=""
unmount_all() {
  for m in $mounted; do umount -l "$m" 2>/dev/null || true; done
  mounted=""
}
mount_into() { # mount_into ROOT  (proc, sys, dev, dev/pts)
  r="$1"
  mount -t proc proc "$r/proc"; mounted="$r/proc $mounted"
  mount -t sysfs sys "$r/sys"; mounted="$r/sys $mounted"
  mount --bind /dev "$r/dev"; mounted="$r/dev $mounted"
  mount --bind /dev/pts "$r/dev/pts"; mounted="$r/dev/pts $mounted"
}
bind_into() { # bind_into HOSTDIR ROOT/PATH [ro]
  mkdir -p "$2"
  mount --bind "$1" "$2"; mounted="$2 $mounted"
  if [ "${3:-}" = ro ]; then mount -o remount,bind,ro "$2"; fi
}
cleanup() {
  rc=$?
  unmount_all
  if [ -n "${building:-}" ]; then rm -rf "$building"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP

make_tarball() {
  # Wait for another apt (for example scripts/setup.sh) rather than fail on its lock.
  apt="apt-get -o DPkg::Lock::Timeout=900"
  command -v debootstrap >/dev/null || { $apt update -qq; $apt install -y -qq debootstrap >/dev/null; }
  command -v zstd >/dev/null || { $apt update -qq; $apt install -y -qq zstd >/dev/null; }
  uri=$(mirror_uri)
  building="$cache/build-$suite-$key.$$"
  rm -rf "$building"; mkdir -p "$building"
  log "debootstrap $suite from $uri (minutes)"
  debootstrap --variant=minbase "$suite" "$building" "$uri" >"$cache/debootstrap.log" 2>&1 ||
    { tail -n 30 "$cache/debootstrap.log" >&2; exit 1; }
  printf '#!/bin/sh\nexit 101\n' >"$building/usr/sbin/policy-rc.d"
  chmod 755 "$building/usr/sbin/policy-rc.d"
  printf 'deb %s %s main\n' "$uri" "$suite" >"$building/etc/apt/sources.list"
  mount_into "$building"
  log "installing $(echo $pkgs | wc -w) packages and their dependencies (minutes)"
  chroot "$building" sh -c "apt-get update -qq && DEBIAN_FRONTEND=noninteractive \
    apt-get install -y -qq --no-install-recommends $pkgs >/dev/null && apt-get clean" \
    >"$cache/install.log" 2>&1 || { tail -n 30 "$cache/install.log" >&2; exit 1; }
  unmount_all
  rm -rf "$building/var/lib/apt/lists/"* "$building/tmp/"*
  log "writing $tarball"
  tar -C "$building" --numeric-owner -cf - . | zstd -q -3 -T0 -o "$tarball.tmp"
  rm -rf "$building"; building=""
  for old in "$cache/$suite-"*.tar.zst; do
    [ "$old" = "$tarball" ] || rm -f "$old"
  done
  mv "$tarball.tmp" "$tarball"
}

# One run at a time per cache (the tarball and ccache are shared).
exec 9>"$cache/lock"
flock 9

if [ -f "$tarball" ]; then
  log "cached chroot $tarball"
else
  make_tarball
  log "chroot made in $(( $(now) - t_start )) s"
fi
[ "$mode" = prepare ] && exit 0

case "$mode" in all|bench) ;; *) echo "ci-libtorch2: unknown mode $mode" >&2; exit 2;; esac

# A fresh root from the tarball: nothing of an earlier run survives. What a
# run that was killed left mounted is unmounted first (we hold the lock: no
# other run uses $root now); rm -rf through a bind mount of /dev would not do.
if grep -q " $root/" /proc/mounts; then
  log "unmounting what an earlier, interrupted run left mounted under $root"
  awk -v r="$root/" 'index($2, r) == 1 { print $2 }' /proc/mounts | sort -r |
    while read -r m; do umount -l "$m" || true; done
fi
if grep -q " $root/" /proc/mounts; then
  echo "ci-libtorch2: something is still mounted under $root; not removing it" >&2; exit 1
fi
rm -rf "$root"; mkdir -p "$root"
zstd -q -d -T0 -c "$tarball" | tar -C "$root" -xf -
log "chroot unpacked in $(( $(now) - t_start )) s"
mount_into "$root"
bind_into "$cache/ccache" "$root/ccache"
# The host's CUDA headers let the build compile-check src/cuda.cpp (no GPU needed).
[ -d /usr/local/cuda/include ] && bind_into /usr/local/cuda "$root/usr/local/cuda" ro
mkdir -p "$root/src"
# The working tree as it is (tracked and untracked files git does not ignore),
# copied, not bind-mounted, so the host's build trees are not touched.
git ls-files -z --cached --others --exclude-standard | tar --null -T - -cf - | tar -C "$root/src" -xf -
printf 'max_size = 3G\nbase_dir = /src\nsloppiness = include_file_ctime, include_file_mtime, pch_defines, time_macros\n' \
  >"$cache/ccache/ccache.conf"

# Inside: configure, build, then every CTest entry (C tests with reference
# models made by torch 2.6, pytest suite, install check; Julia is absent).
# No PYTORCH_TENSOREXPR / ONEDNN_* settings: the leg runs as users would.
if [ "$mode" = all ]; then
  steps='
  cmake -S . -B build -G Ninja -DCTORCH_BUILD_BENCH=OFF >/dev/null
  ninja -C build
  cd build
  ctest --output-on-failure -j2 --timeout 900
  python3 ../scripts/ci/check_skips.py lt2 Testing/Temporary/LastTest.log'
else
  steps='
  cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release -DCTORCH_BUILD_TESTS=OFF \
    -DCTORCH_BUILD_EXAMPLES=OFF -DCTORCH_BUILD_BENCH=ON >/dev/null
  ninja -C build bench_package
  python3 tests/models/make_packages.py --bench /tmp/pt2
  build/bench/bench_package /tmp/pt2/convnet.pt2 1 3 64 64 > build/package.txt
  if [ -f /tmp/pt2/resnet18.pt2 ]; then
    build/bench/bench_package /tmp/pt2/resnet18.pt2 1 3 224 224 >> build/package.txt
  fi
  cat build/package.txt'
fi
chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/root LANG=C.UTF-8 \
  CTORCH_SKIPS_REPORT_ONLY="${CTORCH_SKIPS_REPORT_ONLY:-0}" \
  CCACHE_DIR=/ccache CCACHE_BASEDIR=/src sh -eu -c "
  cd /src
  python3 -c 'import torch, numpy; print(\"ci-libtorch2: torch\", torch.__version__, \"numpy\", numpy.__version__)'
  $steps
  ccache -s | grep -iE 'hit|miss' | head -n 3 || true
"
if [ "$mode" = bench ]; then
  # The rows for bench/RESULTS.md (bench/report.py reads package.txt).
  bench_out="${CTORCH_LT2_BENCH_OUT:-$src_dir/build-bench/bench-results/package.txt}"
  mkdir -p "$(dirname "$bench_out")"
  cp "$root/src/build/package.txt" "$bench_out"
  log "benchmark rows in $bench_out"
fi
log "LibTorch 2 leg ($mode) passed in $(( $(now) - t_start )) s"
unmount_all
[ "${CTORCH_LT2_KEEP:-0}" = 1 ] || rm -rf "$root"
