#!/usr/bin/env bash
# shellcheck disable=SC2153 # HOSTS, RATE, DCS, ... come from the sourced state (load_state)
# netsim.sh: an emulated cluster on one machine. Each "host" is a network namespace with its own
# hostname and /etc/hosts, wired to a per-datacenter bridge through a veth uplink that tc tbf
# caps at a chosen rate in both directions; two datacenters are joined by a slower WAN link.
# MPI jobs launch across the hosts through a launch agent (plm_rsh_agent) and talk TCP only.
# See share/doc/netsim.md.
set -euo pipefail

SELF=$(readlink -f "${BASH_SOURCE[0]}")
SELF_DIR=$(dirname "$SELF")
PROG=netsim.sh

usage() {
  cat <<'EOF'
Usage: netsim.sh [--state DIR] [--prefix P] COMMAND [options]

An emulated cluster: H hosts as network namespaces (P-h0 .. P-h{H-1}), each with a veth uplink
(th-eth0) to its datacenter's bridge (th-br0, th-br1) in a router namespace (P-rt). Every uplink
is shaped with tc tbf at --rate in both directions; with --dcs 2 the two bridges are joined by a
link (th-wan0/th-wan1) shaped at --wan-rate. Addresses live only inside the namespaces; nothing
is added to the root namespace. Needs root, ip (iproute2), tc, unshare and, for run, mpirun.

Commands:
  up --hosts H [--rate 300mbit] [--dcs 1|2] [--wan-rate 100mbit] [--slots N] [--subnet 10.77.0]
       [--latency 25ms]
                       create the cluster and write the state directory (hostfile, hosts,
                       agent, mpirun.env); a failed up removes what it created
  run [--osc ucx|rdma|pt2pt] [--on HOST] [--] MPIRUN_ARGS...
                       run mpirun on the head host (P-h0) with the cluster's flags, e.g.
                       netsim.sh run -- -np 3 ./prog   (hostfile, agent, TCP-only transports)
  exec HOST CMD...     run CMD on an emulated host (its namespace, hostname and /etc/hosts)
  check [--seconds S] [--tolerance PCT]
                       measure TCP throughput between hosts (same DC both ways, across DCs)
                       and unshaped loopback headroom; exit 1 if a link is off by > PCT %
  status               show hosts, addresses, qdiscs and their byte/drop counters
  counters             the same byte counters, one "key bytes" line each (up-HOST, down-HOST,
                       wan-dc0-dc1, wan-dc1-dc0), for scripts
  flags                print the mpirun flags (one per line)
  down                 kill every process in the cluster's namespaces and delete them (with
                       their bridges and veths); idempotent, works after a crash
  agent HOST CMD...    launch agent used by mpirun (plm_rsh_agent); not for direct use

Global options (also accepted among a command's options, e.g. "up --hosts 3 --state DIR"):
  --state DIR          state directory (default: $TH_NETSIM_STATE or /tmp/P-netsim)
  --prefix P           namespace/hostname prefix, must start with "th" (default: th), so two
                       clusters (e.g. a test and a manual one) can coexist
  -h, --help           this text

Exit codes: 0 ok, 1 failure, 2 usage error, 77 cannot run here (not root, tool missing,
network namespaces unusable).

Example:
  sudo scripts/netsim/netsim.sh up --hosts 4 --rate 300mbit --dcs 2 --wan-rate 100mbit
  sudo scripts/netsim/netsim.sh check
  sudo scripts/netsim/netsim.sh run -- -np 4 hostname
  sudo scripts/netsim/netsim.sh down
EOF
}

die() { echo "$PROG: error: $*" >&2; exit 1; }
usage_error() { echo "$PROG: $*" >&2; echo "Try '$PROG --help'." >&2; exit 2; }
skip() { echo "$PROG: cannot run here: $*" >&2; exit 77; }
log() { echo "$PROG: $*" >&2; }

require_root() {
  [[ $(id -u) -eq 0 ]] || skip "needs root (network namespaces, veths, tc); run it as root or with sudo"
}
require_tools() {
  local t
  for t in "$@"; do
    command -v "$t" >/dev/null 2>&1 || skip "'$t' not found in PATH (install iproute2 / util-linux / openmpi-bin)"
  done
}

