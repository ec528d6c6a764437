"""Grading operator mutants the way `./course check NN` grades a student: compile and link
each mutant like the build (graders/mutation.py's MutantBuild), run every test of the
lesson, then the program --quick under racecheck, synccheck and memcheck; the first step
that fails catches it. Many at once: --jobs compilations, --gpu-jobs programs on the GPU,
timing lessons confirmed with the GPU to themselves; every verdict is appended to a
JSON-lines results file, so a later call carries on where a stopped one left off.
"""
from __future__ import annotations

import datetime
import hashlib
import json
import os
import re
import shutil
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from . import ROOT, mutation
from .code_reading import compact
from .mutants import Mutant, ready_lessons, select_lessons


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


class OutOfTime(Exception):
    """This call's time limit leaves too little time for a mutant's next step: the mutant is
    left for the next call."""


@dataclass
class MutantJob:
    """One mutant on its way through the grading steps, and what they found so far."""
    mutant: Mutant
    run: LessonRun
    work: Path                     # the mutant's own folder
    timings: dict = field(default_factory=dict)   # seconds per step, for the results file
    obj: Path | None = None        # the mutant's object file (the PTX and SASS tests read it)
    programs: dict = field(default_factory=dict)  # {target: the program linked with it}


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
        job = MutantJob(m, run, self.work_dir(m))
        try:
            verdict, step, detail = self.judge(job)
        except OutOfTime:
            return None
        finally:
            if not self.args.keep:
                shutil.rmtree(job.work, ignore_errors=True)
        return dict(record, verdict=verdict, step=step, detail=detail, seconds=job.timings)

    def judge(self, job: MutantJob) -> tuple[str, str, str]:
        """(verdict, step, detail) of one mutant: the first of its steps that decides.
        Raises OutOfTime when this call's time limit leaves too little for the next step."""
        for step in (self.build_step, self.baseline_step, self.tests_step):
            decided = step(job)
            if decided:
                return decided
        return self.sanitizers_step(job)

    def need(self, seconds: float) -> None:
        """Raises OutOfTime unless `seconds` are left before this call's time limit."""
        if self.remaining() < seconds:
            raise OutOfTime

    def build_step(self, job: MutantJob) -> tuple[str, str, str] | None:
        """Compiles and links the mutant (a compile error catches it)."""
        with self.cpu:
            self.need(60)
            t = time.monotonic()
            compiled, log, job.obj = job.run.build.compile(job.mutant.text, job.work)
            job.timings["compile"] = round(time.monotonic() - t, 1)
            if not compiled:
                first = next((l for l in log.splitlines() if "error" in l), log[-200:])
                return "caught", "compile", compact(first)[:200]
            t = time.monotonic()
            try:
                job.programs = job.run.build.link(job.obj, job.work)
            except RuntimeError as error:
                return "error", "link", str(error)[:300]
            job.timings["link"] = round(time.monotonic() - t, 1)
        return None

    def baseline_step(self, job: MutantJob) -> tuple[str, str, str] | None:
        """Waits for the solution's own verdict: no verdict of a lesson whose solution fails
        can be trusted. (Without a GPU the tests still run: a failing CPU test, a PTX or SASS
        check, catches a mutant anywhere; the rest is "skipped: no GPU".)"""
        job.run.ready.wait()
        if not job.run.usable and "no GPU" not in job.run.why:
            return "error", "baseline", job.run.why
        return None

    def tests_step(self, job: MutantJob) -> tuple[str, str, str] | None:
        """Every test of the lesson against the mutant. The first failing test is the verdict
        (fail fast), except where a failure may be the crowd's doing and is confirmed alone:
        there every test must have run, or a mutant whose first failure was only the crowd's
        would skip the tests after it."""
        run = job.run
        with self.gpu.shared():
            self.need(min(run.test_timeout, 60))
            t = time.monotonic()
            tests = mutation.grade_tests(job.programs[run.test_target], job.obj,
                                         min(run.test_timeout, self.remaining()),
                                         fail_fast=not run.alone)
            job.timings["tests"] = round(time.monotonic() - t, 1)
        if tests.verdict == "caught" and run.alone and tests.failed:
            tests = self.confirm_tests_alone(job, tests.failed)
        if tests.verdict == "caught" and "time out" in tests.detail and self.remaining() <= 1:
            raise OutOfTime  # cut by this call's time limit, not by its own hang
        if tests.verdict in ("caught", "skipped"):
            return tests.verdict, "tests", tests.detail[:300]
        return None

    def confirm_tests_alone(self, job: MutantJob, failed: tuple[str, ...]) -> mutation.Outcome:
        """A test of overlap or bandwidth may fail only because other mutants share the GPU:
        the failing tests again, with the GPU to itself. (A hang is not confirmed: the
        timeout is several times the solution's own time.)"""
        run = job.run
        with self.gpu.exclusive():
            self.need(min(run.test_timeout, 60))
            t = time.monotonic()
            tests = mutation.grade_tests(job.programs[run.test_target], job.obj,
                                         min(run.test_timeout, self.remaining()), failed)
            job.timings["tests alone"] = round(time.monotonic() - t, 1)
        return tests

    def sanitizers_step(self, job: MutantJob) -> tuple[str, str, str]:
        """The lesson program --quick under each sanitizer tool; a mutant none of them
        reports survives."""
        if not self.sanitizer:
            return "error", "sanitizers", "no compute-sanitizer to run"
        t = time.monotonic()
        for tool in mutation.SANITIZER_TOOLS:
            checked = self.sanitize(job, tool)
            if checked.verdict != "passed":
                job.timings["sanitizers"] = round(time.monotonic() - t, 1)
                return checked.verdict, checked.step, checked.detail[:300]
        job.timings["sanitizers"] = round(time.monotonic() - t, 1)
        return ("survived", "", "every test passes and racecheck, synccheck and memcheck are "
                "clean")

    def sanitize(self, job: MutantJob, tool: str) -> mutation.Outcome:
        """One sanitizer tool's outcome. A sanitizer slows a program down many times, and more
        on a crowded GPU and CPU: a timeout there is believed only when it repeats with the
        GPU to itself and twice the time."""
        run, program = job.run, job.programs[job.run.exe_target]
        with self.gpu.shared():
            self.need(min(run.sanitize_timeout, 60))
            checked = mutation.grade_sanitizers(program, self.sanitizer, self.cuobjdump,
                                                min(run.sanitize_timeout, self.remaining()),
                                                (tool,), run.sanitize_args)
        if checked.verdict == "caught" and "time" in checked.detail:
            if self.remaining() <= 1:
                raise OutOfTime
            with self.gpu.exclusive():
                timeout = min(2 * run.sanitize_timeout, self.args.max_timeout)
                self.need(timeout)
                checked = mutation.grade_sanitizers(program, self.sanitizer, self.cuobjdump,
                                                    timeout, (tool,), run.sanitize_args)
        return checked

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
        """Grades every selected mutant not graded before with the same inputs: 0 when all
        are graded, 3 when time ran out (run the same command again), 77 when some could not
        be judged for want of a GPU."""
        previous = read_results([self.results.path])
        digests = {m.id: input_hash(m) for m in self.mutants}
        todo = self.not_graded(previous, digests)
        if not todo:
            return 0
        if self.args.compile_only:
            return self.compile_only(todo, digests)
        runs = self.prepare(sorted({m.lesson for m in todo}))
        baselines = self.known_baselines(previous)
        order = grading_order(todo, runs)
        # One thread per mutant: the semaphores, not the pool, limit what runs at once (a
        # thread waiting for the GPU to itself must not keep others from compiling).
        with ThreadPoolExecutor(max_workers=len(order) + len(runs)) as pool:
            for run in runs.values():
                pool.submit(self.baseline, run, baselines.get((run.name, run.digest)))
            futures = [pool.submit(self.one, m, runs[m.lesson], digests[m.id]) for m in order]
            for f in futures:
                f.result()
        return self.summary()

    def not_graded(self, previous: list[dict], digests: dict[str, str]) -> list[Mutant]:
        """The selected mutants without a final verdict of the same inputs in the results."""
        final = ("caught", "survived", "compiled") if self.args.compile_only else \
            ("caught", "survived")
        done = {r["id"]: r.get("hash") for r in previous
                if r.get("id") and r.get("verdict") in final}
        todo = [m for m in self.mutants if done.get(m.id) != digests[m.id]]
        self.say(f"{len(self.mutants)} mutants selected, {len(self.mutants) - len(todo)} already "
                 f"graded in {self.results.path}, {len(todo)} to grade; --jobs {self.args.jobs} "
                 f"--gpu-jobs {self.args.gpu_jobs}, time limit {self.args.time_limit:.0f} s")
        return todo

    def known_baselines(self, previous: list[dict]) -> dict[tuple[str, str], dict]:
        """{(lesson, hash): baseline record} of the results' baselines on this GPU."""
        baselines = {}
        for r in previous:
            if r.get("kind") == "baseline" and r.get("gpu") == self.gpu_name and self.gpu_name:
                baselines[(r["lesson"], r["hash"])] = r
        return baselines

    def summary(self) -> int:
        """Says what this call graded; its exit code."""
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


def grading_order(todo: list[Mutant], runs: dict[str, LessonRun]) -> list[Mutant]:
    """The order mutants are started in. The lessons whose caught verdicts are confirmed with
    the GPU alone go first: a confirmation waits until every program on the GPU has finished,
    and early on those are the timing lessons' own short runs, not another lesson's mutant
    hanging until its timeout. Within each group, round robin over the lessons, the one with
    the most mutants first: the GPU runs a mix of lessons at any time, and a time limit cuts
    every lesson a little."""
    lessons = sorted({m.lesson for m in todo})
    order = []
    for group in (sorted(n for n in lessons if runs[n].alone),
                  sorted(n for n in lessons if not runs[n].alone)):
        queues = {name: [m for m in todo if m.lesson == name] for name in group}
        while any(queues.values()):
            for name in sorted(queues, key=lambda n: -len(queues[n])):
                if queues[name]:
                    order.append(queues[name].pop(0))
    return order
