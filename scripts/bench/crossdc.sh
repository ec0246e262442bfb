#!/usr/bin/env bash
# bench crossdc on an emulated cluster of two datacenters: trainer in DC 0, readers in both;
# bytes over the WAN (tc counters of the router's WAN link) per version and time, TensorHub vs
# star vs MPI_Bcast. The DC labels reach the ranks as TENSORHUB_DC (set per host by netsim).
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'TXT'
Usage: scripts/bench/crossdc.sh [--readers N] [--wan-rate MBIT] [--versions V]
                                [--methods tensorhub,star,bcast] [common options] [-- BENCH ARGS]
N+1 hosts at --rate (default 100 Mbit/s) in two DCs joined by a WAN of --wan-rate (40 Mbit/s):
DC 0 = h0..h(ceil((N+1)/2)-1) with the trainer on h0, DC 1 = the rest (default N=5: 2 readers in
DC 0, 3 in DC 1). S = --size (32MiB), V versions per method (2).
Writes --out (default share/results/bench-crossdc.json); checks that every rank's TENSORHUB_DC
label matches its host's DC.
Example: sudo scripts/bench/crossdc.sh --readers 3 --wan-rate 50
TXT
  bench_common_usage
}

bench_init crossdc
BENCH_SIZE=32MiB
BENCH_READERS=5
wan=40
bench_option --versions 2
bench_option --methods tensorhub,star,bcast
args=()
while [[ $# -gt 0 ]]; do
  if [[ $1 == --wan-rate ]]; then
    wan=${2:?--wan-rate needs Mbit/s}
    bench_note "$1" "$2"
    shift 2
  else
    args+=("$1")
    shift
  fi
done
bench_parse "${args[@]}"
[[ $wan =~ ^[0-9]+$ ]] || bench_die "--wan-rate must be whole Mbit/s"
bench_single_run --dcs 2 --wan-rate "${wan}mbit"
# The labels the ranks saw must be their hosts' DCs (hosts.tsv: name, address, dc).
state=${TH_NETSIM_STATE:-/tmp/$BENCH_PREFIX-netsim}
python3 - "$BENCH_OUT" "$state/hosts.tsv" "$wan" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
dc = {l.split()[0]: "dc" + l.split()[2] for l in open(sys.argv[2]) if l.strip()}
bad = [r for r in d["ranks"] if dc.get(r["host"]) != r["dc"]]
if bad:
    sys.exit(f"crossdc: TENSORHUB_DC labels do not match the hosts' DCs: {bad}")
d["wan_mbit"] = float(sys.argv[3])
json.dump(d, open(sys.argv[1], "w"), indent=2)
print("TENSORHUB_DC labels: every rank's label matches its host's DC")
PY
