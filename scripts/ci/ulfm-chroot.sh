#!/usr/bin/env bash
# ULFM lane: builds TensorHub inside a Debian 13 (trixie) chroot, whose Open MPI 5.0.7 has the MPI
# fault-tolerance extensions (ULFM), and runs the mpi and ulfm tests there under
# `mpirun --with-ft ulfm`. Debian 12's Open MPI 4.1.4 has no ULFM (README "Failure model").
set -euo pipefail

usage() {
  cat <<'TXT'
Usage: scripts/ci/ulfm-chroot.sh [--prepare | CTEST_ARGS...]

Runs as root. Creates (once) a minimal Debian 13 chroot with debootstrap, installs the build
dependencies in it, bind-mounts this source tree at /src, builds the MPI-facing targets in
/var/tmp/tensorhub-ulfm inside the chroot and runs
  ctest --output-on-failure -R '<those targets' tests>' CTEST_ARGS...
with mpirun --with-ft ulfm --mca pml ob1 --mca osc rdma (what works with ULFM, ARCHITECTURE.md §5).
Idempotent: an existing chroot is reused (packages: ~10 s, compiler cache: ccache inside it);
every mount is undone on exit, also on failure or Ctrl-C.

  --prepare   only make the chroot and install its packages, then stop (.ci/run starts this
              in the background while the main lane builds: it is mostly download time)

Environment:
  TENSORHUB_ULFM_ROOT     chroot directory (default /var/cache/tensorhub/trixie-root)
  TENSORHUB_ULFM_MIRROR   Debian mirror (default: the host apt's, else http://deb.debian.org/debian)
  TENSORHUB_ULFM_TARGETS  targets to build (default: the mpi and ulfm tests)
  TENSORHUB_ULFM_SANITIZE address, undefined or address,undefined: a sanitizer build (in its own
                          folder; not part of .ci/run)
  JOBS                    parallel build jobs (default: nproc)
  ULFM_*                  passed to the tests (tests/ulfm/run_holder_death.sh: ULFM_KEEP_LOG,
                          ULFM_DETECTOR_PERIOD, ULFM_DETECTOR_TIMEOUT, ULFM_DETECTOR_THREAD)

Example:
  sudo scripts/ci/ulfm-chroot.sh                  # the whole lane
  sudo scripts/ci/ulfm-chroot.sh -R ulfm -V       # only the ULFM kill test, verbose
TXT
}
prepare_only=0
case "${1:-}" in
  -h | --help) usage; exit 0 ;;
  --prepare) prepare_only=1; shift ;;
esac

die() { echo "ulfm-chroot: $*" >&2; exit 1; }
((EUID == 0)) || die "needs root (debootstrap, mount, chroot); run it with sudo"

SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
R=${TENSORHUB_ULFM_ROOT:-/var/cache/tensorhub/trixie-root}
# The Debian mirror: the one the host's apt uses (this machine may reach only that), else deb.debian.org.
host_mirror=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources /etc/apt/sources.list.d/*.list 2>/dev/null |
  grep -v '^[[:space:]]*#' | grep -oE '(https?|file)://[^ ]*/debian/?( |$)' | head -1 | tr -d ' ' || true)
