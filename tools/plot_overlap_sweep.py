#!/usr/bin/env python3
"""Lesson 14's chunk sweep: measured time of async-v1 and async-v2 against the chunk count.

    tools/plot_overlap_sweep.py 14_overlap_transfers_sweep.csv [-o OUT.png]
    tools/plot_overlap_sweep.py --self-test

Reads the sweep CSV that `14_overlap_transfers --csv FILE.csv` writes beside FILE.csv
(FILE_sweep.csv, the course harness's sweep format: lesson, gpu, sweep, the parameter
columns chunks, order, h2d_ms, kernel_ms, d2h_ms, then variant, median_ms, rate, unit,
of_reference, of_roof, vs_baseline, check) and plots, against the number of chunks (one
stream each):
  - sweep "chunks": the measured times of both orders (a red cross marks a failed check);
  - sweep "model": the engine-queue model's prediction for each order (order async-v1 or
    async-v2) and the bound no order can beat (order "bound"), from the stage times
    measured in the same run;
  - two horizontal lines: the sequential run (every measured row's median_ms x vs_baseline,
    the speed-up over sequential) and the two copies alone (the "reference" row).
Rows of other sweeps (the "timeline" runs) are ignored.

--self-test parses a small synthetic CSV in a temporary folder and checks what it read,
then plots it and checks that a PNG came out; it writes nothing else. Exit code 77 when
matplotlib is missing (after the parsing checks passed).
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

REQUIRED = ["gpu", "sweep", "chunks", "order", "variant", "median_ms", "vs_baseline", "check"]
STYLE = {"async-v1": ("#4477aa", "o"), "async-v2": ("#ee6677", "s")}


def read_sweep(path):
    """The sweep CSV as a dict: gpu, copies_only_ms, sequential_ms, and
    measured[order] / model[order] = sorted [(chunks, ms, check)], bound = sorted [(chunks, ms)]."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    data = {"gpu": rows[0]["gpu"], "copies_only_ms": None, "sequential_ms": None,
            "measured": {}, "model": {}, "bound": []}
    for row in rows:
        ms = float(row["median_ms"])
        if row["sweep"] == "reference":
            data["copies_only_ms"] = ms
        elif row["sweep"] == "chunks":
            data["measured"].setdefault(row["order"], []).append(
                (int(row["chunks"]), ms, row["check"]))
            if row["vs_baseline"] and data["sequential_ms"] is None:
                data["sequential_ms"] = ms * float(row["vs_baseline"])
        elif row["sweep"] == "model" and row["order"] == "bound":
            data["bound"].append((int(row["chunks"]), ms))
        elif row["sweep"] == "model":
            data["model"].setdefault(row["order"], []).append((int(row["chunks"]), ms, row["check"]))
    if not data["measured"]:
        raise ValueError(f"{path}: no rows of the 'chunks' sweep")
    for series in list(data["measured"].values()) + list(data["model"].values()):
        series.sort()
    data["bound"].sort()
    return data


def plot(data, output):
    plt = plot_frame.pyplot()

    fig, ax = plt.subplots(figsize=(8, 5))
    chunk_counts = sorted({p[0] for points in data["measured"].values() for p in points})
    for order, (colour, marker) in STYLE.items():
        measured = data["measured"].get(order, [])
        if measured:
            ax.plot([p[0] for p in measured], [p[1] for p in measured], color=colour,
                    marker=marker, label=f"{order} measured")
            failed = [(p[0], p[1]) for p in measured if p[2] != "PASS"]
            if failed:
                ax.scatter(*zip(*failed), marker="x", color="red", s=80, zorder=3,
                           label=f"{order}: check FAILED")
        model = data["model"].get(order, [])
        if model:
            ax.plot([p[0] for p in model], [p[1] for p in model], color=colour, linestyle="--",
                    label=f"{order} model")
    if data["bound"]:
        ax.plot([p[0] for p in data["bound"]], [p[1] for p in data["bound"]], color="black",
                linestyle=":", label="model bound (any order)")
    if data["sequential_ms"] is not None:
        ax.axhline(data["sequential_ms"], color="#777777", label="sequential")
    if data["copies_only_ms"] is not None:
        ax.axhline(data["copies_only_ms"], color="#aaaaaa", linestyle="-.",
                   label="copies only (both directions at once)")
    ax.set_xscale("log", base=2)
    ax.set_xticks(chunk_counts)
    ax.set_xticklabels([str(c) for c in chunk_counts])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("chunks (one stream each)")
    ax.set_ylabel("ms per run (median)")
    ax.set_title(f"{data['gpu']}: host -> kernel -> host, chunked and overlapped")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(output, dpi=120)
    plt.close(fig)


