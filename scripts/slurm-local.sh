#!/usr/bin/env bash
# slurm-local.sh: a one-node Slurm cluster on localhost (munged + slurmctld + slurmd), for tests
# and demos. Everything (config, munge key and socket, state, spool, logs, pid files) lives in one
# state directory; nothing under /etc/slurm or /etc/munge is read or changed.
#
# usage: scripts/slurm-local.sh start  [--dir DIR] [--timeout SEC] [--cpus N] [--port PORT]
#        scripts/slurm-local.sh stop   [--dir DIR] [--clean]
#        scripts/slurm-local.sh status [--dir DIR]
#        scripts/slurm-local.sh --help
#
#   start   generate a munge key and slurm.conf in DIR, start munged, slurmctld and
#           slurmd, wait until the node 'localhost' is idle. Already running: prints the exports
#           and does nothing else. If startup fails, whatever it started is stopped again and
#           the daemon logs' tails are printed.
#   stop    cancel the cluster's jobs, then stop exactly the daemons started for DIR (pids from
#           its pid files, checked against /proc), and wait until they are gone. Idempotent.
#           --clean also removes DIR.
#   status  show each daemon's pid and state, and sinfo; exit 0 if all three run, 3 if not.
#
# Options:
#   --dir DIR      state directory, one per cluster (default: $SLURM_LOCAL_DIR; for start, a
#                  new mktemp dir); slurm.conf is rewritten on each start, the key kept
#   --timeout SEC  how long start waits for the node to become idle (default 60)
#   --cpus N       CPUs of the node (default: nproc)
#   --port PORT    slurmctld port; slurmd uses PORT+1 (default: first free pair from 6817)
#
# start prints on stdout only the lines to eval (progress goes to stderr):
#   eval "$(scripts/slurm-local.sh start --dir /tmp/slurm)"   # exports SLURM_CONF, SLURM_LOCAL_DIR
#   sbatch --overcommit slurm/tensorhub-demo.sbatch
#   scripts/slurm-local.sh stop
#
# Needs root (slurmd runs jobs as any user) and the Debian packages slurmctld, slurmd,
# slurm-client and munge. The partition is 'debug' (default, OverSubscribe=YES); MpiDefault=none,
# so MPI jobs pass srun --mpi=pmix (Open MPI) or --mpi=pmi2 (MPICH).
set -euo pipefail

prog=slurm-local
say() { echo "$prog: $*" >&2; }
die() {
  echo "$prog: error: $*" >&2
  exit 1
}
usage() { awk 'NR > 1 && /^set -euo/ { exit } NR > 1 { sub(/^# ?/, ""); print }' "${BASH_SOURCE[0]}"; }

cmd=
dir=${SLURM_LOCAL_DIR:-}
timeout=60
cpus=$(nproc)
port=
clean=0
while (($#)); do
  case "$1" in
    start | stop | status) cmd=$1 ;;
    -h | --help | help)
      usage
      exit 0
      ;;
    --dir) dir=${2:?--dir needs a value} && shift ;;
    --dir=*) dir=${1#--dir=} ;;
    --timeout) timeout=${2:?--timeout needs a value} && shift ;;
    --timeout=*) timeout=${1#--timeout=} ;;
    --cpus) cpus=${2:?--cpus needs a value} && shift ;;
    --cpus=*) cpus=${1#--cpus=} ;;
    --port) port=${2:?--port needs a value} && shift ;;
    --port=*) port=${1#--port=} ;;
    --clean) clean=1 ;;
    *)
      usage >&2
      die "unknown argument '$1'"
      ;;
  esac
  shift
done
[[ -n "$cmd" ]] || {
  usage >&2
  exit 2
}

daemons=(munged slurmctld slurmd) # start order; stop goes the other way

# Paths inside the state directory. The top directory and run/ must be world-executable
# (munged refuses a socket below a directory others cannot traverse); the key stays in munge/ (0700).
set_paths() {
  dir=$(cd "$dir" && pwd)
  conf=$dir/slurm.conf
  socket=$dir/run/munge.socket
  key=$dir/munge/munge.key
}
pidfile() { echo "$dir/run/$1.pid"; }
logfile() {
  case "$1" in
    munged) echo "$dir/munge/munged.log" ;;
    *) echo "$dir/log/$1.log" ;;
  esac
}

