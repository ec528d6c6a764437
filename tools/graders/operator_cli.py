"""The command line of tools/op_mutation.py: list, counts, show, run, report and
check-equivalents (tools/op_mutation.py's docstring says what each does).
"""
from __future__ import annotations

import argparse
import json
import os
import signal

from . import ROOT, mutation
from .equivalents import EQUIVALENTS, check_equivalents
from .grading import Runner
from .mutants import all_mutants, ready_lessons, select_lessons, selected, unified_diff
from .operators import OPERATORS
from .report import report

DESCRIPTION = "Operator mutation: is the grader judged on wrong answers, not only on missing ones?"


def main(argv: list[str]) -> int:
    args = build_parser().parse_args(argv)
    return COMMANDS[args.command](args)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=DESCRIPTION)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="print the mutants")
    add_selection(p)
    p.add_argument("--diff", action="store_true", help="print each mutant's diff")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("counts", help="mutants per lesson and per operator")
    add_selection(p)
    p = sub.add_parser("show", help="print one mutant's diff")
    p.add_argument("id")
    p = sub.add_parser("run", help="grade the mutants (needs the GPU machine)")
    add_selection(p)
    add_run_arguments(p)
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
    return parser


def add_selection(p: argparse.ArgumentParser) -> None:
    p.add_argument("--lessons", help="e.g. 00-08 or 03,10-15 (default: every ready lesson)")
    p.add_argument("--shard", help="I/N: only the I-th of N shards (by a hash of the id)")
    p.add_argument("--operator", action="append", choices=OPERATORS)


def add_run_arguments(p: argparse.ArgumentParser) -> None:
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


def list_command(args) -> int:
    """`list`: each selected mutant's id and change (with --json its record, with --diff its
    diff)."""
    originals = {}
    for m in selected(args):
        if args.json:
            print(json.dumps(m.record()))
            continue
        print(f"{m.id}\n    line {m.line}: {m.description}")
        if args.diff:
            path = ROOT / "solutions" / m.lesson / m.file
            originals.setdefault(path, path.read_text(encoding="utf-8"))
            print(unified_diff(m, originals[path]))
    return 0


def counts_command(args) -> int:
    """`counts`: the selected mutants per lesson and per operator."""
    mutants = selected(args)
    lessons = sorted({m.lesson for m in all_mutants(select_lessons(args.lessons,
                                                                    ready_lessons()))} |
                     set(select_lessons(args.lessons, ready_lessons())))
    print(f"{'lesson':28s} {'all':>4s} " + " ".join(f"{op[:11]:>11s}" for op in OPERATORS))
    for lesson in lessons:
        mine = [m for m in mutants if m.lesson == lesson]
        print(f"{lesson:28s} {len(mine):4d} " +
              " ".join(f"{sum(1 for m in mine if m.operator == op):11d}" for op in OPERATORS))
    print(f"{'all':28s} {len(mutants):4d} " +
          " ".join(f"{sum(1 for m in mutants if m.operator == op):11d}" for op in OPERATORS))
    return 0


def show_command(args) -> int:
    """`show ID`: one mutant's diff."""
    for m in all_mutants(ready_lessons()):
        if m.id == args.id:
            path = ROOT / "solutions" / m.lesson / m.file
            print(unified_diff(m, path.read_text(encoding="utf-8")))
            return 0
    print(f"op_mutation.py: no mutant {args.id}")
    return 1


def run_command(args) -> int:
    """`run`: grades the selected mutants (of lessons 00-15 unless --lessons says)."""
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


COMMANDS = {"list": list_command, "counts": counts_command, "show": show_command,
            "run": run_command, "report": report, "check-equivalents": check_equivalents}
