#!/usr/bin/env bash
# Bad usage of `tensorhub`: every case exits 2 with exactly one line on stderr (nothing on stdout)
# that says what is wrong. Cases: a missing or unknown command at each level of the command
# table, an alias given with its own flag, out-of-range bench flags, a bad value in the
# environment (TENSORHUB_<OPTION>). Usage: usage_errors.sh TENSORHUB_BIN
set -euo pipefail
bin=${1:?usage: usage_errors.sh TENSORHUB_BIN}
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
failed=0
# check "EXPECTED TEXT" [VAR=VALUE...] -- ARGS...
check() {
  local want=$1 rc
  shift
  local envs=()
  while [[ $1 != -- ]]; do envs+=("$1") && shift; done
  shift
  rc=0
  env "${envs[@]}" "$bin" "$@" >"$dir/out" 2>"$dir/err" </dev/null || rc=$?
  local lines
  lines=$(wc -l <"$dir/err")
  if [[ $rc -ne 2 || $lines -ne 1 || -s "$dir/out" ]] || ! grep -qF -- "$want" "$dir/err"; then
    echo "FAIL: tensorhub $* -> exit $rc, $lines stderr line(s), expected exit 2 and one line with '$want':"
    cat "$dir/err" "$dir/out"
    failed=1
  else
    echo "ok: tensorhub $*: $(cat "$dir/err")"
  fi
}
check "tensorhub: missing command (one of: serve, publish, pull" --
check "tensorhub: unknown command 'frobnicate'" -- frobnicate
check "tensorhub bench: missing command (one of: p2p, publish, fanout, stall, elastic, crossdc" -- bench
check "tensorhub bench: unknown command 'nope'" -- bench nope
check "tensorhub snapshot: unknown command 'copy' (one of: save, load, verify, inspect" -- snapshot copy
check "tensorhub demo: unrecognised option '--no-such-flag'" -- demo --no-such-flag
check "tensorhub bench fanout: --size S is -b S -e S: give --size or -b/-e, not both" -- bench fanout --size 2MiB -b 4MiB
check "--begin is an alias of -b/--minbytes: give one of them" -- bench p2p --begin 1MiB -b 2MiB
check "--versions is an alias of -n/--iters: give one of them" -- bench crossdc --versions 2 -n 3
check "-b/--minbytes (8MiB) is larger than -e/--maxbytes (1MiB)" -- bench p2p -b 8MiB -e 1MiB
check "-f/--stepfactor must be at least 2" -- bench fanout -b 1MiB -e 4MiB -f 1
check "need 1 <= W < V" -- bench stall -n 3 -w 3
check "bench elastic has no warm-up: -w must be 0" -- bench elastic -w 1
check "--format: 'e4' is not e4m3fn or e5m2" -- bench fp8 --format e4
check "fp8: scale blocks of 0 x 128 elements" -- bench fp8 --block-rows 0
check "--tensors must be at least 1" -- bench publish --tensors 0
check "--chunk must be positive" -- bench publish --chunk 0
check "bad byte size suffix" -- bench stall --size 12XB
check "in the environment: TENSORHUB_MAX_READERS: " TENSORHUB_MAX_READERS=lots -- pull --config /dev/null
# Issue 16: negative numbers wrapped silently, bad ports and zero counts were accepted.
check "--tensors must be a whole number of at least 0, not '-1'" -- publish --tensors -1
check "--versions must be a whole number of at least 0, not '-1'" -- publish --versions -1
check "--start-version must be a whole number of at least 0, not '-1'" -- publish --start-version -1
check "--tensors must be between 1 and" -- publish --tensors 0
check "goes past the largest version number" -- publish --start-version 18446744073709551615 --versions 2
check "--version must be 'latest' or a version number, not '-1'" -- pull --version -1
check "--max-readers must be a whole number of at least 0, not '-1'" -- serve --max-readers -1
check "--max-readers must be at least 1" -- serve --max-readers 0
check "--listen 127.0.0.1:99999: port 99999 is out of range" -- serve --listen 127.0.0.1:99999
check "--listen 127.0.0.1: expected HOST:PORT" -- serve --listen 127.0.0.1
check "--hub localhost:0: port 0 is out of range" -- pull --hub localhost:0
check "--wait must be a finite number of at least 0, not '-5'" -- pull --wait -5
check "--inflight (from TENSORHUB_INFLIGHT) must be a whole number of at least 0, not '-2'" TENSORHUB_INFLIGHT=-2 -- pull --config /dev/null
mkdir -p "$dir/outdir"
check "--out $dir/outdir is a directory; give a file name" -- pull --out "$dir/outdir"
touch "$dir/exists.h5"
check "--out $dir/exists.h5 exists; pass --overwrite to replace it" -- pull --out "$dir/exists.h5"
check "directory $dir/missing does not exist" -- snapshot save --out "$dir/missing/x.h5"
check "--layout must be plain, dim0, dim1, dim0:PARTS or dim1:PARTS, not 'dim2'" -- pull --layout dim2
check "--layout dim1:0: PARTS must be between 1 and 4096" -- publish --layout dim1:0
check "--layout pulls this rank's boxes; it cannot be combined with --group or --out" -- pull --layout dim0 --group
((failed == 0)) || exit 1
echo "usage errors: ok"
