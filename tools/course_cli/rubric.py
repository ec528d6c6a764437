"""The rubric `./course grade` scores with: which checks make up a lesson's grade, the kind of
each, the TODOs it concerns and its points.

A check is what `./course check NN` runs, at the grain ctest reports it:
  - each CPU test of tests/NN_slug_test.cu (a suite without "Gpu" in its name), one check each;
  - each GPU suite (a suite whose name has "Gpu"), one check per suite, as ctest runs them;
  - racecheck, synccheck and memcheck on the student's program (tools/sanitize.py).

Its kind, one of KINDS:
  values       the results are right (CPU model and launch tests, GPU value tests);
  async_path   the asynchronous path is proven in the compiled code (suites named ...Ptx/...Sass);
  race_free    racecheck and synccheck are clean;
  memory_safe  memcheck is clean;
  target       an overlap or performance target is met (GPU suites about overlap, timelines,
               comparisons with a reference).
Its TODOs: the numbers its failure messages name through course::testing::concerns_todo(k) and
concerns_todos({...}) (tests/support/gpu_test.h), read from the test source: in the test's own
body, in the fixture class its suite is named after, and in the helper functions it calls
(followed through calls); a tag whose number comes from a helper (concerns_todo(round_todo(m)))
takes the numbers that helper returns. The sanitizer checks concern every TODO but a worked
example.

Its points: the points of its kind times the weight of its TODOs (the largest weight among
them; 1 when it names none). The defaults live in lessons/catalog.json ("rubric" at the top:
points per kind, weights per TODO tag: a bug hunt counts double, a worked example nothing); a
lesson's catalog entry may carry a "rubric" of its own, and an instructor's --rubric FILE goes
last. Both have the shape of an override (see OVERRIDE_KEYS):

    {"kinds": {"values": 2, "async_path": 2, "race_free": 2, "memory_safe": 1, "target": 1},
     "todos": {"4": 3},                      # weight of the checks that concern TODO 4
     "checks": {"WarpEntanglementPtx.*": {"points": 3},   # fnmatch patterns on check ids,
                "memcheck": {"points": 0},                 # applied in order
                "GpuWarpEntanglementLimits": {"todos": [4], "kind": "values"}},
     "score_what_the_starter_passes": false}

A check the untouched starter already passes earns nothing by default ("free": it measures the
given code, not the student's); `./course grade` finds those by running the template's own
starter build once. An explicit "points" in an override still applies to it.
"""

from __future__ import annotations

import fnmatch
import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CourseError
from . import exercise

KINDS = ("values", "async_path", "race_free", "memory_safe", "target")
KIND_TITLES = {
    "values": "values",
    "async_path": "async path proven in PTX/SASS",
    "race_free": "race-free",
    "memory_safe": "memory-safe",
    "target": "overlap or target met",
}
DEFAULT_KIND_POINTS = {"values": 2, "async_path": 2, "race_free": 2, "memory_safe": 1, "target": 1}
DEFAULT_TAG_WEIGHTS = {"bug hunt": 2, "worked example": 0}
SANITIZERS = (("racecheck", "race_free"), ("synccheck", "race_free"), ("memcheck", "memory_safe"))
OVERRIDE_KEYS = ("kinds", "todos", "checks", "score_what_the_starter_passes")
CHECK_KEYS = ("points", "todos", "kind", "skip")
# GPU suites about overlap, timelines or a comparison with a reference measure a target.
TARGET_RE = re.compile(r"Overlap|Timeline|Timing|Vs[A-Z]|Bench|Target|Faster|KeepsItsStagesFull")


@dataclass
class Check:
    """One scored item of a grade."""

    id: str  # "Suite.Test" (CPU test), "Suite" (GPU suite) or a sanitizer tool's name
    kind: str
    tier: str  # "cpu" or "gpu"
    todos: list[int]
    points: float = 0.0
    free: bool = False  # the untouched starter passes it
    note: str = ""

    @property
    def title(self) -> str:
        todos = (" (TODO " + ", ".join(map(str, self.todos)) + ")") if self.todos else ""
        return f"{self.id} [{KIND_TITLES[self.kind]}]{todos}"

    def as_json(self) -> dict:
        data = {"id": self.id, "kind": self.kind, "tier": self.tier, "todos": self.todos,
                "points": self.points}
        if self.free:
            data["free"] = True
        if self.note:
            data["note"] = self.note
        return data


@dataclass
class Rubric:
    lesson: str  # "08_warp_entanglement"
    checks: list[Check]
    kind_points: dict[str, float]
    todo_weights: dict[int, float]
    sources: list[str] = field(default_factory=list)  # where it came from, in order

    def check(self, check_id: str) -> Check | None:
        return next((c for c in self.checks if c.id == check_id), None)

    @property
    def todos(self) -> list[int]:
        return sorted(self.todo_weights)

    def as_json(self) -> dict:
        return {"lesson": self.lesson, "sources": self.sources,
                "kinds": self.kind_points,
                "todos": {str(k): v for k, v in sorted(self.todo_weights.items())},
                "checks": [c.as_json() for c in self.checks]}


