#!/usr/bin/env bash
# Hub-level fault tests over the ucx transport (FAULT_TRANSPORT=cma: the same-host cma one;
# FAULT_MEMORY=cuda: every version in device memory, e.g. over device_ipc or staged, on the
# device TENSORHUB_DEVICE selects; FAULT_PUBLISH_LAYOUT / FAULT_PULL_LAYOUT: boxes, below):
# processes are really killed (SIGKILL) or hung (SIGSTOP), every surviving reader verifies its
# bytes (xxHash64 + the synthetic pattern).
# Each process is a single-process MPI job (singleton) that reaches the standalone coordinator
# through TENSORHUB_HUB, as a worker from a separately started job would.
#
# Usage: hub_fault.sh TENSORHUB_BIN SCENARIO [ITERATIONS]
#   kill_holder   3 holders, 3 readers; one holder killed -9 mid-pull (the readers hold their pulls
#                 after the first chunks until it is dead); until ITERATIONS kills were masked (a
#                 kill of a holder no reader had a read left on is not counted: at most 3 x
#                 ITERATIONS of those)
#   stop_holder   3 holders, 3 readers; one holder SIGSTOPped mid-pull (hung, not dead)
#   only_holder   the only holder killed mid-pull: clear error within the deadline, then the
#                 same reader pulls the next version from another holder
#   reader_pins   a reader killed while pinning reads: unpublish returns after its lease expires
#   failover      the primary coordinator killed during a stream of versions; the standby serves
#   join_leave    a separate 2-rank mpirun joins while versions flow; readers leave by exit and kill
# Prints measured times as "measured: ..." lines. KEEP_FAULT_LOGS=1 keeps the logs;
# FAULT_ITERATIONS=N overrides ITERATIONS; FAULT_MAX_ITERATIONS=N caps it (the sanitizer lane: at
# most 3 kills per scenario, where the main lane runs 20, 5 or 3).
set -euo pipefail
bin=$1
scenario=$2
iterations=${FAULT_ITERATIONS:-${3:-20}}  # FAULT_ITERATIONS overrides
max_iterations=${FAULT_MAX_ITERATIONS:-0}
[[ "$iterations" =~ ^[1-9][0-9]*$ && "$max_iterations" =~ ^[0-9]+$ ]] ||
  { echo "hub_fault.sh: ITERATIONS must be a positive number, FAULT_MAX_ITERATIONS a number" >&2; exit 2; }
((max_iterations == 0 || iterations <= max_iterations)) || iterations=$max_iterations
mpiexec=${MPIEXEC:-mpirun}
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

export TENSORHUB_TRANSPORT=${FAULT_TRANSPORT:-ucx}
export TENSORHUB_UCX_DEADLINE_MS=${TENSORHUB_UCX_DEADLINE_MS:-1000}
export TENSORHUB_LOG=info  # workers log their ids ("as worker N"): the victim is a busy holder
size=384MiB
pool=400MiB
memory=(--memory "${FAULT_MEMORY:-host}")
# FAULT_PUBLISH_LAYOUT / FAULT_PULL_LAYOUT: the publisher cuts the model into boxes of global
# tensors and the readers (not the relays) pull their own boxes of them (README "Resharding").
publish_layout=(--layout "${FAULT_PUBLISH_LAYOUT:-plain}")
pull_layout=(--layout "${FAULT_PULL_LAYOUT:-plain}")

