"""The report of an operator mutation run: docs/results/<gpu>/operator_mutation.md (per
lesson, per operator, the survivors, the equivalent mutants, what caught each mutant) and
operator_mutation.csv, from the results files of `tools/op_mutation.py run`.
"""
from __future__ import annotations

import csv
import io
import re
from pathlib import Path

from course_cli.regions import regions

from . import RESULTS_NAME, ROOT
from .code_reading import compact
from .equivalents import load_equivalents
from .grading import read_results
from .mutants import all_mutants, lesson_sources, ready_lessons, select_lessons
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


def report(args) -> int:
    records = latest(read_results([Path(p) for p in args.results]))
    current = {m.id: m for m in all_mutants(select_lessons(args.lessons, ready_lessons()))}
    equivalents = {e["id"]: e.get("reason", "") for e in load_equivalents()}
    gpu = args.gpu or next((r.get("gpu") for r in records.values() if r.get("gpu")), "") or \
        "unknown-gpu"
    slug = re.sub(r"[^a-z0-9]+", "-", gpu.lower()).strip("-")
    out_dir = Path(args.out) if args.out else ROOT / "docs" / "results" / slug
    out_dir.mkdir(parents=True, exist_ok=True)

    rows = []
    for mid, m in current.items():
        r = records.get(mid)
        verdict = r["verdict"] if r else "not graded"
        if verdict == "survived" and mid in equivalents:
            verdict = "equivalent"
        rows.append((m, r, verdict))
    stale = sorted(set(records) - set(current))

    lessons = sorted({m.lesson for m, _, _ in rows})
    steps = ["compile", "tests", "tests (timeout)", "racecheck", "synccheck", "memcheck"]
    per_lesson = []
    for lesson in lessons:
        mine = [(m, r, v) for m, r, v in rows if m.lesson == lesson]
        count = lambda v: sum(1 for _, _, x in mine if x == v)
        by = [sum(1 for _, r, v in mine if v == "caught" and caught_by(r) == s) for s in steps]
        per_lesson.append([lesson, len(mine), count("caught"), *by, count("equivalent"),
                           count("survived"), count("skipped"), count("error"),
                           count("not graded")])
    totals = [sum(row[i] for row in per_lesson) for i in range(1, len(per_lesson[0]))] \
        if per_lesson else []
    judged = sum(1 for _, _, v in rows if v in ("caught", "survived", "equivalent"))
    caught = sum(1 for _, _, v in rows if v == "caught")
    survivors = [(m, r) for m, r, v in rows if v == "survived"]
    failures = survivors
    ungraded = [m for m, _, v in rows if v in ("not graded", "skipped", "error")]

    page = [f"# Operator mutation on {gpu} {{#operator_mutation_{slug.replace('-', '_')}}}", "",
          "Made by `tools/op_mutation.py report` from the results of `tools/op_mutation.py run`: "
          "every mutant is the solution with one thing changed in one exercise region (a wait "
          "count, an arrival or byte count, a stage index, a parity, a synchronisation removed, "
          "weakened or moved, a stream, swapped arguments, elements for bytes), graded as "
          "`./course check NN` grades a student: compile, every test of the lesson, then the "
          "program `--quick` under racecheck, synccheck and memcheck; the first that fails "
          "catches it.", ""]
    commits = sorted({r.get("commit", "") for _, r, _ in rows if r and r.get("commit")})
    page += [f"Commits graded: {', '.join(commits) or 'none'}. Mutants: {len(rows)}; judged: "
           f"{judged}; caught: {caught} ({100.0 * caught / judged if judged else 0:.1f} %); "
           f"equivalent (listed in `tests/mutation_equivalents.json`): "
           f"{sum(1 for _, _, v in rows if v == 'equivalent')}; survivors not listed: "
           f"{len(survivors)}; not graded, skipped or errors: {len(ungraded)}.", ""]
    header = ["lesson", "mutants", "caught", *[f"by {s}" for s in steps], "equivalent",
              "survived", "skipped", "error", "not graded"]
    page += ["## Per lesson", "", "| " + " | ".join(header) + " |",
           "|" + "---|" * len(header)]
    for row in per_lesson:
        page.append("| " + " | ".join(str(x) for x in row) + " |")
    if totals:
        page.append("| **all** | " + " | ".join(str(x) for x in totals) + " |")
    page += ["", "## Per operator", "", "| operator | mutants | caught | equivalent | survived | "
           "other |", "|---|---|---|---|---|---|"]
    for op in OPERATORS:
        mine = [v for m, _, v in rows if m.operator == op]
        if mine:
            page.append(f"| {op} | {len(mine)} | {mine.count('caught')} | "
                      f"{mine.count('equivalent')} | {mine.count('survived')} | "
                      f"{len(mine) - mine.count('caught') - mine.count('equivalent') - mine.count('survived')} |")
    page += ["", "## Survivors (not listed as equivalent: the grader misses them)", ""]
    if survivors:
        for m, r in survivors:
            page.append(f"- `{md(m.id, False)}` (line {m.line}, TODO {m.todo}): "
                      f"{md(m.description, False)}")
    else:
        page.append("None.")
    page += ["", "## Equivalent mutants", ""]
    eq_rows = [(m, equivalents[m.id]) for m, _, v in rows if v == "equivalent"]
    if eq_rows:
        for m, reason in eq_rows:
            page.append(f"- `{md(m.id, False)}`: {md(m.description, False)}. {md(reason, False)}")
    else:
        page.append("None.")
    if ungraded:
        page += ["", "## Not graded, skipped or errors", ""]
        for m in ungraded:
            r = records.get(m.id)
            why = f"{r['verdict']} ({r.get('step', '')}): {r.get('detail', '')}" if r else \
                "not graded"
            page.append(f"- `{md(m.id, False)}`: {cell(why[:160], False)}")
    bare = regions_without_mutants(lessons)
    if bare:
        page += ["", "## Regions without an operator mutant", "",
                 "None of the operators finds anything to change in these regions (no wait, "
                 "arrival, stage or byte count, parity, synchronisation, stream, swappable pair "
                 "of arguments or sizeof); the blank-region `mutation` label covers them: "
                 + ", ".join(f"{lesson} region {r} (TODO {todo})" for lesson, r, todo in bare)
                 + "."]
    page += ["", "## What caught each mutant", "",
           "| id | line | change | verdict | caught by | detail |", "|---|---|---|---|---|---|"]
    for m, r, v in rows:
        detail = cell((r or {}).get("detail", "")[:120])
        page.append(f"| `{md(m.id)}` | {m.line} | {md(m.description)} | {v} | "
                  f"{caught_by(r) if r and v == 'caught' else ''} | {detail} |")
    if stale:
        page += ["", f"{len(stale)} graded mutant(s) no longer exist in the sources (not counted)."]
    (out_dir / f"{RESULTS_NAME}.md").write_text("\n".join(page) + "\n", encoding="utf-8")

    buf = io.StringIO()
    w = csv.writer(buf, lineterminator="\n")
    w.writerow(["id", "lesson", "region", "todo", "operator", "line", "verdict", "caught_by",
                "detail", "hash", "commit", "description"])
    for m, r, v in rows:
        w.writerow([m.id, m.lesson, m.region, m.todo, m.operator, m.line, v,
                    caught_by(r) if r and v == "caught" else "", (r or {}).get("detail", ""),
                    (r or {}).get("hash", ""), (r or {}).get("commit", ""), m.description])
    (out_dir / f"{RESULTS_NAME}.csv").write_text(buf.getvalue(), encoding="utf-8")
    print(f"wrote {out_dir / (RESULTS_NAME + '.md')} and .csv: {len(rows)} mutants, {caught} "
          f"caught of {judged} judged, {len(survivors)} survivors not listed as equivalent, "
          f"{len(ungraded)} not graded")
    for m, _ in failures:
        print(f"SURVIVED: {m.id}: {m.description}")
    if failures:
        return 1
    return 2 if ungraded and not args.allow_ungraded else 0
