#!/usr/bin/env python3
"""Plot lesson 11's swizzle modes: shared-memory bank conflicts and transpose speed.

    tools/plot_swizzle_conflicts.py RESULTS_CSV CONFLICTS_CSV [-o OUT.png]
    tools/plot_swizzle_conflicts.py --self-test

RESULTS_CSV is what `11_tma_tensor_copy --csv FILE` writes (the harness's table format:
lesson,gpu,variant,median_ms,rate,unit,of_reference,reference,vs_baseline,baseline,check,
of_roof,roof); the rows `transpose-none`, `transpose-32B`, `transpose-64B` and
`transpose-128B` give the speed of each swizzle mode, as GB/s and as a fraction of the SM
copy roof measured in the same run. CONFLICTS_CSV is what `tools/ncu_compare.py --csv`
writes for the test L11.profile.swizzle_bank_conflicts (rows run,metric,value with the runs
none, swz32, swz64, swz128): the shared-memory load bank conflicts Nsight Compute counted in
each transpose kernel.

The picture has two bar panels over the four modes: bank conflicts (left) and GB/s with
the fraction of the SM copy roof written on each bar (right). The PNG goes next to
RESULTS_CSV (same name with _swizzle.png) unless -o says otherwise.

--self-test plots small synthetic CSVs in a temporary folder and checks the parsing and that
a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

MODES = ["none", "32B", "64B", "128B"]
RUN_OF_MODE = {"none": "none", "32B": "swz32", "64B": "swz64", "128B": "swz128"}


def number(text):
    """A numeric column's value, or None when it is empty."""
    return float(text) if text not in (None, "") else None


def read_results(path):
    """{"gpu": name, "unit": unit, "modes": {mode: (rate, of_roof or None, check)}} from the
    lesson's table CSV; a mode without a row is left out."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [c for c in ("gpu", "variant", "rate", "unit", "of_roof", "check") if c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    modes = {}
    for row in rows:
        for mode in MODES:
            if row["variant"] == f"transpose-{mode}":
                modes[mode] = (float(row["rate"]), number(row["of_roof"]), row["check"])
    if not modes:
        raise ValueError(f"{path}: no transpose-<swizzle> rows")
    return {"gpu": rows[0]["gpu"], "unit": rows[0]["unit"], "modes": modes}


def read_conflicts(path):
    """{mode: bank conflicts} from ncu_compare.py's CSV (run,metric,value)."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    missing = [c for c in ("run", "metric", "value") if not rows or c not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    by_run = {row["run"]: float(row["value"]) for row in rows}
    return {mode: by_run[run] for mode, run in RUN_OF_MODE.items() if run in by_run}


def plot(results, conflicts, out_path):
    plt = plot_frame.pyplot()

    fig, (left, right) = plt.subplots(1, 2, figsize=(10, 4))
    modes = [m for m in MODES if m in conflicts]
    left.bar(modes, [conflicts[m] for m in modes], color="tab:red")
    for i, m in enumerate(modes):
        left.annotate(f"{conflicts[m]:.0f}", (i, conflicts[m]), ha="center", va="bottom")
    left.set_title("shared-memory load bank conflicts (ncu)")
    left.set_xlabel("swizzle")
    left.set_ylabel("conflicts per profiled launch")

    modes = [m for m in MODES if m in results["modes"]]
    rates = [results["modes"][m][0] for m in modes]
    right.bar(modes, rates, color="tab:blue")
    for i, m in enumerate(modes):
        rate, of_roof, check = results["modes"][m]
        label = f"{of_roof:.2f} x roof" if of_roof is not None else ""
        if check != "PASS":
            label += f" ({check})"
        right.annotate(label, (i, rate), ha="center", va="bottom")
    right.set_title("transpose speed")
    right.set_xlabel("swizzle")
    right.set_ylabel(results["unit"])
    fig.suptitle(f"Lesson 11: TMA swizzle modes on {results['gpu']}")
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("skipped: matplotlib is not installed")
        return plot_frame.SKIP
    header = ["lesson", "gpu", "variant", "median_ms", "rate", "unit", "of_reference",
              "reference", "vs_baseline", "baseline", "check", "of_roof", "roof"]
    # Synthetic values, only to exercise the parser and the plot; never committed.
    rows = [["11_tma_tensor_copy", "Test GPU", "D2D cudaMemcpy", "1.0", "3000.0", "GB/s",
             "1.0000", "D2D cudaMemcpy", "", "tensor-copy", "ref", "1.0500", "SM copy roof"],
            ["11_tma_tensor_copy", "Test GPU", "transpose-64B", "1.0", "2400.0", "GB/s",
             "0.8", "D2D cudaMemcpy", "1.0", "tensor-copy", "PASS", "0.8400", "SM copy roof"],
            ["11_tma_tensor_copy", "Test GPU", "transpose-none", "1.0", "1500.0", "GB/s",
             "0.5", "D2D cudaMemcpy", "1.0", "tensor-copy", "PASS", "0.5200", "SM copy roof"],
            ["11_tma_tensor_copy", "Test GPU", "transpose-128B", "1.0", "2700.0", "GB/s",
             "0.9", "D2D cudaMemcpy", "1.0", "tensor-copy", "FAIL", "", "SM copy roof"]]
    conflict_rows = [["none", "m", "12345"], ["swz64", "m", "0"], ["swz128", "m", "0"]]
    with tempfile.TemporaryDirectory() as folder:
        results_path = pathlib.Path(folder) / "11.csv"
        conflicts_path = pathlib.Path(folder) / "conflicts.csv"
        with open(results_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        with open(conflicts_path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(["run", "metric", "value"])
            writer.writerows(conflict_rows)
        results = read_results(results_path)
        conflicts = read_conflicts(conflicts_path)
        checks = [
            (results["gpu"], "Test GPU"),
            (results["unit"], "GB/s"),
            (results["modes"]["none"], (1500.0, 0.52, "PASS")),
            (results["modes"]["128B"], (2700.0, None, "FAIL")),
            ("32B" in results["modes"], False),
            (conflicts, {"none": 12345.0, "64B": 0.0, "128B": 0.0}),
        ]
        for got, want in checks:
            if got != want:
                print(f"self-test FAILED: got {got!r}, want {want!r}")
                return 1
        out = pathlib.Path(folder) / "plot.png"
        plot(results, conflicts, out)
        if not out.exists() or out.stat().st_size == 0:
            print("self-test FAILED: no PNG written")
            return 1
    print("self-test passed")
    return 0


def main():
    return plot_frame.main(__doc__, self_test, make, "PNG to write", add_arguments)


def add_arguments(parser):
    parser.add_argument("results", nargs="?", help="the lesson's --csv output")
    parser.add_argument("conflicts", nargs="?", help="ncu_compare.py --csv output")


def make(args, parser):
    if not args.results or not args.conflicts:
        parser.error("RESULTS_CSV and CONFLICTS_CSV are required")
    out = args.output or str(pathlib.Path(args.results).with_suffix("")) + "_swizzle.png"
    plot(read_results(args.results), read_conflicts(args.conflicts), out)
    return out


if __name__ == "__main__":
    sys.exit(main())