# A relay: pulls v$1 and keeps serving it.
relay() { spawn "$1" "$bin" pull --version "$2" --pool "$pool" --hold 600 --check-pattern "${memory[@]}"; }
# With $pause set, each reader holds its pull after its first chunks (TENSORHUB_TEST_PAUSE_DIR:
# apps/tensorhub/common/fault_pause.hpp) while $pause/hold exists.
pause=
readers_start() {
  local i
  for i in 1 2 3; do
    spawn "r$i" env TENSORHUB_TEST_PAUSE_DIR="$pause" \
      "$bin" pull --version "$1" --no-relay --check-pattern --wait 30 "${memory[@]}" "${pull_layout[@]}"
  done
}
# Waits until the readers r1..r3 all hold their pulls mid-way ($pause/paused.<pid>).
readers_paused() {
  local end=$((SECONDS + 60))
  until (($(find "$pause" -name 'paused.*' | wc -l) >= 3)); do
    ((SECONDS < end)) || fail "the readers did not reach their pause within 60 s"
    for i in 1 2 3; do kill -0 "${pids[r$i]}" 2>/dev/null || fail "reader r$i ended before its pause"; done
    sleep 0.02
  done
}
# Waits until the one reader $1 holds its pull at the pause ($pause/paused.<pid>).
reader_paused() {
  local end=$((SECONDS + 60))
  until compgen -G "$pause/paused.*" >/dev/null; do
    ((SECONDS < end)) || fail "reader $1 did not reach its pause within 60 s"
    kill -0 "${pids[$1]}" 2>/dev/null || fail "reader $1 ended before its pause"
    sleep 0.02
  done
}
readers_check() {
  local i
  for i in 1 2 3; do
    finish "r$i" 60 || fail "reader r$i failed"
    grep -q "every pull verified" "$work/r$i.log" || fail "reader r$i did not verify"
  done
}
reassigned() { cat "$work"/r[123].log | grep -c "failed reads reassigned" || true; }

# One of the holders in "$@" that serves a read of v1 right now; returns 1 if the readers
# r1..r3 finished (or 30 s passed) before any of them was seen reading.
busy_holder() {
  local busy name try
  for try in 1 2 3 4 5 6 7 8 9 10; do
    busy=" $(wait_pins policy 1 30 r1 r2 r3) " || return 1
    for name in "$@"; do
      [[ "$busy" == *" $(worker_of "$name") "* ]] && { echo "$name"; return; }
    done
  done
  echo "none of the holders $* is among the busy workers [$busy]" >&2
  echo "$1"
}

# Three holders of v1: the publisher and two relays.
three_holders() {
  spawn p "$bin" publish --synthetic "$size" --tensors 16 --versions 1 --hold 600 "${memory[@]}" "${publish_layout[@]}"
  wait_line p "published 'policy' v1" 30
  relay h1 1
  relay h2 1
  wait_line h1 "pulled 'policy' v1" 30
  wait_line h2 "pulled 'policy' v1" 30
}

