#!/usr/bin/env python3
"""Plot lesson 12's bandwidth sweep and small-copy models from the sweep CSV it writes.

    tools/plot_pinned_memory.py SWEEP_CSV [-o OUT.png]
    tools/plot_pinned_memory.py --self-test

`12_pinned_memory --csv FILE.csv` writes FILE_sweep.csv: the course harness's one sweep
CSV, a row per point, the part in column `sweep`. This script reads two of its sweeps:
`bandwidth` (every host memory kind, H2D and D2H, 4 KB up to --size: columns direction,
memory, bytes, rate in GB/s, check) and `breakeven` (microseconds per copy from 4 to
64 KB, back to back: columns direction, bytes, median_ms per copy, and the model the run
chose, model_us at that size and its description in `model`). The picture has three
panels: H2D and D2H bandwidth against the copy size (log scale), one line per kind of
host memory, and the break-even sweep with the fitted model (a flat part, a straight
line, or a flat part then a line; no bandwidth is quoted when the fit was not physical).
Without breakeven rows the picture has two panels. The PNG goes next to the CSV (same
name, .png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

COMMON_COLUMNS = ["gpu", "sweep", "variant", "median_ms", "rate", "unit", "check"]
BANDWIDTH_COLUMNS = ["direction", "memory", "bytes"]
BREAKEVEN_COLUMNS = ["direction", "bytes", "model_us", "model"]
DIRECTIONS = ["H2D", "D2H"]
# The kinds in the order the executable runs them; pageable stands out, the pinned
# kinds share one family of markers (most of them lie on top of each other).
STYLES = {
    "pageable": {"color": "tab:red", "marker": "o", "linewidth": 2.0},
    "pinned": {"color": "tab:blue", "marker": "s"},
    "hostalloc": {"color": "tab:cyan", "marker": "^"},
    "portable": {"color": "tab:green", "marker": "v"},
    "mapped": {"color": "tab:olive", "marker": "<"},
    "write-combined": {"color": "tab:purple", "marker": ">"},
    "registered": {"color": "tab:orange", "marker": "D"},
}


def read_rows(path):
    """The rows of the sweep CSV, checked for the harness's columns."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in COMMON_COLUMNS if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing} (is it the harness's sweep CSV?)")
    return rows


def rows_of(rows, path, sweep, columns):
    chosen = [row for row in rows if row["sweep"] == sweep]
    if chosen:
        missing = [column for column in columns if column not in chosen[0]]
        if missing:
            raise ValueError(f"{path}: sweep {sweep!r} lacks columns {missing}")
    return chosen


def read_bandwidth(rows, path):
    """{"gpu": name, "H2D": {memory: [(bytes, gbps, check)]}, "D2H": {...}}, sorted by size."""
    data = {"gpu": rows[0]["gpu"], "H2D": {}, "D2H": {}}
    for row in rows_of(rows, path, "bandwidth", BANDWIDTH_COLUMNS):
        if row["direction"] not in DIRECTIONS:
            raise ValueError(f"{path}: unknown direction {row['direction']!r}")
        if row["unit"] != "GB/s":
            raise ValueError(f"{path}: bandwidth in {row['unit']!r}, expected GB/s")
        data[row["direction"]].setdefault(row["memory"], []).append(
            (int(row["bytes"]), float(row["rate"]), row["check"]))
    for direction in DIRECTIONS:
        for points in data[direction].values():
            points.sort()
    return data


def read_breakeven(rows, path):
    """{"H2D": {"points": [(bytes, us, model_us)], "model": text}, "D2H": {...}}; None
    when the CSV has no breakeven rows."""
    chosen = rows_of(rows, path, "breakeven", BREAKEVEN_COLUMNS)
    if not chosen:
        return None
    data = {direction: {"points": [], "model": ""} for direction in DIRECTIONS}
    for row in chosen:
        entry = data[row["direction"]]
        model_us = float(row["model_us"]) if row["model_us"] else None
        entry["points"].append((int(row["bytes"]), float(row["median_ms"]) * 1e3, model_us))
        entry["model"] = row["model"]
    for entry in data.values():
        entry["points"].sort()
    return data


