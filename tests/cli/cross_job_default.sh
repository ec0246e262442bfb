#!/usr/bin/env bash
# Issue 14's cross-job goal with DEFAULT transport options: a standalone `tensorhub serve`, a
# publishing job (`mpirun -n 1 tensorhub publish --hold`) and a separate pulling job
# (`mpirun -n 2 tensorhub pull`). The publisher's memory is in its mpi_rma pool; the other job
# reaches it over the ucx path every hub offers by default. (Before: exit 3, "no live holder".)
# Usage: cross_job_default.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
log=$(mktemp)
publog=$(mktemp)
pub_pid=
# shellcheck source=serve_lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/serve_lib.sh"
cleanup() {
  [[ -z "$pub_pid" ]] || kill -TERM "$pub_pid" 2>/dev/null || true
  [[ -z "$pub_pid" ]] || wait "$pub_pid" 2>/dev/null || true
  stop_serve
  rm -f "$log" "$log".token* "$publog"
}
trap cleanup EXIT
start_serve "$bin" "$log"
"$mpiexec" -n 1 "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE "$bin" publish --synthetic 8MiB --tensors 6 \
  --hold 60 >"$publog" 2>&1 &
pub_pid=$!
set +e
out=$("$mpiexec" -n 2 "$@" -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE "$bin" pull --check-pattern --wait 60 2>&1)
rc=$?
set -e
echo "$out"
if ((rc != 0)); then
  echo "the pulling job failed (exit $rc); publisher:"
  cat "$publog"
  "$bin" status --holders --workers || true
  exit 1
fi
grep -q "every pull verified" <<<"$out" || { echo "the pull was not verified"; exit 1; }
st=$("$bin" status --workers)
echo "$st"
grep -q "mpi_rma+ucx" <<<"$st" || { echo "status does not show the workers' data paths"; exit 1; }
echo "cross-job pull with default options: ok"