# ---- global options --------------------------------------------------------------------------
STATE=""
PREFIX=th
while [[ $# -gt 0 ]]; do
  case $1 in
    --state) [[ $# -ge 2 ]] || usage_error "--state needs a directory"; STATE=$2; shift 2 ;;
    --state=*) STATE=${1#*=}; shift ;;
    --prefix) [[ $# -ge 2 ]] || usage_error "--prefix needs a value"; PREFIX=$2; shift 2 ;;
    --prefix=*) PREFIX=${1#*=}; shift ;;
    -h|--help) usage; exit 0 ;;
    -*) usage_error "unknown option '$1'" ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || { usage >&2; exit 2; }
CMD=$1; shift
STATE_OPT=$STATE
# Derived names; called again when a command's own --state/--prefix changed them.
set_globals() {
  [[ $PREFIX =~ ^th[a-z0-9]{0,6}$ ]] || usage_error "--prefix must be 'th' followed by up to 6 of [a-z0-9] (got '$PREFIX')"
  STATE=${STATE_OPT:-${TH_NETSIM_STATE:-/tmp/${PREFIX}-netsim}}
  STATE=$(readlink -m "$STATE")
  ROUTER=${PREFIX}-rt
}
set_globals
# The commands' option loops accept the global options too: `up --hosts 3 --state DIR`.
# Usage: global_opt "$@" -> sets GLOBAL_SHIFT to 2 (or 1 for --x=v) when $1 is one, else 0.
global_opt() {
  GLOBAL_SHIFT=0
  case $1 in
    --state) [[ $# -ge 2 ]] || usage_error "--state needs a directory"; STATE_OPT=$2; GLOBAL_SHIFT=2 ;;
    --state=*) STATE_OPT=${1#*=}; GLOBAL_SHIFT=1 ;;
    --prefix) [[ $# -ge 2 ]] || usage_error "--prefix needs a value"; PREFIX=$2; GLOBAL_SHIFT=2 ;;
    --prefix=*) PREFIX=${1#*=}; GLOBAL_SHIFT=1 ;;
    *) return 0 ;;
  esac
  set_globals
}
MARKER=.th-netsim
IFACE=th-eth0 # the uplink inside every host namespace (same name everywhere, for UCX_NET_DEVICES)

# ---- helpers ---------------------------------------------------------------------------------
# Rate in tc syntax (bit-based units only) -> bits per second.
rate_bps() {
  local r=${1,,}
  [[ $r =~ ^([0-9]+)(\.[0-9]+)?(bit|kbit|mbit|gbit)$ ]] || return 1
  local mant=${BASH_REMATCH[1]}${BASH_REMATCH[2]} unit=${BASH_REMATCH[3]} mult
  case $unit in bit) mult=1 ;; kbit) mult=1000 ;; mbit) mult=1000000 ;; gbit) mult=1000000000 ;; esac
  awk -v m="$mant" -v k="$mult" 'BEGIN { printf "%.0f\n", m * k }'
}
check_rate() {
  local bps
  bps=$(rate_bps "$2") || usage_error "$1: bad rate '$2' (use e.g. 300mbit, 1gbit, 500kbit)"
  [[ $bps -ge 1000000 ]] || usage_error "$1: rate '$2' is below 1mbit"
}

# tbf on DEV (inside namespace NS) at RATE; burst about 4 ms at that rate (>= 64 KiB, so a
# whole 64 KiB GSO segment passes without being split), queue bounded by LATENCY.
shape() {
  local ns=$1 dev=$2 rate=$3 bps burst
  bps=$(rate_bps "$rate")
  burst=$(( bps / 8 / 250 ))
  [[ $burst -ge 65536 ]] || burst=65536
  ip -n "$ns" link set dev "$dev" txqueuelen 1000
  tc -n "$ns" qdisc replace dev "$dev" root tbf rate "$rate" burst "$burst" latency "$LATENCY" \
    || skip "tc tbf failed on $dev in $ns (is the sch_tbf qdisc available in this kernel?)"
}

