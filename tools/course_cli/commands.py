"""The `course` commands. Each handler takes the repository root and the parsed
arguments and returns the exit code."""

import argparse
import difflib
import json
import re
import sys
import textwrap
import unicodedata
from pathlib import Path

from . import build, exercise, grade, handout, starter
from .build import PROBE_NAME, SKIP_EXIT_CODE, BuildTree, shown
from .catalog import (CATALOG_INC_PATH, Lesson, find_ready_lesson, load_catalog, next_lesson,
                      sanitize_arguments)
from .errors import CourseError
from .i18n import ARCHITECTURE_LEGEND, doc, tr
from . import i18n
from .junit import read_junit
from .starter import solution_without_markers, starter_pairs, strip_generated_header
from .tour import LessonRun, lesson_run, summary_table, tour_succeeded

STUDENT_PRESET = "student"


# ----------------------------------------------------------------------------- list


def gpu_column(probe: build.ProbeResult, lesson: Lesson) -> str:
    """yes / no / no GPU / ? : can this machine run the lesson?"""
    if probe.status == "gpu":
        if probe.gpu_count < lesson.min_gpus:
            return tr("no")
        return tr("yes") if probe.compute_capability >= lesson.min_cc_tuple else tr("no")
    if probe.status == "no-gpu":
        return tr("no GPU")
    return "?"


def architecture_column(lesson: Lesson) -> str:
    """sm_80+ / sm_90+: the oldest GPU architecture the lesson runs on (its min_cc)."""
    major, minor = lesson.min_cc_tuple
    return f"sm_{major}{minor}+"


