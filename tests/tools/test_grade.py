#!/usr/bin/env python3
"""Unit tests of `./course grade` and `./course autograder` that build nothing (seconds):
the rubric read from the test sources, the sandbox, the test runner's crash/hang handling on a
fake GoogleTest program, finding submissions, every output format against what its platform
documents, and the bundles. The synthetic class graded for real is test_grade_class.py."""

from __future__ import annotations

import json
import os
import py_compile
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
import unittest
import unittest.mock
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import platform_formats  # noqa: E402
from course_cli import bundles, grade, grade_formats, isolation, rubric  # noqa: E402
from course_cli.catalog import catalog_rubric, find_lesson, load_catalog  # noqa: E402
from course_cli.errors import CourseError  # noqa: E402
from course_cli.grade_formats import FAILED, NOT_RUN, PASSED, CheckResult, Grade  # noqa: E402

LESSON = find_lesson(load_catalog(REPO), "08")


class TestSourceTest(unittest.TestCase):
    SOURCE = textwrap.dedent(r'''
        namespace {
        using course::testing::concerns_todo;
        constexpr std::uint64_t kBig = 1'000'000;  // a digit separator, not a char literal
        const std::string kBoth = concerns_todos({8, 9});
        const std::vector<int> kSizes = {1, 2, 3};
        int which_todo(bool a) { return a ? 4 : 5; }
        std::string tags(int scope) { return scope ? concerns_todos({1, 2}) : concerns_todo(7); }
        ::testing::AssertionResult check(int n, Hold hold = {}) {
          if (n) return ::testing::AssertionFailure() << "x" << tags(n);
          return ::testing::AssertionSuccess();
        }
        }  // namespace
        TEST(ModelShape, Direct) { EXPECT_EQ(1, 2) << concerns_todo(3) << "'{'"; }
        TEST(ModelShape, None) { EXPECT_EQ(1, 1); }
        TEST(ModelShape, ThroughAVariable) { EXPECT_EQ(1, 1) << kBoth; }
        TEST(ModelPtx, ThroughAHelperNumber) { EXPECT_TRUE(x) << concerns_todo(which_todo(true)); }
        class GpuThing : public GpuTest {
         protected:
          void run() { EXPECT_TRUE(check(3)); }
        };
        TEST_F(GpuThing, UsesTheFixture) { run(); }
        TEST_P(GpuOther, ThroughTwoCalls) { ASSERT_TRUE(check(1)); }
        ''')

    def test_each_tests_todos_come_from_its_tags_helpers_and_fixture(self):
        todos = rubric.todos_of_tests(self.SOURCE)
        self.assertEqual(todos["ModelShape.Direct"], [3])
        self.assertEqual(todos["ModelShape.None"], [])
        self.assertEqual(todos["ModelShape.ThroughAVariable"], [8, 9])
        self.assertEqual(todos["ModelPtx.ThroughAHelperNumber"], [4, 5])
        self.assertEqual(todos["GpuThing.UsesTheFixture"], [1, 2, 7])
        self.assertEqual(todos["GpuOther.ThroughTwoCalls"], [1, 2, 7])

    def test_every_test_of_every_lesson_is_found(self):
        import re
        for source in sorted((REPO / "tests").glob("*_test.cu")):
            text = source.read_text()
            declared = set(re.findall(r"^(?:TEST|TEST_F|TEST_P)\s*\(\s*(\w+)\s*,\s*(\w+)", text, re.M))
            found = set(tuple(name.split(".")) for name in rubric.todos_of_tests(text))
            self.assertEqual(found, declared, source.name)

    def test_lesson_08_checks_kinds_and_todos(self):
        checks = {c.id: c for c in rubric.base_checks(REPO, LESSON)}
        ptx = checks["WarpEntanglementPtx.EveryKernelCopiesCommitsWaitsAndArrivesOn"]
        self.assertEqual((ptx.kind, ptx.tier, ptx.todos), ("async_path", "cpu", [3, 4, 5, 6]))
        # concerns_todo(2) in its body and kRules (= concerns_todos({1, 2})), a variable.
        model = checks["WarpEntanglementModel.WaitPriorIsClampedAtEight"]
        self.assertEqual((model.kind, model.tier, model.todos), ("values", "cpu", [1, 2]))
        self.assertEqual(checks["WarpEntanglementModel.PredictionsForTheKernel"].todos, [1, 2])
        self.assertEqual(checks["GpuWarpEntanglementLimits"].tier, "gpu")
        self.assertNotIn("GpuWarpEntanglement.EveryElementAndEveryInvariant", checks)


