#!/usr/bin/env bash
# Bootstrap, build with warnings as errors, and run the test suite with CTest.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

usage() {
  cat <<'TXT'
Usage: scripts/test.sh [CTEST_ARGS...]

Installs missing Debian packages (scripts/bootstrap.sh: the build's and what the
tests run, such as Slurm and munge), configures with -DTENSORHUB_WERROR=ON and
-DTENSORHUB_BUILD_TESTS=ON, builds (scripts/build.sh), then runs
'ctest --output-on-failure CTEST_ARGS...'. The exit status is ctest's.
This is the command CI runs (.ci/run).

Labels: 'unit' (no MPI) and 'mpi' (run under mpirun); select with -L / -LE.

Environment:
  TENSORHUB_SANITIZE=address|undefined|address,undefined|thread
                 sanitizer build in build-<sanitizer>/ (build-asan-ubsan/ for the pair;
                 unless BUILD_DIR is set)
  BUILD_DIR, BUILD_TYPE, BUILD_FLAGS, BUILD_TARGETS, JOBS, TENSORHUB_CMAKE_ARGS
                 as for scripts/build.sh
  CTEST_PARALLEL_LEVEL   run that many tests at once (ctest's own variable)
  TENSORHUB_NO_SKIPS=1   fail (exit 1) when a selected test is skipped or not run, or when
                 no test is selected (scripts/ci/ctest-no-skips.sh; .ci/run sets it)
Open MPI settings exported for the tests: OMPI_MCA_rmaps_base_oversubscribe=1, and
OMPI_ALLOW_RUN_AS_ROOT=1 / OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 when run as root.
Sanitizer builds default ASAN_OPTIONS=detect_leaks=0 (Open MPI's own allocations
would fail every MPI test) and UBSAN_OPTIONS=print_stacktrace=1; set them to override.

Examples:
  scripts/test.sh                     # everything
  scripts/test.sh -L unit             # unit tests only
  scripts/test.sh -R planner -V       # tests matching 'planner', verbose
  TENSORHUB_SANITIZE=address scripts/test.sh -L unit
TXT
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
esac

sanitize=${TENSORHUB_SANITIZE:-}
case "$sanitize" in
  "") build_dir=${BUILD_DIR:-build} ;;
  address | undefined | thread) build_dir=${BUILD_DIR:-build-$sanitize} ;;
  address,undefined) build_dir=${BUILD_DIR:-build-asan-ubsan} ;;
  *)
    echo "test.sh: TENSORHUB_SANITIZE must be address, undefined, address,undefined or thread (got '$sanitize')" >&2
    exit 2
    ;;
esac
[[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"

"$ROOT/scripts/bootstrap.sh" # the tests' packages too (build.sh installs the build's only)
BUILD_DIR=$build_dir "$ROOT/scripts/build.sh" \
  -DTENSORHUB_WERROR=ON -DTENSORHUB_BUILD_TESTS=ON -DTENSORHUB_SANITIZE="$sanitize"

export OMPI_MCA_rmaps_base_oversubscribe=1
if ((EUID == 0)); then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
if [[ -n "$sanitize" ]]; then
  export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=0}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1}
fi

echo "+ ctest --test-dir $build_dir --output-on-failure $*" >&2
if [[ "${TENSORHUB_NO_SKIPS:-0}" != 1 ]]; then
  exec ctest --test-dir "$build_dir" --output-on-failure "$@"
fi
log=$(mktemp "${TMPDIR:-/tmp}/tensorhub-ctest.XXXXXX.log")
rc=0
ctest --test-dir "$build_dir" --output-on-failure --no-tests=error "$@" 2>&1 | tee "$log" || rc=${PIPESTATUS[0]}
skips=0
"$ROOT/scripts/ci/ctest-no-skips.sh" "$log" || skips=1
rm -f "$log"
((rc != 0)) || rc=$skips
exit "$rc"
