#!/usr/bin/env python3
"""Plot lesson 13's measured overlaps from the CSVs its executable writes.

    tools/plot_streams_and_sync.py 13_streams_and_sync.csv [-o OUT.png]
    tools/plot_streams_and_sync.py --self-test

`13_streams_and_sync --csv FILE.csv` writes the harness's two CSVs: FILE.csv, the main
table (two operations in two streams of given kinds: each variant is
"<first>+<second> <work> (<model>)", work "kernel+kernel" or "copy+kernel"), and
FILE_sweep.csv beside it, whose "breakers" rows are two kernels with one operation between
their launches (columns `between` and `streams`). The rate column of both is the measured
overlap in percent: the time both operations ran at once, as a share of the shorter one's
own time (lesson 13's TODO 6 computes it); a row with no time did not
verify. The picture has one panel for each table, with dotted lines at the classification
thresholds (below 0.1 serialised, above 0.5 concurrent); bars whose check failed are
hatched. Either CSV may be named; the other is found beside it. The PNG goes next to the
main CSV (same name, .png) unless -o says otherwise.

--self-test parses small synthetic CSVs in a temporary folder and checks the result, then
plots them and checks that a PNG came out; it writes nothing else. Exit code 77 (after the
parsing checks) when matplotlib is missing.
"""
import csv
import pathlib
import re
import sys
import tempfile

import plot_frame

MAIN_REQUIRED = ["gpu", "variant", "median_ms", "rate", "unit", "check"]
SWEEP_REQUIRED = ["gpu", "sweep", "between", "streams", "variant", "median_ms", "rate", "unit",
                  "check"]
UNIT = "overlap %"
SETTING_RE = re.compile(r"^(?P<name>\S+) (?P<work>kernel\+kernel|copy\+kernel) \((?P<model>[^)]*)\)$")
SERIALISED_BELOW = 0.1
CONCURRENT_ABOVE = 0.5


def csv_paths(path):
    """(main CSV, sweep CSV) from either of the two names."""
    path = pathlib.Path(path)
    if path.name.endswith("_sweep.csv"):
        return path.with_name(path.name[: -len("_sweep.csv")] + ".csv"), path
    stem = path.name[:-4] if path.name.endswith(".csv") else path.name
    return path, path.with_name(stem + "_sweep.csv")


def read_rows(path, required):
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in required if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    for row in rows:
        if row["unit"] != UNIT:
            raise ValueError(f"{path}: unit {row['unit']!r}, expected {UNIT!r}")
    return rows


def overlap_of(row):
    """The overlap as a fraction, or None for a row that has no time (it did not verify)."""
    return float(row["rate"]) / 100 if float(row["median_ms"]) > 0 else None


def read_overlaps(path):
    """{"gpu", "settings": [(name, {work: (overlap, check)})], "breakers": [(label, overlap, check)]}.

    `path` is either CSV; the sweep CSV may be missing (no breaker was run).
    """
    main_path, sweep_path = csv_paths(path)
    rows = read_rows(main_path, MAIN_REQUIRED)
    data = {"gpu": rows[0]["gpu"], "settings": [], "breakers": []}
    settings = {}
    for row in rows:
        match = SETTING_RE.match(row["variant"])
        if not match:
            raise ValueError(f"{main_path}: not a setting: {row['variant']!r}")
        name = match["name"]
        if name not in settings:
            settings[name] = {}
            data["settings"].append((name, settings[name]))
        settings[name][match["work"]] = (overlap_of(row), row["check"])
    if sweep_path.exists():
        for row in read_rows(sweep_path, SWEEP_REQUIRED):
            if row["sweep"] == "breakers":
                label = f'{row["between"]} ({row["streams"]})'
                data["breakers"].append((label, overlap_of(row), row["check"]))
    return data


def annotate(axis, y, overlap):
    """The value at the end of its bar: a serialised pair's bar has no length to see."""
    axis.text(max(overlap, 0) + 0.02, y, f"{overlap:.2f}", va="center", fontsize=7)


def plot(data, out_path):
    plt = plot_frame.pyplot()

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
        axis.set_xlabel("overlap: time both ran at once / the shorter one's own time")
        axis.tick_params(axis="y", labelsize=8)
    fig.suptitle(f"Lesson 13: measured overlap on {data['gpu']}")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


