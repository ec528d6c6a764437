#!/usr/bin/env python3
"""Measured results: import a GPU pass into docs/results/ and regenerate the tables.

    tools/results_table.py --import PASS_DIR   copy a GPU pass's outputs into docs/results/<gpu>/
    tools/results_table.py                     regenerate README.md's results table, each
                                               lesson README's output excerpt (between
                                               <!-- output:begin --> and <!-- output:end -->)
                                               and docs/results/<gpu>/results.md
    tools/results_table.py --check             exit 1 if either is out of date (CI)

A GPU pass (tools/gpu_pass.sh) leaves, per lesson, NN_slug.txt (the executable's whole
output) and NN_slug.csv, plus summary.txt. Nothing here is typed by hand: the README's
table is made from those files, so it can only show what was measured.
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
    """Picture names used in more than one GPU folder. Doxygen finds an image by its file
    name alone, so two folders holding the same name make the docs build fail (and would
    show one GPU's picture on the other's page). Name pictures NN_what-<gpu folder>.png."""
    seen = {}
    for d in gpu_dirs():
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


def readme_excerpt(lesson_dir):
    """The generated block of a lesson README: what its solution printed on the first GPU
    folder that has its output."""
    name = lesson_dir.name
    for d in gpu_dirs():
        output = d / f"{name}.txt"
        if output.exists():
            text = output.read_text()
            return "\n".join([
                f"What the solution printed on an {gpu_name(text)} (`./course run {name[:2]} "
                f"--solution`; the whole output, and the other GPUs, are in "
                f"`docs/results/{d.name}/results.md`):",
                "", "```text", *output_excerpt(text), "```"])
    return "(No GPU pass has measured this lesson yet.)"


def expected_files():
    """Every generated file and the text it must hold."""
    files = {}
    for readme_path in sorted((ROOT / "lessons").glob("[0-9][0-9]_*/README.md")):
        readme = readme_path.read_text()
        if OUT_BEGIN in readme and OUT_END in readme:
            head, rest = readme.split(OUT_BEGIN, 1)
            _, tail = rest.split(OUT_END, 1)
            files[readme_path] = (f"{head}{OUT_BEGIN}\n{readme_excerpt(readme_path.parent)}\n"
                                  f"{OUT_END}{tail}")
    readme = (ROOT / "README.md").read_text()
    if BEGIN in readme and END in readme:
        head, rest = readme.split(BEGIN, 1)
        _, tail = rest.split(END, 1)
        files[ROOT / "README.md"] = f"{head}{BEGIN}\n{readme_table()}\n{END}{tail}"
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
    return 0


if __name__ == "__main__":
    sys.exit(main())
