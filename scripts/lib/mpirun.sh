#!/usr/bin/env bash
# th_mpirun: launch an MPI job with the Open MPI flags this machine needs.
#
# Source it:   source "$ROOT/scripts/lib/mpirun.sh"
#              th_mpirun 4 build/apps/tensorhub/tensorhub demo --size 1G
#              th_mpirun_cmd 4 ./a.out; printf '%q ' "${TH_MPIRUN_CMD[@]}"   # build only, don't run
# Or run it:   scripts/lib/mpirun.sh 4 build/apps/tensorhub/tensorhub demo
#
# Flags added for Open MPI (see shared design ARCHITECTURE.md §3):
#   --oversubscribe      2-core machines run more ranks than cores
#   --mca osc ucx        Debian's /etc/openmpi/openmpi-mca-params.conf disables osc ucx; the
#                        RMA data plane needs it (and MPI_Win_create fails with 1 rank without it)
#   --allow-run-as-root  only when running as uid 0 (CI, containers)
# These are skipped when $MPIRUN is not Open MPI (e.g. MPIRUN=mpiexec.mpich).
#
# Environment:
#   MPIRUN                   launcher (default: mpirun); may contain words, e.g. "timeout 600 mpirun"
#   TENSORHUB_MPIRUN_FLAGS   extra launcher flags, split on whitespace, e.g. "--mca pml ucx"
#   TH_MPIRUN_QUIET=1        don't echo the command line to stderr before running it
#
# When sourced this file changes no shell options; scripts that source it set -euo pipefail.

# th_mpirun_is_openmpi LAUNCHER...: true when the launcher reports Open MPI (result cached).
th_mpirun_is_openmpi() {
  local key="$*"
  if [[ "${_TH_MPIRUN_FLAVOR_KEY:-}" != "$key" ]]; then
    _TH_MPIRUN_FLAVOR_KEY=$key
    local version
    version=$("$@" --version 2>&1 </dev/null || true)
    if [[ "$version" == *"Open MPI"* || "$version" == *OpenRTE* ]]; then
      _TH_MPIRUN_FLAVOR=openmpi
    else
      _TH_MPIRUN_FLAVOR=other
    fi
  fi
  [[ "$_TH_MPIRUN_FLAVOR" == openmpi ]]
}

# th_mpirun_cmd NP ARGS...: sets the array TH_MPIRUN_CMD to the full launcher command line.
th_mpirun_cmd() {
  if (($# < 2)) || ! [[ "$1" =~ ^[1-9][0-9]*$ ]]; then
    echo "th_mpirun: usage: th_mpirun NP PROGRAM [ARGS...] (NP a positive integer, got '${1:-}')" >&2
    return 2
  fi
  local np=$1
  shift
  local -a launcher extra
  read -r -a launcher <<<"${MPIRUN:-mpirun}"
  read -r -a extra <<<"${TENSORHUB_MPIRUN_FLAGS:-}"
  if ((${#launcher[@]} == 0)) || ! command -v "${launcher[-1]}" >/dev/null 2>&1; then
    echo "th_mpirun: launcher '${MPIRUN:-mpirun}' not found (install openmpi-bin or set MPIRUN)" >&2
    return 127
  fi
  TH_MPIRUN_CMD=("${launcher[@]}" -n "$np")
  if th_mpirun_is_openmpi "${launcher[@]}"; then
    TH_MPIRUN_CMD+=(--oversubscribe --mca osc ucx)
    if ((EUID == 0)); then
      TH_MPIRUN_CMD+=(--allow-run-as-root)
    fi
  fi
  TH_MPIRUN_CMD+=("${extra[@]}" "$@")
}

# th_mpirun NP ARGS...: builds the command line (see th_mpirun_cmd), echoes it, runs it and
# returns its exit status.
th_mpirun() {
  th_mpirun_cmd "$@" || return
  if [[ "${TH_MPIRUN_QUIET:-0}" != 1 ]]; then
    printf '+' >&2
    printf ' %q' "${TH_MPIRUN_CMD[@]}" >&2
    printf '\n' >&2
  fi
  "${TH_MPIRUN_CMD[@]}"
}

# Executed rather than sourced: act as a command.
if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
  set -euo pipefail
  case "${1:-}" in
    "" | -h | --help)
      cat <<'TXT'
Usage: scripts/lib/mpirun.sh NP PROGRAM [ARGS...]
       scripts/lib/mpirun.sh --print NP PROGRAM [ARGS...]   (print the command, don't run it)
   or: source scripts/lib/mpirun.sh; th_mpirun NP PROGRAM [ARGS...]

Runs PROGRAM on NP ranks with the Open MPI flags this machine needs:
--oversubscribe, --mca osc ucx (Debian disables it by default), and
--allow-run-as-root when uid is 0.

Environment: MPIRUN (default mpirun), TENSORHUB_MPIRUN_FLAGS (extra flags),
TH_MPIRUN_QUIET=1 (don't echo the command).

Example:
  TENSORHUB_MPIRUN_FLAGS="--mca pml ucx" scripts/lib/mpirun.sh 4 build/apps/tensorhub/tensorhub demo
TXT
      [[ -n "${1:-}" ]] || exit 2
      exit 0
      ;;
    --print)
      shift
      th_mpirun_cmd "$@"
      printf '%q ' "${TH_MPIRUN_CMD[@]}"
      printf '\n'
      ;;
    *) th_mpirun "$@" ;;
  esac
fi
