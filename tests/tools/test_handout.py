#!/usr/bin/env python3
"""Tests of `./course handout` (tools/course_cli/handout.py) and of the build of a tree
without solutions/ (cmake/CourseLesson.cmake, cmake/course_starter_only.py).

    test_handout.py cli                  the command: options, refusals, bad input, the scan
                                         (a few seconds; no CMake)
    test_handout.py build LESSON... [--check NN...] [--cmake-arg ARG...]
                                         a handout of LESSONs in a fresh folder: configure,
                                         then `./course check NN` (its CPU tier: no GPU is
                                         visible) for each NN; the GPU tests must be reported
                                         as not run, never as passed
    test_handout.py configure-all [--cmake-arg ARG...]
                                         a handout of every ready lesson configures, with every
                                         optional test label switched on, and has no solution
                                         target or test

ctest runs them under the label `handout` (tests/CMakeLists.txt). The builds pass the
enclosing build's architectures and warning flags, and CCACHE_BASEDIR is the handout, so that
ccache finds the objects of the course's own build of the same starters (CI builds them first).
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from course_cli import handout, starter  # noqa: E402
from course_cli.catalog import load_catalog  # noqa: E402


def run(command, cwd, env=None, timeout=600):
    return subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout)


def english_env(**extra):
    env = dict(os.environ)
    for variable in ("COURSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG", "COURSE_BUILD_ROOT"):
        env.pop(variable, None)
    env.update(extra)
    return env


def course(args, cwd=REPO, env=None, timeout=120):
    return run([sys.executable, str(cwd / "course"), *args], cwd, env or english_env(), timeout)


def make_handout(out: Path, *args) -> subprocess.CompletedProcess:
    result = course(["handout", *args, "--out", str(out)])
    if result.returncode != 0:
        raise AssertionError(f"./course handout {' '.join(args)} failed "
                             f"({result.returncode}):\n{result.stdout}{result.stderr}")
    return result


def lessons_named(names):
    return [lesson for lesson in load_catalog(REPO) if lesson.name in names]


_ANSWERS = {}


def scan(out: Path, skip_hints=False) -> list[str]:
    """Answers found in the handout at `out`: answer_lines() of every solution of the course
    (not only the handed-out lessons') against every file of it."""
    if not _ANSWERS:
        _ANSWERS.update(handout.answer_lines(REPO, [l for l in load_catalog(REPO) if l.ready])[0])
    return handout.find_answers(out, _ANSWERS, skip_hints=skip_hints)


# ---------------------------------------------------------------------------- cli


class HandoutCliTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls._tmp = tempfile.TemporaryDirectory()
        cls.base = Path(cls._tmp.name)
        # One handout of each kind, shared by the tests that only read them.
        cls.default = cls.base / "default"
        make_handout(cls.default, "05", "6")
        cls.chinese = cls.base / "chinese"
        make_handout(cls.chinese, "17", "--edition", "zh", "--hints", "off", "--results", "drop")
        cls.english = cls.base / "english"
        make_handout(cls.english, "pipeline_single_stage", "--edition", "en", "--hints", "full")

    @classmethod
    def tearDownClass(cls):
        cls._tmp.cleanup()

    def record(self, out):
        return json.loads((out / ".course" / "handout.json").read_text())

    # What is in it

    def test_the_lessons_and_those_they_use(self):
        self.assertEqual(self.record(self.default)["included"], [
            "01_register_staged", "03_cuda_barrier", "05_pipeline_single_stage",
            "06_pipeline_multi_stage"])
        self.assertEqual(self.record(self.default)["lessons"],
                         ["05_pipeline_single_stage", "06_pipeline_multi_stage"])
        # 17 links 15's code, 15 links 11's and 14's: the student's own files of each.
        self.assertEqual(self.record(self.chinese)["included"], [
            "11_tma_tensor_copy", "14_overlap_transfers", "15_capstone", "17_nccl_overlap"])
        catalog = json.loads((self.chinese / "lessons" / "catalog.json").read_text())
        self.assertEqual([e["number"] for e in catalog["lessons"]], ["11", "14", "15", "17"])
        listed = course(["list"], cwd=self.default)
        self.assertEqual(listed.returncode, 0, listed.stderr)
        numbers = re.findall(r"^(\d\d)  ", listed.stdout, re.M)
        self.assertEqual(numbers, ["01", "03", "05", "06"])

    def test_no_solution_and_no_tool_that_reads_one(self):
        for out in (self.default, self.chinese, self.english):
            self.assertFalse((out / "solutions").exists())
            self.assertEqual(list(out.rglob("NOTES*")), [])
            tools = {p.name for p in (out / "tools").glob("*.py")}
            self.assertIn("sanitize.py", tools)  # ./course check runs it
            self.assertEqual(tools & handout.NEVER_SHIPPED, set())
            self.assertFalse((out / "tools" / "graders").exists())
            for tests in ("test_course_cli.py", "test_mutation.py", "test_op_mutation.py"):
                self.assertFalse((out / "tests" / "tools" / tests).exists())
        self.assertEqual(scan(self.default), [])
        self.assertEqual(scan(self.chinese), [])

    def test_the_starters_are_the_generated_ones(self):
        for lesson in lessons_named(self.record(self.default)["included"]):
            for solution, mine in starter.starter_pairs(REPO, lesson):
                fresh = starter.expected_starter(REPO, solution)
                self.assertEqual((self.default / "lessons" / lesson.name / mine.name).read_text(),
                                 fresh)
                self.assertEqual((self.default / ".course" / "starters" / lesson.name
                                  / solution.name).read_text(), fresh)
        # Chinese edition: the TODO contracts in Chinese, as `reset --lang zh` writes them.
        lesson = lessons_named(["17_nccl_overlap"])[0]
        solution, mine = starter.starter_pairs(REPO, lesson)[0]
        self.assertEqual((self.chinese / "lessons" / lesson.name / mine.name).read_text(),
                         starter.expected_starter(REPO, solution, "zh"))

    def test_the_scan_finds_what_it_looks_for(self):
        # --hints full hands out the code rungs on purpose: the scan reads them when asked to,
        # and finds answers there. A solution copied in, and a region marker, are found too.
        self.assertNotEqual(scan(self.english), [])
        self.assertEqual(scan(self.english, skip_hints=True), [])
        copy = self.base / "tampered"
        shutil.copytree(self.default, copy, ignore=shutil.ignore_patterns("build"))
        shutil.copy2(REPO / "solutions" / "06_pipeline_multi_stage" / "pipeline_multi_stage.cu",
                     copy / "lessons" / "06_pipeline_multi_stage" / "pipeline_multi_stage.cu")
        found = scan(copy)
        self.assertTrue(any("pipeline_multi_stage.cu" in f and "marker" in f for f in found), found)
        self.assertTrue(any("the answer of solutions/06" in f for f in found), found)

    def test_hints_no_code_full_and_off(self):
        def ladders(out, name):
            return json.loads((out / "lessons" / name / "given" / "hints.json").read_text())

        repo = json.loads((REPO / "lessons/05_pipeline_single_stage/given/hints.json").read_text())
        cut = ladders(self.default, "05_pipeline_single_stage")
        self.assertEqual(cut["handout_hints"], "no-code")
        for number, entry in repo["todos"].items():
            self.assertEqual(cut["todos"][number]["hints"], entry["hints"][:-1])
            self.assertEqual(cut["todos"][number]["hints_zh"], entry["hints_zh"][:-1])
            self.assertEqual(cut["todos"][number]["contract_zh"], entry["contract_zh"])
        self.assertEqual(ladders(self.english, "05_pipeline_single_stage"), repo)
        off = ladders(self.chinese, "17_nccl_overlap")
        self.assertTrue(all(not e["hints"] and not e["hints_zh"] and e["contract_zh"]
                            for e in off["todos"].values()))
        last = len(repo["todos"]["1"]["hints"]) - 1
        shown = course(["hint", "05", str(last), "--todo", "1"], cwd=self.default)
        self.assertEqual(shown.returncode, 0, shown.stderr)
        self.assertIn("in this handout", shown.stdout)
        self.assertNotIn("its code", shown.stdout)
        beyond = course(["hint", "05", str(last + 1), "--todo", "1"], cwd=self.default)
        self.assertEqual(beyond.returncode, 2)
        none = course(["hint", "17", "--lang", "en"], cwd=self.chinese)
        self.assertEqual(none.returncode, 0, none.stderr)
        self.assertIn("This handout has no hints", none.stdout)
        self.assertIn("lessons/17_nccl_overlap/README.md", none.stdout)

    def test_editions_and_results(self):
        lesson = self.default / "lessons" / "06_pipeline_multi_stage"
        self.assertTrue((lesson / "README.zh.md").is_file())
        self.assertIn("<!-- output:begin -->", (lesson / "README.md").read_text())
        self.assertTrue(list((self.default / "docs" / "results").rglob("*.png")))
        english = self.english / "lessons" / "05_pipeline_single_stage"
        self.assertFalse((english / "README.zh.md").exists())
        self.assertTrue((english / "README.md").read_text().startswith("# Lesson 05"))
        self.assertFalse((self.english / "README.zh.md").exists())
        chinese = self.chinese / "lessons" / "15_capstone" / "README.md"
        text = chinese.read_text()
        self.assertTrue(text.startswith("# 第 15 课"), text[:80])
        self.assertNotIn("README.zh.md", text)
        self.assertNotIn("<!-- output:begin -->", text)
        self.assertNotIn("<!-- figures:begin -->", text)
        self.assertNotRegex(text, r"docs/results/[^/\s`]+/[\w.-]+\.(png|svg)")
        self.assertIn("这份学生版仓库不含实测结果", text)
        self.assertFalse((self.chinese / "docs" / "results").exists())
        self.assertTrue((self.chinese / "docs" / "figures" / "15_capstone_tiles.svg").is_file())
        self.assertFalse(list((self.chinese / "lessons").rglob("README.zh.md")))
        # The Chinese-only handout speaks Chinese, and names its READMEs README.md.
        listed = course(["list"], cwd=self.chinese)
        self.assertIn("标题", listed.stdout)
        self.assertIn("lessons/NN_slug/README.md", listed.stdout)
        self.assertIn("# CUDA 异步数据搬运：学生版仓库", (self.chinese / "README.md").read_text())

    # What a handout refuses

    def test_commands_that_need_the_solutions_refuse(self):
        for args in (["diff", "05"], ["tour"], ["run", "05", "--solution"], ["sync", "--check"],
                     ["handout", "05", "--out", str(self.base / "again")]):
            result = course(args, cwd=self.default)
            self.assertEqual(result.returncode, 2, (args, result.stdout, result.stderr))
            self.assertIn("this folder is a handout of the course: it has no solutions",
                          result.stderr, args)
            self.assertEqual(result.stdout, "", args)
        chinese = course(["diff", "15"], cwd=self.chinese)
        self.assertEqual(chinese.returncode, 2)
        self.assertIn("其中没有参考答案", chinese.stderr)
        self.assertFalse((self.base / "again").exists())

    def test_reset_and_hint_use_the_kept_starters(self):
        copy = self.base / "work"
        shutil.copytree(self.default, copy, ignore=shutil.ignore_patterns("build"))
        mine = copy / "lessons" / "05_pipeline_single_stage" / "pipeline_single_stage.cu"
        fresh = mine.read_text()
        mine.write_text(fresh + "// my work\n")
        result = course(["reset", "05"], cwd=copy)
        self.assertEqual(result.returncode, 0, result.stderr)
        self.assertEqual(mine.read_text(), fresh)
        self.assertIn("my work", mine.with_name(mine.name + ".bak").read_text())
        hint = course(["hint", "05"], cwd=copy)
        self.assertEqual(hint.returncode, 0, hint.stderr)
        self.assertIn("Hint 1 of", hint.stdout)

    # Bad input

    def test_bad_input_is_a_clear_error(self):
        existing = self.base / "not-empty"
        existing.mkdir()
        (existing / "keep.txt").write_text("mine\n")
        a_file = self.base / "a-file"
        a_file.write_text("x\n")
        never = ["--out", str(self.base / "never")]
        cases = [
            (["99", *never], "unknown lesson '99'"),
            (["05", "nonsense", *never], "unknown lesson 'nonsense'"),
            (["05", "--out", str(existing)], "is not empty"),
            (["05", "--out", str(existing), "--force"], "holds no handout"),
            (["05", "--out", str(a_file)], "is a file"),
            (["05", "--out", str(REPO / "build" / "handout-inside")],
             "outside the course's repository"),
            (["05", "--out", str(REPO.parent)], "outside the course's repository"),
            (["05", "--hints", "some", *never], "invalid choice"),
            (["05", "--edition", "fr", *never], "invalid choice"),
            (never, "the following arguments are required: LESSON"),
            (["05"], "the following arguments are required: --out"),
        ]
        for args, words in cases:
            result = course(["handout", *args])
            self.assertEqual(result.returncode, 2, (args, result.stdout, result.stderr))
            self.assertIn(words, result.stderr, args)
        self.assertEqual((existing / "keep.txt").read_text(), "mine\n")
        self.assertFalse((self.base / "never").exists())
        self.assertFalse((REPO / "build" / "handout-inside").exists())
        self.assertEqual([p.name for p in self.base.iterdir() if p.name.startswith(".")], [])

    def test_force_replaces_an_earlier_handout_only(self):
        out = self.base / "replaced"
        make_handout(out, "01")
        (out / "lessons" / "01_register_staged" / "register_staged.cu").write_text("old\n")
        again = course(["handout", "02", "--out", str(out)])
        self.assertEqual(again.returncode, 2)
        make_handout(out, "02", "--force")
        self.assertEqual(self.record(out)["included"], ["01_register_staged", "02_cg_memcpy_async"])
        self.assertNotEqual((out / "lessons/01_register_staged/register_staged.cu").read_text(),
                            "old\n")


# -------------------------------------------------------------------------- build


def configure(out: Path, cmake_args: list[str], env) -> None:
    result = run(["cmake", "--preset", "student", *cmake_args], out, env, timeout=600)
    if result.returncode != 0:
        raise AssertionError(f"configure failed:\n{result.stdout[-4000:]}{result.stderr[-4000:]}")
    tree = out / "build" / "student"
    targets = run(["cmake", "--build", str(tree), "--target", "help"], out, env).stdout
    solution_targets = [t for t in targets.split() if "_solution" in t]
    if solution_targets:
        raise AssertionError(f"solution targets in a handout: {solution_targets[:10]}")
    for testfile in tree.rglob("CTestTestfile.cmake"):
        text = testfile.read_text()
        if re.search(r"_solution|solutions/", text):
            raise AssertionError(f"{testfile} names a solution:\n"
                                 + "\n".join(l for l in text.splitlines() if "solution" in l)[:2000])


def check_cpu_tier(out: Path, number: str, env) -> str:
    """`./course check NN` with no GPU visible: exit 1 (the starter fails a CPU test) or 77
    (the CPU tests pass, the rest is not verified); every GPU test not run, at least one CPU
    test run. Returns a one-line summary."""
    result = run([sys.executable, str(out / "course"), "check", number], out,
                 dict(env, CUDA_VISIBLE_DEVICES=""), timeout=900)
    output = result.stdout + result.stderr
    junit = out / "build" / "student" / "results" / f"L{number}.xml"
    if not junit.is_file():
        raise AssertionError(f"./course check {number} wrote no results ({result.returncode}):\n"
                             + output[-6000:])
    cases = ET.parse(junit).getroot().iter("testcase")
    statuses = {case.get("name"): case.get("status") for case in cases}
    gpu = {name: status for name, status in statuses.items() if "Gpu" in name.split(".")[2]}
    cpu = {name: status for name, status in statuses.items() if name not in gpu}
    problems = []
    if result.returncode not in (1, 77):
        problems.append(f"exit code {result.returncode}, expected 1 or 77")
    if not cpu or not any(status in ("run", "fail") for status in cpu.values()):
        problems.append(f"no CPU test ran: {cpu}")
    ran = {name: status for name, status in gpu.items() if status != "notrun"}
    if ran:
        problems.append(f"GPU tests ran or passed without a GPU: {ran}")
    if result.returncode == 77 and "is NOT verified" not in output:
        problems.append("exit 77 without saying that the lesson is not verified")
    if result.returncode == 1 and "is not done yet" not in output:
        problems.append("exit 1 without the check's verdict (a build failure?)")
    if "Not verified on this machine" not in output and "is NOT verified" not in output:
        problems.append("the check does not say what a GPU would still have to verify")
    if problems:
        raise AssertionError(f"./course check {number}: " + "; ".join(problems) + "\n"
                             + output[-6000:])
    failed = sum(status == "fail" for status in cpu.values())
    return (f"check {number}: exit {result.returncode}; {len(cpu)} CPU tests "
            f"({failed} failed: the starter's), {len(gpu)} GPU tests not run")


def build_test(lessons: list[str], checks: list[str], cmake_args: list[str]) -> int:
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "handout"
        make_handout(out, *lessons)
        found = scan(out)
        if found:
            print("answers found in the handout:\n  " + "\n  ".join(found))
            return 1
        env = english_env(CCACHE_BASEDIR=str(out))
        configure(out, cmake_args, env)
        print(f"handout of {' '.join(lessons)}: configured, no solution target or test")
        for number in checks:
            lesson = next(l for l in load_catalog(out) if l.number == number.zfill(2))
            note = out / "build" / "student" / "not_built" / f"{lesson.name}.txt"
            if note.is_file():  # lesson 17 without NCCL: the configure step said why
                print(f"check {number}: not built here ({note.read_text().strip()}): not checked")
                continue
            print(check_cpu_tier(out, number, env), flush=True)
        listed = course(["list"], cwd=out, env=env)
        if listed.returncode != 0:
            print(listed.stdout + listed.stderr)
            return 1
    return 0


def configure_all(cmake_args: list[str]) -> int:
    ready = [lesson.number for lesson in load_catalog(REPO) if lesson.ready]
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "handout"
        make_handout(out, *ready)
        found = scan(out)
        if found:
            print("answers found in the handout:\n  " + "\n  ".join(found))
            return 1
        # Every optional label on, so that each guarded part of the lessons' CMakeLists.txt is
        # read: the filter must leave out what runs a solution there too.
        true = shutil.which("true") or "/bin/true"
        configure(out, cmake_args + [f"-DCOURSE_NCU={true}", f"-DCOURSE_COMPUTE_SANITIZER={true}",
                                     f"-DCOURSE_CUOBJDUMP={true}", "-DCOURSE_MUTATION_TESTS=ON"],
                  english_env(CCACHE_BASEDIR=str(out)))
        print(f"a handout of lessons {' '.join(ready)} configures, with no solution target or "
              "test")
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="what", required=True)
    sub.add_parser("cli")
    build = sub.add_parser("build")
    build.add_argument("lessons", nargs="+")
    build.add_argument("--check", nargs="*", default=[])
    everything = sub.add_parser("configure-all")
    for command in (build, everything):
        command.add_argument("--architectures", metavar="LIST",
                             help="CMAKE_CUDA_ARCHITECTURES, with commas (80,90)")
        command.add_argument("--cmake-arg", action="append", default=[],
                             help="a further argument of the configure step")
    args = parser.parse_args(argv)
    if args.what != "cli" and args.architectures:
        args.cmake_arg.append("-DCMAKE_CUDA_ARCHITECTURES=" + args.architectures.replace(",", ";"))
    if args.what == "cli":
        suite = unittest.defaultTestLoader.loadTestsFromTestCase(HandoutCliTest)
        return 0 if unittest.TextTestRunner(verbosity=2).run(suite).wasSuccessful() else 1
    try:
        if args.what == "build":
            return build_test(args.lessons, args.check, args.cmake_arg)
        return configure_all(args.cmake_arg)
    except AssertionError as error:
        print(f"FAILED: {error}")
        return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
