#!/usr/bin/env bash
# The GPU check (issue 15): on a lent GPU machine (one H200, CUDA 13, CMake, ninja; no MPI, gRPC,
# HDF5, hwloc, UCX, GoogleTest or registry), in the repository root:
#   1. configures the device-only build (-DTENSORHUB_DEVICE_ONLY=ON -DTENSORHUB_CUDA=ON
#      -DTENSORHUB_GPU_TESTS=ON) and builds it;
#   2. runs the gpu-emu and gpu tests (the cuda backend: copies, pointer queries, device XXH3-64
#      per chunk equal to the CPU's, IPC into a second process); a skipped or not-run test fails
#      the check (scripts/ci/ctest-no-skips.sh, as in CI);
#   3. runs bench_device: IPC pull of --bytes (4 GiB) by a second process vs cudaMemcpy D2D,
#      the staged double-buffered pinned ring vs cudaMemcpy D2H+H2D, device XXH3 vs a device
#      copy kernel, all in one run;
# and writes env.txt, ctest.log, ctest.xml, bench.txt, device-bench.json and gpu-check.json to
# $OUT (default build-gpu/out). Target: well under 8 minutes (build ~2, tests and bench ~1).
#
#   scripts/device/gpu-check.sh                 the whole check (fails with one line without a GPU)
#   scripts/device/gpu-check.sh --dry-run       everything that needs no GPU: configure, build, the
#                                               gpu-emu tests, and bench_device's no-GPU refusal
#   scripts/device/gpu-check.sh --prepare-carry on the development machine: copy GoogleTest's
#                                               sources, nlohmann_json's and xxhash's headers into build-carry/
#                                               (git-ignored) for the device run's `carry`
# Options: --out DIR, --build-dir DIR (default build-gpu), --bytes SIZE (default 4GiB), --jobs N.
# GPU_CHECK_CMAKE_ARGS: extra configure arguments, split on whitespace (e.g. to hide installed
# packages here: -DCMAKE_DISABLE_FIND_PACKAGE_GTest=ON, as the GPU machine lacks them).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
readonly ROOT
MODE=full
BUILD="$ROOT/build-gpu"
BYTES=4GiB
JOBS=$(nproc 2>/dev/null || echo 4)
OUT_DIR=${OUT:-}
CARRY="$ROOT/build-carry"

die() { echo "gpu-check: $*" >&2; exit 2; }

while (($#)); do
  case "$1" in
    --dry-run) MODE=dry ;;
    --prepare-carry) MODE=carry ;;
    --out) OUT_DIR=${2:?--out needs a directory}; shift ;;
    --build-dir) BUILD=${2:?--build-dir needs a directory}; shift ;;
    --bytes) BYTES=${2:?--bytes needs a size}; shift ;;
    --jobs) JOBS=${2:?--jobs needs a number}; shift ;;
    -h|--help) sed -n '2,24p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) die "unknown argument '$1' (--help)" ;;
  esac
  shift
done

if [[ $MODE == carry ]]; then
  [[ -f /usr/src/googletest/CMakeLists.txt ]] || die "no /usr/src/googletest (Debian: googletest)"
  rm -rf "$CARRY" && mkdir -p "$CARRY/include"
  cp -r /usr/src/googletest "$CARRY/googletest"
  if [[ -d /usr/include/nlohmann ]]; then cp -r /usr/include/nlohmann "$CARRY/include/"; fi
  # libxxhash's header (Debian libxxhash-dev; BSD-2), used header-only where the library is absent.
  [[ -f /usr/include/xxhash.h ]] || die "no /usr/include/xxhash.h (Debian: libxxhash-dev)"
  cp /usr/include/xxhash.h "$CARRY/include/"
  [[ -f /usr/include/xxh3.h ]] && cp /usr/include/xxh3.h "$CARRY/include/"
  echo "gpu-check: $(du -sh "$CARRY" | cut -f1) in build-carry/; name it in the run's carry: [\"build-carry\"]"
  exit 0
fi

OUT_DIR=${OUT_DIR:-$BUILD/out}
mkdir -p "$OUT_DIR"
T0=$(date +%s)
status=()  # "step=ok|failed|skipped"

{
  echo "date: $(date -u +%FT%TZ)"; echo "mode: $MODE"; uname -a
  command -v nvidia-smi >/dev/null && nvidia-smi -L 2>&1 || echo "nvidia-smi: not found"
  command -v nvcc >/dev/null && nvcc --version | tail -2 || /usr/local/cuda/bin/nvcc --version 2>&1 | tail -2 || echo "nvcc: not found"
  cmake --version | head -1; ninja --version 2>&1 | sed 's/^/ninja /' || true
} >"$OUT_DIR/env.txt" 2>&1
cat "$OUT_DIR/env.txt"

GPU_NAME=""
if command -v nvidia-smi >/dev/null && nvidia-smi -L >/dev/null 2>&1; then
  GPU_NAME=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1 || true)
