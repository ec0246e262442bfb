#!/usr/bin/env bash
# share/examples/python/rl_loop.py as separate plain processes (no mpirun): a standalone
# `tensorhub serve`, one trainer and two rollouts over ucx; every process must say ok.
# Usage: rl_loop_serve.sh TENSORHUB_BIN PYTHON EXAMPLE STEPS
set -euo pipefail
bin=$1 python=$2 example=$3 steps=$4
log=$(mktemp)
pids=()
# shellcheck source=../cli/serve_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/../cli/serve_lib.sh"
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  stop_serve
  rm -f "$log"
}
trap cleanup EXIT
start_serve "$bin" "$log"
"$python" "$example" trainer --hub "$TENSORHUB_HUB" --steps "$steps" --rollouts 2 & pids+=($!)
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 0 & pids+=($!)
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 1 & pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
pids=()
((rc == 0)) || { echo "rl_loop_serve: a process failed"; exit 1; }
echo "rl_loop_serve: trainer and 2 rollouts ok"
