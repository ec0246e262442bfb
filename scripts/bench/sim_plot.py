#!/usr/bin/env python3
"""Plots `tensorhub sim` results: one PNG next to each JSON (time vs N, one line per method).

Usage: scripts/bench/sim_plot.py FILE.json ...
Left: last reader as a multiple of the lower bound; right: trainer bytes / S (WAN bytes / S for
2 DCs). Needs matplotlib (Debian: python3-matplotlib).
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot(path):
    d = json.load(open(path))
    if d.get("benchmark") != "sim":
        print("skipped", path, "(not a tensorhub sim result)")
        return
    if d.get("preset") == "elastic":
        print("skipped", path, "(elastic joins: see the joiner lines of its .txt)")
        return
    runs = d["runs"]
    ns = [r["readers"] for r in runs]
    names = []
    for r in runs:
        for m in r["methods"]:
            if m["method"] not in names:
                names.append(m["method"])
    wan = runs[0]["topology"]["dcs"] == 2
    fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
    for name in names:
        pts, bts = [], []
        for n, r in zip(ns, runs):
            m = next((m for m in r["methods"] if m["method"] == name and "skipped" not in m), None)
            if m is None:
                continue
            pts.append((n, m["last_ratio"]))
            bts.append((n, m["wan_bytes_ratio"] if wan else m["trainer_bytes_ratio"]))
        label = name + {"tensorhub": " (plan-based)", "tensorhub-chunk": " (per-chunk protocol)"}.get(name, "")
        axes[0].plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=label)
        axes[1].plot([p[0] for p in bts], [p[1] for p in bts], marker="o", label=label)
    S = runs[0]["model_bytes"]
    for ax in axes:
        ax.set_xscale("log", base=2)
        ax.set_yscale("log")
        ax.set_xticks(ns)
        ax.set_xticklabels([str(n) for n in ns])
        ax.set_xlabel("readers N")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    axes[0].set_ylabel("last reader / lower bound")
    axes[0].set_title(f"tensorhub sim --preset {d['preset']}: S = {S / 1e9:.3g} GB", fontsize=10)
    axes[1].set_ylabel("WAN bytes / S" if wan else "trainer bytes / S")
    axes[1].set_title("bytes over the WAN" if wan else "bytes the trainers sent", fontsize=10)
    fig.tight_layout()
    png = os.path.splitext(path)[0] + ".png"
    fig.savefig(png, dpi=110)
    print("wrote", png)


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    for p in sys.argv[1:]:
        plot(p)
