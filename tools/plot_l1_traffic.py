#!/usr/bin/env python3
"""Plot lesson 09's L1 traffic: which cp.async forms go through L1 and which bypass it.

    tools/plot_l1_traffic.py CSV [CSV ...] -o OUT.png [--title TEXT]
    tools/plot_l1_traffic.py --self-test

The CSVs are those tools/ncu_compare.py writes (`--csv`), one metric each, with the
columns run,metric,value: the L09.profile.l1_access_ca4_vs_cg16 and
L09.profile.l2_reads_ca4_vs_cg16 tests write 09_l1_access.csv and 09_l2_reads.csv in the
lesson's build folder, from Nsight Compute's counters
l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_cache_access.sum (sectors of LDGSTS that
went through the L1 cache) and lts__t_sectors_srcunit_tex_op_read.sum (sectors read from
L2). The picture has one group of bars per run (ca4, cg16), one bar per metric, in sectors.

--self-test plots a small synthetic pair of CSVs in a temporary folder and checks the
parsing and that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is
missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

REQUIRED = ["run", "metric", "value"]
PREFIX = "l1tex__t_sectors_pipe_lsu_mem_global_op_ldgsts_"


def short_metric(metric):
    """'l1tex__..._ldgsts_cache_access.sum' -> 'cache_access'."""
    name = metric[len(PREFIX):] if metric.startswith(PREFIX) else metric
    return name[:-4] if name.endswith(".sum") else name


def read_csvs(paths):
    """{"runs": [run names in first-seen order], "metrics": [short metric names],
    "values": {(run, metric): value}} from ncu_compare.py CSVs."""
    runs, metrics, values = [], [], {}
    for path in paths:
        with open(path, newline="", encoding="utf-8") as handle:
            rows = list(csv.DictReader(handle))
        if not rows:
            raise ValueError(f"{path}: no rows")
        missing = [column for column in REQUIRED if column not in rows[0]]
        if missing:
            raise ValueError(f"{path}: missing columns {missing}")
        for row in rows:
            run, metric = row["run"], short_metric(row["metric"])
            if run not in runs:
                runs.append(run)
            if metric not in metrics:
                metrics.append(metric)
            values[(run, metric)] = float(row["value"])
    return {"runs": runs, "metrics": metrics, "values": values}


# What each counter means, for the legend (others keep their own name).
LABELS = {
    "cache_access": "LDGSTS sectors through the L1 cache",
    "lts__t_sectors_srcunit_tex_op_read": "sectors read from L2",
}


def plot(data, out, title):
    plt = plot_frame.pyplot()

    runs, metrics = data["runs"], data["metrics"]
    width = 0.8 / max(1, len(metrics))
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    for m, metric in enumerate(metrics):
        xs = [r + (m - (len(metrics) - 1) / 2) * width for r in range(len(runs))]
        ys = [data["values"].get((run, metric), 0.0) for run in runs]
        bars = ax.bar(xs, ys, width, label=LABELS.get(metric, metric))
        for bar, y in zip(bars, ys):
            ax.annotate(f"{y:,.0f}", (bar.get_x() + bar.get_width() / 2, y), ha="center",
                        va="bottom", fontsize=8)
    ax.set_xticks(range(len(runs)))
    ax.set_xticklabels(runs)
    ax.set_ylabel("32-byte sectors, one launch (ncu)")
    ax.set_title(title)
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("matplotlib is not installed: skipped")
        return plot_frame.SKIP
    with tempfile.TemporaryDirectory() as folder:
        base = pathlib.Path(folder)
        access, bypass = base / "09_l1_access.csv", base / "09_l2_reads.csv"
        access.write_text("run,metric,value\nca4,%scache_access.sum,524288\n"
                          "cg16,%scache_access.sum,0\n" % (PREFIX, PREFIX), encoding="utf-8")
        bypass.write_text("run,metric,value\nca4,lts__t_sectors_srcunit_tex_op_read.sum,524800\n"
                          "cg16,lts__t_sectors_srcunit_tex_op_read.sum,524544\n",
                          encoding="utf-8")
        data = read_csvs([access, bypass])
        assert data["runs"] == ["ca4", "cg16"], data
        assert data["metrics"] == ["cache_access", "lts__t_sectors_srcunit_tex_op_read"], data
        assert data["values"][("ca4", "cache_access")] == 524288
        assert data["values"][("cg16", "cache_access")] == 0
        assert data["values"][("cg16", "lts__t_sectors_srcunit_tex_op_read")] == 524544
        bad = base / "bad.csv"
        bad.write_text("run,value\nca4,1\n", encoding="utf-8")
        try:
            read_csvs([bad])
        except ValueError:
            pass
        else:
            raise AssertionError("a CSV without a metric column was accepted")
        out = base / "l1.png"
        plot(data, out, "self-test")
        assert out.exists() and out.stat().st_size > 1000, "no PNG written"
    print("plot_l1_traffic self-test: OK")
    return 0


def main():
    return plot_frame.main(__doc__, self_test, make, "the PNG to write", add_arguments)


def add_arguments(parser):
    parser.add_argument("csv", nargs="*", help="CSVs written by tools/ncu_compare.py --csv")
    parser.add_argument("--title", default="cp.async through L1 (ca4) and around it (cg16)")


def make(args, parser):
    if not args.csv or not args.output:
        parser.error("give one or more CSVs and -o OUT.png")
    try:
        data = read_csvs(args.csv)
    except (OSError, ValueError) as error:
        print(f"plot_l1_traffic.py: {error}", file=sys.stderr)
        return 2
    plot(data, args.output, args.title)
    return args.output


if __name__ == "__main__":
    sys.exit(main())
