#!/usr/bin/env python3
"""The course's concept figures: SVG pictures drawn from the lessons' own constants.

    tools/draw_figures.py             draw every figure into docs/figures/
    tools/draw_figures.py --out DIR   draw them into DIR instead
    tools/draw_figures.py --check     exit 1, naming each figure, when a committed figure is
                                      stale, missing, not drawn by this script, or not shown
                                      by its lesson's README (CI: authoring.figures_in_sync)
    tools/draw_figures.py --self-test draw from small synthetic headers in a temporary folder
                                      and check that the pictures follow their constants

The measured pictures of docs/results/ show what a GPU did; these show what the code says:
a pipeline's stages over time (lesson 06), an mbarrier ring's phases and parities (lesson
10), the swizzle's bank map (lesson 11) and the capstone's tiles (lesson 15). Every number a
figure depends on is read from the lesson's header (`inline constexpr int kName = value;`, a
struct member's default `int stages = 4;`, a `Swizzle::b128 ? 128` case of a constexpr
function), never copied here, so changing a constant changes the figure and --check says
which figure is stale until it is redrawn. Each SVG names its sources and values in its
<desc>. The only numbers of this file are the hardware's (32 shared-memory banks of 4 bytes,
128-byte bank rows, a float4's 4 floats) and the schematic durations of lesson 10's
timeline, which the figure says are not measured.

Plain Python, no plotting library, deterministic output (the same constants give the same
bytes). The names start with the lesson number and never repeat a docs/results picture:
Doxygen finds images by file name alone (docs/figures is in its IMAGE_PATH).
"""
import argparse
import difflib
import html
import pathlib
import re
import sys
import tempfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
FIGURES_DIR = pathlib.Path("docs") / "figures"

# The hardware's shared memory: 32 banks of 4 bytes, so one 128-byte row of banks; a float4
# (one 16-byte chunk) is 4 floats.
BANKS = 32
BANK_BYTES = 4
BANK_ROW = BANKS * BANK_BYTES
CHUNK = 16
FLOAT4 = 4

WIDTH = 1000
FONT = 'font-family="sans-serif" font-size="12"'
BLUE, ORANGE, GREEN, GREY = "#4477aa", "#ee7733", "#228833", "#bbbbbb"
# Eight light tints (logical 16-byte chunks of lesson 11's rows).
TINTS = ["#c6dbef", "#fdd0a2", "#c7e9c0", "#dadaeb", "#fcbba1", "#d9d9d9", "#fff2ae", "#b3e2cd"]


class SourceError(Exception):
    """A constant a figure needs is not where the script looks for it."""


# ---- reading the constants ------------------------------------------------------------------

class Source:
    """The lesson headers under `root`, read without their comments."""

    def __init__(self, root):
        self.root = pathlib.Path(root)
        self.used = {}  # "path: name" -> value, for the figure's <desc>
        self._texts = {}

    def text(self, rel):
        if rel not in self._texts:
            path = self.root / rel
            if not path.exists():
                raise SourceError(f"{rel} does not exist")
            code = path.read_text(encoding="utf-8")
            code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
            self._texts[rel] = re.sub(r"//[^\n]*", "", code)
        return self._texts[rel]

    def constant(self, rel, name, _depth=0):
        """The value of `constexpr <integer type> name = expression;` in `rel`; the expression
        may use integer literals, + - * / ( ) and other constants of the same file."""
        match = re.search(r"\bconstexpr\s+(?:int|unsigned|long|std::size_t|std::u?int\d+_t)\s+"
                          + re.escape(name) + r"\s*=\s*([^;]+);", self.text(rel))
        if not match:
            raise SourceError(f"{rel}: no `constexpr int {name} = ...;`")
        value = self._evaluate(rel, name, match.group(1), _depth)
        self.used[f"{rel}: {name}"] = value
        return value

    def _evaluate(self, rel, name, expression, depth):
        if depth > 8:
            raise SourceError(f"{rel}: {name} refers to itself")
        expression = re.sub(r"(\d+)(?:u|ull|ll|l)\b", r"\1", expression, flags=re.I)
        expression = re.sub(r"\bk[A-Z]\w*\b",
                            lambda m: str(self.constant(rel, m.group(0), depth + 1)), expression)
        if not re.fullmatch(r"[\d\s+\-*/()]+", expression):
            raise SourceError(f"{rel}: {name} = {expression.strip()} is not integer arithmetic")
        return int(eval(expression.replace("/", "//"), {"__builtins__": {}}))  # digits only

    def member_default(self, rel, struct, member):
        """The default value (text) of `member` in `struct <struct> { ... member = value; }`."""
        text = self.text(rel)
        start = re.search(r"\bstruct\s+" + re.escape(struct) + r"\s*\{", text)
        if not start:
            raise SourceError(f"{rel}: no `struct {struct}`")
        depth, i = 1, start.end()
        while depth and i < len(text):
            depth += {"{": 1, "}": -1}.get(text[i], 0)
            i += 1
        body = text[start.end():i]
        match = re.search(r"\b" + re.escape(member) + r"\s*=\s*([^;]+);", body)
        if not match:
            raise SourceError(f"{rel}: struct {struct} has no default for `{member}`")
        value = match.group(1).strip()
        self.used[f"{rel}: {struct}::{member}"] = value
        return value

    def case_value(self, rel, function, case):
        """In the constexpr function `function`, the value of the ternary case `case ? N`."""
        text = self.text(rel)
        start = re.search(r"\b" + re.escape(function) + r"\s*\([^)]*\)\s*\{", text)
        if not start:
            raise SourceError(f"{rel}: no function `{function}`")
        body = text[start.end():text.find("}", start.end())]
        match = re.search(re.escape(case) + r"\s*\?\s*(\d+)", body)
        if not match:
            raise SourceError(f"{rel}: {function} has no case `{case} ? N`")
        value = int(match.group(1))
        self.used[f"{rel}: {function}({case})"] = value
        return value