def display_width(text: str) -> int:
    """Columns `text` takes in a terminal: a CJK character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def pad(text: str, width: int, right: bool = False) -> str:
    """`text` padded with spaces to `width` terminal columns."""
    fill = " " * max(0, width - display_width(text))
    return fill + text if right else text + fill


def last_check_column(root: Path, lesson: Lesson) -> str:
    """pass / fail / skipped / — from build/student/results/LNN.xml."""
    summary = read_junit(results_file(root, lesson))
    if summary is None or summary.verdict == "no tests":
        return "—"
    shown_verdict = {"pass": tr("pass"), "fail": tr("fail"), "skipped": tr("skipped")}
    return shown_verdict.get(summary.verdict, summary.verdict)


def not_built_reason(root: Path, lesson: Lesson) -> str:
    """Why the configure step left a lesson out (build/<preset>/not_built/NN_slug.txt), or ""."""
    for preset in (STUDENT_PRESET, "default"):
        tree = BuildTree(root, preset)
        if tree.is_configured():
            note = tree.binary_dir / "not_built" / f"{lesson.name}.txt"
            return note.read_text().strip() if note.exists() else ""
    return ""


def find_probe(root: Path) -> build.ProbeResult:
    """Run the GPU probe of the student build (or of the default build)."""
    for preset in (STUDENT_PRESET, "default"):
        probe = BuildTree(root, preset).executable(PROBE_NAME)
        if probe.exists():
            return build.run_probe(probe)
    return build.ProbeResult("not-built", None, "the GPU probe is not built yet")


def cmd_list(root: Path, args: argparse.Namespace) -> int:
    lessons = load_catalog(root)
    probe = find_probe(root)
    if probe.status == "gpu":
        print(tr("GPU: {message}", message=probe.message))
    elif probe.status == "no-gpu":
        print(tr("GPU: none ({message})", message=probe.message))
    elif probe.status == "not-built":
        print(tr("GPU: unknown, the probe is not built yet (cmake --preset student && "
                 "cmake --build --preset student --target course_gpu_probe)"))
    else:
        print(tr("GPU: unknown ({message})", message=probe.message))
    print()
    titles = [i18n.title(lesson) for lesson in lessons]
    title_width = max(display_width(title) for title in titles + [tr("title")])
    print(
        f"{'#':<2}  {pad(tr('title'), title_width)}  {pad(tr('min'), 3, right=True)}  "
        f"{pad(tr('needs'), 6)}  {'GPU':<6}  {pad(tr('status'), 7)}  {tr('last check')}"
    )
    for lesson, title in zip(lessons, titles):
        status = tr("ready") if lesson.ready else tr("planned")
        needs = tr("  (needs {count} GPUs)", count=lesson.min_gpus) if lesson.min_gpus > 1 else ""
        if reason := not_built_reason(root, lesson):
            needs += tr("  (not built: {reason})", reason=reason)
        print(
            f"{lesson.number:<2}  {pad(title, title_width)}  {lesson.minutes:>3}  "
            f"{architecture_column(lesson):<6}  {pad(gpu_column(probe, lesson), 6)}  "
            f"{pad(status, 7)}  {last_check_column(root, lesson)}{needs}"
        )
    print()
    print(tr(ARCHITECTURE_LEGEND))
    print(tr("Start a lesson: read {readme}, then `./course run NN` and `./course check NN`.",
             readme=doc("lessons/NN_slug/README.md")))
    return 0


# ------------------------------------------------------------------------------ run


def cmd_run(root: Path, args: argparse.Namespace) -> int:
    if args.solution and handout.is_handout(root):
        raise handout.refuse("run --solution")
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    target = lesson.name + ("_solution" if args.solution else "")
    tree = BuildTree(root, STUDENT_PRESET)
    tree.configure_if_needed()
    tree.build(target)
    return build.run_command([shown(tree.executable(target), root)] + args.extra, root)


# ---------------------------------------------------------------------------- check


def results_file(root: Path, lesson: Lesson) -> Path:
    return BuildTree(root, STUDENT_PRESET).results_dir / f"L{lesson.number}.xml"


def next_steps_after_pass(lessons: list[Lesson], lesson: Lesson,
                          in_handout: bool = False) -> list[str]:
    following = next_lesson(lessons, lesson)
    steps = [] if in_handout else [  # a handout has neither the solution nor its notes
        tr("compare your code with the solution: ./course diff {number}", number=lesson.number),
        tr("read {notes}", notes=doc(f"solutions/{lesson.name}/NOTES.md")),
    ]
    if following is None:
        steps.append(tr("that was the last lesson: well done"))
    elif following.ready:
        steps.append(tr("next lesson: {number} {title} ({readme}, ./course run {number})",
                        number=following.number, title=i18n.title(following),
                        readme=doc(f"lessons/{following.name}/README.md")))
    else:
        steps.append(tr("next lesson: {number} {title} (planned, not built yet)",
                        number=following.number, title=i18n.title(following)))
    return steps


def ctest_command(root: Path, tree: BuildTree, lesson: Lesson, junit: Path) -> list[str]:
    """Run the lesson's tests against the starter, writing JUnit results to `junit`."""
    return [
        "ctest",
        "--test-dir", shown(tree.binary_dir, root),
        "-R", rf"^L{lesson.number}\.lesson\.",
        "--output-on-failure",
        "--output-junit", str(junit.resolve()),  # a relative path would be taken from --test-dir
        "--timeout", "120",
    ]


