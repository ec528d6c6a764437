#!/usr/bin/env python3
"""Compares one Nsight Compute metric across runs of lesson executables.

Some claims of the course are about hardware counters, not times: a 16-byte cp.async.cg
bypasses L1 while a 4-byte cp.async.ca goes through it, a 128-byte swizzle leaves no
shared-memory bank conflicts, a multicast copy reads L2 once for several CTAs. An
executable cannot read those counters itself; this script runs it under `ncu` and checks
the claim.

    ncu_compare.py --metric METRIC [--kernel REGEX] --run NAME='EXE ARGS...' [--run ...]
                   [--expect 'EXPR' ...] [--csv FILE] [--ncu PATH]

For each run, the value is the mean of METRIC over the profiled launches whose kernel
function name matches REGEX (ncu's `-k regex:`), so run the executables with few
iterations (`--warmup 0 --iters 1 --quick --variant X`). Each EXPR is an arithmetic
comparison over the run names, such as `cg16 == 0` or `mc2 <= 0.55 * plain`.

Exit codes: 0 every expectation holds, 1 one does not (or a run failed), 2 usage error,
77 cannot measure here (no ncu, no GPU, no permission to read the counters, or the
executable itself exited 77).
"""

from __future__ import annotations

import argparse
import ast
import csv
import io
import operator
import re
import shlex
import shutil
import subprocess
import sys

SKIP = 77
_NAME = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_NO_COUNTERS = ("ERR_NVGPUCTRPERM", "no CUDA-capable device", "No supported GPU")


class Skip(Exception):
    """The measurement cannot be made on this machine."""


def parse_run(text: str) -> tuple[str, list[str]]:
    name, sep, command = text.partition("=")
    if not sep or not _NAME.match(name) or not command.strip():
        raise ValueError(f"--run wants NAME='EXE ARGS...' with NAME an identifier, got {text!r}")
    return name, shlex.split(command)


def metric_values(csv_text: str, metric: str) -> list[float]:
    """Every value of `metric` in ncu's CSV output (`--csv`, page raw or details)."""
    rows = list(csv.reader(io.StringIO(_csv_part(csv_text))))
    if not rows:
        return []
    header = rows[0]
    values = []
    if "Metric Name" in header and "Metric Value" in header:  # --page details
        name_col, value_col = header.index("Metric Name"), header.index("Metric Value")
        for row in rows[1:]:
            if len(row) > max(name_col, value_col) and row[name_col] == metric:
                values.append(_number(row[value_col]))
    elif metric in header:  # --page raw: one column per metric, then a row of units
        col = header.index(metric)
        for row in rows[1:]:
            if len(row) > col and row[0].strip():  # the units row has no launch ID
                values.append(_number(row[col]))
    return values


def _csv_part(text: str) -> str:
    lines = [line for line in text.splitlines() if line.startswith('"')]
    return "\n".join(lines)


def _number(text: str) -> float:
    cleaned = text.replace(",", "").strip()
    try:
        return float(cleaned)
    except ValueError as error:
        raise ValueError(f"ncu reported a non-numeric value {text!r}") from error


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
        ast.Div: operator.truediv, ast.USub: operator.neg,
        ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt,
        ast.GtE: operator.ge, ast.Eq: operator.eq, ast.NotEq: operator.ne}


def evaluate(expression: str, values: dict[str, float]):
    """Evaluates arithmetic and comparisons over run names; nothing else is allowed."""

    def walk(node):
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return node.value
        if isinstance(node, ast.Name):
            if node.id not in values:
                raise ValueError(f"{expression!r} names {node.id!r}, which is not a run")
            return values[node.id]
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.left), walk(node.right))
        if isinstance(node, ast.UnaryOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](walk(node.operand))
        if isinstance(node, ast.Compare):
            left = walk(node.left)
            for op, right_node in zip(node.ops, node.comparators):
                right = walk(right_node)
                if type(op) not in _OPS or not _OPS[type(op)](left, right):
                    return False
                left = right
            return True
        raise ValueError(f"{expression!r}: only numbers, run names, + - * / and comparisons")

    return walk(ast.parse(expression, mode="eval"))


def measure(ncu: str, metric: str, kernel: str, command: list[str]) -> float:
    args = [ncu, "--csv", "--page", "raw", "--print-units", "base", "--metrics", metric]
    if kernel:
        args += ["-k", f"regex:{kernel}"]
    result = subprocess.run(args + command, capture_output=True, text=True, timeout=280)
    output = result.stdout + result.stderr
    if result.returncode == SKIP or any(marker in output for marker in _NO_COUNTERS):
        raise Skip(f"cannot measure {' '.join(command)} here:\n{output[-2000:]}")
    if result.returncode != 0:
        raise RuntimeError(f"ncu or the program failed (exit {result.returncode}):\n{output[-4000:]}")
    values = metric_values(result.stdout, metric)
    if not values:
        header = next(csv.reader(io.StringIO(_csv_part(result.stdout))), [])
        if header and metric not in header and "Metric Name" not in header:
            raise RuntimeError(f"ncu reported no column {metric}: not a metric of this GPU or "
                               f"this ncu? (ncu_compare.py takes one metric per run)")
        raise RuntimeError(f"ncu profiled no launch matching {kernel!r} with {metric}:\n"
                           f"{output[-4000:]}")
    return sum(values) / len(values)


