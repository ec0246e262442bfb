#!/usr/bin/env bash
# --memory cuda on the emulated device (label gpu-emu): a publisher of host memory and a reader
# into device memory (bounced through the host ring over mpi_rma), then a publisher of device
# memory (hashed on the device) read into device memory (device_ipc, device-to-device) and into
# host memory, the same over the staged path, and a device pull written to a snapshot; the
# synthetic pattern is checked after each pull. The emulated device crashes on any host access
# of device memory.
# Usage: publish_pull_cuda.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
export TENSORHUB_DEVICE=emulated
step() { echo "+ $*" >&2; }

# The help is captured first: `grep -q` stops reading at its first match, and with pipefail the
# SIGPIPE of a help still being written would fail the check.
help=$("$bin" pull --help)
grep -q -- "--memory" <<<"$help" || { echo "FAIL: pull --help has no --memory"; exit 1; }
help=$("$bin" publish --help)
grep -q "EMULATED device" <<<"$help" || { echo "FAIL: publish --help does not say emulated"; exit 1; }

step "publish host memory : pull into device memory"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --versions 2 --interval 0.5 \
  : -n 1 "$bin" pull --follow 2 --check-pattern --memory cuda 2>&1)
echo "$out"
grep -q "into device memory of the emulated device" <<<"$out" || { echo "FAIL: no emulated notice"; exit 1; }
grep -q "rank 1 pulled 'policy' v2" <<<"$out"

# mpi_rma cannot write device memory: every byte pulled went through the bounce ring.
grep -Eq "pulled 'policy' v2: ([0-9.]+ [KMG]iB) .*into device memory, \1 bounced through host" <<<"$out" ||
  { echo "FAIL: mpi_rma did not bounce every byte"; exit 1; }

step "publish device memory : pull into device memory : pull into host memory (device_ipc)"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --memory cuda \
  : -n 1 "$bin" pull --check-pattern --memory cuda --no-relay : -n 1 "$bin" pull --check-pattern --no-relay 2>&1)
echo "$out"
grep -q "tensors in device memory of the emulated device" <<<"$out"
grep -q "rank 1 pulled 'policy' v1: .*into device memory, 0 B bounced through host" <<<"$out" ||
  { echo "FAIL: device_ipc did not write device memory directly"; exit 1; }
grep -q "rank 2 pulled 'policy' v1" <<<"$out"

step "demo --memory cuda: trainers publish device memory, rollouts pull into device memory"
out=$("$mpiexec" "$@" -n 3 "$bin" demo --trainers 1 --size 8MiB --tensors 8 --versions 2 --memory cuda 2>&1)
echo "$out"
grep -q "tensors in device memory of the emulated device" <<<"$out"

step "publish device memory : pull into device memory and host memory over staged (cma,staged)"
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --memory cuda --transport cma,staged \
  : -n 1 "$bin" pull --check-pattern --memory cuda --no-relay --transport cma,staged \
  : -n 1 "$bin" pull --check-pattern --no-relay --transport cma,staged 2>&1)
echo "$out"
# staged reads into host memory only: a device destination bounces every byte.
grep -Eq "rank 1 pulled 'policy' v1: ([0-9.]+ [KMG]iB) .*into device memory, \1 bounced through host" <<<"$out" ||
  { echo "FAIL: the staged pull into device memory did not bounce"; exit 1; }
grep -q "rank 2 pulled 'policy' v1" <<<"$out"

step "pull --memory cuda --out: the device version written to a snapshot, then verified"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
out=$("$mpiexec" "$@" -n 1 "$bin" publish --synthetic 8MiB --tensors 10 --memory cuda \
  : -n 1 "$bin" pull --memory cuda --no-relay --out "$tmp/p.h5" 2>&1)
echo "$out"
grep -q "wrote 'policy' v1 to $tmp/p.h5" <<<"$out" || { echo "FAIL: no snapshot written"; exit 1; }
"$bin" snapshot verify "$tmp/p.h5"

step "usage: --memory gpu is refused"
if "$bin" pull --memory gpu 2>/dev/null; then echo "FAIL: --memory gpu accepted"; exit 1; fi
echo "publish pull cuda: ok"
