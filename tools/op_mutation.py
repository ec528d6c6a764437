#!/usr/bin/env python3
"""Operator mutation: is the grader judged on wrong answers, not only on missing ones?

    tools/op_mutation.py list   [--lessons 00-15] [--shard I/N] [--operator OP] [--diff]
    tools/op_mutation.py counts [--lessons 00-17]
    tools/op_mutation.py show ID
    tools/op_mutation.py run    --results FILE.jsonl [--lessons 00-15] [--shard I/N]
                                [--preset quick | --build-dir DIR] [--jobs N] [--gpu-jobs 6]
                                [--time-limit 500] [--no-build]
    tools/op_mutation.py report --results FILE.jsonl... [--out DIR] [--gpu NAME]
    tools/op_mutation.py check-equivalents [--results-dir docs/results]

tools/mutation.py replaces a whole exercise region by its starter text: that only shows
that a student who does nothing fails. This tool makes *operator mutants*: the solution
with ONE thing changed inside one exercise region, the way students get things wrong:

  wait-count   a wait allows one more group or batch in flight (wait_prior<N+1>,
               __pipeline_wait_prior, wait_group, the bulk wait_group's N, cg::wait ->
               cg::wait_prior<1>)
  count        an arrival count, expected count or expect_tx byte count off by one
               (mbarrier_init, init, barrier_arrive_tx, expect_tx: +-1 arrival, +-16 bytes or
               a term dropped); .noinc added to or dropped from a cp.async.mbarrier.arrive
  stage-count  a stage count off by one where it bounds a loop or a refill (k + Stages,
               tile + Stages - 1, k >= Stages)
  stage-index  a stage (buffer or barrier) index off by one: X % Stages -> (X + 1) % Stages
  boundary     a loop or branch bound on a count or size off by one (< <-> <=, > <-> >=)
  phase        a parity or phase expression wrong: == 1 <-> == 0, & 1 or % 2 dropped, ^ 1
               added or dropped, a phase index off by one (phase_parity, batch_parity)
  sync-remove  one synchronisation statement removed: block/warp syncs, waits, arrives,
               commits, acquires and releases, fences, cudaStreamSynchronize,
               cudaStreamWaitEvent, cudaEventRecord, a PTX wrapper's asm statement
  sync-weaken  one synchronisation weakened: __syncthreads -> __syncwarp, block.sync() ->
               __syncwarp(), cluster.sync() -> __syncthreads(), arrive_and_wait() ->
               arrive(), bulk wait_group -> wait_group_read
  wait-move    a wait moved before the copy, commit or record just before it
  stream       a stream argument replaced by another stream in scope or by 0 (the legacy
               stream), at one call or at every call of the region; the wrong kind of stream
               (cudaStreamPerThread <-> cudaStreamLegacy, non-blocking -> default flags)
  swap-args    two arguments of the same kind swapped: destination and source, row and
               column coordinates, the two peers of cudaMemcpyPeerAsync, the L2 cache
               policies (evict_last <-> evict_first)
  bytes        an element count where bytes are meant or the reverse: `* sizeof(T)` or
               `/ sizeof(T)` dropped, `* sizeof(T)` added to an element count argument

Only code is mutated, never comments or strings (the PTX of an asm statement is code: the
count and swap-args operators read it). Each mutant has a stable id,

    LNN/file.cu/rR+D/operator/key      e.g.  L01/register_staged.cu/r2+1/sync-weaken/__syncthreads()->__syncwarp()

(lesson, file, region R, line D counted from the region's BEGIN SOLUTION line, operator, the
edit), so an id survives edits elsewhere in the file. A mutant identical to the solution or
to an earlier mutant is dropped.

`run` (exit 0: all graded; 3: time ran out, run the same command again; 77: some could
not be judged for want of a GPU) grades every mutant exactly as tools/mutation.py grades a
blank region, which is how
`./course check NN` grades a student (compile; every test of the lesson; the lesson program
--quick under racecheck, synccheck and memcheck), in parallel: --jobs compilations at once,
--gpu-jobs graded at once on the GPU; a mutant's test run stops at its first failing
test, except in the lessons whose caught verdicts are confirmed with the GPU alone. It
stops at --time-limit seconds and appends every verdict to the results file as one JSON
line, so a second call carries on where the first stopped (a mutant already graded with
the same source hash is skipped). `report` writes
operator_mutation.md and operator_mutation.csv; it exits 1 when a survivor is not listed in
tests/mutation_equivalents.json with the reason it cannot be told from the solution.
`check-equivalents` is the authoring test that keeps that list honest.
"""
from __future__ import annotations

import argparse
import csv
import datetime
import hashlib
import io
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TOOLS = Path(__file__).resolve().parent
ROOT = TOOLS.parent
sys.path.insert(0, str(TOOLS))
import mutation  # noqa: E402
from course_cli.catalog import load_catalog  # noqa: E402

EQUIVALENTS = ROOT / "tests" / "mutation_equivalents.json"
RESULTS_NAME = "operator_mutation"  # docs/results/<gpu>/operator_mutation.{md,csv}
OPERATORS = ("wait-count", "count", "stage-count", "stage-index", "boundary", "phase",
             "sync-remove", "sync-weaken", "wait-move", "stream", "swap-args", "bytes")

# ============================================================================ reading code


