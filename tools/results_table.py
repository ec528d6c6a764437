#!/usr/bin/env python3
"""Measured results: import a GPU pass into docs/results/ and regenerate the tables.

    tools/results_table.py --import PASS_DIR   copy a GPU pass's outputs into docs/results/<gpu>/
    tools/results_table.py                     regenerate README.md's results table, each
                                               lesson README's output excerpt (between
                                               <!-- output:begin --> and <!-- output:end -->)
                                               and measured pictures (between
                                               <!-- figures:begin --> and <!-- figures:end -->)
                                               and docs/results/<gpu>/results.md
    tools/results_table.py --check             exit 1 if any is out of date (CI)

A GPU pass (tools/gpu_pass.sh) leaves, per lesson, NN_slug.txt (the executable's whole
output) and NN_slug.csv, plus summary.txt. Nothing here is typed by hand: the README's
table is made from those files, so it can only show what was measured.

A lesson's excerpt and pictures come from one GPU folder: the first (in name order) that
holds the lesson's output, so one named GPU for lessons 00-15 and the two-GPU folder for
16-17. The pictures are the folder's NN_*.png and NN_*.svg (made there by tools/plot_*.py,
named NN_what-<gpu folder>), linked, never copied. --check also fails when a lesson has
pictures but its README no figures block, and when a README links a picture of
docs/results/ outside that block (by hand, so nothing keeps it in step).
"""
import argparse
import difflib
import pathlib
import re
import shutil
import sys

ROOT = pathlib.Path(__file__).resolve().parent.parent
RESULTS = ROOT / "docs" / "results"
BEGIN, END = "<!-- results:begin -->", "<!-- results:end -->"
# Each lesson README may hold an excerpt of its solution's real output between these.
OUT_BEGIN, OUT_END = "<!-- output:begin -->", "<!-- output:end -->"
EXCERPT_LINES = 30
OUTPUT = re.compile(r"^\d\d_[a-z0-9_]+\.txt$")
# Each lesson README that has measured pictures shows them between these.
FIG_BEGIN, FIG_END = "<!-- figures:begin -->", "<!-- figures:end -->"
# What each picture shows, by its name without the GPU folder (a picture not listed here is
# captioned with its name).
CAPTIONS = {
    "06_pipeline_multi_stage_sweep": "stage and granularity sweeps of both interfaces, one "
                                     "block per SM, as a fraction of the SM copy roof",
    "07_producer_consumer_sweep": "producer and consumer warps at one block per SM, as a "
                                  "fraction of the SM copy roof",
    "08_warp_entanglement_sweep": "over-waiting and the cost of one wait, each variant beside "
                                  "its control",
    "09_l1_traffic": "L1 traffic of the cp.async forms: which go through L1 and which bypass it",
    "10_tma_bulk_copy_sweep": "stage and granularity sweeps of the TMA pipeline and lesson "
                              "06's primitives, one block per SM",
    "11_swizzle_conflicts": "shared-memory bank conflicts and transpose speed for each swizzle",
    "12_pinned_memory_sweep": "pageable and pinned copies against the copy size, and the "
                              "small-copy models",
    "13_streams_and_sync": "measured overlap of two streams, and what breaks it",
    "14_overlap_timeline": "timeline of async V1 and V2, measured and modelled",
    "14_overlap_transfers_sweep": "async V1 and V2 against the chunk count, with the model",
    "15_capstone_ladder": "TFLOP/s of every rung of the SGEMM ladder and cuBLAS against the size",
    "15_capstone_timeline": "timeline of the streamed GEMM, measured and modelled",
    "16_peer_sweep": "peer copies between the two GPUs against the copy size",
    "17_overlap_timeline": "timeline of the tensor-parallel layer with its collective chunked",
}
# A picture of docs/results linked from a README (Markdown image syntax).
RESULTS_PICTURE = re.compile(r"!\[[^\]]*\]\([^)]*docs/results/[^)]*\)")


