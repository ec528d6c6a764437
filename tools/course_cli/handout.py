"""`./course handout`: a student repository for chosen lessons, without the solutions.

    ./course handout 05 06 --out ../class-handout [--hints no-code|full|off]
                     [--edition both|en|zh] [--results keep|drop] [--force]

The handout holds what the chosen lessons need and nothing that answers them:
  - the lessons, each with its starter as `./course sync` makes it from the solution's
    STARTER lines (in Chinese with --edition zh, as `./course reset --lang zh` writes it), its
    API header, given/ and CMakeLists.txt as they are, and its READMEs (see --edition and
    --results); with them every earlier lesson a chosen one USES (lesson 15 links the
    student's own lesson 11 and 14 files, never their answers);
  - what builds and checks them: CMakeLists.txt, CMakePresets.json, cmake/, common/, the
    lessons' tests and tests/support/, the `course` tool and the tools the lessons' tests run;
  - .course/handout.json (what was handed out and how: the CLI reads it) and
    .course/starters/ (the untouched starters: `./course reset` and `hint` compare with them);
  - a README that says what the handout is.
It has no solutions/, no NOTES, no graders or lints that read solutions, and no hint rung
with code unless --hints full. The build of a tree without solutions/ makes the student's
targets only (cmake/CourseLesson.cmake). Before it finishes, the command scans the handout
for the solutions' code (find_answers()); a line of an answer found there is an error.

In a handout, `./course list`, `run`, `check`, `hint` and `reset` work; `./course run
--solution`, `diff`, `tour`, `sync` and `handout` say that a handout has no solutions.
"""

import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from .catalog import CATALOG_PATH, Lesson, find_ready_lesson, load_catalog
from .errors import CourseError
from .i18n import tr

HANDOUT_DIR = Path(".course")
HANDOUT_FILE = HANDOUT_DIR / "handout.json"
STARTERS_DIR = HANDOUT_DIR / "starters"

HINTS = ("no-code", "full", "off")
EDITIONS = ("both", "en", "zh")
RESULTS = ("keep", "drop")

# The tools a handout may ship (those its lessons' CMakeLists.txt and `./course check` run),
# and those it must never ship: they read or grade the solutions, or are the maintainers'.
NEVER_SHIPPED = {"mutation.py", "op_mutation.py", "integrity.py", "lint_answers.py",
                 "lint_complexity.py", "lint_contracts.py", "files_per_exercise.py",
                 "compile_alone.py", "translation_check.py", "results_table.py",
                 "draw_figures.py", "gpu_pass.sh", "doxygen_md_filter.py"}
# The measured output and pictures of a lesson README (tools/results_table.py writes them).
OUTPUT_BLOCK = re.compile(r"<!-- output:begin -->.*?<!-- output:end -->", re.S)
FIGURES_BLOCK = re.compile(r"<!-- figures:begin -->.*?<!-- figures:end -->\n*", re.S)
RESULT_PICTURE = re.compile(r"^!\[[^\]]*\]\((?:\.\./)*docs/results/[^)]*\)\s*$", re.M)
DOCS_LINK = re.compile(r"(?:\.\./)*(docs/(?:figures|results|pages)/[\w.-]+(?:/[\w.-]+)?)")
# Line 1 of a README of either edition: the link to the other one.
EDITION_LINE = re.compile(r"^(\*\*English\*\* · \[中文\]\([^)]*\)|\[English\]\([^)]*\) · \*\*中文\*\*)\n\n")


# ------------------------------------------------------------------ in a handout