load_state() {
  [[ -f $STATE/config ]] || die "no cluster state in $STATE (run '$PROG up' first, or pass --state/--prefix)"
  # shellcheck source=/dev/null
  source "$STATE/config"
  ip netns list 2>/dev/null | awk '{print $1}' | grep -qxF "$HEAD" \
    || die "state in $STATE says the cluster is up, but namespace $HEAD is missing (run '$PROG down' then 'up')"
}

# Host name or address -> namespace name (from the hosts table written by up).
resolve_ns() {
  local want=$1 name ip dc
  while read -r name ip dc; do
    if [[ $want == "$name" || $want == "$ip" || ${want%%.*} == "$name" ]]; then
      echo "$name"; return 0
    fi
  done <"$STATE/hosts.tsv"
  return 1
}

# Our namespaces: those listed in the state plus any matching the naming scheme (after a crash
# the state may be incomplete).
our_namespaces() {
  {
    [[ -f $STATE/namespaces ]] && cat "$STATE/namespaces"
    ip netns list 2>/dev/null | awk '{print $1}' | grep -E "^${PREFIX}-(h[0-9]+|rt)$" || true
  } | awk 'NF && !seen[$0]++'
}

# ---- down ------------------------------------------------------------------------------------
cmd_down() {
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    usage_error "down: unknown argument '$1'"
  done
  require_root
  require_tools ip
  local ns pids n=0 round
  mapfile -t nss < <(our_namespaces)
  for round in TERM KILL; do
    for ns in "${nss[@]}"; do
      [[ -e /run/netns/$ns ]] || continue
      pids=$(ip netns pids "$ns" 2>/dev/null || true)
      [[ -n $pids ]] || continue
      # shellcheck disable=SC2086
      kill -s "$round" $pids 2>/dev/null || true
    done
    # give TERM a moment to work before KILL
    if [[ $round == TERM ]]; then
      local t
      for t in 1 2 3 4 5 6 7 8 9 10; do
        local left=""
        for ns in "${nss[@]}"; do
          [[ -e /run/netns/$ns ]] && left+=$(ip netns pids "$ns" 2>/dev/null || true)
        done
        [[ -z $left ]] && break
        sleep 0.2
      done
    fi
  done
  for ns in "${nss[@]}"; do
    if [[ -e /run/netns/$ns ]]; then
      ip netns del "$ns" 2>/dev/null || log "warning: could not delete namespace $ns"
      n=$((n + 1))
    fi
  done
  if [[ -f $STATE/$MARKER ]]; then
    rm -f "$STATE"/{config,namespaces,hostfile,hosts,hosts.tsv,topology.json,agent,mpirun.env,mpirun.args,$MARKER}
    rmdir "$STATE" 2>/dev/null || true
  fi
  log "down: removed $n namespace(s) with prefix '$PREFIX'"
}

# ---- up --------------------------------------------------------------------------------------
UP_OK=0
up_cleanup() {
  local rc=$?
  if [[ $UP_OK -ne 1 ]]; then
    log "up failed (exit $rc); removing what was created"
    trap - EXIT INT TERM
    ( cmd_down ) || true
    exit $(( rc == 0 ? 1 : rc ))
  fi
}