def gpu_name(text):
    match = re.search(r"^GPU \d+: (.+?) \(compute capability", text, re.M)
    return match.group(1) if match else None


def slug(name):
    return re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")


def lines_starting(text, prefix):
    return [line[len(prefix):].strip() for line in text.splitlines() if line.startswith(prefix)]


def could_not_run(text):
    """The program said why it cannot run here and printed no result (it exited 77)."""
    return "cannot run here" in text and not lines_starting(text, "RESULT:")


def import_pass(pass_dir):
    pass_dir = pathlib.Path(pass_dir)
    outputs = sorted(p for p in pass_dir.iterdir() if OUTPUT.match(p.name))
    if not outputs:
        sys.exit(f"no lesson outputs (NN_slug.txt) in {pass_dir}")
    name = gpu_name(outputs[0].read_text())
    if name is None:
        sys.exit(f"{outputs[0]} does not name its GPU")
    target = RESULTS / slug(name)
    # A pass over several GPUs (lessons 16-17: COURSE_PASS_GPUS=2) gets its own folder,
    # named after the GPU and their count: "nvidia-h100-80gb-hbm3-x2".
    summary = pass_dir / "summary.txt"
    gpus = re.search(r"\bGPUs (\d+)\b", summary.read_text()) if summary.exists() else None
    if gpus and int(gpus.group(1)) >= 2:
        target = RESULTS / f"{slug(name)}-x{gpus.group(1)}"
    target.mkdir(parents=True, exist_ok=True)
    # A program that could not run on this machine (exit 77: lessons 16-17 on one GPU) has
    # nothing to show: its output is left out.
    outputs = [o for o in outputs if not could_not_run(o.read_text())]
    for output in outputs:
        shutil.copy(output, target / output.name)
    # Every lesson CSV (tables, sweeps, timelines) and picture the pass made.
    ran = {output.stem[:2] for output in outputs}
    for extra in sorted(pass_dir.iterdir()):
        if re.match(r"^\d\d_[a-z0-9_]+\.(csv|svg|png)$", extra.name) and extra.name[:2] in ran:
            shutil.copy(extra, target / extra.name)
    if (pass_dir / "summary.txt").exists():
        shutil.copy(pass_dir / "summary.txt", target / "summary.txt")
    print(f"imported {len(outputs)} lesson outputs into {target.relative_to(ROOT)}")


def gpu_dirs():
    return sorted(d for d in RESULTS.iterdir() if d.is_dir()) if RESULTS.exists() else []


def readme_table():
    rows = ["| Lesson | GPU | Headline (median of the run) | Target | Verdict |", "|---|---|---|---|---|"]
    for d in gpu_dirs():
        for output in sorted(d.glob("[0-9][0-9]_*.txt")):
            text = output.read_text()
            headline = "; ".join(lines_starting(text, "HEADLINE:")) or "-"
            target = "; ".join(lines_starting(text, "TARGETS:") + lines_starting(text, "TARGET:")) or "-"
            verdict = "; ".join(lines_starting(text, "RESULT:")) or "-"
            rows.append(f"| {output.stem} | {gpu_name(text)} | {headline} | {target} | {verdict} |")
    rows.append("")
    for d in gpu_dirs():
        summary = d / "summary.txt"
        if summary.exists():
            rows.append(f"`docs/results/{d.name}`: {summary.read_text().splitlines()[0]}.  ")
    rows.append("Made by `tools/results_table.py` from `docs/results/*/NN_slug.txt`, the outputs of "
                "`tools/gpu_pass.sh`; the full tables, test and sanitizer results are in "
                "`docs/results/`.")
    return "\n".join(rows)


