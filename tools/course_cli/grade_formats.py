"""What a grade is, and the files each platform reads (`./course grade --format ...`).

  gradescope    results.json as Gradescope's autograder specification documents it: top-level
                score, execution_time, output, visibility, stdout_visibility, extra_data, and
                tests[] with name, score, max_score, status, output, tags, visibility. A check
                that did not run carries no score and no max_score (Gradescope shows such a
                test as information and leaves it out of the total).
  prairielearn  results.json for a PrairieLearn external grader: gradable, score in [0, 1],
                message, output, tests[] with name, description, points, max_points, message,
                output. A check that did not run has points 0 of max_points 0.
  classroom50   result.json as Classroom 50's result.json contract (schema
                "classroom50/result/v1") requires: identity fields, integer score and
                max-score, tests[] with test-name, passed, score, max-score. A check that did
                not run is left out of tests[] and of the scores and listed in "not_run".
  junit         JUnit XML: a testsuite per student, a testcase per check, <skipped> for a
                check that did not run, <failure> for one that failed.
  csv           one row per student: the score, then points per TODO and per kind of check.

A check that did not run (no GPU, no compute-sanitizer) is never written as 0 and never as
passed: it has no score in every format.
"""

from __future__ import annotations

import csv
import datetime
import io
import json
import os
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

from .rubric import KIND_TITLES, KINDS, Check, Rubric

FORMATS = ("gradescope", "prairielearn", "classroom50", "junit", "csv")
PASSED, FAILED, NOT_RUN = "passed", "failed", "not run"
VISIBILITIES = ("visible", "hidden", "after_due_date", "after_published")
OUTPUT_LIMIT = 12000  # characters of output kept per check


@dataclass
class CheckResult:
    check: Check
    status: str  # PASSED, FAILED or NOT_RUN
    score: float | None  # None when it did not run
    output: str = ""

    @property
    def max_score(self) -> float | None:
        return None if self.status == NOT_RUN else self.check.points


@dataclass
class Grade:
    """One student's grade for one lesson."""

    student: str
    lesson: str
    file: str  # the submitted file, as found
    results: list[CheckResult] = field(default_factory=list)
    build: str = ""  # PASSED, FAILED, or "" when nothing was built (no file)
    build_output: str = ""
    problem: str = ""  # why the submission could not be graded at all ("" when it was)
    isolation: str = ""
    gpu: str = ""  # "" when the GPU checks ran, else why not
    seconds: float = 0.0
    build_seconds: float = 0.0  # compiling and linking
    run_seconds: float = 0.0  # the test and sanitizer runs (waiting for a GPU not counted)
    notes: list[str] = field(default_factory=list)
    submitted_at: str = ""  # UTC ISO 8601 (the file's modification time)

    @property
    def score(self) -> float:
        return sum(r.score or 0.0 for r in self.results if r.status != NOT_RUN)

    @property
    def max_score(self) -> float:
        return sum(r.max_score or 0.0 for r in self.results if r.status != NOT_RUN)

    def todo_points(self, todo: int) -> tuple[float, float]:
        """(earned, possible) over the checks that ran and concern `todo`."""
        ran = [r for r in self.results if r.status != NOT_RUN and todo in r.check.todos]
        return sum(r.score or 0.0 for r in ran), sum(r.max_score or 0.0 for r in ran)

    def kind_points(self, kind: str) -> tuple[float, float]:
        ran = [r for r in self.results if r.status != NOT_RUN and r.check.kind == kind]
        return sum(r.score or 0.0 for r in ran), sum(r.max_score or 0.0 for r in ran)

    def summary(self) -> str:
        """The lines every format puts at the top."""
        lines = [f"Lesson {self.lesson}, {self.student}: {number(self.score)} of "
                 f"{number(self.max_score)} points."]
        if self.problem:
            lines.append(f"Not graded: {self.problem}")
        elif self.build == FAILED:
            lines.append("Your file does not compile (or link): every check that needs it "
                         "failed. The compiler's first errors are in the build entry.")
        not_run = [r for r in self.results if r.status == NOT_RUN]
        if not_run:
            reasons = sorted({r.output.splitlines()[0] if r.output else "not run" for r in not_run})
            lines.append(f"{len(not_run)} check(s) not run, with no score (neither 0 nor passed): "
                         + "; ".join(reasons))
        lines += self.notes
        if self.isolation:
            lines.append(f"Isolation: {self.isolation}")
        return "\n".join(lines)

    def as_json(self) -> dict:
        return {
            "student": self.student, "lesson": self.lesson, "file": self.file,
            "score": self.score, "max_score": self.max_score, "build": self.build,
            "build_output": clip(self.build_output),
            "problem": self.problem, "gpu": self.gpu, "isolation": self.isolation,
            "seconds": round(self.seconds, 1), "build_seconds": round(self.build_seconds, 1),
            "run_seconds": round(self.run_seconds, 1), "notes": self.notes,
            "checks": [{"id": r.check.id, "kind": r.check.kind, "tier": r.check.tier,
                        "todos": r.check.todos, "status": r.status, "score": r.score,
                        "max_score": r.max_score, "output": clip(r.output)}
                       for r in self.results],
        }


