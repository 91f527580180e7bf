#!/bin/sh
# Fails if libctorch.so exports any dynamic symbol that is not ct_*.
set -eu
lib="$1"
bad=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -v '^ct_' | grep -v '^CTORCH_' || true)
count=$(nm -D --defined-only "$lib" | awk '{print $NF}' | grep -c '^ct_' || true)
if [ -n "$bad" ]; then
  echo "non-ct_ symbols exported by $lib:"; echo "$bad"; exit 1
fi
echo "$count ct_* symbols exported, nothing else"
[ "$count" -gt 100 ]
