#!/usr/bin/env bash
# Style and static checks: clang-format on lib/ apps/ tests/, clang-tidy on lib/.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

usage() {
  cat <<'TXT'
Usage: scripts/lint.sh [--fix]

1. clang-format --dry-run --Werror on every *.cpp and *.hpp under lib/, apps/ and tests/
   (style: .clang-format). With --fix, reformats those files in place instead.
2. clang-tidy -p BUILD_DIR on lib/**/*.cpp (checks: .clang-tidy), only when
   BUILD_DIR/compile_commands.json exists (scripts/build.sh writes it); files missing from
   the compilation database are skipped. Run it after a build: generated headers
   (tensorhub.pb.h) must exist. clang-tidy findings are warnings; the script fails only on
   format differences or clang-tidy errors. Skipped with --fix.
Not part of scripts/test.sh or CI.

Environment:
  BUILD_DIR      build directory with compile_commands.json (default build/)
  CLANG_FORMAT   clang-format binary (default clang-format)
  CLANG_TIDY     clang-tidy binary (default clang-tidy)
  JOBS           parallel clang-tidy processes (default nproc)
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

tidy_files=()
for f in "${sources[@]}"; do
  [[ "$f" == lib/*.cpp ]] || continue
  if grep -qF "\"$ROOT/$f\"" "$db"; then
    tidy_files+=("$f")
  else
    echo "lint.sh: $f is not in $db; clang-tidy skips it" >&2
  fi
done
if ((${#tidy_files[@]} > 0)); then
  echo "+ $clang_tidy -p $build_dir --quiet (${#tidy_files[@]} files, $jobs at a time)" >&2
  printf '%s\0' "${tidy_files[@]}" |
    xargs -0 -n 4 -P "$jobs" "$clang_tidy" -p "$build_dir" --quiet || rc=1
fi
exit "$rc"
