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

step "publish 3 versions (publish_async) : follow them with 2 readers"
out=$("$mpiexec" "$@" -n 2 "$bin" publish --async --synthetic 8MiB --tensors 10 --versions 3 --interval 0.5 \
  : -n 2 "$bin" pull --follow 3 --check-pattern --progress --json "$dir/pull.json" 2>&1)
echo "$out"
# --progress draws the line without a terminal (on rank 0 of the pull only).
grep -aq "pulling 'policy' .* GB/s  ETA" <<<"$out" || { echo "FAIL: no progress line with --progress"; exit 1; }
grep -q "published 'policy' v3: .* publish_async returned in" <<<"$out"
grep -q "every pull verified: the checksum of every chunk (the manifest's algorithm) and the synthetic pattern" <<<"$out"
# Counts are JSON integers (not 3.0), stage timings present.
python3 -c "
import json, sys
d = json.load(open(sys.argv[1]))
for r in d['readers']:
    assert r['last_version'] == 3, d
    for k in ('rank', 'pulls', 'last_version', 'bytes', 'origin_bytes', 'relay_bytes', 'file_bytes'):
        assert isinstance(r[k], int), (k, r)
    assert set(r['stages']) == {'resolve_s', 'no_source_s', 'verify_s', 'transfer_s'}, r
" "$dir/pull.json"

step "grouped pull into a snapshot"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --start-version 7 \
  : -n 2 "$bin" pull --group --check-pattern --out "$dir/policy-v7.h5" 2>&1)
echo "$out"
grep -q "wrote 'policy' v7 to $dir/policy-v7.h5" <<<"$out"
"$bin" snapshot verify "$dir/policy-v7.h5" | tee /dev/stderr | grep -q "all checksums match"
"$bin" snapshot inspect "$dir/policy-v7.h5" | tee /dev/stderr | grep -q "'policy' v7"
# 64-bit checksums as 16 hex digits in JSON.
"$bin" snapshot inspect --json "$dir/policy-v7.h5" | python3 -c "
import json, re, sys
m = json.load(sys.stdin)['manifest']
sums = [c for t in m['tensors'] for c in t['checksums']]
assert sums and all(re.fullmatch('[0-9a-f]{16}', c) for c in sums), sums[:3]
"

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
