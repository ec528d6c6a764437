#!/usr/bin/env python3
"""Plot lesson 12's bandwidth sweep and break-even fit from the CSVs its executable writes.

    tools/plot_pinned_memory.py SWEEP_CSV [--breakeven CSV] [-o OUT.png]
    tools/plot_pinned_memory.py --self-test

`12_pinned_memory --csv FILE` writes FILE_sweep.csv (every host memory kind, H2D and
D2H, 4 KB up to --size) and FILE_breakeven.csv (microseconds per copy from 4 to 64 KB,
with the least-squares fit). The picture has three panels: H2D and D2H bandwidth against
the copy size (log scale), one line per kind of host memory, and the break-even sweep
with its fitted lines t = overhead + bytes / bandwidth. The break-even CSV is found next
to the sweep CSV unless --breakeven names it; without one the picture has two panels.
The PNG goes next to the sweep CSV (same name, .png) unless -o says otherwise.

--self-test plots small synthetic CSVs in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import argparse
import csv
import pathlib
import sys
import tempfile

SWEEP_COLUMNS = ["gpu", "direction", "memory", "bytes", "gbps", "check"]
BREAKEVEN_COLUMNS = ["gpu", "direction", "bytes", "us_per_copy", "fit_overhead_us", "fit_gbps"]
DIRECTIONS = ["H2D", "D2H"]
# The kinds in the order the executable prints them; pageable stands out, the pinned
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


def read_rows(path, required):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in required if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    return rows


def read_sweep(path):
    """{"gpu": name, "H2D": {memory: [(bytes, gbps, check)]}, "D2H": {...}}, sorted by size."""
    rows = read_rows(path, SWEEP_COLUMNS)
    data = {"gpu": rows[0]["gpu"], "H2D": {}, "D2H": {}}
    for row in rows:
        if row["direction"] not in DIRECTIONS:
            raise ValueError(f"{path}: unknown direction {row['direction']!r}")
        data[row["direction"]].setdefault(row["memory"], []).append(
            (int(row["bytes"]), float(row["gbps"]), row["check"]))
    for direction in DIRECTIONS:
        for points in data[direction].values():
            points.sort()
    return data


def read_breakeven(path):
    """{"H2D": {"points": [(bytes, us)], "fit": (overhead_us, gbps) or None}, "D2H": {...}}."""
    rows = read_rows(path, BREAKEVEN_COLUMNS)
    data = {direction: {"points": [], "fit": None} for direction in DIRECTIONS}
    for row in rows:
        entry = data[row["direction"]]
        entry["points"].append((int(row["bytes"]), float(row["us_per_copy"])))
        if row["fit_overhead_us"] and row["fit_gbps"]:
            entry["fit"] = (float(row["fit_overhead_us"]), float(row["fit_gbps"]))
    for entry in data.values():
        entry["points"].sort()
    return data


def size_label(value, _position=None):
    for unit, scale in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if value >= scale:
            return f"{value / scale:g} {unit}"
    return f"{value:g} B"


def plot(sweep, breakeven, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import FuncFormatter

    panels = 3 if breakeven else 2
    fig, axes = plt.subplots(1, panels, figsize=(6 * panels, 4.8))
    for ax, direction in zip(axes, DIRECTIONS):
        for memory, points in sweep[direction].items():
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
            xs = [p[0] for p in entry["points"]]
            ax.plot([x / 1024 for x in xs], [p[1] for p in entry["points"]], "o",
                    color=colors[direction], label=f"{direction} measured")
            if entry["fit"]:
                overhead, gbps = entry["fit"]
                line = [overhead + x / (gbps * 1e3) for x in xs]
                ax.plot([x / 1024 for x in xs], line, "-", color=colors[direction],
                        label=f"{direction} fit: {overhead:.2f} us + bytes / {gbps:.1f} GB/s")
        ax.set_xlabel("KB per copy (pinned memory, back-to-back cudaMemcpyAsync)")
        ax.set_ylabel("us per copy")
        ax.set_title("small-copy overhead: the break-even sweep")
        ax.set_ylim(bottom=0)
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize=8)
    fig.suptitle(f"Lesson 12, pinned memory: {sweep['gpu']}")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def self_test():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        folder = pathlib.Path(folder)
        sweep_path = folder / "12_pinned_memory_sweep.csv"
        breakeven_path = folder / "12_pinned_memory_breakeven.csv"
        # Synthetic, from the overhead model itself: never committed, never shown as data.
        with open(sweep_path, "w", encoding="utf-8") as out:
            out.write("lesson,gpu,direction,memory,bytes,median_ms,gbps,check\n")
            for direction in DIRECTIONS:
                for memory, peak in (("pageable", 10.0), ("pinned", 50.0)):
                    for power in range(12, 21):
                        size = 1 << power
                        ms = (2.5 + size / (peak * 1e3)) / 1e3
                        out.write(f"12_pinned_memory,Test GPU,{direction},{memory},{size},"
                                  f"{ms:.6f},{size / ms / 1e6:.3f},PASS\n")
        with open(breakeven_path, "w", encoding="utf-8") as out:
            out.write("lesson,gpu,direction,bytes,us_per_copy,fit_overhead_us,fit_gbps,fit_r2\n")
            for direction in DIRECTIONS:
                for k in range(1, 17):
                    size = 4096 * k
                    out.write(f"12_pinned_memory,Test GPU,{direction},{size},"
                              f"{2.5 + size / 5e4:.4f},2.5,50.0,1.0\n")
        sweep = read_sweep(sweep_path)
        assert sweep["gpu"] == "Test GPU"
        assert len(sweep["H2D"]["pinned"]) == 9 and sweep["H2D"]["pinned"][0][0] == 4096
        breakeven = read_breakeven(breakeven_path)
        assert breakeven["D2H"]["fit"] == (2.5, 50.0)
        assert len(breakeven["H2D"]["points"]) == 16
        out = folder / "plot.png"
        plot(sweep, breakeven, out)
        assert out.stat().st_size > 1000, "no picture written"
    print("self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("sweep_csv", nargs="?")
    parser.add_argument("--breakeven", help="the break-even CSV (default: next to the sweep CSV)")
    parser.add_argument("-o", "--output", help="the PNG to write (default: next to the sweep CSV)")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.sweep_csv:
        parser.error("SWEEP_CSV is required (or --self-test)")
    sweep_path = pathlib.Path(args.sweep_csv)
    breakeven_path = pathlib.Path(args.breakeven) if args.breakeven else pathlib.Path(
        str(sweep_path).replace("_sweep.csv", "_breakeven.csv"))
    breakeven = None
    if breakeven_path != sweep_path and breakeven_path.exists():
        breakeven = read_breakeven(breakeven_path)
    elif args.breakeven:
        sys.exit(f"{breakeven_path}: not found")
    out = pathlib.Path(args.output) if args.output else sweep_path.with_suffix(".png")
    try:
        plot(read_sweep(sweep_path), breakeven, out)
    except ImportError:
        print("matplotlib is not installed")
        return 77
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
