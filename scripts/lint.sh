#!/usr/bin/env bash
# Style and static checks: clang-format on lib/ apps/ tests/, clang-tidy on the recently changed
# sources of lib/ and apps/ (CI step, .ci/run).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

usage() {
  cat <<'TXT'
Usage: scripts/lint.sh [--fix]

1. clang-format --dry-run --Werror on every *.cpp and *.hpp under lib/, apps/ and tests/
   (style: .clang-format). With --fix, reformats those files in place instead.
2. clang-tidy -p BUILD_DIR (checks: .clang-tidy) on the *.cpp files under lib/ and apps/ that
   the last LINT_TIDY_COMMITS commits changed (plus uncommitted changes), newest first, at most
   LINT_TIDY_MAX of them, within a time budget of LINT_TIDY_BUDGET_S seconds (files not started
   by then are listed as not checked). Where the history is shorter (a shallow clone) it goes back as far
   as there is; where that finds no file it takes the first LINT_TIDY_MAX lib/ sources.
   LINT_TIDY_FILES=all checks every lib/ and apps/ source instead (about 10 s a file on 2
   busy cores: ~100 files, too slow for CI). Only when BUILD_DIR/compile_commands.json exists
   (scripts/build.sh writes it); files missing from it are skipped. Run it after a build:
   generated headers (tensorhub.pb.h) must exist. Skipped with --fix.
clang-tidy findings are warnings (.clang-tidy: WarningsAsErrors ''); the script fails (exit 1)
on format differences or clang-tidy errors (a file that does not compile, a check promoted
to an error). .ci/run runs it after the main lane and fails on it.

Environment:
  BUILD_DIR      build directory with compile_commands.json (default build/)
  CLANG_FORMAT   clang-format binary (default clang-format)
  CLANG_TIDY     clang-tidy binary (default clang-tidy)
  JOBS           parallel clang-tidy processes (default nproc)
  LINT_TIDY_COMMITS  how many recent commits choose the clang-tidy files (default 10)
  LINT_TIDY_MAX      at most this many files (default 16)
  LINT_TIDY_BUDGET_S no clang-tidy starts after this many seconds (default 240; 0: no limit)
  LINT_TIDY_FILES    changed (default) | all
Needs clang-format and clang-tidy (Debian: apt-get install clang-format clang-tidy).

Examples:
  scripts/build.sh && scripts/lint.sh
  scripts/lint.sh --fix
TXT
}

fix=0
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --fix) fix=1 ;;
  "") ;;
  *) echo "lint.sh: unknown argument '$1' (see --help)" >&2; exit 2 ;;
esac

clang_format=${CLANG_FORMAT:-clang-format}
clang_tidy=${CLANG_TIDY:-clang-tidy}
build_dir=${BUILD_DIR:-build}
[[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"
jobs=${JOBS:-$(nproc)}

cd "$ROOT"
mapfile -d '' sources < <(find lib apps tests -type f \( -name '*.cpp' -o -name '*.hpp' \) -print0 2>/dev/null |
  sort -z)
if ((${#sources[@]} == 0)); then
  echo "lint.sh: no sources found under lib/ apps/ tests/" >&2
  exit 0
fi

command -v "$clang_format" >/dev/null 2>&1 ||
  { echo "lint.sh: $clang_format not found (apt-get install clang-format)" >&2; exit 1; }

rc=0
if ((fix)); then
  echo "+ $clang_format -i (${#sources[@]} files)" >&2
  "$clang_format" -i "${sources[@]}"
  exit 0
fi

echo "+ $clang_format --dry-run --Werror (${#sources[@]} files)" >&2
"$clang_format" --dry-run --Werror "${sources[@]}" || {
  rc=1
  echo "lint.sh: formatting differs; run scripts/lint.sh --fix" >&2
}

db="$build_dir/compile_commands.json"
if [[ ! -f "$db" ]]; then
  echo "lint.sh: no $db; skipping clang-tidy (run scripts/build.sh first)" >&2
  exit "$rc"
fi
command -v "$clang_tidy" >/dev/null 2>&1 ||
  { echo "lint.sh: $clang_tidy not found (apt-get install clang-tidy)" >&2; exit 1; }

commits=${LINT_TIDY_COMMITS:-10}
max=${LINT_TIDY_MAX:-16}
budget=${LINT_TIDY_BUDGET_S:-240}
[[ "$commits" =~ ^[0-9]+$ && "$max" =~ ^[1-9][0-9]*$ && "$budget" =~ ^[0-9]+$ ]] ||
  { echo "lint.sh: LINT_TIDY_COMMITS, LINT_TIDY_MAX and LINT_TIDY_BUDGET_S must be numbers" >&2; exit 2; }
is_tidy_source() { [[ "$1" == lib/*.cpp || "$1" == apps/*.cpp ]] && [[ -f "$1" ]]; }
candidates=()
case "${LINT_TIDY_FILES:-changed}" in
  all)
    for f in "${sources[@]}"; do is_tidy_source "$f" && candidates+=("$f"); done
    max=${#candidates[@]}
    why="every lib/ and apps/ source"
    ;;
  changed)
    # Newest first: uncommitted changes, then the last $commits commits (as many as the clone has).
    declare -A seen=()
    have=$(git rev-list --count HEAD 2>/dev/null || echo 0)
    ((have > commits)) || commits=$((have > 0 ? have - 1 : 0))
    while IFS= read -r f; do
      [[ -n "$f" && -z "${seen[$f]:-}" ]] || continue
      seen[$f]=1
      is_tidy_source "$f" && candidates+=("$f")
    done < <(git diff --name-only HEAD 2>/dev/null || true
      ((commits == 0)) || git log --name-only --format= "HEAD~$commits..HEAD" 2>/dev/null || true)
    why="changed in the last $commits commits"
    if ((${#candidates[@]} == 0)); then
      for f in "${sources[@]}"; do [[ "$f" == lib/*.cpp ]] && candidates+=("$f"); done
      why="no source changed in the last $commits commits: the first $max of lib/"
    fi
    ;;
  *) echo "lint.sh: LINT_TIDY_FILES must be changed or all" >&2; exit 2 ;;
esac
tidy_files=()
for f in "${candidates[@]}"; do
  ((${#tidy_files[@]} < max)) || break
  if grep -qF "\"$ROOT/$f\"" "$db"; then
    tidy_files+=("$f")
  else
    echo "lint.sh: $f is not in $db; clang-tidy skips it" >&2
  fi
done
if ((${#tidy_files[@]} > 0)); then
  echo "+ $clang_tidy -p $build_dir --quiet (${#tidy_files[@]} files: $why, at most $max; $jobs at a time;" \
    "budget ${budget} s)" >&2
  start=$SECONDS
  deadline=0
  ((budget == 0)) || deadline=$(($(date +%s) + budget))
  # One clang-tidy per file; one that would start after the deadline is not run (and listed).
  # shellcheck disable=SC2016 # $1 and $deadline expand in the inner shell
  printf '%s\0' "${tidy_files[@]}" |
    xargs -0 -n 1 -P "$jobs" bash -c '
      if (($2 > 0 && $(date +%s) >= $2)); then echo "lint.sh: time budget spent; not checked: $3" >&2; exit 0; fi
      exec "$0" -p "$1" --quiet "$3"' "$clang_tidy" "$build_dir" "$deadline" || {
    rc=1
    echo "lint.sh: clang-tidy reported errors (see above)" >&2
  }
  echo "lint.sh: clang-tidy took $((SECONDS - start)) s for ${#tidy_files[@]} files" >&2
fi
exit "$rc"
