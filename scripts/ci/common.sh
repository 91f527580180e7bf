# Sourced by every leg (scripts/ci/*.sh): the checkout as working directory,
# compiler-cache settings shared by all builds, and `stage` for timings.
set -eu
cd "$(dirname "$0")/../.."
# Object files are cached by path relative to the checkout, so a fresh clone
# elsewhere still hits the cache a previous run filled.
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$(pwd)}"
# -g builds would otherwise hash the build directory's absolute path (no hit
# from another clone), and the precompiled header needs the PCH sloppiness.
export CCACHE_NOHASHDIR="${CCACHE_NOHASHDIR:-true}"
export CCACHE_SLOPPINESS="${CCACHE_SLOPPINESS:-pch_defines,time_macros,include_file_mtime,include_file_ctime}"
# Six build trees (1.13, ASan, TSan, fuzz, two PyPI CUDA builds) fill about
# 8 GB; ccache's default 5 GB evicted one leg's objects while the next built.
export CCACHE_MAXSIZE="${CCACHE_MAXSIZE:-16G}"
leg_t0=$(date +%s)
stage() { echo "ci: $1 done in $(( $(date +%s) - leg_t0 )) s"; }
# build/ with the test models and pickles, for legs that use them (made by
# the lt113 leg; built here when a leg runs alone).
need_build() {
  if [ ! -f build/build.ninja ] || [ ! -d build/models ] || [ ! -d build/pickles ]; then
    ./scripts/build.sh build
    (cd build && ctest -R '^models\.(make|pickles)$' >/dev/null)
  fi
}