def number(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:.2f}"


def clip(text: str, limit: int = OUTPUT_LIMIT) -> str:
    if len(text) <= limit:
        return text
    half = limit // 2
    return text[:half] + "\n[... cut ...]\n" + text[-half:]


def test_name(check: Check) -> str:
    todos = f" (TODO {', '.join(map(str, check.todos))})" if check.todos else ""
    return f"{check.id}: {KIND_TITLES[check.kind]}{todos}"


def tags(check: Check) -> list[str]:
    return [check.kind, check.tier] + [f"TODO {t}" for t in check.todos]


BUILD_NAME = "build: your file compiles and links (no points)"


# ------------------------------------------------------------------------------ Gradescope


def gradescope(grade: Grade, visibility: str = "visible") -> dict:
    tests = []
    if grade.build:
        tests.append({"name": BUILD_NAME, "status": grade.build,
                      "output": clip(grade.build_output) or "compiled and linked",
                      "visibility": visibility})
    for r in grade.results:
        entry = {"name": test_name(r.check), "output": clip(r.output), "tags": tags(r.check),
                 "visibility": visibility}
        if r.status != NOT_RUN:
            entry.update(score=r.score or 0.0, max_score=r.max_score or 0.0, status=r.status)
        else:
            entry["tags"] = entry["tags"] + ["not run"]
        tests.append(entry)
    return {
        "score": grade.score,
        "execution_time": int(round(grade.seconds)),
        "output": grade.summary(),
        "output_format": "text",
        "test_output_format": "text",
        "visibility": visibility,
        "stdout_visibility": "hidden",
        "extra_data": {"lesson": grade.lesson, "student": grade.student,
                       "max_score_of_the_checks_that_ran": grade.max_score,
                       "isolation": grade.isolation, "gpu": grade.gpu or "ran"},
        "tests": tests,
    }


# ---------------------------------------------------------------------------- PrairieLearn


def prairielearn(grade: Grade) -> dict:
    if grade.problem:
        return {"gradable": False, "format_errors": [grade.problem], "message": grade.problem,
                "output": grade.summary(), "tests": []}
    tests = []
    if grade.build:
        tests.append({"name": BUILD_NAME, "description": "the compiler's output",
                      "points": 0, "max_points": 0,
                      "message": "compiles and links" if grade.build == PASSED else
                      "does not compile or link", "output": clip(grade.build_output)})
    for r in grade.results:
        ran = r.status != NOT_RUN
        tests.append({
            "name": test_name(r.check),
            "description": f"{KIND_TITLES[r.check.kind]}; {r.check.tier} tier",
            "points": (r.score or 0.0) if ran else 0,
            "max_points": (r.max_score or 0.0) if ran else 0,
            "message": r.status if ran else (r.output.splitlines()[0] if r.output else NOT_RUN),
            "output": clip(r.output),
        })
    score = grade.score / grade.max_score if grade.max_score > 0 else 0.0
    return {"gradable": True, "score": min(1.0, max(0.0, score)),
            "message": grade.summary().splitlines()[0], "output": grade.summary(),
            "tests": tests}


