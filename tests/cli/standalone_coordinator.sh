#!/usr/bin/env bash
# A job joins a standalone coordinator (`tensorhub serve`) through TENSORHUB_HUB instead of
# starting one on rank 0. Usage: standalone_coordinator.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
log=$(mktemp)
trap 'kill "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true; rm -f "$log"' EXIT
"$bin" serve --listen 127.0.0.1:0 >"$log" 2>&1 &
pid=$!
for _ in $(seq 1 100); do
  grep -q "listening on" "$log" && break
  sleep 0.1
done
port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$log")
[[ -n "$port" ]] || { echo "serve did not start:"; cat "$log"; exit 1; }
export TENSORHUB_HUB=127.0.0.1:$port
out=$("$mpiexec" -n 3 "$@" -x TENSORHUB_HUB "$bin" demo --trainers 1 --size 8MiB --tensors 12 --versions 2 2>&1)
echo "$out"
grep -q "coordinator 127.0.0.1:$port" <<<"$out" || { echo "the job did not use the standalone coordinator"; exit 1; }
grep -q "every pull verified" <<<"$out"
kill -TERM "$pid"
wait "$pid" || true
grep -q "shutting down" "$log" || { echo "serve did not shut down on SIGTERM:"; cat "$log"; exit 1; }
echo "standalone coordinator: ok"
