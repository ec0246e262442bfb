#!/usr/bin/env bash
# Shared by scripts/bench/*.sh (source it): options every scenario takes, the emulated cluster
# (scripts/netsim/netsim.sh) brought up and always torn down, the benchmark run across it with
# the command that reproduces it printed first, and the link byte counters.
#
#   bench_init NAME                  defaults; NAME is the scenario (fanout, stall, ...)
#   bench_option OPT VALUE           declares an option passed to `tensorhub bench NAME` as it
#                                    is, with its default (e.g. bench_option --period 6)
#   bench_parse "$@"                 parses -h/--help (calls the script's usage), --readers,
#                                    the declared options and the common ones below
#   bench_options                    prints the declared options with their values, one a line
#   bench_cluster_up HOSTS [--dcs 2 --wan-rate R]   down (leftovers), up, trap down on exit
#   bench_run NP SCENARIO ARGS...    mpirun across the hosts (one rank per host, --map-by node),
#                                    adding --link-mbit, --counters-cmd, and the hub flags
#   bench_single_run [UP ARGS]      cluster of --readers + 1 hosts, one run, JSON to --out
#   bench_counter KEY                one counter of `netsim.sh counters` (e.g. up-thbench-h0)
#   bench_python                     a python3 that has matplotlib (for plot.py), else python3
# Executed instead of sourced, it prints this help.
#
# Common options (each script's --help lists them too):
#   --rate MBIT     link rate of every host, Mbit/s (default 100)
#   --size SIZE     model size S (default per scenario)
#   --chunk SIZE --max-readers K --inflight N     hub settings (default 512KiB, 1, 3)
#   --out FILE      result JSON (default share/results/bench-NAME.json)
#   --bin PATH      tensorhub binary (default build/apps/tensorhub/tensorhub)
#   --prefix P      netsim prefix of the cluster (default thbench; a cluster of that prefix
#                   is taken down first)
#   -- ARGS         passed to `tensorhub bench NAME` as they are
# Needs root (network namespaces), iproute2, tc, Open MPI and a built tensorhub.
# shellcheck disable=SC2034 # the BENCH_* settings are read by the scripts that source this file

if [[ ${BASH_SOURCE[0]} == "$0" ]]; then
  sed -n '2,/^# Needs root/p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi

BENCH_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BENCH_NETSIM=$BENCH_ROOT/scripts/netsim/netsim.sh

bench_init() {
  BENCH_NAME=$1
  BENCH_RATE=100
  BENCH_SIZE=""
  BENCH_CHUNK=512KiB
  BENCH_MAX_READERS=1
  BENCH_INFLIGHT=3
  BENCH_OUT=$BENCH_ROOT/share/results/bench-$1.json
  BENCH_BIN=$BENCH_ROOT/build/apps/tensorhub/tensorhub
  BENCH_PREFIX=thbench
  BENCH_EXTRA=()
  BENCH_READERS=""
  # The command line that reproduces this script's numbers.
  BENCH_SCRIPT_CMD="scripts/bench/$1.sh"
}

bench_die() { echo "bench $BENCH_NAME: error: $*" >&2; exit 1; }

# Records an option for the reproduction line.
bench_note() { BENCH_SCRIPT_CMD+=$(printf ' %q' "$@"); }

declare -A BENCH_OPTS=()
BENCH_OPT_ORDER=()
bench_option() {
  [[ -v BENCH_OPTS[$1] ]] || BENCH_OPT_ORDER+=("$1")
  BENCH_OPTS[$1]=$2
}
bench_options() {
  local k
  for k in "${BENCH_OPT_ORDER[@]}"; do printf '%s\n%s\n' "$k" "${BENCH_OPTS[$k]}"; done
}

bench_parse() {
  while [[ $# -gt 0 ]]; do
    case $1 in
      -h | --help) usage; exit 0 ;;
      --readers) BENCH_READERS=${2:?--readers needs a value}; bench_note "$1" "$2"; shift 2; continue ;;
    esac
    if [[ -v BENCH_OPTS[$1] ]]; then
      [[ $# -ge 2 ]] || bench_die "$1 needs a value"
      BENCH_OPTS[$1]=$2
      bench_note "$1" "$2"
      shift 2
      continue
    fi
    bench_common_opt "$@"
    [[ $BENCH_SHIFT -gt 0 ]] || { echo "$BENCH_NAME.sh: unknown option '$1' (see --help)" >&2; exit 2; }
    shift "$BENCH_SHIFT"
  done
}

bench_common_opt() {
  BENCH_SHIFT=0
  case $1 in
    --rate) BENCH_RATE=${2:?--rate needs Mbit/s}; BENCH_SHIFT=2 ;;
    --size) BENCH_SIZE=${2:?--size needs a size}; BENCH_SHIFT=2 ;;
    --chunk) BENCH_CHUNK=${2:?--chunk needs a size}; BENCH_SHIFT=2 ;;
    --max-readers) BENCH_MAX_READERS=${2:?--max-readers needs a number}; BENCH_SHIFT=2 ;;
    --inflight) BENCH_INFLIGHT=${2:?--inflight needs a number}; BENCH_SHIFT=2 ;;
    --out) BENCH_OUT=${2:?--out needs a file}; BENCH_SHIFT=2 ;;
    --bin) BENCH_BIN=${2:?--bin needs a path}; BENCH_SHIFT=2 ;;
    --prefix) BENCH_PREFIX=${2:?--prefix needs a value}; BENCH_SHIFT=2 ;;
    --) BENCH_EXTRA=("${@:2}"); BENCH_SHIFT=$# ;;
    *) return 0 ;;
  esac
  case $1 in
    --out | --bin | --prefix) ;;
    *) bench_note "${@:1:BENCH_SHIFT}" ;;
  esac
}

