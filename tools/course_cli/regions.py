"""Exercise regions: the markers of a solution file and the one reader of them.

In a solution file an exercise region looks like this:

        // TODO 1: copy this thread's share of the batch into shared memory.
        // BEGIN SOLUTION
        ... the code the student writes ...
        // STARTER: return {};
        // END SOLUTION

Everything that reads regions reads them here: the starter generator (starter.py), the
graders (tools/graders/: a region left as its starter, or changed by one operator), and the
lints (lint_answers, files_per_exercise and, through files_per_exercise, lint_contracts).
It lives in course_cli because the course's command-line tool must work in a student's
handout, where the graders and the lints are not shipped; it imports nothing of the course.
"""

import re

BEGIN_RE = re.compile(r"^\s*// BEGIN SOLUTION\s*$")
END_RE = re.compile(r"^\s*// END SOLUTION\s*$")
STARTER_RE = re.compile(r"^(\s*)// STARTER:(?: (.*))?$")
# A comment that mentions a marker without being exactly one: most likely a typo.
LOOKS_LIKE_MARKER_RE = re.compile(r"//\s*(BEGIN SOLUTION|END SOLUTION|STARTER:)")
# A TODO comment, with its number: the TODO a region below it belongs to.
TODO_NUMBER_RE = re.compile(r"//\s*TODO (\d+)")


def regions(text: str) -> list[dict]:
    """Every exercise region: its number (1-based), its BEGIN line, the TODO it belongs to
    (the nearest `TODO n` comment above it, "?" when there is none) and its line span:
    [{"region": 1, "todo": "3", "begin": 12, "end": 20}, ...] (BEGIN and END lines, 1-based)."""
    found = []
    todo = "?"
    begin = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = TODO_NUMBER_RE.search(line)
        if m and begin is None:
            todo = m.group(1)
        if BEGIN_RE.match(line):
            begin = number
        elif END_RE.match(line) and begin is not None:
            found.append({"region": len(found) + 1, "todo": todo, "begin": begin, "end": number})
            begin = None
    return found


def answer_lines(lines: list[str], region: dict) -> list[str]:
    """The lines of `region` (from regions()) between its BEGIN and END lines, without the
    STARTER lines: the code a student writes. `lines` is the file's text split in lines."""
    body = lines[region["begin"]:region["end"] - 1]
    return [line for line in body if not STARTER_RE.match(line)]