# ---- SVG helpers ---------------------------------------------------------------------------

def num(value):
    """A coordinate, always written the same way."""
    return f"{value:.1f}".rstrip("0").rstrip(".")


def rect(x, y, w, h, fill, stroke=None, width=1.0, title=None, extra=""):
    outline = f' stroke="{stroke}" stroke-width="{num(width)}"' if stroke else ""
    tip = f"<title>{html.escape(title)}</title>" if title else ""
    return (f'<rect x="{num(x)}" y="{num(y)}" width="{num(w)}" height="{num(h)}" '
            f'fill="{fill}"{outline}{extra}>{tip}</rect>')


def text(x, y, content, anchor="start", size=None, weight=None, fill=None, style=None):
    attrs = f' text-anchor="{anchor}"' if anchor != "start" else ""
    attrs += f' font-size="{size}"' if size else ""
    attrs += f' font-weight="{weight}"' if weight else ""
    attrs += f' fill="{fill}"' if fill else ""
    attrs += f' font-style="{style}"' if style else ""
    return f'<text x="{num(x)}" y="{num(y)}"{attrs}>{html.escape(str(content))}</text>'


def line(x1, y1, x2, y2, stroke="black", width=1.0, dash=None):
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    return (f'<line x1="{num(x1)}" y1="{num(y1)}" x2="{num(x2)}" y2="{num(y2)}" '
            f'stroke="{stroke}" stroke-width="{num(width)}"{dashes}/>')


def svg(height, title, source, body):
    """A whole picture: white background, the title, the sources in <desc>, the body."""
    desc = "Drawn by tools/draw_figures.py from " + "; ".join(
        f"{key} = {value}" for key, value in sorted(source.used.items()))
    return "\n".join([
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{num(height)}" {FONT}>',
        f"<desc>{html.escape(desc)}</desc>",
        rect(0, 0, WIDTH, height, "white"),
        text(WIDTH / 2, 24, title, anchor="middle", size=15),
        *body, "</svg>"]) + "\n"


# ---- lesson 06: a multi-stage pipeline's stages over time ---------------------------------

LESSON06 = "lessons/06_pipeline_multi_stage/pipeline_multi_stage.cuh"


def pipeline_schedule(stages, batches):
    """Lesson 06's block-scope cuda::pipeline, step by step: at step k the producer side
    issues every batch below min(k + stages, batches) (each into buffer b % stages, after
    producer_acquire of that stage), then the consumer side waits for batch k, computes it and
    releases its stage. Returns {batch: step it is issued in} and the copies in flight while
    each step computes."""
    issued, fetched = {}, 0
    in_flight = []
    for k in range(batches):
        while fetched < min(k + stages, batches):
            issued[fetched] = k
            fetched += 1
        in_flight.append(sum(1 for b, step in issued.items() if step <= k < b))
    return issued, in_flight


def draw_pipeline_stages(source):
    stages = int(source.member_default(LESSON06, "Config", "stages"))
    low, high = source.constant(LESSON06, "kMinStages"), source.constant(LESSON06, "kMaxStages")
    if not low <= stages <= high:
        raise SourceError(f"{LESSON06}: Config::stages = {stages} is outside [{low}, {high}]")
    batches = 2 * stages + 2  # prologue, a steady state, and the drain
    issued, in_flight = pipeline_schedule(stages, batches)

    left, right, top, row, gap = 150, 20, 78, 30, 6
    step_w = (WIDTH - left - right) / batches
    x = lambda t: left + t * step_w  # noqa: E731  t in steps
    produce, wait, compute_end, release = 0.06, 0.24, 0.86, 0.92
    body = [text(WIDTH / 2, 44, f"Config::stages = {stages} buffers of one batch each; one "
                 f"column per step k of the kernel's loop; the block owns {batches} batches",
                 anchor="middle", fill="#444444")]
    for k in range(batches):
        body.append(text(x(k + 0.5), top - 8, f"k = {k}", anchor="middle", size=11))
        body.append(line(x(k), top - 4, x(k), top + stages * (row + gap) + row + 6,
                         stroke="#dddddd"))
    for s in range(stages):
        y = top + s * (row + gap)
        body.append(rect(left, y, WIDTH - left - right, row, "#f4f4f4"))
        body.append(text(left - 8, y + row / 2 + 4, f"buffer (stage) {s}", anchor="end"))
    for b, step in sorted(issued.items()):
        y = top + (b % stages) * (row + gap)
        x0, x1 = x(step + produce), x(b + wait)
        body.append(rect(x0, y + 5, x1 - x0, row - 10, BLUE, extra=' opacity="0.75"',
                         title=f"batch {b}: acquired, copied and committed at step {step}, "
                               f"waited for at step {b}"))
        if x1 - x0 > 30:
            label = f"copy b{b}" if x1 - x0 > 60 else f"b{b}"
            body.append(text((x0 + x1) / 2, y + row / 2 + 4, label, anchor="middle",
                             fill="white", size=11))
        c0, c1 = x(b + wait + 0.02), x(b + compute_end)
        body.append(rect(c0, y + 2, c1 - c0, row - 4, ORANGE,
                         title=f"batch {b}: computed at step {b}, then released"))
        body.append(text((c0 + c1) / 2, y + row / 2 + 4, f"compute b{b}" if c1 - c0 > 80
                         else f"b{b}", anchor="middle", fill="white", size=11))
        # producer_acquire + producer_commit, consumer_wait, consumer_release.
        body.append(f'<polygon points="{num(x0)},{num(y + row - 1)} {num(x0 - 5)},{num(y + row + 6)}'
                    f' {num(x0 + 5)},{num(y + row + 6)}" fill="black"/>')
        body.append(f'<circle cx="{num(x(b + wait))}" cy="{num(y + row / 2)}" r="3.5" '
                    f'fill="black"/>')
        body.append(rect(x(b + release) - 3.5, y + row / 2 - 3.5, 7, 7, "black"))
    y = top + stages * (row + gap)
    body.append(text(left - 8, y + row / 2 + 4, "copies in flight", anchor="end"))
    for k, count in enumerate(in_flight):
        body.append(text(x(k + 0.5), y + row / 2 + 4, count, anchor="middle", weight="bold"))
    y += row + 16
    notes = [
        "Blue: a batch's copy, issued into its buffer and in flight until the consumers wait "
        "for it; orange: the block computes the batch.",
        "\u25b2 producer_acquire + cuda::memcpy_async + producer_commit (the acquire blocks "
        "until every thread has released the stage);",
        "\u25cf consumer_wait: every thread's copies of the batch have landed;  \u25a0 "
        "consumer_release: this thread is done reading the buffer.",
        f"Step 0 issues {stages} batches; from then on one per step, into the buffer released "
        f"one step before, so {stages - 1} copies are in flight while a batch is computed.",
    ]
    for i, note in enumerate(notes):
        body.append(text(left, y + 16 * i, note, size=11, fill="#333333"))
    height = y + 16 * len(notes) + 10
    title = f"Lesson 06: a {stages}-stage pipeline, step by step (block-scope cuda::pipeline)"
    return svg(height, title, source, body)