def cmd_check(root: Path, args: argparse.Namespace) -> int:
    lessons = load_catalog(root)
    lesson = find_ready_lesson(lessons, args.lesson)
    tree = BuildTree(root, STUDENT_PRESET)
    junit = results_file(root, lesson)
    junit.unlink(missing_ok=True)  # `list` must not show the result of an older check

    tree.configure_if_needed()
    tree.build(
        f"{lesson.name}_test",
        advice=tr("fix the first compiler error above (in {file}?)",
                  file=f"lessons/{lesson.name}/{lesson.slug}.cu"),
    )
    junit.parent.mkdir(parents=True, exist_ok=True)
    ctest_exit = build.run_command(ctest_command(root, tree, lesson, junit), root)

    summary = read_junit(junit)
    print()
    if summary is None:
        print(tr("ctest wrote no readable results to {junit} (exit code {code}).",
                 junit=shown(junit, root), code=ctest_exit))
        return 1
    if summary.verdict == "no tests":
        print(tr("ctest found no tests named L{number}.lesson.*: was {target} built?",
                 number=lesson.number, target=f"{lesson.name}_test"))
        return 1

    counts = tr("{passed} passed, {failed} failed, {skipped} skipped",
                passed=len(summary.passed), failed=len(summary.failed),
                skipped=len(summary.skipped))
    if summary.verdict == "fail" or ctest_exit != 0:
        print(tr("Lesson {number} is not done yet: {counts}.", number=lesson.number, counts=counts))
        exercise_file = f"lessons/{lesson.name}/{lesson.slug}.cu"
        if summary.failed:
            print(tr("Failed tests:"))
            for name in summary.failed:
                todos = summary.todos_of_failed.get(name)
                concerns = (tr("   (most likely TODO {todos})", todos=", ".join(map(str, todos)))
                            if todos else "")
                print(f"  {name}{concerns}")
            named = sorted({t for todos in summary.todos_of_failed.values() for t in todos})
            if named:
                print(tr("Look first at TODO {todos} of {file}.",
                         todos=", ".join(map(str, named)), file=exercise_file))
        else:
            print(tr("ctest exited with {code}; see its output above.", code=ctest_exit))
        explain_skips(summary.skip_reasons)
        if summary.skipped_for_gpu:
            print(tr("Not verified on this machine ({count} tests need a GPU, and so do the race "
                     "checks): {todos}.", count=len(summary.skipped_for_gpu),
                     todos=unverified_todos(root, lesson)))
        print(tr("Next:"))
        print(tr("  read {readme}", readme=doc(f"lessons/{lesson.name}/README.md")))
        print(tr("  the TODOs in {file}", file=exercise_file))
        if hint_step := next_hint_command(root, lesson, summary):
            print("  " + hint_step)
        return 1
    if summary.verdict == "skipped":
        print(tr("Lesson {number} is NOT verified: {counts}.", number=lesson.number, counts=counts))
        print(tr("{count} tests skipped because no usable CUDA GPU was found",
                 count=len(summary.skipped_for_gpu)))
        print(tr("(no device, or one below compute capability {min_cc}), and the race",
                 min_cc=lesson.min_cc))
        print(tr("and synchronisation checks need one too. Unverified on this machine: {todos}.",
                 todos=unverified_todos(root, lesson)))
        print(tr("Run `./course check {number}` on a machine with a GPU to verify your work.",
                 number=lesson.number))
        return SKIP_EXIT_CODE
    explain_skips(summary.skip_reasons)
    race_exit = race_checks(root, tree, lesson)
    if race_exit != 0:
        return race_exit
    print(tr("Lesson {number} passes: {counts}; racecheck, synccheck and memcheck are clean.",
             number=lesson.number, counts=counts))
    print(tr("Next:"))
    for step in next_steps_after_pass(lessons, lesson, handout.is_handout(root)):
        print(f"  {step}")
    return 0


def next_hint_command(root: Path, lesson: Lesson, summary) -> str:
    """After a failed check: the command for the next rung of the first TODO the failures
    name (or of the first unfinished one), or the lesson's hint command; "" without hints."""
    ladders = exercise.load_ladders(root, lesson)
    if ladders and not any(ladder.hints for ladder in ladders.values()):
        return ""  # a handout without hints (./course handout --hints off)
    if ladders:
        named = sorted({t for todos in summary.todos_of_failed.values() for t in todos} & set(ladders))
        pending = named or [t for t in todos_to_work_on(root, lesson) if t in ladders]
        if pending:
            return tr("{command}   (the next hint for TODO {todo})",
                      command=hint_command(lesson, pending[0]), todo=pending[0])
    return f"./course hint {lesson.number}"


