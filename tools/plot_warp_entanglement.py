#!/usr/bin/env python3
"""Plot lesson 08's entanglement report (over-waiting and wait cycles per variant) from its sweep CSV.

    tools/plot_warp_entanglement.py SWEEP_CSV [-o OUT.png]
    tools/plot_warp_entanglement.py --self-test

`08_warp_entanglement --csv FILE` writes the entanglement report to FILE with `_sweep`
before `.csv` (08_warp_entanglement_sweep.csv): one row per instrumented variant (sweep
"entanglement") with, among others, the columns

    variant, commit_mode, paths, control, model_commits_per_round,
    measured_commits_per_round, model_lanes_over_waiting, next_batch_landed_fraction,
    mean_wait_cycles, over_waiting_observed, check

and the yardsticks as rows whose sweep is "reference". The picture has two panels, one bar
per variant in the CSV's order: the fraction of `wait_prior(1)` calls after which the
lane's *next* batch had already landed (the evidence of over-waiting; each variant's
control is named under its bar), and the mean clock64() cycles of one wait. Bars of the
variants whose commit runs inside the diverged branch are red, their controls blue, the
converged baseline grey; each bar carries the measured commits per warp and round, and the
model's count of over-waiting lanes. A failed check is marked. The PNG goes next to the CSV
(same name, .png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

REQUIRED = ["gpu", "sweep", "commit_mode", "paths", "control", "measured_commits_per_round",
            "model_lanes_over_waiting", "next_batch_landed_fraction", "mean_wait_cycles",
            "over_waiting_observed", "variant", "check"]
COLOURS = {"converged": "#999999", "diverged": "#cc3311", "control": "#0077bb"}


def kind_of(row):
    """converged (the baseline), diverged (commit inside the branch) or control (commit after
    the branch, with or without __syncwarp)."""
    if row["commit_mode"] == "converged":
        return "converged"
    return "diverged" if row["commit_mode"] == "diverged" else "control"


def read_sweep(path):
    """The sweep CSV as a dict: "gpu" and "variants", a list in the CSV's order of dicts with
    name, kind, control, commits (measured, per warp and round), lanes_w (the model's
    over-waiting lanes, text: "0-31" when not determined), landed, cycles, observed, check."""
    with open(path, newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    if not rows:
        raise ValueError(f"{path}: no rows")
    missing = [column for column in REQUIRED if column not in rows[0]]
    if missing:
        raise ValueError(f"{path}: missing columns {missing}")
    data = {"gpu": rows[0]["gpu"], "variants": []}
    for row in rows:
        if row["sweep"] == "reference":
            continue
        if row["sweep"] != "entanglement":
            raise ValueError(f"{path}: unknown sweep {row['sweep']!r}")
        data["variants"].append({
            "name": row["variant"], "kind": kind_of(row), "control": row["control"],
            "commits": float(row["measured_commits_per_round"]),
            "lanes_w": row["model_lanes_over_waiting"],
            "landed": float(row["next_batch_landed_fraction"]),
            "cycles": float(row["mean_wait_cycles"]),
            "observed": row["over_waiting_observed"], "check": row["check"]})
    if not data["variants"]:
        raise ValueError(f"{path}: no entanglement rows")
    return data


def plot(data, out_path):
    plt = plot_frame.pyplot()

    variants = data["variants"]
    xs = list(range(len(variants)))
    colours = [COLOURS[v["kind"]] for v in variants]
    labels = [v["name"] + (f"\nvs {v['control']}" if v["control"] else "\n(baseline)")
              for v in variants]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.8))
    panels = [
        (left, "landed", "waits after which the lane's next batch had landed",
         "Over-waiting: the next batch was already there"),
        (right, "cycles", "mean clock64() cycles of one wait_prior(1)",
         "What one wait costs"),
    ]
    for axis, key, ylabel, title in panels:
        values = [v[key] for v in variants]
        bars = axis.bar(xs, values, color=colours)
        top = max(values) or 1.0
        for bar, v in zip(bars, variants):
            note = (f"{v['commits']:g} commit{'' if v['commits'] == 1 else 's'}\n"
                    f"W lanes {v['lanes_w']}")
            if v["check"] != "PASS":
                note += "\ncheck FAILED"
            axis.text(bar.get_x() + bar.get_width() / 2, bar.get_height() + 0.02 * top, note,
                      ha="center", va="bottom", fontsize=7,
                      color="red" if v["check"] != "PASS" else "black")
        axis.set_xticks(xs)
        axis.set_xticklabels(labels, fontsize=7)
        axis.set_ylabel(ylabel, fontsize=9)
        axis.set_ylim(0, top * 1.3)
        axis.set_title(title, fontsize=10)
        axis.grid(True, axis="y", alpha=0.3)
    left.set_ylim(0, 1.3)
    handles = [plt.Rectangle((0, 0), 1, 1, color=COLOURS[k]) for k in COLOURS]
    right.legend(handles, ["converged (baseline)", "commit inside the diverged branch",
                          "control: commit after the branch"], loc="upper left", fontsize=7)
    fig.suptitle(f"Lesson 08 on {data['gpu']}: one instrumented launch per variant "
                 f"(commits: measured per warp and round; W lanes: the model's over-waiting "
                 f"lanes)", fontsize=10)
    fig.tight_layout()
    fig.savefig(out_path, dpi=120)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("skipped: matplotlib is not installed")
        return plot_frame.SKIP
    header = ["lesson", "gpu", "sweep", "commit_mode", "paths", "model_commits_per_round",
              "measured_commits_per_round", "model_lanes_over_waiting",
              "next_batch_landed_fraction", "mean_wait_cycles", "over_waiting_observed",
              "control", "variant", "of_roof", "check"]
    # Synthetic values, only to exercise the parser and the plot; never committed.
    rows = [["08", "Test GPU", "reference", "", "", "", "", "", "", "", "", "", "SM copy roof",
             "1.0", "ref"],
            ["08", "Test GPU", "entanglement", "converged", "1", "1", "1.000", "0", "0.0010",
             "30.0", "baseline", "", "converged", "0.9", "PASS"],
            ["08", "Test GPU", "entanglement", "diverged", "4", "4", "4.000", "24", "0.9990",
             "700.0", "yes", "syncwarp-4", "diverged-4", "0.6", "PASS"],
            ["08", "Test GPU", "entanglement", "diverged+syncwarp", "4", "1", "1.000", "0",
             "0.2000", "31.0", "no", "converged", "syncwarp-4", "0.7", "FAIL"],
            ["08", "Test GPU", "entanglement", "diverged, no syncwarp", "32", "1-32", "1.000",
             "0-31", "0.9000", "28.0", "no", "syncwarp-32", "no-syncwarp-32", "0.4", "PASS"]]
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "sweep.csv"
        with open(path, "w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle)
            writer.writerow(header)
            writer.writerows(rows)
        data = read_sweep(path)
        variants = data["variants"]
        checks = [
            (data["gpu"], "Test GPU"),
            ([v["name"] for v in variants],
             ["converged", "diverged-4", "syncwarp-4", "no-syncwarp-32"]),
            ([v["kind"] for v in variants], ["converged", "diverged", "control", "control"]),
            (variants[1]["cycles"], 700.0),
            (variants[1]["control"], "syncwarp-4"),
            (variants[3]["lanes_w"], "0-31"),
            (variants[2]["check"], "FAIL"),
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
                                   "the sweep CSV (08_warp_entanglement_sweep.csv)")


if __name__ == "__main__":
    sys.exit(main())
