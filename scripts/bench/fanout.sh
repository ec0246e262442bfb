#!/usr/bin/env bash
# bench fanout on an emulated cluster: one trainer, N readers (one per host), TensorHub vs star
# vs MPI_Bcast vs a storage rank, for each N of --readers. Hosts: trainer, N readers, storage.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'TXT'
Usage: scripts/bench/fanout.sh [--readers "2 4 8"] [--methods tensorhub,star,bcast,store] [--iters 1]
                               [common options] [-- BENCH ARGS]
One cluster of max(N)+2 hosts at --rate (default 100 Mbit/s); for each N: `tensorhub bench fanout`
on N+2 ranks (--map-by node: trainer on h0, readers h1..hN, storage h(N+1)), S = --size (64MiB).
Writes --out (default share/results/bench-fanout.json: {"runs": [one bench result per N]}).
Example: sudo scripts/bench/fanout.sh --readers "2 4" --size 32MiB
TXT
  bench_common_usage
}

bench_init fanout
BENCH_SIZE=64MiB
BENCH_READERS="2 4 8"
bench_option --methods tensorhub,star,bcast,store
bench_option --iters 1
bench_parse "$@"
max=0
for n in $BENCH_READERS; do
  [[ $n =~ ^[1-9][0-9]*$ ]] || bench_die "--readers must list positive numbers (got '$n')"
  ((n > max)) && max=$n
done
((max > 0)) || bench_die "--readers lists no number"
extra=0
[[ ${BENCH_OPTS[--methods]} == *store* ]] && extra=1

tmp=$(mktemp -d)
bench_cluster_up $((max + 1 + extra))
trap 'bench_cluster_down; rm -rf "$tmp"' EXIT
files=()
for n in $BENCH_READERS; do
  echo "== fanout: $n readers, S = $BENCH_SIZE, R = $BENCH_RATE Mbit/s"
  bench_run $((n + 1 + extra)) fanout --json "$tmp/n$n.json"
  files+=("$tmp/n$n.json")
done
mkdir -p "$(dirname "$BENCH_OUT")"
python3 - "$BENCH_OUT" "$BENCH_SCRIPT_CMD" "${files[@]}" <<'PY'
import json, sys
out, cmd, files = sys.argv[1], sys.argv[2], sys.argv[3:]
json.dump({"benchmark": "fanout", "script": cmd, "runs": [json.load(open(f)) for f in files]},
          open(out, "w"), indent=2)
PY
echo "wrote $BENCH_OUT (reproduce: $BENCH_SCRIPT_CMD)"