cmd_up() {
  local hosts="" rate=300mbit dcs=1 wan_rate=100mbit slots=1 subnet=10.77.0
  LATENCY=25ms
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    case $1 in
      --hosts) hosts=${2:-}; shift 2 || usage_error "--hosts needs a number" ;;
      --rate) rate=${2:-}; shift 2 || usage_error "--rate needs a value" ;;
      --dcs) dcs=${2:-}; shift 2 || usage_error "--dcs needs 1 or 2" ;;
      --wan-rate) wan_rate=${2:-}; shift 2 || usage_error "--wan-rate needs a value" ;;
      --slots) slots=${2:-}; shift 2 || usage_error "--slots needs a number" ;;
      --subnet) subnet=${2:-}; shift 2 || usage_error "--subnet needs A.B.C" ;;
      --latency) LATENCY=${2:-}; shift 2 || usage_error "--latency needs a value like 25ms" ;;
      -h|--help) usage; exit 0 ;;
      *) usage_error "up: unknown option '$1'" ;;
    esac
  done
  [[ $hosts =~ ^[0-9]+$ && $hosts -ge 1 && $hosts -le 250 ]] || usage_error "up: --hosts must be 1..250 (got '$hosts')"
  [[ $dcs == 1 || $dcs == 2 ]] || usage_error "up: --dcs must be 1 or 2 (got '$dcs')"
  [[ $dcs == 1 || $hosts -ge 2 ]] || usage_error "up: --dcs 2 needs at least 2 hosts"
  [[ $slots =~ ^[0-9]+$ && $slots -ge 1 ]] || usage_error "up: --slots must be a positive number"
  [[ $subnet =~ ^(10|172|192)\.[0-9]{1,3}\.[0-9]{1,3}$ ]] || usage_error "up: --subnet must be the first three octets of a private /24, e.g. 10.77.0"
  [[ $LATENCY =~ ^[0-9]+(ms|us)$ ]] || usage_error "up: --latency must look like 25ms"
  check_rate --rate "$rate"
  check_rate --wan-rate "$wan_rate"
  require_root
  require_tools ip tc unshare awk

  if [[ -f $STATE/config ]] || [[ -n $(our_namespaces) ]]; then
    die "a cluster with prefix '$PREFIX' (state $STATE) is already up; run '$PROG --prefix $PREFIX down' first"
  fi
  if [[ -e $STATE && ! -d $STATE ]]; then die "state path $STATE exists and is not a directory"; fi
  if [[ -d $STATE && -n $(ls -A "$STATE") && ! -f $STATE/$MARKER ]]; then
    die "state directory $STATE is not empty and was not made by $PROG; choose another --state"
  fi
  mkdir -p "$STATE"
  touch "$STATE/$MARKER"
  : >"$STATE/namespaces"

  trap up_cleanup EXIT
  trap 'exit 130' INT TERM

  # Is `ip netns` usable at all (container without CAP_SYS_ADMIN, no /run/netns, ...)?
  echo "$ROUTER" >>"$STATE/namespaces"
  if ! ip netns add "$ROUTER" 2>"$STATE/.err"; then
    local err; err=$(cat "$STATE/.err"); rm -f "$STATE/.err"
    UP_OK=1; trap - EXIT; ( cmd_down ) >/dev/null 2>&1 || true
    skip "'ip netns add' failed: $err"
  fi
  rm -f "$STATE/.err"
  ip -n "$ROUTER" link set lo up
  ip netns exec "$ROUTER" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true

  local d
  for ((d = 0; d < dcs; d++)); do
    ip -n "$ROUTER" link add "th-br$d" type bridge stp_state 0 forward_delay 0
    ip -n "$ROUTER" link set "th-br$d" up
  done
  if [[ $dcs -eq 2 ]]; then
    ip -n "$ROUTER" link add th-wan0 type veth peer name th-wan1
    ip -n "$ROUTER" link set th-wan0 master th-br0 up
    ip -n "$ROUTER" link set th-wan1 master th-br1 up
    shape "$ROUTER" th-wan0 "$wan_rate"   # DC0 -> DC1
    shape "$ROUTER" th-wan1 "$wan_rate"   # DC1 -> DC0
  fi

  local i ns ip dc dc0=$(( dcs == 2 ? (hosts + 1) / 2 : hosts ))
  : >"$STATE/hosts.tsv"
  printf '127.0.0.1\tlocalhost\n' >"$STATE/hosts"
  : >"$STATE/hostfile"
  for ((i = 0; i < hosts; i++)); do
    ns=${PREFIX}-h$i
    ip="$subnet.$((i + 1))"
    dc=$(( i < dc0 ? 0 : 1 ))
    echo "$ns" >>"$STATE/namespaces"
    ip netns add "$ns"
    ip -n "$ns" link set lo up
    ip netns exec "$ns" sysctl -qw net.ipv6.conf.all.disable_ipv6=1 net.ipv6.conf.default.disable_ipv6=1 || true
    # bridge side in the router namespace, host side created straight inside the host namespace
    ip -n "$ROUTER" link add "th-h$i-br" type veth peer name "$IFACE" netns "$ns"
    ip -n "$ROUTER" link set "th-h$i-br" master "th-br$dc" up
    ip -n "$ns" addr add "$ip/24" dev "$IFACE"
    ip -n "$ns" link set "$IFACE" up
    shape "$ns" "$IFACE" "$rate"              # host -> network (uplink)
    shape "$ROUTER" "th-h$i-br" "$rate"       # network -> host (downlink)
    printf '%s\t%s\t%s\n' "$ns" "$ip" "$dc" >>"$STATE/hosts.tsv"
    printf '%s\t%s\n' "$ip" "$ns" >>"$STATE/hosts"
    printf '%s slots=%s\n' "$ns" "$slots" >>"$STATE/hostfile"
  done

  # TensorHub topology file: each host's datacenter (share/doc/topology.md)
  awk 'BEGIN { printf "{\"format\": \"tensorhub-topology\", \"version\": 1, \"hosts\": [" }
       { printf "%s{\"host\": \"%s\", \"dc\": \"dc%s\"}", (NR > 1 ? ", " : ""), $1, $3 }
       END { print "]}" }' "$STATE/hosts.tsv" >"$STATE/topology.json"

  # launch agent for mpirun: runs the remote command on the named host
  cat >"$STATE/agent" <<EOF
