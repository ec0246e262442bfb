#!/usr/bin/env python3
"""Checks a `tensorhub bench stall|elastic --json` file: every hub pull record carries its stages
(PullResult: resolve_s, transfer_s, no_source_s, verify_s), byte counts and versions are JSON
integers. Usage: check_loop_json.py FILE. Prints "loop json: ok"; exits 1 with the reason otherwise.
"""
import json
import sys

STAGES = {"resolve_s", "transfer_s", "no_source_s", "verify_s"}


def records(d):
    for size in d.get("sizes", [d]):
        for mode in size.get("modes", []):
            for r in mode["rollouts"]:
                assert isinstance(r["updates"], int), r["updates"]
                yield from r["records"]
        yield from size.get("follow_pulls", [])


def main(path):
    pulls = 0
    for rec in records(json.load(open(path))):
        for k in ("version", "origin_bytes", "relay_bytes"):
            assert isinstance(rec[k], int), (k, rec)
        if rec["kind"] in ("first", "pull"):
            assert set(rec["stages"]) == STAGES and rec["stages"]["transfer_s"] > 0, rec
            pulls += 1
        else:
            assert "stages" not in rec, rec
    assert pulls > 0, "no hub pull records"
    print(f"loop json: ok ({pulls} hub pulls with stages)")


if __name__ == "__main__":
    main(sys.argv[1])