# ------------------------------------------------------------------------------ Classroom 50


def _classroom50_tests(grade: Grade) -> tuple[list[dict], list[dict]]:
    """(tests[] of the checks that ran, with integer points; the checks that did not run)."""
    tests = []
    if grade.build:
        tests.append({"test-name": BUILD_NAME, "passed": grade.build == PASSED, "score": 0,
                      "max-score": 0, "output": clip(grade.build_output, 4000)})
    not_run = []
    for r in grade.results:
        if r.status == NOT_RUN:
            not_run.append({"test-name": test_name(r.check),
                            "reason": r.output.splitlines()[0] if r.output else NOT_RUN})
            continue
        points = int(round(r.max_score or 0.0))
        tests.append({"test-name": test_name(r.check), "passed": r.status == PASSED,
                      "score": min(points, int(round(r.score or 0.0))), "max-score": points,
                      "kind": r.check.kind, "todos": r.check.todos,
                      "output": clip(r.output, 4000)})
    return tests, not_run


def classroom50(grade: Grade, environ=os.environ) -> dict:
    """A result.json for Classroom 50. In its runner the identity comes from the environment
    it sets (CLASSROOM, ASSIGNMENT, SUBMISSION_TAG, COMMIT_URL, RELEASE_URL, REVIEW_URL,
    USERNAME); graded locally, from the student's name and the file."""
    now = datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
    submitted = grade.submitted_at or now
    commit = environ.get("COMMIT_URL") or f"file:{grade.file}"
    tests, not_run = _classroom50_tests(grade)
    result = {
        "schema": "classroom50/result/v1",
        "classroom": environ.get("CLASSROOM") or "local",
        "assignment": environ.get("ASSIGNMENT") or grade.lesson,
        "assignment_type": environ.get("ASSIGNMENT_TYPE") or "individual",
        "owner": environ.get("OWNER") or environ.get("USERNAME") or grade.student,
        "submission": environ.get("SUBMISSION_TAG") or
        f"submit/local-{submitted.replace(':', '-')}-{grade.student}",
        "commit": commit,
        "release": environ.get("RELEASE_URL") or commit,
        "review": environ.get("REVIEW_URL") or commit,
        "datetime": submitted,
        "graded_at": now,
        "score": sum(t["score"] for t in tests),
        "max-score": sum(t["max-score"] for t in tests),
        "tests": tests,
    }
    if not_run:
        result["not_run"] = not_run
    if grade.problem:
        result["problem"] = grade.problem
    return result


# ------------------------------------------------------------------------------------ JUnit


def junit_suite(grade: Grade) -> ElementTree.Element:
    suite = ElementTree.Element("testsuite", name=grade.student)
    properties = ElementTree.SubElement(suite, "properties")
    for name, value in (("lesson", grade.lesson), ("file", grade.file),
                        ("score", number(grade.score)), ("max_score", number(grade.max_score)),
                        ("isolation", grade.isolation), ("gpu", grade.gpu or "ran")):
        ElementTree.SubElement(properties, "property", name=name, value=value)
    counts = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    classname = f"{grade.lesson}.{grade.student}"

    def case(name: str, status: str, output: str, points: str) -> None:
        counts["tests"] += 1
        element = ElementTree.SubElement(suite, "testcase", classname=classname, name=name,
                                         time="0")
        if status == FAILED:
            counts["failures"] += 1
            first = output.strip().splitlines()[0] if output.strip() else "failed"
            failure = ElementTree.SubElement(element, "failure", message=first[:200],
                                             type="failed")
            failure.text = clip(output)
        elif status == NOT_RUN:
            counts["skipped"] += 1
            ElementTree.SubElement(element, "skipped",
                                   message=(output.splitlines()[0] if output else NOT_RUN)[:200])
        out = ElementTree.SubElement(element, "system-out")
        out.text = points + ("\n" + clip(output) if output and status == PASSED else "")

    if grade.problem:
        case("submission", FAILED, grade.problem, "not graded")
    if grade.build:
        case(BUILD_NAME, grade.build, grade.build_output, "no points")
    for r in grade.results:
        points = (f"points: {number(r.score or 0)} of {number(r.max_score or 0)}"
                  if r.status != NOT_RUN else "no score")
        case(test_name(r.check), r.status, r.output, points)
    for key, value in counts.items():
        suite.set(key, str(value))
    suite.set("time", f"{grade.seconds:.1f}")
    return suite


