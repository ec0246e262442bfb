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
   A file checked without error is not checked again while its inputs are the same (its text,
   every header its last compile read, its compile command, .clang-tidy and clang-tidy's
   version: scripts/lib/tidy_keys.py); its stored findings are printed instead.
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
  LINT_TIDY_SINCE    a commit: the clang-tidy files are those changed since it (instead of the
                     last LINT_TIDY_COMMITS commits), when it is an ancestor of HEAD
  LINT_TIDY_CACHE    0: no result cache (default 1: under TENSORHUB_CACHE_DIR, default
                     ${XDG_CACHE_HOME:-~/.cache}/tensorhub, in clang-tidy/)
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
    range=
    ((commits == 0)) || range="HEAD~$commits..HEAD"
    why="changed in the last $commits commits"
    since=${LINT_TIDY_SINCE:-}
    if [[ -n "$since" ]]; then
      if git merge-base --is-ancestor "$since" HEAD 2>/dev/null; then
        range="$since..HEAD"
        why="changed since ${since:0:12}"
      else
        echo "lint.sh: LINT_TIDY_SINCE=$since is not an ancestor of HEAD; using the last $commits commits" >&2
      fi
    fi
    while IFS= read -r f; do
      [[ -n "$f" && -z "${seen[$f]:-}" ]] || continue
      seen[$f]=1
      is_tidy_source "$f" && candidates+=("$f")
    done < <(git diff --name-only HEAD 2>/dev/null || true
      [[ -z "$range" ]] || git log --name-only --format= "$range" 2>/dev/null || true)
    if ((${#candidates[@]} == 0)); then
      for f in "${sources[@]}"; do [[ "$f" == lib/*.cpp ]] && candidates+=("$f"); done
      why="no source $why: the first $max of lib/"
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
  cache_dir=
  if [[ "${LINT_TIDY_CACHE:-1}" != 0 ]]; then
    cache_dir=${TENSORHUB_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/tensorhub}/clang-tidy
    mkdir -p "$cache_dir" 2>/dev/null || cache_dir=
  fi
  keyed=()  # "key file" pairs; key "-" = not cacheable (object not built): always checked
  if [[ -n "$cache_dir" ]] && command -v python3 >/dev/null 2>&1; then
    mapfile -t keyed < <(python3 "$ROOT/scripts/lib/tidy_keys.py" "$build_dir" "$clang_tidy" .clang-tidy \
      "${tidy_files[@]}" || true)
  fi
  ((${#keyed[@]} == ${#tidy_files[@]})) || { keyed=(); for f in "${tidy_files[@]}"; do keyed+=("- $f"); done; }
  echo "+ $clang_tidy -p $build_dir --quiet (${#tidy_files[@]} files: $why, at most $max; $jobs at a time;" \
    "budget ${budget} s; results cached in ${cache_dir:-nowhere})" >&2
  # clang-tidy reads a copy of the compile database without GCC-only options (Clang's driver
  # refuses them and would check nothing in that file) and without CMake's precompiled header
  # (Clang cannot read GCC's .gch): scripts/lib/tidy_db.py.
  tidy_db_dir=$(mktemp -d) || exit 1
  trap 'rm -rf "$tidy_db_dir"' EXIT
  python3 "$ROOT/scripts/lib/tidy_db.py" "$build_dir" "$tidy_db_dir" ||
    { echo "lint.sh: could not write a clang-tidy copy of $db" >&2; exit 1; }
  start=$SECONDS
  deadline=0
  ((budget == 0)) || deadline=$(($(date +%s) + budget))
  # One clang-tidy per file; one that would start after the deadline is not run (and listed). A
  # file whose inputs (its text, every header it includes, its compile command, the checks and
  # clang-tidy's version: scripts/lib/tidy_keys.py) were checked without error before is not
  # checked again: its stored findings are printed instead. Paths of the clone that stored them
  # are stored as <src>.
  # shellcheck disable=SC2016 # the inner shell expands its own arguments
  printf '%s\0' "${keyed[@]}" |
    xargs -0 -n 1 -P "$jobs" bash -c '
      tidy=$0 build=$1 deadline=$2 cache=$3 root=$4 key=${5%% *} file=${5#* }
      if [[ -n "$cache" && "$key" != - && -f "$cache/$key" ]]; then
        sed "s|<src>|$root|g" "$cache/$key"; echo "lint.sh: $file: unchanged since a clean check (cached)" >&2; exit 0
      fi
      if (($deadline > 0 && $(date +%s) >= $deadline)); then echo "lint.sh: time budget spent; not checked: $file" >&2; exit 0; fi
      out=$(mktemp) || exit 1
      rc=0
      "$tidy" -p "$build" --quiet "$file" >"$out" 2>&1 || rc=$?
      cat "$out"
      if ((rc == 0)) && [[ -n "$cache" && "$key" != - ]]; then
        sed "s|$root|<src>|g" "$out" >"$cache/$key.tmp.$$" && mv "$cache/$key.tmp.$$" "$cache/$key"
      fi
      rm -f "$out"
      exit $((rc == 0 ? 0 : 1))' "$clang_tidy" "$tidy_db_dir" "$deadline" "$cache_dir" "$ROOT" || {
    rc=1
    echo "lint.sh: clang-tidy reported errors (see above)" >&2
  }
  echo "lint.sh: clang-tidy took $((SECONDS - start)) s for ${#tidy_files[@]} files" >&2
fi
exit "$rc"