class RubricTest(unittest.TestCase):
    def build(self, overrides=(), passes=None):
        return rubric.build_rubric(REPO, LESSON, catalog_rubric(REPO), list(overrides), passes)

    def test_points_come_from_the_kind_and_the_weight_of_the_todos(self):
        r = self.build()
        self.assertEqual(r.todo_weights, {1: 1.0, 2: 1.0, 3: 1.0, 4: 2.0, 5: 1.0, 6: 1.0})
        kinds = catalog_rubric(REPO)["kinds"]
        check = r.check("WarpEntanglementPtx.EveryKernelCopiesCommitsWaitsAndArrivesOn")
        self.assertEqual(check.points, kinds["async_path"] * 2)  # TODO 4 is the bug hunt
        self.assertEqual(r.check("WarpEntanglementModel.WaitPriorIsClampedAtEight").points,
                         kinds["values"])
        self.assertEqual(r.check("memcheck").kind, "memory_safe")
        self.assertEqual(r.check("racecheck").todos, [1, 2, 3, 4, 5, 6])

    def test_what_the_starter_passes_is_free_unless_an_override_scores_it(self):
        free = "WarpEntanglementShape.Names"
        r = self.build(passes={free})
        self.assertTrue(r.check(free).free)
        self.assertEqual(r.check(free).points, 0)
        override = rubric.validate_override({"checks": {"*Shape.Names": {"points": 3}}}, "t")
        r = self.build([("file", override)], passes={free})
        self.assertEqual(r.check(free).points, 3)
        scored = rubric.validate_override({"score_what_the_starter_passes": True}, "t")
        self.assertFalse(self.build([("file", scored)], passes={free}).check(free).free)

    def test_an_instructors_file_overrides_kinds_todos_and_checks_in_order(self):
        override = rubric.validate_override({
            "kinds": {"async_path": 5}, "todos": {"2": 3},
            "checks": {"WarpEntanglementSass.*": {"skip": True},
                       "GpuWarpEntanglementLimits": {"todos": [4], "kind": "target"}}}, "t")
        r = self.build([("file", override)])
        self.assertIsNone(r.check("WarpEntanglementSass.LdgstsGroupsAndArriveOnInMachineCode"))
        self.assertEqual(r.check("WarpEntanglementModel.WaitPriorIsClampedAtEight").points,
                         catalog_rubric(REPO)["kinds"]["values"] * 3)
        self.assertEqual(r.check("WarpEntanglementPtx.SyncwarpStandsBetweenTheBranchAndTheCommit")
                         .points, 5 * 2)
        limits = r.check("GpuWarpEntanglementLimits")
        self.assertEqual((limits.kind, limits.todos), ("target", [4]))
        # What --show-rubric prints is accepted back as a rubric file.
        again = rubric.validate_override(json.loads(json.dumps(r.as_json())), "shown")
        self.assertEqual(again["kinds"]["async_path"], 5)

    def test_malformed_rubrics_are_refused_with_the_field(self):
        for bad, word in (({"kind": {}}, "unknown rubric field"), ({"kinds": {"speed": 1}}, "kinds"),
                          ({"todos": {"x": 1}}, "todos"), ({"checks": {"a": {"points": -1}}}, "points"),
                          ({"checks": {"a": {"kind": "fast"}}}, "kind"), ([], "object")):
            with self.assertRaises(CourseError) as raised:
                rubric.validate_override(bad, "file.json")
            self.assertIn(word, str(raised.exception))

    def test_the_catalogs_rubric_fields_are_valid(self):
        defaults = catalog_rubric(REPO)
        self.assertLessEqual(set(defaults["kinds"]), set(rubric.KINDS))
        for lesson in load_catalog(REPO):
            if lesson.rubric:
                rubric.validate_override(lesson.rubric, lesson.name)