#!/bin/sh
# plm_rsh_agent for the netsim cluster in $STATE: agent [options] HOST COMMAND...
exec $(printf %q "$SELF") --state $(printf %q "$STATE") --prefix $PREFIX agent "\$@"
EOF
  chmod +x "$STATE/agent"

  # mpirun flags: hostfile, launch agent, TCP only on the cluster subnet (no shared memory
  # across hosts), UCX over TCP on the uplink, yield when idle (ranks outnumber the cores).
  # shellcheck disable=SC2054 # "self,tcp" is one value
  local -a flags=(
    --hostfile "$STATE/hostfile"
    --mca plm_rsh_agent "$STATE/agent"
    --mca plm_rsh_no_tree_spawn 1
    --mca btl self,tcp
    --mca pml ob1
    --mca btl_tcp_if_include "$subnet.0/24"
    --mca oob_tcp_if_include "$subnet.0/24"
    --mca mpi_yield_when_idle 1
    -x UCX_TLS=tcp
    -x "UCX_NET_DEVICES=$IFACE"
    -x UCX_WARN_UNUSED_ENV_VARS=n
  )
  [[ $(id -u) -eq 0 ]] && flags+=(--allow-run-as-root)
  {
    echo "# mpirun flags for the netsim cluster (bash: source this file)"
    printf 'TH_NETSIM_MPIRUN_FLAGS=('; printf ' %q' "${flags[@]}"; printf ' )\n'
    echo "TH_NETSIM_OSC=ucx   # one-sided: --mca osc \$TH_NETSIM_OSC"
    printf 'TH_NETSIM_HEAD=%q\n' "${PREFIX}-h0"
  } >"$STATE/mpirun.env"
  printf '%s\n' "${flags[@]}" >"$STATE/mpirun.args"

  {
    printf 'PREFIX=%q\nHOSTS=%q\nRATE=%q\nDCS=%q\nWAN_RATE=%q\nSLOTS=%q\nSUBNET=%q\nLATENCY=%q\nHEAD=%q\nDC0_HOSTS=%q\n' \
      "$PREFIX" "$hosts" "$rate" "$dcs" "$wan_rate" "$slots" "$subnet" "$LATENCY" "${PREFIX}-h0" "$dc0"
  } >"$STATE/config"

  UP_OK=1
  trap - EXIT INT TERM
  local desc="$hosts host(s) ${PREFIX}-h0..${PREFIX}-h$((hosts - 1)), uplinks $rate each way"
  [[ $dcs -eq 2 ]] && desc+=", DC0 = h0..h$((dc0 - 1)), DC1 = h$dc0..h$((hosts - 1)), WAN $wan_rate"
  log "up: $desc; state in $STATE"
}

# ---- exec / agent ----------------------------------------------------------------------------
# Inside "ip netns exec NS unshare --uts --mount": become host NS (hostname, /etc/hosts).
cmd__inner() {
  local ns=$1; shift
  mount --bind "$STATE/hosts" /etc/hosts
  if command -v hostname >/dev/null 2>&1; then hostname "$ns"; else echo "$ns" >/proc/sys/kernel/hostname; fi
  # The host's datacenter label for TensorHub (lib/topo, the hub's worker labels): every process
  # started on this host, MPI ranks included (orted and mpirun pass their environment on).
  local dc
  dc=$(awk -v h="$ns" '$1 == h {print $3}' "$STATE/hosts.tsv")
  export TENSORHUB_DC="dc${dc:-0}"
  [[ -f $STATE/topology.json ]] && export TENSORHUB_TOPOLOGY="$STATE/topology.json"
  exec "$@"
}

