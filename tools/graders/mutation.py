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

tools/mutation.py is this module's command line (main). The operator mutants
(graders/grading.py) are compiled, linked and graded with the same parts: MutantBuild,
run_bounded (and kill_started), grade_tests, grade_sanitizers, expected_api_errors.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from course_cli.catalog import load_catalog, sanitize_arguments
from course_cli.regions import BEGIN_RE, END_RE, STARTER_RE, regions  # noqa: F401 (re-exported)

from . import ROOT, TOOLS

SKIP = 77
TEST_TIMEOUT = 300
SANITIZER_TOOLS = ("racecheck", "synccheck", "memcheck")
# The lesson program's arguments in the student's check (tools/course_cli/commands.py).
CHECK_PROGRAM_ARGS = ("--quick", "--warmup", "0", "--iters", "1")


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


def has_compile_entry(build_dir: Path, source: Path) -> bool:
    entries = json.loads((build_dir / "compile_commands.json").read_text(encoding="utf-8"))
    return any(Path(entry["file"]).resolve() == source.resolve() for entry in entries)


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


_LIVE: set[int] = set()  # process groups run_bounded started and has not reaped yet
_LIVE_LOCK = threading.Lock()
_STOPPING = False


def run_bounded(command, timeout: float | None, **kwargs) -> tuple[int | None, str]:
    """Runs `command` (stdout and stderr together); None instead of an exit status when it
    ran past `timeout`. A command that times out is killed with every process it started
    (its own process group): a hung GPU program under compute-sanitizer under sanitize.py
    must not outlive the timeout and keep the GPU busy."""
    with _LIVE_LOCK:
        if _STOPPING:
            raise RuntimeError("stopping: no new process")
        proc = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                text=True, errors="replace", start_new_session=True, **kwargs)
        _LIVE.add(proc.pid)
    with proc:
        try:
            output, _ = proc.communicate(timeout=timeout)
            return proc.returncode, output
        except subprocess.TimeoutExpired:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            output, _ = proc.communicate()
            return None, output
        finally:
            with _LIVE_LOCK:
                _LIVE.discard(proc.pid)


