#!/usr/bin/env bash
# Build TensorHub and run 'tensorhub demo' on NP local ranks.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT
# shellcheck source=SCRIPTDIR/lib/mpirun.sh
source "$ROOT/scripts/lib/mpirun.sh"

usage() {
  cat <<'TXT'
Usage: scripts/demo.sh [DEMO_ARGS...]
       scripts/demo.sh -- --help        (pass --help to the demo itself)

Installs missing packages, builds the tensorhub tool (scripts/build.sh), then runs
  mpirun -n $NP --oversubscribe --mca osc ucx [--allow-run-as-root] \
    build/apps/tensorhub/tensorhub demo DEMO_ARGS...
(scripts/lib/mpirun.sh builds that line). All arguments go to the demo; its own
flags are listed by 'scripts/demo.sh -- --help' or, once built,
'build/apps/tensorhub/tensorhub demo --help'.

Environment:
  NP             number of ranks (default 6)
  BUILD_DIR      build directory (default build/), as for scripts/build.sh
  BUILD_TARGETS  what to build first (default tensorhub_cli, the tool's CMake target)
  MPIRUN, TENSORHUB_MPIRUN_FLAGS   launcher and extra launcher flags (scripts/lib/mpirun.sh)

Examples:
  scripts/demo.sh
  scripts/demo.sh --prefetch      (rollouts pull_async into a spare buffer set, then swap)
  NP=4 scripts/demo.sh -- --help
  TENSORHUB_MPIRUN_FLAGS="--mca pml ucx" NP=8 scripts/demo.sh
TXT
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --) shift ;;
esac

np=${NP:-6}
for arg in "$@"; do
  # The demo's help needs one rank only (every rank would print it).
  [[ "$arg" == -h || "$arg" == --help ]] && np=1
done
if ! [[ "$np" =~ ^[1-9][0-9]*$ ]]; then
  echo "demo.sh: NP must be a positive integer (got '$np')" >&2
  exit 2
fi
build_dir=${BUILD_DIR:-build}
[[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"

BUILD_DIR=$build_dir BUILD_TARGETS=${BUILD_TARGETS:-tensorhub_cli} "$ROOT/scripts/build.sh"

exe="$build_dir/apps/tensorhub/tensorhub"
if [[ ! -x "$exe" ]]; then
  echo "demo.sh: $exe was not built" >&2
  exit 1
fi
th_mpirun "$np" "$exe" demo "$@"