case "$scenario" in
  kill_holder)
    serve coord --lease 1000
    export TENSORHUB_HUB=${addr[coord]}
    three_holders
    holders=(p h1 h2)
    hit=0
    missed=0
    kills=0
    late=0
    # Each round the readers pause after their first chunks: the victim, a holder they have
    # pinned, is killed while they still have to read from it; then they go on.
    pause=$work/pause
    mkdir -p "$pause"
    for ((it = 1; it <= iterations; ++it)); do
      rm -f "$pause"/paused.*
      touch "$pause/hold"
      readers_start 1
      readers_paused
      if ! victim=$(busy_holder "${holders[@]}"); then
        rm -f "$pause/hold"
        # The pulls were over before a read was seen in flight: nothing to kill this time.
        readers_check
        missed=$((missed + 1))
        ((missed <= iterations)) || fail "$missed rounds in which no read was seen in flight"
        echo "iteration $it: the readers were done before a busy holder was seen; again"
        it=$((it - 1))
        continue
      fi
      kill -KILL "${pids[$victim]}"
      wait "${pids[$victim]}" 2>/dev/null || true
      unset "pids[$victim]"
      rm -f "$pause/hold"
      readers_check
      n=$(reassigned)
      kills=$((kills + 1))
      # Replace the dead holder with a new relay.
      new=h$((kills + 2))
      relay "$new" 1
      wait_line "$new" "pulled 'policy' v1" 30
      for i in 0 1 2; do [[ "${holders[$i]}" == "$victim" ]] && holders[$i]=$new; done
      if ((n == 0)); then
        # No reader had a read left on the victim (its pin outlived its reads): readers
        # verified, but no masking shown. Not counted; kill again.
        late=$((late + 1))
        ((late <= 3 * iterations)) || fail "$late kills came after the readers were done with the victim"
        echo "kill $kills: killed $victim after the readers had read from it; readers verified; not counted"
        it=$((it - 1))
        continue
      fi
      hit=$((hit + 1))
      echo "iteration $it: killed $victim; readers verified; $n of 3 readers had reads reassigned"
    done
    echo "measured: $hit of $iterations counted kills landed mid-pull and were masked (a reader had reads" \
      "reassigned, every reader verified); $kills kills in all, $late after the readers were done"
    echo "kill_holder: ok"
    ;;

  stop_holder)
    # K = 1: each of the 3 holders serves one of the 3 readers at a time. As in kill_holder the
    # readers pause after their first chunks (pins held) while the victim, a holder they pinned,
    # is stopped; then they go on. A round whose victim had no read left for its reader shows no
    # reassignment: it is repeated (up to 3 rounds) with a fresh relay in place of the stopped
    # holder. Readers that fail to verify fail the test at once.
    serve coord --lease 1000 --max-readers 1
    export TENSORHUB_HUB=${addr[coord]}
    three_holders
    holders=(p h1 h2)
    n=0
    pause=$work/pause
    mkdir -p "$pause"
    for round in 1 2 3; do
      rm -f "$pause"/paused.*
      touch "$pause/hold"
      readers_start 1
      readers_paused
      if ! victim=$(busy_holder "${holders[@]}"); then
        rm -f "$pause/hold"
        readers_check
        echo "round $round: the pulls were over before a read was seen in flight; again"
        continue
      fi
      kill -STOP "${pids[$victim]}"
      ts=$(now)
      echo "round $round: stopped $victim (worker $(worker_of "$victim"))"
      rm -f "$pause/hold"
      readers_check
      te=$(now)
      n=$(reassigned)
      ((n > 0)) && break
      echo "round $round: the stop came after its reader was done; again"
      kill -KILL "${pids[$victim]}"
      new=s$round
      relay "$new" 1
      wait_line "$new" "pulled 'policy' v1" 30
      for i in 0 1 2; do [[ "${holders[$i]}" == "$victim" ]] && holders[$i]=$new; done
    done
    ((n > 0)) || fail "in 3 rounds the stopped holder never had a read in flight"
    echo "measured: readers done $(python3 -c "print(f'{$te - $ts:.2f}')") s after the SIGSTOP" \
      "(UCX deadline ${TENSORHUB_UCX_DEADLINE_MS} ms, lease 1000 ms); $n of 3 readers had reads reassigned"
    # Its lease expired while it was stopped: the coordinator lists it as dead. (Resumed, it
    # would register again, but UCX 1.13 aborts a holder whose pending get replies meet the
    # readers' closed endpoints: README "Failure model". So it is not resumed here.)
    wait_status 10 "any(w['worker'] == $(worker_of "$victim") and w['state'] == 'dead' for w in ws)" ||
      fail "status does not list the stopped holder as dead"
    echo "stop_holder: ok"
    ;;

  only_holder)
    serve coord --lease 1000
    export TENSORHUB_HUB=${addr[coord]}
    spawn p "$bin" publish --synthetic 1GiB --tensors 16 --versions 1 --hold 600
    wait_line p "published 'policy' v1" 30
    # The reader pauses after its first chunks (pins held) while the holder is frozen, then
    # killed; then it goes on and must fail v1 (a 1 GiB pull takes 0.25 s here: no race on time).
    pause=$work/pause
    mkdir -p "$pause"
    touch "$pause/hold"
    spawn r env TENSORHUB_TEST_PAUSE_DIR="$pause" \
      "$bin" pull --follow 2 --keep-going --no-relay --inflight 2 --check-pattern --wait 60
    reader_paused r
    wait_pins policy 1 30 r >/dev/null || fail "no read of v1 seen in flight"
    kill -STOP "${pids[p]}"  # frozen mid-pull, then killed
    grep -q "pulled 'policy' v1" "$work/r.log" && fail "the reader finished before the holder was killed (too fast)"
    kill -KILL "${pids[p]}"
    tk=$(now)
    rm -f "$pause/hold"
    wait_line r "pull of 'policy' failed" 15
    grep "pull of 'policy' failed" "$work/r.log" | grep -q "v1" || fail "the error does not name the version"
    grep "pull of 'policy' failed" "$work/r.log" | grep -q "no live holder" || fail "the error does not say why"
    tf=$(sed -n "s/.*pull of 'policy' failed at \([0-9:.]*\) UTC:.*/\1/p" "$work/r.log" | head -1)
    [[ -n "$tf" ]] || fail "no time on the failed pull's line"
    echo "measured: pull failed $(since "$tk" "$tf") s after the only holder was killed"
    spawn p2 "$bin" publish --synthetic 1GiB --tensors 16 --versions 1 --start-version 2 --hold 600
    finish r 60 || fail "the reader did not go on to v2"
    grep -q "pulled 'policy' v2" "$work/r.log" || fail "v2 not pulled"
    grep -q "every pull verified" "$work/r.log" || fail "v2 not verified"
    echo "only_holder: ok"
    ;;

  reader_pins)
    # The lease (6 s) is longer than the time from the reader's freeze to the publisher's
    # v2 (its 2 s interval plus filling 1 GiB: about 3.5 s under ASan), so the unpublish of
    # v1 starts while the dead reader's pins still count. Whether it then waited for the
    # lease is read from the log times (wall clock, the same on every process here).
    serve coord --lease 6000
    export TENSORHUB_HUB=${addr[coord]}
    spawn p "$bin" publish --synthetic 1GiB --tensors 16 --versions 2 --interval 2 --hold 1
    wait_line p "published 'policy' v1" 30
    # The reader pauses after its first chunks (pins held; the hold is never lifted) and is then
    # frozen and killed: a 1 GiB pull takes 0.25 s here, so no race against a status poll.
    pause=$work/pause
    mkdir -p "$pause"
    touch "$pause/hold"
    spawn r env TENSORHUB_TEST_PAUSE_DIR="$pause" "$bin" pull --version 1 --no-relay --inflight 2 --wait 30
    reader_paused r
    wait_pins policy 1 30 r >/dev/null || fail "no read of v1 seen in flight"
    kill -STOP "${pids[r]}"  # frozen with its reads pinned, then killed
    grep -q "pulled 'policy' v1" "$work/r.log" && fail "the reader finished before it was killed (too fast)"
    kill -KILL "${pids[r]}"
    tk=$(now)
    finish p 60 || fail "the publisher failed"
    ms=$(sed -n 's/.*v1 unpublished in \([0-9.]*\) ms.*/\1/p' "$work/p.log")
    [[ -n "$ms" ]] || fail "no unpublish time"
    # When the unpublish began (v2 committed) and when the coordinator dropped the reader.
    tc=$(sed -n "s/^\[tensorhub hub r0 \([0-9.]*\) info\] published and committed 'policy' v2.*/\1/p" "$work/p.log")
    dead=$(grep -a "worker $(worker_of r) .*declared dead: lease expired" "$work/coord.log" | tail -1)
    td=$(sed -n 's/^\[tensorhub coord \([0-9.]*\) warn\].*/\1/p' <<<"$dead")
    pins=$(sed -n 's/.* \([0-9]*\) pin(s) of its reads.*/\1/p' <<<"$dead")
    [[ -n "$tc" && -n "$td" && -n "$pins" ]] || fail "no v2 commit or no lease expiry of the reader in the logs"
    ((pins > 0)) || fail "the reader's lease expired with no pins left (its reads were not pinned)"
    # Log times are seconds modulo 100000; differences are taken modulo that too.
    read -r began ended < <(python3 -c "
d = lambda a, b: (a - b + 50000) % 100000 - 50000
print(f'{d($td, $tc) * 1e3:.0f} {d($tc + $ms / 1e3, $td) * 1e3:.0f}')")
    echo "measured: v1 unpublish began $began ms before the dead reader's lease expired ($pins pin(s))" \
      "and returned $ended ms after it; unpublish took $ms ms (lease 6000 ms, reader killed at $tk)"
    ((began > 0)) || fail "inconclusive: the publisher began unpublishing v1 only after the reader's lease expired"
    ((ended > -100)) || fail "unpublish did not wait for the dead reader's pins (returned before its lease expired)"
    wait_status 10 "any(w['state'] == 'dead' and 'lease expired' in w['reason'] for w in ws)" ||
      fail "status does not show the dead reader"
    echo "reader_pins: ok"
    ;;

  failover)
    serve primary --lease 2000
    serve standby --lease 2000 --standby-of "${addr[primary]}" --takeover-after 1000
    export TENSORHUB_HUB=${addr[primary]},${addr[standby]}
    spawn p "$bin" publish --synthetic 32MiB --tensors 8 --versions 10 --interval 1.5 --hold 3
    # No --keep-going: a pull caught by the takeover waits for its version to be re-published.
    spawn r1 "$bin" pull --follow 10 --pool 40MiB --check-pattern --wait 60
    spawn r2 "$bin" pull --follow 10 --pool 40MiB --check-pattern --wait 60
    wait_line p "published 'policy' v4" 60
    kill -KILL "${pids[primary]}"
    tk=$(now)
    # The version current at the kill (v4, its publisher alive) must be readable at the standby.
    end=$((SECONDS + 20))
    until TENSORHUB_HUB=${addr[standby]} "$bin" status --json 2>/dev/null | python3 -c "
