#!/usr/bin/env python3
"""Plot lesson 07's warp sweep (producer and consumer warps) from the CSV its executable writes.

    tools/plot_producer_consumer.py SWEEP_CSV [-o OUT.png]
    tools/plot_producer_consumer.py --self-test

`07_producer_consumer --csv FILE` writes its sweep to FILE with `_sweep` before `.csv`
(07_producer_consumer_sweep.csv), in the harness's sweep format:

    lesson,gpu,sweep,partition,stages,producer_warps,consumer_warps,threads_per_block,
    copies_per_producer_thread,blocks,variant,median_ms,rate,unit,of_reference,of_roof,
    vs_baseline,check

with the yardsticks as rows whose sweep is "reference" (the D2D cudaMemcpy and the SM copy
roof). The picture has one panel at one block per SM: x the consumer warps, one line per
producer-warp count, every point a fraction of the SM copy roof timed in the same run (of
the D2D copy when the CSV has no roof). Horizontal lines mark the D2D copy and lesson 06's
unified cuda::pipeline at one block per SM (the baseline, recovered as of_roof /
vs_baseline); a failed check is a red cross. The PNG goes next to the CSV (same name, .png)
unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame
# The yardsticks' names and the reading of a ratio column, as in lesson 06's sweep plot.
from plot_pipeline_sweep import D2D, ROOF, number

REQUIRED = ["gpu", "sweep", "stages", "producer_warps", "consumer_warps", "variant",
            "of_reference", "of_roof", "vs_baseline", "check"]


def read_sweep(path):
    """The sweep CSV as a dict: "gpu"; "yardstick" (the column the points are in: "of_roof",
    or "of_reference" when the run had no SM copy roof) and its name; "lines" {name: value}
    for the D2D copy, the SM copy roof and the baseline; "stages"; "points" producer warps ->
    sorted [(consumer warps, value, check)]."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    has_roof = any(row["variant"] == ROOF for row in rows if row["sweep"] == "reference")
    column = "of_roof" if has_roof else "of_reference"
    data = {"gpu": rows[0]["gpu"], "yardstick": column,
            "yardstick_name": ROOF if has_roof else D2D, "lines": {}, "points": {},
            "stages": None}
    baseline = None
    for row in rows:
        value = number(row[column])
        if row["sweep"] == "reference":
            if value is not None:
                data["lines"][row["variant"]] = value
            continue
        if row["sweep"] != "warps":
            continue  # another sweep (--quick adds "stages (--quick)"): not in this picture
        if value is None:
            raise ValueError(f"{path}: {row['variant']!r} has no {column}")
        vs_baseline = number(row["vs_baseline"])
        if baseline is None and vs_baseline:
            baseline = value / vs_baseline
        data["stages"] = int(row["stages"])
        data["points"].setdefault(int(row["producer_warps"]), []).append(
            (int(row["consumer_warps"]), value, row["check"]))
    if baseline is not None:
        data["lines"]["baseline"] = round(baseline, 4)
    for points in data["points"].values():
        points.sort()
    return data


