#!/usr/bin/env bash
# `tensorhub bench fanout` on this host: trainer, 2 readers and the storage rank (4 ranks), a
# 4 MiB model, every method; the table is printed and the JSON file checked
# (check_fanout_json.py: every reader verified, trainer bytes per method, ratios null without
# --link-mbit). Then once more with --link-mbit and two rounds of two methods.
# Usage: bench_fanout.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
if [[ ${1:-} == -h || ${1:-} == --help ]]; then
  sed -n '2,6p' "$0" | sed 's/^# \{0,1\}//'
  exit 0
fi
bin=${1:?usage: bench_fanout.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]}
mpiexec=${2:?mpiexec}
shift 2
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT

echo "+ bench fanout, 4 ranks, 4 MiB, all methods"
out=$("$mpiexec" "$@" -n 4 "$bin" bench fanout --size 4MiB --tensors 8 --store-dir "$dir" --json "$dir/f.json" 2>&1)
echo "$out"
grep -q "every reader verified" <<<"$out"
grep -Eq "^ *tensorhub +[0-9.]+ +- " <<<"$out"
python3 "$here/check_fanout_json.py" "$dir/f.json" 2 tensorhub,star,bcast,store --max-trainer-ratio 2
[[ -z $(find "$dir" -name '*.h5*') ]] || { echo "FAIL: the storage rank left its file behind"; exit 1; }

echo "+ bench fanout, 3 ranks, --link-mbit, 2 rounds of tensorhub and star"
"$mpiexec" "$@" -n 3 "$bin" bench fanout --size 2MiB --tensors 4 --methods tensorhub,star --iters 2 \
  --link-mbit 1000 --json "$dir/g.json"
python3 "$here/check_fanout_json.py" "$dir/g.json" 2 tensorhub,star --link
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(len(m['rounds']) == 2 for m in d['methods']), d" \
  "$dir/g.json"
echo "bench fanout: ok"
