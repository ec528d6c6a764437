"""The mutants of the course's solutions: every operator applied to every exercise region of
every solution file of the lessons asked for, each mutant with its stable id,

    LNN/file.cu/rR+D/operator/key      e.g.  L01/register_staged.cu/r2+1/sync-weaken/__syncthreads()->__syncwarp()

(lesson, file, region R, line D counted from the region's BEGIN SOLUTION line, operator, the
edit), so an id survives edits elsewhere in the file. A mutant identical to the solution or
to an earlier mutant is dropped. Also: choosing lessons (`00-08`, `03,10-15`) and shards.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from pathlib import Path

from course_cli.catalog import load_catalog
from course_cli.regions import regions

from . import ROOT
from .code_reading import compact, mask
from .operators import OPERATOR_FUNCTIONS, Context, Region


@dataclass
class Mutant:
    lesson: str        # "03_cuda_barrier"
    file: str          # "cuda_barrier.cu"
    region: int
    todo: str
    operator: str
    line: int          # the first changed line of the solution file
    rel_line: int      # the same, counted from the region's BEGIN SOLUTION line
    key: str
    id: str
    description: str   # "`before` -> `after`" on the changed lines
    text: str = field(repr=False)

    def record(self) -> dict:
        return {"id": self.id, "lesson": self.lesson, "file": self.file, "region": self.region,
                "todo": self.todo, "operator": self.operator, "line": self.line,
                "description": self.description}



def file_regions(text: str) -> list[Region]:
    starts = [0]
    for i, c in enumerate(text):
        if c == "\n":
            starts.append(i + 1)
    out = []
    for r in regions(text):
        out.append(Region(r["region"], r["todo"], r["begin"], r["end"], starts[r["begin"]],
                          starts[r["end"] - 1]))
    return out


def stream_declarations(text: str, headers: list[str]) -> tuple[set[str], set[str], set[str]]:
    """(names the solution declares cudaStream_t, members and methods the lesson's headers
    declare cudaStream_t, names of StreamSets)."""
    decl = r"\bcudaStream_t\s+(?:const\s+)?[&*]?\s*([A-Za-z_]\w*)"
    names = set(re.findall(decl, mask(text)))
    members, sets = set(), set()
    for t in [text] + headers:
        t = mask(t)
        members.update(re.findall(decl, t))
        sets.update(re.findall(r"\bStreamSet\s*&?\s+([A-Za-z_]\w*)", t))
    names.discard("make_stream")  # makes a stream; never an argument
    return names, members, sets


def const_pointers(texts: list[str]) -> set[str]:
    """Names declared as pointers to const (`const std::uint32_t* __restrict__ in`,
    `const void* src`): swapping one into a destination does not compile, so such a swap is
    no mistake a student could hand in."""
    found = set()
    for t in texts:
        found.update(re.findall(
            r"\bconst\s+(?:[\w:]+(?:<[^<>;()]*>)?\s*)\*\s*(?:const\s+)?(?:__restrict__\s+)?"
            r"([A-Za-z_]\w*)", mask(t)))
    return found


def count_functions(masked: str) -> dict[str, list[int]]:
    """Functions defined in the file with an element-count parameter (named `count`) next
    to std::uint32_t pointers: {name: [argument positions]}."""
    found = {}
    for m in re.finditer(r"\b([A-Za-z_]\w*)\s*\(([^()]*)\)\s*(?:const\s*)?\{", masked):
        params = [p.strip() for p in m.group(2).split(",")]
        if not any("std::uint32_t*" in p.replace(" *", "*") for p in params):
            continue
        positions = [i for i, p in enumerate(params) if re.search(r"\bcount$", p)]
        if positions and m.group(1) not in ("if", "for", "while", "switch"):
            found[m.group(1)] = positions
    return found


def apply(text: str, edits: list[tuple[int, int, str]]) -> str:
    for a, b, new in sorted(edits, key=lambda e: e[0], reverse=True):
        text = text[:a] + new + text[b:]
    return text


def describe(text: str, edits: list[tuple[int, int, str]]) -> tuple[int, str]:
    """The first changed line, and `before` -> `after` for the changed lines."""
    lo = min(a for a, _, _ in edits)
    hi = max(b for _, b, _ in edits)
    first = text.count("\n", 0, lo) + 1
    line_start = text.rfind("\n", 0, lo) + 1
    line_end = text.find("\n", max(hi - 1, lo))
    line_end = len(text) if line_end < 0 else line_end
    before = text[line_start:line_end]
    shift = sum(len(new) - (b - a) for a, b, new in edits)
    after = apply(text, edits)[line_start:line_end + shift]
    strip = lambda s: compact("\n".join(l.split("//")[0] for l in s.splitlines()))
    b, a = strip(before), strip(after)
    return first, f"`{b}` -> `{a}`" if a else f"`{b}` removed"


def file_mutants(lesson: str, path: Path, extra_texts: list[str] | None = None,
                 text: str | None = None) -> list[Mutant]:
    text = path.read_text(encoding="utf-8") if text is None else text
    masked = mask(text)
    names, members, sets = stream_declarations(text, extra_texts or [])
    counts = count_functions(masked)
    consts = const_pointers([text] + (extra_texts or []))
    seen = {text}
    ids = set()
    out = []
    number = lesson[:2]
    for region in file_regions(text):
        ctx = Context(text, masked, region, names, members, sets, counts, consts)
        for operator in OPERATOR_FUNCTIONS:
            for cand in operator(ctx):
                if not cand.edits or not all(region.lo <= a <= b <= region.hi
                                             for a, b, _ in cand.edits):
                    continue
                new_text = apply(text, cand.edits)
                if new_text in seen:
                    continue
                seen.add(new_text)
                line, description = describe(text, cand.edits)
                rel = line - region.begin
                base = f"L{number}/{path.name}/r{region.number}+{rel}/{cand.operator}/{cand.key}"
                mid, k = base, 2
                while mid in ids:
                    mid = f"{base}#{k}"
                    k += 1
                ids.add(mid)
                out.append(Mutant(lesson, path.name, region.number, region.todo, cand.operator,
                                  line, rel, cand.key, mid, description, new_text))
    return out


def lesson_sources(lesson_name: str) -> tuple[list[Path], list[str]]:
    """A lesson's solution files and the texts of its read-only headers (for the stream
    declarations of the types the exercise uses)."""
    solutions = sorted((ROOT / "solutions" / lesson_name).glob("*.cu"))
    headers = [p.read_text(encoding="utf-8")
               for p in sorted((ROOT / "lessons" / lesson_name).rglob("*.cuh")) +
               sorted((ROOT / "lessons" / lesson_name).rglob("*.h"))]
    return solutions, headers


def all_mutants(lessons: list[str]) -> list[Mutant]:
    out = []
    for name in lessons:
        solutions, headers = lesson_sources(name)
        for path in solutions:
            out.extend(file_mutants(name, path, headers))
    return out


def ready_lessons() -> list[str]:
    return [l.name for l in load_catalog(ROOT) if l.ready]


def select_lessons(spec: str | None, lessons: list[str]) -> list[str]:
    """`00-08`, `03,10-15` or None (every ready lesson)."""
    if not spec:
        return lessons
    wanted = set()
    for part in spec.split(","):
        part = part.strip()
        if "-" in part:
            a, b = part.split("-", 1)
            wanted.update(f"{n:02d}" for n in range(int(a), int(b) + 1))
        elif part:
            wanted.add(f"{int(part):02d}")
    return [l for l in lessons if l[:2] in wanted]


def shard_of(mutant_id: str, shards: int) -> int:
    """The shard (1-based) a mutant belongs to: by a hash of its id, so that a shard's
    mutants stay its own when other lessons change."""
    return int(hashlib.sha256(mutant_id.encode()).hexdigest()[:8], 16) % shards + 1


def parse_shard(spec: str | None) -> tuple[int, int]:
    if not spec:
        return 1, 1
    i, n = (int(x) for x in spec.split("/"))
    if not 1 <= i <= n:
        raise SystemExit(f"op_mutation.py: --shard {spec}: want I/N with 1 <= I <= N")
    return i, n


def selected(args) -> list[Mutant]:
    lessons = select_lessons(args.lessons, ready_lessons())
    mutants = all_mutants(lessons)
    i, n = parse_shard(getattr(args, "shard", None))
    if n > 1:
        mutants = [m for m in mutants if shard_of(m.id, n) == i]
    if getattr(args, "operator", None):
        mutants = [m for m in mutants if m.operator in args.operator]
    return mutants


def unified_diff(m: Mutant, original: str) -> str:
    import difflib
    return "".join(difflib.unified_diff(original.splitlines(True), m.text.splitlines(True),
                                        f"solutions/{m.lesson}/{m.file}", m.id, n=1))
