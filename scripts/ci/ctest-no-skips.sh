#!/usr/bin/env bash
# ctest-no-skips.sh LOG: reads the output of a ctest run and fails (exit 1, naming them) when a
# test was skipped (SKIP_RETURN_CODE / SKIP_REGULAR_EXPRESSION), not run (missing executable,
# DISABLED, failed fixture) or when no test ran at all. Exit 0 when every selected test ran.
# scripts/test.sh runs it with TENSORHUB_NO_SKIPS=1 (.ci/run sets that for its lanes: a lane
# leaves tests out only by label or name, -LE / -E / -R, never by skipping them).
# Example: ctest --test-dir build 2>&1 | tee ctest.log; scripts/ci/ctest-no-skips.sh ctest.log
set -euo pipefail
case "${1:-}" in
  -h | --help) sed -n '2,6p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
  "") echo "usage: ctest-no-skips.sh CTEST_LOG" >&2; exit 2 ;;
esac
log=$1
[[ -r "$log" ]] || { echo "ctest-no-skips.sh: cannot read '$log'" >&2; exit 2; }
# ctest's result lines: " 3/48 Test #12: name ......***Skipped   0.01 sec" (or ***Not Run ...).
bad=$(sed -nE 's/^ *[0-9]+\/[0-9]+ Test +#[0-9]+: ([^ ]*[^ .]) *\.*\*\*\*(Skipped|Not Run( \([A-Za-z ]+\))?) +[0-9.]+ sec$/\1 (\2)/p' "$log")
if [[ -n "$bad" ]]; then
  echo "ctest-no-skips.sh: $(wc -l <<<"$bad") test(s) did not run in a lane where every selected test must run:" >&2
  while IFS= read -r line; do echo "  $line"; done <<<"$bad" >&2
  echo "  (install what they need: scripts/bootstrap.sh; or leave them out by label with -LE)" >&2
  exit 1
fi
if grep -q '^No tests were found' "$log" || ! grep -qE '^ *[0-9]+/[0-9]+ Test +#' "$log"; then
  echo "ctest-no-skips.sh: no test ran" >&2
  exit 1
fi
exit 0
