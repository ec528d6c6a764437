"""CPU tests of the `course` tool (tools/course_cli). Standard library only, no GPU,
no CMake build: the commands that call cmake/ctest run against small fake scripts.

Run from anywhere:  python3 tests/tools/test_course_cli.py
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from course_cli import catalog, junit, starter, tour  # noqa: E402
from course_cli.build import parse_probe_output  # noqa: E402
from course_cli.errors import CourseError  # noqa: E402

FIXTURE_CATALOG = {
    "lessons": [
        {"number": "00", "slug": "alpha", "title": "First \"quoted\" lesson", "minutes": 30,
         "min_cc": "8.0", "ready": True, "title_zh": "第一课"},
        {"number": "01", "slug": "beta", "title": "Second lesson", "minutes": 60,
         "min_cc": "8.0", "ready": True},
        {"number": "02", "slug": "gamma", "title": "Needs Hopper", "minutes": 90,
         "min_cc": "9.0", "ready": True},
        {"number": "03", "slug": "delta", "title": "Planned lesson", "minutes": 60,
         "min_cc": "8.0", "ready": False},
    ]
}

# A lesson that needs two GPUs, added to the fixture by the tests of `list` and `tour`.
TWO_GPU_LESSON = {"number": "04", "slug": "epsilon", "title": "Two GPUs", "minutes": 60,
                  "min_cc": "8.0", "ready": True, "min_gpus": 2}


def add_two_gpu_lesson(root):
    """Adds TWO_GPU_LESSON to the fixture catalog under `root`."""
    catalog = dict(FIXTURE_CATALOG, lessons=FIXTURE_CATALOG["lessons"] + [TWO_GPU_LESSON])
    (root / "lessons" / "catalog.json").write_text(json.dumps(catalog, indent=2))

SOLUTION = textwrap.dedent(
    """\
    #include "alpha.cuh"

    int answer(int x) {
      // TODO 1: return the answer.
      // BEGIN SOLUTION
      int y = x * 2;
      return y + 42;
      // STARTER: return 0;  // your code here
      // END SOLUTION
    }

    __global__ void kernel() {
        // TODO 2: nothing yet.
        // BEGIN SOLUTION
        if (true) {
            // STARTER: (void)0;
            // STARTER:   deeper();
            // STARTER:
        }
        // END SOLUTION
    }
    """
)

EXPECTED_STARTER_BODY = textwrap.dedent(
    """\
    #include "alpha.cuh"

    int answer(int x) {
      // TODO 1: return the answer.
      return 0;  // your code here
    }

    __global__ void kernel() {
        // TODO 2: nothing yet.
            (void)0;
              deeper();

    }
    """
)

PLAIN_SOLUTION = "int f() { return 1; }\n"

JUNIT_TEMPLATE = """<?xml version="1.0" encoding="UTF-8"?>
<testsuite name="(empty)" tests="3" failures="0" disabled="0" skipped="0" hostname="" time="0">
{cases}
</testsuite>
"""

PASSED = '<testcase name="{name}" classname="{name}" time="0.1" status="run"><system-out>ok</system-out></testcase>'
FAILED = '<testcase name="{name}" classname="{name}" time="0.1" status="fail"><failure message=""/></testcase>'
# As ctest writes a GoogleTest skip of tests/support/gpu_test.cpp: the reason is in the output.
SKIPPED = ('<testcase name="{name}" classname="{name}" time="0" status="notrun">'
           '<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>[ RUN      ] x\n'
           'gpu_test.h:46: Skipped\nno usable GPU: no GPU found\n</system-out></testcase>')
# A test skipped for another reason (a SASS check without cuobjdump, say).
SKIPPED_OTHER = ('<testcase name="{name}" classname="{name}" time="0" status="notrun">'
                 '<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>Skipped\n'
                 'cuobjdump was not found\n</system-out></testcase>')


def junit_text(passed=(), failed=(), skipped=(), extra=""):
    cases = [PASSED.format(name=n) for n in passed]
    cases += [FAILED.format(name=n) for n in failed]
    cases += [SKIPPED.format(name=n) for n in skipped]
    return JUNIT_TEMPLATE.format(cases="\n".join(cases) + extra)


def write_script(path: Path, body: str) -> None:
    """A small executable Python script (used as fake cmake, ctest, probe, lessons)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
    path.chmod(0o755)


LADDERS = {"todos": {
    "1": {"contract_zh": ["返回答案。\n第二行。"],
          "hints": ["What is the answer?", "README, section Answers.", "return twice x plus 42",
                    "int y = x * 2;\nreturn y + 42;"],
          "hints_zh": ["答案是什么？", "README 的答案一节。", "返回 x 的两倍加 42", "int y = x * 2;\nreturn y + 42;"]},
    "2": {"contract_zh": ["暂时什么都不做。"],
          "hints": ["Why nothing?", "README, section Nothing.", "if true: nothing"],
          "hints_zh": ["为什么什么都不做？", "README 的无事一节。", "若为真：什么都不做"]},
}}


