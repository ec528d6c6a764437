#!/usr/bin/env python3
"""Mutation integrity: no exercise region may be invisible to the grader.

    tools/mutation.py list SOLUTION.cu
    tools/mutation.py run --build-dir DIR --solution SOLUTION.cu --region K
                          --kernels-source FILE --test-target T --exe-target E
                          [--sanitizer PATH] [--cuobjdump PATH] --work-dir DIR

For region K of a solution file (its K-th BEGIN/END SOLUTION region), `run` makes a
*mutant*: the solution with that one region replaced by its STARTER text, everything else
as in the solution; just what a student who did every TODO but that one would have. It
compiles the mutant the way the build compiles the solution (the command comes from the
build's compile_commands.json, the link from `ninja -t commands`), links the lesson's test
program and lesson program with it, and then asks, in order:
  1. does the mutant compile?             (if not, a student would see a compiler error)
  2. does a test of the lesson fail?      (or time out: a hang is caught too)
  3. does racecheck, synccheck or memcheck report it when the lesson program runs --quick
     (through tools/sanitize.py, a racecheck warning counting; a wrong result counts too)?
The region is *caught* when one of them says yes: exit 0. When none does, the region is
invisible to the grader, a student could leave it undone and pass: exit 1, naming it.
Exit 77 when the mutant's tests were skipped for want of a GPU.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from course_cli.starter import BEGIN_RE, END_RE, STARTER_RE  # noqa: E402

SKIP = 77
TEST_TIMEOUT = 300
SANITIZER_TOOLS = ("racecheck", "synccheck", "memcheck")


def regions(text: str) -> list[dict]:
    """Every exercise region: its number (1-based), its BEGIN line, the TODO it belongs to
    (the nearest `TODO n` comment above it) and its line span."""
    found = []
    todo = "?"
    begin = None
    for number, line in enumerate(text.splitlines(), start=1):
        m = re.search(r"//\s*TODO (\d+)", line)
        if m and begin is None:
            todo = m.group(1)
        if BEGIN_RE.match(line):
            begin = number
        elif END_RE.match(line) and begin is not None:
            found.append({"region": len(found) + 1, "todo": todo, "begin": begin, "end": number})
            begin = None
    return found


def mutant_text(text: str, region: int) -> str:
    """The solution with region `region` replaced by its STARTER lines."""
    out = []
    index = 0
    inside = False
    for line in text.splitlines():
        if BEGIN_RE.match(line):
            index += 1
            inside = True
            continue
        if END_RE.match(line):
            inside = False
            continue
        starter = STARTER_RE.match(line) if inside else None
        if inside and index == region:
            if starter:
                out.append((starter.group(1) + (starter.group(2) or "")).rstrip())
            continue
        if starter is None:  # another region keeps its solution, without its starter lines
            out.append(line)
    return "\n".join(out) + "\n"


def compile_entry(build_dir: Path, source: Path) -> dict:
    entries = json.loads((build_dir / "compile_commands.json").read_text(encoding="utf-8"))
    for entry in entries:
        if Path(entry["file"]).resolve() == source.resolve():
            return entry
    raise SystemExit(f"mutation.py: {source} is not in {build_dir}/compile_commands.json")


def rewrite_compile(command: str, old_source: Path, new_source: Path, new_object: Path) -> list[str]:
    """The build's compile command for `old_source`, compiling `new_source` to `new_object`
    (without the dependency-file options, which would overwrite the build's own)."""
    args = shlex.split(command)
    out: list[str] = []
    skip = False
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("-MT", "-MF"):
            skip = True
            continue
        if arg in ("-MD", "-MMD"):
            continue
        # A mutant may well leave a variable unused: a student's compiler warns, it does not
        # stop. Warnings as errors would count that as "caught", which it is not.
        if arg.startswith(("-Werror", "--Werror")) or arg == "-Xcompiler=-Werror":
            continue
        if arg == "-o":
            out += ["-o", str(new_object)]
            skip = True
            continue
        if Path(arg).name == old_source.name and Path(arg).resolve() == old_source.resolve():
            out.append(str(new_source))
            continue
        out.append(arg)
    return out


def link_command(build_dir: Path, target: str, kernels_object: str, mutant_object: Path,
                 output: Path) -> str:
    """The build's link command of `target` (as `ninja -t commands` prints it, run from the
    build folder), with the solution kernels' object swapped for the mutant's and the
    output renamed."""
    commands = subprocess.run(["ninja", "-C", str(build_dir), "-t", "commands", target],
                              capture_output=True, text=True, check=True).stdout.splitlines()
    link = commands[-1]
    if kernels_object not in link:
        raise SystemExit(f"mutation.py: {kernels_object} is not linked into {target}")
    link = link.replace(kernels_object, shlex.quote(str(mutant_object)))
    return re.sub(r"(\s)-o\s+\S+", lambda m: f"{m.group(1)}-o {shlex.quote(str(output))}", link,
                  count=1)


def run(args: argparse.Namespace) -> int:
    solution = Path(args.solution).resolve()
    build_dir = Path(args.build_dir).resolve()
    work = Path(args.work_dir).resolve()
    work.mkdir(parents=True, exist_ok=True)
    text = solution.read_text(encoding="utf-8")
    info = next((r for r in regions(text) if r["region"] == args.region), None)
    if info is None:
        print(f"mutation.py: {solution} has no region {args.region}")
        return 2
    what = (f"{solution.parent.name}/{solution.name} region {args.region} (TODO {info['todo']}, "
            f"lines {info['begin']}-{info['end']})")
    print(f"MUTANT: {what} replaced by its starter text")

    # The mutant's sources: the student file, and (for a lesson with a launch file) the
    # unit that compiles it together with the read-only launchers.
    mutant_solution = work / solution.name
    mutant_solution.write_text(mutant_text(text, args.region), encoding="utf-8")
    kernels_source = Path(args.kernels_source).resolve()
    if kernels_source == solution:
        mutant_source = mutant_solution
    else:
        unit = kernels_source.read_text(encoding="utf-8")
        mutant_source = work / kernels_source.name
        mutant_source.write_text(unit.replace(str(solution), str(mutant_solution)),
                                 encoding="utf-8")
    entry = compile_entry(build_dir, kernels_source)
    original_object = entry.get("output") or shlex.split(entry["command"])[
        shlex.split(entry["command"]).index("-o") + 1]
    # Newer CMake writes an absolute "output"; ninja's link lines name objects relative to
    # the build folder.
    if Path(original_object).is_absolute():
        try:
            original_object = str(Path(original_object).relative_to(build_dir))
        except ValueError:
            pass
    mutant_object = work / "mutant.o"
    compile_args = rewrite_compile(entry["command"], kernels_source, mutant_source, mutant_object)
    proc = subprocess.run(compile_args, cwd=entry["directory"], capture_output=True, text=True)
    if proc.returncode != 0:
        print(proc.stdout[-3000:] + proc.stderr[-3000:])
        print(f"CAUGHT: {what}: the mutant does not compile")
        return 0

    programs = {}
    for target in (args.test_target, args.exe_target):
        output = work / target
        command = link_command(build_dir, target, original_object, mutant_object, output)
        proc = subprocess.run(command, shell=True, cwd=build_dir, capture_output=True, text=True)
        if proc.returncode != 0:
            print(proc.stdout[-3000:] + proc.stderr[-3000:])
            print(f"mutation.py: linking {target} with the mutant failed")
            return 2
        programs[target] = output

    # The PTX and SASS tests read the kernels' object file: point them at the mutant's, or
    # they would check the solution's instructions instead (tests/support: kernels_object_path).
    env = dict(os.environ, COURSE_KERNELS_OBJECT=str(mutant_object))
    try:
        proc = subprocess.run([str(programs[args.test_target]), "--gtest_brief=1"],
                              capture_output=True, text=True, timeout=TEST_TIMEOUT, env=env)
    except subprocess.TimeoutExpired:
        print(f"CAUGHT: {what}: by the tests (they time out after {TEST_TIMEOUT} s: a hang)")
        return 0
    failed = re.findall(r"^\[  FAILED  \] (\S+)", proc.stdout, re.M)
    if proc.returncode != 0:
        names = ", ".join(sorted(set(failed))[:6]) or f"exit status {proc.returncode}"
        print(f"CAUGHT: {what}: by the tests ({names})")
        return 0
    if "no usable GPU" in proc.stdout and not re.search(r"\[  PASSED  \] [1-9]", proc.stdout):
        print(f"SKIPPED: {what}: no GPU to run the tests on")
        return SKIP
    if re.search(r"\[  SKIPPED \] \d+ tests?, listed below", proc.stdout) and \
            "no usable GPU" in proc.stdout:
        print(f"SKIPPED: {what}: the GPU tests were skipped")
        return SKIP

    if not args.sanitizer:
        print(f"NOT CAUGHT by the tests, and no compute-sanitizer to ask: {what}")
        return 1
    sanitize = Path(__file__).resolve().parent / "sanitize.py"
    for tool in SANITIZER_TOOLS:
        command = [sys.executable, str(sanitize), "--sanitizer", args.sanitizer, "--tool", tool,
                   "--warnings-fail"]
        if args.cuobjdump:
            command += ["--cuobjdump", args.cuobjdump]
        command += ["--", str(programs[args.exe_target]), "--quick", "--warmup", "0", "--iters", "1"]
        try:
            proc = subprocess.run(command, capture_output=True, text=True, timeout=TEST_TIMEOUT)
        except subprocess.TimeoutExpired:
            print(f"CAUGHT: {what}: by {tool} (the program times out under it: a hang)")
            return 0
        if proc.returncode == 1:
            verdict = [l for l in proc.stdout.splitlines() if l.startswith("sanitize.py: FAIL")]
            print(f"CAUGHT: {what}: by {tool} ({verdict[-1][len('sanitize.py: '):] if verdict else 'failed'})")
            return 0
    print(f"INVISIBLE: {what}: every test passes and racecheck, synccheck and memcheck are "
          "clean without it. Add a test that fails when this region is left as the starter.")
    return 1


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    listing = sub.add_parser("list", help="print the regions of a solution file")
    listing.add_argument("solution")
    runner = sub.add_parser("run", help="build and judge one mutant")
    runner.add_argument("--build-dir", required=True)
    runner.add_argument("--solution", required=True)
    runner.add_argument("--region", type=int, required=True)
    runner.add_argument("--kernels-source", required=True,
                        help="the source the build compiles for the solution's kernels")
    runner.add_argument("--test-target", required=True)
    runner.add_argument("--exe-target", required=True)
    runner.add_argument("--sanitizer", default="")
    runner.add_argument("--cuobjdump", default="")
    runner.add_argument("--work-dir", required=True)
    args = parser.parse_args(argv)
    if args.command == "list":
        for r in regions(Path(args.solution).read_text(encoding="utf-8")):
            print(f"{r['region']}:{r['todo']}:{r['begin']}:{r['end']}")
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
