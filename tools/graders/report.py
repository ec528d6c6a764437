"""The report of an operator mutation run: docs/results/<gpu>/operator_mutation.md (per
lesson, per operator, the survivors, the equivalent mutants, what caught each mutant) and
operator_mutation.csv, from the results files of `tools/op_mutation.py run`.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path
from typing import NamedTuple

from course_cli.regions import regions

from . import RESULTS_NAME, ROOT
from .code_reading import compact
from .equivalents import load_equivalents
from .grading import read_results
from .mutants import Mutant, all_mutants, lesson_sources, ready_lessons, select_lessons
from .operators import OPERATORS


def latest(records: list[dict]) -> dict[str, dict]:
    """The last verdict of each mutant (a re-run after a change wins)."""
    out = {}
    for r in records:
        if r.get("id") and r.get("verdict") in ("caught", "survived", "skipped", "error"):
            if r["verdict"] in ("skipped", "error") and out.get(r["id"], {}).get("verdict") in (
                    "caught", "survived"):
                continue
            out[r["id"]] = r
    return out


def regions_without_mutants(lessons: list[str]) -> list[tuple[str, int, str]]:
    have = {(m.lesson, m.region) for m in all_mutants(lessons)}
    bare = []
    for lesson in lessons:
        for path in lesson_sources(lesson)[0]:
            for r in regions(path.read_text(encoding="utf-8")):
                if (lesson, r["region"]) not in have:
                    bare.append((lesson, r["region"], r["todo"]))
    return bare


def cell(text: str, table: bool = True) -> str:
    """Free text (a test name, a compiler or sanitizer message) as a code span that neither
    Markdown tables nor Doxygen read as markup (Doxygen 1.9 ends a code span at a ')."""
    text = md(compact(text).replace("`", "\u2019"), table)
    return f"`{text}`" if text else ""


def md(text: str, table: bool = True) -> str:
    """Text with code spans, made safe for a Markdown table cell (or a list item) that
    Doxygen reads too."""
    text = text.replace("'", "\u2019")
    return text.replace("|", "\\|") if table else text


def caught_by(r: dict) -> str:
    step = r.get("step", "")
    if step == "tests" and "time out" in r.get("detail", ""):
        return "tests (timeout)"
    return step


STEPS = ("compile", "tests", "tests (timeout)", "racecheck", "synccheck", "memcheck")
NOT_JUDGED = ("not graded", "skipped", "error")


class Row(NamedTuple):
    """One current mutant in the report: its last record in the results (None when it was
    never graded) and its verdict (a listed survivor's is "equivalent")."""
    mutant: Mutant
    record: dict | None
    verdict: str


def report(args) -> int:
    """Writes operator_mutation.md and .csv. Exit 1 when a survivor is not listed as
    equivalent; 2 when some mutants are not graded (unless --allow-ungraded); else 0."""
    records = latest(read_results([Path(p) for p in args.results]))
    current = {m.id: m for m in all_mutants(select_lessons(args.lessons, ready_lessons()))}
    equivalents = {e["id"]: e.get("reason", "") for e in load_equivalents()}
    gpu = args.gpu or next((r.get("gpu") for r in records.values() if r.get("gpu")), "") or \
        "unknown-gpu"
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    out_dir = Path(args.out) if args.out else ROOT / "docs" / "results" / slug
    out_dir.mkdir(parents=True, exist_ok=True)

    rows = report_rows(current, records, equivalents)
    stale = sorted(set(records) - set(current))
    page = markdown_page(gpu, slug, rows, records, equivalents, stale)
    (out_dir / f"{RESULTS_NAME}.md").write_text("\n".join(page) + "\n", encoding="utf-8")
    (out_dir / f"{RESULTS_NAME}.csv").write_text(csv_text(rows), encoding="utf-8")

    judged, caught = judged_and_caught(rows)
    survivors = [row.mutant for row in rows if row.verdict == "survived"]
    ungraded = [row.mutant for row in rows if row.verdict in NOT_JUDGED]
    print(f"wrote {out_dir / (RESULTS_NAME + '.md')} and .csv: {len(rows)} mutants, {caught} "
          f"caught of {judged} judged, {len(survivors)} survivors not listed as equivalent, "
          f"{len(ungraded)} not graded")
    for m in survivors:
        print(f"SURVIVED: {m.id}: {m.description}")
    if survivors:
        return 1
    return 2 if ungraded and not args.allow_ungraded else 0


def report_rows(current: dict[str, Mutant], records: dict[str, dict],
                equivalents: dict[str, str]) -> list[Row]:
    """A Row for every current mutant, in the order of the sources."""
    rows = []
    for mid, m in current.items():
        r = records.get(mid)
        verdict = r["verdict"] if r else "not graded"
        if verdict == "survived" and mid in equivalents:
            verdict = "equivalent"
        rows.append(Row(m, r, verdict))
    return rows


def judged_and_caught(rows: list[Row]) -> tuple[int, int]:
    judged = sum(1 for row in rows if row.verdict in ("caught", "survived", "equivalent"))
    caught = sum(1 for row in rows if row.verdict == "caught")
    return judged, caught


def markdown_page(gpu: str, slug: str, rows: list[Row], records: dict[str, dict],
                  equivalents: dict[str, str], stale: list[str]) -> list[str]:
    """The lines of operator_mutation.md."""
    lessons = sorted({row.mutant.lesson for row in rows})
    page = summary_section(gpu, slug, rows)
    page += lesson_section(rows, lessons)
    page += operator_section(rows)
    page += survivors_section(rows)
    page += equivalents_section(rows, equivalents)
    page += ungraded_section(rows, records)
    page += bare_regions_section(lessons)
    page += verdicts_section(rows)
    if stale:
        page += ["", f"{len(stale)} graded mutant(s) no longer exist in the sources (not counted)."]
    return page


def summary_section(gpu: str, slug: str, rows: list[Row]) -> list[str]:
    """The title, what the page is, and the totals."""
    judged, caught = judged_and_caught(rows)
    commits = sorted({r.get("commit", "") for _, r, _ in rows if r and r.get("commit")})
    equivalent = sum(1 for row in rows if row.verdict == "equivalent")
    survivors = sum(1 for row in rows if row.verdict == "survived")
    ungraded = sum(1 for row in rows if row.verdict in NOT_JUDGED)
    return [
        f"# Operator mutation on {gpu} {{#operator_mutation_{slug.replace('-', '_')}}}", "",
        "Made by `tools/op_mutation.py report` from the results of `tools/op_mutation.py run`: "
        "every mutant is the solution with one thing changed in one exercise region (a wait "
        "count, an arrival or byte count, a stage index, a parity, a synchronisation removed, "
        "weakened or moved, a stream, swapped arguments, elements for bytes), graded as "
        "`./course check NN` grades a student: compile, every test of the lesson, then the "
        "program `--quick` under racecheck, synccheck and memcheck; the first that fails "
        "catches it.", "",
        f"Commits graded: {', '.join(commits) or 'none'}. Mutants: {len(rows)}; judged: "
        f"{judged}; caught: {caught} ({100.0 * caught / judged if judged else 0:.1f} %); "
        f"equivalent (listed in `tests/mutation_equivalents.json`): {equivalent}; survivors "
        f"not listed: {survivors}; not graded, skipped or errors: {ungraded}.", ""]


def lesson_section(rows: list[Row], lessons: list[str]) -> list[str]:
    """The table per lesson: verdicts, and the step that caught each caught mutant."""
    header = ["lesson", "mutants", "caught", *[f"by {s}" for s in STEPS], "equivalent",
              "survived", "skipped", "error", "not graded"]
    lines = ["## Per lesson", "", "| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    per_lesson = []
    for lesson in lessons:
        mine = [row for row in rows if row.mutant.lesson == lesson]
        verdicts = [row.verdict for row in mine]
        by = [sum(1 for _, r, v in mine if v == "caught" and caught_by(r) == s) for s in STEPS]
        per_lesson.append([lesson, len(mine), verdicts.count("caught"), *by,
                           *[verdicts.count(v) for v in ("equivalent", "survived", "skipped",
                                                         "error", "not graded")]])
    for row in per_lesson:
        lines.append("| " + " | ".join(str(x) for x in row) + " |")
    if per_lesson:
        totals = [sum(row[i] for row in per_lesson) for i in range(1, len(per_lesson[0]))]
        lines.append("| **all** | " + " | ".join(str(x) for x in totals) + " |")
    return lines


def operator_section(rows: list[Row]) -> list[str]:
    lines = ["", "## Per operator", "", "| operator | mutants | caught | equivalent | survived | "
             "other |", "|---|---|---|---|---|---|"]
    for op in OPERATORS:
        mine = [row.verdict for row in rows if row.mutant.operator == op]
        if mine:
            caught, equivalent, survived = (mine.count(v) for v in
                                            ("caught", "equivalent", "survived"))
            lines.append(f"| {op} | {len(mine)} | {caught} | {equivalent} | {survived} | "
                         f"{len(mine) - caught - equivalent - survived} |")
    return lines


def survivors_section(rows: list[Row]) -> list[str]:
    lines = ["", "## Survivors (not listed as equivalent: the grader misses them)", ""]
    survivors = [row.mutant for row in rows if row.verdict == "survived"]
    for m in survivors:
        lines.append(f"- `{md(m.id, False)}` (line {m.line}, TODO {m.todo}): "
                     f"{md(m.description, False)}")
    return lines if survivors else lines + ["None."]


def equivalents_section(rows: list[Row], equivalents: dict[str, str]) -> list[str]:
    lines = ["", "## Equivalent mutants", ""]
    listed = [row.mutant for row in rows if row.verdict == "equivalent"]
    for m in listed:
        lines.append(f"- `{md(m.id, False)}`: {md(m.description, False)}. "
                     f"{md(equivalents[m.id], False)}")
    return lines if listed else lines + ["None."]


def ungraded_section(rows: list[Row], records: dict[str, dict]) -> list[str]:
    ungraded = [row.mutant for row in rows if row.verdict in NOT_JUDGED]
    if not ungraded:
        return []
    lines = ["", "## Not graded, skipped or errors", ""]
    for m in ungraded:
        r = records.get(m.id)
        why = f"{r['verdict']} ({r.get('step', '')}): {r.get('detail', '')}" if r else \
            "not graded"
        lines.append(f"- `{md(m.id, False)}`: {cell(why[:160], False)}")
    return lines


def bare_regions_section(lessons: list[str]) -> list[str]:
    bare = regions_without_mutants(lessons)
    if not bare:
        return []
    return ["", "## Regions without an operator mutant", "",
            "None of the operators finds anything to change in these regions (no wait, "
            "arrival, stage or byte count, parity, synchronisation, stream, swappable pair "
            "of arguments or sizeof); the blank-region `mutation` label covers them: "
            + ", ".join(f"{lesson} region {r} (TODO {todo})" for lesson, r, todo in bare)
            + "."]


def verdicts_section(rows: list[Row]) -> list[str]:
    lines = ["", "## What caught each mutant", "",
             "| id | line | change | verdict | caught by | detail |", "|---|---|---|---|---|---|"]
    for m, r, v in rows:
        detail = cell((r or {}).get("detail", "")[:120])
        lines.append(f"| `{md(m.id)}` | {m.line} | {md(m.description)} | {v} | "
                     f"{caught_by(r) if r and v == 'caught' else ''} | {detail} |")
    return lines


def csv_text(rows: list[Row]) -> str:
    """operator_mutation.csv: one line per mutant."""
    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "lesson", "region", "todo", "operator", "line", "verdict", "caught_by",
                "detail", "hash", "commit", "description"])
    for m, r, v in rows:
        w.writerow([m.id, m.lesson, m.region, m.todo, m.operator, m.line, v,
                    caught_by(r) if r and v == "caught" else "", (r or {}).get("detail", ""),
                    (r or {}).get("hash", ""), (r or {}).get("commit", ""), m.description])
    return buf.getvalue()