FAKE_GTEST = r'''#!/usr/bin/env python3
"""Prints what a GoogleTest program prints; what each test does comes from $FAKE_PLAN."""
import json, os, signal, sys, time
plan = json.loads(os.environ["FAKE_PLAN"])
if plan.get("_static") == "hang":
    while True: time.sleep(1)
if plan.get("_static") == "crash":
    os.kill(os.getpid(), signal.SIGSEGV)
names = [n for n in plan if not n.startswith("_")]
wanted = None
for arg in sys.argv[1:]:
    if arg.startswith("--gtest_filter="):
        pattern = arg.split("=", 1)[1]
        wanted = [n for n in names if n in pattern.split(":") or n.split(".")[0] + ".*" in pattern.split(":")]
for name in (wanted if wanted is not None else names):
    print(f"[ RUN      ] {name}", flush=True)
    what = plan[name]
    if what == "pass": print(f"[       OK ] {name} (0 ms)", flush=True)
    elif what == "fail": print(f"x.cu:1: Failure [concerns TODO 2]\n[  FAILED  ] {name} (0 ms)", flush=True)
    elif what == "skip": print(f"x.cu:1: Skipped\nno usable GPU: none\n[  SKIPPED ] {name} (0 ms)", flush=True)
    elif what == "crash": os.kill(os.getpid(), signal.SIGSEGV)
    elif what == "watchdog":
        print(f"[  FAILED  ] {name} (watchdog): still running after 30 s", flush=True); os._exit(1)
    elif what == "hang":
        while True: time.sleep(1)
sys.exit(0)
'''


class RunTestsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = Path(tempfile.mkdtemp())
        self.program = self.tmp / "fake_test"
        self.program.write_text(FAKE_GTEST)
        self.program.chmod(0o755)
        self.sandbox = isolation.Sandbox("process", self.tmp / "work")
        self.sandbox.prepare()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def run_plan(self, plan: dict, limit: float = 20):
        tests = [n for n in plan if not n.startswith("_")]
        clock = grade.Clock(limit)
        outcomes = grade.run_tests(self.sandbox, str(self.program), tests,
                                   {"FAKE_PLAN": json.dumps(plan)}, clock, isolation.Limits())
        return {k: v.status for k, v in outcomes.items()}, outcomes, clock

    def test_pass_fail_skip(self):
        statuses, outcomes, _ = self.run_plan({"A.a": "pass", "A.b": "fail", "GpuA.c": "skip"})
        self.assertEqual(statuses, {"A.a": PASSED, "A.b": FAILED, "GpuA.c": NOT_RUN})
        self.assertIn("[concerns TODO 2]", outcomes["A.b"].output)
        self.assertEqual(outcomes["GpuA.c"].output, "no usable GPU: none")

    def test_a_crash_fails_its_test_and_the_rest_run_in_a_fresh_process(self):
        statuses, outcomes, _ = self.run_plan({"A.a": "pass", "A.b": "crash", "A.c": "pass",
                                               "A.d": "watchdog", "A.e": "pass"})
        self.assertEqual(statuses, {"A.a": PASSED, "A.b": FAILED, "A.c": PASSED, "A.d": FAILED,
                                    "A.e": PASSED})
        self.assertIn("SIGSEGV", outcomes["A.b"].output)
        self.assertIn("watchdog", outcomes["A.d"].output)

    def test_a_hang_costs_the_limit_and_no_more(self):
        start = time.monotonic()
        statuses, outcomes, clock = self.run_plan({"A.a": "pass", "A.b": "hang", "A.c": "pass"},
                                                  limit=3)
        self.assertLess(time.monotonic() - start, 3 + 2)
        self.assertEqual(statuses, {"A.a": PASSED, "A.b": FAILED, "A.c": FAILED})
        self.assertIn("a hang", outcomes["A.b"].output)
        self.assertIn("time limit", outcomes["A.c"].output)

    def test_a_static_initializer_that_hangs_or_crashes(self):
        statuses, outcomes, _ = self.run_plan({"_static": "hang", "A.a": "pass"}, limit=2)
        self.assertEqual(statuses, {"A.a": FAILED})
        self.assertIn("before its first test", outcomes["A.a"].output)
        statuses, outcomes, _ = self.run_plan({"_static": "crash", "A.a": "pass", "A.b": "pass"})
        self.assertEqual(statuses, {"A.a": FAILED, "A.b": FAILED})
        self.assertIn("stopped before its first test", outcomes["A.a"].output)

    def test_output_without_end_is_bounded(self):
        outcome = isolation.run_bounded(["sh", "-c", "yes 0123456789 | head -c 50000000"], 60)
        self.assertEqual(outcome.status, 0)
        self.assertTrue(outcome.truncated)
        self.assertLess(len(outcome.output), isolation.KEEP_HEAD + isolation.KEEP_TAIL + 100)