def results_page(d):
    outputs = sorted(d.glob("[0-9][0-9]_*.txt"))
    name = gpu_name(outputs[0].read_text()) if outputs else d.name
    page = [f"# Results on {name} {{#results_{d.name.replace('-', '_')}}}", "",
            "Measured by `tools/gpu_pass.sh` (every solution executable at its default size); "
            "imported with `tools/results_table.py --import`. Each block is the executable's "
            "own output, unedited.", ""]
    summary = d / "summary.txt"
    if summary.exists():
        page += ["## GPU pass summary", "", "```", summary.read_text().rstrip(), "```", ""]
    for output in outputs:
        page += [f"## {output.stem}", "", "```", output.read_text().rstrip(), "```", ""]
        number = output.stem[:2]  # every picture of this lesson: 14_overlap_timeline.svg too
        for picture in sorted(d.glob(f"{number}_*.svg")) + sorted(d.glob(f"{number}_*.png")):
            page += [f"![{picture.stem}]({picture.name})", ""]
    return "\n".join(page)


def clashing_pictures():
    """Picture names used in more than one GPU folder (or docs/figures). Doxygen finds an image by its file
    name alone, so two folders holding the same name make the docs build fail (and would
    show one GPU's picture on the other's page). Name pictures NN_what-<gpu folder>.png."""
    seen = {}
    for d in gpu_dirs() + [ROOT / "docs" / "figures"]:  # and the concept figures
        for picture in list(d.glob("*.png")) + list(d.glob("*.svg")):
            seen.setdefault(picture.name, []).append(d.name)
    return {name: dirs for name, dirs in seen.items() if len(dirs) > 1}


def output_excerpt(text):
    """The end of a lesson's output: its main table (the last one printed), the targets and
    the verdict; at most EXCERPT_LINES lines."""
    lines = text.rstrip().splitlines()
    headers = [i for i, line in enumerate(lines) if line.startswith("variant ")]
    start = headers[-1] if headers else max(0, len(lines) - 20)
    kept = [line for line in lines[start:] if not line.startswith("HEADLINE:")]
    if len(kept) > EXCERPT_LINES:
        kept = kept[:EXCERPT_LINES - 1] + ["..."]
    return kept


def lesson_folder(name):
    """The GPU folder a lesson README shows: the first that has the lesson's output."""
    for d in gpu_dirs():
        if (d / f"{name}.txt").exists():
            return d
    return None


def readme_excerpt(lesson_dir):
    """The generated block of a lesson README: what its solution printed on the first GPU
    folder that has its output."""
    name = lesson_dir.name
    d = lesson_folder(name)
    if d is None:
        return "(No GPU pass has measured this lesson yet.)"
    text = (d / f"{name}.txt").read_text()
    return "\n".join([
        f"What the solution printed on an {gpu_name(text)} (`./course run {name[:2]} "
        f"--solution`; the whole output, and the other GPUs, are in "
        f"`docs/results/{d.name}/results.md`):",
        "", "```text", *output_excerpt(text), "```"])


def lesson_pictures(d, number):
    """A GPU folder's pictures of lesson `number` ("06"), in name order."""
    return sorted(list(d.glob(f"{number}_*.png")) + list(d.glob(f"{number}_*.svg")))


def folder_gpus(d, text):
    """The GPUs a folder's pass ran on, in words: "NVIDIA H200", "2 x NVIDIA H100 80GB HBM3"."""
    name = gpu_name(text) or d.name
    count = re.search(r"-x(\d+)$", d.name)
    return f"{count.group(1)} x {name}" if count else name


def caption(picture, d):
    """What a picture shows: CAPTIONS by its name without the GPU folder, else that name."""
    stem = picture.stem.removesuffix(f"-{d.name}")
    return CAPTIONS.get(stem, stem.replace("_", " "))