# ---- lesson 10: an mbarrier ring's phases and parities ------------------------------------

LESSON10 = "lessons/10_tma_bulk_copy/tma_bulk_copy.cuh"
# Schematic durations for lesson 10's picture (units of one batch's compute): issuing a bulk
# copy, the copy's latency, computing a batch. Not measured; the figure says so.
ISSUE, LATENCY, COMPUTE = 0.25, 2.0, 1.0


def ring_schedule(stages, batches):
    """Lesson 10's producer warp and consumers over a ring of `stages` buffers, with the
    schematic durations: per batch k the producer's wait on empty[k % S] (k >= S) and issue,
    the landing (full[k % S] completes a phase), the consumers' compute and release (empty[k % S]
    completes a phase)."""
    events = []
    for k in range(batches):
        ready = events[k - 1]["issue_end"] if k else 0.0
        freed = events[k - stages]["release"] if k >= stages else 0.0
        start = max(ready, freed)
        land = start + ISSUE + LATENCY
        compute = max(land, events[k - 1]["release"] if k else 0.0)
        events.append({"k": k, "stage": k % stages, "round": k // stages, "ready": ready,
                       "issue": start, "issue_end": start + ISSUE, "land": land,
                       "compute": compute, "release": compute + COMPUTE})
    return events


