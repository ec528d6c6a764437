#!/usr/bin/env python3
"""Plot lesson 06's (and lesson 10's) stage and granularity sweeps from the CSV its executable writes.

    tools/plot_pipeline_sweep.py SWEEP_CSV [-o OUT.png]
    tools/plot_pipeline_sweep.py --self-test

`06_pipeline_multi_stage --csv FILE` writes its sweeps to FILE with `_sweep` before
`.csv` (e.g. 06_pipeline_multi_stage_sweep.csv), in the harness's sweep format:

    lesson,gpu,sweep,<parameters>,variant,median_ms,rate,unit,of_reference,of_roof,vs_baseline,check

with the parameters interface, stages, vectors_per_thread, batch_bytes, threads_per_block
and blocks, and the yardsticks as rows whose sweep is "reference" (the D2D cudaMemcpy and
the SM copy roof). The picture has two panels, both at one block per SM: the stage count
(2-8, 16 KB batches) and the batch size (4-32 KB). Every point is a fraction of the SM copy
roof timed in the same run (of the D2D copy when the CSV has no roof); horizontal lines
mark the D2D copy and the lesson's baseline (lesson 06: lesson 01's register-staged kernel
at one block per SM; lesson 10: lesson 06's primitives kernel at full occupancy), recovered
as of_roof / vs_baseline. The title names the lesson of the CSV's lesson column, and each
line is labelled with its variants' name (the variant column up to its first comma). The
PNG goes next to the CSV (same name, .png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

REQUIRED = ["gpu", "sweep", "interface", "stages", "batch_bytes", "variant", "of_reference",
            "of_roof", "vs_baseline", "check"]
INTERFACES = ["pipeline", "primitives"]
MARKERS = {"pipeline": "o", "primitives": "s"}
D2D = "D2D cudaMemcpy"
ROOF = "SM copy roof"
# What vs_baseline is relative to, per lesson (the driver's baseline variant).
BASELINES = {"06": "lesson 01 coarse, 1 block per SM",
             "10": "06-primitives, full occupancy (the baseline)"}


def number(text):
    """A ratio column's value, or None when it is empty."""
    return float(text) if text not in (None, "") else None


