#!/usr/bin/env bash
# A job joins a standalone coordinator (`tensorhub serve`) through TENSORHUB_HUB instead of
# starting one on rank 0. Usage: standalone_coordinator.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
log=$(mktemp)
# shellcheck source=serve_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
trap 'stop_serve; rm -f "$log" "$log".token*' EXIT
start_serve "$bin" "$log"
port=${TENSORHUB_HUB##*:}
out=$("$mpiexec" -n 3 "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE "$bin" demo --trainers 1 --size 8MiB --tensors 12 --versions 2 2>&1)
echo "$out"
grep -q "coordinator 127.0.0.1:$port" <<<"$out" || { echo "the job did not use the standalone coordinator"; exit 1; }
grep -q "every pull verified" <<<"$out"
stop_serve
grep -q "shutting down" "$log" || { echo "serve did not shut down on SIGTERM:"; cat "$log"; exit 1; }
echo "standalone coordinator: ok"
