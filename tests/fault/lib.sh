# Sourced by the hub fault tests (hub_fault.sh): processes that are really killed, and cleanup.
#   spawn NAME CMD...       runs CMD in the background, output in $work/NAME.log; pid in pids[NAME]
#   wait_line NAME RE SECS  waits until NAME.log matches RE (fails the test after SECS)
#   wait_pins MODEL V SECS [NAME...]  the workers reading MODEL vV now (status --json); 1 if none
#                           within SECS or once the processes NAME... have all exited
#   wait_status SECS PY     polls `status --workers --json` until the Python expression PY
#                           (over the list `ws` of workers) is true; 1 after SECS
#   now                     unix time, seconds with ms
#   cleanup                 SIGCONT + SIGKILL every spawned process and serve (trap EXIT)
declare -A pids=()
work=$(mktemp -d /tmp/th-fault.XXXXXX)
# The hub's token (README "Security model"): every serve of a test shares it, every client reads it.
export TENSORHUB_TOKEN_FILE=$work/token

fail() {
  echo "FAIL: $*"
  for f in "$work"/*.log; do
    [[ -e "$f" ]] || continue
    echo "---- $(basename "$f") (last 15 lines)"
    tail -n 15 "$f"
  done
  exit 1
}

now() { date +%s.%N | cut -c1-14; }
# Seconds from epoch time T0 to the time of day on a pull line ("14:05:46.123 UTC", the same day
# within 12 h either way: a run across midnight still gives the right difference).
since() { python3 -c "
h, m, s = '$2'.split(':')
d = (int(h) * 3600 + int(m) * 60 + float(s) - $1 % 86400) % 86400
print(f'{d - 86400 if d > 43200 else d:.3f}')"; }

spawn() {
  local name=$1
  shift
  "$@" >"$work/$name.log" 2>&1 &
  pids[$name]=$!
}

wait_line() {
  local name=$1 re=$2 secs=$3
  local end=$((SECONDS + secs))
  until grep -Eq "$re" "$work/$name.log" 2>/dev/null; do
    ((SECONDS < end)) || fail "$name: no line matching '$re' within $secs s"
    sleep 0.05
  done
}

# Exit status of a spawned process (waits for it, at most SECS).
finish() {
  local name=$1 secs=$2 end=$((SECONDS + $2))
  while kill -0 "${pids[$name]}" 2>/dev/null; do
    ((SECONDS < end)) || fail "$name still running after $secs s"
    sleep 0.05
  done
  local rc=0
  wait "${pids[$name]}" || rc=$?
  unset "pids[$name]"
  return $rc
}

# Prints the worker ids serving reads of MODEL vV, once there are any. Returns 1 (printing
# nothing) after SECS, or as soon as none of the processes named after SECS is still running
# (their reads are over: there is nothing left to see). Call it as `wait_pins ... || fail ...`:
# inside $(...) a fail would only end the subshell.
wait_pins() {
  local model=$1 v=$2 secs=$3 end=$((SECONDS + $3)) busy name alive
  shift 3
  for (( ; ; )); do
    # A status whose connection fails to come up would retry for seconds (GrpcClient): a fresh
    # process after 3 s instead. The readers are paused meanwhile (hub_fault.sh), so the time a
    # loaded machine takes to start a status (over 1 s seen) costs nothing but waiting.
    busy=$(timeout 3 "$bin" status --json 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin)
print(' '.join(str(h['worker']) for m in j['models'] if m['model'] == '$model' for x in m['versions']
               if x['version'] == $v for h in x['holder_list'] if h['pins'] > 0))" || true)
    [[ -n "$busy" ]] && break
    ((SECONDS < end)) || return 1
    if (($# > 0)); then
      alive=0
      for name in "$@"; do kill -0 "${pids[$name]:-0}" 2>/dev/null && alive=1; done
      ((alive)) || return 1
    fi
  done
  echo "$busy"
}

# Polls the coordinator's worker list until PY holds (a lease expiry is seen by the
# coordinator's sweep, not at a fixed time). Call it as `wait_status ... || fail ...`.
wait_status() {
  local end=$((SECONDS + $1)) py=$2
  until "$bin" status --workers --json 2>/dev/null | python3 -c "
import json, sys
ws = json.load(sys.stdin)['workers']
sys.exit(0 if ($py) else 1)" 2>/dev/null; do
    ((SECONDS < end)) || return 1
    sleep 0.1
  done
}

# The worker id a spawned process registered as last (needs TENSORHUB_LOG=info).
worker_of() { sed -n 's/.*as worker \([0-9]*\).*/\1/p' "$work/$1.log" | tail -1; }

cleanup() {
  local p
  for p in "${pids[@]}"; do kill -CONT "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  [[ -n "${KEEP_FAULT_LOGS:-}" ]] && echo "logs kept in $work" || rm -rf "$work"
}
trap cleanup EXIT

# serve NAME [ARGS...]: a coordinator on a free loopback port; sets addr[NAME].
declare -A addr=()
serve() {
  local name=$1
  shift
  spawn "$name" "$bin" serve --listen 127.0.0.1:0 "$@"
  wait_line "$name" "listening on" 10
  addr[$name]=127.0.0.1:$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$work/$name.log")
}