def draw_mbarrier_phases(source):
    stages = int(source.member_default(LESSON10, "Config", "stages"))
    low, high = source.constant(LESSON10, "kMinStages"), source.constant(LESSON10, "kMaxStages")
    if not low <= stages <= high:
        raise SourceError(f"{LESSON10}: Config::stages = {stages} is outside [{low}, {high}]")
    rounds = 3
    events = ring_schedule(stages, rounds * stages)
    t_end = events[-1]["release"] + 0.25
    left, right, top = 150, 20, 70
    scale = (WIDTH - left - right) / t_end
    x = lambda t: left + t * scale  # noqa: E731
    lane_h, strip_h, gap = 30, 20, 4
    body = [text(WIDTH / 2, 44, f"Config::stages = {stages} buffers, a full and an empty "
                 f"mbarrier each; batch k uses buffer k % {stages} in round r = k / {stages}",
                 anchor="middle", fill="#444444")]
    y = top
    # The producer warp's elected lane.
    body.append(rect(left, y, WIDTH - left - right, lane_h, "#f4f4f4"))
    body.append(text(left - 8, y + lane_h / 2 + 4, "producer (1 lane)", anchor="end"))
    for e in events:
        if e["issue"] > e["ready"] + 1e-9:
            body.append(rect(x(e["ready"]), y + lane_h - 9, (e["issue"] - e["ready"]) * scale, 4,
                             BLUE, extra=' opacity="0.3"',
                             title=f"b{e['k']}: waits on empty[{e['stage']}] with parity "
                                   f"{(e['round'] - 1) & 1}"))
        body.append(rect(x(e["issue"]), y + lane_h - 14, ISSUE * scale, 12, BLUE,
                         title=f"b{e['k']}: arrive.expect_tx(full[{e['stage']}]) and the bulk "
                               f"copy into buffer {e['stage']}"))
        body.append(text(x(e["issue"] + ISSUE / 2), y + 12, e["k"], anchor="middle", size=10))
    y += lane_h + gap + 4
    strip_rows = []
    for s in range(stages):
        for barrier in ("full", "empty"):
            strip_rows.append((s, barrier, y))
            y += strip_h + (gap if barrier == "full" else gap + 6)
    for s, barrier, sy in strip_rows:
        mine = [e for e in events if e["stage"] == s]
        ends = [e["land"] if barrier == "full" else e["release"] for e in mine]
        colours = (("#dde6f2", "#7f9fcc") if barrier == "full" else ("#f6e4d2", "#dc9a5c"))
        body.append(text(left - 8, sy + strip_h / 2 + 4, f"{barrier}[{s}]", anchor="end"))
        begin = 0.0
        for phase in range(len(ends) + 1):
            end = ends[phase] if phase < len(ends) else t_end
            parity = phase & 1
            if phase < len(ends):
                what = (f"b{mine[phase]['k']} landing" if barrier == "full"
                        else f"until b{mine[phase]['k']} released")
            else:
                what = "next use"
            body.append(rect(x(begin), sy, (end - begin) * scale, strip_h, colours[parity],
                             title=f"{barrier}[{s}] phase {phase} (parity {parity}): {what}"))
            label = f"phase {phase}, parity {parity}: {what}"
            if (end - begin) * scale < 6.2 * len(label):
                label = f"ph {phase} / p{parity}"
            if (end - begin) * scale > 6.2 * len(label):
                body.append(text(x(begin) + 4, sy + strip_h / 2 + 4, label, size=10,
                                 fill="white" if parity else "black"))
            if phase < len(ends):
                body.append(line(x(end), sy - 2, x(end), sy + strip_h + 2, width=2))
            begin = end
    # The consumer warps.
    body.append(rect(left, y, WIDTH - left - right, lane_h, "#f4f4f4"))
    body.append(text(left - 8, y + lane_h / 2 + 4, "consumers", anchor="end"))
    for e in events:
        w = COMPUTE * scale
        body.append(rect(x(e["compute"]), y + 2, w, lane_h - 4, ORANGE, stroke="white",
                         title=f"b{e['k']}: waited on full[{e['stage']}] with parity "
                               f"{e['round'] & 1}, computed, arrived on empty[{e['stage']}]"))
        body.append(text(x(e["compute"]) + w / 2, y + lane_h / 2 + 4,
                         f"b{e['k']} p{e['round'] & 1}", anchor="middle", fill="white", size=11))
    y += lane_h + 22
    notes = [
        f"full[s] expects 1 arrival (arrive.expect_tx) and the batch's bytes: its phase r "
        f"completes when batch r x {stages} + s has landed.",
        f"The consumers wait on full[k % {stages}] with parity (k / {stages}) & 1 (\"b5 p1\": "
        f"batch 5, parity 1).",
        f"empty[s] expects one arrival per consumer thread: its phase r completes when batch "
        f"r x {stages} + s is released.",
        f"Before batch k >= {stages} the producer waits on empty[k % {stages}] with parity "
        f"(k / {stages} - 1) & 1 (the pale bar).",
        "try_wait.parity(P) returns once the phase with parity P is over: where the strip "
        "changes colour.",
        f"Durations are schematic (issue {ISSUE:g}, copy {LATENCY:g}, compute {COMPUTE:g}), "
        f"not measured.",
    ]
    for i, note in enumerate(notes):
        body.append(text(left, y + 16 * i, note, size=11, fill="#333333"))
    height = y + 16 * len(notes) + 10
    title = (f"Lesson 10: full and empty mbarriers of a {stages}-buffer ring, their phases and "
             f"parities over {rounds} rounds")
    return svg(height, title, source, body)


# ---- lesson 11: the swizzle's bank map ------------------------------------------------------

LESSON11 = "lessons/11_tma_tensor_copy/tma_tensor_copy.cuh"
TENSOR_MAP = "lessons/11_tma_tensor_copy/given/tensor_map.h"