def make_repo(base: Path) -> Path:
    """A minimal repository: the course tool, a fixture catalog and solutions."""
    root = base / "repo"
    (root / "tools").mkdir(parents=True)
    shutil.copy2(REPO / "course", root / "course")
    shutil.copytree(REPO / "tools" / "course_cli", root / "tools" / "course_cli",
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy2(REPO / "tools" / "sanitize.py", root / "tools" / "sanitize.py")
    (root / "lessons").mkdir()
    (root / "lessons" / "catalog.json").write_text(json.dumps(FIXTURE_CATALOG, indent=2))
    (root / "common" / "src").mkdir(parents=True)
    for name, files in {
        "00_alpha": {"alpha.cu": SOLUTION, "NOTES.md": "notes\n"},
        "01_beta": {"beta.cu": PLAIN_SOLUTION},
        "02_gamma": {"gamma.cu": PLAIN_SOLUTION},
    }.items():
        (root / "solutions" / name).mkdir(parents=True)
        (root / "lessons" / name).mkdir(parents=True)
        for file_name, text in files.items():
            (root / "solutions" / name / file_name).write_text(text)
        (root / "lessons" / name / "main.cu").write_text("int main() {}\n")
    # Lesson 00 has TODOs, and so its hint ladders; 01 and 02 have none.
    (root / "lessons/00_alpha/given").mkdir()
    (root / "lessons/00_alpha/given/hints.json").write_text(json.dumps(LADDERS, ensure_ascii=False))
    return root


class RepoTestCase(unittest.TestCase):
    """Gives each test a fresh fixture repository and a way to run ./course in it."""

    def setUp(self):
        self._tmp = tempfile.TemporaryDirectory()
        self.base = Path(self._tmp.name)
        self.root = make_repo(self.base)
        self.env = dict(os.environ)
        self.env.pop("COURSE_BUILD_ROOT", None)
        for variable in ("COURSE_LANG", "LC_ALL", "LC_MESSAGES", "LANG"):  # English by default
            self.env.pop(variable, None)

    def tearDown(self):
        self._tmp.cleanup()

    def course(self, *args, env=None):
        return subprocess.run(
            [sys.executable, str(self.root / "course"), *args],
            cwd=self.root, capture_output=True, text=True, env=env or self.env, timeout=60,
        )

    def sync(self, *args):
        result = self.course("sync", *args)
        self.assertIn(result.returncode, (0, 1), result.stderr)
        return result


# ------------------------------------------------------------------------- language


class LanguageTest(RepoTestCase):
    def test_the_first_that_is_set_decides(self):
        from course_cli import i18n
        self.assertEqual(i18n.choose(None, {}), "en")
        self.assertEqual(i18n.choose("zh", {"COURSE_LANG": "en"}), "zh")
        self.assertEqual(i18n.choose("en", {"LANG": "zh_CN.UTF-8"}), "en")
        self.assertEqual(i18n.choose(None, {"COURSE_LANG": "zh", "LANG": "en_US.UTF-8"}), "zh")
        self.assertEqual(i18n.choose(None, {"LANG": "zh_TW.UTF-8"}), "zh")
        self.assertEqual(i18n.choose(None, {"LC_ALL": "en_US.UTF-8", "LANG": "zh_CN"}), "en")

    def test_list_and_hint_speak_chinese_when_asked(self):
        self.env["COURSE_BUILD_ROOT"] = str(self.base / "builds")
        for args, env in ((("--lang", "zh", "list"), {}), (("list", "--lang", "zh"), {}),
                          (("list",), {"COURSE_LANG": "zh"}), (("list",), {"LANG": "zh_CN.UTF-8"})):
            result = self.course(*args, env=dict(self.env, **env))
            self.assertEqual(result.returncode, 0, result.stderr)
            self.assertIn("标题", result.stdout, args)
            self.assertIn("第一课", result.stdout, args)
            self.assertIn("Second lesson", result.stdout, args)  # no title_zh: the English one
            self.assertIn("README.zh.md", result.stdout, args)
        result = self.course("hint", "00", "--lang", "zh")
        self.assertIn("答案是什么？", result.stdout)
        self.assertIn("第 00 课（第一课）TODO 1 的提示 1/4", result.stdout)
        english = self.course("--lang", "en", "hint", "00", "1", env=dict(self.env, LANG="zh_CN"))
        self.assertIn("What is the answer?", english.stdout)
        unknown = self.course("--lang", "zh", "hint", "99")
        self.assertEqual(unknown.returncode, 2)
        self.assertIn("没有这一课", unknown.stderr)

    def test_help_usage_errors_and_skip_reasons_follow_the_language(self):
        helped = self.course("--lang", "zh", "--help")
        self.assertEqual(helped.returncode, 0)
        self.assertIn("用法：course", helped.stdout)
        self.assertIn("列出各课", helped.stdout)
        missing = self.course("check", "--lang=zh")
        self.assertEqual(missing.returncode, 2)
        self.assertIn("错误：缺少以下参数：lesson", missing.stderr)
        english = self.course("check")
        self.assertIn("error: the following arguments are required: lesson", english.stderr)
        unknown = self.course("hint", "99", env=dict(self.env, COURSE_LANG="zh"))
        self.assertIn("course：错误：没有这一课", unknown.stderr)
        from course_cli import i18n
        try:
            i18n.set_language("zh")
            self.assertEqual(i18n.skip_reason("no usable GPU: no GPU found"), "没有可用的 GPU: no GPU found")
        finally:
            i18n.set_language("en")
        self.assertEqual(i18n.skip_reason("no usable GPU: x"), "no usable GPU: x")

    def test_every_message_of_the_commands_has_its_chinese(self):
        import ast
        from course_cli import i18n
        missing = []
        for module in ("commands.py", "catalog.py", "build.py"):
            tree = ast.parse((REPO / "tools" / "course_cli" / module).read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Call) and getattr(node.func, "id", "") == "tr":
                    first = node.args[0] if node.args else None
                    if isinstance(first, ast.Name) and first.id == "ARCHITECTURE_LEGEND":
                        continue  # a ZH key by construction (i18n.py)
                    self.assertIsInstance(first, ast.Constant, f"{module}:{node.lineno}: tr() "
                                          "takes a literal template, not an f-string")
                    if first.value not in i18n.ZH:
                        missing.append(f"{module}:{node.lineno}: {first.value!r}")
        self.assertEqual(missing, [], "messages without a Chinese entry in i18n.ZH")

    def test_every_lesson_has_its_chinese_title_and_hints(self):
        from course_cli import exercise
        for lesson in catalog.load_catalog(REPO):
            self.assertTrue(lesson.title_zh, lesson.name)
            ladders = exercise.load_ladders(REPO, lesson)  # equal rungs per edition, or raises
            self.assertTrue(ladders, lesson.name)
            for number, ladder in ladders.items():
                self.assertTrue(ladder.contract_zh, f"{lesson.name} TODO {number}")

    def test_hints_in_the_catalog_are_rejected(self):
        stale = dict(FIXTURE_CATALOG["lessons"][0], hints=["A lesson-wide hint."])
        (self.root / "lessons" / "catalog.json").write_text(json.dumps({"lessons": [stale]}))
        result = self.course("list")
        self.assertEqual(result.returncode, 2)
        self.assertIn("hints live in lessons/NN_slug/given/hints.json", result.stderr)


# ------------------------------------------------------------------------ generator


class GeneratorTest(unittest.TestCase):
    LABEL = "solutions/00_alpha/alpha.cu"

    def test_regions_starter_lines_and_outside_text(self):
        generated = starter.generate_starter(SOLUTION, self.LABEL)
        first, _, body = generated.partition("\n")
        self.assertEqual(first + "\n", starter.header_line(self.LABEL))
        self.assertIn(self.LABEL, first)
        self.assertEqual(body, EXPECTED_STARTER_BODY)

    def test_file_without_regions_is_copied_after_the_header(self):
        generated = starter.generate_starter(PLAIN_SOLUTION, "x.cu")
        self.assertEqual(generated, starter.header_line("x.cu") + PLAIN_SOLUTION)

    def test_header_is_stable(self):
        self.assertEqual(
            starter.header_line("solutions/01_b/b.cu"),
            "// Generated by ./course sync from solutions/01_b/b.cu; `./course reset` restores it.\n",
        )

    def test_diff_texts_drop_markers_and_header(self):
        generated = starter.generate_starter(SOLUTION, self.LABEL)
        self.assertEqual(starter.strip_generated_header(generated), EXPECTED_STARTER_BODY)
        self.assertEqual(starter.strip_generated_header("int x;\n"), "int x;\n")
        plain = starter.solution_without_markers(SOLUTION)
        for marker in ("BEGIN SOLUTION", "END SOLUTION", "STARTER:"):
            self.assertNotIn(marker, plain)
        self.assertIn("return y + 42;", plain)

    def assert_marker_error(self, text, line, words):
        with self.assertRaises(starter.MarkerError) as caught:
            starter.generate_starter(text, "s.cu")
        message = str(caught.exception)
        self.assertIn(f"s.cu:{line}:", message)
        self.assertIn(words, message)
        self.assertEqual(caught.exception.exit_code, 2)

    def test_begin_without_end(self):
        self.assert_marker_error("a\n// BEGIN SOLUTION\nb\n", 2, "without an END")

    def test_nested_begin(self):
        self.assert_marker_error("// BEGIN SOLUTION\nx\n  // BEGIN SOLUTION\n// END SOLUTION\n", 3, "nested")

    def test_stray_end(self):
        self.assert_marker_error("a\nb\n    // END SOLUTION\n", 3, "without a BEGIN")

    def test_starter_line_outside_a_region(self):
        self.assert_marker_error("// STARTER: return 0;\n", 1, "outside")

    def test_misspelt_marker(self):
        self.assert_marker_error("//BEGIN SOLUTION\n", 1, "malformed")


# ---------------------------------------------------------------------------- sync


class SyncTest(RepoTestCase):
    def test_sync_writes_starters_and_catalog_then_check_passes(self):
        result = self.sync()
        self.assertEqual(result.returncode, 0, result.stdout)
        alpha = (self.root / "lessons/00_alpha/alpha.cu").read_text()
        self.assertEqual(alpha.partition("\n")[2], EXPECTED_STARTER_BODY)
        self.assertTrue((self.root / "lessons/01_beta/beta.cu").exists())
        self.assertFalse((self.root / "lessons/00_alpha/NOTES.md").exists())
        self.assertFalse((self.root / "lessons/03_delta").exists())  # planned: untouched
        inc = (self.root / "common/src/lesson_catalog.inc").read_text()
        self.assertIn('{"00", "alpha", "First \\"quoted\\" lesson", 8, 0, true, 1},', inc)
        self.assertEqual(self.sync("--check").returncode, 0)

    def test_check_detects_a_drifted_starter_and_writes_nothing(self):
        self.sync()
        starter_file = self.root / "lessons/00_alpha/alpha.cu"
        drifted = starter_file.read_text().replace("return 0;", "return 1;")
        starter_file.write_text(drifted)
        result = self.sync("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("lessons/00_alpha/alpha.cu", result.stdout)
        self.assertIn("-  return 1;", result.stdout)
        self.assertIn("+  return 0;", result.stdout)
        self.assertEqual(starter_file.read_text(), drifted)  # --check wrote nothing

    def test_check_detects_a_missing_starter_and_a_stale_catalog_inc(self):
        self.sync()
        (self.root / "lessons/01_beta/beta.cu").unlink()
        (self.root / "common/src/lesson_catalog.inc").write_text("// old\n")
        result = self.sync("--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("lessons/01_beta/beta.cu (missing)", result.stdout)
        self.assertIn("common/src/lesson_catalog.inc", result.stdout)

    def test_sync_keeps_a_changed_starter_as_bak(self):
        self.sync()
        starter_file = self.root / "lessons/01_beta/beta.cu"
        starter_file.write_text("my work\n")
        self.assertEqual(self.sync().returncode, 0)
        self.assertEqual((self.root / "lessons/01_beta/beta.cu.bak").read_text(), "my work\n")
        self.assertEqual(self.sync("--check").returncode, 0)

    def test_marker_error_exits_2_naming_file_and_line(self):
        (self.root / "solutions/01_beta/beta.cu").write_text("a\n// END SOLUTION\n")
        for args in ([], ["--check"]):
            result = self.course("sync", *args)
            self.assertEqual(result.returncode, 2)
            self.assertIn("solutions/01_beta/beta.cu:2", result.stderr)

    def test_functions_take_the_repository_root(self):
        lessons = catalog.load_catalog(self.root)
        files = starter.expected_files(self.root, lessons)
        self.assertEqual(
            sorted(path.relative_to(self.root).as_posix() for path in files),
            ["common/src/lesson_catalog.inc", "lessons/00_alpha/alpha.cu",
             "lessons/01_beta/beta.cu", "lessons/02_gamma/gamma.cu"],
        )


# ------------------------------------------------------------------------- catalog


class CatalogTest(unittest.TestCase):
    def setUp(self):
        self.lessons = catalog.load_catalog(REPO)

    def test_real_catalog(self):
        self.assertEqual([lesson.number for lesson in self.lessons], [f"{n:02d}" for n in range(len(self.lessons))])
        # A lesson is ready exactly when its folder is built by CMake.
        built = sorted(p.parent.name[:2] for p in (REPO / "lessons").glob("[0-9][0-9]_*/CMakeLists.txt"))
        self.assertEqual([lesson.number for lesson in self.lessons if lesson.ready], built)
        self.assertIn("00", built)
        self.assertEqual(self.lessons[1].name, "01_register_staged")
        self.assertEqual({l.number for l in self.lessons if l.min_cc == "9.0"}, {"10", "11"})
        # Every ready lesson has a hint ladder per TODO (given/hints.json, checked by
        # `sync --check`).
        from course_cli import exercise
        for lesson in self.lessons:
            self.assertEqual(bool(exercise.load_ladders(REPO, lesson)), lesson.ready, lesson.name)

    def test_lookup_forms(self):
        for text in ("1", "01", "01_register_staged", "register_staged", "Register_Staged", "001"):
            self.assertEqual(catalog.find_lesson(self.lessons, text).number, "01", text)
        self.assertEqual(catalog.find_lesson(self.lessons, "15").slug, "capstone")

    def test_unknown_lessons(self):
        for text in ("99", "01_device_check", "nothing", "", "-1"):
            with self.assertRaises(CourseError, msg=text):
                catalog.find_lesson(self.lessons, text)

    def test_planned_lesson_is_an_error_for_ready_lookups(self):
        planned = [lesson for lesson in self.lessons if not lesson.ready]
        if not planned:
            self.skipTest("every lesson is ready")
        with self.assertRaises(CourseError) as caught:
            catalog.find_ready_lesson(self.lessons, planned[-1].number)
        self.assertIn("not built yet", str(caught.exception))

    def test_next_lesson(self):
        self.assertEqual(catalog.next_lesson(self.lessons, self.lessons[0]).number, "01")
        self.assertIsNone(catalog.next_lesson(self.lessons, self.lessons[-1]))

    def test_catalog_inc_text(self):
        lessons = [
            catalog.Lesson("00", "a", 'Say "hi" \\ there', 30, "8.0", True),
            catalog.Lesson("10", "b", "Hopper", 90, "9.0", False),
            catalog.Lesson("16", "c", "Two", 90, "8.0", True, min_gpus=2),
        ]
        lines = catalog.catalog_inc_text(lessons).splitlines()
        self.assertTrue(lines[0].startswith("// Generated by ./course sync from lessons/catalog.json"))
        self.assertEqual(lines[1], '{"00", "a", "Say \\"hi\\" \\\\ there", 8, 0, true, 1},')
        self.assertEqual(lines[2], '{"10", "b", "Hopper", 9, 0, false, 1},')
        self.assertEqual(lines[3], '{"16", "c", "Two", 8, 0, true, 2},')
        self.assertEqual(len(lines), 4)

    def test_malformed_catalog(self):
        with tempfile.TemporaryDirectory() as tmp:
            (Path(tmp) / "lessons").mkdir()
            bad = {"lessons": [dict(FIXTURE_CATALOG["lessons"][0], min_gpus=0)]}
            (Path(tmp) / "lessons/catalog.json").write_text(json.dumps(bad))
            with self.assertRaises(CourseError) as caught:
                catalog.load_catalog(Path(tmp))
            self.assertIn("min_gpus", str(caught.exception))
            bad = {"lessons": [dict(FIXTURE_CATALOG["lessons"][0], min_cc="eight")]}
            (Path(tmp) / "lessons/catalog.json").write_text(json.dumps(bad))
            with self.assertRaises(CourseError) as caught:
                catalog.load_catalog(Path(tmp))
            self.assertIn("min_cc", str(caught.exception))
            bad = {"lessons": [dict(FIXTURE_CATALOG["lessons"][0],
                                    expected_api_errors=["PeerAccessAlreadyEnabled"])]}
            (Path(tmp) / "lessons/catalog.json").write_text(json.dumps(bad))
            with self.assertRaises(CourseError) as caught:
                catalog.load_catalog(Path(tmp))
            self.assertIn("expected_api_errors", str(caught.exception))

    def test_the_check_passes_a_lessons_expected_api_errors_to_the_sanitizers(self):
        by_number = {lesson.number: lesson for lesson in self.lessons}
        self.assertEqual(catalog.sanitize_arguments(by_number["16"]),
                         ["--expected-api-error", "cudaErrorPeerAccessAlreadyEnabled"])
        self.assertEqual(catalog.sanitize_arguments(by_number["03"]), [])


# -------------------------------------------------------------- the CLI's exit codes


class CliTest(RepoTestCase):
    def test_help(self):
        for args in (["--help"], ["hint", "--help"], ["tour", "--help"], ["sync", "--help"]):
            result = self.course(*args)
            self.assertEqual(result.returncode, 0, args)
            self.assertIn("usage: course", result.stdout)

    def test_unknown_command(self):
        result = self.course("frobnicate")
        self.assertEqual(result.returncode, 2)
        self.assertIn("invalid choice: 'frobnicate'", result.stderr)

    def test_no_command(self):
        result = self.course()
        self.assertEqual(result.returncode, 2)
        self.assertIn("usage: course", result.stderr)

    def test_unknown_lesson(self):
        for command in ("run", "check", "hint", "diff", "reset"):
            result = self.course(command, "99")
            self.assertEqual(result.returncode, 2, command)
            self.assertIn("unknown lesson '99'", result.stderr)

    def test_planned_lesson(self):
        result = self.course("check", "3")
        self.assertEqual(result.returncode, 2)
        self.assertIn("lesson 03 (Planned lesson) is planned but not built yet", result.stderr)

    def test_hints_come_one_at_a_time(self):
        self.env["COURSE_BUILD_ROOT"] = str(self.base / "builds")
        result = self.course("hint", "alpha", "--todo", "2")
        self.assertEqual(result.returncode, 0)
        self.assertIn("Hint 1 of 3", result.stdout)
        self.assertIn("Why nothing?", result.stdout)
        self.assertNotIn("README, section Nothing.", result.stdout)
        result = self.course("hint", "00_alpha", "--todo", "2")
        self.assertIn("Hint 2 of 3", result.stdout)
        self.assertIn("README, section Nothing.", result.stdout)
        self.assertNotIn("Why nothing?", result.stdout)
        self.assertIn("Hint 3 of 3", self.course("hint", "0", "--todo", "2").stdout)
        again = self.course("hint", "0", "--todo", "2")  # no further hint: the last one again
        self.assertIn("Hint 3 of 3", again.stdout)
        self.assertIn("last hint", again.stdout)
        result = self.course("hint", "00_alpha", "1", "--todo", "2")  # any rung, again
        self.assertEqual(result.returncode, 0)
        self.assertIn("Why nothing?", result.stdout)

    def test_bad_lesson_names_are_usage_errors(self):
        for name in ("\u00b2", "99", "", "01_gamma"):
            result = self.course("hint", name)
            self.assertEqual(result.returncode, 2, name)
            self.assertNotIn("Traceback", result.stderr)

    def test_hint_out_of_range(self):
        for k in ("0", "5", "-1"):
            result = self.course("hint", "0", k)
            self.assertEqual(result.returncode, 2, k)
            self.assertIn("1 to 4", result.stderr)

    def test_lesson_without_hints(self):
        result = self.course("hint", "1")
        self.assertEqual(result.returncode, 0)
        self.assertIn("has no hints", result.stdout)
        self.assertEqual(self.course("hint", "1", "1").returncode, 0)
        self.assertEqual(self.course("hint", "1", "--todo", "1").returncode, 0)

    def test_extra_arguments_only_where_accepted(self):
        result = self.course("hint", "0", "--", "x")
        self.assertEqual(result.returncode, 2)
        self.assertIn("takes no arguments after --", result.stderr)

    def test_reset_keeps_the_students_file(self):
        self.sync()
        starter_file = self.root / "lessons/00_alpha/alpha.cu"
        fresh = starter_file.read_text()
        starter_file.write_text("half done\n")
        result = self.course("reset", "0")
        self.assertEqual(result.returncode, 0)
        self.assertEqual(starter_file.read_text(), fresh)
        self.assertEqual((self.root / "lessons/00_alpha/alpha.cu.bak").read_text(), "half done\n")
        self.assertIn("alpha.cu.bak", result.stdout)
        result = self.course("reset", "0")
        self.assertIn("already the untouched starter", result.stdout)

    def test_diff(self):
        self.sync()
        result = self.course("diff", "0")
        self.assertEqual(result.returncode, 0)
        self.assertIn("--- lessons/00_alpha/alpha.cu", result.stdout)
        self.assertIn("+++ solutions/00_alpha/alpha.cu", result.stdout)
        self.assertIn("+  return y + 42;", result.stdout)
        self.assertNotIn("main.cu", result.stdout)  # no counterpart in solutions/
        for noise in ("BEGIN SOLUTION", "END SOLUTION", "STARTER:", "Generated by"):
            self.assertNotIn(noise, result.stdout)


# ---------------------------------------------------------------- hint ladders per TODO



class LadderTest(RepoTestCase):
    def setUp(self):
        super().setUp()
        self.env["COURSE_BUILD_ROOT"] = str(self.base / "builds")
        self.ladders = self.root / "lessons/00_alpha/given/hints.json"  # written by make_repo
        self.sync()

    def test_the_first_unfinished_todo_one_rung_at_a_time(self):
        first = self.course("hint", "0")
        self.assertEqual(first.returncode, 0, first.stderr)
        self.assertIn("Hint 1 of 4 for TODO 1 of lesson 00", first.stdout)
        self.assertIn("What is the answer?", first.stdout)
        self.assertIn("`./course hint 00 --todo 1` shows the next one", first.stdout)
        self.assertIn("README, section Answers.", self.course("hint", "0").stdout)
        # TODO 1 written: the next hint is TODO 2's first rung.
        mine = self.root / "lessons/00_alpha/alpha.cu"
        mine.write_text(mine.read_text().replace("return 0;  // your code here", "return x;"))
        second = self.course("hint", "0")
        self.assertIn("Hint 1 of 3 for TODO 2", second.stdout)
        # TODO 1's ladder goes on where it stopped; the last rung is its code, unwrapped.
        self.assertIn("Hint 3 of 4 for TODO 1", self.course("hint", "0", "--todo", "1").stdout)
        code = self.course("hint", "0", "--todo", "1").stdout
        self.assertIn("int y = x * 2;\nreturn y + 42;", code)
        self.assertIn("last hint of TODO 1", code)
        self.assertIn("Hint 1 of 4", self.course("hint", "0", "1", "--todo", "1").stdout)

    def test_bad_todo_or_rung_is_a_usage_error(self):
        for args in (("--todo", "7"), ("--todo", "2", "4"), ("--todo", "1", "0")):
            result = self.course("hint", "0", *args)
            self.assertEqual(result.returncode, 2, args)
            self.assertNotIn("Traceback", result.stderr)

    def test_everything_written_points_at_check(self):
        mine = self.root / "lessons/00_alpha/alpha.cu"
        mine.write_text((self.root / "solutions/00_alpha/alpha.cu").read_text())
        result = self.course("hint", "0")
        self.assertEqual(result.returncode, 0)
        self.assertIn("./course check 00", result.stdout)

    def test_chinese_rungs_and_reset_with_chinese_contracts(self):
        result = self.course("--lang", "zh", "hint", "0")
        self.assertIn("TODO 1 的提示 1/4", result.stdout)
        self.assertIn("答案是什么？", result.stdout)
        self.assertIn("./course hint 00 --todo 1 --lang zh", result.stdout)
        reset = self.course("reset", "0", "--lang", "zh")
        self.assertEqual(reset.returncode, 0, reset.stderr)
        text = (self.root / "lessons/00_alpha/alpha.cu").read_text()
        self.assertIn("  // TODO 1: 返回答案。\n  //         第二行。\n  return 0;", text)
        self.assertIn("    // TODO 2: 暂时什么都不做。\n", text)
        self.assertNotIn("return the answer", text)
        self.assertIn("// 由 ./course sync 从 solutions/00_alpha/alpha.cu 生成", text)
        # The Chinese starter is a fresh starter too: its TODOs count as unfinished.
        self.assertIn("TODO 1 的提示", self.course("--lang", "zh", "hint", "0", "--todo", "1").stdout)
        self.assertIn("Hint 1 of 3 for TODO 2", self.course("hint", "0", "--todo", "2").stdout)

    def test_sync_check_wants_a_ladder_and_a_chinese_contract_per_todo(self):
        self.assertEqual(self.course("sync", "--check").returncode, 0)
        self.ladders.unlink()
        result = self.course("sync", "--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("alpha.cu has TODOs and lessons/00_alpha/given/hints.json is missing",
                      result.stdout)
        broken = json.loads(json.dumps(LADDERS))
        del broken["todos"]["2"]
        broken["todos"]["1"]["contract_zh"].append("多余")
        self.ladders.write_text(json.dumps(broken))
        result = self.course("sync", "--check")
        self.assertEqual(result.returncode, 1)
        self.assertIn("TODO 2 has no hint ladder", result.stdout)
        self.assertIn("TODO 1 occurs 1 time(s), and its contract_zh has 2 text(s)", result.stdout)
        broken = json.loads(json.dumps(LADDERS))
        broken["todos"]["2"]["hints_zh"].pop()
        self.ladders.write_text(json.dumps(broken))
        result = self.course("sync", "--check")
        self.assertEqual(result.returncode, 2)
        self.assertIn("3 rungs in English and 2 in Chinese", result.stderr)


# ------------------------------------------------- commands that call cmake and ctest


class FakeToolsTestCase(RepoTestCase):
    """Fake cmake, ctest and programs, so the build commands can run without a GPU."""

    def setUp(self):
        super().setUp()
        self.fake_bin = self.base / "fake_bin"
        self.log = self.base / "calls.log"
        logger = textwrap.dedent(f"""\
            import json, os, shutil, sys
            with open({str(self.log)!r}, "a") as log:
                log.write(json.dumps([os.path.basename(sys.argv[0])] + sys.argv[1:]) + "\\n")
            """)
        write_script(self.fake_bin / "cmake", logger + textwrap.dedent("""\
            sys.exit(int(os.environ.get("FAKE_CMAKE_EXIT", "0")))
            """))
        write_script(self.fake_bin / "ctest", logger + textwrap.dedent("""\
            junit = sys.argv[sys.argv.index("--output-junit") + 1]
            if os.environ.get("FAKE_JUNIT"):
                shutil.copy(os.environ["FAKE_JUNIT"], junit)
            sys.exit(int(os.environ.get("FAKE_CTEST_EXIT", "0")))
            """))
        self.env["PATH"] = f"{self.fake_bin}{os.pathsep}{self.env['PATH']}"
        self.build_root = self.base / "builds"
        self.env["COURSE_BUILD_ROOT"] = str(self.build_root)

    def calls(self):
        if not self.log.exists():
            return []
        return [json.loads(line) for line in self.log.read_text().splitlines()]

    def configured(self, preset):
        tree = self.build_root / preset
        (tree / "bin").mkdir(parents=True, exist_ok=True)
        (tree / "CMakeCache.txt").write_text("")
        return tree

    def fake_probe(self, preset, output, exit_code):
        write_script(self.build_root / preset / "bin" / "course_gpu_probe", f"""\
            print({output!r})
            raise SystemExit({exit_code})
            """)

    def fake_program(self, path, lines, exit_code):
        write_script(path, program_script(lines, exit_code))


def program_script(lines, exit_code):
    """A fake lesson program: echoes its arguments, prints `lines`, exits."""
    return f"""\
        import sys
        print("args:", " ".join(sys.argv[1:]))
        for line in {lines!r}:
            print(line)
        raise SystemExit({exit_code})
        """


# A failed test whose message names the TODO it concerns.
FAILED_FOR_TODO_2 = ('<testcase name="L00.lesson.GpuAlpha.c" status="fail"><failure message=""/>'
                     '<system-out>differ [concerns TODO 2]</system-out></testcase>')


class RunAndCheckTest(FakeToolsTestCase):
    def test_run_configures_builds_and_passes_arguments(self):
        self.fake_program(self.build_root / "student/bin/00_alpha_solution", ["hello"], 3)
        result = self.course("run", "0", "--solution", "--", "--quick", "--size", "7")
        self.assertEqual(result.returncode, 3, result.stderr)
        self.assertIn("args: --quick --size 7", result.stdout)
        calls = self.calls()
        self.assertEqual(calls[0][:3], ["cmake", "--preset", "student"])  # not configured yet
        self.assertEqual(calls[1][:2], ["cmake", "--build"])
        self.assertEqual(calls[1][-2:], ["--target", "00_alpha_solution"])
        self.assertIn("$ cmake --preset student", result.stdout)

    def test_run_stops_when_the_build_fails(self):
        self.configured("student")
        env = dict(self.env, FAKE_CMAKE_EXIT="1")
        result = self.course("run", "1", env=env)
        self.assertEqual(result.returncode, 1)
        self.assertIn("building target 01_beta failed", result.stderr)

    def check(self, junit_xml, ctest_exit=0, cache=""):
        (self.configured("student") / "CMakeCache.txt").write_text(cache)
        junit_file = self.base / "fixture.xml"
        junit_file.write_text(junit_xml)
        env = dict(self.env, FAKE_JUNIT=str(junit_file), FAKE_CTEST_EXIT=str(ctest_exit))
        result = self.course("check", "00", env=env)
        ctest_call = [call for call in self.calls() if call[0] == "ctest"][0]
        self.assertIn("^L00\\.lesson\\.", ctest_call)
        self.assertIn("--output-on-failure", ctest_call)
        self.assertEqual(ctest_call[ctest_call.index("--timeout") + 1], "120")
        self.assertEqual(ctest_call[ctest_call.index("--output-junit") + 1],
                         str(self.build_root / "student/results/L00.xml"))
        build_call = [call for call in self.calls() if call[:2] == ["cmake", "--build"]][0]
        self.assertEqual(build_call[-2:], ["--target", "00_alpha_test"])
        return result

    def test_check_pass(self):
        # With a (fake) compute-sanitizer that reports nothing, the race checks pass too.
        sanitizer = self.base / "fake_bin" / "compute-sanitizer"
        write_script(sanitizer, """\
            import sys
            if "--version" in sys.argv:
                print("Version 2025.3.1.0")
                raise SystemExit(0)
            print("RESULT: PASS")
            print("========= ERROR SUMMARY: 0 errors")
            """)
        tree = self.configured("student")
        self.fake_program(tree / "bin" / "00_alpha", ["RESULT: PASS"], 0)
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a", "L00.lesson.GpuAlpha.b"]),
                            cache=f"COURSE_COMPUTE_SANITIZER:FILEPATH={sanitizer}\n")
        self.assertEqual(result.returncode, 0, result.stdout)
        self.assertIn("racecheck, synccheck and memcheck are clean", result.stdout)
        tools = [c[c.index("--tool") + 1] for c in self.calls() if "--tool" in c]
        self.assertEqual(tools, [])  # the fake sanitizer does not log; the wrapper ran it
        self.assertIn("--- racecheck", result.stdout)
        self.assertIn("./course diff 00", result.stdout)
        self.assertIn("solutions/00_alpha/NOTES.md", result.stdout)
        self.assertIn("next lesson: 01 Second lesson", result.stdout)
        self.assertIn("pass", self.course("list").stdout.splitlines()[3])

    def test_check_explains_a_skipped_sass_check_and_how_to_get_cuobjdump(self):
        skipped = SKIPPED_OTHER.format(name="L00.lesson.Sass.x")
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a"], failed=["L00.lesson.GpuAlpha.b"],
                                       extra=skipped), ctest_exit=8)
        self.assertIn("Skipped, so not verified (1):", result.stdout)
        self.assertIn("L00.lesson.Sass.x: cuobjdump was not found", result.stdout)
        self.assertIn("nvidia-cuda-cuobjdump", result.stdout)

    def test_check_fail(self):
        result = self.check(
            junit_text(passed=["L00.lesson.Cpu.a"], failed=["L00.lesson.GpuAlpha.b"]), ctest_exit=8
        )
        self.assertEqual(result.returncode, 1)
        self.assertIn("L00.lesson.GpuAlpha.b", result.stdout)
        self.assertIn("lessons/00_alpha/README.md", result.stdout)
        self.assertIn("lessons/00_alpha/alpha.cu", result.stdout)
        self.assertIn("./course hint 00", result.stdout)

    def test_check_fail_in_chinese(self):
        self.env["COURSE_LANG"] = "zh"
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a"], extra=FAILED_FOR_TODO_2),
                            ctest_exit=8)
        self.assertEqual(result.returncode, 1)
        self.assertIn("第 00 课还没有完成：1 个通过，1 个失败，0 个跳过。", result.stdout)
        self.assertIn("L00.lesson.GpuAlpha.c   （最可能是 TODO 2）", result.stdout)
        self.assertIn("先看 lessons/00_alpha/alpha.cu 的 TODO 2。", result.stdout)
        self.assertIn("阅读 lessons/00_alpha/README.zh.md", result.stdout)

    def test_check_fail_offers_the_next_rung_of_the_failing_todo(self):
        self.sync()  # lesson 00's ladders: make_repo wrote them
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a"], extra=FAILED_FOR_TODO_2),
                            ctest_exit=8)
        self.assertIn("./course hint 00 --todo 2   (the next hint for TODO 2)", result.stdout)
        result = self.course("--lang", "zh", "check", "00",
                             env=dict(self.env, FAKE_JUNIT=str(self.base / "fixture.xml"),
                                      FAKE_CTEST_EXIT="8"))
        self.assertIn("./course hint 00 --todo 2 --lang zh   （TODO 2 的下一级提示）", result.stdout)

    def test_check_fail_names_the_todos_the_failures_concern(self):
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a"], extra=FAILED_FOR_TODO_2),
                            ctest_exit=8)
        self.assertEqual(result.returncode, 1)
        self.assertIn("L00.lesson.GpuAlpha.c   (most likely TODO 2)", result.stdout)
        self.assertIn("Look first at TODO 2 of lessons/00_alpha/alpha.cu.", result.stdout)

    def test_check_fail_without_gpu_says_what_is_unverified(self):
        self.sync()
        result = self.check(
            junit_text(failed=["L00.lesson.Model.a"], skipped=["L00.lesson.Streams.b"]), ctest_exit=8
        )
        self.assertEqual(result.returncode, 1)
        self.assertIn("Not verified on this machine (1 tests need a GPU", result.stdout)
        self.assertIn("TODO 1, 2 of lessons/00_alpha/alpha.cu", result.stdout)

    def test_check_without_sanitizer_is_not_verified(self):
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a", "L00.lesson.GpuAlpha.b"]))
        self.assertEqual(result.returncode, 77, result.stdout)
        self.assertIn("NOT verified", result.stdout)

    def test_check_without_gpu_is_not_verified(self):
        # The GPU test's name says nothing: what counts is why it skipped.
        self.sync()
        result = self.check(junit_text(passed=["L00.lesson.Cpu.a"], skipped=["L00.lesson.Timing.b"]))
        self.assertEqual(result.returncode, 77, result.stderr)
        self.assertIn("NOT verified", result.stdout)
        self.assertIn("TODO 1, 2 of lessons/00_alpha/alpha.cu", result.stdout)
        self.assertIn("skipped", self.course("list").stdout.splitlines()[3])

    def test_list_columns(self):
        add_two_gpu_lesson(self.root)
        self.configured("student")
        self.fake_probe("student", "Device 0: Fake GPU, compute capability 8.6", 0)
        results = self.build_root / "student/results"
        results.mkdir()
        (results / "L01.xml").write_text(junit_text(failed=["L01.lesson.Cpu.a"]))
        result = self.course("list")
        self.assertEqual(result.returncode, 0)
        lines = result.stdout.splitlines()
        self.assertIn("Fake GPU", lines[0])
        rows = {line[:2]: line.split() for line in lines[3:7]}
        self.assertEqual(rows["00"][-3:], ["yes", "ready", "—"])
        self.assertEqual(rows["01"][-3:], ["yes", "ready", "fail"])
        self.assertEqual(rows["02"][-4:], ["sm_90+", "no", "ready", "—"])  # needs 9.0
        self.assertEqual(rows["03"][-3:], ["yes", "planned", "—"])
        self.assertIn("needs 2 GPUs", lines[7])  # one GPU (the probe does not say more)
        self.assertEqual(lines[7].split()[4:8], ["sm_80+", "no", "ready", "—"])
        self.fake_probe("student", "Device 0: Fake GPU, compute capability 8.6\nGPUs visible: 2", 0)
        two = self.course("list").stdout.splitlines()[7].split()
        self.assertEqual(two[5:8], ["yes", "ready", "—"])

    def test_list_without_gpu_and_without_probe(self):
        self.assertIn("  ?  ", self.course("list").stdout)
        self.configured("student")
        self.fake_probe("student", "no CUDA device: cudaErrorNoDevice", 77)
        result = self.course("list")
        self.assertIn("no CUDA device", result.stdout)
        self.assertIn("no GPU", result.stdout.splitlines()[3])


