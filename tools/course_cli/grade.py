"""`./course grade NN SUBMISSIONS`: a class's submissions of one lesson, each graded alone with
what `./course check NN` runs, and written in the formats classrooms read.

How a class is graded:
 1. A template build tree of the lesson is configured and built once (build/grade/NN_slug from
    a preset, or --build-dir): the lesson's test program and program against the starter.
 2. The untouched starter is graded first (the template's own build, when lessons/NN_slug/ holds
    the fresh starter): the checks it passes measure given code and earn nothing by default.
 3. Every submission gets a work folder of its own (OUT/work/<student>), its file copied in from
    a snapshot the grader took before any student code ran. Only the student's unit is
    compiled, with the template's own compile command (compile_commands.json; ccache where it
    is installed), and linked into the test program and the lesson program with the template's
    link commands (`ninja -t commands`): the rest of the build is reused, never rebuilt.
 4. In the sandbox of isolation.py, with a wall-clock limit for the build (--build-limit) and
    one for the runs (--limit): the CPU tests (one process; a crash or the watchdog ends it, and
    the tests after it run in a fresh one), then on a GPU machine each GPU suite in a process
    of its own (a fresh CUDA context each) and racecheck, synccheck and memcheck on the lesson
    program, as the check runs them (tools/sanitize.py, a racecheck warning counting). Without
    a GPU the GPU checks are "not run: needs a GPU (sm_NN)", with no score.
 5. The scores come from the rubric (rubric.py); the grades go to OUT in every --format asked
    for, and OUT/grades.json holds them all. Nothing is written to OUT until every submission's
    code has stopped running.
"""

from __future__ import annotations

import argparse
import concurrent.futures
import datetime
import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from . import build, grade_formats, isolation, rubric as rubric_module, starter
from .build import BuildTree, build_root, shown
from .catalog import Lesson, catalog_rubric, find_ready_lesson, load_catalog, sanitize_arguments
from .errors import CourseError
from .grade_formats import FAILED, NOT_RUN, PASSED, CheckResult, Grade

