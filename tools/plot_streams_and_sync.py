#!/usr/bin/env python3
"""Plot lesson 13's measured overlaps from the CSV its executable writes.

    tools/plot_streams_and_sync.py 13_streams_and_sync.csv [-o OUT.png]
    tools/plot_streams_and_sync.py --self-test

`13_streams_and_sync --csv FILE` writes two tables to FILE (column `table`): "settings",
two operations in two streams of given kinds (two kernels, and a host->device copy with a
kernel), and "breakers", two kernels with one operation between their launches. The
picture has one panel for each: the measured overlap, (t1 + t2 - t_pair) / min(t1, t2),
with dotted lines at the classification thresholds (below 0.1 serialised, above 0.5
concurrent). Bars whose check failed are hatched. The PNG goes next to the CSV (same name,
.png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import argparse
import csv
import pathlib
import sys
import tempfile

REQUIRED = ["gpu", "table", "name", "work", "between", "overlap", "measured", "model", "check"]
SERIALISED_BELOW = 0.1
CONCURRENT_ABOVE = 0.5


def read_overlaps(path):
    """{"gpu", "settings": [(name, {work: (overlap, check)})], "breakers": [(label, overlap, check)]}.

    Rows whose values did not verify have no overlap; they are kept with overlap None.
    """
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    data = {"gpu": rows[0]["gpu"], "settings": [], "breakers": []}
    settings = {}
    for row in rows:
        overlap = float(row["overlap"]) if row["overlap"] else None
        if row["table"] == "settings":
            if row["name"] not in settings:
                settings[row["name"]] = {}
                data["settings"].append((row["name"], settings[row["name"]]))
            settings[row["name"]][row["work"]] = (overlap, row["check"])
        elif row["table"] == "breakers":
            label = f'{row["between"]} ({row["first_stream"]})' if row.get("first_stream") else row["between"]
            data["breakers"].append((label, overlap, row["check"]))
        else:
            raise ValueError(f"{path}: unknown table {row['table']!r}")
    return data


def annotate(axis, y, overlap):
    """The value at the end of its bar: a serialised pair's bar has no length to see."""
    axis.text(max(overlap, 0) + 0.02, y, f"{overlap:.2f}", va="center", fontsize=7)


