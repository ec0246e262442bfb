#!/usr/bin/env bash
# Mooncake Transfer Engine vs TensorHub ucx on the same bytes, one host, TCP over loopback.
# Optional: nothing builds or tests with it. It creates a venv (default build/mooncake-venv)
# and pip-installs Mooncake TE there on first use.
#
# Each of --rounds rounds runs, one after the other:
#   Mooncake TE  scripts/bench/mooncake_te.py: a target process registers S bytes, the
#                initiator reads them in --chunk pieces (one batch_transfer_sync_read per
#                iteration; protocol tcp, P2PHANDSHAKE metadata)
#   TensorHub    mpirun -n 2 tensorhub bench p2p --transport ucx -b S -e S --chunk C: Hub::pull
#                over ucx (which is TCP on one host: UCX 1.13 refuses shared memory with peer
#                error handling), unverified (Mooncake verifies nothing) and verified, and
#                memcpy in the same job
# and prints a table and one JSON line: medians over all rounds' iterations and
# ratio = TensorHub ucx unverified / Mooncake (the issue's goal: >= 1.0).
#
# Usage: scripts/bench/mooncake.sh [--size 1GiB] [--chunk 4MiB] [--iterations 3] [--rounds 2]
#                                  [--bin build/apps/tensorhub/tensorhub] [--out FILE]
# Environment: MOONCAKE_VENV (venv dir), MOONCAKE_PACKAGE (default
# mooncake-transfer-engine-non-cuda: the same engine as mooncake-transfer-engine, built without
# CUDA, which this CPU-only host lacks), MPIRUN_FLAGS (default --oversubscribe --mca osc ucx).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
SIZE=1GiB
CHUNK=4MiB
ITERS=3
ROUNDS=2
BIN=$ROOT/build/apps/tensorhub/tensorhub
OUT=
VENV=${MOONCAKE_VENV:-$ROOT/build/mooncake-venv}
PACKAGE=${MOONCAKE_PACKAGE:-mooncake-transfer-engine-non-cuda}
read -r -a MPIRUN_FLAGS <<<"${MPIRUN_FLAGS:---oversubscribe --mca osc ucx}"

while [[ $# -gt 0 ]]; do
  case $1 in
    --size) SIZE=$2; shift 2 ;;
    --chunk) CHUNK=$2; shift 2 ;;
    --iterations) ITERS=$2; shift 2 ;;
    --rounds) ROUNDS=$2; shift 2 ;;
    --bin) BIN=$2; shift 2 ;;
    --out) OUT=$2; shift 2 ;;
    -h | --help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "mooncake.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
[[ -x $BIN ]] || { echo "mooncake.sh: no tensorhub binary at $BIN (build it, or --bin)" >&2; exit 2; }

if ! "$VENV/bin/python" -c 'import mooncake.engine, numpy' 2>/dev/null; then
  echo "# installing $PACKAGE and numpy into $VENV" >&2
  python3 -m venv "$VENV"
  "$VENV/bin/pip" install -q "$PACKAGE" numpy
fi

WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
for ((r = 1; r <= ROUNDS; r++)); do
  echo "# round $r/$ROUNDS: Mooncake TE" >&2
  "$VENV/bin/python" "$ROOT/scripts/bench/mooncake_te.py" --size "$SIZE" --chunk "$CHUNK" \
    --iterations "$ITERS" 2>"$WORK/mooncake-$r.log" | tail -n 1 >"$WORK/mooncake-$r.json" ||
    { tail -n 20 "$WORK/mooncake-$r.log" >&2; exit 1; }
  echo "# round $r/$ROUNDS: mpirun -n 2 ${MPIRUN_FLAGS[*]} tensorhub bench p2p --transport ucx -b $SIZE -e $SIZE --chunk $CHUNK -n $ITERS" >&2
  mpirun -n 2 "${MPIRUN_FLAGS[@]}" "$BIN" bench p2p --transport ucx -b "$SIZE" -e "$SIZE" --chunk "$CHUNK" \
    -n "$ITERS" -w 1 --json "$WORK/p2p-$r.json" >"$WORK/p2p-$r.log" 2>&1 ||
    { tail -n 20 "$WORK/p2p-$r.log" >&2; exit 1; }
done

"$VENV/bin/python" - "$WORK" "$ROUNDS" "$OUT" <<'PY'
import glob, json, statistics, sys
work, rounds, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
mc, th = [], {}
size = None
for r in range(1, rounds + 1):
    m = json.load(open(f"{work}/mooncake-{r}.json"))
    size = m["bytes"]
    mc += m["seconds"]
    for row in json.load(open(f"{work}/p2p-{r}.json"))["results"]:
        if "seconds" in row and row["method"] in ("memcpy", "hub_pull", "hub_pull_noverify"):
            th.setdefault(row["method"], []).extend(row["seconds"])
gbps = lambda s: size / statistics.median(s) / 1e9
rows = {"mooncake_te tcp": gbps(mc), "tensorhub ucx unverified": gbps(th["hub_pull_noverify"]),
        "tensorhub ucx verified": gbps(th["hub_pull"]), "memcpy (p2p job)": gbps(th["memcpy"])}
ratio = rows["tensorhub ucx unverified"] / rows["mooncake_te tcp"]
print(f"{'method':<28}{'median GB/s':>12}{'vs Mooncake':>13}")
for k, v in rows.items():
    print(f"{k:<28}{v:>12.2f}{v / rows['mooncake_te tcp']:>13.2f}")
j = {"benchmark": "mooncake", "bytes": size, "rounds": rounds, "median_gbps": rows,
     "ratio_tensorhub_ucx_vs_mooncake": ratio, "mooncake_seconds": mc, "tensorhub_seconds": th}
print(json.dumps(j))
if out:
    json.dump(j, open(out, "w"), indent=1)
PY