# The pip packages that bring cuobjdump and nvdisasm (the CUDA toolkit's own installer has
# them too); .ci/run installs them the same way.
CUOBJDUMP_HOWTO = (
    'python3 -m pip install --target ~/.cache/course-tools "nvidia-cuda-cuobjdump>=13,<14" '
    '"nvidia-cuda-nvdisasm>=13,<14"\n'
    "    export PATH=~/.cache/course-tools/nvidia/cu13/bin:$PATH\n"
    "    cmake --preset student   # finds cuobjdump for the SASS checks"
)


def explain_skips(skip_reasons: dict[str, str]) -> None:
    """Says why each test that did not run was skipped (other than for want of a GPU), and
    how to get what it needs: a skipped check is a check that verified nothing."""
    if not skip_reasons:
        return
    print(tr("Skipped, so not verified ({count}):", count=len(skip_reasons)))
    for name, reason in skip_reasons.items():
        print(f"  {name}: {i18n.skip_reason(reason) if reason else tr('no reason printed')}")
    if any("cuobjdump" in reason for reason in skip_reasons.values()):
        print(tr("  The SASS checks (and the README's recipes) need cuobjdump:"))
        print("    " + CUOBJDUMP_HOWTO)


def unverified_todos(root: Path, lesson: Lesson) -> str:
    """"TODO 1, 2, 3 of lessons/NN_slug/slug.cu": the TODOs of the student's files."""
    parts = []
    for _, mine in starter_pairs(root, lesson):
        try:
            numbers = re.findall(r"//\s*TODO (\d+)", mine.read_text(encoding="utf-8"))
        except OSError:
            continue
        unique = sorted(set(numbers), key=int)
        if unique:
            parts.append(tr("TODO {todos} of {file}", todos=", ".join(unique),
                            file=shown(mine, root)))
    return "; ".join(parts) or tr("every TODO of lessons/{name}", name=lesson.name)


# The sanitizer tools the student's check runs on the student's own program, in this order:
# races and barrier misuse first (the tests' values can pass by luck when a wait is missing).
RACE_CHECK_TOOLS = ("racecheck", "synccheck", "memcheck")


def race_checks(root: Path, tree: BuildTree, lesson: Lesson) -> int:
    """Runs the student's lesson program (--quick) under each of RACE_CHECK_TOOLS through
    tools/sanitize.py, a racecheck warning counting as a failure. 0 when all are clean,
    1 at the first report, 77 when compute-sanitizer is not installed (not verified)."""
    sanitizer = tree.cache_value("COURSE_COMPUTE_SANITIZER")
    if not sanitizer:
        print(tr("Lesson {number}: the tests pass, but compute-sanitizer was not found, so",
                 number=lesson.number))
        print(tr("races and barrier misuse are NOT verified: {todos}.",
                 todos=unverified_todos(root, lesson)))
        return SKIP_EXIT_CODE
    tree.build(lesson.name, advice=tr("fix the first compiler error above"))
    program = [shown(tree.executable(lesson.name), root), "--quick", "--warmup", "0", "--iters", "1"]
    for tool in RACE_CHECK_TOOLS:
        command = [sys.executable, str(root / "tools" / "sanitize.py"), "--sanitizer", sanitizer,
                   "--tool", tool, "--warnings-fail", *sanitize_arguments(lesson)]
        cuobjdump = tree.cache_value("COURSE_CUOBJDUMP")
        if cuobjdump:
            command += ["--cuobjdump", cuobjdump]
        print(tr("\n--- {tool}: your program under compute-sanitizer", tool=tool))
        exit_code, _ = build.run_streaming(command + ["--", *program], root)
        if exit_code == SKIP_EXIT_CODE:
            print(tr("{tool} could not run the program here (no suitable GPU).", tool=tool))
            return SKIP_EXIT_CODE
        if exit_code != 0:
            print(tr("\nLesson {number} is not done yet: the tests pass, but {tool} found a "
                     "problem in your program (the first report is above).",
                     number=lesson.number, tool=tool))
            print(tr("A value test can pass by luck when a wait or a barrier is missing; this check"))
            print(tr("cannot. Look at the waits, barriers and releases of {file}.",
                     file=f"lessons/{lesson.name}/{lesson.slug}.cu"))
            return 1
    return 0


