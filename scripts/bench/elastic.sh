#!/usr/bin/env bash
# bench elastic on an emulated cluster: trainer + N readers that join one by one, one per host;
# each newcomer's time to the latest version and the bytes it read from the trainer.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'TXT'
Usage: scripts/bench/elastic.sh [--readers N] [--delta D] [--period T] [--versions V]
                                [common options] [-- BENCH ARGS]
N+1 hosts at --rate (default 100 Mbit/s): trainer on h0, readers on h1..hN (default N=6); reader k
first pulls (k-1)*D s after reader 1 (D=4), a version every T s (9), S = --size (32MiB).
Writes --out (default share/results/bench-elastic.json).
Example: sudo scripts/bench/elastic.sh --readers 4 --delta 5
TXT
  bench_common_usage
}

bench_init elastic
BENCH_SIZE=32MiB
BENCH_READERS=6
bench_option --delta 4
bench_option --period 9
bench_option --versions 0
bench_parse "$@"
bench_single_run
