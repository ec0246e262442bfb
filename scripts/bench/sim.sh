#!/usr/bin/env bash
# The simulator's scenarios (tensorhub sim, lib/sim): (a) standalone fan-out and (c) cross-DC at
# N = 8 .. 1,024 rollout GPUs, (b) elastic joins at N = 256 and 1,024, and the netsim preset (scripts/bench/fanout.sh's emulated cluster)
# for the validation table. Writes share/results/sim/<preset>.{json,txt,png}.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)

usage() {
  cat <<'TXT'
Usage: scripts/bench/sim.sh [--bin PATH] [--out DIR] [--readers LIST] [--presets "standalone crossdc elastic netsim"]
  --bin      the tensorhub binary (default build/apps/tensorhub/tensorhub)
  --out      result folder (default share/results/sim)
  --readers  comma-separated N for standalone/crossdc (default 8,32,128,512,1024)
  --methods  methods for standalone/crossdc (default tensorhub,star,ring,store,ckpt; tree and
             tensorhub-chunk are slow at full size: tree has many rate levels, the per-chunk
             protocol is one pipe per chunk read, 255 s at N = 8 x 25,600 chunks)
The netsim preset runs twice: as is, and with --hop-latency-ms 75 (netsim-hop75.*: three
one-way crossings of a tc queue of up to 25 ms per relay hop).
No root, no network: the simulator runs in one process (minutes at N = 1,024 on 2 cores).
Example: scripts/bench/sim.sh --presets netsim
TXT
}

bin="$ROOT/build/apps/tensorhub/tensorhub"
out="$ROOT/share/results/sim"
readers="8,32,128,512,1024"
methods="tensorhub,star,ring,store,ckpt"
presets="standalone crossdc elastic netsim"
while (($#)); do
  case $1 in
    --bin) bin=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    --readers) readers=$2; shift 2 ;;
    --presets) presets=$2; shift 2 ;;
    --methods) methods=$2; shift 2 ;;
    -h | --help) usage; exit 0 ;;
    *) echo "sim.sh: unknown option '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[[ -x $bin ]] || { echo "sim.sh: no tensorhub binary at $bin (build it, or --bin)" >&2; exit 2; }
mkdir -p "$out"
for p in $presets; do
  args=(sim --preset "$p" --json "$out/$p.json")
  case $p in
    netsim) ;;
    elastic) args+=(--readers 256,1024) ;;  # joins are simulated for tensorhub only
    *) args+=(--readers "$readers" --methods "$methods") ;;
  esac
  echo "== $bin ${args[*]}"
  "$bin" "${args[@]}" | tee "$out/$p.txt"
  if [[ $p == netsim ]]; then
    echo "== $bin sim --preset netsim --hop-latency-ms 75 --json $out/netsim-hop75.json"
    "$bin" sim --preset netsim --hop-latency-ms 75 --json "$out/netsim-hop75.json" | tee "$out/netsim-hop75.txt"
  fi
done
python3 "$ROOT/scripts/bench/sim_plot.py" "$out"/*.json