bench_netsim() { "$BENCH_NETSIM" --prefix "$BENCH_PREFIX" "$@"; }

bench_cluster_down() { bench_netsim down >/dev/null 2>&1 || true; }

bench_cluster_up() {
  local hosts=$1
  shift
  [[ $(id -u) -eq 0 ]] || bench_die "needs root (network namespaces, tc); run it as root or with sudo"
  [[ -x $BENCH_BIN ]] || bench_die "$BENCH_BIN is not built (cmake --build build --target tensorhub_cli)"
  [[ $BENCH_RATE =~ ^[0-9]+$ ]] || bench_die "--rate must be whole Mbit/s (got '$BENCH_RATE')"
  bench_cluster_down
  trap bench_cluster_down EXIT
  trap 'exit 130' INT TERM
  BENCH_UP=(up --hosts "$hosts" --rate "${BENCH_RATE}mbit" "$@")
  bench_netsim "${BENCH_UP[@]}"
  # gRPC would send the coordinator's calls to a proxy
  unset http_proxy https_proxy grpc_proxy HTTP_PROXY HTTPS_PROXY
}

bench_run() {
  local np=$1 scenario=$2
  shift 2
  local bin=${BENCH_BIN#"$BENCH_ROOT"/}
  local -a opts
  mapfile -t opts < <(bench_options)
  local -a run=(run -- -np "$np" --map-by node --oversubscribe "$bin" bench "$scenario" --size "$BENCH_SIZE" "${opts[@]}" "$@"
    --chunk "$BENCH_CHUNK" --max-readers "$BENCH_MAX_READERS" --inflight "$BENCH_INFLIGHT"
    --link-mbit "$BENCH_RATE" --counters-cmd "scripts/netsim/netsim.sh --prefix $BENCH_PREFIX counters"
    "${BENCH_EXTRA[@]}")
  local up down launch
  up="scripts/netsim/netsim.sh --prefix $BENCH_PREFIX$(printf ' %q' "${BENCH_UP[@]}")"
  launch="scripts/netsim/netsim.sh --prefix $BENCH_PREFIX$(printf ' %q' "${run[@]}")"
  down="scripts/netsim/netsim.sh --prefix $BENCH_PREFIX down"
  echo "# reproduce (as root, from the repository root): $BENCH_SCRIPT_CMD"
  echo "#   = $up"
  echo "#     $launch"
  echo "#     $down"
  export TH_BENCH_LAUNCH="$up && $launch"
  (cd "$BENCH_ROOT" && bench_netsim "${run[@]}")
}

# For the scripts' --help.
bench_common_usage() {
  echo "Common options: --rate MBIT --size S --chunk C --max-readers K --inflight N --out FILE --bin PATH"
  echo "--prefix P, and -- ARGS for the bench itself (scripts/bench/lib.sh --help). Needs root."
}

# One run of the scenario on N+1 hosts (trainer + --readers N), its JSON to --out. Extra
# arguments go to `netsim.sh up` (e.g. --dcs 2 --wan-rate 40mbit).
# shellcheck disable=SC2120 # the netsim.sh up arguments are optional
bench_single_run() {
  [[ $BENCH_READERS =~ ^[1-9][0-9]*$ ]] || bench_die "--readers must be a positive number"
  bench_cluster_up $((BENCH_READERS + 1)) "$@"
  mkdir -p "$(dirname "$BENCH_OUT")"
  bench_run $((BENCH_READERS + 1)) "$BENCH_NAME" --json "$BENCH_OUT"
}

bench_counter() { bench_netsim counters | awk -v k="$1" '$1 == k { print $2 }'; }

bench_python() {
  local p
  for p in python3 /usr/bin/python3; do
    if command -v "$p" >/dev/null 2>&1 && "$p" -c 'import matplotlib' 2>/dev/null; then
      echo "$p"
      return
    fi
  done
  echo python3
}
