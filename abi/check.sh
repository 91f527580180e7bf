#!/bin/sh
# ABI check for libctorch against the release baseline abi/libctorch.abi
# (abigail-tools). Only the public ABI is recorded: the exported ct_*
# functions and ctorch's own types (abi/abidw.supp), so LibTorch's C++ types
# never enter the dump (about 240 KB instead of 14 MB); changes inside the
# opaque handle structs are ignored (abi/abidiff.supp).
#
#   abi/check.sh LIB            compare LIB with the baseline: fails (exit 1)
#                               on a removed function or a changed function
#                               or struct; added functions pass
#   abi/check.sh --update LIB   rewrite the baseline from LIB, on purpose
#                               (after adding functions: commit the new
#                               abi/libctorch.abi with them)
#   abi/check.sh --self-test LIB  prove that the check catches a removed
#                               function and a changed struct, and passes an
#                               added function (modified copies of the dump)
#
# LIB must have DWARF (the default RelWithDebInfo build does). Skips (exit 0,
# with a note) when abidw/abidiff are missing, unless CTORCH_ABI_REQUIRED=1.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
baseline="$here/libctorch.abi"
mode=check
case "${1:-}" in
  --update) mode=update; shift ;;
  --self-test) mode=selftest; shift ;;
esac
lib=${1:?usage: abi/check.sh [--update|--self-test] path/to/libctorch.so}

if ! command -v abidw >/dev/null 2>&1 || ! command -v abidiff >/dev/null 2>&1; then
  if [ "${CTORCH_ABI_REQUIRED:-0}" = "1" ]; then
    echo "abi: abidw/abidiff not found (install abigail-tools)" >&2
    exit 1
  fi
  echo "abi: abigail-tools not installed, ABI check skipped"
  exit 0
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# A dump that does not depend on where the tree or the build lives.
dump() {
  abidw --suppressions "$here/abidw.supp" --no-corpus-path --no-comp-dir-path \
    --no-show-locs --type-id-style hash "$1" >"$2"
}

# compare OLD NEW: 0 when NEW keeps every function and type of OLD unchanged.
# abidiff sets bit 4 (ABI change) for any change, additions included, and bit
# 8 for incompatible ones; added functions and variables are left out here
# (--no-added-syms), so any remaining change is a removal or a change.
compare() {
  set +e
  abidiff --no-added-syms --suppressions "$here/abidiff.supp" "$1" "$2" >"$tmp/report" 2>&1
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    cat "$tmp/report"
    if [ $((rc & 3)) -ne 0 ]; then
      echo "abi: abidiff failed to run (status $rc)"
    fi
    return 1
  fi
  return 0
}

case $mode in
  update)
    dump "$lib" "$baseline"
    echo "abi: baseline written to abi/libctorch.abi ($(grep -c '<elf-symbol name=' "$baseline") symbols); commit it"
    ;;
  check)
    [ -f "$baseline" ] || { echo "abi: no baseline $baseline (abi/check.sh --update LIB)"; exit 1; }
    dump "$lib" "$tmp/current.abi"
    if compare "$baseline" "$tmp/current.abi"; then
      added=$(abidiff "$baseline" "$tmp/current.abi" 2>/dev/null | sed -n 's/.*\([0-9][0-9]*\) Added function.*/\1/p' | head -1)
      echo "abi: no function or type removed or changed since the baseline (${added:-0} added)"
    else
      echo "abi: FAILED: the ABI of $lib removes or changes what abi/libctorch.abi has."
      echo "abi: an incompatible change needs a new name (_v2); if the change is intended"
      echo "abi: (a new release), run abi/check.sh --update $lib and commit the baseline."
      exit 1
    fi
    ;;
  selftest)
    dump "$lib" "$tmp/base.abi"
    compare "$tmp/base.abi" "$tmp/base.abi" >/dev/null || { echo "abi self-test: identical dumps differ"; exit 1; }
    # A removed function: drop ct_version's symbol and declaration.
    python3 - "$tmp/base.abi" "$tmp/removed.abi" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
s, n1 = re.subn(r"\s*<elf-symbol name='ct_version'[^>]*/>", "", s)
s, n2 = re.subn(r"\s*<function-decl name='ct_version'.*?</function-decl>", "", s, flags=re.S)
assert n1 == 1 and n2 == 1, (n1, n2)
open(sys.argv[2], "w").write(s)
PY
    if compare "$tmp/base.abi" "$tmp/removed.abi" >/dev/null ||
       ! grep -q "ct_version" "$tmp/report"; then
      echo "abi self-test: FAILED: a removed function was not caught"; exit 1
    fi
    # The same difference the other way is an added function: passes.
    compare "$tmp/removed.abi" "$tmp/base.abi" >/dev/null || {
      echo "abi self-test: FAILED: an added function was refused"; cat "$tmp/report"; exit 1; }
    # A changed struct: DLDevice's device_id becomes 64-bit.
    python3 - "$tmp/base.abi" "$tmp/changed.abi" <<'PY'
import re, sys
s = open(sys.argv[1]).read()
m = re.search(r"<class-decl name='DLDevice'.*?</class-decl>", s, re.S)
assert m, "DLDevice not in the dump"
i64 = re.search(r"<typedef-decl name='int64_t' type-id='([^']+)'", s)
body = re.sub(r"(<var-decl name='device_id' type-id=')[^']+(')", r"\g<1>%s\2" % i64.group(1), m.group(0))
assert body != m.group(0)
open(sys.argv[2], "w").write(s[:m.start()] + body + s[m.end():])
PY
    if compare "$tmp/base.abi" "$tmp/changed.abi" >/dev/null ||
       ! grep -q "DLDevice" "$tmp/report"; then
      echo "abi self-test: FAILED: a changed struct was not caught"; exit 1
    fi
    echo "abi self-test: a removed function and a changed struct fail, an added function passes"
    ;;
esac
