#!/usr/bin/env bash
# `tensorhub serve --metrics` and `--trace`: a demo job against a standalone coordinator that
# serves Prometheus metrics; the scrape passes `promtool check metrics` and counts the job's
# reads; the job's merged trace (one file, every rank) names every chunk of every pull exactly
# once; `status --watch` redraws its table. Usage: metrics_trace.sh TENSORHUB_BIN MPIEXEC [MPI FLAGS...]
set -euo pipefail
bin=$1
mpiexec=$2
shift 2
dir=$(mktemp -d)
log=$dir/serve.log
trap 'kill -TERM "${serve_pid:-}" 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$dir"' EXIT
"$bin" serve --listen 127.0.0.1:0 --metrics 127.0.0.1:0 >"$log" 2>&1 &
serve_pid=$!
for _ in $(seq 1 100); do
  grep -q "metrics at" "$log" && break
  sleep 0.1
done
port=$(sed -n 's/.*listening on [^:]*:\([0-9]*\).*/\1/p' "$log")
mport=$(sed -n 's|.*metrics at http://[^:]*:\([0-9]*\)/metrics.*|\1|p' "$log")
[[ -n "$port" && -n "$mport" ]] || { echo "serve did not start:"; cat "$log"; exit 1; }
export TENSORHUB_HUB=127.0.0.1:$port
"$mpiexec" -n 4 "$@" -x TENSORHUB_HUB "$bin" demo --trainers 1 --size 8MiB --tensors 12 --versions 2 \
  --trace "$dir/trace.json" --json "$dir/demo.json" >"$dir/demo.log" 2>&1 || { cat "$dir/demo.log"; exit 1; }
grep -q "every pull verified" "$dir/demo.log" || { cat "$dir/demo.log"; exit 1; }
grep -q "trace of 4 ranks written to" "$dir/demo.log" || { cat "$dir/demo.log"; exit 1; }
if ls "$dir"/trace.rank* >/dev/null 2>&1; then echo "per-rank trace files left behind"; exit 1; fi
# demo --json: byte counts as integers, every pull's stages, each version's publish commit latency.
python3 - "$dir/demo.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
assert len(d["steps"]) == 2, d
for s in d["steps"]:
    assert isinstance(s["trainer_bytes_sent"], int) and isinstance(s["relayed_bytes"], int), s
    assert s["publish"]["commit_ms"] > 0 and s["publish"]["publish_ms"] > 0, s
    assert [p["rank"] for p in s["pulls"]] == [2, 3], s
    for p in s["pulls"]:
        assert all(isinstance(p[k], int) for k in ("rank", "version", "bytes", "origin_bytes", "relay_bytes")), p
        st = p["stages"]
        assert set(st) == {"resolve_s", "transfer_s", "no_source_s", "verify_s"}, p
        assert st["transfer_s"] > 0 and st["verify_s"] > 0 and st["no_source_s"] <= st["transfer_s"], p
PY

python3 - "$mport" "$dir/metrics.txt" <<'PY'
import sys, urllib.request
port, out = sys.argv[1], sys.argv[2]
with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=10) as r:
    assert r.status == 200, r.status
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4"), r.headers["Content-Type"]
    open(out, "wb").write(r.read())
try:
    urllib.request.urlopen(f"http://127.0.0.1:{port}/other", timeout=10)
    raise SystemExit("/other should be 404")
except urllib.error.HTTPError as e:
    assert e.code == 404, e.code
PY
promtool check metrics <"$dir/metrics.txt" || { cat "$dir/metrics.txt"; exit 1; }
python3 - "$dir/metrics.txt" "$dir/trace.json" <<'PY'
import collections, json, sys
samples = {}
for line in open(sys.argv[1]):
    if line.startswith("#") or not line.strip():
        continue
    name, value = line.rsplit(" ", 1)
    samples[name] = float(value)
def get(name):
    assert name in samples, f"missing sample {name}"
    return samples[name]
assert get("tensorhub_up") == 1
assert get('tensorhub_rpc_calls_total{method="Plan"}') > 0  # plan-based pulls (the default)
assert get('tensorhub_rpc_duration_seconds_count{method="Resolve"}') == get('tensorhub_rpc_calls_total{method="Resolve"}')
served = get('tensorhub_bytes_served_total{source="publisher"}') + get('tensorhub_bytes_served_total{source="relay"}')
# Two rollouts pulled two versions of an 8 MiB model from publishers or each other.
assert served >= 2 * 2 * 8 * 2**20 * 0.99, served
assert get('tensorhub_workers{state="left"}') == 4, samples
assert not any(k.startswith("tensorhub_holder_reads_in_flight") for k in samples)  # everyone left

trace = json.load(open(sys.argv[2]))
events = trace["traceEvents"]
pids = {e["pid"] for e in events}
assert pids == {0, 1, 2, 3}, pids
reads = collections.defaultdict(list)
for e in events:
    if e.get("cat") == "chunk":
        assert e["ph"] == "X" and isinstance(e["ts"], int) and isinstance(e["dur"], int)
        reads[(e["pid"], e["args"]["version"])].append(e["args"]["chunk"])
# Ranks 2 and 3 are the rollouts: each pulled versions 1 and 2, every chunk once.
assert sorted(reads) == [(2, 1), (2, 2), (3, 1), (3, 2)], sorted(reads)
n = len(reads[(2, 1)])
for key, chunks in reads.items():
    assert sorted(chunks) == list(range(n)), (key, sorted(chunks))
names = {e["name"] for e in events}
for want in ("resolve", "plan", "complete", "Hub::publish", "Hub::pull", "verify", "wait for a version"):
    assert want in names, want
print(f"metrics: {len(samples)} samples, {served / 2**20:.0f} MiB served; trace: {len(events)} events, {n} chunks per pull")
PY
# status --watch: a compact table per refresh, times for people (no raw epoch seconds).
watch_out=$("$bin" status --watch 0.2 --count 2 --workers)
[[ $(grep -c "^hub 127.0.0.1:$port at .* UTC" <<<"$watch_out") == 2 ]] || { echo "$watch_out"; exit 1; }
grep -qE "[0-9.]+ (ms|s) ago" <<<"$watch_out" || { echo "$watch_out"; exit 1; }
kill -TERM "$serve_pid"
wait "$serve_pid" || true
echo "metrics and trace: ok"