def self_test() -> int:
    raw = ('==PROF== Connected to process 1\n'
           '"ID","Process ID","Kernel Name","m.sum"\n'
           '"","","","sector"\n'
           '"0","1","k(int)","1,024"\n'
           '"1","1","k(int)","3072"\n')
    assert metric_values(raw, "m.sum") == [1024.0, 3072.0]
    details = ('"ID","Kernel Name","Section Name","Metric Name","Metric Unit","Metric Value"\n'
               '"0","k","Command line profiler metrics","m.sum","sector","5"\n'
               '"0","k","Command line profiler metrics","other","sector","9"\n')
    assert metric_values(details, "m.sum") == [5.0]
    assert metric_values(raw, "absent") == []
    values = {"plain": 100.0, "mc2": 50.0}
    assert evaluate("mc2 <= 0.55 * plain", values) is True
    assert evaluate("mc2 == 0", values) is False
    assert evaluate("0 < mc2 < plain", values) is True
    for bad in ("__import__('os')", "plain.real", "nobody > 1", "[plain]"):
        try:
            evaluate(bad, values)
        except (ValueError, SyntaxError):
            continue
        raise AssertionError(f"accepted {bad!r}")
    assert parse_run("ca4=./exe --variant ca4 --quick") == ("ca4", ["./exe", "--variant", "ca4", "--quick"])
    for bad in ("noequals", "1x=./exe", "x="):
        try:
            parse_run(bad)
        except ValueError:
            continue
        raise AssertionError(f"accepted --run {bad!r}")
    print("ncu_compare self-test: OK")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--metric", help="one ncu metric name")
    parser.add_argument("--kernel", default="", help="regular expression over kernel names")
    parser.add_argument("--run", action="append", default=[], metavar="NAME='EXE ARGS'")
    parser.add_argument("--expect", action="append", default=[], metavar="EXPR")
    parser.add_argument("--csv", help="write run,metric,value rows here")
    parser.add_argument("--ncu", default=shutil.which("ncu") or "", help="path of ncu")
    parser.add_argument("--self-test", action="store_true", help="check this script, no GPU")
    args = parser.parse_args(argv)
    if args.self_test:
        return self_test()
    try:
        runs = checked_runs(args)
    except (ValueError, SyntaxError) as error:
        parser.print_usage(sys.stderr)
        print(f"ncu_compare.py: {error}", file=sys.stderr)
        return 2
    if not args.ncu:
        print("ncu_compare.py: ncu not found: cannot read hardware counters here", file=sys.stderr)
        return SKIP
    values = {}
    try:
        for name, command in runs.items():
            values[name] = measure(args.ncu, args.metric, args.kernel, command)
            print(f"{name:<16} {args.metric} = {values[name]:.6g}", flush=True)
    except Skip as skip:
        print(f"ncu_compare.py: {skip}", file=sys.stderr)
        return SKIP
    except (RuntimeError, ValueError, subprocess.TimeoutExpired) as error:
        print(f"ncu_compare.py: {error}", file=sys.stderr)
        return 1
    if args.csv:
        write_csv(args.csv, args.metric, values)
    failed = [e for e in args.expect if not evaluate(e, values)]
    for expression in args.expect:
        print(f"EXPECT {expression}: {'holds' if expression not in failed else 'FAILS'}")
    return 1 if failed else 0


def checked_runs(args: argparse.Namespace) -> dict[str, list[str]]:
    """{run name: command} of the --run options, after checking the options and every
    --expect's names and syntax (before anything runs); raises ValueError or SyntaxError."""
    if not args.metric or not args.run:
        raise ValueError("--metric and at least one --run are required")
    runs = dict(parse_run(text) for text in args.run)
    if len(runs) != len(args.run):
        raise ValueError("two --run share a name")
    for expression in args.expect:
        evaluate(expression, {name: 1.0 for name in runs})
    return runs


def write_csv(path: str, metric: str, values: dict[str, float]) -> None:
    """run,metric,value rows (what tools/plot_*.py read)."""
    with open(path, "w", newline="") as out:
        writer = csv.writer(out, lineterminator="\n")
        writer.writerow(["run", "metric", "value"])
        for name, value in values.items():
            writer.writerow([name, metric, f"{value:.6g}"])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