MIRROR=${TENSORHUB_ULFM_MIRROR:-${host_mirror:-http://deb.debian.org/debian}}
TARGETS=${TENSORHUB_ULFM_TARGETS:-test_hub test_consistency test_retention test_ulfm_api ulfm_holder_death}
JOBS=${JOBS:-$(nproc)}
PKGS="g++ cmake ninja-build ccache pkg-config python3 procps libopenmpi-dev openmpi-bin libucx-dev
  libhwloc-dev libhdf5-openmpi-dev libboost-program-options-dev libgtest-dev libgmock-dev
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler nlohmann-json3-dev libxxhash-dev
  libcpp-httplib-dev"  # keep in step with scripts/bootstrap.sh BUILD_PACKAGES (the coordinator metrics endpoint)
t0=$SECONDS
step() { echo "== ulfm-chroot [$((SECONDS - t0)) s] $*"; }

# 1. The chroot (a marker file says debootstrap finished; a half-made one is started again).
if [[ ! -e "$R/.tensorhub-debootstrap-done" ]]; then
  command -v debootstrap >/dev/null ||
    { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; } ||
    die "cannot install debootstrap"
  step "debootstrap trixie into $R"
  rm -rf "$R"
  mkdir -p "$R"
  timeout 1200 debootstrap --variant=minbase trixie "$R" "$MIRROR" >"$R.debootstrap.log" 2>&1 ||
    { tail -n 20 "$R.debootstrap.log" >&2; die "debootstrap failed (log: $R.debootstrap.log)"; }
  touch "$R/.tensorhub-debootstrap-done"
fi

# 2. Mounts, always undone (in reverse order) when this script ends.
mounted=()
cleanup() {
  local i
  for ((i = ${#mounted[@]} - 1; i >= 0; --i)); do
    umount -R "${mounted[$i]}" 2>/dev/null || umount -l "${mounted[$i]}" 2>/dev/null || true
  done
}
trap cleanup EXIT
mount_once() {  # mount_once TARGET MOUNT-ARGS...
  local target=$1
  shift
  mkdir -p "$target"
  mountpoint -q "$target" && return
  mount "$@" "$target" || die "mount $* $target failed"
  mounted+=("$target")
}
mount_once "$R/proc" -t proc proc
mount_once "$R/dev" --rbind /dev && mount --make-rslave "$R/dev"
mount_once "$R/sys" --rbind /sys && mount --make-rslave "$R/sys"
mount_once "$R/src" --bind "$SRC"
cp /etc/resolv.conf "$R/etc/resolv.conf"
cp /etc/hosts "$R/etc/hosts"  # the coordinator advertises this host name
printf '#!/bin/sh\nexit 101\n' >"$R/usr/sbin/policy-rc.d"  # no daemons start in the chroot
chmod +x "$R/usr/sbin/policy-rc.d"

# 3. Packages (apt-get is quick when they are all there already; an install that was interrupted
# is finished first).
step "packages"
# shellcheck disable=SC2086
chroot "$R" env DEBIAN_FRONTEND=noninteractive bash -c \
  "dpkg -s $(echo $PKGS) >/dev/null 2>&1 || { dpkg --configure -a && apt-get update -qq && apt-get install -y -qq --no-install-recommends $(echo $PKGS) >/dev/null; }" ||
  die "installing the build dependencies in the chroot failed"
chroot "$R" ompi_info | grep -q "FT MPI support: yes" || die "the chroot's Open MPI has no ULFM (FT MPI support)"
if ((prepare_only)); then
  step "prepared (chroot and packages)"
  exit 0
fi

# 4. Build and test inside. The source is read through the bind mount; the build folder and
# the compiler cache stay in the chroot, so a second run only rebuilds what changed.
step "build and test: $TARGETS $*"
ctest_args=$(printf '%q ' "$@")
pass=()  # ULFM_* settings of the ulfm tests (run_holder_death.sh) go through
for v in $(compgen -v ULFM_ || true); do pass+=("$v=${!v}"); done
SANITIZE=${TENSORHUB_ULFM_SANITIZE:-}
case "$SANITIZE" in
  "" | address | undefined | address,undefined) ;;
  *) die "TENSORHUB_ULFM_SANITIZE must be address, undefined or address,undefined (got '$SANITIZE')" ;;
esac
chroot "$R" env -i PATH=/usr/local/bin:/usr/bin:/bin HOME=/root TERM=dumb JOBS="$JOBS" TARGETS="$TARGETS" "${pass[@]}" \
  SANITIZE="$SANITIZE" CTEST_ARGS="$ctest_args" bash -c '
set -euo pipefail
export CCACHE_DIR=/var/cache/ccache
export PRTE_ALLOW_RUN_AS_ROOT=1 PRTE_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_tcp_if_include=lo PMIX_MCA_ptl_tcp_if_include=lo
B=/var/tmp/tensorhub-ulfm
flags="-O1 -g0 -DNDEBUG"
if [[ -n "$SANITIZE" ]]; then  # its own build folder; line tables for the reports
  B=$B-${SANITIZE/,/-}
  flags="-O1 -g1 -DNDEBUG"
  export ASAN_OPTIONS=detect_leaks=0 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
fi
cmake -S /src -B $B -G Ninja -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="$flags" -DTENSORHUB_SANITIZE="$SANITIZE" \
  -DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DTENSORHUB_WERROR=ON -DTENSORHUB_BUILD_TESTS=ON \
  -DTENSORHUB_BUILD_BENCH_TOOLS=OFF -DTENSORHUB_REQUIRE_ULFM=ON \
  "-DTENSORHUB_MPIEXEC_PREFLAGS=--oversubscribe;--with-ft;ulfm;--mca;pml;ob1;--mca;osc;rdma" >$B.cmake.log 2>&1 ||
  { tail -n 30 $B.cmake.log; exit 1; }
grep -E "TensorHub: (ULFM|MPI)" $B.cmake.log || true
cmake --build $B -j "$JOBS" --target $TARGETS
# The tests of the built targets: NAME or NAME_npN, and ulfm_rank0_death and ulfm_rank_hang
# (ulfm_holder_death with rank 0 as the victim, and with a hung victim).
regex="^($(echo $TARGETS ulfm_rank0_death ulfm_rank_hang | tr " " "\n" | paste -sd"|"))(_np[0-9]+)?\$"
eval "ctest --test-dir $B --output-on-failure -R \"\$regex\" $CTEST_ARGS"
'
step "done"