def kill_started() -> None:
    """Kills every process group run_bounded started that is still running (when the tool
    itself is told to stop: they run in sessions of their own and would outlive it)."""
    global _STOPPING
    with _LIVE_LOCK:
        _STOPPING = True  # and no new one starts
        groups = list(_LIVE)
    for pid in groups:
        try:
            os.killpg(pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass


def absolute_includes(unit: str, folder: Path) -> str:
    """A generated unit's `#include "relative/path"` lines made absolute (from `folder`, the
    unit's own), so that a copy of the unit compiles from any folder."""
    def resolved(match):
        path = (folder / match.group(1)).resolve()
        return f'#include "{path}"' if path.exists() else match.group(0)
    return re.sub(r'^#include "([^"]+)"', resolved, unit, flags=re.M)


@dataclass
class Outcome:
    """What one grading step decided. verdict: "caught", "skipped" (no GPU to run the tests
    on), "passed" (this step did not catch it) or "error" (the step itself could not run);
    step: compile, tests, or a sanitizer tool."""
    verdict: str
    step: str
    detail: str = ""
    log: str = ""
    failed: tuple[str, ...] = ()  # the tests that failed


class MutantBuild:
    """Compiles and links a replacement of one lesson's solution file the way the build
    compiles and links the solution: the compile command comes from the build's
    compile_commands.json, the link commands from `ninja -t commands` (read once).

    A lesson with test-only hooks (course_add_lesson TEST_HOOKS) compiles its unit twice: the
    program links <unit>, the test program <unit> with the hooks (<name>_test_unit.cu). The
    mutant is compiled both ways, and each target is linked with the object it links in the
    build."""

    def __init__(self, build_dir: Path, solution: Path, kernels_source: Path,
                 targets: tuple[str, ...]):
        self.build_dir = Path(build_dir).resolve()
        self.solution = Path(solution).resolve()
        # {object as the link lines name it: (source, compile entry, mutant object's name)}
        self.units: dict[str, tuple[Path, dict, str]] = {}
        sources = [(Path(kernels_source).resolve(), "mutant.o")]
        hooked = sources[0][0].with_name(sources[0][0].name.replace("_unit.cu", "_test_unit.cu"))
        if hooked != sources[0][0] and has_compile_entry(self.build_dir, hooked):
            sources.append((hooked, "mutant_test.o"))
        for source, object_name in sources:
            entry = compile_entry(self.build_dir, source)
            self.units[self._object_of(entry)] = (source, entry, object_name)
        self.links = {target: self._link_of(target) for target in targets}

    def _object_of(self, entry: dict) -> str:
        command = shlex.split(entry["command"])
        original = entry.get("output") or command[command.index("-o") + 1]
        # Newer CMake writes an absolute "output"; ninja's link lines name objects relative
        # to the build folder.
        if Path(original).is_absolute():
            try:
                original = str(Path(original).relative_to(self.build_dir))
            except ValueError:
                pass
        return original

    def _link_of(self, target: str) -> tuple[str, str]:
        """(the object of self.units that `target` links, its link command with that object
        and the output as placeholders)."""
        commands = subprocess.run(["ninja", "-C", str(self.build_dir), "-t", "commands", target],
                                  capture_output=True, text=True, check=True).stdout.splitlines()
        for original in self.units:
            if original in commands[-1]:
                return original, link_command(self.build_dir, target, original, Path(_OBJECT),
                                              Path(_OUTPUT))
        raise SystemExit(f"mutation.py: none of {sorted(self.units)} is linked into {target}")

    def compile(self, text: str, work: Path) -> tuple[bool, str, Path]:
        """Writes the mutant file `text` (and, for a lesson with a launch file, the units
        that include it) under `work` and compiles it: (compiled, compiler output, the
        object the program links; the PTX and SASS checks read this one)."""
        work.mkdir(parents=True, exist_ok=True)
        mutant_solution = work / self.solution.name
        mutant_solution.write_text(text, encoding="utf-8")
        outputs = []
        for source, entry, object_name in self.units.values():
            if source == self.solution:
                mutant_source = mutant_solution
            else:
                unit = absolute_includes(source.read_text(encoding="utf-8"), source.parent)
                mutant_source = work / source.name
                mutant_source.write_text(unit.replace(str(self.solution), str(mutant_solution)),
                                         encoding="utf-8")
            args = rewrite_compile(entry["command"], source, mutant_source, work / object_name)
            status, output = run_bounded(args, None, cwd=entry["directory"])
            outputs.append(output)
            if status != 0:
                return False, "\n".join(outputs), work / "mutant.o"
        return True, "\n".join(outputs), work / "mutant.o"

    def link(self, mutant_object: Path, work: Path) -> dict[str, Path]:
        """Links every target with the mutant's objects (`mutant_object`, and beside it the
        one with the test hooks where the lesson has them): {target: program}. Raises
        RuntimeError with the linker's output when a link fails."""
        programs = {}
        for target, (original, template) in self.links.items():
            obj = mutant_object.with_name(self.units[original][2])
            output = work / target
            command = template.replace(_OBJECT, shlex.quote(str(obj))).replace(
                _OUTPUT, shlex.quote(str(output)))
            status, log = run_bounded(command, None, shell=True, cwd=self.build_dir)
            if status != 0:
                raise RuntimeError(f"linking {target} with the mutant failed:\n{log[-3000:]}")
            programs[target] = output
        return programs


_OBJECT = "@MUTANT_OBJECT@"
_OUTPUT = "@MUTANT_OUTPUT@"


def grade_tests(test_program: Path, mutant_object: Path | None, timeout: float,
                only: tuple[str, ...] = (), fail_fast: bool = False) -> Outcome:
    """Runs every test of the lesson against the mutant, like the student's check (with
    `mutant_object` None: the program as built, the solution itself; with `only`, just those
    tests). With `fail_fast` the run stops at the first failing test: one failure is a
    verdict, and a mutant that leaves a barrier unfinished would otherwise wait out its
    bounded waits (or the timeout) once per remaining test."""
    # The PTX and SASS tests read the kernels' object file: point them at the mutant's, or
    # they would check the solution's instructions instead (tests/support: kernels_object_path).
    env = dict(os.environ)
    # The test programs' watchdog (tests/support/test_main.cpp) ends a run whose test takes
    # 30 s; mutants run side by side on one GPU, where a correct test can take that long:
    # here `timeout` alone decides what a hang is.
    env.setdefault("COURSE_TEST_WATCHDOG_S", "0")
    if mutant_object is not None:
        env["COURSE_KERNELS_OBJECT"] = str(mutant_object)
    command = [str(test_program), "--gtest_brief=1"]
    if only:
        command.append("--gtest_filter=" + ":".join(only))
    if fail_fast:
        command.append("--gtest_fail_fast")
    status, output = run_bounded(command, timeout, env=env)
    if status is None:
        return Outcome("caught", "tests", f"they time out after {timeout:.0f} s: a hang", output,
                       only)
    failed = sorted({name.rstrip(",") for name in
                     re.findall(r"^\[  FAILED  \] (\S+)", output, re.M)})
    # A run that passed while some tests skipped for want of a GPU judged nothing on the GPU
    # (with --gtest_brief=1 GoogleTest prints "[  SKIPPED ] 12 tests." and no list).
    no_gpu = "no usable GPU" in output
    if status == SKIP or (status == 0 and no_gpu and
                          re.search(r"^\[  SKIPPED \] [1-9]\d* tests?", output, re.M)):
        return Outcome("skipped", "tests", "no GPU to run the tests on", output)
    if status != 0:
        names = ", ".join(failed[:6]) or f"exit status {status}"
        return Outcome("caught", "tests", names, output, tuple(failed))
    return Outcome("passed", "tests", "", output)


def expected_api_errors(lesson_name: str) -> list[str]:
    """tools/sanitize.py's arguments for the CUDA errors lesson `lesson_name` (e.g.
    "16_peer_to_peer") meets on purpose: its "expected_api_errors" in lessons/catalog.json,
    as the student's check and the sanitize tests pass them."""
    for lesson in load_catalog(ROOT):
        if lesson.name == lesson_name:
            return sanitize_arguments(lesson)
    return []


def grade_sanitizers(program: Path, sanitizer: str, cuobjdump: str, timeout: float,
                     tools: tuple[str, ...] = SANITIZER_TOOLS,
                     extra_args: list[str] | tuple[str, ...] = ()) -> Outcome:
    """Runs the lesson program --quick under each sanitizer tool as the student's check does
    (tools/sanitize.py, a racecheck warning counting, `extra_args` such as the lesson's
    expected API errors), stopping at the first report."""
    sanitize = TOOLS / "sanitize.py"
    for tool in tools:
        command = [sys.executable, str(sanitize), "--sanitizer", sanitizer, "--tool", tool,
                   "--warnings-fail", *extra_args]
        if cuobjdump:
            command += ["--cuobjdump", cuobjdump]
        command += ["--", str(program), *CHECK_PROGRAM_ARGS]
        status, output = run_bounded(command, timeout)
        if status is None:
            return Outcome("caught", tool, f"the program times out under it after "
                                           f"{timeout:.0f} s: a hang", output)
        if status == SKIP:
            return Outcome("skipped", tool, "no GPU to run the program on", output)
        if status == 1:
            verdict = [l for l in output.splitlines() if l.startswith("sanitize.py: FAIL")]
            return Outcome("caught", tool,
                           verdict[-1][len("sanitize.py: FAIL: "):] if verdict else "failed",
                           output)
        if status != 0:  # sanitize.py's own usage error: nothing was judged
            return Outcome("error", tool, f"sanitize.py exit status {status}", output)
    return Outcome("passed", "sanitizers")


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

    builder = MutantBuild(build_dir, solution, Path(args.kernels_source),
                          (args.test_target, args.exe_target))
    compiled, log, mutant_object = builder.compile(mutant_text(text, args.region), work)
    if not compiled:
        print(log[-6000:])
        print(f"CAUGHT: {what}: the mutant does not compile")
        return 0
    try:
        programs = builder.link(mutant_object, work)
    except RuntimeError as error:
        print(f"mutation.py: {error}")
        return 2

    tests = grade_tests(programs[args.test_target], mutant_object, TEST_TIMEOUT)
    if tests.verdict == "caught":
        print(f"CAUGHT: {what}: by the tests ({tests.detail})")
        return 0
    if tests.verdict == "skipped":
        print(f"SKIPPED: {what}: no GPU to run the tests on")
        return SKIP

    if not args.sanitizer:
        print(f"NOT CAUGHT by the tests, and no compute-sanitizer to ask: {what}")
        return 1
    checked = grade_sanitizers(programs[args.exe_target], args.sanitizer, args.cuobjdump,
                               TEST_TIMEOUT, extra_args=expected_api_errors(solution.parent.name))
    if checked.verdict == "caught":
        print(f"CAUGHT: {what}: by {checked.step} ({checked.detail})")
        return 0
    if checked.verdict == "skipped":
        print(f"SKIPPED: {what}: no GPU to run the program on")
        return SKIP
    if checked.verdict == "error":
        print(checked.log[-3000:])
        print(f"mutation.py: {checked.step} could not judge {what}: {checked.detail}")
        return 2
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