# ----------------------------------------------------------------------------- hint


def ladder_seen_file(root: Path, lesson: Lesson) -> Path:
    """Where `hint` remembers, per TODO, how many rungs of its ladder this checkout has shown."""
    return BuildTree(root, STUDENT_PRESET).binary_dir / "hints" / f"L{lesson.number}.json"


def read_seen(path: Path) -> dict[str, int]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    return {str(k): int(v) for k, v in data.items() if isinstance(v, int)} if isinstance(data, dict) else {}


def hint_command(lesson: Lesson, todo: int) -> str:
    """The command that shows the next rung of `todo`, in the language the user chose
    (with --lang zh when that is how Chinese was chosen)."""
    command = f"./course hint {lesson.number} --todo {todo}"
    return command + (" --lang zh" if i18n.language() == "zh" and i18n.chosen_by_flag() else "")


def todos_to_work_on(root: Path, lesson: Lesson) -> list[int]:
    """The TODOs to work on, in order: those of the student's files still the starter's
    (a fresh starter's, in either language) first, then those the last check's failures name."""
    unfinished = set()
    for solution, mine in starter_pairs(root, lesson):
        current = starter.read_or_none(mine)
        fresh = starter.expected_starter(root, solution)
        unfinished.update(exercise.unfinished_todos(fresh, current if current is not None else ""))
    failing = set()
    summary = read_junit(results_file(root, lesson))
    if summary is not None:
        failing.update(t for found in summary.todos_of_failed.values() for t in found)
    return sorted(unfinished) + sorted(failing - unfinished)


def show_hint(text: str, is_code: bool) -> None:
    # Chinese has no spaces to break at, and code keeps its lines: neither is wrapped.
    if is_code or i18n.language() != "en":
        print(text)
    else:
        print("\n".join(textwrap.fill(part, width=88) for part in text.split("\n")))


def cmd_hint(root: Path, args: argparse.Namespace) -> int:
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    ladders = exercise.load_ladders(root, lesson)
    if ladders is None:
        print(tr("Lesson {number} has no hints. Its README's pitfalls section may help.",
                 number=lesson.number))
        return 0
    if not any(ladder.hints for ladder in ladders.values()):  # ./course handout --hints off
        print(tr("This handout has no hints (your instructor's choice): {readme} teaches what "
                 "each TODO needs.", readme=doc(f"lessons/{lesson.name}/README.md")))
        return 0
    if args.todo is None:
        pending = [t for t in todos_to_work_on(root, lesson) if t in ladders]
        if not pending:
            print(tr("Every TODO of lesson {number} is written and no failure of your last check "
                     "names one. Run ./course check {number}, or ask for a TODO's hints: "
                     "./course hint {number} --todo K (K: {todos}).", number=lesson.number,
                     todos=", ".join(map(str, sorted(ladders)))))
            return 0
        todo = pending[0]
    elif args.todo not in ladders:
        raise CourseError(tr("lesson {number} has TODOs {todos}: ask for one of them",
                             number=lesson.number, todos=", ".join(map(str, sorted(ladders)))),
                          exit_code=2)
    else:
        todo = args.todo
    rungs = ladders[todo].hints_zh if i18n.language() == "zh" else ladders[todo].hints
    seen_file = ladder_seen_file(root, lesson)
    seen_all = read_seen(seen_file)
    seen = max(0, min(len(rungs), seen_all.get(str(todo), 0)))
    if args.k is None:
        k = min(seen + 1, len(rungs))  # one rung at a time: only the last one is code
    elif not 1 <= args.k <= len(rungs):
        raise CourseError(tr("TODO {todo} of lesson {number} has {count} hints: ask for one of "
                             "1 to {count}", todo=todo, number=lesson.number, count=len(rungs)),
                          exit_code=2)
    else:
        k = args.k
    print(tr("Hint {k} of {count} for TODO {todo} of lesson {number} ({title}):", k=k,
             count=len(rungs), todo=todo, number=lesson.number, title=i18n.title(lesson)))
    ends_in_code = ladders[todo].ends_in_code
    show_hint(rungs[k - 1], is_code=k == len(rungs) and ends_in_code)
    if k > seen:
        seen_all[str(todo)] = k
        seen_file.parent.mkdir(parents=True, exist_ok=True)
        seen_file.write_text(json.dumps(seen_all, sort_keys=True) + "\n", encoding="utf-8")
    if k < len(rungs):
        print(tr("(Stuck after trying it? `{command}` shows the next one.)",
                 command=hint_command(lesson, todo)))
    elif ends_in_code:
        print(tr("(That was the last hint of TODO {todo}: its code.)", todo=todo))
    else:
        print(tr("(That was the last hint of TODO {todo} in this handout.)", todo=todo))
    return 0


