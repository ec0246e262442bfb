#!/usr/bin/env bash
# Installs the Debian packages TensorHub's build, tests and lint step need, only those missing.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

# The build. Keep in sync with share/cmake/TensorHubDependencies.cmake.
BUILD_PACKAGES=(
  build-essential cmake ninja-build pkg-config ccache
  libopenmpi-dev openmpi-bin libucx-dev
  libhwloc-dev hwloc
  libhdf5-openmpi-dev hdf5-tools python3-h5py python3-numpy
  libboost-program-options-dev
  libgtest-dev libgmock-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler
  nlohmann-json3-dev libxxhash-dev
  python3-dev pybind11-dev  # lib/python: the `tensorhub` Python extension (TENSORHUB_PYTHON)
  libcpp-httplib-dev  # Prometheus metrics endpoint of the coordinator (lib/coord metrics_server.cpp)
)
# What the tests run besides the build (so that as root no test is skipped, see tests/):
#   slurmctld slurmd slurm-client munge   tests/slurm: scripts/slurm-local.sh (munged, mungekey,
#                                          slurmctld, slurmd, sbatch, srun, sinfo, squeue, scontrol)
#   iproute2 util-linux                    tests/netsim: ip, tc, ss; unshare, flock
#   python3                                JSON checks of tests/cli and tests/netsim
#   python3-pytest python3-mpi4py          tests/python (label python): pytest, mpi4py ranks
#   python3-venv                           the venv of torch + transformers from PyPI that
#                                          scripts/bootstrap-torch.sh makes (tests/python/test_torch.py)
#   prometheus                             promtool check metrics (tests/cli metrics test)
TEST_PACKAGES=(
  slurmctld slurmd slurm-client munge
  iproute2 util-linux
  python3
  python3-pytest python3-mpi4py python3-venv
  prometheus
)
# scripts/lint.sh (run by .ci/run).
LINT_PACKAGES=(clang-format clang-tidy)

usage() {
  cat <<TXT
Usage: scripts/bootstrap.sh [--build-only] [--check | --list | --help]

Installs the Debian 12 packages needed to build and test TensorHub ($ROOT),
but only the ones that are missing: one 'apt-get update' and one 'apt-get
install --no-install-recommends' for those. Prints nothing and takes well
under a second when everything is already installed. Uses sudo when not root.
Three lists: the build (${#BUILD_PACKAGES[@]} packages), what the tests run (Slurm and munge for
tests/slurm, iproute2/util-linux for tests/netsim, python3) and the lint tools
(clang-format, clang-tidy). Without --build-only it then makes the tests' venv with torch
and transformers from PyPI (scripts/bootstrap-torch.sh; about 3 GB once, then nothing). scripts/build.sh installs the build list only;
scripts/test.sh and .ci/run install all three.

Options:
  --build-only  only the build list
  --check       only report missing packages; exit 1 if any are missing
  --list        print the package list (with --build-only: the build list) and exit
  --help        this text

Environment:
  TENSORHUB_SKIP_BOOTSTRAP=1   do nothing (dependencies provided another way)

Example:
  scripts/bootstrap.sh && scripts/build.sh
TXT
}

mode=install
build_only=0
for arg in "$@"; do
  case "$arg" in
    -h | --help) usage; exit 0 ;;
    --build-only) build_only=1 ;;
    --check) mode=check ;;
    --list) mode=list ;;
    *) echo "bootstrap.sh: unknown argument '$arg' (see --help)" >&2; exit 2 ;;
  esac
done
PACKAGES=("${BUILD_PACKAGES[@]}")
((build_only)) || PACKAGES+=("${TEST_PACKAGES[@]}" "${LINT_PACKAGES[@]}")
if [[ "$mode" == list ]]; then
  printf '%s\n' "${PACKAGES[@]}"
  exit 0
fi

if [[ "${TENSORHUB_SKIP_BOOTSTRAP:-0}" == 1 ]]; then
  exit 0
fi

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "bootstrap.sh: dpkg-query not found: this script supports Debian/Ubuntu only." >&2
  echo "  Install the equivalents of: ${PACKAGES[*]}" >&2
  echo "  then set TENSORHUB_SKIP_BOOTSTRAP=1." >&2
  exit 1
fi

# One dpkg-query call, then check each package's status.
declare -A status=()
while IFS=$'\t' read -r pkg st; do
  pkg=${pkg%%:*}  # strip :amd64 from multi-arch names
  [[ "$st" == "install ok installed" ]] && status[$pkg]=1
done < <(dpkg-query -W -f='${binary:Package}\t${Status}\n' "${PACKAGES[@]}" 2>/dev/null || true)

missing=()
for pkg in "${PACKAGES[@]}"; do
  [[ -n "${status[$pkg]:-}" ]] || missing+=("$pkg")
done

# Then (not with --build-only) the tests' torch venv from PyPI: scripts/bootstrap-torch.sh.
torch_env() {
  ((build_only)) && return 0
  if [[ "$mode" == check ]]; then "$ROOT/scripts/bootstrap-torch.sh" --check; else "$ROOT/scripts/bootstrap-torch.sh"; fi
}

if ((${#missing[@]} == 0)); then
  torch_env
  exit 0
fi

if [[ "$mode" == check ]]; then
  echo "bootstrap.sh: missing packages: ${missing[*]}" >&2
  exit 1
fi

cannot_install() {
  echo "bootstrap.sh: cannot install the missing packages: $1" >&2
  echo "  Run as root (or a sudo-capable user):" >&2
  echo "    apt-get update && apt-get install -y --no-install-recommends ${missing[*]}" >&2
  exit 1
}

sudo_cmd=()
if ((EUID != 0)); then
  command -v sudo >/dev/null 2>&1 || cannot_install "not root and sudo is not installed"
  # Without a terminal sudo cannot ask for a password: fail instead of hanging.
  if [[ -t 0 ]]; then sudo_cmd=(sudo); else sudo_cmd=(sudo -n); fi
fi
command -v apt-get >/dev/null 2>&1 || cannot_install "apt-get not found"

echo "bootstrap.sh: installing ${missing[*]}" >&2
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update -qq ||
  cannot_install "apt-get update failed"
"${sudo_cmd[@]}" env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
  "${missing[@]}" >/dev/null || cannot_install "apt-get install failed"
echo "bootstrap.sh: done" >&2
torch_env