def self_test():
    header = ["lesson", "gpu", "sweep", "chunks", "order", "h2d_ms", "kernel_ms", "d2h_ms",
              "variant", "median_ms", "rate", "unit", "of_reference", "of_roof", "vs_baseline",
              "check"]
    # Synthetic values, only to exercise the parser and the plot; never committed.
    rows = [["14", "Test GPU", "reference", "", "", "", "", "", "copies only", "0.300000",
             "100.0", "GB/s", "1.0000", "", "", "ref"]]
    for chunks in (4, 1, 2):  # out of order on purpose: the parser sorts
        stage = [f"{0.3 / chunks:.6f}", f"{0.4 / chunks:.6f}", f"{0.3 / chunks:.6f}"]
        bound = 1.0 + 0.4 * (chunks - 1) / chunks
        for order, extra in (("async-v1", 0.0), ("async-v2", 0.05)):
            measured = bound + extra
            check = "FAIL" if (order, chunks) == ("async-v2", 2) else "PASS"
            rows.append(["14", "Test GPU", "chunks", str(chunks), order, *stage,
                         f"{order}, {chunks} chunks", f"{measured:.6f}", "1.0", "GB/s", "0.5",
                         "", f"{1.2 / measured:.4f}", check])
            rows.append(["14", "Test GPU", "model", str(chunks), order, *stage,
                         f"model {order}, {chunks} chunks", f"{bound:.6f}", "1.0", "GB/s", "0.5",
                         "", f"{1.2 / bound:.4f}", "-"])
        rows.append(["14", "Test GPU", "model", str(chunks), "bound", *stage,
                     f"bound (any order), {chunks} chunks", f"{bound:.6f}", "1.0", "GB/s", "0.5",
                     "", "1.0", "-"])
    rows.append(["14", "Test GPU", "timeline", "4", "async-v1", "", "", "",
                 "async-v1, 4 chunks, events around every operation", "9.0", "1.0", "GB/s",
                 "0.1", "", "0.1", "PASS"])
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "14_overlap_transfers_sweep.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            csv.writer(handle, lineterminator="\n").writerows([header] + rows)
        data = read_sweep(path)
        checks = [
            (data["gpu"], "Test GPU"),
            (data["copies_only_ms"], 0.3),
            (round(data["sequential_ms"], 3), 1.2),
            ([p[0] for p in data["measured"]["async-v1"]], [1, 2, 4]),
            (data["measured"]["async-v2"][1][2], "FAIL"),
            ([p[1] for p in data["model"]["async-v2"]], [1.0, 1.2, 1.3]),
            (data["bound"], [(1, 1.0), (2, 1.2), (4, 1.3)]),
            (sorted(data["measured"]), ["async-v1", "async-v2"]),
        ]
        for actual, expected in checks:
            if actual != expected:
                print(f"self-test FAILED: {actual!r} != {expected!r}")
                return 1
        if not plot_frame.has_matplotlib():
            print("parsing checked; plot skipped: matplotlib is not installed")
            return plot_frame.SKIP
        out = pathlib.Path(folder) / "sweep.png"
        plot(data, out)
        if not out.exists() or out.stat().st_size < 1000:
            print("self-test FAILED: no PNG written")
            return 1
    print("self-test passed")
    return 0


def main():
    return plot_frame.one_csv_main(
        __doc__, self_test, lambda csv, out: plot(read_sweep(csv), out),
        "the FILE_sweep.csv of 14_overlap_transfers --csv FILE.csv",
        default_output=lambda csv: csv.with_name("14_overlap_transfers_sweep.png"))


if __name__ == "__main__":
    sys.exit(main())
