#!/usr/bin/env bash
# share/examples/python/hf_rollout.py as its docstring runs it: a standalone `tensorhub serve`,
# one trainer and two rollouts (one through the layout map, one through iter_weights) over ucx;
# every process must say ok.
# Usage: hf_rollout_serve.sh TENSORHUB_BIN PYTHON EXAMPLE STEPS
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
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 0 --loader map & pids+=($!)
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 1 --loader stream & pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
pids=()
((rc == 0)) || { echo "hf_rollout_serve: a process failed"; exit 1; }
echo "hf_rollout_serve: trainer and 2 rollouts (map, stream) ok"