class TourTest(FakeToolsTestCase):
    def setUp(self):
        super().setUp()
        shutil.copy2(REPO / "CMakePresets.json", self.root / "CMakePresets.json")

    def test_tour_rejects_a_bad_preset_before_running_anything(self):
        for preset in ("", "nonsense", "base"):
            result = self.course("tour", "--preset", preset)
            self.assertEqual(result.returncode, 2, preset)
            self.assertIn("unknown preset", result.stderr)
        self.assertEqual(self.calls(), [])

    def test_tour_without_gpu(self):
        self.configured("default")
        self.fake_probe("default", "no CUDA device: cudaErrorNoDevice", 77)
        result = self.course("tour")
        self.assertEqual(result.returncode, 77, result.stderr)
        self.assertIn("No CUDA GPU was found: no CUDA device: cudaErrorNoDevice.", result.stdout)
        self.assertIn("cmake --workflow --preset default", result.stdout)
        builds = [call for call in self.calls() if call[:2] == ["cmake", "--build"]]
        self.assertEqual(len(builds), 1)  # only the probe
        self.assertEqual(builds[0][-2:], ["--target", "course_gpu_probe"])

    def test_tour_runs_the_ready_solutions_and_summarises(self):
        add_two_gpu_lesson(self.root)
        tree = self.configured("quick")
        self.fake_probe("quick", "Device 0: Fake GPU, compute capability 8.6", 0)
        self.fake_program(tree / "bin/00_alpha_solution", ["table", "HEADLINE: 1.5 TB/s", "RESULT: PASS"], 0)
        self.fake_program(tree / "bin/01_beta_solution", ["HEADLINE: slow", "RESULT: FAIL"], 1)
        csv_dir = self.base / "csv"
        result = self.course("tour", "--preset", "quick", "--csv-dir", str(csv_dir), "--", "--quick")
        self.assertEqual(result.returncode, 1, result.stderr)
        self.assertIn(f"args: --quick --quick --csv {csv_dir / '00_alpha.csv'}", result.stdout)
        summary = result.stdout[result.stdout.index("Tour summary"):]
        self.assertIn("Fake GPU", summary)
        self.assertRegex(summary, r"00\s+First \"quoted\" lesson\s+PASS\s+1.5 TB/s")
        self.assertRegex(summary, r"01\s+Second lesson\s+FAIL\s+slow")
        self.assertRegex(summary, r"02\s+Needs Hopper\s+SKIP\(77\)\s+needs compute capability 9.0")
        self.assertRegex(summary, r"04\s+Two GPUs\s+SKIP\(77\)\s+needs 2 GPUs; this machine has 1")
        self.assertNotIn("Planned lesson", summary)
        self.assertTrue(csv_dir.is_dir())
        builds = [call for call in self.calls() if call[:2] == ["cmake", "--build"]]
        self.assertEqual(len(builds), 2)  # the probe, then the ready lessons' programs only
        targets = builds[1][builds[1].index("--target") + 1:]
        self.assertEqual(targets, ["00_alpha_solution", "01_beta_solution", "02_gamma_solution",
                                   "04_epsilon_solution"])