def junit(grades: list[Grade], name: str) -> bytes:
    root = ElementTree.Element("testsuites", name=name)
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for grade in grades:
        suite = junit_suite(grade)
        root.append(suite)
        for key in totals:
            totals[key] += int(suite.get(key))
    for key, value in totals.items():
        root.set(key, str(value))
    ElementTree.indent(root)
    return ElementTree.tostring(root, encoding="utf-8", xml_declaration=True) + b"\n"


# -------------------------------------------------------------------------------------- CSV


def csv_text(grades: list[Grade], rubric: Rubric) -> str:
    todos = rubric.todos
    header = ["student", "file", "compiled", "score", "max_score", "percent"]
    for t in todos:
        header += [f"todo{t}", f"todo{t}_max"]
    for kind in KINDS:
        header += [kind, f"{kind}_max"]
    header += ["not_run", "problem"]
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    for grade in grades:
        percent = 100.0 * grade.score / grade.max_score if grade.max_score else 0.0
        row = [grade.student, grade.file, {PASSED: "yes", FAILED: "no"}.get(grade.build, ""),
               number(grade.score), number(grade.max_score), f"{percent:.1f}"]
        for t in todos:
            row += [number(v) for v in grade.todo_points(t)]
        for kind in KINDS:
            row += [number(v) for v in grade.kind_points(kind)]
        not_run = [r for r in grade.results if r.status == NOT_RUN]
        reasons = sorted({r.output.splitlines()[0] for r in not_run if r.output})
        row += [f"{len(not_run)} ({'; '.join(reasons)})" if not_run else "0", grade.problem]
        writer.writerow(row)
    return buffer.getvalue()


# ---------------------------------------------------------------------------------- writing


def write(out: Path, grades: list[Grade], rubric: Rubric, formats: list[str],
          visibility: str = "visible") -> list[Path]:
    """Writes every requested format under `out`; returns the files written."""
    written = []

    def put(path: Path, data: bytes | str) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        if isinstance(data, str):
            tmp.write_text(data, encoding="utf-8")
        else:
            tmp.write_bytes(data)
        os.replace(tmp, path)
        written.append(path)

    def dumps(value) -> str:
        return json.dumps(value, indent=2, ensure_ascii=False, allow_nan=False) + "\n"

    for fmt in formats:
        if fmt == "gradescope":
            for g in grades:
                put(out / "gradescope" / g.student / "results.json", dumps(gradescope(g, visibility)))
        elif fmt == "prairielearn":
            for g in grades:
                put(out / "prairielearn" / g.student / "results.json", dumps(prairielearn(g)))
        elif fmt == "classroom50":
            for g in grades:
                put(out / "classroom50" / g.student / "result.json", dumps(classroom50(g)))
        elif fmt == "junit":
            for g in grades:
                put(out / "junit" / f"{g.student}.xml", junit([g], f"{rubric.lesson} {g.student}"))
            put(out / "junit.xml", junit(grades, rubric.lesson))
        elif fmt == "csv":
            put(out / "grades.csv", csv_text(grades, rubric))
    put(out / "grades.json", dumps({"lesson": rubric.lesson, "rubric": rubric.as_json(),
                                    "grades": [g.as_json() for g in grades]}))
    return written
