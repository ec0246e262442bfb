#!/usr/bin/env bash
# Bootstrap, then configure and build TensorHub with CMake + Ninja.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
readonly ROOT

usage() {
  cat <<'TXT'
Usage: scripts/build.sh [CMAKE_CONFIGURE_ARGS...]

Installs missing Debian packages (scripts/bootstrap.sh), configures the project
with 'cmake -G Ninja' and builds it. Arguments are passed to the cmake configure
step. Safe to rerun: reconfiguring an existing build directory is cheap, and
cache values given earlier stay set until overridden.

Project options (cmake -D...):
  TENSORHUB_CUDA=AUTO|ON|OFF        lib/device cuda backend, when the toolkit is found (default AUTO)
  TENSORHUB_DEVICE_ONLY=ON          only lib/core, lib/device and their tests (scripts/device/gpu-check.sh)
  TENSORHUB_WERROR=ON|OFF           warnings as errors (default OFF)
  TENSORHUB_SANITIZE=address|undefined|thread   sanitizer build (default none)
  TENSORHUB_BUILD_TESTS=ON|OFF      build the test suite (default ON)

Environment:
  BUILD_DIR      build directory (default build/; relative paths are relative to the repo root)
  BUILD_TYPE     CMAKE_BUILD_TYPE (default RelWithDebInfo)
  BUILD_FLAGS    C/C++ flags for BUILD_TYPE instead of CMake's (sets CMAKE_{C,CXX}_FLAGS_<TYPE>,
                 e.g. '-O1 -g1 -DNDEBUG'). Default for RelWithDebInfo: '-O2 -DNDEBUG', CI's main
                 lane, so that its compiler cache (ccache) serves both; '-O2 -g -DNDEBUG' for
                 debug info. Other build types: CMake's flags
  BUILD_TARGETS  space-separated targets to build (default: all)
  JOBS           parallel build jobs (default: nproc)
  TENSORHUB_CMAKE_ARGS      extra configure args, split on whitespace (placed before the arguments)
  TENSORHUB_SKIP_BOOTSTRAP=1   don't run scripts/bootstrap.sh

Examples:
  scripts/build.sh
  BUILD_DIR=build-debug BUILD_TYPE=Debug scripts/build.sh -DTENSORHUB_CUDA=OFF
  BUILD_TARGETS="test_core test_coord" scripts/build.sh
TXT
}

case "${1:-}" in
  -h | --help) usage; exit 0 ;;
esac

build_dir=${BUILD_DIR:-build}
[[ "$build_dir" == /* ]] || build_dir="$ROOT/$build_dir"
build_type=${BUILD_TYPE:-RelWithDebInfo}
jobs=${JOBS:-$(nproc)}
read -r -a env_args <<<"${TENSORHUB_CMAKE_ARGS:-}"
read -r -a targets <<<"${BUILD_TARGETS:-}"
flag_args=()
if [[ -z "${BUILD_FLAGS+set}" && "$build_type" == RelWithDebInfo ]]; then
  BUILD_FLAGS="-O2 -DNDEBUG"  # CI's main lane (.ci/run): the same objects, shared through ccache
fi
if [[ -n "${BUILD_FLAGS:-}" ]]; then
  flag_args=("-DCMAKE_C_FLAGS_${build_type^^}=$BUILD_FLAGS" "-DCMAKE_CXX_FLAGS_${build_type^^}=$BUILD_FLAGS")
fi

"$ROOT/scripts/bootstrap.sh" --build-only

# A build directory made with another generator cannot be reconfigured with Ninja.
cache="$build_dir/CMakeCache.txt"
if [[ -f "$cache" ]] && ! grep -qx 'CMAKE_GENERATOR:INTERNAL=Ninja' "$cache"; then
  echo "build.sh: $build_dir was configured with another generator" \
    "($(grep '^CMAKE_GENERATOR:INTERNAL=' "$cache" | cut -d= -f2-))." >&2
  echo "  Remove it, or choose another BUILD_DIR." >&2
  exit 1
fi

echo "+ cmake -S $ROOT -B $build_dir -G Ninja -DCMAKE_BUILD_TYPE=$build_type ${flag_args[*]@Q} ${env_args[*]} $*" >&2
cmake -S "$ROOT" -B "$build_dir" -G Ninja -DCMAKE_BUILD_TYPE="$build_type" "${flag_args[@]}" "${env_args[@]}" "$@"

build_cmd=(cmake --build "$build_dir" -j "$jobs")
((${#targets[@]} == 0)) || build_cmd+=(--target "${targets[@]}")
echo "+ ${build_cmd[*]}" >&2
"${build_cmd[@]}"