class NotRunHereTest(unittest.TestCase):
    """A check the template cannot run where the class is graded (every test of it skipped in
    the untouched starter's own run; the sanitizers on a GPU machine without compute-sanitizer)
    is "not run" for every student: also for one whose file is missing, does not compile or
    hangs, who would otherwise fail a check the others do not have (a higher maximum)."""

    SASS = "WarpEntanglementSass.LdgstsGroupsAndArriveOnInMachineCode"
    SKIP_REASON = "cuobjdump not found: SASS checks need it"

    def grader(self, gpu_reason: str) -> grade.Grader:
        r = rubric.build_rubric(REPO, LESSON, catalog_rubric(REPO), [], None)
        tests = [c.id for c in r.checks if c.tier == "cpu"] + [
            f"{c.id}.EveryElement" for c in r.checks
            if c.tier == "gpu" and c.id not in dict(rubric.SANITIZERS)]
        template = grade.Template(REPO, LESSON, Path("/nonexistent"), [], {}, tests,
                                  sanitizer="", cuobjdump="", probe=None)
        options = grade.Options(60, 60, gpu_reason, "process", "", None, False, None, [])
        work = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, work, True)
        return grade.Grader(template, r, options, work)

    def outcomes(self, grader: grade.Grader, status: str) -> dict[str, grade.TestOutcome]:
        found = {t: grade.TestOutcome(status, "") for t in grader.t.tests}
        found[self.SASS] = grade.TestOutcome(NOT_RUN, self.SKIP_REASON)
        return found

    def test_a_check_the_template_cannot_run_counts_for_no_student(self):
        for gpu_reason in ("needs a GPU (sm_80)", ""):
            g = self.grader(gpu_reason)
            starter = g._score(self.outcomes(g, PASSED), {})  # as the template's own run
            g.unavailable = grade.not_run_here(g, starter)
            expected = {self.SASS} | ({"racecheck", "synccheck", "memcheck"} if not gpu_reason
                                      else set())
            self.assertEqual(set(g.unavailable), expected, gpu_reason)
            solved = g._score(self.outcomes(g, PASSED), {})
            hung = {t: grade.TestOutcome(FAILED, "timed out") for t in g.t.tests}
            missing = g.grade(grade.Submission("niaj", None, problem="no file")).results
            broken = [CheckResult(c, *g._nothing(c, "failed: does not compile"))
                      for c in g.rubric.checks]
            maxima = set()
            for results in (solved, g._score(hung, {}), missing, broken):
                sass = next(r for r in results if r.check.id == self.SASS)
                self.assertEqual((sass.status, sass.score), (NOT_RUN, None))
                self.assertIn(self.SKIP_REASON, sass.output)
                if not gpu_reason:
                    memcheck = next(r for r in results if r.check.id == "memcheck")
                    self.assertIn("compute-sanitizer was not found", memcheck.output)
                maxima.add(Grade("s", LESSON.name, "", results).max_score)
            self.assertEqual(len(maxima), 1, f"{gpu_reason!r}: maxima {maxima}")