MAX_FILE_BYTES = 1 << 20  # a submission's exercise file
WATCHDOG_S = 30  # tests/support/test_main.cpp: one test may run this long
PROGRAM_ARGS = ("--quick", "--warmup", "0", "--iters", "1")  # as the check runs the program
COMPILE_MEMORY = 16 << 30  # address space of one compiler run
CPU_RUN_MEMORY = 16 << 30  # address space of a test run on a machine without a GPU
STUDENT_FILE = "@STUDENT_FILE@"  # in a compile command: the student's file in the work folder
RESULT_RE = re.compile(r"^\[\s*(RUN|OK|FAILED|SKIPPED)\s*\] (\S+)")
# The grader's variables that a sandboxed compile and link see (every other one is cleared): the
# template's commands were written for them. CMake leaves out of its commands the folders the
# compiler already searches, and those include the ones these variables name (LIBRARY_PATH=
# /usr/local/cuda/lib64 drops -L for the CUDA runtime from every link line).
BUILD_ENVIRONMENT = ("LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH",
                     "LD_LIBRARY_PATH", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS")
SEARCH_PATHS = ("LD_LIBRARY_PATH", "LIBRARY_PATH", "CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH")
STUDENT_RE = re.compile(r"[^A-Za-z0-9._-]+")


def log(message: str) -> None:
    print(message, flush=True)


# --------------------------------------------------------------------------- the template


@dataclass
class Unit:
    """One compile of the student's file: the template's source (a unit that includes the
    starter, or the starter itself), its compile command, and the object the links name."""

    source: Path
    command: list[str]
    directory: str
    linked_object: str  # as the link lines name it (relative to the build folder)
    object_name: str  # our object's file name in the work folder
    text: str  # the unit's text with absolute includes ("" when the source is the starter)


@dataclass
class Template:
    root: Path
    lesson: Lesson
    build_dir: Path
    units: list[Unit]
    links: dict[str, str]  # target -> link command with @OBJ:<object>@ and @OUT@ placeholders
    tests: list[str]  # every test of the test program, "Suite.Test" as GoogleTest names them
    sanitizer: str
    cuobjdump: str
    probe: build.ProbeResult
    visible: list[Path] = field(default_factory=list)
    starter_file: Path = Path()

    @property
    def test_target(self) -> str:
        return f"{self.lesson.name}_test"

    @property
    def program_target(self) -> str:
        return self.lesson.name


def _cache_value(build_dir: Path, name: str) -> str:
    try:
        text = (build_dir / "CMakeCache.txt").read_text(encoding="utf-8")
    except OSError:
        return ""
    for line in text.splitlines():
        key, _, value = line.partition("=")
        if key.split(":", 1)[0] == name:
            return "" if value.endswith("NOTFOUND") else value
    return ""


def lesson_uses(root: Path, lesson: Lesson) -> list[str]:
    """The lessons whose kernels this lesson links (USES in its CMakeLists.txt), transitively."""
    found: list[str] = []
    pending = [lesson.name]
    while pending:
        name = pending.pop()
        try:
            text = (root / "lessons" / name / "CMakeLists.txt").read_text(encoding="utf-8")
        except OSError:
            continue
        # `USES a b` up to the next keyword or the closing parenthesis; ${...} variables
        # (lessons 10, 11) are resolved by CMake: take every lesson folder the file names.
        for used in re.findall(r"\b(\d\d_[a-z0-9_]+)\b", text):
            if used != name and used not in found and (root / "lessons" / used).is_dir():
                found.append(used)
                pending.append(used)
    return found


def ensure_template(root: Path, lesson: Lesson, args) -> Path:
    """Configures and builds the template tree; returns its folder."""
    if args.build_dir:
        build_dir = Path(args.build_dir).resolve()
        if not (build_dir / "CMakeCache.txt").exists():
            raise CourseError(f"{build_dir} is not a configured CMake build folder")
    else:
        build_dir = build_root(root) / "grade" / lesson.name
        if not (build_dir / "CMakeCache.txt").exists():
            names = [lesson.name, *lesson_uses(root, lesson)]
            command = ["cmake", "--preset", args.preset, "-B", str(build_dir),
                       f"-DCOURSE_LESSON_FILTER=^({'|'.join(sorted(names))})$"]
            if args.architectures:
                command.append(f"-DCMAKE_CUDA_ARCHITECTURES={args.architectures}")
            if build.run_command(command, root) != 0:
                raise CourseError("configuring the template build failed (see above)", exit_code=1)
    if not args.no_build:
        command = ["cmake", "--build", str(build_dir), "--target", f"{lesson.name}_test",
                   lesson.name, build.PROBE_NAME]
        if build.run_command(command, root) != 0:
            raise CourseError("building the template failed (see above): the lesson itself must "
                              "build before a class can be graded", exit_code=1)
    return build_dir


def _compile_entries(build_dir: Path) -> list[dict]:
    try:
        return json.loads((build_dir / "compile_commands.json").read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CourseError(f"{build_dir}/compile_commands.json: {error}") from None


def _object_of(entry: dict, build_dir: Path) -> str:
    command = shlex.split(entry["command"])
    original = entry.get("output") or command[command.index("-o") + 1]
    if Path(original).is_absolute():
        try:
            original = str(Path(original).relative_to(build_dir))
        except ValueError:
            pass
    return original


def student_compile_command(command: str, source_name: str, object_name: str) -> list[str]:
    """The template's compile command for the student's unit: the source and the object named
    relative to the work folder, no dependency files, and no warnings-as-errors (a student's
    own build does not have them: the check builds the student preset)."""
    args = shlex.split(command)
    out: list[str] = []
    skip = False
    source_index = None
    for i, arg in enumerate(args):
        if skip:
            skip = False
            continue
        if arg in ("-MT", "-MF", "-MQ"):
            skip = True
            continue
        if arg in ("-MD", "-MMD") or arg.startswith(("-MF", "-MT")):
            continue
        if arg in ("-Werror", "-Werror=all-warnings", "-Xcompiler=-Werror"):
            continue
        if arg == "-o":
            out += ["-o", object_name]
            skip = True
            continue
        if arg == "-c" and i + 1 < len(args):
            source_index = len(out) + 1
        out.append(arg)
    if source_index is None or source_index >= len(out):
        raise CourseError(f"cannot find the source in the compile command: {command}")
    out[source_index] = source_name
    return out


def absolute_includes(unit: str, folder: Path) -> str:
    def resolved(match):
        path = (folder / match.group(1)).resolve()
        return f'#include "{path}"' if path.exists() else match.group(0)
    return re.sub(r'^#include "([^"]+)"', resolved, unit, flags=re.M)


def _unit_compiles(root: Path, lesson: Lesson, build_dir: Path, entries: list[dict],
                   starter_file: Path) -> list[Unit]:
    """The compiles of the student's file: the lesson's unit (and its test-hooks twin) that
    includes the starter, or, without a launch file, the starter itself."""
    units: list[Unit] = []
    for file_name, object_name in ((f"{lesson.name}_starter_unit.cu", "unit.o"),
                                   (f"{lesson.name}_starter_test_unit.cu", "unit_test.o")):
        entry = next((e for e in entries if Path(e["file"]).name == file_name), None)
        if entry is None:
            continue
        source = Path(entry["directory"]) / entry["file"]  # "file" may be absolute already
        text = absolute_includes(source.read_text(encoding="utf-8"), source.parent)
        units.append(Unit(source, student_compile_command(entry["command"], file_name, object_name),
                          entry["directory"], _object_of(entry, build_dir), object_name, text))
    if units:
        return units
    entry = next((e for e in entries if Path(e["file"]).resolve() == starter_file), None)
    if entry is None:
        raise CourseError(f"{build_dir}/compile_commands.json has no compile of "
                          f"{shown(starter_file, root)}: is lesson {lesson.number} configured "
                          "in this build folder?")
    return [Unit(starter_file, student_compile_command(entry["command"], f"{lesson.slug}.cu",
                                                       "unit.o"),
                 entry["directory"], _object_of(entry, build_dir), "unit.o", "")]


def _other_compiles(lesson: Lesson, build_dir: Path, entries: list[dict], starter_file: Path,
                    first: int) -> list[Unit]:
    """Other compiles of the starter that name it in their command (lessons 16 and 17 compile
    the exercise again against recording test doubles, through a -D define): compiled again
    with the student's file in the starter's place."""
    starter_re = re.compile(r"[^\s\"'=]*" + re.escape(f"lessons/{lesson.name}/{lesson.slug}.cu"))
    units = []
    for entry in entries:
        source = (Path(entry["directory"]) / entry["file"]).resolve()
        if not starter_re.search(entry["command"]) or source == starter_file:
            continue
        name = f"extra{first + len(units)}.o"
        command = student_compile_command(entry["command"], str(source), name)
        units.append(Unit(source, [starter_re.sub(STUDENT_FILE, w) for w in command],
                          entry["directory"], _object_of(entry, build_dir), name, ""))
    return units


def _link_template(build_dir: Path, target: str, units: list[Unit], linked: set[str]) -> str:
    """The template's link command of `target`, with @OBJ:name@ where it links one of `units`
    (added to `linked`) and @OUT@ for its output."""
    try:
        lines = subprocess.run(["ninja", "-C", str(build_dir), "-t", "commands", target],
                               capture_output=True, text=True, check=True).stdout.splitlines()
    except (OSError, subprocess.CalledProcessError) as error:
        raise CourseError(f"cannot read the link command of {target}: {error}") from None
    link = lines[-1]
    for unit in units:
        pattern = rf"(^|\s){re.escape(unit.linked_object)}(?=\s|$)"
        if re.search(pattern, link):
            link = re.sub(pattern, lambda m, u=unit: f"{m.group(1)}@OBJ:{u.object_name}@", link)
            linked.add(unit.object_name)
    if "@OBJ:" not in link:
        raise CourseError(f"the link command of {target} names none of the student's objects")
    link, count = re.subn(r"(\s)-o\s+\S+", r"\1-o @OUT@", link, count=1)
    if not count:
        raise CourseError(f"cannot find the output in the link command of {target}")
    return link


def list_tests(test_program: Path) -> list[str]:
    """Every test of a GoogleTest program, "Prefix/Suite.Test/param" as it names them."""
    listing = subprocess.run([str(test_program), "--gtest_list_tests"], capture_output=True,
                             text=True, timeout=120)
    if listing.returncode != 0:
        raise CourseError(f"{test_program} --gtest_list_tests failed: {listing.stdout[-2000:]}"
                          f"{listing.stderr[-2000:]}")
    tests, suite = [], ""
    for line in listing.stdout.splitlines():
        if line and not line.startswith(" "):
            suite = line.split("#")[0].strip().rstrip(".")
        elif line.strip():
            tests.append(f"{suite}.{line.split('#')[0].strip()}")
    return tests


def load_template(root: Path, lesson: Lesson, build_dir: Path) -> Template:
    entries = _compile_entries(build_dir)
    starter_file = (lesson.lesson_dir(root) / f"{lesson.slug}.cu").resolve()
    units = _unit_compiles(root, lesson, build_dir, entries, starter_file)
    units += _other_compiles(lesson, build_dir, entries, starter_file, len(units))
    linked: set[str] = set()
    links = {target: _link_template(build_dir, target, units, linked)
             for target in (f"{lesson.name}_test", lesson.name)}
    units = [u for u in units if u.object_name in linked]  # compiles no program links: none
    template = Template(root, lesson, build_dir, units, links,
                        list_tests(build_dir / "bin" / f"{lesson.name}_test"),
                        _cache_value(build_dir, "COURSE_COMPUTE_SANITIZER"),
                        _cache_value(build_dir, "COURSE_CUOBJDUMP"),
                        build.run_probe(build_dir / "bin" / build.PROBE_NAME),
                        starter_file=starter_file)
    template.visible = visible_paths(root, build_dir, units, links)
    return template


def visible_paths(root: Path, build_dir: Path, units: list[Unit], links: dict[str, str]) -> list[Path]:
    """Every folder a sandboxed compile, link or test run needs to read: the repository, the
    template, the tools the build names, this Python, and any absolute path the commands name
    outside the system folders."""
    paths = {root.resolve(), build_dir.resolve(), *isolation.python_dirs()}
    for name in ("CMAKE_CUDA_COMPILER", "CMAKE_CXX_COMPILER", "COURSE_CUOBJDUMP",
                 "COURSE_COMPUTE_SANITIZER", "COURSE_NCU"):
        value = _cache_value(build_dir, name)
        if value and Path(value).exists():
            tool = Path(value).resolve()
            paths.add(tool.parent.parent if tool.parent.name == "bin" else tool.parent)
    words = [w for u in units for w in u.command] + [w for l in links.values() for w in shlex.split(l)]
    for word in words:
        match = re.search(r"(/[^\s=,]+)", word)
        if match and not match.group(1).startswith(("/usr/", "/etc/", "/opt/", "/lib", "/bin")):
            path = Path(match.group(1))
            if path.exists():
                paths.add(path if path.is_dir() else path.parent)
    for folder in (f for name in SEARCH_PATHS for f in os.environ.get(name, "").split(":")):
        if folder and Path(folder).is_dir():
            paths.add(Path(folder).resolve())
    return sorted(paths)


# ---------------------------------------------------------------------------- submissions


@dataclass
class Submission:
    student: str
    path: Path | None  # the exercise file found, or None
    text: bytes = b""
    problem: str = ""
    submitted_at: str = ""


def _utc(seconds: float) -> str:
    return datetime.datetime.fromtimestamp(seconds, datetime.timezone.utc).strftime(
        "%Y-%m-%dT%H:%M:%SZ")


def _exercise_file(folder: Path, slug: str) -> tuple[Path | None, str]:
    named = sorted(folder.rglob(f"{slug}.cu"), key=lambda p: (len(p.parts), str(p)))
    named = [p for p in named if p.is_file()]
    if named:
        return named[0], ""
    sources = [p for p in folder.rglob("*.cu") if p.is_file()]
    if len(sources) == 1:
        return sources[0], ""
    if not sources:
        return None, f"no {slug}.cu (and no other .cu file) in the submission"
    return None, f"no {slug}.cu, and {len(sources)} other .cu files: which one is it?"


def find_submissions(path: Path, lesson: Lesson, student: str | None = None) -> list[Submission]:
    """A folder of per-student folders, a folder of files named by student, or one file (or
    one student's folder, with --student). Each file is read now, before any student code
    runs: what is graded is this snapshot."""
    path = Path(path)
    if not path.exists():
        raise CourseError(f"{path}: no such file or folder")
    found: list[tuple[str, Path | None, str]] = []
    if path.is_file():
        found.append((student or path.parent.name or path.stem, path, ""))
    elif student:
        file, problem = _exercise_file(path, lesson.slug)
        found.append((student, file, problem))
    else:
        for entry in sorted(path.iterdir()):
            if entry.name.startswith("."):
                continue
            if entry.is_dir():
                file, problem = _exercise_file(entry, lesson.slug)
                found.append((entry.name, file, problem))
            elif entry.suffix == ".cu":
                name = entry.stem
                for affix in (f"_{lesson.slug}", f"-{lesson.slug}"):
                    if name.endswith(affix) and len(name) > len(affix):
                        name = name[:-len(affix)]
                found.append((name, entry, ""))
    if not found:
        raise CourseError(f"{path}: no submissions (per-student folders or .cu files) found")
    submissions, used = [], set()
    for name, file, problem in found:
        clean = STUDENT_RE.sub("_", name).strip("._-") or "student"
        unique, n = clean, 2
        while unique in used:
            unique, n = f"{clean}_{n}", n + 1
        used.add(unique)
        submission = Submission(unique, file, problem=problem)
        if file is not None:
            try:
                size = file.stat().st_size
                if size > MAX_FILE_BYTES:
                    submission.problem = f"{file.name} is {size} bytes; the limit is {MAX_FILE_BYTES}"
                else:
                    submission.text = file.read_bytes()
                submission.submitted_at = _utc(file.stat().st_mtime)
            except OSError as error:
                submission.problem = f"cannot read {file}: {error}"
        submissions.append(submission)
    return submissions


# ------------------------------------------------------------------------------ the tests


@dataclass
class TestOutcome:
    status: str  # PASSED, FAILED or NOT_RUN
    output: str = ""


class GtestReader:
    """Follows a GoogleTest program's output line by line: which test runs, how each ended,
    and what each printed (bounded)."""

    def __init__(self) -> None:
        self.outcomes: dict[str, TestOutcome] = {}
        self.running: str | None = None
        self.lines: list[str] = []
        self.size = 0

    def __call__(self, line: str) -> None:
        match = RESULT_RE.match(line)
        if match:
            word, name = match.groups()
            name = name.rstrip(",")
            if word == "RUN":
                self.running, self.lines, self.size = name, [], 0
                return
            if name == self.running:
                text = "\n".join(self.lines)
                if word == "OK":
                    self.outcomes[name] = TestOutcome(PASSED)
                elif word == "FAILED":
                    self.outcomes[name] = TestOutcome(FAILED, text + ("\n" + line if "watchdog"
                                                                      in line else ""))
                else:
                    self.outcomes[name] = TestOutcome(NOT_RUN, _skip_reason(text))
                self.running = None
                return
        if self.running is not None and self.size < 6000:
            self.lines.append(line[:1000])
            self.size += len(line)


def _skip_reason(text: str) -> str:
    lines = [l.strip() for l in text.splitlines()]
    for i, line in enumerate(lines):
        if line.endswith("Skipped"):
            return next((after for after in lines[i + 1:] if after), "skipped")
    return "skipped"


def _signal_text(status: int) -> str:
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"it was killed by {name}"
    if status > 128 and status - 128 < 65:
        try:
            return f"it was killed by {signal.Signals(status - 128).name}"
        except ValueError:
            pass
    return f"it exited with status {status}"


@dataclass
class Clock:
    """The wall-clock budget of one phase of a submission (paused while it waits for a GPU)."""

    limit: float
    used: float = 0.0

    @property
    def left(self) -> float:
        return max(0.0, self.limit - self.used)

    def spend(self, seconds: float) -> None:
        self.used += seconds


def run_tests(sandbox: isolation.Sandbox, program: str, tests: list[str], env: dict[str, str],
              clock: Clock, limits: isolation.Limits) -> dict[str, TestOutcome]:
    """Runs `tests` of a test program, resuming in a fresh process after one that crashed or
    that the watchdog ended, until every test has an outcome or the clock runs out."""
    outcomes: dict[str, TestOutcome] = {}
    pending = list(tests)
    while pending:
        if clock.left < 1:
            for name in pending:
                outcomes[name] = TestOutcome(FAILED, "failed: not reached before the submission's "
                                                     f"time limit ({clock.limit:.0f} s) was spent")
            break
        reader = GtestReader()
        selected = ":".join(pending) if len(pending) < len(tests) or len(pending) < 40 else \
            _suite_filter(pending)
        watchdog = max(1, min(WATCHDOG_S, int(clock.left)))
        outcome = sandbox.run([program, f"--gtest_filter={selected}"], timeout=clock.left,
                              writable=False, limits=limits, on_line=reader,
                              env={**env, "COURSE_TEST_WATCHDOG_S": str(watchdog)})
        clock.spend(outcome.seconds)
        outcomes.update({k: v for k, v in reader.outcomes.items() if k in pending})
        pending = [name for name in pending if name not in reader.outcomes]
        if pending and not _after_a_stop(outcome, reader, pending, outcomes, clock):
            break
    return outcomes


def _after_a_stop(outcome: isolation.Outcome, reader: GtestReader, pending: list[str],
                  outcomes: dict[str, TestOutcome], clock: Clock) -> bool:
    """After a run that left tests without an outcome: the test it stopped in fails (hung or
    crashed); whether to run the rest in a fresh process (False: they fail too, and `pending`
    is left as it was)."""
    if outcome.timed_out:
        where = (f" in {reader.running}" if reader.running else
                 " before its first test (a static initializer?)")
        if reader.running in pending:
            outcomes[reader.running] = TestOutcome(
                FAILED, f"timed out: still running{where} when the submission's time limit "
                        f"({clock.limit:.0f} s) was spent (a hang)\n" + "\n".join(reader.lines))
        for name in pending:
            outcomes.setdefault(name, TestOutcome(
                FAILED, f"failed: the test program hung{where}, and the submission's time "
                        f"limit ({clock.limit:.0f} s) was spent"))
        return False
    how = _signal_text(outcome.status)
    if reader.running in pending:
        outcomes[reader.running] = TestOutcome(
            FAILED, f"crashed: the test program stopped in this test ({how})\n"
                    + "\n".join(reader.lines[-40:]))
        pending.remove(reader.running)
        return True
    if reader.outcomes:  # the watchdog ended it between tests: go on with the rest
        return True
    # It stopped before running anything: running it again would do the same.
    for name in pending:
        outcomes[name] = TestOutcome(
            FAILED, f"failed: the test program stopped before its first test ({how})\n"
                    + outcome.output[-1500:])
    return False


def _suite_filter(tests: list[str]) -> str:
    suites = sorted({t.split(".")[0] for t in tests})
    return ":".join(f"{s}.*" for s in suites)


def base_name(test: str) -> tuple[str, str]:
    """("Suite", "Test") of a GoogleTest name: "Prefix/Suite.Test/3" -> ("Suite", "Test")."""
    suite, _, name = test.partition(".")
    return suite.split("/")[-1], name.split("/")[0]


def check_of_test(test: str) -> str:
    suite, name = base_name(test)
    return suite if rubric_module.is_gpu_suite(suite) else f"{suite}.{name}"


def combine(outcomes: list[TestOutcome]) -> TestOutcome:
    """One check's outcome from its tests': any failure fails it; all skipped: not run."""
    if not outcomes:
        return TestOutcome(NOT_RUN, "not run: the test program has no such test")
    failed = [o for o in outcomes if o.status == FAILED]
    if failed:
        return TestOutcome(FAILED, "\n---\n".join(o.output for o in failed[:4]))
    if all(o.status == NOT_RUN for o in outcomes):
        return TestOutcome(NOT_RUN, f"not run: {outcomes[0].output}")
    return TestOutcome(PASSED, "")


# ------------------------------------------------------------------------------- grading


@dataclass
class Options:
    build_limit: float
    run_limit: float
    gpu_reason: str  # "" when the GPU checks can run here
    level: str
    ccache: str
    ccache_dir: Path | None  # None: compile without ccache
    keep_work: bool
    gpu_slots: "GpuSlots | None"
    hidden: list[Path]


class GpuSlots:
    """Which GPUs a submission's GPU steps may use (CUDA_VISIBLE_DEVICES): `per_gpu`
    submissions at a time on each group of `group` GPUs (a lesson's min_gpus)."""

    def __init__(self, gpus: int, per_gpu: int, group: int = 1) -> None:
        groups = [",".join(str(g) for g in range(first, first + group))
                  for first in range(0, gpus - group + 1, group)]
        self._free = [devices for devices in groups for _ in range(max(1, per_gpu))]
        self._lock = threading.Condition()

    def take(self) -> str:
        with self._lock:
            while not self._free:
                self._lock.wait()
            return self._free.pop(0)

    def give(self, gpu: str) -> None:
        with self._lock:
            self._free.append(gpu)
            self._lock.notify()


def gpu_devices() -> list[Path]:
    dev = Path("/dev")
    return sorted(p for p in dev.glob("nvidia*")) + [p for p in (dev / "dri",) if p.exists()]


class Grader:
    def __init__(self, template: Template, rubric: rubric_module.Rubric, options: Options,
                 work_root: Path) -> None:
        self.t = template
        self.rubric = rubric
        self.o = options
        self.work_root = work_root
        self.counter = 0
        # Checks the template cannot run where the class is graded, and why (not_run_here()).
        self.unavailable: dict[str, str] = {}
        self.lock = threading.Lock()

    def sandbox(self, work: Path, with_ccache: bool) -> isolation.Sandbox:
        with self.lock:
            self.counter += 1
            uid = isolation.FIRST_UID + self.counter
        visible = list(self.t.visible)
        return isolation.Sandbox(
            self.o.level, work, visible=visible, hidden=list(self.o.hidden),
            devices=gpu_devices() if not self.o.gpu_reason else [], uid=uid,
            path_dirs=sorted({str(Path(p).parent) for p in (self.t.units[0].command[0],)
                              if "/" in p}))

    # ---- one submission

    def grade(self, submission: Submission, text: bytes | None = None) -> Grade:
        start = time.monotonic()
        grade = Grade(submission.student, self.t.lesson.name,
                      str(submission.path) if submission.path else "", isolation=
                      isolation.DESCRIPTIONS[self.o.level], gpu=self.o.gpu_reason,
                      submitted_at=submission.submitted_at)
        if submission.problem or submission.path is None:
            grade.problem = submission.problem or "no file"
            grade.results = [CheckResult(c, *self._nothing(c, f"not graded: {grade.problem}"))
                             for c in self.rubric.checks]
            return grade
        work = self.work_root / submission.student
        if work.exists():
            shutil.rmtree(work)
        work.mkdir(parents=True)
        (work / f"{self.t.lesson.slug}.cu").write_bytes(text if text is not None else submission.text)
        for unit in self.t.units:
            if unit.text:
                unit_text = unit.text.replace(f'#include "{self.t.starter_file}"',
                                              f'#include "{self.t.lesson.slug}.cu"')
                (work / unit.source.name).write_text(unit_text, encoding="utf-8")
        sandbox = self.sandbox(work, with_ccache=True)
        sandbox.prepare()
        try:
            built, build_output, grade.build_seconds = self._build(sandbox, work)
            grade.build, grade.build_output = (PASSED if built else FAILED), build_output
            if not built:
                grade.results = [CheckResult(c, *self._nothing(
                    c, "failed: your file does not compile or link (see the build entry)"))
                    for c in self.rubric.checks]
            else:
                grade.results, grade.run_seconds = self._run(sandbox, work)
        finally:
            sandbox.give_back()
            if not self.o.keep_work:
                shutil.rmtree(work, ignore_errors=True)
                shutil.rmtree(work.parent / f".{work.name}.root", ignore_errors=True)
        grade.seconds = time.monotonic() - start
        return grade

    def _nothing(self, check: rubric_module.Check, reason: str) -> tuple[str, float | None, str]:
        """A check that could not run because of the submission (it fails), or because of
        this machine or the template's build (not run, no score)."""
        if check.id in self.unavailable:
            return NOT_RUN, None, self.unavailable[check.id]
        if check.tier == "gpu" and self.o.gpu_reason:
            return NOT_RUN, None, f"not run: {self.o.gpu_reason}"
        return FAILED, 0.0, reason

    def _build(self, sandbox: isolation.Sandbox, work: Path) -> tuple[bool, str, float]:
        clock = Clock(self.o.build_limit)
        built, output = self._compile_and_link(sandbox, work, clock)
        return built, output, clock.used

    def _compile_and_link(self, sandbox: isolation.Sandbox, work: Path,
                          clock: Clock) -> tuple[bool, str]:
        outputs = []
        limits = isolation.Limits(cpu_s=int(self.o.build_limit) + 10, address_bytes=COMPILE_MEMORY)
        build_env = {name: os.environ[name] for name in BUILD_ENVIRONMENT if os.environ.get(name)}
        for unit in self.t.units:
            student_file = sandbox.inside(work / f"{self.t.lesson.slug}.cu")
            argv = [word.replace(STUDENT_FILE, student_file) for word in unit.command]
            env = dict(build_env)
            writable: list[Path] = []
            if self.o.ccache_dir is not None:
                # The compiler runs no student code; the cache is keyed by what it compiles.
                argv = [self.o.ccache, *argv]
                env.update({"CCACHE_DIR": str(self.o.ccache_dir), "CCACHE_NOHASHDIR": "1"})
                writable = [self.o.ccache_dir]
            outcome = sandbox.run(argv, timeout=clock.left or 1, env=env, limits=limits,
                                  also_writable=writable)
            clock.spend(outcome.seconds)
            outputs.append(_student_lines(outcome.output))
            if outcome.timed_out:
                return False, (f"the compiler was still running when the build limit "
                               f"({self.o.build_limit:.0f} s) was reached\n" + outputs[-1])
            if outcome.status != 0:
                return False, "\n".join(outputs)
        for target, template in self.t.links.items():
            command = template.replace("@OUT@", shlex.quote(sandbox.inside(work / target)))
            for unit in self.t.units:
                command = command.replace(f"@OBJ:{unit.object_name}@",
                                          shlex.quote(sandbox.inside(work / unit.object_name)))
            outcome = sandbox.run(["/bin/sh", "-c", command], timeout=clock.left or 1,
                                  cwd=self.t.build_dir, env=build_env, limits=limits)
            clock.spend(outcome.seconds)
            if outcome.timed_out or outcome.status != 0:
                return False, f"linking {target} failed:\n{outcome.output[-4000:]}"
        return True, "\n".join(o for o in outputs if o.strip())

    def _run(self, sandbox: isolation.Sandbox, work: Path) -> tuple[list[CheckResult], float]:
        clock = Clock(self.o.run_limit)
        env = {"COURSE_KERNELS_OBJECT": sandbox.inside(work / self.t.units[0].object_name)}
        program = sandbox.inside(work / self.t.test_target)
        cpu_tests = [t for t in self.t.tests if not rubric_module.is_gpu_suite(t.split(".")[0])]
        gpu_tests = [t for t in self.t.tests if rubric_module.is_gpu_suite(t.split(".")[0])]
        memory = None if not self.o.gpu_reason else CPU_RUN_MEMORY
        limits = isolation.Limits(cpu_s=int(self.o.run_limit) * 4 + 10, address_bytes=memory)
        outcomes = run_tests(sandbox, program, cpu_tests, env, clock, limits)
        sanitizer_results: dict[str, TestOutcome] = {}
        if not self.o.gpu_reason and gpu_tests:
            gpu = self.o.gpu_slots.take() if self.o.gpu_slots else "0"
            try:
                genv = {**env, "CUDA_VISIBLE_DEVICES": gpu}
                by_suite: dict[str, list[str]] = {}
                for test in gpu_tests:
                    by_suite.setdefault(base_name(test)[0], []).append(test)
                for suite, tests in by_suite.items():
                    outcomes.update(run_tests(sandbox, program, tests, genv, clock, limits))
                values_ok = all(outcomes.get(t, TestOutcome(FAILED)).status != FAILED
                                for t in self.t.tests
                                if self.rubric.check(check_of_test(t)) is not None and
                                self.rubric.check(check_of_test(t)).kind == "values")
                sanitizer_results = self._sanitizers(sandbox, work, genv, clock, limits, values_ok)
            finally:
                if self.o.gpu_slots:
                    self.o.gpu_slots.give(gpu)
        return self._score(outcomes, sanitizer_results), clock.used

    def _sanitizers(self, sandbox, work, env, clock, limits, values_ok) -> dict[str, TestOutcome]:
        results = {}
        tools = [tool for tool, _ in rubric_module.SANITIZERS]
        if not values_ok:
            return {tool: TestOutcome(FAILED, "failed: the value tests fail, and a clean race "
                                              "check of a wrong program proves nothing (the "
                                              "check runs the sanitizers once the tests pass)")
                    for tool in tools}
        if not self.t.sanitizer:
            return {tool: TestOutcome(NOT_RUN, "not run: compute-sanitizer was not found by "
                                               "the template build") for tool in tools}
        sanitize = self.t.root / "tools" / "sanitize.py"
        program = sandbox.inside(work / self.t.program_target)
        for tool in tools:
            if clock.left < 1:
                results[tool] = TestOutcome(FAILED, "failed: not reached before the submission's "
                                                    f"time limit ({clock.limit:.0f} s) was spent")
                continue
            argv = [sys.executable, str(sanitize), "--sanitizer", self.t.sanitizer, "--tool", tool,
                    "--warnings-fail", *sanitize_arguments(self.t.lesson)]
            if self.t.cuobjdump:
                argv += ["--cuobjdump", self.t.cuobjdump]
            argv += ["--", program, *PROGRAM_ARGS]
            outcome = sandbox.run(argv, timeout=clock.left, env=env, limits=limits, writable=False)
            clock.spend(outcome.seconds)
            verdict = [l for l in outcome.output.splitlines() if l.startswith("sanitize.py:")]
            text = "\n".join(verdict[-3:]) + "\n" + outcome.output[-3000:]
            if outcome.timed_out:
                results[tool] = TestOutcome(FAILED, f"timed out under {tool}: a hang\n{text}")
            elif outcome.status == 0:
                results[tool] = TestOutcome(PASSED, "\n".join(verdict[-1:]))
            elif outcome.status == build.SKIP_EXIT_CODE:
                results[tool] = TestOutcome(NOT_RUN, f"not run: the program skipped under {tool}")
            elif outcome.status == 1:
                results[tool] = TestOutcome(FAILED, text)
            else:
                results[tool] = TestOutcome(NOT_RUN, f"not run: sanitize.py could not judge "
                                                     f"({_signal_text(outcome.status)})\n{text}")
        return results

    def _score(self, outcomes: dict[str, TestOutcome],
               sanitizers: dict[str, TestOutcome]) -> list[CheckResult]:
        by_check: dict[str, list[TestOutcome]] = {}
        for test in self.t.tests:
            if test in outcomes:
                by_check.setdefault(check_of_test(test), []).append(outcomes[test])
        results = []
        for check in self.rubric.checks:
            if check.id in self.unavailable or (check.tier == "gpu" and self.o.gpu_reason):
                results.append(CheckResult(check, *self._nothing(check, "")))
                continue
            if check.id in sanitizers:
                outcome = sanitizers[check.id]
            elif check.id in dict(rubric_module.SANITIZERS):
                outcome = TestOutcome(NOT_RUN, "not run: this lesson has no GPU tests")
            else:
                outcome = combine(by_check.get(check.id, []))
            score = None if outcome.status == NOT_RUN else (
                check.points if outcome.status == PASSED else 0.0)
            text = outcome.output
            if check.free and outcome.status != NOT_RUN:
                text = (check.note + ("\n" + text if text else "")).strip()
            results.append(CheckResult(check, outcome.status, score, text))
        return results


INSIDE_WORK = isolation.INSIDE_WORK


def _student_lines(output: str, limit: int = 60) -> str:
    """The compiler's output, first lines (the first error is what matters)."""
    lines = [l for l in output.splitlines() if l.strip()]
    if len(lines) > limit:
        lines = lines[:limit] + [f"[... {len(lines) - limit} more lines ...]"]
    return "\n".join(lines)


# ------------------------------------------------------------------------- calibration


def starter_results(grader: Grader, root: Path) -> list[CheckResult]:
    """The untouched starter's results: the checks it passes earn nothing, and those it could
    not run cannot run here for anyone (not_run_here). When lessons/NN_slug/ holds the fresh
    starter (or this repository has no solutions to make one from), the template's own build is
    that starter and its test program is run as it is; otherwise the fresh starter is graded
    like a submission."""
    lesson = grader.t.lesson
    solution = lesson.solution_dir(root) / f"{lesson.slug}.cu"
    fresh = starter.expected_starter(root, solution) if solution.is_file() else None
    current = grader.t.starter_file.read_text(encoding="utf-8")
    log("grading the untouched starter first: the checks it passes earn nothing")
    if fresh is None or fresh == current:
        work = grader.work_root / "_starter"
        work.mkdir(parents=True, exist_ok=True)
        trusted = isolation.Sandbox("process", work)  # the instructor's own build
        program = str(grader.t.build_dir / "bin" / grader.t.test_target)
        tests = [t for t in grader.t.tests if not rubric_module.is_gpu_suite(t.split(".")[0])
                 or not grader.o.gpu_reason]
        outcomes = run_tests(trusted, program, tests, {}, Clock(grader.o.run_limit),
                             isolation.Limits())
        shutil.rmtree(work, ignore_errors=True)
        results = grader._score(outcomes, {})
    else:
        grade = grader.grade(Submission("_starter", grader.t.starter_file, fresh.encode("utf-8")))
        if grade.build != PASSED:
            raise CourseError(f"the untouched starter of lesson {lesson.number} does not build in "
                              f"the grader:\n{grade.build_output[-3000:]}", exit_code=1)
        results = grade.results
    return results


def not_run_here(grader: Grader, starter: list[CheckResult]) -> dict[str, str]:
    """The checks the template cannot run where the class is graded, each with why: those every
    test of which the untouched starter's own run skipped (a test skips for the machine or the
    build, never for the student's code: a SASS check without cuobjdump, an sm_80 check of an
    sm_90-only build), and on a GPU machine the sanitizer checks without compute-sanitizer or
    without GPU tests. Each is "not run" for every student, so that one whose file does not
    compile, is missing or hangs does not fail a check the others do not have: the maximum
    is the same for the whole class."""
    sanitizers = dict(rubric_module.SANITIZERS)
    found = {r.check.id: f"{r.output or 'not run'}; it runs for no student here" for r in starter
             if r.status == NOT_RUN and r.check.id not in sanitizers
             and not (r.check.tier == "gpu" and grader.o.gpu_reason)}
    if not grader.o.gpu_reason:
        has_gpu_tests = any(rubric_module.is_gpu_suite(t.split(".")[0]) for t in grader.t.tests)
        why = ("compute-sanitizer was not found by the template build" if not grader.t.sanitizer
               else "" if has_gpu_tests else "this lesson has no GPU tests")
        found.update({tool: f"not run: {why}" for tool in sanitizers if why})
    return found


# --------------------------------------------------------------------------------- command


def build_rubric(root: Path, lesson: Lesson, rubric_file: str | None,
                 passes: set[str] | None) -> rubric_module.Rubric:
    overrides = []
    if lesson.rubric:
        overrides.append((f"lessons/catalog.json ({lesson.name})",
                          rubric_module.validate_override(lesson.rubric,
                                                          f"catalog rubric of {lesson.name}")))
    if rubric_file:
        overrides.append((rubric_file, rubric_module.read_override_file(Path(rubric_file))))
    return rubric_module.build_rubric(root, lesson, catalog_rubric(root), overrides, passes)


def gpu_reason_of(template: Template) -> str:
    lesson = template.lesson
    major, minor = lesson.min_cc_tuple
    arch = f"sm_{major}{minor}"
    probe = template.probe
    if probe.status != "gpu":
        return f"needs a GPU ({arch})"
    if probe.compute_capability < lesson.min_cc_tuple:
        have = "sm_{}{}".format(*probe.compute_capability)
        return f"needs a GPU ({arch} or newer); this one is {have}"
    if probe.gpu_count < lesson.min_gpus:
        return f"needs {lesson.min_gpus} GPUs; this machine has {probe.gpu_count}"
    return ""


def parse_formats(text: str) -> list[str]:
    formats = [f.strip() for f in text.split(",") if f.strip()]
    for f in formats:
        if f not in grade_formats.FORMATS:
            raise CourseError(f"unknown format {f!r}; the formats are {', '.join(grade_formats.FORMATS)}")
    return formats


def prepare_out(out: Path, level: str) -> Path:
    out.mkdir(parents=True, exist_ok=True)
    work_root = out / "work"
    work_root.mkdir(exist_ok=True)
    # Level "user": a submission's own user id must get through to its work folder, and no
    # further: the folders above it can be passed through but not listed.
    os.chmod(out, 0o711 if level == "user" else 0o700)
    os.chmod(work_root, 0o711 if level == "user" else 0o700)
    return work_root


def _out_and_submissions(args: argparse.Namespace) -> tuple[Path, Path | None]:
    out = Path(args.out).resolve()
    if args.show_rubric and not args.submissions:  # grades nothing but the starter: no OUT
        import tempfile
        out = Path(tempfile.mkdtemp(prefix="course-rubric-"))
    submissions = Path(args.submissions).resolve() if args.submissions else None
    if submissions is None and not args.show_rubric:
        raise CourseError("name the submissions: a folder of per-student folders or files, or one file")
    if submissions is not None and (out == submissions or isolation._inside(out, submissions)):
        raise CourseError("--out must not lie inside the submissions folder")
    return out, submissions


def _hidden(root: Path, lesson: Lesson, build_dir: Path, out: Path,
            submissions: Path | None) -> list[Path]:
    """What no submission may see: the solutions, the history, the build folders (the
    template is visible again inside them), the grades and the class's files; of the
    template, its programs and this lesson's solution objects."""
    hidden = [lesson.solution_dir(root).parent, root / ".git", build_root(root), out]
    if submissions is not None:
        hidden.append(submissions if submissions.is_dir() else submissions.parent)
    hidden += [build_dir / "bin"] + [
        build_dir / "lessons" / lesson.name / "CMakeFiles" / f"{lesson.name}_{kind}.dir"
        for kind in ("solution_kernels", "solution_test_kernels", "solution", "solution_test")]
    return [h.resolve() for h in hidden if h.exists()]


def _options(root: Path, lesson: Lesson, args, template: Template, out: Path,
             submissions: Path | None) -> tuple[Options, str]:
    level, why = isolation.detect(out / "work" / ".probe", args.isolation)
    if args.isolation not in ("auto", level):
        raise CourseError(f"--isolation {args.isolation} does not work on this machine: {why}")
    gpu_reason = gpu_reason_of(template)
    ccache = shutil.which("ccache") or ""
    ccache_dir = None
    if ccache and level == "namespaces":
        ccache_dir = Path(os.environ.get("CCACHE_DIR") or Path.home() / ".cache" / "ccache")
        ccache_dir.mkdir(parents=True, exist_ok=True)
    gpus = template.probe.gpu_count if not gpu_reason else 0
    options = Options(args.build_limit, args.limit, gpu_reason, level, ccache, ccache_dir,
                      args.keep_work,
                      GpuSlots(gpus, args.gpu_jobs, lesson.min_gpus) if gpus else None,
                      _hidden(root, lesson, template.build_dir, out, submissions))
    log(f"lesson {lesson.number} ({lesson.title}); template {shown(template.build_dir, root)}")
    log(f"isolation: {isolation.DESCRIPTIONS[level]}" + (f" ({why})" if why else ""))
    if level == "process":
        log("WARNING: the submissions' code runs as you, with your files within its reach. Grade "
            "untrusted code on a machine where namespaces work, or as root in a throwaway container.")
    log("GPU checks: " + ("run on " + template.probe.message if not gpu_reason else
                          f"not run ({gpu_reason}); the CPU tier is graded"))
    return options, level


def grade_class(grader: Grader, submissions: list[Submission], jobs: int) -> list[Grade]:
    """Every submission graded, `jobs` at a time; a failure of the grader itself on one of them
    is that one's problem, not the class's."""
    grades: dict[str, Grade] = {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
        futures = {pool.submit(grader.grade, s): s for s in submissions}
        for future in concurrent.futures.as_completed(futures):
            submission = futures[future]
            try:
                grade = future.result()
            except Exception as error:  # noqa: BLE001 (any failure: this grade says so)
                grade = Grade(submission.student, grader.t.lesson.name, str(submission.path or ""),
                              problem=f"the grader failed: {error!r}",
                              isolation=isolation.DESCRIPTIONS[grader.o.level], gpu=grader.o.gpu_reason)
            grades[submission.student] = grade
            log(f"  {grade.student:<24} {grade_formats.number(grade.score):>6} / "
                f"{grade_formats.number(grade.max_score):<6} {grade.seconds:6.1f} s  "
                f"{_headline(grade)}")
    return [grades[s.student] for s in submissions]


def class_build_warning(grades: list[Grade]) -> str:
    """A warning for the instructor when no submission of two or more that were built compiled
    and linked: then the template or this machine is the likely cause, not every student's
    file, and the first one's build output shows what went wrong ("" otherwise)."""
    built = [g for g in grades if g.build]
    if len(built) < 2 or any(g.build == PASSED for g in built):
        return ""
    return (f"warning: none of the {len(built)} submissions that were built compiled and linked; "
            f"the template build or this machine is the likely cause. {built[0].student}'s "
            f"build output:\n{built[0].build_output[-3000:]}")


def cmd_grade(root: Path, args: argparse.Namespace) -> int:
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    formats = parse_formats(args.format)
    out, submissions_path = _out_and_submissions(args)
    template = load_template(root, lesson, ensure_template(root, lesson, args))
    options, level = _options(root, lesson, args, template, out, submissions_path)
    grader = Grader(template, build_rubric(root, lesson, args.rubric, None), options,
                    prepare_out(out, level))
    starter_grade = starter_results(grader, root)
    rubric = build_rubric(root, lesson, args.rubric,
                          {r.check.id for r in starter_grade if r.status == PASSED})
    grader.rubric = rubric
    grader.unavailable = not_run_here(grader, starter_grade)
    for check_id, why in grader.unavailable.items():
        log(f"{check_id}: {why}")
    if args.show_rubric:
        print(json.dumps(rubric.as_json(), indent=2))
        if not args.submissions:
            shutil.rmtree(out, ignore_errors=True)
        return 0

    submissions = find_submissions(submissions_path, lesson, args.student)
    jobs = max(1, min(len(submissions), args.jobs or (os.cpu_count() or 1)))
    log(f"grading {len(submissions)} submission(s), {jobs} at a time; limits: build "
        f"{args.build_limit:.0f} s, runs {args.limit:.0f} s per submission")
    started = time.monotonic()
    grades = grade_class(grader, submissions, jobs)
    warning = class_build_warning(grades)
    if warning:
        log(warning)
    written = grade_formats.write(out, grades, rubric, formats, args.visibility)
    shutil.rmtree(out / "work" / ".probe", ignore_errors=True)
    log(f"graded {len(grades)} submission(s) in {time.monotonic() - started:.0f} s; wrote "
        f"{len(written)} file(s) under {out}")
    return 0


def _headline(grade: Grade) -> str:
    if grade.problem:
        return f"not graded: {grade.problem}"
    if grade.build == FAILED:
        return "does not compile or link"
    failed = [r for r in grade.results if r.status == FAILED]
    words = []
    if failed:
        words.append(f"{len(failed)} check(s) failed")
    hung = [r for r in failed if "timed out" in r.output or "hung" in r.output]
    crashed = [r for r in failed if r.output.startswith("crashed") or "stopped before" in r.output]
    if hung:
        words.append("hangs")
    if crashed:
        words.append("crashes")
    return ", ".join(words) or "every check that ran passed"


# -------------------------------------------------------------------------- registration


def add_commands(add) -> None:
    """Registers `grade` and `autograder` with the CLI's command table (commands.py)."""
    from . import bundles

    grade = add("grade", cmd_grade,
                "instructors: grade a class's submissions of a lesson, each in isolation, and "
                "write the grades for Gradescope, PrairieLearn, Classroom 50, JUnit or CSV")
    grade.add_argument("lesson", help="lesson number or slug")
    grade.add_argument("submissions", nargs="?",
                       help="a folder of per-student folders, a folder of files named by "
                            "student, or one student's file")
    add_grade_options(grade)
    bundle = add("autograder", bundles.cmd_autograder,
                 "instructors: write the autograder bundle a platform takes (Gradescope's "
                 "setup.sh and run_autograder, Classroom 50's autograder.py and runtime)")
    bundle.add_argument("lesson", help="lesson number or slug")
    bundle.add_argument("--format", required=True, choices=bundles.BUNDLES)
    bundle.add_argument("--out", required=True, metavar="DIR", help="the folder to write")
    bundle.add_argument("--rubric", metavar="FILE", help="an instructor's rubric to ship with it")
    bundle.add_argument("--limit", type=float, default=300,
                        help="seconds the runs of the submission may take (default 300)")


def add_grade_options(command) -> None:
    command.add_argument("--format", default="csv",
                         help="one or more of " + ", ".join(grade_formats.FORMATS) +
                              ", comma-separated (default csv; grades.json is always written)")
    command.add_argument("--out", default="grades", metavar="DIR",
                         help="where the grades go (default ./grades)")
    command.add_argument("--jobs", type=int, default=0, metavar="N",
                         help="submissions graded at a time (default: one per CPU)")
    command.add_argument("--gpu-jobs", type=int, default=1, metavar="N",
                         help="submissions running on one GPU at a time (default 1)")
    command.add_argument("--limit", type=float, default=300, metavar="SECONDS",
                         help="wall-clock limit of a submission's test and sanitizer runs "
                              "(default 300; waiting for a GPU is not counted)")
    command.add_argument("--build-limit", type=float, default=600, metavar="SECONDS",
                         help="wall-clock limit of a submission's compile and link (default 600)")
    command.add_argument("--rubric", metavar="FILE",
                         help="an instructor's rubric (JSON) over the catalog's; see "
                              "--show-rubric for the one in force")
    command.add_argument("--show-rubric", action="store_true",
                         help="print the rubric in force (after grading the starter) and stop")
    command.add_argument("--student", metavar="NAME",
                         help="SUBMISSIONS is this one student's file or folder")
    command.add_argument("--isolation", default="auto", choices=("auto",) + isolation.LEVELS,
                         help="the sandbox (default: the strongest this machine allows)")
    command.add_argument("--visibility", default="visible", choices=grade_formats.VISIBILITIES,
                         help="Gradescope's visibility of the tests (default visible)")
    command.add_argument("--build-dir", metavar="DIR",
                         help="a configured build folder to use as the template "
                              "(default build/grade/NN_slug, configured from --preset)")
    command.add_argument("--preset", default="default",
                         help="configure preset of the template (default: default)")
    command.add_argument("--architectures", metavar="LIST",
                         help="CMAKE_CUDA_ARCHITECTURES of a new template, e.g. 90 (the grade "
                              "checks the PTX of each)")
    command.add_argument("--no-build", action="store_true",
                         help="use the template as it is built (do not run cmake --build)")
    command.add_argument("--keep-work", action="store_true",
                         help="keep each submission's work folder under OUT/work")
