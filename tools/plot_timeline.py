#!/usr/bin/env python3
"""The timeline picture of lessons 14 and 15: an SVG Gantt chart of chunked runs, measured and modelled.

    tools/plot_timeline.py 14_overlap_transfers_timeline.csv [-o OUT.svg] [--rows engine|stream]
    tools/plot_timeline.py --self-test

Reads the timeline CSV that `14_overlap_transfers --csv FILE.csv` (one async-v1 and one
async-v2 run) or `15_capstone --csv FILE.csv` (one sequential and one streamed run of the
streamed GEMM) writes beside FILE.csv (FILE_timeline.csv: lesson, gpu, source, order,
chunks, chunk, stage, ready_ms, start_ms, end_ms) and draws, for each order, the measured
run above the engine-queue model's schedule of it (fed with the stage times measured in
the same run), on one time axis. Plain Python, no plotting library: the output is a small
hand-written SVG, by default 14_overlap_timeline.svg or 15_capstone_timeline.svg (after
the CSV's lesson column) next to the CSV.

--rows engine (default): one row per engine, as in the seed's pictures: host->device
copies, kernels, device->host copies; each bar is one chunk's operation, numbered by chunk.
--rows stream: one row per chunk's stream, bars coloured by stage; the pale part before a
bar is the time the operation was ready (its stream had reached it) but not yet running.

What "measured" means: the end of an operation is the event recorded after it; its start
is inferred, because the event recorded before an operation fires when the stream
reaches it, not when its engine takes it. The driver infers the start as the later of
that event and the end of the previous operation of the same stage (one engine per stage,
one operation at a time: the model's own assumption).

--self-test draws a small synthetic timeline in a temporary folder, both ways, and checks
the parsing and the pictures; it writes nothing else.
"""
import csv
import html
import math
import pathlib
import sys
import tempfile

import plot_frame

STAGES = ["H2D", "kernel", "D2H"]
STAGE_LABEL = {"H2D": "host -> device", "kernel": "kernels", "D2H": "device -> host"}
STAGE_COLOUR = {"H2D": "#4477aa", "kernel": "#ee7733", "D2H": "#228833"}
CHUNK_COLOURS = ["#4477aa", "#ee6677", "#228833", "#ccbb44", "#66ccee", "#aa3377", "#bbbbbb",
                 "#ee7733", "#0077bb", "#33bbee", "#009988", "#cc3311"]

WIDTH = 1000
LEFT = 150      # room for row labels
RIGHT = 20
ROW = 22        # height of one row
GAP = 4         # between rows
TITLE = 22      # panel title
PANEL_GAP = 14


def read_rows(path):
    with open(path, newline="") as f:
        rows = list(csv.DictReader(f))
    if not rows:
        sys.exit(f"{path}: no rows")
    for r in rows:
        r["chunk"] = int(r["chunk"])
        for key in ("ready_ms", "start_ms", "end_ms"):
            r[key] = float(r[key])
    return rows


def nice_step(span, ticks=8):
    """A round tick spacing (1, 2 or 5 x 10^k) giving about `ticks` ticks over `span`."""
    raw = span / ticks
    power = 10 ** math.floor(math.log10(raw))
    for factor in (1, 2, 5, 10):
        if power * factor >= raw:
            return power * factor
    return power * 10


def panels_of(rows):
    """(order, source) panels in the CSV's order of orders, measured above model."""
    orders = []
    for r in rows:
        if r["order"] not in orders:
            orders.append(r["order"])
    panels = []
    for order in orders:
        for source in ("measured", "model"):
            ops = [r for r in rows if r["order"] == order and r["source"] == source]
            if ops:
                panels.append((order, source, ops))
    return panels


