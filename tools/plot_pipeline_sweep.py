#!/usr/bin/env python3
"""Plot lesson 06's stage and granularity sweeps from the CSV its executable writes.

    tools/plot_pipeline_sweep.py SWEEP_CSV [-o OUT.png]
    tools/plot_pipeline_sweep.py --self-test

`06_pipeline_multi_stage --csv FILE` writes its sweeps to FILE with `_sweep` before
`.csv` (e.g. 06_pipeline_multi_stage_sweep.csv). The picture has two panels, both at one
block per SM, both as a fraction of the device-to-device cudaMemcpy timed in the same run:
the stage count (2-8, 16 KB batches) and the batch size (4-32 KB). Dashed lines mark the
copy roof and lesson 01's register-staged kernel at the same occupancy. The PNG goes next
to the CSV (same name, .png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import argparse
import csv
import pathlib
import sys
import tempfile

REQUIRED = ["gpu", "sweep", "interface", "stages", "batch_bytes", "of_d2d", "check"]
INTERFACES = ["pipeline", "primitives"]
MARKERS = {"pipeline": "o", "primitives": "s"}


def read_sweep(path):
    """The sweep CSV as {"gpu", "references": {name: of_d2d}, "stages": {...}, "granularity": {...}}.

    "stages" maps interface -> sorted [(stages, of_d2d, check)], "granularity" maps
    interface -> sorted [(batch KB, of_d2d, check)] and records its stage count.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    data = {"gpu": rows[0]["gpu"], "references": {}, "stages": {}, "granularity": {},
            "granularity_stages": None}
    for row in rows:
        of_d2d = float(row["of_d2d"])
        if row["sweep"] == "reference":
            data["references"][row["interface"]] = of_d2d
        elif row["sweep"] == "stages":
            data["stages"].setdefault(row["interface"], []).append(
                (int(row["stages"]), of_d2d, row["check"]))
        elif row["sweep"] == "granularity":
            data["granularity"].setdefault(row["interface"], []).append(
                (int(row["batch_bytes"]) / 1024, of_d2d, row["check"]))
            data["granularity_stages"] = int(row["stages"])
        else:
            raise ValueError(f"{path}: unknown sweep {row['sweep']!r}")
    for sweep in ("stages", "granularity"):
        for points in data[sweep].values():
            points.sort()
    return data


def plot(data, out_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    panels = [
        (left, "stages", "stages (shared buffers)", "Stage sweep: 16 KB batches"),
        (right, "granularity", "batch size (KB)",
         f"Granularity sweep: {data['granularity_stages']} stages"),
    ]
    lesson01 = next((v for k, v in data["references"].items() if k.startswith("01")), None)
    for axis, sweep, xlabel, title in panels:
        for interface in INTERFACES:
            points = data[sweep].get(interface, [])
            if not points:
                continue
            xs = [p[0] for p in points]
            ys = [p[1] for p in points]
            axis.plot(xs, ys, marker=MARKERS[interface], label=interface)
            failed = [(p[0], p[1]) for p in points if p[2] != "PASS"]
            if failed:
                axis.scatter(*zip(*failed), marker="x", color="red", s=80, zorder=3,
                             label=f"{interface}: check FAILED")
        axis.axhline(1.0, color="black", linestyle="--", linewidth=1, label="D2D cudaMemcpy")
        if lesson01 is not None:
            axis.axhline(lesson01, color="gray", linestyle=":", linewidth=1.5,
                         label="lesson 01 coarse, 1 block per SM")
        if sweep == "granularity":
            axis.set_xscale("log", base=2)
            ticks = sorted({p[0] for points in data[sweep].values() for p in points})
            axis.set_xticks(ticks)
            axis.set_xticklabels([f"{t:g}" for t in ticks])
        axis.set_xlabel(xlabel)
        axis.set_title(title)
        axis.grid(True, alpha=0.3)
    left.set_ylabel("x D2D cudaMemcpy (same run)")
    left.set_ylim(bottom=0)
    right.legend(loc="lower right", fontsize=8)
    fig.suptitle(f"Lesson 06 on {data['gpu']}: one block per SM, every point checked")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


def self_test():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("skipped: matplotlib is not installed")
        return 77
    header = ("lesson,gpu,sweep,interface,stages,vectors_per_thread,batch_bytes,"
              "threads_per_block,blocks,median_ms,gb_per_s,of_d2d,vs_01_coarse_1_per_sm,check")
    # Synthetic values, only to exercise the parser and the plot; never committed.
    lines = [header,
             "06,Test GPU,reference,D2D cudaMemcpy,0,0,0,256,0,1.0,2000.0,1.0000,2.0000,ref",
             "06,Test GPU,reference,01-coarse-1-per-SM,1,4,16384,256,4,2.0,1000.0,0.5000,1.0000,PASS"]
    for interface in INTERFACES:
        for stages in range(2, 9):
            lines.append(f"06,Test GPU,stages,{interface},{stages},4,16384,256,4,1.0,1.0,"
                         f"{0.1 * stages:.4f},1.0,PASS")
        for vectors in (8, 1, 4, 2):  # out of order on purpose: the parser sorts
            lines.append(f"06,Test GPU,granularity,{interface},4,{vectors},{4096 * vectors},256,4,"
                         f"1.0,1.0,{0.2 * vectors:.4f},1.0,{'FAIL' if vectors == 2 else 'PASS'}")
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "sweep.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        data = read_sweep(path)
        expected_stages = [(s, round(0.1 * s, 4), "PASS") for s in range(2, 9)]
        checks = [
            (data["gpu"], "Test GPU"),
            (data["references"], {"D2D cudaMemcpy": 1.0, "01-coarse-1-per-SM": 0.5}),
            (data["stages"]["primitives"], expected_stages),
            ([p[0] for p in data["granularity"]["pipeline"]], [4.0, 8.0, 16.0, 32.0]),
            (data["granularity"]["pipeline"][1][2], "FAIL"),
            (data["granularity_stages"], 4),
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
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", help="the sweep CSV (NN_slug_sweep.csv)")
    parser.add_argument("-o", "--output", help="the PNG to write (default: next to the CSV)")
    parser.add_argument("--self-test", action="store_true", help="check this script and exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.csv:
        parser.error("give the sweep CSV (or --self-test)")
    path = pathlib.Path(args.csv)
    out = pathlib.Path(args.output) if args.output else path.with_suffix(".png")
    plot(read_sweep(path), out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
