#!/usr/bin/env bash
# One MPMD job: a 2-rank publishing group streams 3 versions, 2 readers follow them, then a
# grouped pull writes the last version to an HDF5 snapshot, which `snapshot verify` and
# `snapshot inspect` check, and `snapshot load` publishes again for a reader.
# Usage: publish_pull.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
step() { echo "+ $*" >&2; }

step "publish 3 versions : follow them with 2 readers"
out=$("$mpiexec" "$@" -n 2 "$bin" publish --synthetic 8MiB --tensors 10 --versions 3 --interval 0.5 \
  : -n 2 "$bin" pull --follow 3 --check-pattern --json "$dir/pull.json" 2>&1)
echo "$out"
grep -q "published 'policy' v3" <<<"$out"
grep -q "every pull verified: xxHash64 of every chunk and the synthetic pattern" <<<"$out"
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(r['last_version']==3 for r in d['readers']), d" "$dir/pull.json"

step "grouped pull into a snapshot"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --start-version 7 \
  : -n 2 "$bin" pull --group --check-pattern --out "$dir/policy-v7.h5" 2>&1)
echo "$out"
grep -q "wrote 'policy' v7 to $dir/policy-v7.h5" <<<"$out"
"$bin" snapshot verify "$dir/policy-v7.h5" | tee /dev/stderr | grep -q "all checksums match"
"$bin" snapshot inspect "$dir/policy-v7.h5" | tee /dev/stderr | grep -q "'policy' v7"

step "snapshot save of v2 from its live holders while a reader keeps following the stream"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --versions 3 --interval 1.5 \
  : -n 1 "$bin" pull --follow 3 --check-pattern \
  : -n 2 "$bin" snapshot save --version 2 --out "$dir/saved-v2.h5" 2>&1)
echo "$out"
grep -q "wrote 'policy' v2 to $dir/saved-v2.h5" <<<"$out"
grep -q "rank 1 pulled 'policy' v3" <<<"$out"
"$bin" snapshot verify "$dir/saved-v2.h5" | grep -q "all checksums match"

step "snapshot load : pull"
out=$("$mpiexec" "$@" -n 1 "$bin" snapshot load "$dir/policy-v7.h5" : -n 1 "$bin" pull --check-pattern 2>&1)
echo "$out"
grep -q "pulled 'policy' v7" <<<"$out"
grep -q "every pull verified" <<<"$out"
echo "publish/pull/snapshot: ok"