def size_label(value, _position=None):
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def plot(bandwidth, breakeven, out):
    plt = plot_frame.pyplot()
    from matplotlib.ticker import FuncFormatter

    panels = 3 if breakeven else 2
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.8))
    for ax, direction in zip(axes, DIRECTIONS):
        for memory, points in bandwidth[direction].items():
            style = STYLES.get(memory, {"marker": "x"})
            xs = [p[0] for p in points]
            ax.plot(xs, [p[1] for p in points], label=memory, markersize=4, **style)
            failed = [p for p in points if p[2] != "PASS"]
            if failed:
                ax.scatter([p[0] for p in failed], [p[1] for p in failed], s=80, facecolors="none",
                           edgecolors="red", zorder=5, label=f"{memory}: check failed")
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_formatter(FuncFormatter(size_label))
        ax.tick_params(axis="x", labelrotation=45)
        ax.set_xlabel("bytes per copy")
        ax.set_ylabel("GB/s (event-timed median)")
        ax.set_title(f"{direction}: bandwidth by host memory kind")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    if breakeven:
        ax = axes[2]
        colors = {"H2D": "tab:blue", "D2H": "tab:green"}
        for direction in DIRECTIONS:
            entry = breakeven[direction]
            if not entry["points"]:
                continue
            kb = [p[0] / 1024 for p in entry["points"]]
            ax.plot(kb, [p[1] for p in entry["points"]], "o", color=colors[direction],
                    label=f"{direction} measured")
            model = [(x, p[2]) for x, p in zip(kb, entry["points"]) if p[2] is not None]
            if model:
                # A step is drawn as two pieces, the flat part and the rising line, with
                # nothing joining them: the model says nothing about the sizes in between.
                pieces = [model]
                if entry["model"].startswith("step"):
                    flat = next((i for i, m in enumerate(model) if m[1] != model[0][1]), len(model))
                    pieces = [model[:flat], model[flat:]]
                for number, piece in enumerate([q for q in pieces if q]):
                    ax.plot([m[0] for m in piece], [m[1] for m in piece], "-",
                            color=colors[direction],
                            label=f"{direction} {entry['model']}" if number == 0 else None)
        ax.set_xlabel("KB per copy (pinned memory, back-to-back cudaMemcpyAsync)")
        ax.set_ylabel("us per copy")
        ax.set_title("small-copy overhead: the break-even sweep")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=7)
    fig.suptitle(f"Lesson 12, pinned memory: {bandwidth['gpu']}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("matplotlib is not installed")
        return plot_frame.SKIP
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        path = folder / "12_pinned_memory_sweep.csv"
        # Synthetic, from the models themselves: never committed, never shown as data. The
        # columns are those the harness writes (the union of every sweep's parameters).
        header = ("lesson,gpu,sweep,memory,api,page_locked,direction,bytes,in_flight,until,"
                  "access,call,copies,model_us,model,variant,median_ms,rate,unit,of_reference,"
                  "of_roof,vs_baseline,check\n")
        step = "step: 2.00 us flat up to 36 KB; from 40 KB on 1.20 us + bytes / 40.00 GB/s"
        with open(path, "w", encoding="utf-8") as out:
            out.write(header)
            out.write("12_pinned_memory,Test GPU,reference,,,,,,,,,,,,,H2D pinned (reference),"
                      "4.8,55.9,GB/s,1.0000,,,ref\n")
            out.write("12_pinned_memory,Test GPU,allocation,pinned,cudaMallocHost,yes,,,,,,,,,,"
                      "\"pinned (cudaMallocHost), page-locked\",90.0,2.9,GB/s,0.05,,0.4,-\n")
            for direction in DIRECTIONS:
                for memory, peak in (("pageable", 10.0), ("pinned", 50.0)):
                    for power in range(12, 21):
                        size = 1 << power
                        ms = (2.5 + size / (peak * 1e3)) / 1e3
                        gbps = size / ms / 1e6
                        out.write(f"12_pinned_memory,Test GPU,bandwidth,{memory},,,{direction},"
                                  f"{size},,,,,,,,{direction} {memory} {size},{ms:.6f},"
                                  f"{gbps:.3f},GB/s,{gbps / 55.9:.4f},,,PASS\n")
                for k in range(1, 17):
                    size = 4096 * k
                    us = 2.0 if size <= 36864 else 1.2 + size / 4e4
                    out.write(f"12_pinned_memory,Test GPU,breakeven,,,,{direction},{size},,,,,"
                              f"200,{us:.4f},\"{step}\",{direction} {k * 4} KB,{us / 1e3:.6f},"
                              f"{size / us / 1e3:.3f},GB/s,0.01,,,PASS\n")
        rows = read_rows(path)
        bandwidth = read_bandwidth(rows, path)
        assert bandwidth["gpu"] == "Test GPU"
        assert len(bandwidth["H2D"]["pinned"]) == 9 and bandwidth["H2D"]["pinned"][0][0] == 4096
        assert "allocation" not in str(bandwidth)
        breakeven = read_breakeven(rows, path)
        assert len(breakeven["H2D"]["points"]) == 16
        assert breakeven["D2H"]["model"] == step
        first = breakeven["D2H"]["points"][0]
        assert first[0] == 4096 and abs(first[1] - 2.0) < 1e-9 and abs(first[2] - 2.0) < 1e-9
        # A CSV of another lesson (no `sweep` column) is refused with a clear message.
        other = folder / "other.csv"
        other.write_text("lesson,gpu,direction,memory,bytes,gbps,check\nx,y,H2D,p,1,1,PASS\n",
                         encoding="utf-8")
        try:
            read_rows(other)
            raise AssertionError("a CSV without the harness's columns was accepted")
        except ValueError as error:
            assert "missing columns" in str(error)
        out = folder / "plot.png"
        plot(bandwidth, breakeven, out)
        assert out.stat().st_size > 1000, "no picture written"
    print("self-test passed")
    return 0


def main():
    return plot_frame.one_csv_main(__doc__, self_test, plot_csv,
                                   "FILE_sweep.csv of 12_pinned_memory --csv FILE.csv")


def plot_csv(path, out):
    rows = read_rows(path)
    bandwidth = read_bandwidth(rows, path)
    if not bandwidth["H2D"] and not bandwidth["D2H"]:
        sys.exit(f"{path}: no bandwidth rows (was the run limited with --part?)")
    plot(bandwidth, read_breakeven(rows, path), out)


if __name__ == "__main__":
    sys.exit(main())
