#!/usr/bin/env bash
# ctest driver for the h5py / h5dump check: writes a sample snapshot with snapshot_tool, then
# runs check_h5py.py on it with the first Python that has h5py (Debian's /usr/bin/python3 has
# python3-h5py even when another python3 comes first in PATH). Exit 77 (skip) if none has it.
#   run_check.sh SNAPSHOT_TOOL CHECK_SCRIPT
set -euo pipefail
tool=$1
script=$2

python=""
for candidate in "${TENSORHUB_PYTHON:-}" /usr/bin/python3 python3; do
  [[ -n "$candidate" ]] || continue
  if command -v "$candidate" >/dev/null 2>&1 && "$candidate" -c 'import h5py, numpy' >/dev/null 2>&1; then
    python=$candidate
    break
  fi
done
if [[ -z "$python" ]]; then
  echo "SKIP: no python3 with h5py and numpy (install python3-h5py python3-numpy)"
  exit 77
fi

dir=$(mktemp -d "${TMPDIR:-/tmp}/tensorhub-h5py-XXXXXX")
trap 'rm -rf "$dir"' EXIT
"$tool" write-sample "$dir/sample.h5"
"$tool" inspect "$dir/sample.h5"
"$python" "$script" "$dir/sample.h5"
