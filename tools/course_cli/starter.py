"""The starter generator: solutions/NN_slug/X.cu -> lessons/NN_slug/X.cu.

In a solution file an exercise region looks like this:

        // TODO 1: copy this thread's share of the batch into shared memory.
        // BEGIN SOLUTION
        ... the code the student writes ...
        // STARTER: return {};
        // END SOLUTION

The starter keeps every line outside a region, drops the BEGIN/END lines and
everything between them, except `<indent>// STARTER: <code>` lines, which become
`<indent><code>` (so the starter still compiles). docs/pages/authoring.md has the rules.
"""

import re
from pathlib import Path

from .catalog import CATALOG_INC_PATH, Lesson, catalog_inc_text
from .errors import CourseError

BEGIN_RE = re.compile(r"^\s*// BEGIN SOLUTION\s*$")
END_RE = re.compile(r"^\s*// END SOLUTION\s*$")
STARTER_RE = re.compile(r"^(\s*)// STARTER:(?: (.*))?$")
# A comment that mentions a marker without being exactly one: most likely a typo.
LOOKS_LIKE_MARKER_RE = re.compile(r"//\s*(BEGIN SOLUTION|END SOLUTION|STARTER:)")


class MarkerError(CourseError):
    """A malformed exercise region; the message names file:line."""


HEADER_PREFIX = "// Your exercise: fill in the TODOs of this file only"


def header_line(solution_label: str) -> str:
    """The first line of every generated starter: what the student edits, what not, and
    where the file comes from."""
    return (
        f"{HEADER_PREFIX}; the rest of the lesson is read-only "
        f"(generated from {solution_label} by ./course sync).\n"
    )


def strip_generated_header(starter_text: str) -> str:
    """A starter's text without the generated header line (for `diff`)."""
    first, newline, rest = starter_text.partition("\n")
    return rest if first.startswith(HEADER_PREFIX) else starter_text


def solution_without_markers(solution_text: str) -> str:
    """The solution as a student would write it: without the BEGIN/END SOLUTION lines and
    the STARTER lines, everything else as it is (for `diff`)."""
    kept = [
        line
        for line in solution_text.splitlines(keepends=True)
        if not (BEGIN_RE.match(line.rstrip("\n")) or END_RE.match(line.rstrip("\n"))
                or STARTER_RE.match(line.rstrip("\n")))
    ]
    return "".join(kept)


def generate_starter(solution_text: str, solution_label: str) -> str:
    """The starter text made from a solution's text.

    `solution_label` names the solution in the header line and in error messages,
    e.g. "solutions/01_register_staged/register_staged.cu".
    """
    output = [header_line(solution_label)]
    begin_line = None  # line number of the open region's BEGIN, None outside regions
    for number, code in enumerate(solution_text.splitlines(), start=1):
        where = f"{solution_label}:{number}"

        if BEGIN_RE.match(code):
            if begin_line is not None:
                raise MarkerError(
                    f"{where}: nested BEGIN SOLUTION (the region opened at line {begin_line} "
                    "has no END SOLUTION yet)"
                )
            begin_line = number
        elif END_RE.match(code):
            if begin_line is None:
                raise MarkerError(f"{where}: END SOLUTION without a BEGIN SOLUTION")
            begin_line = None
        elif begin_line is not None:
            starter = STARTER_RE.match(code)
            if starter:
                indent, starter_code = starter.group(1), starter.group(2) or ""
                output.append((indent + starter_code).rstrip() + "\n")
            elif LOOKS_LIKE_MARKER_RE.search(code):
                raise MarkerError(f"{where}: malformed marker: {code.strip()}")
        else:
            if STARTER_RE.match(code):
                raise MarkerError(f"{where}: STARTER line outside a BEGIN/END SOLUTION region")
            if LOOKS_LIKE_MARKER_RE.search(code):
                raise MarkerError(f"{where}: malformed marker: {code.strip()}")
            output.append(code + "\n")

    if begin_line is not None:
        raise MarkerError(
            f"{solution_label}:{begin_line}: BEGIN SOLUTION without an END SOLUTION"
        )
    return "".join(output)


def starter_pairs(root: Path, lesson: Lesson) -> list[tuple[Path, Path]]:
    """(solution file, starter file) for every solutions/NN_slug/*.cu of a lesson."""
    solutions = sorted(lesson.solution_dir(root).glob("*.cu"))
    if not solutions:
        raise CourseError(
            f"lesson {lesson.number} is marked ready but "
            f"solutions/{lesson.name}/ has no .cu file to generate the starter from"
        )
    return [(solution, lesson.lesson_dir(root) / solution.name) for solution in solutions]


def expected_starter(root: Path, solution: Path) -> str:
    """The generated starter for one solution file."""
    label = solution.relative_to(root).as_posix()
    return generate_starter(solution.read_text(encoding="utf-8"), label)


def expected_files(root: Path, lessons: list[Lesson]) -> dict[Path, str]:
    """Every file `./course sync` generates, with the text it should have now.

    The starters of the ready lessons, then common/src/lesson_catalog.inc.
    """
    files = {}
    for lesson in lessons:
        if lesson.ready:
            for solution, starter in starter_pairs(root, lesson):
                files[starter] = expected_starter(root, solution)
    files[root / CATALOG_INC_PATH] = catalog_inc_text(lessons)
    return files


def read_or_none(path: Path) -> str | None:
    """A file's text, or None when it does not exist."""
    try:
        return path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