# ----------------------------------------------------------------- reading the test source


@dataclass
class Chunk:
    """A top-level definition of a test source: a TEST, a function or a class."""

    name: str  # the function's or class's name; for a test, "Suite.Test"
    suite: str  # a test's suite ("" for other chunks)
    body: str
    variable: bool = False  # a top-level variable (its value names TODOs), not a function


_TEST_RE = re.compile(r"\b(TEST|TEST_F|TEST_P|TYPED_TEST|TYPED_TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)\s*\)")
_CLASS_RE = re.compile(r"\b(?:class|struct)\s+(\w+)")
_FUNCTION_RE = re.compile(r"(\w+)\s*\([^()]*(?:\([^()]*\)[^()]*)*\)\s*(?:const\s*)?(?:noexcept\s*)?"
                          r"(?:->\s*[\w:<>, ]+)?\s*$")
_CALL_RE = re.compile(r"\b([A-Za-z_]\w*)\s*\(")
_TAG_RE = re.compile(r"\bconcerns_todos?\s*\(")


def strip_comments_and_strings(text: str) -> str:
    """The text with comments, string and character literals blanked (same length)."""
    out = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
        elif c == 'R' and text.startswith('R"', i) and (i == 0 or not text[i - 1].isalnum()):
            delimiter = text[i + 2:text.find("(", i + 2)]
            end = text.find(")" + delimiter + '"', i)
            j = n if end < 0 else end + len(delimiter) + 2
            out.append('"' + re.sub(r"[^\n]", " ", text[i + 1:j - 1]) + '"')
            i = j
        elif c == "'" and i > 0 and text[i - 1].isalnum() and not re.search(
                r"(?<!\w)(L|u|U|u8)$", text[max(0, i - 3):i]):
            out.append(c)  # a digit separator: 1'000'000
            i += 1
        elif c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            j = min(j + 1, n)
            out.append(c + " " * (j - i - 2) + c if j - i >= 2 else c)
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def chunks_of(source: str) -> list[Chunk]:
    """The top-level definitions of a C++ test source (namespaces are looked through)."""
    text = strip_comments_and_strings(source)
    chunks = []
    stack: list[str] = []  # "ns" or "block"
    boundary = 0  # where the text of the next top-level definition starts
    start = None
    opened = 0
    parens = 0  # open parentheses at the top level: a default argument's {} is no block
    for i, c in enumerate(text):
        if not stack.count("block") and c in "()":
            parens = max(0, parens + (1 if c == "(" else -1))
            continue
        if c == "{" and parens and not stack.count("block"):
            stack.append("init")
            continue
        if c == "}" and stack and stack[-1] == "init":
            stack.pop()
            continue
        if c == "{":
            depth = stack.count("block")
            header = text[boundary:i]
            if depth == 0 and re.search(r"\bnamespace\b[\w\s:]*$", header):
                stack.append("ns")
                boundary = i + 1
                continue
            if depth == 0:
                start = boundary
                opened = i
            stack.append("block")
        elif c == "}":
            if not stack:
                continue
            kind = stack.pop()
            if kind == "ns":
                boundary = i + 1
            elif stack.count("block") == 0 and start is not None:
                chunk = _chunk(text[start:opened], text[start:i + 1])
                if chunk:
                    chunks.append(chunk)
                start = None
                boundary = i + 1
        elif c == ";" and stack.count("block") == 0 and not parens:
            # A top-level variable whose value is a tag: kRules = concerns_todos({1, 2});
            statement = text[boundary:i]
            variable = re.search(r"(\w+)\s*=[^=]", statement)
            if variable and _TAG_RE.search(statement):
                chunks.append(Chunk(variable.group(1), "", statement, variable=True))
            boundary = i + 1
    return chunks


def _chunk(header: str, text: str) -> Chunk | None:
    test = _TEST_RE.search(header)
    if test:
        return Chunk(f"{test.group(2)}.{test.group(3)}", test.group(2), text)
    cls = _CLASS_RE.search(header)
    if cls and "(" not in header:
        return Chunk(cls.group(1), "", text)
    function = _FUNCTION_RE.search(header.strip())
    if function:
        return Chunk(function.group(1), "", text)
    return None


def _tag_arguments(body: str) -> list[str]:
    """The argument text of every concerns_todo(...) / concerns_todos(...) in `body`."""
    args = []
    for match in _TAG_RE.finditer(body):
        depth, j = 1, match.end()
        while j < len(body) and depth:
            depth += {"(": 1, ")": -1}.get(body[j], 0)
            j += 1
        args.append(body[match.end():j - 1])
    return args