def read_sweep(path):
    """The sweep CSV as a dict:

    "gpu"; "yardstick" (the column the points are in: "of_roof", or "of_reference" when the
    run had no SM copy roof) and its name; "lines" {name: value in that yardstick} for the
    D2D copy, the SM copy roof and the baseline (lesson 01 at one block per SM);
    "stages" interface -> sorted [(stages, value, check)]; "granularity" interface ->
    sorted [(batch KB, value, check)]; "granularity_stages" the stage count of that sweep.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    has_roof = any(row["variant"] == ROOF for row in rows if row["sweep"] == "reference")
    column = "of_roof" if has_roof else "of_reference"
    data = {"gpu": rows[0]["gpu"], "lesson": rows[0]["lesson"][:2], "labels": {},
            "yardstick": column,
            "yardstick_name": ROOF if has_roof else D2D, "lines": {}, "stages": {},
            "granularity": {}, "granularity_stages": None}
    baseline = None
    for row in rows:
        value = number(row[column])
        if row["sweep"] == "reference":
            if value is not None:
                data["lines"][row["variant"]] = value
            continue
        if value is None:
            raise ValueError(f"{path}: {row['variant']!r} has no {column}")
        vs_baseline = number(row["vs_baseline"])
        if baseline is None and vs_baseline:
            baseline = value / vs_baseline
        data["labels"].setdefault(row["interface"], row["variant"].split(",")[0])
        if row["sweep"] == "stages":
            data["stages"].setdefault(row["interface"], []).append(
                (int(row["stages"]), value, row["check"]))
        elif row["sweep"] == "granularity":
            data["granularity"].setdefault(row["interface"], []).append(
                (int(row["batch_bytes"]) / 1024, value, row["check"]))
            data["granularity_stages"] = int(row["stages"])
        else:
            raise ValueError(f"{path}: unknown sweep {row['sweep']!r}")
    if baseline is not None:
        data["lines"]["baseline"] = round(baseline, 4)
    for sweep in ("stages", "granularity"):
        for points in data[sweep].values():
            points.sort()
    return data


def plot(data, out_path):
    plt = plot_frame.pyplot()

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = [
        (left, "stages", "stages (shared buffers)", "Stage sweep: 16 KB batches"),
        (right, "granularity", "batch size (KB)",
         f"Granularity sweep: {data['granularity_stages']} stages"),
    ]
    styles = {
        ROOF: ("black", "--", "SM copy roof"),
        D2D: ("tab:blue", "-.", "D2D cudaMemcpy"),
        "baseline": ("gray", ":", BASELINES.get(data["lesson"], "the baseline")),
    }
    for axis, sweep, xlabel, title in panels:
        for interface in INTERFACES:
            points = data[sweep].get(interface, [])
            if not points:
                continue
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            label = data["labels"].get(interface, interface)
            axis.plot(xs, ys, marker=MARKERS[interface], label=label)
            failed = [(p[0], p[1]) for p in points if p[2] != "PASS"]
            if failed:
                axis.scatter(*zip(*failed), marker="x", color="red", s=80, zorder=3,
                             label=f"{label}: check FAILED")
        for name, (color, style, label) in styles.items():
            if name in data["lines"]:
                axis.axhline(data["lines"][name], color=color, linestyle=style, linewidth=1.2,
                             label=label)
        if sweep == "granularity":
            axis.set_xscale("log", base=2)
            ticks = sorted({p[0] for points in data[sweep].values() for p in points})
            axis.set_xticks(ticks)
            axis.set_xticklabels([f"{t:g}" for t in ticks])
        axis.set_xlabel(xlabel)
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    left.set_ylabel(f"x {data['yardstick_name']} (same run)")
    left.set_ylim(bottom=0)
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"Lesson {data['lesson']} on {data['gpu']}: one block per SM, every point checked")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("skipped: matplotlib is not installed")
        return plot_frame.SKIP
    header = ["lesson", "gpu", "sweep", "interface", "stages", "vectors_per_thread",
              "batch_bytes", "threads_per_block", "blocks", "variant", "median_ms", "rate",
              "unit", "of_reference", "of_roof", "vs_baseline", "check"]
    # Synthetic values, only to exercise the parser and the plot; never committed. The D2D
    # copy runs at 1.25 x the roof; the baseline (lesson 01) at 0.5 x the roof.
    rows = [["06", "Test GPU", "reference", "", "", "", "", "", "", D2D, "1.0", "2500.0",
             "GB/s", "1.0000", "1.2500", "", "ref"],
            ["06", "Test GPU", "reference", "", "", "", "", "", "", ROOF, "1.2", "2000.0",
             "GB/s", "0.8000", "1.0000", "", "ref"]]

    def point(sweep, interface, stages, vectors, roof, check):
        return ["06", "Test GPU", sweep, interface, str(stages), str(vectors),
                str(4096 * vectors), "256", "4",
                f"{interface}, {stages} stages, {4 * vectors} KB", "1.0", "1.0", "GB/s",
                f"{roof * 0.8:.4f}", f"{roof:.4f}", f"{roof / 0.5:.4f}", check]

    for interface in INTERFACES:
        for stages in range(2, 9):
            rows.append(point("stages", interface, stages, 4, 0.1 * stages, "PASS"))
        for vectors in (8, 1, 4, 2):  # out of order on purpose: the parser sorts
            rows.append(point("granularity", interface, 4, vectors, 0.2 * vectors,
                              "FAIL" if vectors == 2 else "PASS"))
    # The same run without the SM copy roof: the plot falls back to the D2D copy.
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
        expected_stages = [(s, round(0.1 * s, 4), "PASS") for s in range(2, 9)]
        checks = [
            (data["gpu"], "Test GPU"),
            (data["lesson"], "06"),
            (data["labels"], {"pipeline": "pipeline", "primitives": "primitives"}),
            (data["yardstick"], "of_roof"),
            (data["lines"], {D2D: 1.25, ROOF: 1.0, "baseline": 0.5}),
            (data["stages"]["primitives"], expected_stages),
            ([p[0] for p in data["granularity"]["pipeline"]], [4.0, 8.0, 16.0, 32.0]),
            (data["granularity"]["pipeline"][1][2], "FAIL"),
            (data["granularity_stages"], 4),
            (fallback["yardstick"], "of_reference"),
            (fallback["lines"], {D2D: 1.0, "baseline": 0.4}),
            (fallback["stages"]["pipeline"][0], (2, 0.16, "PASS")),
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
                                   "the sweep CSV (NN_slug_sweep.csv)")


if __name__ == "__main__":
    sys.exit(main())
