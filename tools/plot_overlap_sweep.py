#!/usr/bin/env python3
"""Lesson 14's chunk sweep: measured time of async-v1 and async-v2 against the chunk count.

    tools/plot_overlap_sweep.py 14_overlap_transfers_sweep.csv [-o OUT.png]

Reads the sweep CSV that `14_overlap_transfers --csv FILE` writes next to FILE
(FILE_sweep.csv) and plots, against the number of chunks (one stream each): the measured
times of both orders, the engine-queue model's prediction for each (from the stage times
measured in the same run), the model's bound (no order can beat it), and two horizontal
lines: the sequential run and the two copies alone ("copies only").
"""
import argparse
import csv
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

STYLE = {"async-v1": ("#4477aa", "o"), "async-v2": ("#ee6677", "s")}


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    for r in rows:
        r["chunks"] = int(r["chunks"])
        for key in ("measured_ms", "model_ms", "bound_ms", "sequential_ms", "copies_only_ms"):
            r[key] = float(r[key])
    return rows


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", help="the FILE_sweep.csv of 14_overlap_transfers --csv FILE")
    parser.add_argument("-o", "--output",
                        help="image to write (default: 14_overlap_transfers_sweep.png next to the CSV)")
    args = parser.parse_args()
    path = pathlib.Path(args.csv)
    default = path.with_name("14_overlap_transfers_sweep.png")
    output = pathlib.Path(args.output) if args.output else default
    rows = read_rows(path)

    fig, ax = plt.subplots(figsize=(8, 5))
    chunk_counts = sorted({r["chunks"] for r in rows})
    for order, (colour, marker) in STYLE.items():
        mine = sorted((r for r in rows if r["order"] == order), key=lambda r: r["chunks"])
        if not mine:
            continue
        xs = [r["chunks"] for r in mine]
        ax.plot(xs, [r["measured_ms"] for r in mine], color=colour, marker=marker,
                label=f"{order} measured")
        ax.plot(xs, [r["model_ms"] for r in mine], color=colour, linestyle="--",
                label=f"{order} model")
    bound = {r["chunks"]: r["bound_ms"] for r in rows}
    ax.plot(chunk_counts, [bound[c] for c in chunk_counts], color="black", linestyle=":",
            label="model bound (any order)")
    ax.axhline(rows[0]["sequential_ms"], color="#777777", label="sequential")
    ax.axhline(rows[0]["copies_only_ms"], color="#aaaaaa", linestyle="-.",
               label="copies only (both directions at once)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(chunk_counts)
    ax.set_xticklabels([str(c) for c in chunk_counts])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("chunks (one stream each)")
    ax.set_ylabel("ms per run (median)")
    ax.set_title(f"{rows[0]['gpu']}: host -> kernel -> host, chunked and overlapped")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    print(f"wrote {output}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
