"""A lesson's exercise, TODO by TODO: the contracts, their Chinese text and the hint ladders.

The English contract of TODO K is its comment in the solution file (the single source of
truth):

        // TODO 3: afterwards every thread's copies of the batch have arrived
        //         in shared memory, and ...
        // BEGIN SOLUTION

that is the line `<indent>// TODO K: text` (or `// TODO K (worked example): ...`,
`// TODO K (bug hunt): ...`) and the comment lines right after it whose `//` is followed by
at least two spaces. Everything else of the exercise lives in lessons/NN_slug/given/hints.json:

    {"todos": {"3": {"contract_zh": ["one string per occurrence of TODO 3, lines split by \\n"],
                     "hints": ["a question or concept", "where to read", "pseudo-code", "code"],
                     "hints_zh": [...the same rungs in Chinese...]}}}

A lesson without a hints.json keeps the older lesson-wide hints of lessons/catalog.json.
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from .errors import CourseError

HINTS_FILE = Path("given") / "hints.json"
TODO_RE = re.compile(r"^(\s*)// TODO (\d+)([^:]*): (.*)$")
CONTINUATION_RE = re.compile(r"^(\s*)//  +(\S.*)$")
MIN_RUNGS, MAX_RUNGS = 3, 4


@dataclass
class TodoBlock:
    """One `// TODO K:` comment: where it stands and what it says."""

    number: int
    first: int  # index of its first line in the file's lines
    last: int  # index of its last line
    indent: str
    tag: str  # between the number and the colon: " (bug hunt)", " (worked example)" or ""
    text: list[str]  # the contract's lines, without the comment prefix


@dataclass
class Ladder:
    """The hint ladder and the Chinese contract of one TODO."""

    hints: list[str]
    hints_zh: list[str]
    contract_zh: list[str] = field(default_factory=list)
    # False in a handout whose ladders lost their last rung, the code (./course handout
    # --hints no-code): the last rung left is not code.
    ends_in_code: bool = True


def todo_blocks(text: str) -> list[TodoBlock]:
    """Every TODO comment of a source text, in file order."""
    lines = text.splitlines()
    blocks = []
    i = 0
    while i < len(lines):
        match = TODO_RE.match(lines[i])
        if not match:
            i += 1
            continue
        indent, number, tag, first_text = match.groups()
        body = [first_text]
        j = i + 1
        while j < len(lines):
            more = CONTINUATION_RE.match(lines[j])
            if not more or more.group(1) != indent:
                break
            body.append(more.group(2))
            j += 1
        blocks.append(TodoBlock(int(number), i, j - 1, indent, tag or "", body))
        i = j
    return blocks


def load_ladders(root: Path, lesson) -> dict[int, Ladder] | None:
    """The lesson's ladders by TODO number, or None when the lesson has no hints.json."""
    return _load(root, lesson.name)


def load_ladders_of_solution(root: Path, solution: Path) -> dict[int, Ladder] | None:
    """The ladders of the lesson whose solution file is `solution`."""
    return _load(root, solution.parent.name)


def _load(root: Path, lesson_name: str) -> dict[int, Ladder] | None:
    path = root / "lessons" / lesson_name / HINTS_FILE
    if not path.is_file():
        return None
    label = f"lessons/{lesson_name}/{HINTS_FILE.as_posix()}"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as error:
        raise CourseError(f"{label}: not valid JSON: {error}") from error
    todos = data.get("todos") if isinstance(data, dict) else None
    if not isinstance(todos, dict):
        raise CourseError(f'{label}: expected {{"todos": {{"1": {{...}}, ...}}}}')
    # A handout's ladders (./course handout --hints): one rung fewer (no code), or none.
    policy = data.get("handout_hints", "full")
    rungs = {"full": (MIN_RUNGS, MAX_RUNGS), "no-code": (MIN_RUNGS - 1, MAX_RUNGS - 1),
             "off": (0, 0)}.get(policy)
    if rungs is None:
        raise CourseError(f"{label}: handout_hints must be full, no-code or off")
    ladders = {}
    for key, entry in todos.items():
        if not key.isdigit() or not isinstance(entry, dict):
            raise CourseError(f"{label}: TODO {key!r}: expected a TODO number and an object")
        ladders[int(key)] = _ladder(label, key, entry, rungs)
        ladders[int(key)].ends_in_code = policy == "full"
    return ladders


