#!/usr/bin/env bash
# Every benchmark scenario on the emulated cluster with its defaults, then the plots:
# share/results/bench-<scenario>.json, .txt (the run's output) and .png.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'TXT'
Usage: scripts/bench/run-all.sh [--only "fanout stall elastic crossdc"] [--dir DIR] [common options]
Runs scripts/bench/{fanout,stall,elastic,crossdc}.sh one after the other (about 10-15 minutes with
the defaults), each writing DIR/bench-<scenario>.json (default DIR share/results) and its output
to DIR/bench-<scenario>.txt, then scripts/bench/plot.py draws DIR/bench-<scenario>.png.
Common options (--rate, --bin, --prefix, ...) are passed to every scenario.
Needs root; plots need python3-matplotlib.
Example: sudo scripts/bench/run-all.sh --only "fanout elastic"
TXT
}

only="fanout stall elastic crossdc"
dir=$BENCH_ROOT/share/results
pass=()
while [[ $# -gt 0 ]]; do
  case $1 in
    -h | --help) usage; exit 0 ;;
    --only) only=${2:?--only needs a list}; shift 2 ;;
    --dir) dir=${2:?--dir needs a directory}; shift 2 ;;
    *) pass+=("$1"); shift ;;
  esac
done
mkdir -p "$dir"
for s in $only; do
  [[ -x $BENCH_ROOT/scripts/bench/$s.sh ]] || { echo "run-all.sh: unknown scenario '$s'" >&2; exit 2; }
done
start=$SECONDS
for s in $only; do
  echo "===== $s ($(date -u +%H:%M:%S))"
  "$BENCH_ROOT/scripts/bench/$s.sh" --out "$dir/bench-$s.json" "${pass[@]}" 2>&1 | tee "$dir/bench-$s.txt"
done
# shellcheck disable=SC2086 # one scenario per word
"$(bench_python)" "$BENCH_ROOT/scripts/bench/plot.py" --dir "$dir" $only
echo "run-all: done in $((SECONDS - start)) s; results in $dir"