def mask(text: str) -> str:
    """`text` with comments, the inside of string and character literals, and preprocessor
    lines blanked (same length, newlines kept), so that patterns only ever match code."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
            continue
        if line_start and c in " \t":
            i += 1
            continue
        if line_start and c == "#":  # a preprocessor line (with its continuations)
            while i < n and text[i] != "\n":
                if text[i] == "\\" and i + 1 < n and text[i + 1] == "\n":
                    out[i] = " "
                    i += 2
                    continue
                out[i] = " "
                i += 1
            continue
        line_start = False
        if text.startswith("//", i):
            while i < n and text[i] != "\n":
                out[i] = " "
                i += 1
            continue
        if text.startswith("/*", i):
            end = text.find("*/", i + 2)
            end = n if end < 0 else end + 2
            for j in range(i, end):
                if text[j] != "\n":
                    out[j] = " "
            i = end
            continue
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c and text[j] != "\n":
                j += 2 if text[j] == "\\" else 1
            for k in range(i + 1, min(j, n)):
                out[k] = " "
            i = j + 1
            continue
        i += 1
    return "".join(out)


CLOSING = {"(": ")", "[": "]", "{": "}"}


def match_close(masked: str, open_index: int) -> int:
    """Index of the bracket closing the one at `open_index` (-1 when unbalanced)."""
    depth = 0
    for i in range(open_index, len(masked)):
        c = masked[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_args(masked: str, open_index: int, close_index: int) -> list[tuple[int, int]]:
    """The (start, end) spans of the comma-separated arguments between two brackets,
    whitespace trimmed."""
    spans = []
    depth = 0
    start = open_index + 1
    for i in range(open_index + 1, close_index + 1):
        c = masked[i]
        if c in "([{":
            depth += 1
        elif c in ")]}" and i != close_index:
            depth -= 1
        if (c == "," and depth == 0) or i == close_index:
            a, b = start, i
            while a < b and masked[a].isspace():
                a += 1
            while b > a and masked[b - 1].isspace():
                b -= 1
            if b > a:
                spans.append((a, b))
            start = i + 1
    return spans


def skip_template_args(masked: str, i: int) -> int:
    """When masked[i] (after spaces) opens a template argument list, the index after its
    closing '>'; otherwise i."""
    j = i
    while j < len(masked) and masked[j] in " \t":
        j += 1
    if j >= len(masked) or masked[j] != "<":
        return i
    depth = 0
    for k in range(j, len(masked)):
        if masked[k] == "<":
            depth += 1
        elif masked[k] == ">":
            depth -= 1
            if depth == 0:
                return k + 1
        elif masked[k] in ";{}":
            return i
    return i


KEYWORDS_BEFORE_CALL = {"return", "else", "do", "case", "throw", "co_return", "sizeof", "not",
                        "and", "or", "new", "delete"}


def is_declaration(masked: str, name_start: int) -> bool:
    """Whether the name at `name_start` is being declared or defined (a type name or a
    specifier comes right before it: `void commit_group()`) rather than called."""
    j = name_start - 1
    while j >= 0 and masked[j] in " \t\n":
        j -= 1
    if j < 0:
        return False
    if masked[j] == ">":  # `std::vector<int> f(` -- or `a > f(`: only a type when a word
        return bool(re.search(r"[\w:]+<[\w:, *]*>$", masked[max(0, j - 60):j + 1]))
    if masked[j] == "*" or masked[j] == "&":
        k = j - 1
        while k >= 0 and masked[k] in " \t":
            k -= 1
        return k >= 0 and (masked[k].isalnum() or masked[k] == "_") and bool(
            re.search(r"\b(?:const|void|char|int|unsigned|bool|float|double|auto|"
                      r"[A-Z]\w*|std::\w+|cuda\w*_t|\w+_t)\s*[*&]$",
                      masked[max(0, k - 40):j + 1]))
    if masked[j].isalnum() or masked[j] == "_":
        word = re.search(r"(\w+)$", masked[:j + 1]).group(1)
        return word not in KEYWORDS_BEFORE_CALL
    return False


@dataclass
class Call:
    name_start: int
    name_end: int   # end of the name (before any template argument list)
    open: int       # index of '('
    close: int      # index of the matching ')'
    args: list[tuple[int, int]]


def find_calls(masked: str, name: str, lo: int, hi: int, method: bool | None = None) -> list[Call]:
    """Calls of `name` (a regular expression for the last name component) starting in
    [lo, hi): `ns::name<T>(...)`, `obj.name(...)`; not declarations. `method`: True only
    `obj.name(`, False only free calls, None both."""
    calls = []
    for m in re.finditer(r"(?<![\w])(" + name + r")\b", masked[lo:hi]):
        start = lo + m.start(1)
        before = masked[start - 1] if start > 0 else " "
        is_method = before == "." or (before == ">" and masked[start - 2:start] == "->")
        if method is True and not is_method:
            continue
        if method is False and is_method:
            continue
        after = skip_template_args(masked, lo + m.end(1))
        k = after
        while k < len(masked) and masked[k] in " \t\n":
            k += 1
        if k >= len(masked) or masked[k] != "(":
            continue
        qualified = start
        while qualified >= 2 and masked[qualified - 2:qualified] == "::":
            q = re.search(r"(\w+)$", masked[:qualified - 2])
            if not q:
                break
            qualified = q.start(1)
        if not is_method and is_declaration(masked, qualified):
            continue
        close = match_close(masked, k)
        if close < 0:
            continue
        calls.append(Call(start, lo + m.end(1), k, close, split_args(masked, k, close)))
    return calls


@dataclass
class Statement:
    start: int     # first character of the statement
    end: int       # one past its ';'
    header: str    # a guarding `if (...)`/`else` prefix on the statement itself, masked


def statements(masked: str, lo: int, hi: int) -> list[Statement]:
    """The simple statements (ending in ';' at bracket depth 0) in [lo, hi), in order. A
    statement guarded by a brace-less `if (...)` includes its header. Statements inside a
    lambda's braces are part of the enclosing call's statement."""
    found = []
    depth = 0
    start = lo
    i = lo
    while i < hi:
        c = masked[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            start = i + 1
        elif c == "}" and depth == 0:
            start = i + 1
        elif c == "{" or c == "}":
            pass
        elif c == ";" and depth == 0:
            a = start
            while a < i and masked[a].isspace():
                a += 1
            if a < i:
                header = ""
                m = re.match(r"(?:else\s+)?(?:if\s*(?:constexpr\s*)?\(|else\b)", masked[a:i])
                if m:
                    if masked[a:i].lstrip().startswith("else") and not re.match(
                            r"else\s+if", masked[a:i]):
                        header = "else"
                    else:
                        paren = masked.index("(", a)
                        close = match_close(masked, paren)
                        header = masked[a:close + 1] if 0 < close < i else ""
                found.append(Statement(a, i + 1, header))
            start = i + 1
        i += 1
    return found


def top_level_assignment(masked: str) -> bool:
    """Whether `masked` (one statement) assigns or declares at bracket depth 0."""
    depth = 0
    for i, c in enumerate(masked):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            prev = masked[i - 1] if i > 0 else ""
            nxt = masked[i + 1] if i + 1 < len(masked) else ""
            if prev not in "=!<>" and nxt != "=":
                return True
    return False


def compact(text: str) -> str:
    """Code with its whitespace collapsed, for ids and descriptions."""
    return re.sub(r"\s+", " ", text).strip().replace("( ", "(").replace(" )", ")")


def key_text(text: str, limit: int = 48) -> str:
    """A short key for an id: no spaces, at most `limit` characters."""
    text = re.sub(r"\s+", "", text)
    return text if len(text) <= limit else text[:limit - 1] + "~"


# ============================================================================ mutants


@dataclass
class Region:
    number: int
    todo: str
    begin: int    # line of BEGIN SOLUTION (1-based)
    end: int      # line of END SOLUTION
    lo: int       # character offset of the first line after BEGIN
    hi: int       # character offset of the END line


@dataclass
class Candidate:
    operator: str
    key: str
    edits: list[tuple[int, int, str]]


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


@dataclass
class Context:
    text: str
    masked: str
    region: Region
    stream_names: set[str]       # declared cudaStream_t in the solution file
    stream_members: set[str]     # declared cudaStream_t in the lesson's headers (members)
    stream_sets: set[str]
    count_functions: dict[str, list[int]]   # file-local function -> its element-count params
    const_pointers: set[str]     # names declared as pointers to const (never a destination)


# ---- helpers shared by the operators


def plus_one(expr: str) -> str:
    """`expr` plus one, written as a student would: 1 -> 2, `Stages - 2` -> `Stages - 1`,
    `Stages - 1` -> `Stages`, anything else -> `expr + 1` (in parentheses when it has an
    operator that binds less tightly than +)."""
    e = expr.strip()
    if re.fullmatch(r"\d+", e):
        return str(int(e) + 1)
    m = re.fullmatch(r"(.*\S)\s*-\s*(\d+)", e)
    if m and additive(m.group(1)):
        k = int(m.group(2)) - 1
        return m.group(1) if k == 0 else f"{m.group(1)} - {k}"
    return f"{e} + 1" if additive(e) else f"({e}) + 1"


def additive(expr: str) -> bool:
    """Whether `expr` has, outside brackets, no operator binding less tightly than + and -
    (so `expr + 1` means what it says)."""
    depth = 0
    for i, c in enumerate(expr):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif depth == 0 and c in "?:<>=&|^!,":
            if c == ":" and (expr[i - 1:i] == ":" or expr[i + 1:i + 2] == ":"):
                continue  # a scope operator
            if c in "<>" and re.search(r"\w$", expr[:i]) and template_bracket(expr, i):
                continue
            return False
    return True


def template_bracket(expr: str, i: int) -> bool:
    """Whether the '<' or '>' at i belongs to a template argument list (`n32_t<0>`)."""
    if expr[i] == "<":
        return ">" in expr[i:] and not re.match(r"<\s*=", expr[i:])
    return "<" in expr[:i]


def minus_one(expr: str) -> str | None:
    e = expr.strip()
    if re.fullmatch(r"\d+", e):
        return str(int(e) - 1) if int(e) >= 2 else None
    m = re.fullmatch(r"(.*\S)\s*\+\s*(\d+)", e)
    if m and additive(m.group(1)):
        k = int(m.group(2)) - 1
        return m.group(1) if k == 0 else f"{m.group(1)} + {k}"
    return f"{e} - 1" if additive(e) else f"({e}) - 1"


def calls(ctx: Context, name: str, method: bool | None = None) -> list[Call]:
    return find_calls(ctx.masked, name, ctx.region.lo, ctx.region.hi, method)


def src(ctx: Context, span: tuple[int, int]) -> str:
    return ctx.text[span[0]:span[1]]


def removal_edit(ctx: Context, start: int, end: int) -> tuple[int, int, str]:
    """An edit removing [start, end): whole lines when the span fills its lines (a comment
    after it goes too), else just the span."""
    line_start = ctx.text.rfind("\n", 0, start) + 1
    line_end = ctx.text.find("\n", end)
    line_end = len(ctx.text) if line_end < 0 else line_end
    if ctx.masked[line_start:start].strip() == "" and ctx.masked[end:line_end].strip() == "":
        return (line_start, min(line_end + 1, len(ctx.text)), "")
    return (start, end, "")


# ---- the operators: each yields Candidates for one region


WAIT_CALLS = r"wait_prior|__pipeline_wait_prior|wait_group|cp_async_bulk_wait_group(?:_read)?"


def op_wait_count(ctx: Context):
    m = ctx.masked
    for call in calls(ctx, r"wait_prior|wait_group"):
        # wait_prior<N>(group), wait_group<N>(): the template argument
        lt = m.find("<", call.name_end, call.open)
        if lt < 0:
            continue
        gt = m.rfind(">", lt, call.open)
        arg = ctx.text[lt + 1:gt]
        new = plus_one(arg)
        yield Candidate("wait-count", f"{ctx.text[call.name_start:call.name_end]}<{key_text(arg)}>"
                        f"->{key_text(new)}", [(lt + 1, gt, new)])
    for call in calls(ctx, r"__pipeline_wait_prior"):
        if call.args:
            arg = src(ctx, call.args[0])
            new = plus_one(arg)
            yield Candidate("wait-count", f"__pipeline_wait_prior({key_text(arg)})->{key_text(new)}",
                            [(call.args[0][0], call.args[0][1], new)])
    for call in calls(ctx, r"cp_async_bulk_wait_group(?:_read)?"):
        for n in re.finditer(r"n32_t\s*<\s*([^<>]+?)\s*>", m[call.open:call.close]):
            a, b = call.open + n.start(1), call.open + n.end(1)
            new = plus_one(ctx.text[a:b])
            yield Candidate("wait-count", f"bulk_wait_group<{ctx.text[a:b]}>->{new}",
                            [(a, b, new)])
    for call in calls(ctx, r"wait", method=False):
        qualifier = m[max(0, call.name_start - 4):call.name_start]
        if qualifier.endswith("cg::") or m[max(0, call.name_start - 20):call.name_start].endswith(
                "cooperative_groups::"):
            yield Candidate("wait-count", "cg::wait->wait_prior<1>",
                            [(call.name_start, call.name_end, "wait_prior<1>")])


def op_count(ctx: Context):
    m = ctx.masked
    for call in calls(ctx, r"mbarrier_init|init"):
        if len(call.args) != 2:
            continue
        arg = src(ctx, call.args[1])
        name = ctx.text[call.name_start:call.name_end]
        for new in (plus_one(arg), minus_one(arg)):
            if new is not None:
                yield Candidate("count", f"{name}-count:{key_text(arg)}->{key_text(new)}",
                                [(call.args[1][0], call.args[1][1], new)])
    for call in calls(ctx, r"barrier_arrive_tx"):
        if len(call.args) != 3:
            continue
        arg = src(ctx, call.args[1])
        yield Candidate("count", f"arrive_tx-count:{key_text(arg)}->{key_text(plus_one(arg))}",
                        [(call.args[1][0], call.args[1][1], plus_one(arg))])
        yield from tx_bytes(ctx, call.args[2], "arrive_tx-bytes")
    for call in calls(ctx, r"mbarrier_arrive_expect_tx|mbarrier_expect_tx"):
        if call.args:
            yield from tx_bytes(ctx, call.args[-1], "expect_tx-bytes")
    # .noinc on cp.async.mbarrier.arrive (in a PTX wrapper's asm): the arrival is counted or not
    for asm in re.finditer(r"\basm\s+(?:volatile\s*)?\(", m[ctx.region.lo:ctx.region.hi]):
        open_ = ctx.region.lo + asm.end() - 1
        close = match_close(m, open_)
        body = ctx.text[open_:close]
        for arrive in re.finditer(r"cp\.async\.mbarrier\.arrive(\.noinc)?", body):
            a = open_ + arrive.start()
            b = open_ + arrive.end()
            if arrive.group(1):
                yield Candidate("count", "cp.async.mbarrier.arrive.noinc->without.noinc",
                                [(a, b, "cp.async.mbarrier.arrive")])
            else:
                yield Candidate("count", "cp.async.mbarrier.arrive->.noinc",
                                [(a, b, "cp.async.mbarrier.arrive.noinc")])


def tx_bytes(ctx: Context, span: tuple[int, int], what: str):
    arg = src(ctx, span)
    masked = ctx.masked[span[0]:span[1]]
    terms = top_level_split(masked, "+")
    if len(terms) > 1:  # `bytes + extra` -> `bytes`: a term of the expected bytes forgotten
        for t0, t1 in terms[1:]:
            a = span[0] + t0
            while a > span[0] and ctx.masked[a - 1] in " +":
                a -= 1
            yield Candidate("count", f"{what}:drop+{key_text(arg[t0:t1])}",
                            [(a, span[0] + t1, "")])
    for sign in ("+", "-"):
        new = f"{arg} {sign} 16" if additive(arg) else f"({arg}) {sign} 16"
        yield Candidate("count", f"{what}:{key_text(arg)}{sign}16", [(span[0], span[1], new)])


def top_level_split(masked: str, op: str) -> list[tuple[int, int]]:
    """Spans of the terms of `masked` separated by the binary operator `op` at depth 0."""
    spans, depth, start = [], 0, 0
    for i, c in enumerate(masked):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == op and depth == 0 and i > 0:
            spans.append((start, i))
            start = i + 1
    spans.append((start, len(masked)))
    out = []
    for a, b in spans:
        while a < b and masked[a].isspace():
            a += 1
        while b > a and masked[b - 1].isspace():
            b -= 1
        out.append((a, b))
    return out


def inside_any(pos: int, spans: list[tuple[int, int]]) -> bool:
    return any(a <= pos < b for a, b in spans)


def op_stage(ctx: Context):
    m = ctx.masked
    lo, hi = ctx.region.lo, ctx.region.hi
    # Stage counts inside a wait (its N) belong to wait-count; inside a template argument
    # list or a parity to nothing here.
    excluded = []
    for call in calls(ctx, WAIT_CALLS + r"|wait_parity\w*|phase_parity|batch_parity|"
                      r"mbarrier_wait_parity|mbarrier_try_wait_parity"):
        excluded.append((call.name_start, call.close + 1))
    for s in re.finditer(r"\bStages\b", m[lo:hi]):
        a, b = lo + s.start(), lo + s.end()
        if inside_any(a, excluded):
            continue
        before = m[lo:a].rstrip()
        if before.endswith("%"):  # X % Stages: a stage index
            operand = re.search(r"(\((?:[^()]|\([^()]*\))*\)|[\w.]+(?:\[[^\]]*\])?)\s*%\s*$",
                                m[max(lo, a - 80):a])
            if not operand:
                continue
            oa = max(lo, a - 80) + operand.start(1)
            ob = max(lo, a - 80) + operand.end(1)
            text = ctx.text[oa:ob]
            inner = re.fullmatch(r"\(\s*(.+?)\s*-\s*1\s*\)", text)
            new = inner.group(1) if inner else f"({text} + 1)"
            yield Candidate("stage-index", f"{key_text(text)}%Stages->{key_text(new)}%Stages",
                            [(oa, ob, new)])
            continue
        if before.endswith("/"):  # k / Stages: a phase index, see op_phase
            continue
        # a stage count bounding a loop or a refill: k + Stages, tile + Stages - 1, k >= Stages
        after = re.match(r"\s*-\s*(\d+)", m[b:hi])
        if not re.search(r"(\+|>=|<=|<|>)\s*$", before) or re.search(r"[<>]\s*$", before) and \
                not re.search(r"(>=|<=|[^<>]<|[^<>]>)\s*$", before):
            continue
        if after:
            k = int(after.group(1)) - 1
            new = "Stages" if k == 0 else f"Stages - {k}"
            end = b + after.end()
            old = ctx.text[a:end]
        else:
            new, end, old = "Stages + 1", b, "Stages"
        context = re.search(r"[\w.]+\s*(?:\+|>=|<=|<|>)\s*$", m[lo:a])
        left = ctx.text[lo + context.start():a] if context else ""
        yield Candidate("stage-count", f"{key_text(left + old)}->{key_text(left + new)}",
                        [(a, end, new)])


PARITY_WAITS = r"wait_parity|wait_parity_bounded|mbarrier_wait_parity|mbarrier_try_wait_parity"


def op_phase(ctx: Context):
    m = ctx.masked
    # A region that computes its parity with phase_parity()/batch_parity() gets its phase
    # index off by one there, which is the same mistake as a parity ^ 1 at the wait.
    phase_calls = bool(calls(ctx, r"phase_parity|batch_parity"))
    for call in calls(ctx, PARITY_WAITS):
        is_method = m[call.name_start - 1] == "."
        index = 0 if is_method else 1
        if len(call.args) <= index:
            continue
        a, b = call.args[index]
        p = ctx.text[a:b]
        pm = m[a:b]
        name = ctx.text[call.name_start:call.name_end]
        if re.search(r"==\s*1\b", pm):
            e = re.search(r"==\s*1\b", pm)
            yield Candidate("phase", f"{name}:==1->==0", [(a + e.start(), a + e.end(), "== 0")])
        elif re.search(r"==\s*0\b", pm):
            e = re.search(r"==\s*0\b", pm)
            yield Candidate("phase", f"{name}:==0->==1", [(a + e.start(), a + e.end(), "== 1")])
        for drop in re.finditer(r"\s*(&\s*1|%\s*2)\b", pm):
            yield Candidate("phase", f"{name}:drop{key_text(drop.group(1))}",
                            [(a + drop.start(), a + drop.end(), "")])
        xor = re.search(r"\s*\^\s*1\s*$", pm)
        if xor:
            yield Candidate("phase", f"{name}:drop^1", [(a + xor.start(), b, "")])
        elif "==" not in pm and not phase_calls:
            if re.fullmatch(r"[\w.]+", p.strip()):
                edits = [(b, b, " ^ 1")]
            else:
                edits = [(a, a, "("), (b, b, ") ^ 1")]
            yield Candidate("phase", f"{name}:{key_text(p)}^1", edits)
    for call in calls(ctx, r"phase_parity|batch_parity"):
        if not call.args:
            continue
        a, b = call.args[0]
        p = ctx.text[a:b]
        minus = re.search(r"\s*-\s*1\s*$", ctx.masked[a:b])
        if minus:
            new = p[:minus.start()]
        else:
            new = plus_one(p)
        name = ctx.text[call.name_start:call.name_end]
        yield Candidate("phase", f"{name}({key_text(p)})->({key_text(new)})", [(a, b, new)])


SYNC_STATEMENT = re.compile(
    r"\b(__syncthreads|__syncwarp|sync|wait|wait_prior|arrive_and_wait|arrive|arrive_on_noinc|"
    r"mbarrier_arrive|mbarrier_arrive_expect_tx|async_arrive|wait_parity|consumer_wait|"
    r"consumer_release|producer_acquire|producer_commit|__pipeline_commit|__pipeline_wait_prior|"
    r"commit_group|wait_group|wait_all|commit_and_arrive_on|cp_async_bulk_commit_group|"
    r"cp_async_bulk_wait_group|cp_async_bulk_wait_group_read|fence_proxy_async|"
    r"fence_mbarrier_init|__threadfence|__threadfence_block|cudaStreamSynchronize|"
    r"cudaStreamWaitEvent|cudaEventRecord|cudaDeviceSynchronize|cudaEventSynchronize|"
    r"mbarrier_wait_parity)\b\s*(<[^;]*?>)?\s*\(")
SYNC_PTX = re.compile(r"cp\.async\.(commit_group|wait_group|wait_all|mbarrier\.arrive)|"
                      r"mbarrier\.(arrive|init|try_wait|test_wait)|fence\.|bar\.sync|barrier\.|"
                      r"cp\.async\.bulk\.(commit_group|wait_group)")


def op_sync_remove(ctx: Context):
    for st in statements(ctx.masked, ctx.region.lo, ctx.region.hi):
        body_masked = ctx.masked[st.start:st.end]
        body = body_masked[len(st.header):].strip() if st.header else body_masked.strip()
        if re.match(r"(return|throw|break|continue|case|default|goto)\b", body):
            continue
        if top_level_assignment(body):
            continue
        asm = re.match(r"asm\s+(volatile\s*)?\(", body)
        if asm:
            if not SYNC_PTX.search(ctx.text[st.start:st.end]):
                continue
            what = SYNC_PTX.search(ctx.text[st.start:st.end])
            opcode = re.match(r"[\w.:]*", ctx.text[st.start + what.start():st.end]).group(0)
            key = f"drop:asm({opcode})"
        else:
            if not SYNC_STATEMENT.search(body):
                continue
            key = "drop:" + key_text(compact(ctx.text[st.start:st.end]), 56)
        yield Candidate("sync-remove", key, [removal_edit(ctx, st.start, st.end)])


def op_sync_weaken(ctx: Context):
    m = ctx.masked
    for call in calls(ctx, r"__syncthreads", method=False):
        if not call.args:
            yield Candidate("sync-weaken", "__syncthreads()->__syncwarp()",
                            [(call.name_start, call.close + 1, "__syncwarp()")])
    for call in calls(ctx, r"sync", method=True):
        obj = re.search(r"([\w\[\]().]+)\.$", m[max(0, call.name_start - 40):call.name_start])
        owner = obj.group(1) if obj else ""
        new = "__syncthreads()" if "cluster" in owner else "__syncwarp()"
        yield Candidate("sync-weaken", f"{owner}.sync()->{new}",
                        [(call.name_start - len(owner) - 1, call.close + 1, new)])
    for call in calls(ctx, r"arrive_and_wait", method=True):
        st = statement_of(ctx, call.name_start)
        if st is None:
            continue
        text = ctx.text[st.start:st.end]
        if top_level_assignment(ctx.masked[st.start:st.end]):
            continue
        new = "(void)" + text[:call.name_start - st.start] + "arrive" + text[call.name_end - st.start:]
        yield Candidate("sync-weaken", f"{key_text(compact(text))}->arrive()",
                        [(st.start, st.end, new)])
    for call in calls(ctx, r"cp_async_bulk_wait_group"):
        yield Candidate("sync-weaken", "bulk_wait_group->wait_group_read",
                        [(call.name_end, call.name_end, "_read")])


def statement_of(ctx: Context, pos: int) -> Statement | None:
    for st in statements(ctx.masked, ctx.region.lo, ctx.region.hi):
        if st.start <= pos < st.end:
            return st
    return None


WAIT_STATEMENT = re.compile(
    r"\b(arrive_and_wait|wait|wait_prior|consumer_wait|__pipeline_wait_prior|wait_group|"
    r"wait_all|cudaStreamWaitEvent|cudaStreamSynchronize|wait_parity\w*|mbarrier_wait_parity|"
    r"cp_async_bulk_wait_group\w*)\b\s*(<[^;]*?>)?\s*\(")
COPY_STATEMENT = re.compile(
    r"\b(memcpy_async\w*|copy_\w+|cp_async\w*|__pipeline_memcpy_async|commit\w*|"
    r"__pipeline_commit|producer_commit|cudaMemcpy\w*|cudaEventRecord|issue_\w+|load_box|"
    r"multicast_load_box|push_halos)\b\s*(<[^;]*?>)?\s*\(")


def op_wait_move(ctx: Context):
    sts = statements(ctx.masked, ctx.region.lo, ctx.region.hi)
    for first, second in zip(sts, sts[1:]):
        between = ctx.masked[first.end:second.start]
        if between.strip():  # a brace between them: not in one block
            continue
        if first.header or second.header:
            continue
        a = ctx.masked[first.start:first.end]
        b = ctx.masked[second.start:second.end]
        if not WAIT_STATEMENT.search(b) or WAIT_STATEMENT.search(a):
            continue
        if not COPY_STATEMENT.search(a) or top_level_assignment(b):
            continue
        first_text = ctx.text[first.start:first.end]
        second_text = ctx.text[second.start:second.end]
        yield Candidate("wait-move", f"{key_text(compact(second_text), 32)}-before-"
                        f"{key_text(compact(first_text), 24)}",
                        [(first.start, first.end, second_text),
                         (second.start, second.end, first_text)])


def stream_expressions(ctx: Context) -> list[tuple[int, int]]:
    """Call arguments in the region that are streams: a name the solution file declares
    cudaStream_t (a parameter or variable), a member or method of the lesson's types declared
    cudaStream_t (`w.stream_b`, `ring.copy_stream(g)`), or an element of a StreamSet."""
    found = []
    alt = lambda names: "|".join(sorted(names, key=len, reverse=True)) or r"(?!x)x"
    pattern = re.compile(
        rf"^(?:(?:{alt(ctx.stream_names)})|"
        rf"(?:[A-Za-z_]\w*(?:\.|->))+(?:{alt(ctx.stream_members)})(?:\([^()]*\))?|"
        rf"(?:{alt(ctx.stream_sets)})\[[^\]]+\])$")
    for call in find_calls(ctx.masked, r"[A-Za-z_]\w*", ctx.region.lo, ctx.region.hi):
        for a, b in call.args:
            if pattern.match(ctx.masked[a:b]):
                found.append((a, b))
    return sorted(set(found))


# Calls whose stream argument only says where a timeline's events are recorded: changed
# alone it is a bookkeeping slip, not a synchronisation mistake (the `every` mutant of the
# region still changes it together with the work's own streams).
BOOKKEEPING = {"record_operation"}


def op_stream(ctx: Context):
    spans = stream_expressions(ctx)
    exprs = []
    for a, b in spans:
        e = compact(ctx.text[a:b])
        if e not in exprs:
            exprs.append(e)
    for a, b in spans:
        e = compact(ctx.text[a:b])
        if call_name(ctx, a) in BOOKKEEPING:
            continue
        for new in replacements(e, exprs):
            yield Candidate("stream", f"{key_text(e)}->{key_text(new)}@{key_text(call_name(ctx, a))}",
                            [(a, b, new)])
    for e in exprs:  # every call of the region on one other stream
        where = [(a, b) for a, b in spans if compact(ctx.text[a:b]) == e]
        if len(where) < 2:
            continue
        for new in replacements(e, exprs):
            yield Candidate("stream", f"every:{key_text(e)}->{key_text(new)}",
                            [(a, b, new) for a, b in where])


def replacements(expr: str, exprs: list[str]) -> list[str]:
    """Another stream in scope (the first other one of the region, or element 0 of the
    same stream set) and the legacy default stream."""
    out = []
    indexed = re.fullmatch(r"(\w+)\[(.+)\]", expr)
    if indexed and indexed.group(2).strip() != "0":
        out.append(f"{indexed.group(1)}[0]")
    else:
        other = next((x for x in exprs if x != expr), None)
        if other:
            out.append(other)
    out.append("0")
    return out


def call_name(ctx: Context, pos: int) -> str:
    """The name of the innermost call whose arguments hold `pos`."""
    depth = 0
    for i in range(pos - 1, ctx.region.lo - 1, -1):
        c = ctx.masked[i]
        if c in ")]}":
            depth += 1
        elif c in "([{":
            if depth == 0:
                if c != "(":
                    return ""
                m = re.search(r"([A-Za-z_]\w*)\s*(<[^()]*>)?\s*$", ctx.masked[max(0, i - 80):i])
                return m.group(1) if m else ""
            depth -= 1
    return ""


DESTINATION = re.compile(r"^(dst\w*|out\w*|shared\w*|staged\w*|buffer\w*|smem\w*|tile|vectors|"
                         r"words|results|to)$")
SOURCE = re.compile(r"^(src\w*|in|in4|batch_in|source|vectors_src|words_src|from)$")
ROW = {"row", "row0", "rows", "m0", "r"}
COLUMN = {"col", "col0", "column", "cols", "n0", "c"}
DEPTH = {"kTileK", "k0"}


def root_name(expr: str) -> str:
    """The first name of an expression, without an object prefix: `w.dst_b` -> `dst_b`,
    `in + b.first` -> `in`."""
    m = re.match(r"\s*[&*(]*\s*(?:[A-Za-z_]\w*(?:\.|->))*([A-Za-z_]\w*)", expr)
    return m.group(1) if m else ""


def coordinate_kind(expr: str) -> str:
    names = set(re.findall(r"[A-Za-z_]\w*", expr))
    kinds = {k for k, group in (("row", ROW), ("column", COLUMN), ("depth", DEPTH))
             if names & group}
    return kinds.pop() if len(kinds) == 1 else ""


STREAM_CONSTANTS = {"cudaStreamPerThread": "cudaStreamLegacy",
                    "cudaStreamLegacy": "cudaStreamPerThread",
                    "cudaStreamNonBlocking": "cudaStreamDefault"}


def op_stream_kind(ctx: Context):
    """The wrong kind of stream: the legacy default stream for the per-thread one and back,
    a blocking stream where a non-blocking one is asked for."""
    lo, hi = ctx.region.lo, ctx.region.hi
    for c in re.finditer(r"\b(" + "|".join(STREAM_CONSTANTS) + r")\b", ctx.masked[lo:hi]):
        new = STREAM_CONSTANTS[c.group(1)]
        yield Candidate("stream", f"{c.group(1)}->{new}", [(lo + c.start(), lo + c.end(), new)])


COUNTS = re.compile(r"\b(count|\w+_count|n|mine|batch|chunks|tiles|rows|cols|vectors|bytes|"
                    r"valid|size|length|\w*_per_\w+|k[A-Z]\w*)\b")


def op_boundary(ctx: Context):
    """A loop or branch bound off by one: `i < count` -> `i <= count`, `x >= n` -> `x > n`
    (comparisons with a count or a size; stage counts are stage-count's)."""
    m = ctx.masked
    lo, hi = ctx.region.lo, ctx.region.hi
    for head in re.finditer(r"\b(if|for|while)\s*(constexpr\s*)?\(", m[lo:hi]):
        if head.group(2):
            continue  # a compile-time branch chooses code, it does not bound a count
        open_ = lo + head.end() - 1
        close = match_close(m, open_)
        if close < 0:
            continue
        cond = m[open_ + 1:close]
        if head.group(1) == "for":
            parts = cond.split(";")
            if len(parts) != 3:
                continue
            start = open_ + 1 + len(parts[0]) + 1
            cond_span = (start, start + len(parts[1]))
        else:
            cond_span = (open_ + 1, close)
        text = m[cond_span[0]:cond_span[1]]
        for op in re.finditer(r"(?<![<>=!])(<=|>=|<|>)(?![<>=])", text):
            a = cond_span[0] + op.start()
            left = re.split(r"&&|\|\||[(,]", text[:op.start()])[-1]
            right = re.split(r"&&|\|\||[),?]", text[op.end():])[0]
            if "Stages" in left + right or not COUNTS.search(left + right):
                continue
            if re.fullmatch(r"\s*0u?\s*", right) or re.fullmatch(r"\s*0u?\s*", left):
                continue  # `count > 0` -> `count >= 0`: always true of a size, no bound
            if re.search(r"\w\s*$", left) and op.group(1) in "<>" and \
                    re.match(r"\s*[\w:]+\s*>", text[op.end():]):
                continue  # a template argument list, not a comparison
            new = {"<": "<=", "<=": "<", ">": ">=", ">=": ">"}[op.group(1)]
            expr = compact(left + op.group(1) + right)
            yield Candidate("boundary", f"{key_text(expr, 40)}->{new}",
                            [(a, a + len(op.group(1)), new)])


def op_swap_args(ctx: Context):
    m = ctx.masked
    for call in find_calls(m, r"[A-Za-z_]\w*", ctx.region.lo, ctx.region.hi):
        name = ctx.text[call.name_start:call.name_end]
        args = call.args
        if name == "cudaMemcpyPeerAsync" and len(args) >= 4:
            if root_name(src(ctx, args[2])) in ctx.const_pointers:
                continue  # would not compile: the source points to const
            (d0, d1), (s0, s1) = (args[0][0], args[1][1]), (args[2][0], args[3][1])
            yield Candidate("swap-args", f"cudaMemcpyPeerAsync:swap-peers@{key_text(src(ctx, args[0]))}",
                            [(d0, d1, ctx.text[s0:s1]), (s0, s1, ctx.text[d0:d1])])
            continue
        for (a0, a1), (b0, b1) in zip(args, args[1:]):
            x, y = ctx.text[a0:a1], ctx.text[b0:b1]
            pointers = DESTINATION.match(root_name(x)) and SOURCE.match(root_name(y))
            if pointers and root_name(y) in ctx.const_pointers:
                continue  # would not compile: the source points to const
            same = pointers or (
                coordinate_kind(x) and coordinate_kind(y) and
                coordinate_kind(x) != coordinate_kind(y))
            if same and "[" not in m[a0:a1] + m[b0:b1] or same and coordinate_kind(x):
                yield Candidate("swap-args", f"{name}({key_text(x, 20)},{key_text(y, 20)})",
                                [(a0, a1, y), (b0, b1, x)])
    # braced coordinate lists: {col, row}
    for brace in re.finditer(r"\{", m[ctx.region.lo:ctx.region.hi]):
        o = ctx.region.lo + brace.start()
        c = match_close(m, o)
        if c < 0 or c > ctx.region.hi or not re.search(r"=\s*$", m[max(0, o - 4):o]):
            continue
        args = split_args(m, o, c)
        if len(args) == 2:
            x, y = src(ctx, args[0]), src(ctx, args[1])
            if coordinate_kind(x) and coordinate_kind(y) and coordinate_kind(x) != coordinate_kind(y):
                yield Candidate("swap-args", f"{{{key_text(x)},{key_text(y)}}}",
                                [(args[0][0], args[0][1], y), (args[1][0], args[1][1], x)])
    # the L2 cache policies of a PTX wrapper: evict_last <-> evict_first
    policies = [(ctx.region.lo + p.start(), ctx.region.lo + p.end(), p.group(0))
                for p in re.finditer(r"L2::evict_(last|first|normal|unchanged)",
                                     ctx.text[ctx.region.lo:ctx.region.hi])
                if asm_string_at(ctx, ctx.region.lo + p.start())]
    kinds = {p[2] for p in policies}
    if "L2::evict_last" in kinds and "L2::evict_first" in kinds:
        swap = {"L2::evict_last": "L2::evict_first", "L2::evict_first": "L2::evict_last"}
        yield Candidate("swap-args", "evict_last<->evict_first",
                        [(a, b, swap[k]) for a, b, k in policies if k in swap])


def asm_string_at(ctx: Context, pos: int) -> bool:
    """Whether `pos` is inside a string literal of an asm statement."""
    if ctx.masked[pos] != " ":
        return False
    start = ctx.text.rfind("asm", ctx.region.lo, pos)
    return start >= 0 and ";" not in ctx.masked[start:pos]


def op_bytes(ctx: Context):
    m = ctx.masked
    lo, hi = ctx.region.lo, ctx.region.hi
    for s in re.finditer(r"\bsizeof\s*\(", m[lo:hi]):
        a = lo + s.start()
        close = match_close(m, lo + s.end() - 1)
        size = ctx.text[a:close + 1]
        after = re.match(r"\s*\*\s*", m[close + 1:hi])
        before = re.search(r"\s*([*/])\s*$", m[lo:a])
        if before:  # `count * sizeof(T)` -> `count`, `bytes / sizeof(V)` -> `bytes`
            start = lo + before.start()
            operand = re.search(r"([\w.]+(?:\[[^\]]*\])?|\([^()]*\))$", m[lo:start])
            left = ctx.text[lo + operand.start():start] if operand else ""
            yield Candidate("bytes", f"{key_text(left + before.group(1) + size)}->{key_text(left)}",
                            [(start, close + 1, "")])
        elif after:  # `sizeof(T) * count` -> `count`
            yield Candidate("bytes", f"drop{key_text(size)}*", [(a, close + 1 + after.end(), "")])
    # an element count where the callee counts elements, given in bytes
    for name, positions in ctx.count_functions.items():
        for call in calls(ctx, re.escape(name)):
            for index in positions:
                if index >= len(call.args):
                    continue
                a, b = call.args[index]
                arg = ctx.text[a:b]
                if "sizeof" in arg:
                    continue
                simple = re.fullmatch(r"[\w.]+", arg.strip())
                new = f"{arg} * sizeof(std::uint32_t)" if simple else \
                    f"({arg}) * sizeof(std::uint32_t)"
                yield Candidate("bytes", f"{name}({key_text(arg)}*sizeof)", [(a, b, new)])


OPERATOR_FUNCTIONS = (op_wait_count, op_count, op_stage, op_boundary, op_phase, op_sync_remove,
                      op_sync_weaken, op_wait_move, op_stream, op_stream_kind, op_swap_args,
                      op_bytes)


# ---- per-file context and the mutants of a file


def file_regions(text: str) -> list[Region]:
    starts = [0]
    for i, c in enumerate(text):
        if c == "\n":
            starts.append(i + 1)
    out = []
    for r in mutation.regions(text):
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


# ============================================================================ grading


CODE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".txt"}  # .txt: CMakeLists.txt