SELF_TEST_MAIN_CSV = """\
lesson,gpu,variant,median_ms,rate,unit,of_reference,reference,vs_baseline,baseline,check,of_roof,roof
13_streams_and_sync,Test GPU,legacy+blocking kernel+kernel (serialises),10.002000,-0.040,overlap %,,reference,,baseline,PASS,,
13_streams_and_sync,Test GPU,legacy+blocking copy+kernel (serialises),9.899000,-0.043,overlap %,,reference,,baseline,PASS,,
13_streams_and_sync,Test GPU,non-blocking+non-blocking kernel+kernel (may overlap),5.005000,99.900,overlap %,,reference,,baseline,PASS,,
13_streams_and_sync,Test GPU,non-blocking+non-blocking copy+kernel (may overlap),0.000000,0.000,overlap %,,reference,,baseline,FAIL,,
"""

SELF_TEST_SWEEP_CSV = """\
lesson,gpu,sweep,between,streams,model,t1_ms,t2_ms,host_op_ms,observed,variant,median_ms,rate,unit,of_reference,of_roof,vs_baseline,check
13_streams_and_sync,Test GPU,breakers,nothing (the control),non-blocking,no implicit sync,5.000,5.000,0.000,,nothing (no implicit sync),5.005000,99.900,overlap %,,,,PASS
13_streams_and_sync,Test GPU,breakers,cudaDeviceSynchronize(),non-blocking,breaks,5.000,5.000,5.006,,cudaDeviceSynchronize (breaks),10.013000,-0.300,overlap %,,,,PASS
13_streams_and_sync,Test GPU,sync calls,,,,,,,"during a 5 ms spin: cudaErrorNotReady; after cudaStreamSynchronize: cudaSuccess","cudaStreamQuery, cudaStreamSynchronize",5.010000,0.000,overlap %,,,,PASS
"""


def self_test():
    with tempfile.TemporaryDirectory() as folder:
        csv_path = pathlib.Path(folder) / "13_streams_and_sync.csv"
        csv_path.write_text(SELF_TEST_MAIN_CSV, encoding="utf-8")
        sweep_path = pathlib.Path(folder) / "13_streams_and_sync_sweep.csv"
        sweep_path.write_text(SELF_TEST_SWEEP_CSV, encoding="utf-8")
        data = read_overlaps(csv_path)
        assert read_overlaps(sweep_path) == data, "either CSV names the pair"
        assert data["gpu"] == "Test GPU"
        assert [name for name, _ in data["settings"]] == ["legacy+blocking",
                                                          "non-blocking+non-blocking"]
        def same(got, expected):
            """(overlap, check) pairs, overlaps equal to rounding."""
            return got[1] == expected[1] and (
                got[0] is None and expected[0] is None
                or got[0] is not None and expected[0] is not None
                and abs(got[0] - expected[0]) < 1e-9)

        settings = data["settings"]
        assert same(settings[1][1]["copy+kernel"], (None, "FAIL"))
        assert same(settings[1][1]["kernel+kernel"], (0.999, "PASS"))
        assert same(settings[0][1]["copy+kernel"], (-0.00043, "PASS"))
        labels = [label for label, _, _ in data["breakers"]]
        assert labels == ["nothing (the control) (non-blocking)",
                          "cudaDeviceSynchronize() (non-blocking)"], labels
        assert same(data["breakers"][0][1:], (0.999, "PASS"))
        assert same(data["breakers"][1][1:], (-0.003, "PASS"))
        if not plot_frame.has_matplotlib():
            print("parsing checked; matplotlib is not installed: plot skipped")
            return plot_frame.SKIP
        out = csv_path.with_suffix(".png")
        plot(data, out)
        assert out.stat().st_size > 0
    print("self-test passed")
    return 0


def main():
    return plot_frame.one_csv_main(
        __doc__, self_test, lambda csv, out: plot(read_overlaps(csv), out),
        "a CSV of 13_streams_and_sync --csv (the main one or its _sweep)",
        default_output=lambda csv: csv_paths(csv)[0].with_suffix(".png"))


if __name__ == "__main__":
    sys.exit(main())
