#!/usr/bin/env bash
# The edit-build-test loop: rebuild some targets and run the tests that run them.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

usage() {
  cat <<'TXT'
Usage: scripts/dev.sh TARGET [TARGET...] [-- CTEST_ARGS...]

Builds the given CMake targets in build/ (configured like scripts/test.sh and CI's main
lane when it is not configured yet: -O2 -DNDEBUG, warnings as errors, tests on, so the
compiler cache is shared with CI), then runs every ctest test whose command or
environment names one of the targets' executables, with --output-on-failure. A library
target (tensorhub_coord, ...) is built, and its tests are the ones of the test targets
you name with it. Prints the build and test times.

Which test target covers which folder: README "Developing".

Environment:
  BUILD_DIR   build directory (default build/)
  JOBS        parallel build jobs (default: nproc)

Examples:
  scripts/dev.sh test_coord                       # lib/coord's unit tests
  scripts/dev.sh test_transfer -- -V              # verbose
  scripts/dev.sh tensorhub_cli -- -L cli          # the CLI and its tests by label
  scripts/dev.sh test_hub_lifecycle               # an mpi test (mpirun -np 4)
TXT
}

case "${1:-}" in
  "" | -h | --help)
    usage
    [[ -n "${1:-}" ]] || exit 2
    exit 0
    ;;
esac

targets=()
while (($# > 0)) && [[ "$1" != -- ]]; do
  targets+=("$1")
  shift
done
(($# == 0)) || shift
ctest_args=("$@")

build_dir=${BUILD_DIR:-build}
[[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"
jobs=${JOBS:-$(nproc)}

start=$SECONDS
if [[ ! -f "$build_dir/build.ninja" ]]; then
  BUILD_DIR=$build_dir BUILD_FLAGS=${BUILD_FLAGS:--O2 -DNDEBUG} BUILD_TARGETS="${targets[*]}" \
    "$ROOT/scripts/build.sh" -DTENSORHUB_WERROR=ON -DTENSORHUB_BUILD_TESTS=ON -DTENSORHUB_SANITIZE=
else
  cmake --build "$build_dir" -j "$jobs" --target "${targets[@]}"
fi
built=$((SECONDS - start))

# Tests whose command line or environment names a target's executable: `ctest -N -V` prints
# "N: Test command: ..." and "N: ENV=..." lines, then "  Test #N: name".
pattern=$(printf '%s|' "${targets[@]}")
pattern="/(${pattern%|})( |$|\")"
mapfile -t tests < <(ctest --test-dir "$build_dir" -N -V 2>/dev/null | awk -v re="$pattern" '
  /^[0-9]+: / { n = $1; sub(":", "", n); if ($0 ~ re) hit[n] = 1; next }
  /^ *Test +#[0-9]+: / { id = $2; sub("#", "", id); sub(":", "", id); if (hit[id]) print $3 }')

export OMPI_MCA_rmaps_base_oversubscribe=1
if ((EUID == 0)); then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
rc=0
test_start=$SECONDS
if ((${#tests[@]} > 0)); then
  regex="^($(printf '%s|' "${tests[@]}" | sed 's/|$//'))\$"
  echo "+ ctest -R '$regex' ${ctest_args[*]}" >&2
  ctest --test-dir "$build_dir" --output-on-failure -R "$regex" "${ctest_args[@]}" || rc=$?
elif ((${#ctest_args[@]} > 0)); then
  echo "+ ctest ${ctest_args[*]}" >&2
  ctest --test-dir "$build_dir" --output-on-failure "${ctest_args[@]}" || rc=$?
else
  echo "dev.sh: no test runs ${targets[*]} (name a test target, or pass ctest arguments after --)" >&2
fi
echo "dev.sh: build ${built} s, tests $((SECONDS - test_start)) s, total $((SECONDS - start)) s" >&2
exit "$rc"
