#!/usr/bin/env python3
"""Plot lesson 15's square-size sweep: TFLOP/s of every rung of the SGEMM ladder and cuBLAS.

    tools/plot_sgemm_ladder.py SWEEP_CSV [-o OUT.png]
    tools/plot_sgemm_ladder.py --self-test

`15_capstone --sweep --csv FILE` writes its sweeps to FILE with `_sweep` before `.csv`, in
the harness's sweep format:

    lesson,gpu,sweep,<parameters>,variant,median_ms,rate,unit,of_reference,of_roof,vs_baseline,check

The rows of the sweep named "square" carry the parameter `size` (m = n = k) and one row per
variant, named "<variant>, <size>": cuBLAS (the reference, measured at each size in the same
run) and the rungs. The
picture has one line per variant, TFLOP/s against the size; cuBLAS is dashed. The PNG goes
next to the CSV (same name, .png) unless -o says otherwise.

--self-test plots a small synthetic CSV in a temporary folder and checks the parsing and
that a PNG came out; it writes nothing else. Exit code 77 when matplotlib is missing.
"""
import csv
import pathlib
import sys
import tempfile

import plot_frame

REQUIRED = ["gpu", "sweep", "size", "variant", "rate", "unit", "check"]
REFERENCE = "cuBLAS"


def read_sweep(path):
    """{"gpu": name, "unit": unit, "lines": {variant: [(size, rate), ...] sorted by size}}."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in REQUIRED if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"{path}: missing columns {', '.join(missing)}")
        gpu, unit, lines = None, None, {}
        for row in reader:
            if row["sweep"] != "square" or row["size"] in ("", None):
                continue
            if row["check"] not in ("PASS", "ref", "-"):
                raise ValueError(f"{path}: {row['variant']} at size {row['size']} did not pass "
                                 f"its check ({row['check']}): refusing to plot it")
            gpu = gpu or row["gpu"]
            unit = unit or row["unit"]
            # The driver names each row "<variant>, <size>": the line is the variant.
            variant = row["variant"].split(",")[0].strip()
            lines.setdefault(variant, []).append((int(row["size"]), float(row["rate"])))
    if not lines:
        raise ValueError(f"{path}: no rows of the sweep 'square'")
    for points in lines.values():
        points.sort()
    return {"gpu": gpu, "unit": unit, "lines": lines}


def plot(data, out_path):
    plt = plot_frame.pyplot()

    fig, ax = plt.subplots(figsize=(7.5, 4.8))
    for variant, points in data["lines"].items():
        sizes = [p[0] for p in points]
        rates = [p[1] for p in points]
        style = dict(linestyle="--", color="black", marker="x") if variant == REFERENCE else \
            dict(marker="o")
        ax.plot(sizes, rates, label=variant, **style)
    ax.set_xscale("log", base=2)
    all_sizes = sorted({p[0] for points in data["lines"].values() for p in points})
    ax.set_xticks(all_sizes)
    ax.set_xticklabels([str(s) for s in all_sizes])
    ax.set_ylim(bottom=0)
    ax.set_xlabel("m = n = k")
    ax.set_ylabel(data["unit"] or "TFLOP/s")
    ax.set_title(f"Lesson 15: the fp32 SGEMM ladder and cuBLAS\n{data['gpu']}")
    ax.grid(True, alpha=0.3)
    ax.legend(loc="lower right", fontsize=9)
    fig.tight_layout()
    fig.savefig(out_path, dpi=110)
    plt.close(fig)


def self_test():
    if not plot_frame.has_matplotlib():
        print("matplotlib is not installed: skipping the self-test")
        return plot_frame.SKIP
    header = ("lesson,gpu,sweep,size,variant,median_ms,rate,unit,of_reference,of_roof,"
              "vs_baseline,check")
    rows = [header]
    for size in (512, 1024, 2048):
        for variant, rate, check in (("cuBLAS", size / 100, "ref"), ("1-smem", size / 1000, "PASS"),
                                     ("5-tma", size / 110, "PASS")):
            rows.append(f'15_capstone,Test GPU,square,{size},"{variant}, {size}",1.0,{rate},'
                        f"TFLOP/s,1,,1,{check}")
    rows.append("15_capstone,Test GPU,chunks,,streamed,1.0,3.0,TFLOP/s,0.1,,,PASS")
    with tempfile.TemporaryDirectory() as tmp:
        path = pathlib.Path(tmp) / "15_capstone_sweep.csv"
        path.write_text("\n".join(rows) + "\n")
        data = read_sweep(path)
        expected = {"cuBLAS": [(512, 5.12), (1024, 10.24), (2048, 20.48)]}
        if data["lines"]["cuBLAS"] != expected["cuBLAS"] or sorted(data["lines"]) != \
                ["1-smem", "5-tma", "cuBLAS"] or data["gpu"] != "Test GPU":
            print(f"self-test FAILED: parsed {data!r}")
            return 1
        out = pathlib.Path(tmp) / "ladder.png"
        plot(data, out)
        if not out.exists() or out.stat().st_size == 0:
            print("self-test FAILED: no PNG written")
            return 1
        bad = pathlib.Path(tmp) / "bad.csv"
        bad.write_text(header + '\n15_capstone,Test GPU,square,512,"2-regblock, 512",1,1,'
                       "TFLOP/s,1,,1,FAIL\n")
        try:
            read_sweep(bad)
            print("self-test FAILED: a failed check was plotted")
            return 1
        except ValueError:
            pass
    print("self-test passed")
    return 0


def main():
    return plot_frame.one_csv_main(__doc__, self_test, lambda csv, out: plot(read_sweep(csv), out),
                                   "the sweep CSV (15_capstone_sweep.csv)")


if __name__ == "__main__":
    sys.exit(main())
