#!/usr/bin/env bash
# Every command in the command table (commands/table.cpp) answers --help with exit 0, its
# one-line summary and an "Example:" line, at every level: the commands `tensorhub --help`
# lists, and the subcommands `tensorhub bench --help` and `tensorhub snapshot --help` list.
# Usage: every_help.sh TENSORHUB_BIN
set -euo pipefail
bin=${1:?usage: every_help.sh TENSORHUB_BIN}
# The names of a listing: lines "  name      summary" (two spaces, then a word).
names() { "$bin" "$@" --help | sed -n '/^commands/,$p' | grep -E '^  [a-z0-9]+ ' | awk '{ print $1 }'; }
n=0
for cmd in $(names); do
  subs=$(if [[ $cmd == bench || $cmd == snapshot ]]; then names "$cmd"; fi)
  for sub in ${subs:-""}; do
    args=("$cmd")
    [[ -n $sub ]] && args+=("$sub")
    out=$("$bin" "${args[@]}" --help) || { echo "FAIL: tensorhub ${args[*]} --help exited $?"; exit 1; }
    grep -q "^tensorhub ${args[*]}: " <<<"$out" || { echo "FAIL: tensorhub ${args[*]} --help has no summary line"; exit 1; }
    grep -q "^Example: " <<<"$out" || { echo "FAIL: tensorhub ${args[*]} --help has no example"; exit 1; }
    echo "ok: tensorhub ${args[*]} --help"
    n=$((n + 1))
  done
done
((n >= 17)) || { echo "FAIL: only $n commands found in the listings"; exit 1; }
echo "every help: ok ($n commands)"