import json, sys
j = json.load(sys.stdin)
sys.exit(0 if any(v['version'] >= 4 and v['readable'] for m in j['models'] for v in m['versions']) else 1)" 2>/dev/null; do
      ((SECONDS < end)) || fail "the standby never had v4 (or newer) readable"
      sleep 0.05
    done
    tr=$(now)
    for r in r1 r2; do
      finish "$r" 90 || fail "$r failed"
      grep -q "pulled 'policy' v10" "$work/$r.log" || fail "$r did not reach v10"
      grep -q "every pull verified" "$work/$r.log" || fail "$r did not verify"
    done
    finish p 60 || fail "the publisher failed"
    grep -q "publish done: 10 version" "$work/p.log" || fail "the publisher lost a version"
    first=$(cat "$work"/r1.log "$work"/r2.log | sed -n "s/.*pulled 'policy' v[0-9]*:.*; at \([0-9:.]*\) UTC$/\1/p" |
      while read -r t; do since "$tk" "$t"; done | python3 -c "import sys; print(min(float(x) for x in sys.stdin if float(x) > 0))")
    grep -q "now the active coordinator" "$work/standby.log" || fail "the standby did not take over"
    echo "measured: primary killed; v4 readable at the standby after $(python3 -c "print(f'{$tr - $tk:.2f}')") s;" \
      "first successful pull after $first s; versions lost: 0 (10 of 10 published)"
    echo "failover: ok"
    ;;

  join_leave)
    serve coord --lease 1000
    export TENSORHUB_HUB=${addr[coord]}
    spawn p "$bin" publish --synthetic 16MiB --tensors 8 --versions 8 --interval 0.7 --hold 2
    spawn k "$bin" pull --follow 8 --pool 20MiB --check-pattern --wait 60
    wait_line p "published 'policy' v2" 30
    # A separately started job joins while versions flow: no existing member takes part.
    spawn job "$mpiexec" -n 2 ${TENSORHUB_MPIEXEC_FLAGS:-} -x TENSORHUB_HUB -x TENSORHUB_TOKEN_FILE -x TENSORHUB_TRANSPORT \
      -x TENSORHUB_UCX_DEADLINE_MS "$bin" pull --follow 8 --keep-going --pool 20MiB --check-pattern --wait 60
    spawn e "$bin" pull --pool 20MiB --check-pattern --wait 30
    wait_line k "pulled 'policy' v3" 30
    kill -KILL "${pids[k]}"
    unset "pids[k]"
    finish e 60 || fail "the reader that leaves by exiting failed"
    finish job 90 || fail "the joined job failed"
    [[ $(grep -c "pulled 'policy' v8" "$work/job.log") -ge 1 ]] || fail "the joined job did not reach v8"
    grep -q "every pull verified" "$work/job.log" || fail "the joined job did not verify"
    finish p 60 || fail "the publisher failed"
    # The killed reader's lease expires; the one that exited has left.
    wait_status 10 "{'dead', 'left'} <= {w['state'] for w in ws}" ||
      fail "status does not show the dead and the left workers"
    "$bin" status --workers --json | python3 -c "
import collections, json, sys
print('workers:', dict(collections.Counter(w['state'] for w in json.load(sys.stdin)['workers'])))"
    echo "join_leave: ok"
    ;;

  *)
    echo "unknown scenario '$scenario'" >&2
    exit 2
    ;;
esac
