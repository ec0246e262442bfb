#!/usr/bin/env bash
# `status` and `recover` against a standalone coordinator, and retention to snapshots:
#  1. status of an empty hub; a holder shows up while a job publishes;
#  2. a retained version whose publishers leave is offloaded to --snapshot-dir and stays
#     readable from the file; a later job pulls it from there;
#  3. a retained version left without a snapshot dir is LOST; `recover` re-seeds it from a
#     snapshot written earlier by `pull --out` (exit 3 before, 0 after);
#  4. a fresh coordinator knows nothing; `recover --seed` registers the snapshots (cold start).
# Usage: status_recover.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
dir=$(mktemp -d)
# shellcheck source=serve_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
trap 'stop_serve; rm -rf "$dir"' EXIT
step() { echo "+ $*" >&2; }
run() { "$mpiexec" "$@" 2>&1; }
snaps=$dir/snaps

start_serve "$bin" "$dir/serve.log"
step "status of an empty hub"
"$bin" status | tee /dev/stderr | grep -q "no models"

step "a publisher shows up in status while its job runs"
run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 1 "$bin" publish --synthetic 4MiB --tensors 6 --hold 8 >"$dir/job1.log" &
job=$!
seen=0
for _ in $(seq 1 80); do
  if "$bin" status --json 2>/dev/null | python3 -c '
import json,sys
d=json.load(sys.stdin)
v=[v for m in d["models"] if m["model"]=="policy" for v in m["versions"] if v["version"]==1]
sys.exit(0 if v and v[0]["state"]=="readable" and v[0]["holder_list"] and v[0]["holder_list"][0]["origin"] else 1)'; then
    seen=1
    break
  fi
  sleep 0.1
done
"$bin" status --holders | tee /dev/stderr | grep -q publisher
wait "$job" || { cat "$dir/job1.log"; exit 1; }
[[ $seen == 1 ]] || { echo "FAIL: status never showed v1 held by its publisher"; exit 1; }

step "retained version offloaded to --snapshot-dir when its publishers leave"
run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 2 "$bin" publish --synthetic 4MiB --tensors 6 --start-version 5 --retain \
  --snapshot-dir "$snaps"
[[ -f "$snaps/policy/v5.h5" ]] || { echo "FAIL: no $snaps/policy/v5.h5"; exit 1; }
"$bin" status | tee /dev/stderr | grep -q "readable (file)"
out=$(run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 1 "$bin" pull --version 5 --check-pattern)
echo "$out"
grep -q "pulled 'policy' v5: .*snapshot file 4" <<<"$out"

step "a retained version left without a snapshot dir is LOST; recover re-seeds it"
run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 1 "$bin" publish --synthetic 4MiB --tensors 6 --start-version 9 --retain \
  : -n 1 "$bin" pull --version 9 --group --out "$dir/v9.h5" || true
"$bin" status | tee /dev/stderr | grep -qE "policy +9 +LOST"
set +e
TENSORHUB_TOKEN_FILE=$TENSORHUB_TOKEN_FILE.operator "$bin" recover --snapshot-dir "$snaps"
rc=$?
set -e
[[ $rc -eq 3 ]] || { echo "FAIL: recover without a snapshot for v9 exited $rc, not 3"; exit 1; }
mv "$dir/v9.h5" "$snaps/policy/v9.h5"
TENSORHUB_TOKEN_FILE=$TENSORHUB_TOKEN_FILE.operator "$bin" recover --snapshot-dir "$snaps" | tee /dev/stderr | grep -q "attached"
out=$(run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 1 "$bin" pull --version 9 --check-pattern)
grep -q "pulled 'policy' v9" <<<"$out" || { echo "$out"; exit 1; }

step "cold start: a fresh coordinator, recover --seed"
stop_serve
start_serve "$bin" "$dir/serve.log"
"$bin" status | grep -q "no models"
TENSORHUB_TOKEN_FILE=$TENSORHUB_TOKEN_FILE.operator "$bin" recover --seed --snapshot-dir "$snaps" | tee /dev/stderr | grep -c attached | grep -q 2
out=$(run "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -n 1 "$bin" pull --check-pattern)
grep -q "pulled 'policy' v9" <<<"$out" || { echo "$out"; exit 1; }
echo "status/recover: ok"