class BuildEnvironmentTest(unittest.TestCase):
    """A sandboxed compile and link see the compiler's search paths of the grader's environment
    (the rest is cleared): CMake writes no -L or -I for a folder that LIBRARY_PATH or CPATH
    names, so the template's link of the CUDA runtime can depend on LIBRARY_PATH, and without
    it every submission, a correct one too, would be 'does not compile or link'."""

    def setUp(self):
        if not shutil.which("cc") or not shutil.which("ar"):
            self.skipTest("no C compiler here")
        self.tmp = Path(tempfile.mkdtemp())
        self.addCleanup(shutil.rmtree, self.tmp, True)
        library = self.tmp / "lib"
        library.mkdir()
        (library / "answer.c").write_text("int grade_env_answer(void) { return 42; }\n")
        for command in (["cc", "-c", "answer.c", "-o", "answer.o"],
                        ["ar", "rcs", "libgradeenv.a", "answer.o"]):
            subprocess.run(command, cwd=library, check=True)
        self.library = library

    def grader(self) -> grade.Grader:
        build_dir = self.tmp / "build"
        build_dir.mkdir(exist_ok=True)
        unit = grade.Unit(build_dir / "unit.c", ["cc", "-x", "c", "-c", f"{LESSON.slug}.cu",
                                                 "-o", "unit.o"], str(build_dir), "unit.o",
                          "unit.o", "")
        link = "cc @OBJ:unit.o@ -lgradeenv -o @OUT@"  # as CMake writes it: no -L
        links = {f"{LESSON.name}_test": link, LESSON.name: link}
        template = grade.Template(REPO, LESSON, build_dir, [unit], links, [], "", "", None)
        template.visible = grade.visible_paths(REPO, build_dir, [unit], links)
        level, _ = isolation.detect(self.tmp / "probe")
        options = grade.Options(60, 60, "needs a GPU (sm_80)", level, "", None, False, None, [])
        r = rubric.build_rubric(REPO, LESSON, catalog_rubric(REPO), [], None)
        return grade.Grader(template, r, options, self.tmp / "work")

    def test_the_link_finds_what_library_path_names(self):
        text = b"int grade_env_answer(void);\nint main(void) { return grade_env_answer() != 42; }\n"
        submission = grade.Submission("ann", self.tmp / "ann.cu", text)
        with unittest.mock.patch.dict(os.environ, {"LIBRARY_PATH": str(self.library)}):
            built = self.grader().grade(submission)
        self.assertEqual(built.build, PASSED, built.build_output)
        environ = {k: v for k, v in os.environ.items() if k != "LIBRARY_PATH"}
        with unittest.mock.patch.dict(os.environ, environ, clear=True):
            unlinked = self.grader().grade(submission)
        self.assertEqual(unlinked.build, FAILED)  # what the variable makes the difference for
        self.assertIn("gradeenv", unlinked.build_output)


class IsolationTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = Path(tempfile.mkdtemp())
        cls.level, cls.why = isolation.detect(cls.tmp / "probe")

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def test_the_level_is_one_of_the_three_and_says_what_it_is(self):
        self.assertIn(self.level, isolation.LEVELS)
        self.assertIn(self.level, isolation.DESCRIPTIONS[self.level])
        print(f"\nisolation here: {self.level} {self.why}", file=sys.stderr)

    def test_namespaces_hide_write_protect_and_cut_the_network(self):
        if self.level != "namespaces":
            self.skipTest(f"namespaces are not available here ({self.why})")
        secret = self.tmp / "visible" / "secret"
        secret.mkdir(parents=True)
        (secret / "answer.txt").write_text("42")
        (self.tmp / "visible" / "open.txt").write_text("hello")
        box = isolation.Sandbox("namespaces", self.tmp / "work", visible=[self.tmp / "visible"],
                                hidden=[secret])
        box.prepare()
        script = (f"cat {self.tmp}/visible/open.txt; ls {secret}; "
                  f"echo x > {self.tmp}/visible/new.txt || echo READONLY; "
                  f"echo y > mine.txt && echo WROTE; "
                  f"ls {self.tmp}/probe >/dev/null 2>&1 || echo NOPROBE; "
                  "python3 -c 'import socket; s=socket.socket(); s.settimeout(2); "
                  "s.connect((\"1.1.1.1\", 80))' 2>/dev/null || echo NONET; "
                  "cat /proc/self/status | grep CapEff")
        outcome = box.run(["sh", "-c", script], timeout=60)
        self.assertEqual(outcome.status, 0, outcome.output)
        self.assertIn("hello", outcome.output)
        self.assertNotIn("42", outcome.output)
        for word in ("READONLY", "WROTE", "NOPROBE", "NONET", "CapEff:\t0000000000000000"):
            self.assertIn(word, outcome.output)
        self.assertTrue((self.tmp / "work" / "mine.txt").exists())
        self.assertFalse((self.tmp / "visible" / "new.txt").exists())
        read_only = box.run(["sh", "-c", "echo z > again.txt || echo READONLY"], timeout=60,
                            writable=False)
        self.assertIn("READONLY", read_only.output)

    def test_the_limit_kills_everything_the_command_started(self):
        level = self.level if self.level != "user" else "process"
        box = isolation.Sandbox(level, self.tmp / "work-kill")
        box.prepare()
        marker = self.tmp / "work-kill" / "late.txt"
        start = time.monotonic()
        outcome = box.run(["sh", "-c", f"(sleep 3; echo late > {box.inside(marker)}) & sleep 60"],
                          timeout=1)
        self.assertIsNone(outcome.status)
        self.assertLess(time.monotonic() - start, 10)
        time.sleep(4)
        self.assertFalse(marker.exists(), "a process of the command outlived its limit")


class SubmissionsTest(unittest.TestCase):
    def test_folders_files_and_problems(self):
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            (root / "ann" / "src").mkdir(parents=True)
            (root / "ann" / "src" / "warp_entanglement.cu").write_text("// ann")
            (root / "ben").mkdir()
            (root / "ben" / "mine.cu").write_text("// ben")
            (root / "cy").mkdir()
            (root / "cy" / "a.cu").write_text("")
            (root / "cy" / "b.cu").write_text("")
            (root / "dee_warp_entanglement.cu").write_text("// dee")
            (root / "e v!").mkdir()
            (root / "e v!" / "warp_entanglement.cu").write_text("x" * (grade.MAX_FILE_BYTES + 1))
            found = {s.student: s for s in grade.find_submissions(root, LESSON)}
            self.assertEqual(sorted(found), ["ann", "ben", "cy", "dee", "e_v"])
            self.assertEqual(found["ann"].text, b"// ann")
            self.assertEqual(found["ben"].text, b"// ben")
            self.assertIn("2 other .cu files", found["cy"].problem)
            self.assertEqual(found["dee"].text, b"// dee")
            self.assertIn("limit", found["e_v"].problem)
            one = grade.find_submissions(root / "ann", LESSON, student="ann")
            self.assertEqual([(s.student, s.text) for s in one], [("ann", b"// ann")])


