#!/usr/bin/env bash
# Option precedence: command line > environment > config file ([command] section > global) >
# default, checked through `--show-config`. Usage: config_precedence.sh TENSORHUB_BIN
set -euo pipefail
bin=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
cat >"$dir/th.conf" <<'CONF'
chunk = 1MiB
max-readers = 5
inflight = 4
wait = 9
not-an-option-of-pull = ignored
[pull]
wait = 7
[publish]
inflight = 99
CONF
out=$(TENSORHUB_CHUNK=8MiB TENSORHUB_CONFIG="$dir/th.conf" "$bin" pull --max-readers 3 --show-config)
echo "$out"
expect() { grep -qE "^  $1 = $2  \($3\)$" <<<"$out" || { echo "FAIL: expected $1 = $2 from $3"; exit 1; }; }
expect max-readers 3 "command line"
expect chunk 8MiB environment
expect inflight 4 "config file"      # global key; the [publish] value must not leak into pull
expect wait '7\.0+' "config file"    # [pull] wins over the global key
expect deadline '300\.0+' default
# --config beats TENSORHUB_CONFIG; a missing file is a clear error with exit code 2.
set +e
err=$("$bin" pull --config "$dir/missing.conf" --show-config 2>&1)
rc=$?
set -e
[[ $rc -eq 2 && "$err" == *"cannot read config file"* ]] || { echo "FAIL: missing config: rc=$rc: $err"; exit 1; }
echo "config precedence: ok"
