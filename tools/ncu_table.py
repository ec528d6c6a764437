#!/usr/bin/env python3
"""Turns the CSVs that tools/ncu_compare.py writes (run,metric,value) into one Markdown table.

    ncu_table.py CSV... [--ratio NAME=METRIC/METRIC ...] [--title TEXT] [-o FILE]

Rows are the metrics (in the order the files list them), columns the runs (in the order
they first appear). Each --ratio adds a row NAME whose value is one metric divided by
another for each run (e.g. issued instructions per FFMA). Lesson 15's profile label writes
15_counters_*.csv; docs/results/<gpu>/15_counters.md is made from them by this script.

Exit codes: 0 written, 1 a file could not be read or a ratio's metric is missing,
2 usage error.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path


def read_rows(paths: list[Path]) -> tuple[list[str], list[str], dict[tuple[str, str], float]]:
    """The runs and metrics in order of appearance, and every value by (metric, run)."""
    runs: list[str] = []
    metrics: list[str] = []
    values: dict[tuple[str, str], float] = {}
    for path in paths:
        with path.open(newline="", encoding="utf-8") as handle:
            for row in csv.DictReader(handle):
                run, metric = row["run"], row["metric"]
                if run not in runs:
                    runs.append(run)
                if metric not in metrics:
                    metrics.append(metric)
                values[(metric, run)] = float(row["value"])
    return runs, metrics, values


def number(value: float) -> str:
    if value == 0:
        return "0"
    if abs(value) >= 1e6:
        return f"{value / 1e9:.3f} G" if abs(value) >= 1e9 else f"{value / 1e6:.2f} M"
    return f"{value:.3g}" if abs(value) < 100 else f"{value:,.0f}"


def table(paths: list[Path], ratios: list[tuple[str, str, str]], title: str) -> str:
    runs, metrics, values = read_rows(paths)
    lines = [f"# {title}", "", "| metric | " + " | ".join(runs) + " |",
             "|---|" + "---|" * len(runs)]
    for metric in metrics:
        cells = [number(values[(metric, r)]) if (metric, r) in values else "-" for r in runs]
        lines.append(f"| `{metric}` | " + " | ".join(cells) + " |")
    for name, top, bottom in ratios:
        cells = []
        for run in runs:
            if (top, run) not in values or (bottom, run) not in values:
                raise KeyError(f"ratio {name}: no {top} or {bottom} for run {run}")
            cells.append(f"{values[(top, run)] / values[(bottom, run)]:.3f}")
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def parse_ratio(text: str) -> tuple[str, str, str]:
    name, sep, rest = text.partition("=")
    top, slash, bottom = rest.partition("/")
    if not sep or not slash or not name or not top or not bottom:
        raise ValueError(f"--ratio wants NAME=METRIC/METRIC, got {text!r}")
    return name, top, bottom


def self_test() -> int:
    with tempfile.TemporaryDirectory() as tmp:
        a, b = Path(tmp) / "a.csv", Path(tmp) / "b.csv"
        a.write_text("run,metric,value\nx,inst,200\ny,inst,150\n", encoding="utf-8")
        b.write_text("run,metric,value\nx,ffma,100\ny,ffma,100\n", encoding="utf-8")
        text = table([a, b], [("per FFMA", "inst", "ffma")], "t")
        assert "| metric | x | y |" in text, text
        assert "| `inst` | 200 | 150 |" in text, text
        assert "| per FFMA | 2.000 | 1.500 |" in text, text
        try:
            table([a], [("r", "inst", "missing")], "t")
        except KeyError:
            pass
        else:
            raise AssertionError("a missing metric must fail")
    print("ncu_table.py self-test passed")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", nargs="*", type=Path)
    parser.add_argument("--ratio", action="append", default=[], metavar="NAME=METRIC/METRIC")
    parser.add_argument("--title", default="Counters (Nsight Compute)")
    parser.add_argument("-o", "--output", type=Path)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    if not args.csv:
        parser.error("give at least one CSV")
    try:
        ratios = [parse_ratio(r) for r in args.ratio]
    except ValueError as error:
        parser.error(str(error))
    try:
        text = table(args.csv, ratios, args.title)
    except (OSError, KeyError, ValueError) as error:
        print(f"ncu_table.py: {error}", file=sys.stderr)
        return 1
    if args.output:
        args.output.write_text(text, encoding="utf-8")
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
