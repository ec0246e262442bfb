#!/usr/bin/env bash
# Installs this build into a temporary prefix and uses it the way an outside MPI trainer would:
#  1. `cmake --install` gives the expected tree; the exported interface names no private
#     dependency (gRPC, Protobuf, xxHash); every installed header compiles on its own;
#  2. a file built with only `pkg-config --cflags --libs tensorhub` and mpicxx links and runs;
#  3. share/examples/trainer configures against the prefix (find_package), builds, and runs on
#     3 ranks (1 trainer, 2 rollouts) without LD_LIBRARY_PATH; both rollouts reach the last
#     version with every value right;
#  4. the installed `tensorhub --help` runs.
# Usage: test_package.sh BUILD_DIR SOURCE_DIR CMAKE MPICXX GENERATOR MPIEXEC [MPI FLAGS...]
set -euo pipefail
build=$1 src=$2 cmake=$3 mpicxx=$4 generator=$5 mpiexec=$6
shift 6
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tensorhub-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
unset LD_LIBRARY_PATH  # the installed files must find their libraries on their own
step() { echo "== $*"; }
fail() { echo "FAIL: $*" >&2; exit 1; }

step "install into $prefix"
"$cmake" --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
pc=$(find "$prefix" -path '*/pkgconfig/tensorhub.pc' | head -n 1)
[[ -n "$pc" ]] || fail "no tensorhub.pc installed"
libdir=$(dirname "$(dirname "$pc")")
for f in bin/tensorhub include/tensorhub/hub.hpp include/tensorhub/config.hpp; do
  [[ -f "$prefix/$f" ]] || fail "missing $f"
done
for f in libtensorhub.so cmake/TensorHub/TensorHubConfig.cmake cmake/TensorHub/TensorHubConfigVersion.cmake; do
  [[ -e "$libdir/$f" ]] || fail "missing ${libdir#"$prefix"/}/$f"
done
(cd "$prefix" && find . -type f -o -type l | sort | sed 's/^/   /')
if grep -vhE '^\s*#' "$libdir"/cmake/TensorHub/*.cmake "$pc" | grep -iE 'grpc|protobuf|xxhash'; then
  fail "the installed package names a private dependency"  # comments may mention them
fi
if readelf -d "$prefix/bin/tensorhub" "$libdir/libtensorhub.so" | grep -F "$build"; then
  fail "an installed binary keeps an RPATH into the build tree"
fi

step "each installed header compiles on its own"
# MPI's own headers as system headers (Open MPI's C++ bindings warn under -Wextra); GCC drops
# the wrapper's -I for a directory also given with -isystem.
mpi_system=()
for d in $("$mpicxx" --showme:incdirs 2>/dev/null || true); do mpi_system+=(-isystem "$d"); done
while read -r h; do
  echo "#include <$h>" | "$mpicxx" -std=c++20 -Wall -Wextra -Wpedantic -Werror -fsyntax-only \
    "${mpi_system[@]}" -I"$prefix/include" -x c++ - || fail "$h does not compile alone against the installed tree"
done < <(cd "$prefix/include" && find tensorhub -name '*.hpp' | sort)

step "pkg-config consumer"
export PKG_CONFIG_PATH=$libdir/pkgconfig
flags=$(pkg-config --cflags --libs tensorhub)
echo "   pkg-config --cflags --libs tensorhub: $flags"
# shellcheck disable=SC2086  # flags are words
"$mpicxx" -std=c++20 "$src/tests/package/pkgconfig_consumer.cpp" $flags \
  -Wl,-rpath,"$(pkg-config --variable=libdir tensorhub)" -o "$tmp/pc_consumer"
"$tmp/pc_consumer" | tee "$tmp/pc.out"
grep -q "UserError caught: yes" "$tmp/pc.out" || fail "pkg-config consumer output"

step "examples/trainer as an outside project"
"$cmake" -S "$src/share/examples/trainer" -B "$tmp/example" -G "$generator" -DCMAKE_PREFIX_PATH="$prefix" \
  -DCMAKE_CXX_FLAGS="-Wall -Wextra -Wpedantic -Werror" >"$tmp/configure.log" || { cat "$tmp/configure.log"; fail "configure"; }
"$cmake" --build "$tmp/example" >"$tmp/build.log" || { cat "$tmp/build.log"; fail "build"; }
ldd "$tmp/example/trainer" | grep -F "$libdir/libtensorhub.so" || fail "the example does not use the installed library"
steps=4
rc=0
timeout 300 "$mpiexec" -n 3 "$@" "$tmp/example/trainer" "$steps" 1 >"$tmp/run.out" 2>&1 || rc=$?
cat "$tmp/run.out"
[[ $rc -eq 0 ]] || fail "trainer example exited with $rc"
for r in 1 2; do
  grep -q "rollout rank $r: pulled version $steps, .*values ok" "$tmp/run.out" || fail "rollout $r never got version $steps"
done
if grep -q MISMATCH "$tmp/run.out"; then fail "a rollout saw wrong values"; fi
grep -q "trainer example: $steps versions, 0 wrong values" "$tmp/run.out" || fail "no summary line"

step "installed CLI"
help=$("$prefix/bin/tensorhub" --help) || fail "tensorhub --help exited with $?"
grep -q "commands:" <<<"$help" || fail "tensorhub --help printed no command list"

echo "package: ok"
