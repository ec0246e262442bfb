#!/usr/bin/env bash
# probe's affinity table stays readable with 64 NICs: the 8-GPU fixture's topology file grown to
# 8 NICs per PCIe switch prints, per GPU, the NICs of each class as ranges (nic0-7), no line
# wider than 160 columns. Usage: probe_many_nics.sh TENSORHUB_BIN TOPO_DATA_DIR
set -euo pipefail
bin=$1
data=$2
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
"$bin" probe --xml "$data/gpu8-nic8-2socket.xml" --out "$dir/topo.json" >/dev/null
python3 - "$dir/topo.json" <<'PY'
import json, sys
path = sys.argv[1]
f = json.load(open(path))
t = f["hosts"][0]["topology"]
nics = []
for n in t["nics"]:
    for k in range(8):
        d = dict(n, index=len(nics), os_devices=[f"mlx5_{len(nics)}"])
        nics.append(d)
t["nics"] = nics
t["gpu_nic_affinity"] = [[a for a in row for _ in range(8)] for row in t["gpu_nic_affinity"]]
json.dump(f, open(path, "w"))
PY
out=$("$bin" probe --load "$dir/topo.json")
echo "$out"
grep -q "NICs 64 (64 RDMA)" <<<"$out"
grep -qE "^ *gpu0 +0 +nic0-7 +nic8-15 +- +nic16-31 +nic32-63 *$" <<<"$out"
awk 'length > 160 { print "too wide: " $0; bad = 1 } END { exit bad }' <<<"$out"
echo "probe with 64 NICs: ok"