exec_on() {
  local ns=$1; shift
  exec ip netns exec "$ns" unshare --uts --mount -- "$SELF" --state "$STATE" --prefix "$PREFIX" _inner "$ns" "$@"
}

cmd_exec() {
  [[ $# -ge 2 ]] || usage_error "exec needs HOST and a command"
  require_root
  load_state
  local ns; ns=$(resolve_ns "$1") || die "unknown host '$1' (hosts: $(awk '{printf "%s ", $1}' "$STATE/hosts.tsv"))"
  shift
  exec_on "$ns" "$@"
}

# mpirun calls: agent [ssh-like options] HOST WORDS...; like ssh, the words form one shell command.
cmd_agent() {
  while [[ $# -gt 0 && $1 == -* ]]; do shift; done
  [[ $# -ge 2 ]] || { echo "$PROG agent: usage: agent HOST COMMAND..." >&2; exit 255; }
  [[ -f $STATE/hosts.tsv ]] || { echo "$PROG agent: no cluster state in $STATE" >&2; exit 255; }
  local ns; ns=$(resolve_ns "$1") || { echo "$PROG agent: unknown host '$1'" >&2; exit 255; }
  shift
  [[ -n ${TH_NETSIM_AGENT_LOG:-} ]] && echo "$(date +%T) agent $ns: $*" >>"$TH_NETSIM_AGENT_LOG"
  exec_on "$ns" /bin/sh -c "$*"
}

# ---- run -------------------------------------------------------------------------------------
cmd_run() {
  local osc="" on=""
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    case $1 in
      --osc) osc=${2:-}; shift 2 || usage_error "--osc needs a component" ;;
      --on) on=${2:-}; shift 2 || usage_error "--on needs a host" ;;
      --) shift; break ;;
      *) break ;;
    esac
  done
  [[ $# -ge 1 ]] || usage_error "run needs mpirun arguments, e.g. run -- -np 3 hostname"
  require_root
  require_tools mpirun
  load_state
  # shellcheck source=/dev/null
  source "$STATE/mpirun.env"
  osc=${osc:-${TH_NETSIM_OSC_OVERRIDE:-$TH_NETSIM_OSC}}
  local ns=$HEAD
  if [[ -n $on ]]; then ns=$(resolve_ns "$on") || die "unknown host '$on'"; fi
  exec_on "$ns" mpirun "${TH_NETSIM_MPIRUN_FLAGS[@]}" --mca osc "$osc" "$@"
}

cmd_flags() {
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    usage_error "flags: unknown argument '$1'"
  done
  load_state
  cat "$STATE/mpirun.args"
  # shellcheck source=/dev/null
  source "$STATE/mpirun.env"
  printf '%s\n' --mca osc "$TH_NETSIM_OSC"
}

# ---- status ----------------------------------------------------------------------------------
cmd_status() {
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    usage_error "status: unknown argument '$1'"
  done
  require_root
  load_state
  echo "cluster '$PREFIX' (state $STATE): $HOSTS host(s), rate $RATE, dcs $DCS$([[ $DCS == 2 ]] && echo ", wan $WAN_RATE")"
  local name ip dc
  while read -r name ip dc; do
    printf '  %-10s %-15s dc%s  pids: %s\n' "$name" "$ip" "$dc" "$(ip netns pids "$name" 2>/dev/null | wc -l)"
    tc -n "$name" -s qdisc show dev "$IFACE" | awk -v n="$name" '/^qdisc tbf/{q=$0} /Sent/{printf "    up   %s: sent %s bytes, dropped %s\n", n, $2, $7+0}'
    tc -n "$ROUTER" -s qdisc show dev "th-${name#"${PREFIX}"-}-br" | awk -v n="$name" '/Sent/{printf "    down %s: sent %s bytes, dropped %s\n", n, $2, $7+0}'
  done <"$STATE/hosts.tsv"
  if [[ $DCS == 2 ]]; then
    tc -n "$ROUTER" -s qdisc show dev th-wan0 | awk '/Sent/{printf "  wan dc0->dc1: sent %s bytes, dropped %s\n", $2, $7+0}'
    tc -n "$ROUTER" -s qdisc show dev th-wan1 | awk '/Sent/{printf "  wan dc1->dc0: sent %s bytes, dropped %s\n", $2, $7+0}'
  fi
}

# ---- counters --------------------------------------------------------------------------------
# Machine-readable byte counters of every shaped link (tc qdisc "Sent" bytes, whole frames):
#   up-HOST BYTES      what HOST sent (its uplink)     down-HOST BYTES   what HOST received
#   wan-dc0-dc1 BYTES  DC 0 -> DC 1 over the WAN       wan-dc1-dc0 BYTES DC 1 -> DC 0
qdisc_bytes() { tc -n "$1" -s qdisc show dev "$2" | awk '/Sent/ { print $2; exit }'; }
cmd_counters() {
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    usage_error "counters: unknown argument '$1'"
  done
  require_root
  load_state
  local name ip dc
  while read -r name ip dc; do
    echo "up-$name $(qdisc_bytes "$name" "$IFACE")"
    echo "down-$name $(qdisc_bytes "$ROUTER" "th-${name#"${PREFIX}"-}-br")"
  done <"$STATE/hosts.tsv"
  if [[ $DCS == 2 ]]; then
    echo "wan-dc0-dc1 $(qdisc_bytes "$ROUTER" th-wan0)"
    echo "wan-dc1-dc0 $(qdisc_bytes "$ROUTER" th-wan1)"
  fi
}

# ---- check -----------------------------------------------------------------------------------
cpu_jiffies() { awk '/^cpu /{ idle = $5 + $6; tot = 0; for (i = 2; i <= NF; i++) tot += $i; print tot, idle }' /proc/stat; }

# measure SRC -> DST for S seconds; prints "mbit sender_cpu% receiver_cpu% machine_busy%"
measure() {
  local src=$1 dst=$2 secs=$3 port=$4 dst_ip rfile
  dst_ip=$(awk -v h="$dst" '$1 == h {print $2}' "$STATE/hosts.tsv")
  [[ $src == "$dst" ]] && dst_ip=127.0.0.1
  rfile=$(mktemp "${TMPDIR:-/tmp}/th-netsim-recv.XXXXXX")
  "$SELF" --state "$STATE" --prefix "$PREFIX" exec "$dst" python3 "$SELF_DIR/tcpbench.py" recv "$port" >"$rfile" &
  local rpid=$! t0 t1
  sleep 0.5
  read -r -a t0 < <(cpu_jiffies)
  local sout
  sout=$("$SELF" --state "$STATE" --prefix "$PREFIX" exec "$src" python3 "$SELF_DIR/tcpbench.py" send "$dst_ip" "$port" "$secs") \
    || { kill "$rpid" 2>/dev/null || true; rm -f "$rfile"; die "TCP sender $src -> $dst failed"; }
  wait "$rpid" || { rm -f "$rfile"; die "TCP receiver on $dst failed"; }
  read -r -a t1 < <(cpu_jiffies)
  local rout; rout=$(cat "$rfile"); rm -f "$rfile"
  # tcpbench prints: "bytes=.. seconds=.. mbit=.. cpu=.."
  local mbit rcpu scpu busy
  mbit=$(sed -n 's/.*mbit=\([0-9.]*\).*/\1/p' <<<"$rout")
  rcpu=$(sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' <<<"$rout")
  scpu=$(sed -n 's/.*cpu=\([0-9.]*\).*/\1/p' <<<"$sout")
  busy=$(awk -v a="${t0[0]}" -v ai="${t0[1]}" -v b="${t1[0]}" -v bi="${t1[1]}" \
    'BEGIN { d = b - a; printf "%.0f", (d > 0 ? 100 * (d - (bi - ai)) / d : 0) }')
  echo "$mbit $scpu $rcpu $busy"
}

cmd_check() {
  local secs=2 tol=30
  while [[ $# -gt 0 ]]; do
    global_opt "$@"; [[ $GLOBAL_SHIFT -gt 0 ]] && { shift "$GLOBAL_SHIFT"; continue; }
    case $1 in
      --seconds) secs=${2:-}; shift 2 || usage_error "--seconds needs a number" ;;
      --tolerance) tol=${2:-}; shift 2 || usage_error "--tolerance needs a percentage" ;;
      *) usage_error "check: unknown option '$1'" ;;
    esac
  done
  [[ $secs =~ ^[0-9]+(\.[0-9]+)?$ ]] || usage_error "check: --seconds must be a number"
  [[ $tol =~ ^[0-9]+$ ]] || usage_error "check: --tolerance must be a whole percentage"
  require_root
  require_tools python3
  load_state
  [[ $HOSTS -ge 2 ]] || die "check needs at least 2 hosts"
  local rate_m wan_m fail=0 port=5201
  rate_m=$(( $(rate_bps "$RATE") / 1000000 ))
  wan_m=$(( $(rate_bps "$WAN_RATE") / 1000000 ))
  local -a pairs=()
  local h0=${PREFIX}-h0 h1=${PREFIX}-h1 last=${PREFIX}-h$((HOSTS - 1))
  if [[ $DCS == 1 || $DC0_HOSTS -ge 2 ]]; then
    pairs+=("$h0 $h1 $rate_m same-dc" "$h1 $h0 $rate_m same-dc")
  fi
  if [[ $DCS == 2 ]]; then
    # TCP over the WAN: the slower of the WAN and the uplinks bounds it
    local cap=$(( wan_m < rate_m ? wan_m : rate_m ))
    pairs+=("$h0 $last $cap cross-dc" "$last $h0 $cap cross-dc")
  fi
  printf 'netsim check: %s host(s), uplink cap %s, %s\n' "$HOSTS" "$RATE" \
    "$([[ $DCS == 2 ]] && echo "WAN cap $WAN_RATE" || echo "one DC")"
  printf '  %-30s %9s %9s %7s %8s %8s %9s\n' link cap_mbit got_mbit of_cap send_cpu recv_cpu mach_busy
  local p src dst cap kind res mbit scpu rcpu busy pct
  for p in "${pairs[@]}"; do
    read -r src dst cap kind <<<"$p"
    res=$(measure "$src" "$dst" "$secs" "$port"); port=$((port + 1))
    read -r mbit scpu rcpu busy <<<"$res"
    pct=$(awk -v m="$mbit" -v c="$cap" 'BEGIN { printf "%.0f", 100 * m / c }')
    printf '  %-30s %9s %9s %6s%% %7s%% %7s%% %8s%%\n' "$src->$dst ($kind)" "$cap" "$mbit" "$pct" "$scpu" "$rcpu" "$busy"
    if (( pct < 100 - tol || pct > 100 + tol )); then
      echo "  ^ outside ±$tol% of the cap" >&2; fail=1
    fi
  done
  # headroom: unshaped TCP over loopback inside one host, to compare with the caps
  res=$(measure "$h0" "$h0" 1 "$port")
  read -r mbit scpu rcpu busy <<<"$res"
  printf '  %-30s %9s %9s %7s %7s%% %7s%% %8s%%\n' "$h0 loopback (no cap)" - "$mbit" - "$scpu" "$rcpu" "$busy"
  local head_x; head_x=$(awk -v m="$mbit" -v c="$rate_m" 'BEGIN { printf "%.0f", m / c }')
  echo "  unshaped TCP is ${head_x}x the uplink cap: the caps, not the CPUs, bound the links"
  if [[ $fail -ne 0 ]]; then echo "netsim check: FAILED" >&2; return 1; fi
  echo "netsim check: ok"
}

# ---- dispatch --------------------------------------------------------------------------------
case $CMD in
  up) cmd_up "$@" ;;
  down) cmd_down "$@" ;;
  run) cmd_run "$@" ;;
  exec) cmd_exec "$@" ;;
  agent) cmd_agent "$@" ;;
  _inner) cmd__inner "$@" ;;
  check) cmd_check "$@" ;;
  status) cmd_status "$@" ;;
  counters) cmd_counters "$@" ;;
  flags) cmd_flags "$@" ;;
  help) usage ;;
  *) usage_error "unknown command '$CMD'" ;;
esac
