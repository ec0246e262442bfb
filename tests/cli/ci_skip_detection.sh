#!/usr/bin/env bash
# scripts/ci/ctest-no-skips.sh (what .ci/run uses to fail a lane with a skipped test) on real
# ctest output: a throw-away CMake project whose tests pass, skip (SKIP_RETURN_CODE and
# SKIP_REGULAR_EXPRESSION), are disabled, or have no executable. Passing tests alone: exit 0;
# each kind of test that did not run: exit 1 naming it; a run that selects no test: exit 1.
# Usage: ci_skip_detection.sh SOURCE_DIR
set -euo pipefail
src=${1:?usage: ci_skip_detection.sh SOURCE_DIR}
check=$src/scripts/ci/ctest-no-skips.sh
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.16)
project(skips NONE)
enable_testing()
add_test(NAME passes COMMAND true)
add_test(NAME passes_too COMMAND true)
add_test(NAME skips_by_code COMMAND sh -c "exit 77")
set_tests_properties(skips_by_code PROPERTIES SKIP_RETURN_CODE 77)
add_test(NAME skips_by_regex COMMAND echo "SKIPPED: no tool")
set_tests_properties(skips_by_regex PROPERTIES SKIP_REGULAR_EXPRESSION "SKIPPED:")
add_test(NAME disabled COMMAND true)
set_tests_properties(disabled PROPERTIES DISABLED TRUE)
add_test(NAME no_executable COMMAND /nonexistent/tensorhub-test-binary)
CMAKE
cmake -S "$dir" -B "$dir/b" >/dev/null
run() { ctest --test-dir "$dir/b" "$@" >"$dir/log" 2>&1 || true; }
expect() { # expected exit, test name that must be listed (or -)
  local rc=0
  "$check" "$dir/log" 2>"$dir/err" || rc=$?
  if [[ $rc -ne $1 ]] || { [[ $2 != - ]] && ! grep -q "^  $2 (" "$dir/err"; }; then
    echo "FAIL: expected exit $1 naming '$2', got $rc:"
    cat "$dir/err" "$dir/log"
    exit 1
  fi
  echo "ok: exit $rc ${2/#-/}"
}
run -R '^passes'
expect 0 -
for t in skips_by_code skips_by_regex disabled no_executable; do
  run -R "^(passes|$t)\$"
  expect 1 "$t"
done
run -R no_such_test
expect 1 -
grep -q "no test ran" "$dir/err"
echo "ci skip detection: ok"