def _ladder(label: str, key: str, entry: dict,
            rungs: tuple[int, int] = (MIN_RUNGS, MAX_RUNGS)) -> Ladder:
    def strings(name: str) -> list[str]:
        value = entry.get(name, [])
        if not isinstance(value, list) or not all(isinstance(s, str) and s.strip() for s in value):
            raise CourseError(f"{label}: TODO {key}: {name} must be a list of non-empty strings")
        return value

    ladder = Ladder(strings("hints"), strings("hints_zh"), strings("contract_zh"))
    if not rungs[0] <= len(ladder.hints) <= rungs[1]:
        raise CourseError(f"{label}: TODO {key} has {len(ladder.hints)} hint rungs; "
                          f"a ladder has {rungs[0]} to {rungs[1]}")
    if len(ladder.hints_zh) != len(ladder.hints):
        raise CourseError(f"{label}: TODO {key} has {len(ladder.hints)} rungs in English and "
                          f"{len(ladder.hints_zh)} in Chinese")
    return ladder


def check_ladders(solution_text: str, solution_label: str, ladders: dict[int, Ladder]) -> list[str]:
    """What is missing or left over between a solution's TODOs and its ladders."""
    problems = []
    occurrences: dict[int, int] = {}
    for block in todo_blocks(solution_text):
        occurrences[block.number] = occurrences.get(block.number, 0) + 1
    for number, count in sorted(occurrences.items()):
        ladder = ladders.get(number)
        if ladder is None:
            problems.append(f"{solution_label}: TODO {number} has no hint ladder")
        elif len(ladder.contract_zh) != count:
            problems.append(f"{solution_label}: TODO {number} occurs {count} time(s), and its "
                            f"contract_zh has {len(ladder.contract_zh)} text(s)")
    for number in sorted(set(ladders) - set(occurrences)):
        problems.append(f"{solution_label}: the ladder of TODO {number} has no TODO {number}")
    return problems


def translate_todos(text: str, ladders: dict[int, Ladder]) -> str:
    """`text` with each TODO comment's contract in Chinese (the code and other comments as
    they are). Chinese lines are kept as written: they are not wrapped at an English width."""
    lines = text.splitlines(keepends=True)
    seen: dict[int, int] = {}
    out = []
    position = 0
    for block in todo_blocks(text):
        out += lines[position:block.first]
        position = block.last + 1
        index = seen.get(block.number, 0)
        seen[block.number] = index + 1
        ladder = ladders.get(block.number)
        if ladder is None or index >= len(ladder.contract_zh):
            out += lines[block.first:position]
            continue
        head = f"{block.indent}// TODO {block.number}{block.tag}: "
        continuation = f"{block.indent}//" + " " * (len(head) - len(block.indent) - 2)
        for k, line in enumerate(ladder.contract_zh[index].split("\n")):
            out.append((head if k == 0 else continuation) + line.strip() + "\n")
    out += lines[position:]
    return "".join(out)


def _segments(text: str) -> list[tuple[int, list[str]]]:
    """(TODO number, the lines from the end of its comment to the next TODO comment)."""
    lines = text.splitlines()
    blocks = todo_blocks(text)
    ends = [b.first for b in blocks[1:]] + [len(lines)]
    return [(b.number, [l.rstrip() for l in lines[b.last + 1:end]]) for b, end in zip(blocks, ends)]


def unfinished_todos(starter_text: str, student_text: str) -> list[int]:
    """The TODOs whose code in the student's file is still the starter's: after the TODO's
    comment the same lines, up to the next TODO comment, as in a fresh starter. A TODO the
    student's file no longer has counts as unfinished too."""
    mine: dict[int, list[list[str]]] = {}
    for number, lines in _segments(student_text):
        mine.setdefault(number, []).append(lines)
    unfinished = set()
    seen: dict[int, int] = {}
    for number, lines in _segments(starter_text):
        index = seen.get(number, 0)
        seen[number] = index + 1
        theirs = mine.get(number, [])
        if index >= len(theirs) or theirs[index] == lines:
            unfinished.add(number)
    return sorted(unfinished)