def lesson_code(lesson: str) -> list[Path]:
    """The lesson folder's code (its README does not change a verdict)."""
    return sorted((p for p in (ROOT / "lessons" / lesson).rglob("*")
                   if p.is_file() and p.suffix in CODE_SUFFIXES), key=lambda p: p.name)


def input_hash(m: Mutant) -> str:
    """What a verdict depends on: the mutant's text, the lesson's tests and its read-only
    files (which the other parts of the grader change)."""
    h = hashlib.sha256(m.text.encode())
    for path in sorted((ROOT / "tests").glob(f"{m.lesson}_test*.cu")) + \
            [p for p in lesson_code(m.lesson) if p.name != m.file]:
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def lesson_hash(lesson: str, solution_text: str) -> str:
    """What the solution's own verdict (the baseline) depends on."""
    h = hashlib.sha256(solution_text.encode())
    for path in sorted((ROOT / "tests").glob(f"{lesson}_test*.cu")) + lesson_code(lesson):
        h.update(path.name.encode())
        h.update(path.read_bytes())
    return h.hexdigest()[:16]


def read_results(paths: list[Path]) -> list[dict]:
    out = []
    for path in paths:
        if not path.exists():
            continue
        for line in path.read_text(encoding="utf-8").splitlines():
            line = line.strip()
            if line:
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    pass  # a line cut short when a call was stopped
    return out