# The pid of daemon $1 if it runs and is ours: the pid file names a live process with that
# name whose command line mentions this state directory (so a recycled pid is never touched).
daemon_pid() {
  local f pid
  f=$(pidfile "$1")
  [[ -r "$f" ]] || return 1
  pid=$(tr -dc '0-9' <"$f")
  [[ -n "$pid" && -r /proc/$pid/cmdline ]] || return 1
  [[ "$(cat "/proc/$pid/comm" 2>/dev/null)" == "$1" ]] || return 1
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$dir/" || return 1
  echo "$pid"
}

export_lines() {
  echo "export SLURM_CONF=$conf"
  echo "export SLURM_LOCAL_DIR=$dir"
}

log_tails() {
  local d f
  for d in "${daemons[@]}"; do
    f=$(logfile "$d")
    [[ -s "$f" ]] || continue
    echo "----- last lines of $f" >&2
    tail -n 15 "$f" >&2
  done
}

node_state() { SLURM_CONF=$conf sinfo -h -N -n localhost -o %t 2>/dev/null | head -n 1; }

port_in_use() { ss -Hltn 2>/dev/null | awk '{ print $4 }' | grep -qE "[:.]$1\$"; }

pick_ports() {
  if [[ -n "$port" ]]; then
    ! port_in_use "$port" || die "port $port is in use (choose another with --port)"
    ! port_in_use $((port + 1)) || die "port $((port + 1)) is in use (choose another with --port)"
    return
  fi
  local p
  for ((p = 6817; p < 6917; p += 2)); do
    if ! port_in_use $p && ! port_in_use $((p + 1)); then
      port=$p
      return
    fi
  done
  die "no free port pair in 6817..6916 (pass --port)"
}

write_conf() {
  local host
  host=$(hostname -s)
  pick_ports
  : >"$dir/plugstack.conf" # keeps Slurm from reading /etc/slurm/plugstack.conf
  cat >"$conf" <<EOF
# Generated by scripts/slurm-local.sh: a one-node cluster on localhost. Use with SLURM_CONF=$conf
ClusterName=slurmlocal
SlurmctldHost=$host(127.0.0.1)
AuthType=auth/munge
AuthInfo=socket=$socket
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
PlugStackConfig=$dir/plugstack.conf
ReturnToService=2
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$port
SlurmdPort=$((port + 1))
SlurmctldPidFile=$(pidfile slurmctld)
SlurmdPidFile=$(pidfile slurmd)
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$(logfile slurmctld)
SlurmdLogFile=$(logfile slurmd)
TmpFS=$dir/tmp
MailProg=/bin/true
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/none
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
# Keep finished jobs visible to 'scontrol show job' for 10 minutes (no accounting here).
MinJobAge=600
KillWait=5
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$cpus State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
}

wait_pidfile() { # name, seconds
  local i
  for ((i = 0; i < $2 * 10; i++)); do
    daemon_pid "$1" >/dev/null && return 0
    sleep 0.1
  done
  return 1
}

wait_gone() { # pid, seconds
  local j
  for ((j = 0; j < $2 * 10; j++)); do
    [[ -e /proc/$1 ]] || return 0
    sleep 0.1
  done
  return 1
}