def sample_grades() -> tuple[list[Grade], rubric.Rubric]:
    r = rubric.build_rubric(REPO, LESSON, catalog_rubric(REPO), [], {"WarpEntanglementShape.Names"})
    checks = r.checks
    passed = Grade("ann", LESSON.name, "ann/warp_entanglement.cu", build=PASSED, isolation="x",
                   gpu="needs a GPU (sm_80)", seconds=3.2, submitted_at="2026-01-02T03:04:05Z")
    for c in checks:
        if c.tier == "gpu":
            passed.results.append(CheckResult(c, NOT_RUN, None, "not run: needs a GPU (sm_80)"))
        elif c.id.startswith("WarpEntanglementModel"):
            passed.results.append(CheckResult(c, FAILED, 0.0, "x.cu:1: Failure <&> [concerns TODO 1]"))
        else:
            passed.results.append(CheckResult(c, PASSED, c.points, ""))
    broken = Grade("bo", LESSON.name, "bo.cu", build=FAILED, build_output="bo.cu(3): error: x",
                   gpu="")
    broken.results = [CheckResult(c, FAILED, 0.0, "failed: does not compile") for c in checks]
    empty = Grade("cy", LESSON.name, "", problem="no warp_entanglement.cu in the submission")
    empty.results = [CheckResult(c, FAILED, 0.0, "not graded") for c in checks]
    return [passed, broken, empty], r


class FormatsTest(unittest.TestCase):
    def test_every_format_is_valid_for_its_platform(self):
        grades, r = sample_grades()
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp)
            grade_formats.write(out, grades, r, list(grade_formats.FORMATS))
            for g in grades:
                gs = json.loads((out / "gradescope" / g.student / "results.json").read_text())
                self.assertEqual(platform_formats.gradescope(gs), [], g.student)
                pl = json.loads((out / "prairielearn" / g.student / "results.json").read_text())
                self.assertEqual(platform_formats.prairielearn(pl), [], g.student)
                c50 = json.loads((out / "classroom50" / g.student / "result.json").read_text())
                self.assertEqual(platform_formats.classroom50(c50), [], g.student)
                self.assertEqual(platform_formats.junit((out / "junit" / f"{g.student}.xml")
                                                        .read_bytes()), [])
            self.assertEqual(platform_formats.junit((out / "junit.xml").read_bytes()), [])
            self.assertEqual(platform_formats.grades_csv((out / "grades.csv").read_text(),
                                                         ["ann", "bo", "cy"], r.todos), [])

    def test_a_check_that_did_not_run_has_no_score_anywhere(self):
        grades, r = sample_grades()
        ann = grades[0]
        gpu_points = sum(c.points for c in r.checks if c.tier == "gpu")
        self.assertGreater(gpu_points, 0)
        self.assertEqual(ann.max_score, sum(c.points for c in r.checks if c.tier == "cpu"))
        gs = grade_formats.gradescope(ann)
        not_run = [t for t in gs["tests"] if "not run" in t.get("tags", [])]
        self.assertEqual(len(not_run), 5)
        for t in not_run:
            self.assertNotIn("score", t)
            self.assertNotIn("max_score", t)
            self.assertNotIn("status", t)
            self.assertEqual(t["output"], "not run: needs a GPU (sm_80)")
        pl = grade_formats.prairielearn(ann)
        self.assertAlmostEqual(pl["score"], ann.score / ann.max_score)
        self.assertTrue(all(t["max_points"] == 0 for t in pl["tests"] if t["message"].startswith("not run")))
        c50 = grade_formats.classroom50(ann, environ={})
        self.assertEqual(len(c50["not_run"]), 5)
        self.assertFalse(any("Gpu" in t["test-name"] for t in c50["tests"]))
        xml = grade_formats.junit([ann], "x").decode()
        self.assertEqual(xml.count('<skipped message="not run: needs a GPU (sm_80)"'), 5)
        row = grade_formats.csv_text([ann], r).splitlines()[1]
        self.assertIn("5 (not run: needs a GPU (sm_80))", row)

    def test_a_submission_that_could_not_be_graded(self):
        grades, _ = sample_grades()
        pl = grade_formats.prairielearn(grades[2])
        self.assertFalse(pl["gradable"])
        self.assertEqual(pl["format_errors"], ["no warp_entanglement.cu in the submission"])
        self.assertIn("Not graded", grade_formats.gradescope(grades[2])["output"])

    def test_a_class_where_nothing_builds_warns_the_instructor(self):
        def built(student, outcome):
            return grade_formats.Grade(student, "08_warp_entanglement", "x.cu", build=outcome,
                                       build_output=f"ld: cannot find -lcudart ({student})")
        none_built = [built("ann", grade.FAILED), built("ben", grade.FAILED),
                      grade_formats.Grade("cy", "08_warp_entanglement", "")]
        warning = grade.class_build_warning(none_built)
        self.assertIn("none of the 2 submissions", warning)
        self.assertIn("cannot find -lcudart (ann)", warning)
        self.assertEqual(grade.class_build_warning(none_built[:1]), "")
        self.assertEqual(grade.class_build_warning(none_built + [built("dee", grade.PASSED)]), "")

    def test_classroom50_takes_its_identity_from_the_runner(self):
        grades, _ = sample_grades()
        env = {"CLASSROOM": "gpu-101", "ASSIGNMENT": "lesson-08", "SUBMISSION_TAG": "submit/x",
               "COMMIT_URL": "https://github.com/o/r/commit/abc", "OWNER": "ann-gh",
               "RELEASE_URL": "https://r", "REVIEW_URL": "https://v"}
        c50 = grade_formats.classroom50(grades[0], environ=env)
        self.assertEqual((c50["classroom"], c50["assignment"], c50["owner"], c50["submission"]),
                         ("gpu-101", "lesson-08", "ann-gh", "submit/x"))
        self.assertEqual(platform_formats.classroom50(c50), [])


