#!/usr/bin/env python3
"""Checks a `tensorhub bench fanout --json` result file.

Usage: check_fanout_json.py FILE READERS METHODS [--max-trainer-ratio X] [--link]
  READERS   expected number of readers
  METHODS   comma-separated methods expected, in order
  --max-trainer-ratio X   TensorHub's trainer bytes must be <= X * S
  --link    ratios to S/R must be numbers (the run had --link-mbit); else they must be null
Prints one line per method and "fanout json: ok"; exits 1 with the reason otherwise.
"""
import json
import sys

STAGES = {"resolve_s", "transfer_s", "no_source_s", "verify_s"}


def fail(msg):
    print(f"fanout json: FAIL: {msg}")
    sys.exit(1)


def main(argv):
    if len(argv) < 4 or argv[1] in ("-h", "--help"):
        print(__doc__)
        sys.exit(0 if len(argv) > 1 and argv[1] in ("-h", "--help") else 2)
    path, readers, methods = argv[1], int(argv[2]), argv[3].split(",")
    max_ratio = float(argv[argv.index("--max-trainer-ratio") + 1]) if "--max-trainer-ratio" in argv else None
    link = "--link" in argv
    d = json.load(open(path))
    if d.get("benchmark") != "fanout" or not d.get("command", "").startswith("tensorhub bench fanout"):
        fail(f"not a fanout result: {d.get('benchmark')!r}, {d.get('command')!r}")
    if d["readers"] != readers:
        fail(f"readers {d['readers']} != {readers}")
    got = [m["method"] for m in d["methods"]]
    if got != methods:
        fail(f"methods {got} != {methods}")
    s = d["model_bytes"]
    for m in d["methods"]:
        name = m["method"]
        if not m["verified"]:
            fail(f"{name}: not every reader verified")
        for r in m["rounds"]:
            rs = r["readers"]
            if len(rs) != readers or not all(x["verified"] and x["seconds"] > 0 for x in rs):
                fail(f"{name}: reader results {rs}")
            # Byte counts are JSON integers; a hub pull reports its stages (PullResult).
            for x in rs:
                if not all(isinstance(x[k], int) for k in ("rank", "origin_bytes", "relay_bytes")):
                    fail(f"{name}: counts not integers: {x}")
                stages = set(x.get("stages", {}))
                if (name == "tensorhub") != bool(stages) or stages and stages != STAGES:
                    fail(f"{name}: stages {x.get('stages')}")
            if r["trainer_bytes"] is not None and not isinstance(r["trainer_bytes"], int):
                fail(f"{name}: trainer_bytes {r['trainer_bytes']} is not an integer")
        if not m["last_reader_s"] > 0 or m["mean_reader_s"] > m["last_reader_s"] + 1e-9:
            fail(f"{name}: times {m['last_reader_s']} / {m['mean_reader_s']}")
        if link != isinstance(m["last_ratio"], (int, float)):
            fail(f"{name}: last_ratio {m['last_ratio']} (expected {'a number' if link else 'null'})")
        tb = m["trainer_bytes"]
        expect = {"star": readers * d["message_bytes"], "store": d["message_bytes"]}.get(name)
        if expect is not None and abs(tb - expect) > 1:
            fail(f"{name}: trainer bytes {tb} != {expect}")
        if name == "tensorhub":
            if tb < s:
                fail(f"tensorhub: the trainer sent {tb} bytes, less than S = {s}")
            if max_ratio is not None and tb > max_ratio * s:
                fail(f"tensorhub: the trainer sent {tb} bytes > {max_ratio} x S = {max_ratio * s:.0f}")
        print(f"  {name:9s} last {m['last_reader_s']:.3f} s, mean {m['mean_reader_s']:.3f} s, "
              f"trainer bytes {tb if tb is None else int(tb)}, verified")
    print("fanout json: ok")


if __name__ == "__main__":
    main(sys.argv)
