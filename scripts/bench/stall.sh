#!/usr/bin/env bash
# bench stall on an emulated cluster: trainer + N rollouts, one per host; per-rollout stall for
# TensorHub (pull the latest after each generation), TensorHub prefetch (pull_async into a spare
# buffer set while generating, swap at the step boundary) and an MPI_Bcast of every version.
set -euo pipefail
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

usage() {
  cat <<'TXT'
Usage: scripts/bench/stall.sh [--readers N] [--period T] [--generate G] [--jitter J] [--versions V]
                              [--modes tensorhub,bcast,prefetch] [--seed S] [common options] [-- BENCH ARGS]
N+1 hosts at --rate (default 100 Mbit/s): trainer on h0, rollouts on h1..hN (default N=4),
S = --size (32MiB), a version every T s (6), generation G s (4) +- J (0.25), V versions (5).
Writes --out (default share/results/bench-stall.json).
Example: sudo scripts/bench/stall.sh --readers 3 --versions 4
TXT
  bench_common_usage
}

bench_init stall
BENCH_SIZE=32MiB
BENCH_READERS=4
bench_option --period 6
bench_option --generate 4
bench_option --jitter 0.25
bench_option --versions 5
bench_option --modes tensorhub,bcast,prefetch
bench_option --seed 1
bench_parse "$@"
bench_single_run