def _returned_numbers(body: str) -> set[int]:
    return {int(n) for expression in re.findall(r"\breturn\b([^;]*);", body)
            for n in re.findall(r"\b(\d+)\b", expression)}


def todos_of_tests(source: str) -> dict[str, list[int]]:
    """{"Suite.Test": the TODOs its failures can name} for every test of a test source."""
    chunks = chunks_of(source)
    by_name: dict[str, list[Chunk]] = {}
    for chunk in chunks:
        by_name.setdefault(chunk.name, []).append(chunk)

    def direct(chunk: Chunk) -> set[int]:
        found: set[int] = set()
        for argument in _tag_arguments(chunk.body):
            found |= {int(n) for n in re.findall(r"(?<![\w.])(\d+)(?![\w.])", argument)}
            for called in _CALL_RE.findall(argument):
                for helper in by_name.get(called, []):
                    found |= _returned_numbers(helper.body)
        return found

    own = {id(c): direct(c) for c in chunks}
    variables = {c.name for c in chunks if c.variable}
    calls = {id(c): {name for name in _CALL_RE.findall(c.body) if name in by_name} |
             (set(re.findall(r"\b\w+\b", c.body)) & variables) for c in chunks}

    def closure(chunk: Chunk) -> set[int]:
        seen = {id(chunk)}
        todo = [chunk]
        found: set[int] = set()
        while todo:
            current = todo.pop()
            found |= own[id(current)]
            names = set(calls[id(current)])
            if current.suite:
                names.add(current.suite)  # the fixture class
            for name in names:
                for helper in by_name.get(name, []):
                    if id(helper) not in seen and not helper.suite:
                        seen.add(id(helper))
                        todo.append(helper)
        return found

    return {c.name: sorted(closure(c)) for c in chunks if c.suite}


# -------------------------------------------------------------------------- the rubric


def is_gpu_suite(suite: str) -> bool:
    """ctest's rule (cmake/CourseLesson.cmake): suites matching *Gpu* are the GPU tests."""
    return "Gpu" in suite


def kind_of(check_id: str, tier: str) -> str:
    suite = check_id.split(".")[0]
    if re.search(r"Ptx|Sass", suite):
        return "async_path"
    if tier == "gpu" and TARGET_RE.search(check_id):
        return "target"
    return "values"


def todo_weights_of(root: Path, lesson, tag_weights: dict[str, float]) -> dict[int, float]:
    """Every TODO of the lesson's exercise file and its weight by tag (bug hunt, worked
    example, plain)."""
    path = lesson.lesson_dir(root) / f"{lesson.slug}.cu"
    solution = lesson.solution_dir(root) / f"{lesson.slug}.cu"
    source = solution if solution.is_file() else path
    try:
        text = source.read_text(encoding="utf-8")
    except OSError as error:
        raise CourseError(f"cannot read {source}: {error}") from None
    weights: dict[int, float] = {}
    for block in exercise.todo_blocks(text):
        tag = block.tag.strip(" ()")
        weight = float(tag_weights.get(tag, 1))
        weights[block.number] = max(weights.get(block.number, weight), weight)
    return weights


def base_checks(root: Path, lesson) -> list[Check]:
    """The checks of a lesson, kinds and TODOs, before points."""
    test_source = root / "tests" / f"{lesson.name}_test.cu"
    try:
        source = test_source.read_text(encoding="utf-8")
    except OSError as error:
        raise CourseError(f"cannot read {test_source}: {error}") from None
    checks: list[Check] = []
    suites: dict[str, set[int]] = {}
    for name, todos in todos_of_tests(source).items():
        suite = name.split(".")[0]
        if is_gpu_suite(suite):
            suites.setdefault(suite, set()).update(todos)
        else:
            checks.append(Check(name, kind_of(name, "cpu"), "cpu", todos))
    for suite, todos in suites.items():
        checks.append(Check(suite, kind_of(suite, "gpu"), "gpu", sorted(todos)))
    return checks