class Results:
    """The JSON-lines results file, appended to from many threads."""

    def __init__(self, path: Path):
        self.path = path
        self.lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)

    def append(self, record: dict) -> None:
        with self.lock, open(self.path, "a", encoding="utf-8") as f:
            f.write(json.dumps(record, sort_keys=True) + "\n")
            f.flush()


@dataclass
class LessonRun:
    name: str
    build: mutation.MutantBuild
    test_target: str
    exe_target: str
    digest: str = ""               # what the solution's own verdict depends on
    alone: bool = False            # a caught verdict of its tests is confirmed with the GPU alone
    sanitize_args: list = field(default_factory=list)  # the lesson's expected API errors
    test_timeout: float = 300.0
    sanitize_timeout: float = 300.0
    ready: threading.Event = field(default_factory=threading.Event)
    usable: bool = True
    why: str = ""


class GpuSlots:
    """At most `size` programs on the GPU at once. `exclusive()` waits until it has the GPU
    to itself (a timing test is only believed when nothing else runs). Exclusive holds wait
    for a natural gap, until `size` of them are waiting: then no shared slot is handed out
    until they have run, one after the other (one drain of the GPU serves a batch of them)."""

    def __init__(self, size: int):
        self.size = size
        self.used = 0
        self.waiting_exclusive = 0
        self.cond = threading.Condition()

    def acquire(self, n: int = 1) -> None:
        with self.cond:
            if n == self.size:
                self.waiting_exclusive += 1
                self.cond.wait_for(lambda: self.used == 0)
                self.waiting_exclusive -= 1
            else:
                self.cond.wait_for(lambda: self.used + n <= self.size and
                                   self.waiting_exclusive < self.size)
            self.used += n

    def release(self, n: int = 1) -> None:
        with self.cond:
            self.used -= n
            self.cond.notify_all()

    class _Hold:
        def __init__(self, slots, n):
            self.slots, self.n = slots, n

        def __enter__(self):
            self.slots.acquire(self.n)

        def __exit__(self, *exc):
            self.slots.release(self.n)

    def shared(self):
        return self._Hold(self, 1)

    def exclusive(self):
        return self._Hold(self, self.size)