def readme_figures(lesson_dir):
    """The figures block of a lesson README: a link to each picture of the lesson in the GPU
    folder its excerpt comes from, captioned with what it shows and the GPU."""
    name = lesson_dir.name
    d = lesson_folder(name)
    pictures = lesson_pictures(d, name[:2]) if d else []
    if not pictures:
        return "(No measured picture of this lesson yet.)"
    gpus = folder_gpus(d, (d / f"{name}.txt").read_text())
    lines = [f"Measured on {gpus} (`docs/results/{d.name}/`, drawn by `tools/plot_*.py` "
             f"from that pass's CSVs):"]
    for picture in pictures:
        text = caption(picture, d)
        lines += ["", f"![{text[0].upper()}{text[1:]} ({gpus})]"
                      f"(../../docs/results/{d.name}/{picture.name})"]
    return "\n".join(lines)


def replace_block(text, begin, end, body):
    """`text` with what lies between `begin` and `end` replaced by `body`."""
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    return f"{head}{begin}\n{body}\n{end}{tail}"


def readme_problems():
    """What --check reports about lesson READMEs beyond stale text: a lesson with measured
    pictures and no figures block, and a picture of docs/results linked by hand."""
    problems = []
    for readme_path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.md")):
        readme = readme_path.read_text()
        where = readme_path.relative_to(ROOT)
        has_block = FIG_BEGIN in readme and FIG_END in readme
        d = lesson_folder(readme_path.parent.name)
        if d and lesson_pictures(d, readme_path.parent.name[:2]) and not has_block:
            problems.append(f"{where}: docs/results/{d.name} has pictures of this lesson, but "
                            f"the README has no {FIG_BEGIN} ... {FIG_END} block to show them")
        outside = replace_block(readme, FIG_BEGIN, FIG_END, "") if has_block else readme
        for link in RESULTS_PICTURE.findall(outside):
            problems.append(f"{where}: {link} links a measured picture by hand: put it in the "
                            f"figures block, which tools/results_table.py keeps in step")
    return problems


def expected_files():
    """Every generated file and the text it must hold."""
    files = {}
    # Both editions of each README carry the same generated blocks (tools/translation_check.py
    # checks that they match, section by section).
    lesson_readmes = sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.md"))
    for readme_path in lesson_readmes + sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.zh.md")):
        readme = readme_path.read_text()
        text = readme
        if OUT_BEGIN in text and OUT_END in text:
            text = replace_block(text, OUT_BEGIN, OUT_END, readme_excerpt(readme_path.parent))
        if FIG_BEGIN in text and FIG_END in text:
            text = replace_block(text, FIG_BEGIN, FIG_END, readme_figures(readme_path.parent))
        if text != readme:
            files[readme_path] = text
    for top in (ROOT / "README.md", ROOT / "README.zh.md"):
        readme = top.read_text() if top.exists() else ""
        if BEGIN in readme and END in readme:
            head, rest = readme.split(BEGIN, 1)
            _, tail = rest.split(END, 1)
            files[top] = f"{head}{BEGIN}\n{readme_table()}\n{END}{tail}"
    for d in gpu_dirs():
        files[d / "results.md"] = results_page(d)
    return files


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--import", dest="import_dir", metavar="PASS_DIR")
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    if args.import_dir:
        import_pass(args.import_dir)
    clashes = clashing_pictures()
    for name, dirs in sorted(clashes.items()):
        print(f"picture {name} is in {', '.join(dirs)}: Doxygen finds images by file name "
              f"alone; name it {pathlib.Path(name).stem}-<gpu folder>{pathlib.Path(name).suffix}",
              file=sys.stderr)
    if clashes:
        sys.exit(1)
    problems = readme_problems()
    for problem in problems:
        print(problem, file=sys.stderr)
    stale = 0
    for path, text in expected_files().items():
        current = path.read_text() if path.exists() else ""
        if current == text:
            continue
        stale += 1
        if args.check:
            diff = difflib.unified_diff(current.splitlines(), text.splitlines(),
                                        str(path.relative_to(ROOT)), "generated", lineterm="")
            print("\n".join(list(diff)[:40]))
        else:
            path.write_text(text)
            print(f"wrote {path.relative_to(ROOT)}")
    if args.check and stale:
        print(f"{stale} results file(s) out of date: run tools/results_table.py")
        return 1
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
