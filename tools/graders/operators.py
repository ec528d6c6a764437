"""The operators of operator mutation. Each op_* function looks at one exercise region of a
solution file and yields a Candidate for every place where a student could get ONE thing
wrong, the way students do:

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

Only code is changed, never comments or strings (code_reading.py masks them); the PTX of an
asm statement is code: the count and swap-args operators read it.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from .code_reading import (Call, Statement, compact, find_calls, key_text, match_close,
                           split_args, statements, top_level_assignment)

OPERATORS = ("wait-count", "count", "stage-count", "stage-index", "boundary", "phase",
             "sync-remove", "sync-weaken", "wait-move", "stream", "swap-args", "bytes")


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
    for call in find_calls(ctx.masked, r"[A-Za-z_]\w*", ctx.region.lo, ctx.region.hi):
        name = ctx.text[call.name_start:call.name_end]
        if name == "cudaMemcpyPeerAsync" and len(call.args) >= 4:
            yield from swapped_peers(ctx, call)
        else:
            yield from swapped_neighbours(ctx, call, name)
    yield from swapped_braced_coordinates(ctx)
    yield from swapped_cache_policies(ctx)


def swapped_peers(ctx: Context, call: Call):
    """cudaMemcpyPeerAsync(dst, dst_device, src, src_device, ...) with the two peers (each a
    pointer and its device) swapped."""
    args = call.args
    if root_name(src(ctx, args[2])) in ctx.const_pointers:
        return  # would not compile: the source points to const
    (d0, d1), (s0, s1) = (args[0][0], args[1][1]), (args[2][0], args[3][1])
    yield Candidate("swap-args", f"cudaMemcpyPeerAsync:swap-peers@{key_text(src(ctx, args[0]))}",
                    [(d0, d1, ctx.text[s0:s1]), (s0, s1, ctx.text[d0:d1])])


def swapped_neighbours(ctx: Context, call: Call, name: str):
    """Two neighbouring arguments of one call swapped, where they are of the same kind: a
    destination then a source, or a row and a column coordinate."""
    for (a0, a1), (b0, b1) in zip(call.args, call.args[1:]):
        x, y = ctx.text[a0:a1], ctx.text[b0:b1]
        if same_kind(ctx, x, y, ctx.masked[a0:a1] + ctx.masked[b0:b1]):
            yield Candidate("swap-args", f"{name}({key_text(x, 20)},{key_text(y, 20)})",
                            [(a0, a1, y), (b0, b1, x)])


def same_kind(ctx: Context, x: str, y: str, masked_pair: str) -> bool:
    """Whether the arguments `x` and `y` (their masked text together: `masked_pair`) could
    be swapped by mistake and still compile: a destination then a source not pointing to
    const, or coordinates of two different kinds (an indexed pair only when coordinates)."""
    pointers = bool(DESTINATION.match(root_name(x)) and SOURCE.match(root_name(y)))
    if pointers and root_name(y) in ctx.const_pointers:
        return False  # would not compile: the source points to const
    kind_x, kind_y = coordinate_kind(x), coordinate_kind(y)
    crossed = bool(kind_x and kind_y and kind_x != kind_y)
    return (pointers or crossed) and ("[" not in masked_pair or bool(kind_x))


def swapped_braced_coordinates(ctx: Context):
    """A braced list of two coordinates of different kinds assigned (`= {col, row}`), swapped."""
    m = ctx.masked
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


def swapped_cache_policies(ctx: Context):
    """The L2 cache policies of a PTX wrapper swapped: evict_last <-> evict_first."""
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