def draw(rows, mode):
    gpu = rows[0]["gpu"]
    chunks = int(rows[0]["chunks"])
    t_max = max(r["end_ms"] for r in rows) or 1.0
    scale = (WIDTH - LEFT - RIGHT) / t_max
    x = lambda t: LEFT + t * scale  # noqa: E731
    panels = panels_of(rows)
    lanes = STAGES if mode == "engine" else list(range(chunks))
    panel_height = TITLE + len(lanes) * (ROW + GAP)
    height = 40 + len(panels) * (panel_height + PANEL_GAP) + 50

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{WIDTH / 2}" y="22" text-anchor="middle" font-size="15">'
           f'{html.escape(gpu)}: {chunks} chunks, one stream each '
           f'(measured runs and the engine-queue model)</text>']
    top = 40
    for order, source, ops in panels:
        end = max(op["end_ms"] for op in ops)
        what = "measured" if source == "measured" else "model (this run's stage times)"
        out.append(f'<text x="{LEFT}" y="{top + 15}" font-weight="bold">{html.escape(order)}, '
                   f'{what}: last operation ends at {end:.3f} ms</text>')
        lane_top = top + TITLE
        for i, lane in enumerate(lanes):
            y = lane_top + i * (ROW + GAP)
            label = STAGE_LABEL[lane] if mode == "engine" else f"stream {lane}"
            out.append(f'<rect x="{LEFT}" y="{y}" width="{WIDTH - LEFT - RIGHT}" height="{ROW}" '
                       f'fill="#f4f4f4"/>')
            out.append(f'<text x="{LEFT - 8}" y="{y + ROW / 2 + 4}" text-anchor="end">'
                       f'{label}</text>')
        for op in ops:
            if mode == "engine":
                lane = STAGES.index(op["stage"])
                colour = CHUNK_COLOURS[op["chunk"] % len(CHUNK_COLOURS)]
            else:
                lane = op["chunk"]
                colour = STAGE_COLOUR[op["stage"]]
            y = lane_top + lane * (ROW + GAP)
            if mode == "stream" and op["start_ms"] > op["ready_ms"]:
                out.append(f'<rect x="{x(op["ready_ms"]):.2f}" y="{y + ROW / 2 - 2}" '
                           f'width="{(op["start_ms"] - op["ready_ms"]) * scale:.2f}" height="4" '
                           f'fill="{colour}" opacity="0.35"/>')
            w = max((op["end_ms"] - op["start_ms"]) * scale, 0.5)
            out.append(f'<rect x="{x(op["start_ms"]):.2f}" y="{y + 2}" width="{w:.2f}" '
                       f'height="{ROW - 4}" fill="{colour}" stroke="white" stroke-width="0.5">'
                       f'<title>{html.escape(op["stage"])} of chunk {op["chunk"]}: '
                       f'{op["start_ms"]:.4f}-{op["end_ms"]:.4f} ms (ready {op["ready_ms"]:.4f})'
                       f'</title></rect>')
            text = str(op["chunk"]) if mode == "engine" else op["stage"]
            if w > 9 * len(text):
                out.append(f'<text x="{x(op["start_ms"]) + w / 2:.2f}" y="{y + ROW / 2 + 4}" '
                           f'text-anchor="middle" fill="white">{html.escape(text)}</text>')
        top += panel_height + PANEL_GAP

    # The shared time axis.
    step = nice_step(t_max)
    out.append(f'<line x1="{LEFT}" y1="{top}" x2="{WIDTH - RIGHT}" y2="{top}" stroke="black"/>')
    for k in range(int(t_max / step * 1.0001) + 1):
        tick = k * step
        out.append(f'<line x1="{x(tick):.2f}" y1="{top}" x2="{x(tick):.2f}" y2="{top + 5}" '
                   f'stroke="black"/>')
        out.append(f'<text x="{x(tick):.2f}" y="{top + 18}" text-anchor="middle">'
                   f'{round(tick, 9):g}</text>')
    out.append(f'<text x="{(LEFT + WIDTH - RIGHT) / 2}" y="{top + 36}" text-anchor="middle">'
               f'ms since the first operation was ready</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def default_output_name(rows):
    """The picture's name after the CSV's lesson column: lesson 14 keeps its historical
    14_overlap_timeline.svg, any other lesson gets <lesson>_timeline.svg."""
    lesson = rows[0]["lesson"]
    return "14_overlap_timeline.svg" if lesson.startswith("14") else f"{lesson}_timeline.svg"


def self_test():
    header = "lesson,gpu,source,order,chunks,chunk,stage,ready_ms,start_ms,end_ms"
    # Synthetic values, only to exercise the parser and the drawing; never committed.
    lines = [header]
    for order in ("async-v1", "async-v2"):
        for source in ("measured", "model"):
            for chunk in range(2):
                for k, stage in enumerate(STAGES):
                    start = chunk + k
                    lines.append(f"14,Test GPU,{source},{order},2,{chunk},{stage},"
                                 f"{start - 0.5 * chunk:.6f},{start:.6f},{start + 1:.6f}")
    with tempfile.TemporaryDirectory() as folder:
        path = pathlib.Path(folder) / "14_overlap_transfers_timeline.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        rows = read_rows(path)
        panels = panels_of(rows)
        checks = [
            (len(rows), 24),
            ([(order, source) for order, source, _ in panels],
             [("async-v1", "measured"), ("async-v1", "model"), ("async-v2", "measured"),
              ("async-v2", "model")]),
            (max(r["end_ms"] for r in rows), 4.0),
        ]
        for mode in ("engine", "stream"):
            svg = draw(rows, mode)
            bars = svg.count("<title>")
            checks.append((svg.startswith("<svg") and svg.rstrip().endswith("</svg>"), True))
            checks.append((bars, 24))
        checks.append((default_output_name(rows), "14_overlap_timeline.svg"))
        # Lesson 15's shape: a sequential run (one chunk, 3 operations) beside a 3-chunk one.
        lines = [header]
        for source in ("measured", "model"):
            for k, stage in enumerate(STAGES):
                lines.append(f"15_capstone,Test GPU,{source},sequential,3,0,{stage},"
                             f"{3.0 * k:.6f},{3.0 * k:.6f},{3.0 * k + 3:.6f}")
            for chunk in range(3):
                for k, stage in enumerate(STAGES):
                    lines.append(f"15_capstone,Test GPU,{source},streamed,3,{chunk},{stage},"
                                 f"{chunk + k:.6f},{chunk + k:.6f},{chunk + k + 1:.6f}")
        path = pathlib.Path(folder) / "15_capstone_timeline.csv"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        rows = read_rows(path)
        checks.append(([(order, source) for order, source, _ in panels_of(rows)],
                       [("sequential", "measured"), ("sequential", "model"),
                        ("streamed", "measured"), ("streamed", "model")]))
        checks.append((default_output_name(rows), "15_capstone_timeline.svg"))
        for mode in ("engine", "stream"):
            checks.append((draw(rows, mode).count("<title>"), 24))
        for actual, expected in checks:
            if actual != expected:
                print(f"self-test FAILED: {actual!r} != {expected!r}")
                return 1
    print("self-test passed")
    return 0


def main():
    return plot_frame.main(__doc__, self_test, make,
                           "SVG to write (default: 14_overlap_timeline.svg or "
                           "15_capstone_timeline.svg, after the CSV's lesson, next to the CSV)",
                           add_arguments)


def add_arguments(parser):
    parser.add_argument("csv", nargs="?", help="the FILE_timeline.csv of 14_overlap_transfers "
                        "or 15_capstone --csv FILE.csv")
    parser.add_argument("--rows", choices=["engine", "stream"], default="engine")


def make(args, parser):
    if not args.csv:
        parser.error("give the timeline CSV (or --self-test)")
    path = pathlib.Path(args.csv)
    rows = read_rows(path)
    output = pathlib.Path(args.output) if args.output else path.with_name(default_output_name(rows))
    output.write_text(draw(rows, args.rows))
    return output


if __name__ == "__main__":
    sys.exit(main())