# --------------------------------------------------------------------------- parsers


class JunitTest(unittest.TestCase):
    def test_pass(self):
        summary = junit.parse_junit_text(junit_text(passed=["L01.lesson.Cpu.a", "L01.lesson.Gpu.b"]))
        self.assertEqual(summary.verdict, "pass")
        self.assertEqual(len(summary.passed), 2)

    def test_fail(self):
        summary = junit.parse_junit_text(junit_text(passed=["L01.lesson.Cpu.a"], failed=["L01.lesson.Gpu.b"]))
        self.assertEqual(summary.verdict, "fail")
        self.assertEqual(summary.failed, ["L01.lesson.Gpu.b"])

    def test_every_gpu_test_skipped(self):
        summary = junit.parse_junit_text(
            junit_text(passed=["L01.lesson.Cpu.a"], skipped=["L01.lesson.GpuCopy.b", "L01.lesson.GpuCopy.c"])
        )
        self.assertEqual(summary.verdict, "skipped")
        self.assertEqual(len(summary.skipped_for_gpu), 2)

    def test_gpu_skips_are_found_by_reason_not_by_name(self):
        # A CPU test whose name contains "Gpu" passing does not make the check verified.
        summary = junit.parse_junit_text(
            junit_text(passed=["L13.lesson.Model.PairTimingFromGpuIntervals"],
                       skipped=["L13.lesson.Streams.Overlap"])
        )
        self.assertEqual(summary.verdict, "skipped")
        # A skip for another reason (no cuobjdump) is not a missing GPU.
        other = SKIPPED_OTHER.format(name="L01.lesson.Sass.x")
        summary = junit.parse_junit_text(junit_text(passed=["L01.lesson.GpuCopy.a"], extra=other))
        self.assertEqual(summary.verdict, "pass")

    def test_other_skips_keep_their_reason(self):
        other = SKIPPED_OTHER.format(name="L01.lesson.Sass.x")
        summary = junit.parse_junit_text(junit_text(passed=["L01.lesson.GpuCopy.a"], extra=other))
        self.assertEqual(summary.skip_reasons, {"L01.lesson.Sass.x": "cuobjdump was not found"})
        self.assertEqual(summary.skipped_for_gpu, [])

    def test_some_gpu_tests_skipped(self):
        # A GPU too old for some tests (Hopper-only ones on an sm_80): the rest verified it.
        too_old = ('<testcase name="L01.lesson.Hopper.b" status="notrun"><skipped message='
                   '"SKIP_REGULAR_EXPRESSION_MATCHED"/><system-out>Skipped\nNVIDIA A100 has '
                   'compute capability 8.0; this test needs 9.0</system-out></testcase>')
        summary = junit.parse_junit_text(junit_text(passed=["L01.lesson.GpuCopy.a"], extra=too_old))
        self.assertEqual(summary.verdict, "pass")

    def test_skip_forms(self):
        forms = [
            '<testcase name="a.Gpu.1" status="notrun"><skipped message="SKIP_RETURN_CODE=77"/></testcase>',
            '<testcase name="a.Gpu.2" status="notrun"/>',
            '<testcase name="a.Gpu.3"><skipped/></testcase>',
            '<testcase name="a.Gpu.4" status="disabled"/>',
        ]
        summary = junit.parse_junit_text(junit_text(extra="\n".join(forms)))
        self.assertEqual(len(summary.skipped), 4)
        self.assertEqual(summary.verdict, "skipped")

    def test_failed_tests_name_their_todos(self):
        case = ('<testcase name="L06.lesson.Gpu.x" status="fail"><failure message=""/><system-out>'
                'Value of: c.ok() 3 of 4097 differ [concerns TODO 3] [concerns TODO 6]'
                '</system-out></testcase>')
        summary = junit.parse_junit_text(junit_text(extra=case))
        self.assertEqual(summary.todos_of_failed, {"L06.lesson.Gpu.x": [3, 6]})

    def test_not_run_because_not_built_is_a_failure(self):
        case = ('<testcase name="a.Cpu.x" status="notrun">'
                '<skipped message="Unable to find executable"/></testcase>')
        summary = junit.parse_junit_text(junit_text(extra=case))
        self.assertEqual(summary.verdict, "fail")

    def test_empty_and_missing(self):
        self.assertEqual(junit.parse_junit_text(junit_text()).verdict, "no tests")
        self.assertIsNone(junit.read_junit(Path("/nonexistent/L01.xml")))


