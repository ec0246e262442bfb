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
[[ -z $(find "$dir" -mindepth 1 -name '*.h5*') ]] || { echo "FAIL: the storage rank left its file behind"; exit 1; }

echo "+ bench fanout, 3 ranks, --link-mbit, 2 rounds of tensorhub and star"
"$mpiexec" "$@" -n 3 "$bin" bench fanout --size 2MiB --tensors 4 --methods tensorhub,star --iters 2 \
  --link-mbit 1000 --json "$dir/g.json"
python3 "$here/check_fanout_json.py" "$dir/g.json" 2 tensorhub,star --link
python3 -c "import json,sys; d=json.load(open(sys.argv[1])); assert all(len(m['rounds']) == 2 for m in d['methods']), d" \
  "$dir/g.json"

echo "+ bench fanout, 3 ranks, nccl-tests flags: sizes 1 and 2 MiB (-b -e -f), 1 warm-up and 1 timed round"
"$mpiexec" "$@" -n 3 "$bin" bench fanout -b 1MiB -e 2MiB -f 2 -w 1 -n 1 --tensors 4 --methods tensorhub,star \
  --json "$dir/s.json"
python3 - "$dir/s.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
sizes = d["sizes"]
assert d["benchmark"] == "fanout" and len(sizes) == 2, d.keys()
for want, s in zip((1 << 20, 2 << 20), sizes):
    assert abs(s["model_bytes"] - want) <= want // 8, (want, s["model_bytes"])
    assert s["warmup"] == 1 and s["iterations"] == 1, (s["warmup"], s["iterations"])
    assert [m["method"] for m in s["methods"]] == ["tensorhub", "star"], s["methods"]
    assert all(m["verified"] and len(m["rounds"]) == 1 for m in s["methods"]), s["methods"]
print("sweep json: ok", [s["model_bytes"] for s in sizes])
PY
echo "bench fanout: ok"