def _number(value, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0:
        raise CourseError(f"{where}: expected a number >= 0, got {value!r}")
    return float(value)


def validate_override(data, where: str) -> dict:
    """An override (catalog or instructor file) after checking its shape."""
    if not isinstance(data, dict):
        raise CourseError(f"{where}: a rubric must be a JSON object")
    unknown = sorted(set(data) - set(OVERRIDE_KEYS) - {"lesson", "sources", "$comment"})
    if unknown:
        raise CourseError(f"{where}: unknown rubric field(s) {', '.join(unknown)}; the fields "
                          f"are {', '.join(OVERRIDE_KEYS)}")
    kinds = data.get("kinds", {})
    if not isinstance(kinds, dict) or not set(kinds) <= set(KINDS):
        raise CourseError(f"{where}: \"kinds\" maps kinds ({', '.join(KINDS)}) to points")
    for kind, value in kinds.items():
        _number(value, f"{where}: kinds.{kind}")
    todos = data.get("todos", {})
    if isinstance(todos, list):  # the shape --show-rubric prints is accepted back
        todos = {}
    if not isinstance(todos, dict) or not all(str(k).isdigit() for k in todos):
        raise CourseError(f"{where}: \"todos\" maps TODO numbers (\"3\") to weights")
    for todo, value in todos.items():
        _number(value, f"{where}: todos.{todo}")
    checks = data.get("checks", {})
    if isinstance(checks, list):  # --show-rubric's list of checks: exact ids
        checks = {c.get("id", ""): {k: v for k, v in c.items() if k in CHECK_KEYS}
                  for c in checks if isinstance(c, dict)}
    if not isinstance(checks, dict):
        raise CourseError(f"{where}: \"checks\" maps check ids or patterns to fields")
    for pattern, fields in checks.items():
        if not isinstance(fields, dict) or not set(fields) <= set(CHECK_KEYS):
            raise CourseError(f"{where}: checks[{pattern!r}] takes {', '.join(CHECK_KEYS)}")
        if "points" in fields:
            _number(fields["points"], f"{where}: checks[{pattern!r}].points")
        if "kind" in fields and fields["kind"] not in KINDS:
            raise CourseError(f"{where}: checks[{pattern!r}].kind must be one of {', '.join(KINDS)}")
        if "todos" in fields and (not isinstance(fields["todos"], list) or not all(
                isinstance(t, int) and not isinstance(t, bool) for t in fields["todos"])):
            raise CourseError(f"{where}: checks[{pattern!r}].todos must be a list of numbers")
    starter = data.get("score_what_the_starter_passes", None)
    if starter is not None and not isinstance(starter, bool):
        raise CourseError(f"{where}: score_what_the_starter_passes must be true or false")
    return {"kinds": kinds, "todos": {int(k): float(v) for k, v in todos.items()},
            "checks": checks, "score_what_the_starter_passes": starter}


def read_override_file(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise CourseError(f"cannot read the rubric {path}: {error}") from None
    except ValueError as error:
        raise CourseError(f"{path}: not valid JSON: {error}") from None
    return validate_override(data, str(path))


def build_rubric(root: Path, lesson, defaults: dict, overrides: list[tuple[str, dict]],
                 starter_passes: set[str] | None = None) -> Rubric:
    """The lesson's rubric: its checks with the catalog's defaults, then each override in
    order ((source, validated override)); `starter_passes` the check ids the untouched starter
    passes (free unless an override gives them points or says to score them)."""
    kind_points = {k: float(v) for k, v in DEFAULT_KIND_POINTS.items()}
    kind_points.update({k: float(v) for k, v in defaults.get("kinds", {}).items()})
    tag_weights = dict(DEFAULT_TAG_WEIGHTS)
    tag_weights.update(defaults.get("todo_tags", {}))
    weights = todo_weights_of(root, lesson, tag_weights)
    score_free = False
    for _, override in overrides:
        kind_points.update({k: float(v) for k, v in override["kinds"].items()})
        weights.update(override["todos"])
        if override["score_what_the_starter_passes"] is not None:
            score_free = override["score_what_the_starter_passes"]

    checks = base_checks(root, lesson)
    every_todo = [t for t, w in sorted(weights.items()) if w > 0]
    for tool, kind in SANITIZERS:
        checks.append(Check(tool, kind, "gpu", every_todo))
    explicit_points: set[str] = set()
    kept = []
    for check in checks:
        skip = False
        for _, override in overrides:
            for pattern, fields in override["checks"].items():
                if fnmatch.fnmatchcase(check.id, pattern):
                    check.kind = fields.get("kind", check.kind)
                    check.todos = list(fields.get("todos", check.todos))
                    skip = fields.get("skip", skip)
                    if "points" in fields:
                        check.points = float(fields["points"])
                        explicit_points.add(check.id)
        if skip:
            continue
        if check.id not in explicit_points:
            factor = max((weights.get(t, 1.0) for t in check.todos), default=1.0)
            check.points = kind_points[check.kind] * factor
        if starter_passes is not None and check.id in starter_passes and not score_free:
            check.free = True
            if check.id not in explicit_points:
                check.points = 0.0
                check.note = "the untouched starter passes it: not scored"
        kept.append(check)
    sources = ["defaults (lessons/catalog.json)"] + [source for source, _ in overrides]
    return Rubric(lesson.name, kept, kind_points, weights, sources)
