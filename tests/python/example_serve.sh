#!/usr/bin/env bash
# An example of share/examples/python run as separate plain processes (no mpirun), as its
# docstring shows: a standalone `tensorhub serve`, one trainer and two rollouts over ucx; every
# process must say ok. ROLLOUT0_ARGS / ROLLOUT1_ARGS: extra arguments of each rollout (one string,
# split on spaces), e.g. "--loader map".
# Usage: example_serve.sh TENSORHUB_BIN PYTHON EXAMPLE STEPS [ROLLOUT0_ARGS [ROLLOUT1_ARGS]]
set -euo pipefail
bin=$1 python=$2 example=$3 steps=$4
read -r -a extra0 <<<"${5:-}"
read -r -a extra1 <<<"${6:-}"
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
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 0 "${extra0[@]}" & pids+=($!)
"$python" "$example" rollout --hub "$TENSORHUB_HUB" --steps "$steps" --id 1 "${extra1[@]}" & pids+=($!)
rc=0
for p in "${pids[@]}"; do wait "$p" || rc=1; done
pids=()
((rc == 0)) || { echo "example_serve: a process of $(basename "$example") failed"; exit 1; }
echo "example_serve: $(basename "$example"): trainer and 2 rollouts ok"