def plot(data, out_path):
    plt = plot_frame.pyplot()

    fig, axis = plt.subplots(figsize=(7.5, 4.4))
    markers = ["o", "s", "^", "D", "v"]
    for i, (producers, points) in enumerate(sorted(data["points"].items())):
        xs = [p[0] for p in points]
        ys = [p[1] for p in points]
        axis.plot(xs, ys, marker=markers[i % len(markers)],
                  label=f"{producers} producer warp{'s' if producers > 1 else ''}")
        failed = [(p[0], p[1]) for p in points if p[2] != "PASS"]
        if failed:
            axis.scatter(*zip(*failed), marker="x", color="red", s=80, zorder=3,
                         label=f"{producers} producer warps: check FAILED")
    styles = {
        ROOF: ("black", "--", "SM copy roof"),
        D2D: ("tab:blue", "-.", "D2D cudaMemcpy"),
        "baseline": ("gray", ":", "lesson 06 unified pipeline, 1 block per SM"),
    }
    for name, (color, style, label) in styles.items():
        if name in data["lines"]:
            axis.axhline(data["lines"][name], color=color, linestyle=style, linewidth=1.2,
                         label=label)
    ticks = sorted({p[0] for points in data["points"].values() for p in points})
    axis.set_xscale("log", base=2)
    axis.set_xticks(ticks)
    axis.set_xticklabels([str(t) for t in ticks])
    axis.set_xlabel("consumer warps")
    axis.set_ylabel(f"x {data['yardstick_name']} (same run)")
    axis.set_ylim(bottom=0)
    axis.grid(True, alpha=0.3)
    axis.legend(loc="lower right", fontsize=8)
    axis.set_title(f"Lesson 07 on {data['gpu']}: producer and consumer warps\n"
                   f"{data['stages']} stages of 16 KB, one block per SM, every point checked",
                   fontsize=11)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("skipped: matplotlib is not installed")
        return plot_frame.SKIP
    header = ["lesson", "gpu", "sweep", "partition", "stages", "producer_warps",
              "consumer_warps", "threads_per_block", "copies_per_producer_thread", "blocks",
              "variant", "median_ms", "rate", "unit", "of_reference", "of_roof", "vs_baseline",
              "check"]
    # Synthetic values, only to exercise the parser and the plot; never committed. The D2D
    # copy runs at 1.25 x the roof; the baseline (lesson 06) at 0.5 x the roof.
    rows = [["07", "Test GPU", "reference", "", "", "", "", "", "", "", D2D, "1.0", "2500.0",
             "GB/s", "1.0000", "1.2500", "", "ref"],
            ["07", "Test GPU", "reference", "", "", "", "", "", "", "", ROOF, "1.2", "2000.0",
             "GB/s", "0.8000", "1.0000", "", "ref"]]
    for producers in (2, 1):  # out of order on purpose: the parser sorts
        for consumers in (16, 2, 8, 4):
            roof = 0.05 * consumers + 0.01 * producers
            rows.append(["07", "Test GPU", "warps", "role", "4", str(producers), str(consumers),
                         str(32 * (producers + consumers)), "32", "4",
                         f"{producers}p{consumers}c", "1.0", "1.0", "GB/s",
                         f"{roof * 0.8:.4f}", f"{roof:.4f}", f"{roof / 0.5:.4f}",
                         "FAIL" if (producers, consumers) == (2, 8) else "PASS"])
    roof_column = header.index("of_roof")
    no_roof = [row[:roof_column] + [""] + row[roof_column + 1:] for row in rows
               if row[header.index("variant")] != ROOF]

    def write(path, body):
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(body)

    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "sweep.csv"
        path_no_roof = pathlib.Path(folder) / "sweep_no_roof.csv"
        write(path, rows)
        write(path_no_roof, no_roof)
        data = read_sweep(path)
        fallback = read_sweep(path_no_roof)
        checks = [
            (data["gpu"], "Test GPU"),
            (data["yardstick"], "of_roof"),
            (data["stages"], 4),
            (data["lines"], {D2D: 1.25, ROOF: 1.0, "baseline": 0.5}),
            (sorted(data["points"]), [1, 2]),
            ([p[0] for p in data["points"][1]], [2, 4, 8, 16]),
            (data["points"][1][0], (2, 0.11, "PASS")),
            (data["points"][2][2][2], "FAIL"),
            (fallback["yardstick"], "of_reference"),
            (fallback["lines"], {D2D: 1.0, "baseline": 0.4}),
        ]
        for actual, expected in checks:
            if actual != expected:
                print(f"self-test FAILED: {actual!r} != {expected!r}")
                return 1
        out = pathlib.Path(folder) / "sweep.png"
        plot(data, out)
        if not out.exists() or out.stat().st_size < 1000:
            print("self-test FAILED: no PNG written")
            return 1
    print("self-test passed")
    return 0


def main():
    return plot_frame.one_csv_main(__doc__, self_test, lambda csv, out: plot(read_sweep(csv), out),
                                   "the sweep CSV (07_producer_consumer_sweep.csv)")


if __name__ == "__main__":
    sys.exit(main())
