#!/usr/bin/env python3
"""Plots the benchmark results: share/results/bench-<scenario>.json -> bench-<scenario>.png.

Usage: scripts/bench/plot.py [--dir DIR] [SCENARIO ...]
  DIR        where the JSON files are and the PNGs go (default share/results)
  SCENARIO   fanout, stall, elastic, crossdc (default: each one whose JSON exists)
Needs matplotlib (Debian: python3-matplotlib); draws with the Agg backend (no display).
Example: scripts/bench/plot.py --dir share/results fanout
"""
import json
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def ratio_or_seconds(d, ratio_key, seconds_key):
    """The x S/R ratio when the run had a link rate, else the seconds; and the axis label."""
    if d.get(ratio_key) is not None:
        return d[ratio_key], "x S/R"
    return d[seconds_key], "seconds"


def grouped_bars(ax, groups, series, ylabel, title):
    """Bars for each group (x) and series (colour); series: {name: [value or None per group]}."""
    width = 0.8 / max(1, len(series))
    for i, (name, values) in enumerate(series.items()):
        xs = [g + (i - (len(series) - 1) / 2) * width for g in range(len(groups))]
        vals = [v if v is not None else 0 for v in values]
        bars = ax.bar(xs, vals, width, label=name)
        for b, v in zip(bars, values):
            ax.annotate("-" if v is None else f"{v:.2f}", (b.get_x() + b.get_width() / 2, b.get_height()),
                        ha="center", va="bottom", fontsize=7)
    ax.set_xticks(range(len(groups)))
    ax.set_xticklabels(groups)
    style(ax, ylabel, title, legend=len(series) > 1)


def lines(ax, xs, series, xlabel, ylabel, title):
    """One line per series over xs; series: {name: [value or None per x]}."""
    for name, values in series.items():
        pts = [(x, v) for x, v in zip(xs, values) if v is not None]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", label=name)
    ax.set_xticks(xs)
    ax.set_xlabel(xlabel)
    style(ax, ylabel, title, legend=True)


def style(ax, ylabel, title, legend):
    ax.set_ylabel(ylabel)
    ax.set_title(title, fontsize=10)
    ax.grid(axis="y", alpha=0.3)
    if legend:
        ax.legend(fontsize=8)


def subtitle(d):
    mbit = d.get("link_mbit")
    size = d["model_bytes"] / 2**20
    return f"S = {size:.0f} MiB, R = {mbit:.0f} Mbit/s" if mbit else f"S = {size:.0f} MiB"


def plot_fanout(d, axes):
    runs = d["runs"]
    ns = [r["readers"] for r in runs]
    names = [m["method"] for m in runs[0]["methods"]]
    unit = ratio_or_seconds(runs[0]["methods"][0], "last_ratio", "last_reader_s")[1]
    last = {n: [ratio_or_seconds(r["methods"][i], "last_ratio", "last_reader_s")[0] for r in runs]
            for i, n in enumerate(names)}
    sent = {n: [r["methods"][i]["trainer_bytes_ratio"] for r in runs] for i, n in enumerate(names)}
    lines(axes[0], ns, last, "readers N", f"last reader ({unit})",
          f"fan-out: time until every reader has the model ({subtitle(runs[0])})")
    lines(axes[1], ns, sent, "readers N", "trainer bytes / S", "bytes the trainer sent")


def plot_stall(d, axes):
    modes = [m["mode"] for m in d["modes"]]
    per = [ratio_or_seconds(m, "stall_per_update_ratio", "stall_per_update_s") for m in d["modes"]]
    grouped_bars(axes[0], modes, {"stall per update": [p[0] for p in per]}, f"stall per update ({per[0][1]})",
                 f"RL loop, {d['rollouts']} rollouts, version every {d['period_s']:g} s ({subtitle(d)})")
    grouped_bars(axes[1], modes, {"share of time stalled": [100 * m["stall_share"] for m in d["modes"]]},
                 "% of rollout time", "time blocked waiting for weights")


def plot_elastic(d, axes):
    ranks = [f"rank {n['rank']}\n+{n['at_s']:.0f} s" for n in d["newcomers"]]
    times = [ratio_or_seconds(n, "ratio", "seconds") for n in d["newcomers"]]
    grouped_bars(axes[0], ranks, {"time to latest": [t[0] for t in times]}, f"time to latest ({times[0][1]})",
                 f"newcomers, {d['delta_s']:g} s apart ({subtitle(d)})")
    grouped_bars(axes[1], ranks, {"from trainer": [n["origin_bytes"] / 2**20 for n in d["newcomers"]],
                                  "from peers": [n["relay_bytes"] / 2**20 for n in d["newcomers"]]},
                 "MiB", "where each newcomer's bytes came from")


def plot_crossdc(d, axes):
    names = [m["method"] for m in d["methods"]]
    last = [ratio_or_seconds(m, "last_ratio", "last_reader_s") for m in d["methods"]]
    grouped_bars(axes[0], names, {"WAN bytes / S per version": [m["wan_ratio"] for m in d["methods"]]},
                 "WAN bytes / S", f"two DCs, {d['remote_readers']} of {d['readers']} readers remote "
                 f"({subtitle(d)}, WAN {d.get('wan_mbit', 0):g} Mbit/s)")
    grouped_bars(axes[1], names, {"last reader": [x[0] for x in last]}, f"last reader ({last[0][1]})",
                 "time until every reader has the model")


PLOTS = {"fanout": plot_fanout, "stall": plot_stall, "elastic": plot_elastic, "crossdc": plot_crossdc}


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__)
        return 0
    out_dir = os.path.join(ROOT, "share", "results")
    if "--dir" in argv:
        i = argv.index("--dir")
        out_dir = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    wanted = argv or [s for s in PLOTS if os.path.exists(os.path.join(out_dir, f"bench-{s}.json"))]
    for s in wanted:
        if s not in PLOTS:
            print(f"plot.py: unknown scenario '{s}' (available: {', '.join(PLOTS)})", file=sys.stderr)
            return 2
        with open(os.path.join(out_dir, f"bench-{s}.json")) as f:
            d = json.load(f)
        fig, axes = plt.subplots(1, 2, figsize=(12, 4.5))
        PLOTS[s](d, axes)
        fig.tight_layout()
        png = os.path.join(out_dir, f"bench-{s}.png")
        fig.savefig(png, dpi=110)
        plt.close(fig)
        print(f"wrote {png}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