fi
if [[ $MODE == full && -z $GPU_NAME ]]; then
  die "no GPU (nvidia-smi finds none): nothing measured; --dry-run builds and runs the emulated tests only"
fi

cfg=(-S "$ROOT" -B "$BUILD" -G Ninja -DTENSORHUB_DEVICE_ONLY=ON -DTENSORHUB_CUDA=ON
     -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CUDA_ARCHITECTURES=90 -DTENSORHUB_WERROR=ON
     -DCMAKE_POLICY_VERSION_MINIMUM=3.5)  # GoogleTest 1.12 sources under CMake 4
if [[ $MODE == full ]]; then cfg+=(-DTENSORHUB_GPU_TESTS=ON); else cfg+=(-DTENSORHUB_GPU_TESTS=OFF); fi
[[ -f $CARRY/googletest/CMakeLists.txt ]] && cfg+=(-DTENSORHUB_GTEST_SOURCE_DIR="$CARRY/googletest")
[[ -f $CARRY/include/nlohmann/json.hpp || -f $CARRY/include/xxhash.h ]] && cfg+=(-DTENSORHUB_EXTRA_INCLUDE_DIR="$CARRY/include")
[[ -x /usr/local/cuda/bin/nvcc ]] && cfg+=(-DCUDAToolkit_ROOT=/usr/local/cuda)
read -r -a extra <<<"${GPU_CHECK_CMAKE_ARGS:-}"
cfg+=("${extra[@]}")

echo "== configure"
if ! cmake "${cfg[@]}" >"$OUT_DIR/configure.log" 2>&1; then
  tail -30 "$OUT_DIR/configure.log"
  die "configure failed (configure.log)"
fi
grep -E '^-- TensorHub' "$OUT_DIR/configure.log" || true
T1=$(date +%s)
echo "== build"; cmake --build "$BUILD" -j "$JOBS" >"$OUT_DIR/build.log" 2>&1 || { tail -30 "$OUT_DIR/build.log"; die "build failed (build.log)"; }
T2=$(date +%s)

labels='gpu-emu|gpu|unit'
[[ $MODE == dry ]] && labels='gpu-emu|unit'
echo "== ctest -L '$labels'"
if ctest --test-dir "$BUILD" -L "$labels" --output-on-failure --timeout 300 \
     --output-junit "$OUT_DIR/ctest.xml" >"$OUT_DIR/ctest.log" 2>&1 &&
   "$ROOT/scripts/ci/ctest-no-skips.sh" "$OUT_DIR/ctest.log"; then
  status+=("tests=ok")
else
  status+=("tests=failed")
fi
tail -15 "$OUT_DIR/ctest.log"
if [[ $MODE == full ]] && ! grep -q 'test_device_cuda' "$OUT_DIR/ctest.log"; then
  status+=("gpu_tests_registered=no")
fi
T3=$(date +%s)

bench="$BUILD/tests/device/bench_device"
echo "== bench_device --bytes $BYTES"
if [[ $MODE == dry ]]; then
  # Without a GPU the benchmark must refuse with one line and exit 2, never print a figure.
  set +e; "$bench" --bytes 64MiB >"$OUT_DIR/bench.txt" 2>&1; rc=$?; set -e
  cat "$OUT_DIR/bench.txt"
  if [[ $rc -eq 2 ]] && grep -q 'no CUDA device' "$OUT_DIR/bench.txt"; then status+=("bench_refuses_without_gpu=ok")
  elif [[ $rc -eq 0 ]]; then status+=("bench=ran_in_dry_run")  # a GPU is present after all
  else status+=("bench_refuses_without_gpu=failed"); fi
else
  if timeout 300 "$bench" --bytes "$BYTES" --json "$OUT_DIR/device-bench.json" >"$OUT_DIR/bench.txt" 2>&1; then
    status+=("bench=ok")
  else
    status+=("bench=failed")
  fi
  cat "$OUT_DIR/bench.txt"
fi
T4=$(date +%s)

ok=true
for s in "${status[@]}"; do [[ $s == *=failed || $s == *=no ]] && ok=false; done
{
  printf '{"check": "gpu-check", "mode": "%s", "gpu": "%s", "ok": %s,\n' "$MODE" "$GPU_NAME" "$ok"
  printf ' "seconds": {"configure": %d, "build": %d, "tests": %d, "bench": %d, "total": %d},\n' \
    $((T1 - T0)) $((T2 - T1)) $((T3 - T2)) $((T4 - T3)) $((T4 - T0))
  printf ' "steps": {'; sep=""
  for s in "${status[@]}"; do printf '%s"%s": "%s"' "$sep" "${s%%=*}" "${s#*=}"; sep=", "; done
  printf '},\n "bench_json": "%s"}\n' "$([[ -f $OUT_DIR/device-bench.json ]] && echo device-bench.json)"
} >"$OUT_DIR/gpu-check.json"
cat "$OUT_DIR/gpu-check.json"
$ok || die "a step failed (gpu-check.json)"
