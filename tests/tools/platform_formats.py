"""Validators of the grade files against the fields each platform documents; each returns the
list of problems it found (empty: valid).

  Gradescope    https://gradescope-autograders.readthedocs.io/en/latest/specs/ (results.json)
  PrairieLearn  https://prairielearn.readthedocs.io/en/latest/externalGrading/ (Grading results)
  Classroom 50  its wiki page Advanced Autograding ("The result.json contract") and the checks
                its collect_scores.py applies before a result lands in scores.json
  JUnit         the de-facto schema of Ant/Jenkins/CodeGrade readers: testsuites > testsuite >
                testcase, with tests/failures/errors/skipped counts that match
"""

from __future__ import annotations

import csv
import io
import json
import numbers
import xml.etree.ElementTree as ElementTree

VISIBILITY = {"hidden", "after_due_date", "after_published", "visible"}
GS_FORMATS = {"text", "simple_format", "html", "md", "ansi"}
GS_TOP = {"score", "execution_time", "output", "output_format", "test_output_format",
          "test_name_format", "visibility", "stdout_visibility", "extra_data", "tests",
          "leaderboard"}
GS_TEST = {"score", "max_score", "status", "name", "name_format", "number", "output",
           "output_format", "tags", "visibility", "extra_data"}


def _is_number(value) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def gradescope(data) -> list[str]:
    problems = []
    if not isinstance(data, dict):
        return ["not an object"]
    problems += [f"unknown top-level field {k}" for k in set(data) - GS_TOP]
    tests = data.get("tests")
    if "score" not in data and not (isinstance(tests, list) and tests and
                                    all("score" in t for t in tests)):
        problems.append("score is required when not every test has one")
    if "score" in data and not _is_number(data["score"]):
        problems.append("score must be a number")
    if "execution_time" in data and not _is_number(data["execution_time"]):
        problems.append("execution_time must be a number of seconds")
    for key in ("visibility", "stdout_visibility"):
        if key in data and data[key] not in VISIBILITY:
            problems.append(f"{key} {data[key]!r}")
    for key in ("output_format", "test_output_format", "test_name_format"):
        if key in data and data[key] not in GS_FORMATS:
            problems.append(f"{key} {data[key]!r}")
    if "output" in data and not isinstance(data["output"], str):
        problems.append("output must be a string")
    if "extra_data" in data and not isinstance(data["extra_data"], dict):
        problems.append("extra_data must be an object")
    if tests is not None:
        if not isinstance(tests, list):
            return problems + ["tests must be a list"]
        total = 0.0
        for i, test in enumerate(tests):
            where = f"tests[{i}]"
            if not isinstance(test, dict):
                problems.append(f"{where} is not an object")
                continue
            problems += [f"{where}: unknown field {k}" for k in set(test) - GS_TEST]
            for key in ("score", "max_score"):
                if key in test and not _is_number(test[key]):
                    problems.append(f"{where}.{key} must be a number")
            if "score" in test:
                total += test["score"]
                if "max_score" not in test:
                    problems.append(f"{where} has a score and no max_score")
            if "status" in test and test["status"] not in ("passed", "failed"):
                problems.append(f"{where}.status {test['status']!r}")
            for key in ("name", "output", "number"):
                if key in test and not isinstance(test[key], str):
                    problems.append(f"{where}.{key} must be a string")
            if "tags" in test and not (isinstance(test["tags"], list) and
                                       all(isinstance(t, str) for t in test["tags"])):
                problems.append(f"{where}.tags must be a list of strings")
            if "visibility" in test and test["visibility"] not in VISIBILITY:
                problems.append(f"{where}.visibility {test['visibility']!r}")
        if "score" in data and _is_number(data["score"]) and abs(total - data["score"]) > 1e-9:
            problems.append(f"score {data['score']} is not the sum of the tests' {total}")
    return problems


def prairielearn(data) -> list[str]:
    if not isinstance(data, dict):
        return ["not an object"]
    problems = []
    if len(json.dumps(data).encode()) >= 1 << 20:
        problems.append("results.json must stay under 1 MB")
    gradable = data.get("gradable", True)
    if not isinstance(gradable, bool):
        problems.append("gradable must be true or false")
    if gradable:
        score = data.get("score")
        if not _is_number(score) or not 0.0 <= score <= 1.0:
            problems.append(f"score must be a number in [0, 1], got {score!r}")
    else:
        errors = data.get("format_errors")
        if not (isinstance(errors, str) or (isinstance(errors, list) and
                                            all(isinstance(e, str) for e in errors))):
            problems.append("a submission that is not gradable says why in format_errors")
    for key in ("message", "output"):
        if key in data and not isinstance(data[key], str):
            problems.append(f"{key} must be a string")
    tests = data.get("tests", [])
    if not isinstance(tests, list):
        return problems + ["tests must be a list"]
    for i, test in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(test, dict) or not isinstance(test.get("name"), str):
            problems.append(f"{where} needs a name")
            continue
        points, most = test.get("points"), test.get("max_points")
        if not _is_number(points) or not _is_number(most) or not 0 <= points <= most:
            problems.append(f"{where}: points {points!r} of max_points {most!r}")
        for key in ("description", "message", "output"):
            if key in test and not isinstance(test[key], str):
                problems.append(f"{where}.{key} must be a string")
    return problems


