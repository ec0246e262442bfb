#!/usr/bin/env bash
# Emulated-cluster tests (ctest label netsim). Brings up a private cluster of network-namespace
# hosts (prefix "thtest", so a cluster someone has up by hand is left alone), runs one scenario
# across it and always tears it down. Exit 77 (ctest: skipped) when the machine cannot do it:
# not root, iproute2/tc/unshare missing, `ip netns` unusable, no tbf.
#
#   netsim_test.sh mpi-get  NETSIM_SH NETSIM_GET            3 hosts at 200 Mbit/s: TCP check,
#                                                            MPI_Get link-bound within ±30%
#   netsim_test.sh demo     NETSIM_SH TENSORHUB             3 hosts at 200 Mbit/s: tensorhub demo
#   netsim_test.sh bench-fanout NETSIM_SH TENSORHUB         4 hosts at 200 Mbit/s: bench fanout,
#                                                            3 readers, 16 MiB, trainer uplink
#                                                            <= 1.5 S for TensorHub (tc and the
#                                                            bench's own origin-bytes count)
set -euo pipefail

scenario=${1:?usage: netsim_test.sh mpi-get|demo|bench-fanout NETSIM_SH BINARY}
netsim=${2:?netsim.sh path}
binary=${3:?binary path}
rate_mbit=${NETSIM_TEST_RATE_MBIT:-200}

skip() { echo "SKIPPED: $*"; exit 77; }
[[ $(id -u) -eq 0 ]] || skip "the netsim tests need root (network namespaces, veths, tc)"
for t in ip tc unshare mpirun; do
  command -v "$t" >/dev/null 2>&1 || skip "'$t' is not installed"
done
[[ -x $binary ]] || { echo "FAIL: $binary is not an executable"; exit 1; }

# One thtest cluster at a time on this machine, even across build trees and ctest runs.
exec 9>/tmp/thtest-netsim.lock
command -v flock >/dev/null 2>&1 && { flock -w 300 9 || { echo "FAIL: another netsim test holds /tmp/thtest-netsim.lock"; exit 1; }; }

state=$(mktemp -d "${TMPDIR:-/tmp}/thtest-netsim.XXXXXX")
ns() { "$netsim" --prefix thtest --state "$state" "$@" 9>&-; }  # the cluster must not hold the lock
cleanup() {
  ns down >/dev/null 2>&1 || true
  rm -rf "$state"
}
# Leftovers of a crashed earlier run use the same prefix: remove them first.
ns down >/dev/null 2>&1 || true
trap cleanup EXIT
trap 'exit 130' INT TERM

rc=0
hosts=3
[[ $scenario == bench-fanout ]] && hosts=4
ns up --hosts "$hosts" --rate "${rate_mbit}mbit" || rc=$?
[[ $rc -eq 0 ]] || { [[ $rc -eq 77 ]] && skip "netsim.sh up cannot run here (see above)"; echo "FAIL: netsim.sh up exited $rc"; exit 1; }

case $scenario in
  mpi-get)
    # Plain TCP first: each link delivers about the cap, loopback shows the CPU headroom.
    ns check --seconds 1 --tolerance 30
    # One rank per host: host names differ, MPI_Get / ring / fan-in are link-bound.
    timeout 150 "$netsim" --prefix thtest --state "$state" run -- -np 3 "$binary" \
      --size 16 --expect-mbit "$rate_mbit" --tolerance 30 --min-hosts 3 9>&-
    ns status
    ;;
  demo)
    "$binary" demo --help >/dev/null 2>&1 || skip "$binary has no 'demo' command"
    # Coordinator on h0, trainer on h1, rollouts on h2 and h0 (map by node). First both rollouts
    # read the trainer (K=2: they share its uplink), then K=1: one relays to the other.
    for k in 2 1; do
      out=$(timeout 150 "$netsim" --prefix thtest --state "$state" run -- -np 4 --map-by node --oversubscribe \
        "$binary" demo --trainers 1 --size 8MiB --tensors 8 --versions 2 --chunk 1MiB --max-readers "$k" 2>&1 9>&-) || {
        echo "$out"; echo "FAIL: tensorhub demo (--max-readers $k) across the emulated hosts failed"; exit 1; }
      echo "$out"
    done
    echo "(each uplink is capped at ${rate_mbit} Mbit/s = $(awk -v r="$rate_mbit" 'BEGIN{printf "%.1f", r / 8}') MB/s)"
    ns status
    ;;
  bench-fanout)
    "$binary" bench fanout --help >/dev/null 2>&1 || skip "$binary has no 'bench fanout' command"
    command -v python3 >/dev/null 2>&1 || skip "python3 is not installed (checks the JSON)"
    # Trainer on h0, readers on h1..h3. Rank 0 reads the tc counters (netsim.sh counters) right
    # before and after each method's phase; the whole job's are read here too.
    counters=("$netsim" --prefix thtest --state "$state" counters)
    uplink() { "${counters[@]}" 9>&- | awk '$1 == "up-thtest-h0" { print $2 }'; }
    job_before=$(uplink)
    out=$(timeout 100 "$netsim" --prefix thtest --state "$state" run -- -np 4 --map-by node "$binary" bench fanout \
      --size 16MiB --methods tensorhub,star --link-mbit "$rate_mbit" --counters-cmd "${counters[*]}" \
      --json "$state/fanout.json" 2>&1 9>&-) || { echo "$out"; echo "FAIL: bench fanout across the emulated hosts failed"; exit 1; }
    job_after=$(uplink)
    echo "$out"
    python3 "$(dirname "$0")/../cli/check_fanout_json.py" "$state/fanout.json" 3 tensorhub,star --link --max-trainer-ratio 1.5
    python3 - "$state/fanout.json" "$((job_after - job_before))" <<'PY'
import json, sys
d = json.load(open(sys.argv[1])); s = d["model_bytes"]; job = int(sys.argv[2])
th, star = (m["rounds"][0] for m in d["methods"])
tc_th = th["traffic"]["counters"]["up-thtest-h0"]; tc_star = star["traffic"]["counters"]["up-thtest-h0"]
print(f"S = {s} bytes; trainer uplink (tc, h0):")
print(f"  tensorhub phase: {tc_th:.0f} bytes = {tc_th / s:.2f} S (wire: frames with TCP/IP headers)")
print(f"  tensorhub origin bytes counted by the readers: {th['trainer_bytes']:.0f} = {th['trainer_bytes'] / s:.2f} S")
print(f"  star phase: {tc_star:.0f} bytes = {tc_star / s:.2f} S; whole job (both methods, MPI start-up): {job / s:.2f} S")
assert tc_th <= 1.5 * s, f"TensorHub: the trainer's uplink sent {tc_th / s:.2f} S > 1.5 S"
assert tc_star >= 2.9 * s, f"star should send 3 S; the counter says {tc_star / s:.2f} S"
print("trainer uplink <= 1.5 S for TensorHub: ok")
PY
    ;;
  *) echo "unknown scenario '$scenario'"; exit 2 ;;
esac
echo "netsim $scenario: ok"