def info(root: Path) -> dict | None:
    """What .course/handout.json says, or None outside a handout."""
    try:
        data = json.loads((root / HANDOUT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def is_handout(root: Path) -> bool:
    return (root / HANDOUT_FILE).is_file()


def starters_dir(root: Path) -> Path:
    """Where a handout keeps the untouched starters (.course/starters/NN_slug/slug.cu)."""
    return root / STARTERS_DIR


def default_language(root: Path) -> str | None:
    """The language of the messages of a Chinese-only handout ("zh"), else None."""
    data = info(root)
    return "zh" if data and data.get("edition") == "zh" else None


def single_edition(root: Path) -> bool:
    """True in a handout of one edition: its READMEs are README.md, whatever the language."""
    data = info(root)
    return bool(data) and data.get("edition") in ("en", "zh")


def refuse(command: str) -> CourseError:
    """The error of a command that needs the solutions, in a handout."""
    return CourseError(tr("this folder is a handout of the course: it has no solutions, so "
                          "`./course {command}` cannot run here. Your instructor has them.",
                          command=command), exit_code=2)


# ---------------------------------------------------------------- the lessons


def _cmake_parser(root: Path):
    """cmake/course_starter_only.py as a module (its CMake reader and its filter)."""
    import importlib.util

    path = root / "cmake" / "course_starter_only.py"
    spec = importlib.util.spec_from_file_location("course_starter_only", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def lesson_uses(root: Path, lesson: Lesson, parser=None) -> list[str]:
    """The lessons (NN_slug) whose code `lesson` links whatever else is built: the USES of its
    course_add_lesson() call, with the variables set at the top level of its CMakeLists.txt.
    A USES added under a condition (lesson 10 takes lesson 09's kernel when lesson 09 is
    built) is not a need."""
    parser = parser or _cmake_parser(root)
    path = lesson.lesson_dir(root) / "CMakeLists.txt"
    nodes = parser.tree(parser.parse(path.read_text(encoding="utf-8")))
    variables: dict[str, list[str]] = {}
    for node in nodes:
        if not isinstance(node, parser.Statement):
            continue
        if node.name == "set" and node.tokens:
            variables[node.tokens[0]] = [t.strip('"') for t in node.tokens[1:]]
        if node.name == "course_add_lesson":
            words = []
            for token in node.tokens[2:]:
                m = re.fullmatch(r"\$\{(\w+)\}", token)
                words += variables.get(m.group(1), []) if m else [token]
            keywords = {"TEST_HOOKS", "USES", "SOURCES"}
            uses, on = [], False
            for word in words:
                if word in keywords:
                    on = word == "USES"
                elif on and word:
                    uses.append(word)
            return uses
    raise CourseError(f"{path}: no course_add_lesson() call")


def with_uses(root: Path, lessons: list[Lesson], chosen: list[Lesson]) -> list[Lesson]:
    """`chosen` and every lesson they use, directly or through another, in lesson order."""
    by_name = {lesson.name: lesson for lesson in lessons}
    parser = _cmake_parser(root)
    wanted = {lesson.name for lesson in chosen}
    todo = list(wanted)
    while todo:
        lesson = by_name[todo.pop()]
        for used in lesson_uses(root, lesson, parser):
            if used not in by_name:
                raise CourseError(f"lessons/{lesson.name}/CMakeLists.txt uses {used}, which "
                                  "the catalog does not have")
            if used not in wanted:
                wanted.add(used)
                todo.append(used)
    return [lesson for lesson in lessons if lesson.name in wanted]


# ---------------------------------------------------------------- the answers


def _normal(line: str) -> str:
    return " ".join(line.split())


def _strings(value) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def file_lines(path: Path) -> set[str]:
    """A text file's lines, whitespace-normalized (a JSON file's strings, split in lines: a
    hint rung keeps its code in one string). Empty for a file that is not UTF-8 text."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError):
        return set()
    if path.suffix == ".json":
        try:
            text = "\n".join(_strings(json.loads(text)))
        except ValueError:
            pass
    return {_normal(line) for line in text.splitlines()} - {""}


def _files(top: Path, skip=()):
    """The files under `top`, in a stable order, never entering a folder named in `skip`."""
    for folder, folders, files in os.walk(top):
        folders[:] = sorted(name for name in folders if name not in skip)
        for name in sorted(files):
            yield Path(folder) / name


def answer_lines(root: Path, lessons: list[Lesson]) -> tuple[dict[str, str], int]:
    """The answers' lines of `lessons` that the course gives nowhere else: each line a solution
    region adds (not a STARTER line, not a comment, at least 10 characters with a letter) that
    no starter made from the solutions and no file of the repository outside solutions/ and
    the hint ladders holds (a bug hunt's given code and a README's example are the course's to
    show). {normalized line: where},
    and how many region lines were left out for being shown elsewhere."""
    from .regions import answer_lines as region_answer_lines, regions
    from .starter import generate_starter

    shown = set()
    for path in _files(root, skip={".git", "build", "solutions", "__pycache__"}):
        if path.name != "hints.json":
            shown |= file_lines(path)
    for solution in sorted((root / "solutions").glob("*/*.cu")):  # the starters as generated
        text = generate_starter(solution.read_text(encoding="utf-8"), solution.name)
        shown |= {_normal(line) for line in text.splitlines()}
    answers: dict[str, str] = {}
    elsewhere = 0
    for lesson in lessons:
        for solution in sorted(lesson.solution_dir(root).glob("*.cu")):
            text = solution.read_text(encoding="utf-8")
            lines = text.splitlines()
            for region in regions(text):
                for line in region_answer_lines(lines, region):
                    normal = _normal(line)
                    if (len(normal) < 10 or normal.startswith("//")
                            or not re.search(r"[A-Za-z]", normal)):
                        continue
                    if normal in shown:
                        elsewhere += 1
                        continue
                    answers.setdefault(normal, f"{solution.relative_to(root)}, TODO "
                                               f"{region['todo']}")
    return answers, elsewhere


def find_answers(handout: Path, answers: dict[str, str], skip_hints: bool = False) -> list[str]:
    """Where the handout holds an answer: its solutions/ folder, a region marker, a NOTES
    file, or a line of `answers` (answer_lines()) in any of its files. With `skip_hints`,
    the hint ladders are not read (--hints full hands their code out on purpose)."""
    found = []
    if (handout / "solutions").exists():
        found.append("solutions/ is there")
    for path in _files(handout, skip={".git", "build", "__pycache__"}):
        relative = path.relative_to(handout).as_posix()
        if path.name.startswith("NOTES"):
            found.append(f"{relative}: a solution's notes")
        if skip_hints and path.name == "hints.json":
            continue
        if path.suffix not in (".py", ".json", ".md") and path.name != "CMakeLists.txt":
            try:
                if re.search(r"//\s*(BEGIN|END) SOLUTION", path.read_text(encoding="utf-8")):
                    found.append(f"{relative}: an exercise region's marker")
            except (OSError, UnicodeDecodeError):
                pass
        for line in sorted(file_lines(path) & answers.keys()):
            found.append(f"{relative}: {line!r} (the answer of {answers[line]})")
    return found


# ------------------------------------------------------------------- writing


def _copy(source: Path, target: Path) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    if source.is_dir():
        shutil.copytree(source, target, ignore=shutil.ignore_patterns("__pycache__", "*.pyc",
                                                                      "*.bak"))
    else:
        shutil.copy2(source, target)


def _tools_needed(root: Path, texts: list[str]) -> list[str]:
    """tools/*.py named in `texts` (the lessons' filtered CMakeLists.txt), the sanitizer
    wrapper `./course check` runs, and the sibling modules they import."""
    names = {"sanitize.py"}
    for text in texts:
        names |= set(re.findall(r"/tools/([\w-]+\.py)\b", text))
    todo = list(names)
    while todo:
        path = root / "tools" / todo.pop()
        if not path.is_file():
            continue
        for module in re.findall(r"^\s*(?:from|import)\s+(\w+)", path.read_text(encoding="utf-8"),
                                 re.M):
            if (root / "tools" / f"{module}.py").is_file() and f"{module}.py" not in names:
                names.add(f"{module}.py")
                todo.append(f"{module}.py")
    bad = sorted(names & NEVER_SHIPPED)
    if bad:
        raise CourseError(f"a lesson's CMakeLists.txt runs {', '.join(bad)}, a tool that reads "
                          "the solutions and is never handed out: guard that test with the "
                          "solution's targets")
    return sorted(name for name in names if (root / "tools" / name).is_file())


def _hints(data: dict, policy: str) -> dict:
    """A lesson's given/hints.json for the handout: every rung, all but the last (the code),
    or none (the Chinese contracts stay: the Chinese starters are written from them)."""
    if policy == "full":
        return data
    todos = {}
    for number, entry in data.get("todos", {}).items():
        entry = dict(entry)
        for key in ("hints", "hints_zh"):
            entry[key] = entry.get(key, [])[:-1] if policy == "no-code" else []
        todos[number] = entry
    return dict(data, todos=todos, handout_hints=policy)


NO_RESULTS = {
    "en": "Measured results are not part of this handout: `./course run {number}` prints your "
          "own table.",
    "zh": "这份学生版仓库不含实测结果：`./course run {number}` 会打印你自己的表格。",
}


def _readme(text: str, language: str, number: str, edition: str, results: str) -> str:
    """A lesson README as the handout has it: without the line that links the other edition
    (one edition only), without the measured excerpt and pictures (--results drop); in a
    Chinese-only handout the links to README.zh.md name README.md."""
    if edition != "both":
        text = EDITION_LINE.sub("", text, count=1)
        if edition == "zh":
            text = re.sub(r"\bREADME\.zh\.md\b", "README.md", text)
    if results == "drop":
        note = NO_RESULTS[language].format(number=number)
        text = FIGURES_BLOCK.sub("", text)
        text = OUTPUT_BLOCK.sub(note, text)
        text = RESULT_PICTURE.sub("", text)
    return text


def _handout_readme(lessons, chosen, uses_of, options, language: str) -> str:
    """The handout's own README, in `language`: what it is, its lessons, how to work."""
    asked = [lesson for lesson in lessons if lesson in chosen]
    rows = []
    for lesson in lessons:
        title = (lesson.title_zh or lesson.title) if language == "zh" else lesson.title
        readme = f"lessons/{lesson.name}/README.md"
        if options["edition"] == "both" and language == "zh":
            readme = readme[:-3] + ".zh.md"
        if lesson in chosen:
            why = "本次作业" if language == "zh" else "the assignment"
        else:
            users = ", ".join(l.number for l in asked if lesson.name in uses_of[l.name])
            why = (f"第 {users} 课使用你在这一课写的代码" if language == "zh"
                   else f"lesson {users} uses your code of this lesson")
        rows.append(f"| {lesson.number} | [{title}]({readme}) | {why} |")
    hints = options["hints"]
    if language == "zh":
        hint_text = {"no-code": "每个 TODO 的提示一次给一级（问题、该读哪里、伪代码），不含最后一级的代码。",
                     "full": "每个 TODO 的提示一次给一级，最后一级是代码。",
                     "off": "这份学生版仓库不提供提示：请阅读每课的 README。"}[hints]
        uses = ""
        if any(lesson not in chosen for lesson in lessons):
            uses = ("\n后面的课会链接你在前面的课中写的文件（绝不是参考答案）：它的程序（因此还有 "
                    "`./course check` 在 sanitizer 下的运行）会用到那些代码。请按顺序完成各课。\n")
        return f"""# CUDA 异步数据搬运：学生版仓库

这个文件夹是课程 “CUDA asynchronous data movement” 分发给学生的仓库（handout），由 `./course handout` 生成。它包含以下各课的起始代码、README 和测试，但不含参考答案。

| # | 课 | 为什么在这里 |
|---|---|---|
{chr(10).join(rows)}
{uses}
## 怎样做

1. `./course list`，然后阅读一课的 README。
2. 填写 `lessons/NN_slug/slug.cu` 中编了号的 TODO：那个文件就是你的练习。
3. `./course check NN` 构建这一课并用你的文件运行测试（有 GPU 时还会运行 racecheck、synccheck 和 memcheck）。没有 GPU 时只运行 CPU 测试，GPU 测试报告为已跳过（未验证），绝不会报告为通过。
4. `./course hint NN`：{hint_text}
5. `./course run NN` 运行你的程序；`./course reset NN` 恢复起始代码（你的文件保留为 `.bak`）。

学生版仓库不含参考答案：`./course run NN --solution`、`./course diff` 和 `./course tour` 会说明这一点并退出。需要 CUDA 13 工具包、CMake 3.25 或更新版本、Ninja、GoogleTest 和 Python 3；运行程序需要一块计算能力 8.0 或更高的 NVIDIA GPU（第 17 课还需要 NCCL 和两块 GPU）。
"""
    hint_text = {"no-code": "the hints of each TODO one rung at a time (a question, where to "
                            "read, pseudo-code), without the last rung, the code.",
                 "full": "the hints of each TODO one rung at a time, the code last.",
                 "off": "no hints in this handout: each lesson's README is the place to read."}[hints]
    uses = ""
    if any(lesson not in chosen for lesson in lessons):
        uses = ("\nA later lesson links the file you write in an earlier one (never its answer): "
                "its program, and so `./course check`'s runs of it under the sanitizers, use that "
                "code. Work through the lessons in order.\n")
    return f"""# CUDA asynchronous data movement: a handout

This folder is a handout of the course "CUDA asynchronous data movement", made by
`./course handout`. It holds the starters, READMEs and tests of these lessons, and not
their solutions.

| # | lesson | why it is here |
|---|---|---|
{chr(10).join(rows)}
{uses}
## How to work

1. `./course list`, then read a lesson's README.
2. Fill in the numbered TODOs of `lessons/NN_slug/slug.cu`: that file is your exercise.
3. `./course check NN` builds the lesson and runs its tests against your file (with a GPU,
   also racecheck, synccheck and memcheck). Without a GPU it runs the CPU tests and reports
   the GPU tests as skipped (not verified), never as passed.
4. `./course hint NN`: {hint_text}
5. `./course run NN` runs your program; `./course reset NN` restores the starter (your file
   is kept as `.bak`).

A handout has no solutions: `./course run NN --solution`, `./course diff` and `./course
tour` say so and stop. You need the CUDA 13 toolkit, CMake 3.25 or newer, Ninja, GoogleTest
and Python 3; the programs need an NVIDIA GPU of compute capability 8.0 or newer (lesson 17
also NCCL and two GPUs).
"""


DOCS_STUB = """\
# A handout has no documentation site: the lessons' READMEs are the text to read. (The
# course's repository builds one with Doxygen; its pages include the solutions.)
add_custom_target(docs
  COMMAND "${CMAKE_COMMAND}" -E echo "A handout has no documentation site: read the lessons' READMEs."
  VERBATIM)
"""


def _git_commit(root: Path) -> str:
    try:
        out = subprocess.run(["git", "-C", str(root), "rev-parse", "--short", "HEAD"],
                             capture_output=True, text=True, timeout=10)
        return out.stdout.strip() if out.returncode == 0 else ""
    except (OSError, subprocess.TimeoutExpired):
        return ""


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def _write_catalog(root: Path, out: Path, lessons: list[Lesson]) -> None:
    """lessons/catalog.json with the handout's lessons only (`./course list` shows them)."""
    catalog = json.loads((root / CATALOG_PATH).read_text(encoding="utf-8"))
    names = {lesson.name for lesson in lessons}
    catalog["lessons"] = [entry for entry in catalog["lessons"]
                          if f"{entry['number']}_{entry['slug']}" in names]
    _write(out / CATALOG_PATH, json.dumps(catalog, indent=2, ensure_ascii=False) + "\n")


def _write_lesson(root: Path, out: Path, lesson: Lesson, options: dict) -> set[str]:
    """One lesson: its files as they are, but the starters (generated, in the edition's
    language; the English ones kept in .course/starters), the hint ladders (--hints) and the
    READMEs (--edition, --results); its test sources. Returns the docs/ files the READMEs link."""
    from . import starter

    source, target = lesson.lesson_dir(root), out / "lessons" / lesson.name
    pairs = starter.starter_pairs(root, lesson)
    generated = {mine.name for _, mine in pairs} | {"README.md", "README.zh.md"}
    for path in _files(source, skip={"__pycache__"}):
        relative = path.relative_to(source).as_posix()
        if relative in generated or path.suffix == ".bak":
            continue
        if relative == "given/hints.json":
            data = _hints(json.loads(path.read_text(encoding="utf-8")), options["hints"])
            _write(target / relative, json.dumps(data, indent=2, ensure_ascii=False) + "\n")
        else:
            _copy(path, target / relative)
    edition = options["edition"]
    for solution, mine in pairs:
        language = "zh" if edition == "zh" else "en"
        _write(target / mine.name, starter.expected_starter(root, solution, language))
        _write(out / STARTERS_DIR / lesson.name / solution.name,
               starter.expected_starter(root, solution, "en"))
    readmes = {"both": [("README.md", "README.md", "en"), ("README.zh.md", "README.zh.md", "zh")],
               "en": [("README.md", "README.md", "en")],
               "zh": [("README.zh.md", "README.md", "zh")]}[edition]
    docs = set()
    for source_name, target_name, language in readmes:
        text = _readme((source / source_name).read_text(encoding="utf-8"), language,
                       lesson.number, edition, options["results"])
        _write(target / target_name, text)
        docs |= set(DOCS_LINK.findall(text))
    # Its test source, any file the tests compile, and a unit of tests/<folder>/ of its own.
    for path in sorted((root / "tests").glob(f"{lesson.number}_*")) + sorted(
            (root / "tests").glob(f"*/{lesson.name}.*")):
        _copy(path, out / path.relative_to(root))
    return docs


def write_handout(root: Path, out: Path, chosen: list[Lesson], options: dict) -> dict:
    """Writes the handout of `chosen` (and the lessons they use) into the empty folder `out`.
    Returns what .course/handout.json says."""
    lessons = with_uses(root, load_catalog(root), chosen)
    parser = _cmake_parser(root)
    uses_of = {lesson.name: lesson_uses(root, lesson, parser) for lesson in lessons}

    for name in ("course", "CMakeLists.txt", "CMakePresets.json", ".gitignore", ".clang-format",
                 "cmake", "common", "tests/support", "tests/common",
                 "tests/CMakeLists.txt", "tests/tools/check_usage_errors.py"):
        if (root / name).exists():
            _copy(root / name, out / name)
    # The command-line tool: the package as it is (its commands that need solutions refuse).
    _copy(root / "tools" / "course_cli", out / "tools" / "course_cli")
    _write_catalog(root, out, lessons)
    docs = set()
    for lesson in lessons:
        docs |= _write_lesson(root, out, lesson, options)
    filtered = [parser.starter_only((lesson.lesson_dir(root) / "CMakeLists.txt")
                                    .read_text(encoding="utf-8"), lesson.name)
                for lesson in lessons]
    for name in _tools_needed(root, filtered):
        _copy(root / "tools" / name, out / "tools" / name)
    # The pictures and pages the READMEs link (the measured ones only with --results keep).
    for link in sorted(docs):
        if (root / link).is_file() and (options["results"] == "keep"
                                        or not link.startswith("docs/results/")):
            _copy(root / link, out / link)
    _write(out / "docs" / "CMakeLists.txt", DOCS_STUB)
    for language in {"both": ["en", "zh"], "en": ["en"], "zh": ["zh"]}[options["edition"]]:
        name = "README.zh.md" if language == "zh" and options["edition"] == "both" else "README.md"
        _write(out / name, _handout_readme(lessons, chosen, uses_of, options, language))

    record = {
        "handout": 1,
        "lessons": [lesson.name for lesson in chosen],
        "included": [lesson.name for lesson in lessons],
        "hints": options["hints"],
        "edition": options["edition"],
        "results": options["results"],
        "course_commit": _git_commit(root),
        "date": datetime.date.today().isoformat(),
    }
    _write(out / HANDOUT_FILE, json.dumps(record, indent=2) + "\n")
    return record


def _check_out(root: Path, out: Path, force: bool) -> None:
    """Refuses an --out that would overwrite something that is not a handout, or that lies in
    the course's repository."""
    resolved = out.resolve()
    if resolved == root or root in resolved.parents or resolved in root.parents:
        raise CourseError(f"--out {out}: a handout goes outside the course's repository "
                          f"({root}), e.g. --out ../handout")
    if resolved.exists() and not resolved.is_dir():
        raise CourseError(f"--out {out} is a file, not a folder")
    if resolved.is_dir() and any(resolved.iterdir()):
        if not force:
            raise CourseError(f"--out {out} is not empty: choose an empty or new folder, or "
                              "--force to replace an earlier handout there")
        if not is_handout(resolved):
            raise CourseError(f"--out {out} is not empty and holds no handout "
                              f"({HANDOUT_FILE} is missing): --force replaces only an earlier "
                              "handout, never other files")


def cmd_handout(root: Path, args) -> int:
    if is_handout(root):
        raise refuse("handout")
    lessons = load_catalog(root)
    chosen = []
    for text in args.lessons:
        lesson = find_ready_lesson(lessons, text)
        if lesson not in chosen:
            chosen.append(lesson)
    out = Path(args.out).expanduser()
    _check_out(root, out, args.force)
    options = {"hints": args.hints, "edition": args.edition, "results": args.results}

    resolved = out.resolve()
    resolved.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{resolved.name}.", dir=resolved.parent))
    try:
        record = write_handout(root, staging, chosen, options)
        included = [lesson for lesson in lessons if lesson.name in record["included"]]
        answers, _ = answer_lines(root, included)
        found = find_answers(staging, answers, skip_hints=options["hints"] == "full")
        if found:
            raise CourseError("the handout would hold the solutions' code; nothing was written:\n  "
                              + "\n  ".join(found[:20]), exit_code=1)
        if resolved.exists():
            shutil.rmtree(resolved)
        staging.rename(resolved)
    finally:
        if staging.exists():
            shutil.rmtree(staging)

    added = [name for name in record["included"] if name not in record["lessons"]]
    print(f"Wrote a handout of lesson(s) {', '.join(l.number for l in chosen)} to {out}"
          f" (hints: {options['hints']}, edition: {options['edition']}, "
          f"measured results: {options['results']}).")
    if added:
        print(f"Also in it, because a chosen lesson links the student's own code of it: "
              f"{', '.join(added)}.")
    print(f"Scanned it for the solutions' code: none found ({len(answers)} answer lines "
          "checked).")
    print(f"Next: cd {out} && ./course list   (then git init, commit, and hand it out)")
    return 0


def add_command(add) -> None:
    """Registers `handout` with build_parser()'s `add`."""
    command = add("handout", cmd_handout,
                  "instructors: write a student repository of some lessons, without the "
                  "solutions (docs/pages/instructors.md)")
    command.add_argument("lessons", nargs="+", metavar="LESSON",
                         help="the lessons to hand out (number or slug); the lessons they "
                              "build on come with them")
    command.add_argument("--out", required=True, metavar="DIR",
                         help="the folder to write (new or empty; outside this repository)")
    command.add_argument("--hints", choices=HINTS, default="no-code",
                         help="no-code: every rung but the last, the code (default); full: "
                              "all of them; off: none")
    command.add_argument("--edition", choices=EDITIONS, default="both",
                         help="the READMEs and starters: both (English starters, both "
                              "READMEs; default), en (English only) or zh (Chinese only: the "
                              "README is the Chinese one, the TODOs in Chinese, the tool "
                              "speaks Chinese)")
    command.add_argument("--results", choices=RESULTS, default="keep",
                         help="the READMEs' measured output and result pictures: keep "
                              "(default) or drop")
    command.add_argument("--force", action="store_true",
                         help="replace an earlier handout in DIR")


if __name__ == "__main__":  # pragma: no cover
    sys.exit("run ./course handout")