def classroom50(data) -> list[str]:
    """The checks of Classroom 50's collect_scores.validate_result, less the identity match
    against the repository (which only its runner can know), plus the sums the contract states."""
    if not isinstance(data, dict):
        return ["not an object"]
    problems = []
    if data.get("schema") != "classroom50/result/v1":
        problems.append(f"schema {data.get('schema')!r}")
    for key in ("classroom", "assignment", "owner", "submission", "commit", "release", "review",
                "datetime"):
        if not isinstance(data.get(key), str) or not data[key]:
            problems.append(f"{key} must be a non-empty string")
    if not str(data.get("submission", "")).startswith("submit/"):
        problems.append("submission must start with submit/")
    if data.get("assignment_type") not in ("individual", "group"):
        problems.append(f"assignment_type {data.get('assignment_type')!r}")
    for key in ("score", "max-score"):
        value = data.get(key)
        if not isinstance(value, int) or isinstance(value, bool) or value < 0:
            problems.append(f"{key} must be a non-negative integer, got {value!r}")
    tests = data.get("tests")
    if not isinstance(tests, list):
        return problems + ["tests must be a list"]
    for i, test in enumerate(tests):
        where = f"tests[{i}]"
        if not isinstance(test, dict):
            problems.append(f"{where} is not an object")
            continue
        if not isinstance(test.get("test-name"), str) or not test["test-name"]:
            problems.append(f"{where}.test-name must be a non-empty string")
        if not isinstance(test.get("passed"), bool):
            problems.append(f"{where}.passed must be a boolean")
        for key in ("score", "max-score"):
            value = test.get(key)
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                problems.append(f"{where}.{key} must be a non-negative integer")
        if isinstance(test.get("score"), int) and isinstance(test.get("max-score"), int) and \
                test["score"] > test["max-score"]:
            problems.append(f"{where}: score > max-score")
    if not problems:
        if data["score"] > data["max-score"]:
            problems.append("score > max-score")
        if data["score"] != sum(t["score"] for t in tests):
            problems.append("score is not the sum of the tests' scores")
        if data["max-score"] != sum(t["max-score"] for t in tests):
            problems.append("max-score is not the sum of the tests' max-scores")
    return problems


def junit(text: bytes | str) -> list[str]:
    try:
        root = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        return [f"not XML: {error}"]
    suites = [root] if root.tag == "testsuite" else list(root.iter("testsuite"))
    if root.tag not in ("testsuites", "testsuite"):
        return [f"root element {root.tag}"]
    problems = []
    totals = {"tests": 0, "failures": 0, "errors": 0, "skipped": 0}
    for suite in suites:
        cases = suite.findall("testcase")
        counts = {"tests": len(cases),
                  "failures": sum(1 for c in cases if c.find("failure") is not None),
                  "errors": sum(1 for c in cases if c.find("error") is not None),
                  "skipped": sum(1 for c in cases if c.find("skipped") is not None)}
        if not suite.get("name"):
            problems.append("a testsuite without a name")
        for key, value in counts.items():
            if suite.get(key) != str(value):
                problems.append(f"testsuite {suite.get('name')}: {key}={suite.get(key)} but {value}")
            totals[key] += value
        for case in cases:
            if not case.get("name") or not case.get("classname"):
                problems.append("a testcase without name or classname")
            outcomes = [c for c in ("failure", "error", "skipped") if case.find(c) is not None]
            if len(outcomes) > 1:
                problems.append(f"testcase {case.get('name')}: {outcomes}")
            failure = case.find("failure")
            if failure is not None and failure.get("message") is None:
                problems.append(f"testcase {case.get('name')}: failure without a message")
    if root.tag == "testsuites":
        for key, value in totals.items():
            if root.get(key) is not None and root.get(key) != str(value):
                problems.append(f"testsuites {key}={root.get(key)} but {value}")
    return problems


def grades_csv(text: str, students: list[str], todos: list[int]) -> list[str]:
    rows = list(csv.DictReader(io.StringIO(text)))
    problems = []
    if [r["student"] for r in rows] != students:
        problems.append(f"rows {[r['student'] for r in rows]} but students {students}")
    for row in rows:
        for key in ["score", "max_score", "percent"] + [f"todo{t}" for t in todos] + \
                   [f"todo{t}_max" for t in todos]:
            try:
                float(row[key])
            except (KeyError, ValueError):
                problems.append(f"{row.get('student')}: column {key} is {row.get(key)!r}")
    return problems