def gpu_description(build_dir: Path) -> str:
    probe = build_dir / "bin" / "course_gpu_probe"
    if not probe.exists():
        return ""
    try:
        out = subprocess.run([str(probe)], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError):
        return ""
    m = re.search(r"^GPU \d+: (.+?) \(compute capability", out, re.M)
    return m.group(1) if m else ""


def commit() -> str:
    """The commit graded: COURSE_COMMIT when set (tools/gpu_pass.sh sets it; a copy of the
    working tree on a GPU machine may carry a stale .git), else git's HEAD."""
    if os.environ.get("COURSE_COMMIT"):
        return os.environ["COURSE_COMMIT"]
    try:
        return subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return ""


def cache_value(build_dir: Path, name: str) -> str:
    cache = build_dir / "CMakeCache.txt"
    if not cache.exists():
        return ""
    m = re.search(rf"^{name}:[A-Z]+=(.*)$", cache.read_text(encoding="utf-8", errors="replace"),
                  re.M)
    value = m.group(1).strip() if m else ""
    return "" if value.endswith("-NOTFOUND") else value


def kernels_source(build_dir: Path, lesson: str, solution: Path) -> Path:
    unit = build_dir / "lessons" / lesson / f"{lesson}_solution_unit.cu"
    return unit if unit.exists() else solution