class BundlesTest(unittest.TestCase):
    def test_gradescope_bundle(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "gs"
            args = type("A", (), {"lesson": "08", "out": str(out), "format": "gradescope",
                                  "rubric": None, "limit": 120})()
            bundles.cmd_autograder(REPO, args)
            for name in ("setup.sh", "run_autograder"):
                path = out / name
                self.assertTrue(path.stat().st_mode & stat.S_IXUSR, name)
                self.assertEqual(subprocess.run(["bash", "-n", str(path)]).returncode, 0, name)
            self.assertIn("--format gradescope", (out / "run_autograder").read_text())
            self.assertIn("/autograder/results/results.json", (out / "run_autograder").read_text())
            self.assertIn("rm -rf solutions", (out / "setup.sh").read_text())
            course = out / "course"
            self.assertTrue((course / "course").is_file())
            self.assertTrue((course / "solutions" / LESSON.name).is_dir())
            self.assertEqual([p.name for p in (course / "solutions").iterdir()], [LESSON.name])
            self.assertFalse((course / "build").exists())
            with self.assertRaises(CourseError):
                bundles.cmd_autograder(REPO, args)  # not into a folder that has files

    def test_classroom50_bundle(self):
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "c50"
            rubric_file = Path(tmp) / "rubric.json"
            rubric_file.write_text(json.dumps({"kinds": {"values": 3}}))
            args = type("A", (), {"lesson": "08", "out": str(out), "format": "classroom50",
                                  "rubric": str(rubric_file), "limit": 120})()
            bundles.cmd_autograder(REPO, args)
            py_compile.compile(str(out / "autograder.py"), doraise=True)
            self.assertEqual(json.loads((out / "runtime.json").read_text()),
                             {"runs-on": ["self-hosted", "gpu"]})
            self.assertTrue((out / "rubric.json").is_file())
            self.assertIn("--format", (out / "autograder.py").read_text())


class CliTest(unittest.TestCase):
    def course(self, *args):
        return subprocess.run([sys.executable, str(REPO / "course"), *args], capture_output=True,
                              text=True, timeout=120)

    def test_usage_errors(self):
        self.assertEqual(self.course("grade").returncode, 2)
        bad = self.course("grade", "08", "/nonexistent", "--format", "moodle")
        self.assertEqual(bad.returncode, 2)
        self.assertIn("unknown format 'moodle'", bad.stderr)
        self.assertEqual(self.course("autograder", "08", "--format", "moodle", "--out", "x").returncode, 2)


if __name__ == "__main__":
    unittest.main()
