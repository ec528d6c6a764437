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


_LITERALS_RE = re.compile(
    r"//[^\n]*"                        # a line comment
    r"|/\*.*?\*/"                       # a block comment
    r'|R"(?P<delim>[^(\s]*)\(.*?\)(?P=delim)"'  # a raw string
    r"|\b\d[\w']*"                       # a number, digit separators included: 1'000'000
    r'|"(?:\\.|[^"\\\n])*"'                # a string
    r"|'(?:\\.|[^'\\\n])*'",               # a character
    re.S)


def strip_comments_and_strings(text: str) -> str:
    """The text with comments, string and character literals blanked (same length, same
    lines; a literal keeps its quotes)."""
    def blank(match: re.Match) -> str:
        token = match.group(0)
        if token[0].isdigit():
            return token
        body = re.sub(r"[^\n]", " ", token)
        return body if token.startswith("/") else token[0] + body[1:-1] + token[-1]
    return _LITERALS_RE.sub(blank, text)


class _Scanner:
    """Splits a test source at its top-level definitions (namespaces are looked through):
    braces open blocks, except a namespace's and those inside parentheses (a default
    argument's {}), and a top-level `;` ends a declaration."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.chunks: list[Chunk] = []
        self.stack: list[str] = []  # "ns", "block" or "init"
        self.boundary = 0  # where the text of the next top-level definition starts
        self.start: int | None = None
        self.opened = 0
        self.parens = 0

    @property
    def depth(self) -> int:
        return self.stack.count("block")

    def scan(self) -> list[Chunk]:
        for i, c in enumerate(self.text):
            if c in "()" and not self.depth:
                self.parens = max(0, self.parens + (1 if c == "(" else -1))
            elif c == "{":
                self.open(i)
            elif c == "}":
                self.close(i)
            elif c == ";" and not self.depth and not self.parens:
                self.declaration(i)
        return self.chunks

    def open(self, i: int) -> None:
        if self.parens and not self.depth:
            self.stack.append("init")
        elif not self.depth and re.search(r"\bnamespace\b[\w\s:]*$", self.text[self.boundary:i]):
            self.stack.append("ns")
            self.boundary = i + 1
        else:
            if not self.depth:
                self.start, self.opened = self.boundary, i
            self.stack.append("block")

    def close(self, i: int) -> None:
        if not self.stack:
            return
        kind = self.stack.pop()
        if kind == "ns":
            self.boundary = i + 1
        elif kind == "block" and not self.depth and self.start is not None:
            chunk = _chunk(self.text[self.start:self.opened], self.text[self.start:i + 1])
            if chunk:
                self.chunks.append(chunk)
            self.start = None
            self.boundary = i + 1

    def declaration(self, i: int) -> None:
        # A top-level variable whose value is a tag: kRules = concerns_todos({1, 2});
        statement = self.text[self.boundary:i]
        variable = re.search(r"(\w+)\s*=[^=]", statement)
        if variable and _TAG_RE.search(statement):
            self.chunks.append(Chunk(variable.group(1), "", statement, variable=True))
        self.boundary = i + 1


def chunks_of(source: str) -> list[Chunk]:
    """The top-level definitions of a C++ test source (namespaces are looked through)."""
    return _Scanner(strip_comments_and_strings(source)).scan()


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


def _validate_kinds(kinds, where: str) -> dict:
    if not isinstance(kinds, dict) or not set(kinds) <= set(KINDS):
        raise CourseError(f"{where}: \"kinds\" maps kinds ({', '.join(KINDS)}) to points")
    for kind, value in kinds.items():
        _number(value, f"{where}: kinds.{kind}")
    return kinds


def _validate_todos(todos, where: str) -> dict[int, float]:
    if isinstance(todos, list):  # the shape --show-rubric prints is accepted back
        todos = {}
    if not isinstance(todos, dict) or not all(str(k).isdigit() for k in todos):
        raise CourseError(f"{where}: \"todos\" maps TODO numbers (\"3\") to weights")
    return {int(todo): _number(value, f"{where}: todos.{todo}") for todo, value in todos.items()}


def _validate_check(pattern: str, fields, where: str) -> None:
    if not isinstance(fields, dict) or not set(fields) <= set(CHECK_KEYS):
        raise CourseError(f"{where}: checks[{pattern!r}] takes {', '.join(CHECK_KEYS)}")
    if "points" in fields:
        _number(fields["points"], f"{where}: checks[{pattern!r}].points")
    if "kind" in fields and fields["kind"] not in KINDS:
        raise CourseError(f"{where}: checks[{pattern!r}].kind must be one of {', '.join(KINDS)}")
    todos = fields.get("todos", [])
    if not isinstance(todos, list) or not all(isinstance(t, int) and not isinstance(t, bool)
                                              for t in todos):
        raise CourseError(f"{where}: checks[{pattern!r}].todos must be a list of numbers")


def _validate_checks(checks, where: str) -> dict:
    if isinstance(checks, list):  # --show-rubric's list of checks: exact ids
        checks = {c.get("id", ""): {k: v for k, v in c.items() if k in CHECK_KEYS}
                  for c in checks if isinstance(c, dict)}
    if not isinstance(checks, dict):
        raise CourseError(f"{where}: \"checks\" maps check ids or patterns to fields")
    for pattern, fields in checks.items():
        _validate_check(pattern, fields, where)
    return checks


def validate_override(data, where: str) -> dict:
    """An override (catalog or instructor file) after checking its shape."""
    if not isinstance(data, dict):
        raise CourseError(f"{where}: a rubric must be a JSON object")
    unknown = sorted(set(data) - set(OVERRIDE_KEYS) - {"lesson", "sources", "$comment"})
    if unknown:
        raise CourseError(f"{where}: unknown rubric field(s) {', '.join(unknown)}; the fields "
                          f"are {', '.join(OVERRIDE_KEYS)}")
    starter = data.get("score_what_the_starter_passes", None)
    if starter is not None and not isinstance(starter, bool):
        raise CourseError(f"{where}: score_what_the_starter_passes must be true or false")
    return {"kinds": _validate_kinds(data.get("kinds", {}), where),
            "todos": _validate_todos(data.get("todos", {}), where),
            "checks": _validate_checks(data.get("checks", {}), where),
            "score_what_the_starter_passes": starter}


def read_override_file(path: Path) -> dict:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except OSError as error:
        raise CourseError(f"cannot read the rubric {path}: {error}") from None
    except ValueError as error:
        raise CourseError(f"{path}: not valid JSON: {error}") from None
    return validate_override(data, str(path))


def _apply_overrides(check: Check, overrides: list[tuple[str, dict]]) -> tuple[bool, bool]:
    """Applies every override's check patterns that match `check`, in order: (skip it,
    its points were set explicitly)."""
    skip = explicit = False
    for _, override in overrides:
        for pattern, fields in override["checks"].items():
            if fnmatch.fnmatchcase(check.id, pattern):
                check.kind = fields.get("kind", check.kind)
                check.todos = list(fields.get("todos", check.todos))
                skip = fields.get("skip", skip)
                if "points" in fields:
                    check.points, explicit = float(fields["points"]), True
    return skip, explicit


def build_rubric(root: Path, lesson, defaults: dict, overrides: list[tuple[str, dict]],
                 starter_passes: set[str] | None = None) -> Rubric:
    """The lesson's rubric: its checks with the catalog's defaults, then each override in
    order ((source, validated override)); `starter_passes` the check ids the untouched starter
    passes (free unless an override gives them points or says to score them)."""
    kind_points = {k: float(v) for k, v in {**DEFAULT_KIND_POINTS, **defaults.get("kinds", {})}.items()}
    weights = todo_weights_of(root, lesson, {**DEFAULT_TAG_WEIGHTS, **defaults.get("todo_tags", {})})
    score_free = False
    for _, override in overrides:
        kind_points.update({k: float(v) for k, v in override["kinds"].items()})
        weights.update(override["todos"])
        if override["score_what_the_starter_passes"] is not None:
            score_free = override["score_what_the_starter_passes"]

    every_todo = [t for t, w in sorted(weights.items()) if w > 0]
    checks = base_checks(root, lesson) + [Check(tool, kind, "gpu", every_todo)
                                          for tool, kind in SANITIZERS]
    kept = []
    for check in checks:
        skip, explicit = _apply_overrides(check, overrides)
        if skip:
            continue
        if not explicit:
            factor = max((weights.get(t, 1.0) for t in check.todos), default=1.0)
            check.points = kind_points[check.kind] * factor
        if starter_passes is not None and check.id in starter_passes and not score_free:
            check.free = True
            if not explicit:
                check.points = 0.0
                check.note = "the untouched starter passes it: not scored"
        kept.append(check)
    sources = ["defaults (lessons/catalog.json)"] + [source for source, _ in overrides]
    return Rubric(lesson.name, kept, kind_points, weights, sources)