class Runner:
    def __init__(self, args, mutants: list[Mutant]):
        self.args = args
        self.mutants = mutants
        self.build_dir = Path(args.build_dir).resolve() if args.build_dir else \
            ROOT / "build" / args.preset
        self.results = Results(Path(args.results).resolve())
        self.work = Path(args.work_dir).resolve() if args.work_dir else \
            self.build_dir / "op_mutants"
        self.start = time.monotonic()
        self.deadline = self.start + args.time_limit
        self.cpu = threading.BoundedSemaphore(args.jobs)
        self.gpu = GpuSlots(args.gpu_jobs)
        self.lock = threading.Lock()
        self.counts: dict[str, int] = {}
        self.sanitizer = args.sanitizer or cache_value(self.build_dir, "COURSE_COMPUTE_SANITIZER") \
            or shutil.which("compute-sanitizer") or ""
        self.cuobjdump = args.cuobjdump or cache_value(self.build_dir, "COURSE_CUOBJDUMP") or \
            shutil.which("cuobjdump") or ""
        self.gpu_name = ""
        self.commit = commit()
        self.alone = set(select_lessons(args.confirm_alone, ready_lessons())) \
            if args.confirm_alone else set()

    def work_dir(self, m: Mutant) -> Path:
        """A folder of its own for each mutant: its id made a file name, and a hash of the id
        (an id cut short must not meet another)."""
        slug = re.sub(r"[^\w.+-]+", "_", m.id)[:80]
        return self.work / m.lesson / f"{slug}-{hashlib.sha1(m.id.encode()).hexdigest()[:10]}"

    def say(self, text: str) -> None:
        with self.lock:
            print(f"[{time.monotonic() - self.start:6.0f}s] {text}", flush=True)

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    # ---- setup

    def prepare(self, lessons: list[str]) -> dict[str, LessonRun]:
        if not (self.build_dir / "build.ninja").exists():
            if self.args.build_dir:
                raise SystemExit(f"op_mutation.py: {self.build_dir} is not a configured build "
                                 "tree (no build.ninja)")
            self.say(f"configuring: cmake --preset {self.args.preset}")
            subprocess.run(["cmake", "--preset", self.args.preset], cwd=ROOT, check=True,
                           stdout=subprocess.DEVNULL)
        targets = ["course_gpu_probe"]
        for name in lessons:
            targets += [f"{name}_solution_test", f"{name}_solution"]
        if not self.args.no_build:
            self.say(f"building {len(targets)} targets in {self.build_dir}")
            proc = subprocess.run(["cmake", "--build", str(self.build_dir), "-j",
                                   str(os.cpu_count() or 2), "--target", *targets],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                print(proc.stdout[-4000:] + proc.stderr[-4000:])
                raise SystemExit("op_mutation.py: the build failed (is every lesson asked for "
                                 "configured? COURSE_LESSON_FILTER may leave some out)")
        self.gpu_name = gpu_description(self.build_dir)
        self.say(f"GPU: {self.gpu_name or 'none'}; compute-sanitizer: {self.sanitizer or 'none'}")
        runs = {}
        for name in lessons:
            solution = ROOT / "solutions" / name / f"{name.split('_', 1)[1]}.cu"
            test_target, exe_target = f"{name}_solution_test", f"{name}_solution"
            build = mutation.MutantBuild(self.build_dir, solution,
                                         kernels_source(self.build_dir, name, solution),
                                         (test_target, exe_target))
            digest = lesson_hash(name, solution.read_text(encoding="utf-8"))
            runs[name] = LessonRun(name, build, test_target, exe_target, digest,
                                   alone=name in self.alone,
                                   sanitize_args=mutation.expected_api_errors(name))
        return runs

    def baseline(self, run: LessonRun, known: dict | None) -> None:
        """The solution itself, graded like a mutant: it must pass (else every mutant of the
        lesson would look caught), and its times set the lesson's timeouts. A baseline of
        the same inputs on the same GPU in the results file is reused."""
        try:
            if known:
                t_tests, t_sanitize = known["test_seconds"], known["sanitize_seconds"]
                self.say(f"{run.name}: the solution passed before (results file)")
            else:
                # A timing lesson's tests are believed only with the GPU to themselves; the
                # sanitizer runs judge correctness only and share it.
                with self.gpu.exclusive() if run.alone else self.gpu.shared():
                    t0 = time.monotonic()
                    tests = mutation.grade_tests(self.build_dir / "bin" / run.test_target,
                                                 None, self.args.max_timeout)
                    t_tests = time.monotonic() - t0
                if tests.verdict == "caught" and not run.alone:
                    with self.gpu.exclusive():  # is it the solution, or the crowd on the GPU?
                        t0 = time.monotonic()
                        tests = mutation.grade_tests(self.build_dir / "bin" / run.test_target,
                                                     None, self.args.max_timeout)
                        t_tests = time.monotonic() - t0
                if tests.verdict == "skipped":
                    run.usable, run.why = False, "skipped: no GPU"
                    return
                if tests.verdict != "passed":
                    run.usable = False
                    run.why = f"the solution itself fails its tests ({tests.detail})"
                    self.say(f"{run.name}: {run.why}: its mutants are not graded")
                    return
                t_sanitize = 0.0
                if self.sanitizer:
                    with self.gpu.shared():
                        t1 = time.monotonic()
                        sanitized = mutation.grade_sanitizers(
                            self.build_dir / "bin" / run.exe_target, self.sanitizer,
                            self.cuobjdump, self.args.max_timeout,
                            extra_args=run.sanitize_args)
                        t_sanitize = (time.monotonic() - t1) / len(mutation.SANITIZER_TOOLS)
                    if sanitized.verdict != "passed":
                        run.usable = False
                        run.why = (f"the solution itself is not clean under "
                                   f"{sanitized.step} ({sanitized.detail})")
                        self.say(f"{run.name}: {run.why}: its mutants are not graded")
                        return
                if self.sanitizer:
                    self.results.append({"kind": "baseline", "lesson": run.name,
                                         "hash": run.digest, "gpu": self.gpu_name,
                                         "test_seconds": round(t_tests, 1),
                                         "sanitize_seconds": round(t_sanitize, 1)})
            f = self.args.timeout_factor
            run.test_timeout = min(self.args.max_timeout, max(self.args.min_timeout, f * t_tests))
            run.sanitize_timeout = min(self.args.max_timeout,
                                       max(self.args.min_timeout, f * t_sanitize))
            self.say(f"{run.name}: solution passes (tests {t_tests:.1f} s, sanitizers "
                     f"{t_sanitize:.1f} s each): timeouts {run.test_timeout:.0f} s / "
                     f"{run.sanitize_timeout:.0f} s")
        except Exception as error:  # no verdict of this lesson can be trusted without it
            run.usable = False
            run.why = f"its baseline failed to run: {type(error).__name__}: {error}"
            self.say(f"{run.name}: {run.why}")
        finally:
            run.ready.set()

    # ---- one mutant

    def grade(self, m: Mutant, run: LessonRun, digest: str) -> dict | None:
        """The mutant's verdict, or None when this call's time limit left no time for it."""
        record = dict(m.record(), hash=digest, gpu=self.gpu_name, commit=self.commit)
        work = self.work_dir(m)
        timings = {}
        try:
            with self.cpu:
                if self.remaining() < 60:
                    return None
                t = time.monotonic()
                compiled, log, obj = run.build.compile(m.text, work)
                timings["compile"] = round(time.monotonic() - t, 1)
                if not compiled:
                    first = next((l for l in log.splitlines() if "error" in l), log[-200:])
                    return dict(record, verdict="caught", step="compile",
                                detail=compact(first)[:200], seconds=timings)
                t = time.monotonic()
                try:
                    programs = run.build.link(obj, work)
                except RuntimeError as error:
                    return dict(record, verdict="error", step="link", detail=str(error)[:300],
                                seconds=timings)
                timings["link"] = round(time.monotonic() - t, 1)
            run.ready.wait()
            if not run.usable and "no GPU" not in run.why:
                return dict(record, verdict="error", step="baseline", detail=run.why,
                            seconds=timings)
            # Without a GPU the tests still run: a failing CPU test (a PTX or SASS check)
            # catches a mutant anywhere; the rest is "skipped: no GPU".
            with self.gpu.shared():
                if self.remaining() < min(run.test_timeout, 60):
                    return None
                t = time.monotonic()
                # The first failing test is the verdict (fail fast), except where a failure
                # may be the crowd's doing and is confirmed alone below: there every test must
                # have run, or a mutant whose first failure was only the crowd's would skip
                # the tests after it.
                tests = mutation.grade_tests(programs[run.test_target], obj,
                                             min(run.test_timeout, self.remaining()),
                                             fail_fast=not run.alone)
                timings["tests"] = round(time.monotonic() - t, 1)
            if tests.verdict == "caught" and run.alone and tests.failed:
                # A test of overlap or bandwidth may fail only because other mutants share
                # the GPU: the failing tests again, with the GPU to itself. (A hang is not
                # confirmed: the timeout is several times the solution's own time.)
                with self.gpu.exclusive():
                    if self.remaining() < min(run.test_timeout, 60):
                        return None
                    t = time.monotonic()
                    tests = mutation.grade_tests(programs[run.test_target], obj,
                                                 min(run.test_timeout, self.remaining()),
                                                 tests.failed)
                    timings["tests alone"] = round(time.monotonic() - t, 1)
            if tests.verdict == "caught" and "time out" in tests.detail and self.remaining() <= 1:
                return None  # cut by this call's time limit, not by its own hang
            if tests.verdict in ("caught", "skipped"):
                return dict(record, verdict=tests.verdict, step="tests",
                            detail=tests.detail[:300], seconds=timings)
            if not self.sanitizer:
                return dict(record, verdict="error", step="sanitizers",
                            detail="no compute-sanitizer to run", seconds=timings)
            t = time.monotonic()
            for tool in mutation.SANITIZER_TOOLS:
                with self.gpu.shared():
                    if self.remaining() < min(run.sanitize_timeout, 60):
                        return None
                    checked = mutation.grade_sanitizers(programs[run.exe_target], self.sanitizer,
                                                        self.cuobjdump,
                                                        min(run.sanitize_timeout, self.remaining()),
                                                        (tool,),
                                                        run.sanitize_args)
                if checked.verdict == "caught" and "time" in checked.detail:
                    if self.remaining() <= 1:
                        return None
                    # A sanitizer slows a program down many times, and more on a crowded GPU
                    # and CPU: a timeout there is believed only when it repeats with the GPU
                    # to itself and twice the time.
                    with self.gpu.exclusive():
                        timeout = min(2 * run.sanitize_timeout, self.args.max_timeout)
                        if self.remaining() < timeout:
                            return None
                        checked = mutation.grade_sanitizers(
                            programs[run.exe_target], self.sanitizer, self.cuobjdump, timeout,
                            (tool,), run.sanitize_args)
                if checked.verdict != "passed":
                    timings["sanitizers"] = round(time.monotonic() - t, 1)
                    return dict(record, verdict=checked.verdict, step=checked.step,
                                detail=checked.detail[:300], seconds=timings)
            timings["sanitizers"] = round(time.monotonic() - t, 1)
            return dict(record, verdict="survived", step="", detail="every test passes and "
                        "racecheck, synccheck and memcheck are clean", seconds=timings)
        finally:
            if not self.args.keep:
                shutil.rmtree(work, ignore_errors=True)

    def one(self, m: Mutant, run: LessonRun, digest: str) -> None:
        try:
            record = self.grade(m, run, digest)
        except Exception as error:  # one mutant's trouble must not stop the others
            record = dict(m.record(), hash=digest, verdict="error", step="runner",
                          detail=f"{type(error).__name__}: {error}"[:300])
        if record is None:
            with self.lock:
                self.counts["left for the next call"] = \
                    self.counts.get("left for the next call", 0) + 1
            return
        record["time"] = datetime.datetime.now(datetime.timezone.utc).strftime(
            "%Y-%m-%dT%H:%M:%SZ")
        self.results.append(record)
        with self.lock:
            self.counts[record["verdict"]] = self.counts.get(record["verdict"], 0) + 1
        where = record["step"] + (f": {record['detail'][:90]}" if record.get("detail") else "")
        self.say(f"{record['verdict'].upper():8s} {m.id}  [{where}]")

    def compile_only(self, todo: list[Mutant], digests: dict[str, str]) -> int:
        """Only compiles the mutants (any machine with the toolkit; the build tree needs to be
        configured, not built): a compile error is a verdict anywhere, and a mutant that
        does not compile is worth a look (a student could not hand it in)."""
        if not (self.build_dir / "compile_commands.json").exists():
            raise SystemExit(f"op_mutation.py: configure {self.build_dir} first")
        builds = {}
        for name in sorted({m.lesson for m in todo}):
            solution = ROOT / "solutions" / name / f"{name.split('_', 1)[1]}.cu"
            builds[name] = mutation.MutantBuild(self.build_dir, solution,
                                                kernels_source(self.build_dir, name, solution), ())

        def one(m: Mutant) -> None:
            work = self.work_dir(m)
            with self.cpu:
                if self.remaining() < 0:
                    return
                t = time.monotonic()
                compiled, log, _ = builds[m.lesson].compile(m.text, work)
                seconds = {"compile": round(time.monotonic() - t, 1)}
            shutil.rmtree(work, ignore_errors=True)
            if compiled:
                record = dict(m.record(), hash=digests[m.id], verdict="compiled", step="compile",
                              detail="", seconds=seconds)
            else:
                first = next((l for l in log.splitlines() if "error" in l), log[-200:])
                record = dict(m.record(), hash=digests[m.id], verdict="caught", step="compile",
                              detail=compact(first)[:200], seconds=seconds, commit=self.commit)
            self.results.append(record)
            self.say(f"{record['verdict'].upper():8s} {m.id}  {record['detail'][:100]}")

        with ThreadPoolExecutor(max_workers=self.args.jobs) as pool:
            list(pool.map(one, todo))
        return 0

    def main(self) -> int:
        previous = read_results([self.results.path])
        final = ("caught", "survived", "compiled") if self.args.compile_only else \
            ("caught", "survived")
        done = {r["id"]: r.get("hash") for r in previous
                if r.get("id") and r.get("verdict") in final}
        digests = {m.id: input_hash(m) for m in self.mutants}
        todo = [m for m in self.mutants if done.get(m.id) != digests[m.id]]
        self.say(f"{len(self.mutants)} mutants selected, {len(self.mutants) - len(todo)} already "
                 f"graded in {self.results.path}, {len(todo)} to grade; --jobs {self.args.jobs} "
                 f"--gpu-jobs {self.args.gpu_jobs}, time limit {self.args.time_limit:.0f} s")
        if not todo:
            return 0
        lessons = sorted({m.lesson for m in todo})
        if self.args.compile_only:
            return self.compile_only(todo, digests)
        runs = self.prepare(lessons)
        baselines = {}
        for r in previous:
            if r.get("kind") == "baseline" and r.get("gpu") == self.gpu_name and self.gpu_name:
                baselines[(r["lesson"], r["hash"])] = r
        # The lessons whose caught verdicts are confirmed with the GPU alone go first: a
        # confirmation waits until every program on the GPU has finished, and early on those
        # are the timing lessons' own short runs, not another lesson's mutant hanging until
        # its timeout. Within each group, round robin over the lessons, the one with the
        # most mutants first: the GPU runs a mix of lessons at any time, and a time limit
        # cuts every lesson a little.
        order = []
        for group in (sorted(n for n in lessons if runs[n].alone),
                      sorted(n for n in lessons if not runs[n].alone)):
            queues = {name: [m for m in todo if m.lesson == name] for name in group}
            while any(queues.values()):
                for name in sorted(queues, key=lambda n: -len(queues[n])):
                    if queues[name]:
                        order.append(queues[name].pop(0))
        # One thread per mutant: the semaphores, not the pool, limit what runs at once (a
        # thread waiting for the GPU to itself must not keep others from compiling).
        with ThreadPoolExecutor(max_workers=len(order) + len(runs)) as pool:
            for run in runs.values():
                pool.submit(self.baseline, run, baselines.get((run.name, run.digest)))
            futures = [pool.submit(self.one, m, runs[m.lesson], digests[m.id]) for m in order]
            for f in futures:
                f.result()
        summary = ", ".join(f"{v} {k}" for k, v in sorted(self.counts.items()))
        self.say(f"done: {summary or 'nothing graded'}; results in {self.results.path}")
        left = self.counts.get("left for the next call", 0)
        if left:
            self.say(f"{left} mutants left for the next call: run the same command again")
            return 3
        if self.counts.get("skipped"):
            self.say("some mutants could not be judged here (no GPU): exit 77")
            return mutation.SKIP
        return 0


# ============================================================================ report


def load_equivalents(path: Path | None = None) -> list[dict]:
    path = EQUIVALENTS if path is None else path
    if not path.exists():
        return []
    data = json.loads(path.read_text(encoding="utf-8"))
    return data.get("equivalents", [])


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
            for r in mutation.regions(path.read_text(encoding="utf-8")):
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


# ============================================================================ equivalents


def check_equivalents(args) -> int:
    """The authoring test: every entry names a mutant that exists and gives a reason, and
    no GPU run in docs/results caught it."""
    problems = []
    entries = load_equivalents(Path(args.equivalents))
    current = {m.id for m in all_mutants(ready_lessons())}
    seen = set()
    for e in entries:
        mid, reason = e.get("id", ""), (e.get("reason") or "").strip()
        if mid in seen:
            problems.append(f"{mid}: listed twice")
        seen.add(mid)
        if mid not in current:
            problems.append(f"{mid}: no such mutant any more (its source changed): look at "
                            "`tools/op_mutation.py list` and update or remove the entry")
        if len(reason) < 20:
            problems.append(f"{mid}: give the reason it cannot be told from the solution")
    results_dir = Path(args.results_dir)
    for csv_path in sorted(results_dir.glob(f"*/{RESULTS_NAME}.csv")):
        with open(csv_path, encoding="utf-8") as f:
            for row in csv.DictReader(f):
                if row.get("id") in seen and row.get("verdict") == "caught":
                    problems.append(f"{row['id']}: listed as equivalent, but "
                                    f"{csv_path.relative_to(results_dir)} says it was caught by "
                                    f"{row.get('caught_by')} ({row.get('detail', '')[:80]})")
    for p in problems:
        print(f"op_mutation.py: {p}")
    print(f"op_mutation.py: {len(entries)} equivalent mutant(s) listed, "
          f"{len(problems)} problem(s)")
    return 1 if problems else 0


# ============================================================================ main


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    def selection(p):
        p.add_argument("--lessons", help="e.g. 00-08 or 03,10-15 (default: every ready lesson)")
        p.add_argument("--shard", help="I/N: only the I-th of N shards (by a hash of the id)")
        p.add_argument("--operator", action="append", choices=OPERATORS)

    p = sub.add_parser("list", help="print the mutants")
    selection(p)
    p.add_argument("--diff", action="store_true", help="print each mutant's diff")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("counts", help="mutants per lesson and per operator")
    selection(p)
    p = sub.add_parser("show", help="print one mutant's diff")
    p.add_argument("id")
    p = sub.add_parser("run", help="grade the mutants (needs the GPU machine)")
    selection(p)
    p.add_argument("--results", required=True, help="the JSON-lines file to append to")
    p.add_argument("--preset", default="quick", help="build tree build/PRESET (default quick)")
    p.add_argument("--build-dir", help="a configured build tree instead of build/PRESET")
    p.add_argument("--work-dir", help="where mutants are built (default BUILD/op_mutants)")
    p.add_argument("--jobs", type=int, default=os.cpu_count() or 2,
                   help="compilations and links at once (default: the CPU count)")
    p.add_argument("--gpu-jobs", type=int, default=6,
                   help="mutants graded on the GPU at once (default 6)")
    p.add_argument("--time-limit", type=float, default=500,
                   help="leave what is not graded after this many seconds to the next call "
                   "(default 500: a call ends within about 9 minutes)")
    p.add_argument("--timeout-factor", type=float, default=4.0,
                   help="a step's timeout: this many times the solution's time (default 4)")
    p.add_argument("--min-timeout", type=float, default=45)
    p.add_argument("--max-timeout", type=float, default=300)
    p.add_argument("--sanitizer", default="")
    p.add_argument("--cuobjdump", default="")
    p.add_argument("--confirm-alone", default="12-15",
                   help="lessons whose tests measure time (overlap, bandwidth): a mutant their "
                   "tests catch is confirmed with the GPU to itself (default 12-15; '' for none)")
    p.add_argument("--no-build", action="store_true", help="the build tree is already built")
    p.add_argument("--compile-only", action="store_true",
                   help="only compile each mutant (no GPU needed; a configured tree is enough)")
    p.add_argument("--keep", action="store_true", help="keep each mutant's work folder")
    p = sub.add_parser("report", help="write docs/results/<gpu>/operator_mutation.{md,csv}")
    p.add_argument("--results", nargs="+", required=True)
    p.add_argument("--lessons", default="00-15")
    p.add_argument("--gpu", help="the GPU's name (default: the one the results name)")
    p.add_argument("--out", help="the folder to write to (default docs/results/<gpu slug>)")
    p.add_argument("--allow-ungraded", action="store_true",
                   help="exit 0 even when some mutants are not graded yet")
    p = sub.add_parser("check-equivalents", help="the authoring test of the equivalents list")
    p.add_argument("--equivalents", default=str(EQUIVALENTS))
    p.add_argument("--results-dir", default=str(ROOT / "docs" / "results"))
    args = parser.parse_args(argv)

    if args.command == "list":
        mutants = selected(args)
        originals = {}
        for m in mutants:
            if args.json:
                print(json.dumps(m.record()))
                continue
            print(f"{m.id}\n    line {m.line}: {m.description}")
            if args.diff:
                path = ROOT / "solutions" / m.lesson / m.file
                originals.setdefault(path, path.read_text(encoding="utf-8"))
                print(unified_diff(m, originals[path]))
        return 0
    if args.command == "counts":
        mutants = selected(args)
        lessons = sorted({m.lesson for m in all_mutants(select_lessons(args.lessons,
                                                                        ready_lessons()))} |
                         set(select_lessons(args.lessons, ready_lessons())))
        ops = [op for op in OPERATORS]
        print(f"{'lesson':28s} {'all':>4s} " + " ".join(f"{op[:11]:>11s}" for op in ops))
        for lesson in lessons:
            mine = [m for m in mutants if m.lesson == lesson]
            print(f"{lesson:28s} {len(mine):4d} " +
                  " ".join(f"{sum(1 for m in mine if m.operator == op):11d}" for op in ops))
        print(f"{'all':28s} {len(mutants):4d} " +
              " ".join(f"{sum(1 for m in mutants if m.operator == op):11d}" for op in ops))
        return 0
    if args.command == "show":
        for m in all_mutants(ready_lessons()):
            if m.id == args.id:
                path = ROOT / "solutions" / m.lesson / m.file
                print(unified_diff(m, path.read_text(encoding="utf-8")))
                return 0
        print(f"op_mutation.py: no mutant {args.id}")
        return 1
    if args.command == "run":
        def stop(signum, frame):  # a `timeout` or Ctrl-C: take the compilers and GPU programs along
            mutation.kill_started()
            print(f"op_mutation.py: stopped by signal {signum}; the verdicts so far are in the "
                  "results file", flush=True)
            os._exit(128 + signum)  # the worker threads must not start anything more
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, stop)
        mutants = selected(args)
        if not args.lessons:
            mutants = [m for m in mutants if m.lesson[:2] <= "15"]
        return Runner(args, mutants).main()
    if args.command == "report":
        return report(args)
    return check_equivalents(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