class TourParsingTest(unittest.TestCase):
    def test_parse_output(self):
        lines = ["GPU: X", "HEADLINE: first", "  HEADLINE:  2.1 TB/s (93% of D2D)  ", "RESULT: PASS"]
        self.assertEqual(tour.parse_output(lines), ("PASS", "2.1 TB/s (93% of D2D)"))
        self.assertEqual(tour.parse_output(["nothing"]), (None, None))
        self.assertEqual(tour.parse_output(["RESULT: FAIL"]), ("FAIL", None))

    def test_verdicts(self):
        self.assertEqual(tour.verdict(0, "PASS"), "PASS")
        self.assertEqual(tour.verdict(1, "FAIL"), "FAIL")
        self.assertEqual(tour.verdict(0, "FAIL"), "FAIL")
        self.assertEqual(tour.verdict(77, None), "SKIP(77)")
        self.assertEqual(tour.verdict(2, None), "ERROR(2)")
        self.assertEqual(tour.verdict(-11, "PASS"), "ERROR(-11)")
        self.assertEqual(tour.verdict(0, None), "ERROR(0)")

    def test_lesson_run_and_summary(self):
        runs = [
            tour.lesson_run("00", "What this GPU can do", 0, ["HEADLINE: D2D 2.9 TB/s", "RESULT: PASS"]),
            tour.lesson_run("01", "Copy and compute through registers", 77, ["needs a GPU"]),
            tour.lesson_run("02", "Third", 134, ["Aborted"]),
        ]
        self.assertEqual([run.verdict for run in runs], ["PASS", "SKIP(77)", "ERROR(134)"])
        self.assertEqual(runs[1].headline, "needs a GPU")
        self.assertEqual(runs[2].headline, "(no RESULT line)")
        table = tour.summary_table(runs)
        self.assertRegex(table, r"00\s+What this GPU can do\s+PASS\s+D2D 2.9 TB/s")
        self.assertIn("1 of 3 lessons passed; 1 skipped (this machine lacks what they need).", table)
        self.assertLessEqual(max(len(line) for line in table.splitlines()), 100)
        self.assertFalse(tour.tour_succeeded(runs))  # lesson 02 crashed
        self.assertTrue(tour.tour_succeeded(runs[:2]))  # a skip for a missing GPU is no failure
        self.assertFalse(tour.tour_succeeded(runs[1:2]))  # nothing ran
        self.assertFalse(tour.tour_succeeded([]))