# ----------------------------------------------------------------------------- diff


def unified_diff(old: str, new: str, old_label: str, new_label: str) -> str:
    lines = difflib.unified_diff(
        old.splitlines(keepends=True), new.splitlines(keepends=True), old_label, new_label
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def cmd_diff(root: Path, args: argparse.Namespace) -> int:
    """Your file against the solution as a student would write it: the solution without its
    BEGIN/END SOLUTION and STARTER lines, your file without the generated header line."""
    if handout.is_handout(root):
        raise handout.refuse("diff")
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    compared = 0
    for solution, mine in starter_pairs(root, lesson):
        if not mine.is_file():
            print(f"{shown(mine, root)} is missing (./course reset {lesson.number} restores it).")
            continue
        compared += 1
        text = unified_diff(
            strip_generated_header(mine.read_text(encoding="utf-8")),
            solution_without_markers(solution.read_text(encoding="utf-8")),
            shown(mine, root),
            shown(solution, root),
        )
        print(text if text else f"{shown(mine, root)} is the same as the solution.")
    if compared == 0:
        print(f"No file of lessons/{lesson.name}/ has a counterpart in solutions/{lesson.name}/.")
    return 0


# ---------------------------------------------------------------------------- reset


def backup(path: Path, text: str) -> Path:
    """Save `text` as <path>.bak and return that path."""
    saved = path.with_name(path.name + ".bak")
    saved.write_text(text, encoding="utf-8")
    return saved


def cmd_reset(root: Path, args: argparse.Namespace) -> int:
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    for solution, starter_file in starter.starter_pairs(root, lesson):
        # In Chinese (--lang zh, COURSE_LANG=zh, a zh_* locale) the TODO contracts are Chinese.
        fresh = starter.expected_starter(root, solution, i18n.language())
        current = starter.read_or_none(starter_file)
        if current == fresh:
            print(f"{shown(starter_file, root)} is already the untouched starter.")
            continue
        if current is not None:
            saved = backup(starter_file, current)
            print(f"Saved your version of {shown(starter_file, root)} as {shown(saved, root)}.")
        starter_file.write_text(fresh, encoding="utf-8")
        print(f"Wrote a fresh {shown(starter_file, root)} from {shown(solution, root)}.")
    return 0


# ----------------------------------------------------------------------------- sync


def cmd_sync(root: Path, args: argparse.Namespace) -> int:
    if handout.is_handout(root):
        raise handout.refuse("sync")
    lessons = load_catalog(root)
    expected = starter.expected_files(root, lessons)  # raises on a malformed region
    problems = starter.exercise_problems(root, lessons)
    for problem in problems:
        print(problem)
    if problems:
        print(f"{len(problems)} problem(s) in the hint ladders (lessons/NN_slug/given/hints.json).")
        return 1
    for lesson in lessons:  # every Chinese starter can be made (reset --lang zh)
        if lesson.ready:
            for solution, _ in starter_pairs(root, lesson):
                starter.expected_starter(root, solution, "zh")
    stale = []
    for path, text in expected.items():
        current = starter.read_or_none(path)
        if current != text:
            stale.append((path, current, text))

    if args.check:
        for path, current, text in stale:
            label = shown(path, root)
            old_label = f"{label} (on disk)" if current is not None else f"{label} (missing)"
            print(unified_diff(current or "", text, old_label, f"{label} (generated)"), end="")
        if stale:
            print(f"{len(stale)} generated file(s) differ from what `./course sync` makes now:")
            for path, _, _ in stale:
                print(f"  {shown(path, root)}")
            print("Run ./course sync (and commit the result).")
            return 1
        print(f"All {len(expected)} generated files are up to date.")
        return 0

    for path, current, text in stale:
        is_starter = path != root / CATALOG_INC_PATH
        if is_starter and current is not None:
            saved = backup(path, current)  # never lose a student's work to a sync
            print(f"Saved the previous {shown(path, root)} as {shown(saved, root)}.")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        print(f"Wrote {shown(path, root)}.")
    print(f"{len(stale)} of {len(expected)} generated files changed.")
    return 0


# ----------------------------------------------------------------------------- tour


NO_GPU_MESSAGE = (
    "No CUDA GPU was found: {reason}. The tour runs the lessons' reference solutions on "
    "a GPU; on this machine you can still run the tests: cmake --workflow --preset default"
)


def configure_presets(root: Path) -> list[str]:
    """The configure presets of CMakePresets.json that a user may name (not the hidden ones)."""
    try:
        data = json.loads((root / "CMakePresets.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return []
    return [p["name"] for p in data.get("configurePresets", []) if not p.get("hidden")]


def cmd_tour(root: Path, args: argparse.Namespace) -> int:
    if handout.is_handout(root):
        raise handout.refuse("tour")
    lessons = load_catalog(root)
    presets = configure_presets(root)
    if args.preset not in presets:
        # Checked before anything runs: an empty or unknown preset would make CMake
        # configure somewhere unexpected (an empty one: inside the source tree).
        raise CourseError(
            f"unknown preset {args.preset!r}; the presets are: {', '.join(presets)}", exit_code=2
        )
    tree = BuildTree(root, args.preset)
    tree.configure_if_needed()
    tree.build(PROBE_NAME)
    probe_exit, probe_lines = build.run_streaming([shown(tree.executable(PROBE_NAME), root)], root)
    probe = build.parse_probe_output(probe_exit, "\n".join(probe_lines))
    if probe.status == "no-gpu":
        reason = " ".join(probe.message.split())
        print(NO_GPU_MESSAGE.format(reason=reason))
        return SKIP_EXIT_CODE
    if probe.status != "gpu":
        raise CourseError(f"{PROBE_NAME} failed: {probe.message}", exit_code=1)

    # Only the programs the tour runs: the tests and the starters are built by `check`.
    ready = [lesson for lesson in lessons if lesson.ready]
    tree.build([f"{lesson.name}_solution" for lesson in ready])
    csv_dir = Path(args.csv_dir).resolve() if args.csv_dir else None
    if csv_dir:
        csv_dir.mkdir(parents=True, exist_ok=True)

    runs = []
    for lesson in ready:
        print(f"\n=== Lesson {lesson.number}: {lesson.title} ===", flush=True)
        if probe.compute_capability < lesson.min_cc_tuple:
            major, minor = probe.compute_capability
            reason = f"needs compute capability {lesson.min_cc}; this GPU has {major}.{minor}"
            print(reason)
            runs.append(LessonRun(lesson.number, lesson.title, "SKIP(77)", reason))
            continue
        if probe.gpu_count < lesson.min_gpus:
            reason = f"needs {lesson.min_gpus} GPUs; this machine has {probe.gpu_count}"
            print(reason)
            runs.append(LessonRun(lesson.number, lesson.title, "SKIP(77)", reason))
            continue
        executable = tree.executable(f"{lesson.name}_solution")
        if not executable.exists():
            runs.append(LessonRun(lesson.number, lesson.title, "ERROR", f"{shown(executable, root)} was not built"))
            continue
        # Quick sizes unless --full: the tour shows that every lesson runs and verifies
        # itself; `./course run NN` (or --full) gives the measured figures.
        command = [shown(executable, root)] + ([] if args.full else ["--quick"]) + args.extra
        if csv_dir:
            command += ["--csv", str(csv_dir / f"{lesson.name}.csv")]
        exit_code, lines = build.run_streaming(command, root)
        runs.append(lesson_run(lesson.number, lesson.title, exit_code, lines))

    print(f"\nTour summary ({probe.message})")
    print(summary_table(runs))
    return 0 if tour_succeeded(runs) else 1


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="course",
        description=tr("Work through the CUDA asynchronous data movement course."),
        epilog=tr(
            "A lesson is named by its number or slug: 1, 01, 01_register_staged or "
            "register_staged. Arguments after `--` go to the program that `run` or "
            "`tour` starts. Typical loop: ./course list; ./course run 01; ./course check 01; "
            "./course hint 01; ./course diff 01. Passing flags to a lesson program: "
            "./course run 03 -- --quick; ./course run 06 --solution -- --stages 6 --csv out.csv."
        ),
    )
    language_help = tr("the language of the messages, lesson titles and hints: en (the default) "
                       "or zh (Chinese); also COURSE_LANG=zh or a zh_* locale")
    parser.add_argument("--lang", choices=("en", "zh"), help=language_help)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    def add(name, handler, help_text, accepts_extra=False):
        command = commands.add_parser(name, help=help_text, description=help_text)
        command.set_defaults(handler=handler, accepts_extra=accepts_extra)
        # Also after the command (`./course hint 03 --lang zh`); SUPPRESS keeps the value
        # given before the command when this one is not given.
        command.add_argument("--lang", choices=("en", "zh"), default=argparse.SUPPRESS,
                             help=language_help)
        return command

    add("list", cmd_list,
        tr("list the lessons, whether this GPU can run them, and your last check"))

    run = add("run", cmd_run,
              tr("build and run a lesson's program (your starter, or --solution)"), True)
    run.add_argument("lesson", help=tr("lesson number or slug"))
    run.add_argument("--solution", action="store_true",
                     help=tr("run the reference solution instead"))

    check = add("check", cmd_check, tr("build and run a lesson's tests against your code"))
    check.add_argument("lesson", help=tr("lesson number or slug"))

    hint = add("hint", cmd_hint, tr("show the next hint for the first TODO you have not finished "
                                    "(or that your last check failed), one rung at a time; or for "
                                    "TODO K"))
    hint.add_argument("lesson", help=tr("lesson number or slug"))
    hint.add_argument("k", nargs="?", type=int, help=tr("which rung of the ladder (1, 2, ...)"))
    hint.add_argument("--todo", type=int, metavar="K", help=tr("the TODO whose hints to show"))

    diff = add("diff", cmd_diff, tr("show how your lesson files differ from the solution"))
    diff.add_argument("lesson", help=tr("lesson number or slug"))

    reset = add("reset", cmd_reset, tr("restore a lesson's starter files (yours are kept as .bak)"))
    reset.add_argument("lesson", help=tr("lesson number or slug"))

    sync = add(
        "sync",
        cmd_sync,
        "maintainers: regenerate the starters from solutions/ and "
        "common/src/lesson_catalog.inc from lessons/catalog.json",
    )
    sync.add_argument(
        "--check", action="store_true", help="write nothing; exit 1 if a generated file is stale"
    )

    tour = add("tour", cmd_tour, tr("build everything and run every ready lesson's solution"), True)
    tour.add_argument("--preset", default="default", help="CMake configure preset (default: default)")
    tour.add_argument("--csv-dir", metavar="DIR", help="write each lesson's table to DIR/NN_slug.csv")
    tour.add_argument(
        "--full",
        action="store_true",
        help="run every lesson at its full size (default: --quick sizes, a minute or two in all)",
    )

    handout.add_command(add)
    grade.add_commands(add)  # instructors: `grade` and `autograder` (grade.py, bundles.py)
    return parser