def swizzled(offset, span):
    """The TMA's swizzle of byte `offset` (from a swizzle-aligned start) for a `span`-byte
    swizzle: the 16-byte chunk index, bits 4 and up, XORed with the bits from 7 up (as many
    bits as the span has chunks: 32 B 1, 64 B 2, 128 B 3). span 0: no swizzle."""
    if not span:
        return offset
    return offset ^ (((offset >> 7) & (span // CHUNK - 1)) << 4)


def bank_map(rows, span):
    """For each 128-byte row r of a tile and each physical chunk position p, the logical chunk
    stored there: map[r][p] = c when the row's chunk c lands at position p."""
    chunks = BANK_ROW // CHUNK
    result = []
    for r in range(rows):
        row = [None] * chunks
        for c in range(chunks):
            physical = swizzled(r * BANK_ROW + c * CHUNK, span) - r * BANK_ROW
            row[physical // CHUNK] = c
        result.append(row)
    return result


def conflict_ways(rows, span, chunk=0):
    """A warp reading logical chunk `chunk` (4 floats) of `rows` consecutive rows: the most
    distinct addresses one bank serves, i.e. the passes the load takes."""
    per_bank = {}
    for r in range(rows):
        physical = swizzled(r * BANK_ROW + chunk * CHUNK, span) - r * BANK_ROW
        for word in range(CHUNK // BANK_BYTES):
            bank = (physical // BANK_BYTES + word) % BANKS
            per_bank.setdefault(bank, set()).add((r, physical + BANK_BYTES * word))
    return max(len(v) for v in per_bank.values())


def draw_swizzle_banks(source):
    default = source.member_default(LESSON11, "TransposeConfig", "swizzle")
    mode = default.split("::")[-1]
    span = source.case_value(TENSOR_MAP, "swizzle_span_bytes", f"Swizzle::{mode}")
    alignment = source.case_value(TENSOR_MAP, "swizzle_alignment", f"Swizzle::{mode}")
    tile_cols = source.constant(LESSON11, "kTransposeTileCols")
    tile_rows = source.constant(LESSON11, "kTransposeTileRows")
    if tile_cols * 4 != BANK_ROW or span != BANK_ROW:
        raise SourceError(f"{LESSON11}: the figure draws one {BANK_ROW}-byte tile row per bank "
                          f"row under a {BANK_ROW}-byte swizzle; the default is now "
                          f"{tile_cols} columns and {mode} ({span} B): update draw_swizzle_banks")
    rows = alignment // BANK_ROW  # the pattern repeats every `alignment` bytes
    bits = (span // CHUNK - 1).bit_length()  # chunk-index bits the swizzle XORs
    chunks = BANK_ROW // CHUNK
    cell_w, cell_h = 50, 28
    panel_w = chunks * cell_w
    lefts = [110, 110 + panel_w + 70]
    top = 100
    body = [text(WIDTH / 2, 44, f"The transpose's tile ({tile_rows} x {tile_cols} floats): one "
                 f"row is {BANK_ROW} bytes, 8 chunks of 16 bytes (c0 = floats 0-3, ...), "
                 f"across all {BANKS} banks", anchor="middle", fill="#444444")]
    for panel, (swizzle, name) in enumerate([(0, "no swizzle"),
                                             (span, f"{mode[1:]}-byte swizzle (the default)")]):
        left = lefts[panel]
        mapping = bank_map(rows, swizzle)
        ways = conflict_ways(rows, swizzle)
        body.append(text(left + panel_w / 2, top - 34, name, anchor="middle", size=13,
                         weight="bold"))
        body.append(text(left - 8, top - 8, "banks", anchor="end", size=10))
        for p in range(chunks):
            body.append(text(left + (p + 0.5) * cell_w, top - 8,
                             f"{p * CHUNK // BANK_BYTES}-{(p + 1) * CHUNK // BANK_BYTES - 1}",
                             anchor="middle", size=10))
        for r in range(rows):
            y = top + r * cell_h
            if panel == 0:
                body.append(text(left - 8, y + cell_h / 2 + 4, f"row {r}", anchor="end"))
            for p, c in enumerate(mapping[r]):
                read = c == 0
                body.append(rect(left + p * cell_w, y, cell_w, cell_h, TINTS[c % len(TINTS)],
                                 stroke="black" if read else "white", width=2.5 if read else 1,
                                 title=f"row {r}, chunk c{c} (floats {4 * c}-{4 * c + 3}) in "
                                       f"banks {p * 4}-{p * 4 + 3}"))
                body.append(text(left + (p + 0.5) * cell_w, y + cell_h / 2 + 4, f"c{c}",
                                 anchor="middle", weight="bold" if read else None))
        y = top + rows * cell_h + 20
        banks = sorted({4 * row.index(0) + w for row in mapping for w in range(4)})
        verdict = (f"c0 of {rows} rows: {len(banks)} banks ({banks[0]}-{banks[-1]}), "
                   f"{ways}-way conflict" if ways > 1
                   else f"c0 of {rows} rows: {len(banks)} different banks, 1 pass")
        body.append(text(left + panel_w / 2, y, verdict, anchor="middle",
                         fill="#cc3311" if ways > 1 else GREEN, weight="bold"))
    y = top + rows * cell_h + 48
    notes = [
        "Columns: where a chunk lands, as the banks it occupies (4 banks of 4 bytes per "
        "16-byte chunk). Outlined: the chunk c0 of rows 0-"
        f"{rows - 1},",
        f"which one warp load of the transpose reads (4 columns of {rows} consecutive rows). The "
        f"{mode[1:]}-byte swizzle XORs the chunk index with the row's index",
        f"(address bits 4-{3 + bits} ^= bits 7-{6 + bits}), so the pattern repeats every "
        f"{alignment} bytes ({rows} rows): the box must start {alignment}-byte aligned.",
    ]
    for i, note in enumerate(notes):
        body.append(text(lefts[0], y + 16 * i, note, size=11, fill="#333333"))
    height = y + 16 * len(notes) + 10
    title = "Lesson 11: which banks each 16-byte chunk of a row lands in, with and without swizzle"
    return svg(height, title, source, body)


# ---- lesson 15: the capstone's tiles --------------------------------------------------------

LESSON15 = "lessons/15_capstone/capstone.cuh"


def lane_of_cell(cell_row, cell_col, lanes_down, lanes_across):
    """The lane that owns the 4 x 4 square (cell_row, cell_col) of a warp tile: lane l starts
    at row (l / lanes_across) x 4 and column (l % lanes_across) x 4, and its runs repeat every
    lanes_down x 4 rows and lanes_across x 4 columns."""
    return (cell_row % lanes_down) * lanes_across + (cell_col % lanes_across)


def draw_capstone_tiles(source):
    c = {name: source.constant(LESSON15, name) for name in
         ("kTileM", "kTileN", "kWarpTileM", "kWarpTileN", "kThreadTileM", "kThreadTileN",
          "kLanesDown", "kLanesAcross", "kThreads")}
    warps_down, warps_across = c["kTileM"] // c["kWarpTileM"], c["kTileN"] // c["kWarpTileN"]
    cells_down, cells_across = c["kWarpTileM"] // FLOAT4, c["kWarpTileN"] // FLOAT4
    if warps_down * warps_across != c["kThreads"] // 32 or \
            c["kLanesDown"] * c["kThreadTileM"] != c["kWarpTileM"] or \
            c["kLanesAcross"] * c["kThreadTileN"] != c["kWarpTileN"]:
        raise SourceError(f"{LESSON15}: the tile constants no longer fit one warp tile per "
                          f"warp and one thread tile per lane (its static_asserts say how)")
    highlight = {0: ORANGE, c["kLanesAcross"] + 1: GREEN}  # lane 0 and the next row's lane 1

    # Left: the block tile, warp tiles numbered as place_of() numbers them.
    left, top = 40, 92
    block_w = 360
    scale = block_w / c["kTileN"]
    block_h = c["kTileM"] * scale
    body = [text(WIDTH / 2, 44, f"One block computes a {c['kTileM']} x {c['kTileN']} tile of C "
                 f"with {c['kThreads']} threads: {warps_down} x {warps_across} warp tiles of "
                 f"{c['kWarpTileM']} x {c['kWarpTileN']}, {c['kThreadTileM']} x "
                 f"{c['kThreadTileN']} results per lane", anchor="middle", fill="#444444")]
    body.append(text(left + block_w / 2, top - 12, f"block tile: {c['kTileM']} x {c['kTileN']}",
                     anchor="middle", weight="bold"))
    for w in range(warps_down * warps_across):
        wy = top + (w // warps_across) * c["kWarpTileM"] * scale
        wx = left + (w % warps_across) * c["kWarpTileN"] * scale
        ww, wh = c["kWarpTileN"] * scale, c["kWarpTileM"] * scale
        body.append(rect(wx, wy, ww, wh, "#fbe3cf" if w == 0 else "#eeeeee",
                         stroke=ORANGE if w == 0 else "black", width=2.5 if w == 0 else 1,
                         title=f"warp {w}: rows {(w // warps_across) * c['kWarpTileM']}.., "
                               f"columns {(w % warps_across) * c['kWarpTileN']}.."))
        body.append(text(wx + ww / 2, wy + wh / 2 + 4, f"warp {w}", anchor="middle"))
    # Right: warp 0's tile, each 4 x 4 square labelled with its lane.
    zoom_left, zoom_top = left + block_w + 90, top
    cell = min(26.0, (WIDTH - zoom_left - 20) / cells_across)
    zoom_w, zoom_h = cells_across * cell, cells_down * cell
    body.append(text(zoom_left + zoom_w / 2, zoom_top - 12,
                     f"warp 0's tile: {c['kWarpTileM']} x {c['kWarpTileN']}, squares of 4 x 4 "
                     f"labelled with their lane", anchor="middle", weight="bold"))
    for i in range(cells_down):
        for j in range(cells_across):
            lane = lane_of_cell(i, j, c["kLanesDown"], c["kLanesAcross"])
            fill = highlight.get(lane, "#f7f7f7" if (i // c["kLanesDown"] + j //
                                                     c["kLanesAcross"]) % 2 else "#e9e9e9")
            body.append(rect(zoom_left + j * cell, zoom_top + i * cell, cell, cell, fill,
                             stroke="white", width=0.8,
                             title=f"rows {4 * i}-{4 * i + 3}, columns {4 * j}-{4 * j + 3}: "
                                   f"lane {lane}"))
            body.append(text(zoom_left + (j + 0.5) * cell, zoom_top + i * cell + cell / 2 + 3.5,
                             lane, anchor="middle", size=9,
                             fill="white" if lane in highlight else "#555555"))
    body.append(rect(zoom_left, zoom_top, zoom_w, zoom_h, "none", stroke=ORANGE, width=2.5))
    # Below the block tile: what the picture says, from the constants.
    run_down, run_across = FLOAT4 * c["kLanesDown"], FLOAT4 * c["kLanesAcross"]
    y = top + block_h + 40
    notes = [
        f"Warp w owns rows (w / {warps_across}) x {c['kWarpTileM']}, columns "
        f"(w % {warps_across}) x {c['kWarpTileN']}.",
        f"Lane l starts at row (l / {c['kLanesAcross']}) x 4, column (l % {c['kLanesAcross']}) "
        f"x 4.",
        f"Its {c['kThreadTileM']} x {c['kThreadTileN']} results: {c['kThreadTileM'] // FLOAT4} "
        f"runs of 4 rows, {run_down} apart,",
        f"times {c['kThreadTileN'] // FLOAT4} runs of 4 columns, {run_across} apart: each run "
        f"one float4.",
        f"Coloured: lane 0 and lane {c['kLanesAcross'] + 1}. At a k-step the warp's float4 "
        f"loads",
        f"cover {c['kLanesDown'] * FLOAT4 * 4} contiguous bytes of a row of A^T and "
        f"{c['kLanesAcross'] * FLOAT4 * 4} of B: no bank twice.",
    ]
    for i, note in enumerate(notes):
        body.append(text(left, y + 17 * i, note, size=11, fill="#333333"))
    height = max(y + 17 * len(notes), zoom_top + zoom_h) + 16
    title = (f"Lesson 15: the capstone's tiles (rungs 3-5): block, warps and one lane's "
             f"{c['kThreadTileM']} x {c['kThreadTileN']} results")
    return svg(height, title, source, body)


# ---- the figures, and keeping them in step ---------------------------------------------------

FIGURES = {
    "06_pipeline_stages.svg": draw_pipeline_stages,
    "10_mbarrier_phases.svg": draw_mbarrier_phases,
    "11_swizzle_banks.svg": draw_swizzle_banks,
    "15_capstone_tiles.svg": draw_capstone_tiles,
}


def draw_all(root):
    """{file name: SVG text} of every figure, from the headers under `root`."""
    figures = {}
    for name, draw in FIGURES.items():
        try:
            figures[name] = draw(Source(root))
        except SourceError as error:
            raise SourceError(f"{name} cannot be drawn: {error}") from error
    return figures


def write_all(root, out):
    out.mkdir(parents=True, exist_ok=True)
    for name, content in draw_all(root).items():
        (out / name).write_text(content, encoding="utf-8")
        print(f"wrote {out / name}")


def sources_of(content):
    """The {"path: name": value} a figure's <desc> says it was drawn from."""
    match = re.search(r"<desc>Drawn by tools/draw_figures.py from (.*?)</desc>", content)
    if not match:
        return {}
    items = (item.rsplit(" = ", 1) for item in html.unescape(match.group(1)).split("; "))
    return {item[0]: item[1] for item in items if len(item) == 2}


def stale_figures(root, committed):
    """Problems with the figures in `committed`, one line each: a figure out of date with the
    headers (with the first changed lines, where the sources in <desc> show which constant
    moved), missing, or not drawn by this script."""
    problems = []
    with tempfile.TemporaryDirectory() as folder:
        fresh = pathlib.Path(folder)
        for name, content in draw_all(root).items():
            (fresh / name).write_text(content, encoding="utf-8")
        for name in FIGURES:
            path = committed / name
            if not path.exists():
                problems.append(f"{name}: missing from {committed}: run tools/draw_figures.py")
                continue
            old, new = path.read_text(encoding="utf-8"), (fresh / name).read_text("utf-8")
            if old != new:
                was, now = sources_of(old), sources_of(new)
                moved = [f"{key}: {was.get(key, '(not read)')} -> {now.get(key, '(not read)')}"
                         for key in sorted(set(was) | set(now)) if was.get(key) != now.get(key)]
                if not moved:  # the same constants, drawn differently: show the first lines
                    moved = [d[:160] for d in difflib.unified_diff(
                        old.splitlines(), new.splitlines(), lineterm="", n=0)
                        if d[:1] in "+-" and d[:3] not in ("+++", "---")][:4]
                problems.append(f"{name}: stale: run tools/draw_figures.py\n    " +
                                "\n    ".join(moved))
    if committed.exists():
        for path in sorted(committed.glob("*.svg")):
            if path.name not in FIGURES:
                problems.append(f"{path.name}: in {committed} but not drawn by "
                                f"tools/draw_figures.py (add it to FIGURES or remove it)")
    return problems


def unplaced_figures(root):
    """Figures that their lesson's README (lessons/NN_*/README.md, NN the figure's first two
    characters) does not show: drawn for nobody."""
    problems = []
    for name in FIGURES:
        readmes = sorted(pathlib.Path(root).glob(f"lessons/{name[:2]}_*/README.md"))
        if not any(f"docs/figures/{name}" in r.read_text(encoding="utf-8") for r in readmes):
            problems.append(f"{name}: no lessons/{name[:2]}_*/README.md shows it: place it "
                            f"where the lesson explains the concept")
    return problems


# ---- self-test --------------------------------------------------------------------------

SYNTHETIC = {
    LESSON06: """
        inline constexpr int kMinStages = 2;
        inline constexpr int kMaxStages = 8;
        // int stages = 99;  (a comment: never read)
        struct Config {
          Interface interface = Interface::primitives;
          int stages = %(stages06)s;
          int vectors_per_thread = 4;
        };""",
    LESSON10: """
        inline constexpr int kMinStages = 2;
        inline constexpr int kMaxStages = 8;
        struct Config {
          Variant variant = Variant::pipeline;
          int stages = %(stages10)s;
        };""",
    LESSON11: """
        inline constexpr int kTransposeTileRows = 64;
        inline constexpr int kTransposeTileCols = 32;
        struct TransposeConfig {
          Swizzle swizzle = Swizzle::b128;
          int stages = 4;
        };""",
    TENSOR_MAP: """
        __host__ __device__ constexpr int swizzle_span_bytes(Swizzle swizzle) {
          return swizzle == Swizzle::b32    ? 32
                 : swizzle == Swizzle::b64  ? 64
                 : swizzle == Swizzle::b128 ? 128
                                            : 0;
        }
        __host__ __device__ constexpr std::size_t swizzle_alignment(Swizzle swizzle) {
          return swizzle == Swizzle::b32    ? 256
                 : swizzle == Swizzle::b64  ? 512
                 : swizzle == Swizzle::b128 ? 1024
                                            : 128;
        }""",
    LESSON15: """
        inline constexpr int kThreads = %(threads)s;
        inline constexpr int kTileM = 128;
        inline constexpr int kTileN = %(tile_n)s;
        inline constexpr int kWarpTileM = 64;
        inline constexpr int kWarpTileN = 64;
        inline constexpr int kThreadTileM = 16;
        inline constexpr int kThreadTileN = 8;
        inline constexpr int kLanesDown = 4;
        inline constexpr int kLanesAcross = 8;
        inline constexpr int kProducerThreads = 128;
        inline constexpr int kTransposeThreads = kProducerThreads - 32;""",
}


def write_synthetic(root, **values):
    for rel, template in SYNTHETIC.items():
        path = pathlib.Path(root) / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(template % values, encoding="utf-8")


def self_test():
    checks = []
    # The schedules and maps, against what the lessons say.
    issued, in_flight = pipeline_schedule(4, 10)
    checks += [([issued[b] for b in range(10)], [0, 0, 0, 0, 1, 2, 3, 4, 5, 6]),
               (in_flight, [3, 3, 3, 3, 3, 3, 3, 2, 1, 0])]
    events = ring_schedule(4, 12)
    checks += [([e["round"] & 1 for e in events], [0] * 4 + [1] * 4 + [0] * 4),
               (all(events[k]["issue"] >= events[k - 4]["release"] for k in range(4, 12)), True),
               (all(e["compute"] >= e["land"] for e in events), True)]
    checks += [(bank_map(8, 0)[5], list(range(8))), (bank_map(8, 128)[5][0], 5),
               (bank_map(8, 128)[1], [1, 0, 3, 2, 5, 4, 7, 6]),
               (conflict_ways(8, 0), 8), (conflict_ways(8, 128), 1), (conflict_ways(8, 64), 2),
               (swizzled(0x80 + 0x10, 32), 0x80), (swizzled(0x90, 0), 0x90)]
    checks += [(lane_of_cell(0, 0, 4, 8), 0), (lane_of_cell(4, 8, 4, 8), 0),
               (lane_of_cell(1, 1, 4, 8), 9), (lane_of_cell(3, 15, 4, 8), 31)]
    with tempfile.TemporaryDirectory() as folder:
        root = pathlib.Path(folder)
        write_synthetic(root, stages06=3, stages10=2, tile_n=256, threads=256)
        source = Source(root)
        checks += [(source.member_default(LESSON06, "Config", "stages"), "3"),
                   (source.constant(LESSON15, "kTransposeThreads"), 96),
                   (source.case_value(TENSOR_MAP, "swizzle_alignment", "Swizzle::b64"), 512)]
        figures = draw_all(root)
        checks += [(sorted(figures), sorted(FIGURES))]
        # The figures follow the constants: 3 buffers in lesson 06, 2 in lesson 10 (a full
        # and an empty strip each), 8 warp tiles in lesson 15, then 4 with a 128 x 128 tile.
        checks += [(figures["06_pipeline_stages.svg"].count(">buffer (stage) "), 3),
                   ("Config::stages = 3" in figures["06_pipeline_stages.svg"], True),
                   (len(re.findall(r">full\[\d\]<", figures["10_mbarrier_phases.svg"])), 2),
                   (len(re.findall(r">empty\[\d\]<", figures["10_mbarrier_phases.svg"])), 2),
                   (len(re.findall(r">warp \d+<", figures["15_capstone_tiles.svg"])), 8),
                   ("8-way conflict" in figures["11_swizzle_banks.svg"], True),
                   ("1 pass" in figures["11_swizzle_banks.svg"], True)]
        for content in figures.values():
            checks.append((content.startswith("<svg") and content.rstrip().endswith("</svg>")
                           and "nan" not in content.lower(), True))
        # --check: in step, then stale after a constant changes, then missing and extra.
        committed = root / "figures"
        committed.mkdir()
        for name, content in figures.items():
            (committed / name).write_text(content, encoding="utf-8")
        checks.append((stale_figures(root, committed), []))
        write_synthetic(root, stages06=3, stages10=2, tile_n=128, threads=128)
        problems = stale_figures(root, committed)
        checks += [(len(problems), 1),
                   (problems[0].startswith("15_capstone_tiles.svg: stale"), True),
                   (f"{LESSON15}: kTileN: 256 -> 128" in problems[0], True),
                   (len(re.findall(r">warp \d+<", draw_all(root)["15_capstone_tiles.svg"])), 4)]
        (committed / "06_pipeline_stages.svg").unlink()
        (committed / "99_unknown.svg").write_text("<svg/>", encoding="utf-8")
        names = sorted(p.split(":")[0] for p in stale_figures(root, committed))
        checks.append((names, ["06_pipeline_stages.svg", "15_capstone_tiles.svg",
                               "99_unknown.svg"]))
        # Every figure must be shown by its lesson's README.
        readme = root / "lessons" / "06_pipeline_multi_stage" / "README.md"
        readme.write_text("![x](../../docs/figures/06_pipeline_stages.svg)\n", encoding="utf-8")
        checks.append(([p.split(":")[0] for p in unplaced_figures(root)],
                       ["10_mbarrier_phases.svg", "11_swizzle_banks.svg", "15_capstone_tiles.svg"]))
        # A constant that is gone is named, not guessed.
        (root / LESSON10).write_text("struct Config { int threads = 4; };", encoding="utf-8")
        try:
            draw_all(root)
            checks.append(("no error for a missing constant", "SourceError"))
        except SourceError as error:
            checks.append(("struct Config has no default for `stages`" in str(error), True))
    for actual, expected in checks:
        if actual != expected:
            print(f"self-test FAILED: {actual!r} != {expected!r}")
            return 1
    print(f"self-test passed ({len(checks)} checks)")
    return 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", help=f"folder to draw into (default: {FIGURES_DIR})")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 when a committed figure is stale, missing or unknown")
    parser.add_argument("--self-test", action="store_true", help="check this script and exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    try:
        if args.check:
            problems = stale_figures(ROOT, ROOT / FIGURES_DIR) + unplaced_figures(ROOT)
            for problem in problems:
                print(f"{FIGURES_DIR}/{problem}")
            if problems:
                print(f"{len(problems)} figure(s) out of step with the lessons' constants")
                return 1
            print(f"{len(FIGURES)} figures in step with the lessons' constants")
            return 0
        write_all(ROOT, pathlib.Path(args.out) if args.out else ROOT / FIGURES_DIR)
    except SourceError as error:
        print(f"draw_figures.py: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