# SIGTERM the named daemons (only those that are ours), wait up to 20 s, then SIGKILL.
stop_pids() {
  local d pid pids=()
  for d in "$@"; do
    if pid=$(daemon_pid "$d"); then
      say "stopping $d (pid $pid)"
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
  done
  for pid in "${pids[@]}"; do
    wait_gone "$pid" 20 && continue
    say "pid $pid still running after 20 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    wait_gone "$pid" 5 || say "pid $pid survived SIGKILL"
  done
  for d in "$@"; do rm -f "$(pidfile "$d")"; done
  stopped=$((stopped + ${#pids[@]}))
}

stop_daemons() {
  local i stopped=0
  # Jobs first, so no slurmstepd outlives slurmd.
  if daemon_pid slurmctld >/dev/null; then
    local jobs
    jobs=$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null || true)
    if [[ -n "$jobs" ]]; then
      # shellcheck disable=SC2086
      say "cancelling jobs:" $jobs
      # shellcheck disable=SC2086
      SLURM_CONF=$conf scancel $jobs 2>/dev/null || true
      for ((i = 0; i < 150; i++)); do
        [[ -z "$(SLURM_CONF=$conf squeue -h -o %i 2>/dev/null)" ]] && break
        sleep 0.1
      done
    fi
  fi
  # slurmd and slurmctld together, then munged (slurm talks through it until it is gone).
  stop_pids slurmd slurmctld
  stop_pids munged
  ((stopped)) || say "nothing running in $dir"
}

on_start_exit() {
  if ((start_ok == 0)); then
    say "startup failed; stopping what was started"
    log_tails
    stop_daemons
  fi
}

cmd_start() {
  if [[ -z "$dir" ]]; then
    dir=$(mktemp -d "${TMPDIR:-/tmp}/slurm-local.XXXXXX")
    say "state directory: $dir"
  fi
  mkdir -p "$dir"
  set_paths
  [[ $(id -u) -eq 0 ]] || die "needs root (slurmd runs job steps as the submitting user)"
  local b
  for b in munged mungekey slurmctld slurmd sinfo squeue scancel scontrol ss; do
    command -v "$b" >/dev/null || die "$b not found (apt-get install munge slurmctld slurmd slurm-client)"
  done

  local running=0 d state
  for d in "${daemons[@]}"; do daemon_pid "$d" >/dev/null && running=$((running + 1)); done
  state=
  if ((running == ${#daemons[@]})); then state=$(node_state); fi
  if [[ "$state" =~ ^(idle|mix|alloc)$ ]]; then
    say "already running in $dir (node $state)"
    export_lines
    return 0
  fi
  if ((running > 0)); then
    say "partly running in $dir: stopping it first"
    stop_daemons
  fi

  local t0
  t0=$(date +%s.%N)
  # If anything below fails, stop what was started and show why.
  start_ok=0
  trap on_start_exit EXIT

  chmod 0755 "$dir"
  mkdir -p "$dir/run" "$dir/log" "$dir/state" "$dir/spool" "$dir/tmp"
  mkdir -p "$dir/munge"
  chmod 0755 "$dir/run"
  chmod 0700 "$dir/munge"
  [[ -s "$key" ]] || mungekey --create --keyfile="$key"
  chmod 0400 "$key"
  write_conf # every start: picks free ports again
  export SLURM_CONF=$conf

  munged --socket="$socket" --key-file="$key" --pid-file="$(pidfile munged)" \
    --log-file="$(logfile munged)" --seed-file="$dir/munge/munged.seed"
  wait_pidfile munged 10 || die "munged did not start"
  local clean_start=()
  [[ -n "$(ls -A "$dir/state")" ]] || clean_start=(-c) # fresh: no 'could not open state' errors
  slurmctld -f "$conf" "${clean_start[@]}"
  wait_pidfile slurmctld 20 || die "slurmctld did not start"
  slurmd -f "$conf" -N localhost
  wait_pidfile slurmd 20 || die "slurmd did not start"

  local deadline
  deadline=$(($(date +%s) + timeout))
  while :; do
    state=$(node_state)
    [[ "$state" == idle ]] && break
    if (($(date +%s) >= deadline)); then
      die "node localhost not idle after ${timeout}s (state: '${state:-no answer from slurmctld}')"
    fi
    # A drained/down node from an earlier run in this directory: resume it.
    if [[ "$state" == drain* || "$state" == down* ]]; then
      scontrol update NodeName=localhost State=RESUME >/dev/null 2>&1 || true
    fi
    sleep 0.2
  done
  start_ok=1
  trap - EXIT
  say "munged $(daemon_pid munged), slurmctld $(daemon_pid slurmctld), slurmd $(daemon_pid slurmd);" \
    "ports $port/$((port + 1)); $cpus CPUs, partition debug"
  say "node localhost idle $(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }') s after start"
  say "stop with: scripts/slurm-local.sh stop --dir $dir"
  export_lines
}

cmd_stop() {
  [[ -n "$dir" ]] || die "stop: which cluster? pass --dir DIR or set SLURM_LOCAL_DIR"
  [[ -d "$dir" ]] || {
    say "$dir does not exist: nothing to stop"
    return 0
  }
  set_paths
  stop_daemons
  if ((clean)); then
    rm -rf -- "$dir"
    say "removed $dir"
  fi
}

cmd_status() {
  [[ -n "$dir" ]] || die "status: which cluster? pass --dir DIR or set SLURM_LOCAL_DIR"
  [[ -d "$dir" ]] || die "$dir does not exist"
  set_paths
  local d pid n=0
  for d in "${daemons[@]}"; do
    if pid=$(daemon_pid "$d"); then
      echo "$d: running (pid $pid)"
      n=$((n + 1))
    else
      echo "$d: not running"
    fi
  done
  if daemon_pid slurmctld >/dev/null; then
    SLURM_CONF=$conf sinfo -N -o '%N %P %t %c' || true
    SLURM_CONF=$conf squeue || true
  fi
  ((n == ${#daemons[@]})) || return 3
  export_lines
}

case "$cmd" in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
esac
