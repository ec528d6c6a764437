#!/usr/bin/env python3
"""Plots lesson 16's size sweep of cudaMemcpyPeerAsync: GB/s against the copy size, with
the overhead + bytes / bandwidth line fitted to the sizes up to 16 MiB.

  tools/plot_peer_sweep.py docs/results/<gpu>/16_peer_to_peer_sweep.csv -o 16_peer_sweep-<gpu>.png
  tools/plot_peer_sweep.py --self-test     (draws a synthetic sweep; a CPU check of the script)

The sweep CSV is what `16_peer_to_peer --csv FILE.csv` writes to FILE_sweep.csv: one row per
point, the part in column `sweep` ("size"), the copy size in `bytes`, the median in
`median_ms`. Exits 77 when matplotlib is missing.
"""

import csv
import math
import sys
import tempfile
from pathlib import Path

import plot_frame

FIT_LARGEST = 16 * 2**20


def read_sweep(path):
    """(bytes, median ms) of the size sweep's rows, in order of size."""
    points = []
    with open(path, newline="", encoding="utf-8") as handle:
        for row in csv.DictReader(handle):
            if row.get("sweep") != "size":
                continue
            points.append((float(row["bytes"]), float(row["median_ms"])))
    if len(points) < 2:
        raise ValueError(f"{path}: fewer than two rows of the size sweep")
    return sorted(points)


def fit_line(points):
    """Least squares t_us = overhead + bytes / (GB/s x 1e3) over the points up to 16 MiB."""
    xs = [b for b, _ in points if b <= FIT_LARGEST]
    ys = [ms * 1e3 for b, ms in points if b <= FIT_LARGEST]
    n = len(xs)
    if n < 2:
        raise ValueError("fewer than two sweep points up to 16 MiB")
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    if slope <= 0:
        raise ValueError("the times do not grow with the size")
    return my - slope * mx, 1e-3 / slope  # overhead (us), bandwidth (GB/s)


def plot(points, output, title):
    plt = plot_frame.pyplot()

    overhead, bandwidth = fit_line(points)
    sizes = [b for b, _ in points]
    rates = [b / (ms * 1e6) for b, ms in points]
    model = [b / ((overhead + b / (bandwidth * 1e3)) * 1e3) for b in sizes]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(sizes, rates, "o-", label="cudaMemcpyPeerAsync (measured)")
    ax.plot(sizes, model, "--", label=f"{overhead:.1f} us + bytes / {bandwidth:.0f} GB/s (fit up to 16 MiB)")
    ax.set_xscale("log", base=2)
    ax.set_xlabel("bytes per copy")
    ax.set_ylabel("GB/s")
    ax.set_title(title)
    ax.grid(True, which="both", alpha=0.3)
    ax.legend()
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)
    return overhead, bandwidth


def self_test():
    with tempfile.TemporaryDirectory() as tmp:
        csv_path = Path(tmp) / "sweep.csv"
        with open(csv_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["sweep", "bytes", "variant", "median_ms"])
            size = 4096
            while size <= 2**30:
                writer.writerow(["size", size, f"copy engine b->a {size}", (6.0 + size / 400e3) / 1e3])
                size *= 2
            writer.writerow(["other", 1, "x", 1.0])
        points = read_sweep(csv_path)
        assert len(points) == 19 and points[0][0] == 4096, points[:2]
        overhead, bandwidth = fit_line(points)
        assert math.isclose(overhead, 6.0, rel_tol=1e-6), overhead
        assert math.isclose(bandwidth, 400.0, rel_tol=1e-6), bandwidth
        if not plot_frame.has_matplotlib():
            print("plot_peer_sweep self-test: reading and fit ok; matplotlib is not installed, "
                  "the drawing is not checked", file=sys.stderr)
            return plot_frame.SKIP
        output = Path(tmp) / "sweep.png"
        plot(points, output, "self-test")
        assert output.stat().st_size > 0
    print("plot_peer_sweep self-test: ok")
    return 0


def main():
    return plot_frame.main(__doc__, self_test, make, "the picture to write (.png)", add_arguments)


def add_arguments(parser):
    parser.add_argument("csv", nargs="?", help="the lesson's sweep CSV (FILE_sweep.csv)")
    parser.add_argument("--title", default="Lesson 16: cudaMemcpyPeerAsync by copy size")


def make(args, parser):
    if not args.csv or not args.output:
        parser.error("a CSV and -o OUTPUT are needed (or --self-test)")
    if not plot_frame.has_matplotlib():
        print("matplotlib is not installed: nothing drawn", file=sys.stderr)
        return plot_frame.SKIP
    overhead, bandwidth = plot(read_sweep(args.csv), args.output, args.title)
    return f"{args.output}: fit {overhead:.2f} us + bytes / {bandwidth:.1f} GB/s"


if __name__ == "__main__":
    sys.exit(main())