class ProbeParsingTest(unittest.TestCase):
    def test_gpu(self):
        probe = parse_probe_output(0, "Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0\nmore\n")
        self.assertEqual((probe.status, probe.compute_capability), ("gpu", (9, 0)))
        self.assertEqual(probe.message, "Device 0: NVIDIA H100 80GB HBM3, compute capability 9.0")

    def test_no_gpu(self):
        probe = parse_probe_output(77, "no CUDA device: cudaErrorNoDevice\n")
        self.assertEqual((probe.status, probe.message), ("no-gpu", "no CUDA device: cudaErrorNoDevice"))

    def test_unexpected_output(self):
        self.assertEqual(parse_probe_output(0, "hello").status, "error")
        self.assertEqual(parse_probe_output(1, "compute capability 8.0").status, "error")

    def test_gpu_count(self):
        self.assertEqual(parse_probe_output(0, "GPU 0: X (compute capability 9.0)\nGPUs visible: 4\n").gpu_count, 4)
        self.assertEqual(parse_probe_output(0, "GPU 0: X (compute capability 9.0)\n").gpu_count, 1)

    def test_two_digit_capability(self):
        self.assertEqual(parse_probe_output(0, "compute capability 12.0").compute_capability, (12, 0))


if __name__ == "__main__":
    unittest.main()