def plot(data, out_path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [key for key in ("settings", "breakers") if data[key]]
    if not panels:
        raise ValueError("nothing to plot")
    heights = [max(2.5, 0.42 * len(data[key]) + 1.2) for key in panels]
    fig, axes = plt.subplots(len(panels), 1, figsize=(9, sum(heights)),
                             gridspec_kw={"height_ratios": heights}, squeeze=False)
    works = [("kernel+kernel", "#4c72b0"), ("copy+kernel", "#dd8452")]
    for axis, key in zip(axes[:, 0], panels):
        if key == "settings":
            names = [name for name, _ in data["settings"]]
            for offset, (work, colour) in zip((-0.2, 0.2), works):
                bars = [(y + offset, by_work[work][0], by_work[work][1])
                        for y, (_, by_work) in enumerate(data["settings"])
                        if work in by_work and by_work[work][0] is not None]
                if not bars:
                    continue
                ys, overlaps, checks = zip(*bars)
                drawn = axis.barh(ys, overlaps, height=0.38, color=colour, label=work)
                for bar, y, overlap, check in zip(drawn, ys, overlaps, checks):
                    if check == "FAIL":
                        bar.set_hatch("//")
                    annotate(axis, y, overlap)
            axis.set_yticks(range(len(names)), names)
            axis.set_title("Two operations in two streams (first + second)")
            axis.legend(loc="best", fontsize=8)
        else:
            labels = [label for label, _, _ in data["breakers"]]
            for y, (_, overlap, check) in enumerate(data["breakers"]):
                if overlap is None:
                    continue
                broke = overlap < SERIALISED_BELOW
                axis.barh(y, overlap, height=0.6, color="#c44e52" if broke else "#55a868",
                          hatch="//" if check == "FAIL" else None)
                annotate(axis, y, overlap)
            axis.set_yticks(range(len(labels)), labels)
            axis.set_title("One operation between two kernels' launches (red: broke concurrency)")
        axis.invert_yaxis()
        axis.axvline(SERIALISED_BELOW, color="grey", linestyle=":", linewidth=1)
        axis.axvline(CONCURRENT_ABOVE, color="grey", linestyle=":", linewidth=1)
        axis.axvline(0, color="black", linewidth=0.8)
        axis.set_xlim(min(-0.1, axis.get_xlim()[0]), 1.2)
        axis.set_xlabel("overlap = (t1 + t2 - t_pair) / min(t1, t2)")
        axis.tick_params(axis="y", labelsize=8)
    fig.suptitle(f"Lesson 13: measured overlap on {data['gpu']}")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


SELF_TEST_CSV = """\
lesson,gpu,table,name,work,first_stream,second_stream,between,spin_ms,copy_bytes,t1_ms,t2_ms,pair_ms,overlap,measured,broke_concurrency,host_op_ms,model,check
13_streams_and_sync,Test GPU,settings,legacy+blocking,kernel+kernel,legacy,blocking,,5.000,,5.0,5.0,10.0,0.0,serialised,,,serialises,PASS
13_streams_and_sync,Test GPU,settings,legacy+blocking,copy+kernel,legacy,blocking,,5.000,1024,4.0,5.0,9.0,0.0,serialised,,,serialises,PASS
13_streams_and_sync,Test GPU,settings,non-blocking+non-blocking,kernel+kernel,non-blocking,non-blocking,,5.000,,5.0,5.0,5.0,1.0,concurrent,,,may overlap,PASS
13_streams_and_sync,Test GPU,settings,non-blocking+non-blocking,copy+kernel,non-blocking,non-blocking,,5.000,1024,,,,,-,,,may overlap,FAIL
13_streams_and_sync,Test GPU,breakers,nothing,kernel+kernel,non-blocking,non-blocking,nothing (the control),5.000,,5.0,5.0,5.0,1.0,concurrent,no,0.0,no implicit sync,PASS
13_streams_and_sync,Test GPU,breakers,cudaDeviceSynchronize,kernel+kernel,non-blocking,non-blocking,cudaDeviceSynchronize(),5.000,,5.0,5.0,10.0,0.0,serialised,yes,5.0,breaks,PASS
"""


def self_test():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("matplotlib is not installed: skipped")
        return 77
    with tempfile.TemporaryDirectory() as folder:
        csv_path = pathlib.Path(folder) / "13_streams_and_sync.csv"
        csv_path.write_text(SELF_TEST_CSV, encoding="utf-8")
        data = read_overlaps(csv_path)
        assert data["gpu"] == "Test GPU"
        assert [name for name, _ in data["settings"]] == ["legacy+blocking",
                                                          "non-blocking+non-blocking"]
        assert data["settings"][1][1]["copy+kernel"] == (None, "FAIL")
        assert data["settings"][1][1]["kernel+kernel"] == (1.0, "PASS")
        assert data["breakers"][1] == ("cudaDeviceSynchronize() (non-blocking)", 0.0, "PASS")
        out = csv_path.with_suffix(".png")
        plot(data, out)
        assert out.stat().st_size > 0
    print("self-test passed")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("csv", nargs="?", help="the CSV of 13_streams_and_sync --csv")
    parser.add_argument("-o", "--output", help="the PNG to write (default: next to the CSV)")
    parser.add_argument("--self-test", action="store_true", help="plot synthetic data and check")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    if not args.csv:
        parser.error("a CSV file is required (or --self-test)")
    data = read_overlaps(args.csv)
    out = pathlib.Path(args.output) if args.output else pathlib.Path(args.csv).with_suffix(".png")
    plot(data, out)
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
