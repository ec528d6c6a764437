#!/usr/bin/env python3
"""The complexity lint: no host function of common/ or the lessons, and no function of the
tools, over 80 lines or a cyclomatic complexity over 20.

Why: students read this code to learn how a measured, checked CUDA program is put together.
A 200-line main() with seven lambdas teaches nothing but scrolling; a function with one job
and a name that says it can be read, changed and tested on its own. The tools that build,
grade and lint the course are held to the same rules. The limits are those of the
"Anatomy v3" issue; lizard (PyPI) measures, as it does for many C++ and Python projects.

What it measures (the course's host code, where the complexity went, and its tools):
  - everything under common/src and common/include;
  - in every lessons/NN_slug/ folder, every .cu, .cuh, .cpp and .h file except the
    student's exercise file NN_slug/slug.cu (generated from solutions/, where the exercise
    is the point);
  - functions only: a device function (__global__, or __device__ without __host__) is left
    out wherever it lives: the lint is about host code;
  - every .py file under tools/, in every folder (tests live in tests/, not measured).

Lines are lizard's function length (first to last line, comments and blank lines
included); the cyclomatic complexity counts a lambda's branches in the function that holds
it (a lambda is part of the function a reader has to hold in mind).

ALLOWED is the allow-list: functions that may stay over the limits, each named with its
file, and only plots (tools/plot_*.py, tools/draw_figures.py: one picture drawn step by
step reads best in one function). The lint prints them every time; it fails on an entry
outside the plots, and on an entry whose function is within the limits now (remove it: the
list only shrinks).

Usage:
  tools/lint_complexity.py              check the course (exit 1 naming every offender)
  tools/lint_complexity.py FILE...      check these files instead
  tools/lint_complexity.py --self-test  show that an over-long or over-complex function
                                        fails, in C++ and in Python, and that a short
                                        function, a kernel and an allowed plot pass
Exit codes: 0 clean, 1 offenders (or a failed self-test), 77 lizard cannot be imported
(ctest reports the test as skipped: .ci/run installs lizard from PyPI).
"""
import argparse
import os
import re
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MAX_LINES = 80
MAX_CCN = 20
SOURCE_SUFFIXES = (".cu", ".cuh", ".cpp", ".h")
SKIP = 77
# The allow-list: (file, function) -> why it may stay over the limits. Plots only.
ALLOWED = {
    ("tools/plot_pinned_memory.py", "plot"):
        "one figure of two panels (bandwidth by size, break-even) drawn in order",
    ("tools/draw_figures.py", "draw_mbarrier_phases"):
        "one concept figure (a barrier's phases over time) drawn in order",
}
PLOTS = re.compile(r"^tools/(plot_[\w]+|draw_figures)\.py$")

try:
    import lizard
except ImportError as error:
    lizard = None
    LIZARD_ERROR = error


def course_files(root):
    """The files the lint measures, relative to `root`, sorted."""
    files = []
    for top in ("common/src", "common/include"):
        for folder, _, names in os.walk(os.path.join(root, top)):
            files += [os.path.join(folder, n) for n in names if n.endswith(SOURCE_SUFFIXES)]
    lessons = os.path.join(root, "lessons")
    for lesson in sorted(os.listdir(lessons)):
        folder = os.path.join(lessons, lesson)
        if not os.path.isdir(folder) or not re.match(r"\d\d_", lesson):
            continue
        exercise = lesson[3:] + ".cu"  # the student's file: lessons/NN_slug/slug.cu
        files += [os.path.join(folder, n) for n in os.listdir(folder)
                  if n.endswith(SOURCE_SUFFIXES) and n != exercise]
        given = os.path.join(folder, "given")
        if os.path.isdir(given):
            files += [os.path.join(given, n) for n in os.listdir(given)
                      if n.endswith(SOURCE_SUFFIXES)]
    return sorted(os.path.relpath(f, root) for f in files)


def tool_files(root):
    """Every .py file under tools/, relative to `root`, sorted."""
    files = []
    for folder, dirs, names in os.walk(os.path.join(root, "tools")):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        files += [os.path.join(folder, n) for n in names if n.endswith(".py")]
    return sorted(os.path.relpath(f, root) for f in files)


def declaration_before(code, line_starts, function):
    """The text from the end of the previous statement or block to the function's name:
    where `__global__`, `__device__` and `__host__` are written."""
    start = line_starts[function.start_line - 1]
    line_end = code.find("\n", start)
    line = code[start:line_end if line_end >= 0 else len(code)]
    short_name = function.name.split("::")[-1]
    found = re.search(r"\b" + re.escape(short_name) + r"\s*\(", line)
    name_at = start + (found.start() if found else 0)
    boundary = max(code.rfind(c, 0, name_at) for c in ";{}")
    return code[boundary + 1:name_at]


def is_device_function(code, line_starts, function):
    words = set(re.findall(r"__\w+__", declaration_before(code, line_starts, function)))
    return "__global__" in words or ("__device__" in words and "__host__" not in words)


def measure(path, display=None):
    """(name, first line, last line, lines, ccn) of every host function in `path` (a C++ or
    CUDA file), or of every function (a Python file)."""
    with open(path, encoding="utf-8") as f:
        code = f.read()
    if path.endswith(".py"):
        result = lizard.analyze_file.analyze_source_code(path, code)
        return [(fn.name, fn.start_line, fn.end_line, fn.length, fn.cyclomatic_complexity)
                for fn in result.function_list]
    # lizard picks its parser by the file name: CUDA is C++ to it.
    result = lizard.analyze_file.analyze_source_code(path + ".cpp", code)
    line_starts = [0] + [m.end() for m in re.finditer("\n", code)]
    rows = []
    for fn in result.function_list:
        if is_device_function(code, line_starts, fn):
            continue
        rows.append((fn.name, fn.start_line, fn.end_line, fn.length, fn.cyclomatic_complexity))
    return rows


def offenders(paths, root):
    """(path, name, first line, last line, lines, ccn) of every function over the limits."""
    found = []
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(root, path)
        for name, first, last, lines, ccn in measure(full):
            if lines > MAX_LINES or ccn > MAX_CCN:
                found.append((path, name, first, last, lines, ccn))
    return found


def split_allowed(found, paths, allowed):
    """(offenders not on the allow-list, those on it, problems of the allow-list itself: an
    entry that is no plot, or one of a checked file whose function is within the limits)."""
    key = lambda row: (row[0].replace(os.sep, "/"), row[1])
    failing = [row for row in found if key(row) not in allowed]
    excused = [row for row in found if key(row) in allowed]
    problems = [f"{path}: {name}: only plots may be on the allow-list"
                for path, name in sorted(allowed) if not PLOTS.match(path)]
    checked = {p.replace(os.sep, "/") for p in paths}
    still_over = {key(row) for row in excused}
    problems += [f"{path}: {name}: within the limits now: remove it from the allow-list"
                 for path, name in sorted(allowed) if path in checked and
                 (path, name) not in still_over]
    return failing, excused, problems


def report(found, checked, excused=(), problems=()):
    for path, name, first, last, lines, ccn in excused:
        print(f"lint_complexity: allowed (a plot, on the allow-list): {path}:{first}-{last}: "
              f"{name}: {lines} lines, CCN {ccn}")
    for problem in problems:
        print(f"lint_complexity: FAIL: allow-list: {problem}")
    if not found:
        if problems:
            return 1
        print(f"lint_complexity: PASS: {checked} files, no function over {MAX_LINES} lines "
              f"or a cyclomatic complexity of {MAX_CCN}"
              + (f" but the {len(excused)} allowed" if excused else ""))
        return 0
    print(f"lint_complexity: FAIL: {len(found)} function(s) over {MAX_LINES} lines or a "
          f"cyclomatic complexity of {MAX_CCN}; split each into named steps:")
    for path, name, first, last, lines, ccn in found:
        why = []
        if lines > MAX_LINES:
            why.append(f"{lines} lines > {MAX_LINES}")
        if ccn > MAX_CCN:
            why.append(f"CCN {ccn} > {MAX_CCN}")
        print(f"  {path}:{first}-{last}: {name}: {lines} lines, CCN {ccn} ({'; '.join(why)})")
    return 1


def check(paths, root, allowed=None):
    """The lint's verdict on `paths` (relative to `root`): its exit code."""
    allowed = ALLOWED if allowed is None else allowed
    failing, excused, problems = split_allowed(offenders(paths, root), paths, allowed)
    return report(failing, len(paths), excused, problems)


SELF_TEST_SOURCE = """\
// A synthetic file: one over-long host function, one over-complex one, a short one, and
// a long kernel (device code is not the lint's business).
#include <cstdio>

int over_long(int x) {
%(long_body)s  return x;
}

int over_complex(int x) {
%(branchy_body)s  return x;
}

int short_and_plain(int x) { return x + 1; }

template <int N>
__global__ void long_kernel(int* out) {
%(long_body)s}

__host__ __device__ int also_on_the_host(int x) {
%(branchy_body)s  return x;
}
"""


SELF_TEST_PYTHON = """\
\"\"\"A synthetic tool: one over-long function, one over-complex one, a short one.\"\"\"


def over_long(x):
%(long_body)s    return x


def over_complex(x):
%(branchy_body)s    return x


def short_and_plain(x):
    return x + 1
"""


def self_test():
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        failures += self_test_cpp(folder)
        failures += self_test_python(folder)
        failures += self_test_allow_list(folder)
    for f in failures:
        print("self-test FAILED:", f)
    if not failures:
        print("lint_complexity --self-test: PASS (over-long and over-complex functions fail, in "
              "C++ and in Python, named with their lines and CCN; a short function, a kernel "
              "and a plot on the allow-list pass; an allow-list entry that is no plot, or no "
              "longer over the limits, fails)")
    return 1 if failures else 0


def self_test_cpp(folder):
    long_body = "".join(f"  x += {i};\n" for i in range(MAX_LINES))
    branchy_body = "".join(f"  if (x == {i}) x += {i};\n" for i in range(MAX_CCN + 1))
    path = os.path.join(folder, "synthetic_main.cu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(SELF_TEST_SOURCE % {"long_body": long_body, "branchy_body": branchy_body})
    found = offenders([path], folder)
    names = {row[1]: row for row in found}
    print("lint_complexity --self-test: the lint's report on a synthetic C++ file:")
    failures = []
    if report(found, 1) != 1:
        failures.append("the lint passed a file with over-long and over-complex functions")
    failures += expect_offenders(names, "C++")
    if "also_on_the_host" not in names:
        failures.append("a __host__ __device__ function was left out (it runs on the host)")
    if "long_kernel" in names:
        failures.append("long_kernel was reported, but a kernel must pass")
    line = [r for r in found if r[1] == "over_long"]
    if line and (line[0][2], line[0][3]) != (5, 5 + MAX_LINES + 2):
        failures.append(f"over_long reported at lines {line[0][2]}-{line[0][3]}, "
                        f"not 5-{5 + MAX_LINES + 2}")
    return failures


def self_test_python(folder):
    tools = os.path.join(folder, "tools", "package")
    os.makedirs(tools)
    with open(os.path.join(tools, "synthetic_tool.py"), "w", encoding="utf-8") as f:
        f.write(SELF_TEST_PYTHON % {
            "long_body": "".join(f"    x += {i}\n" for i in range(MAX_LINES)),
            "branchy_body": "".join(f"    if x == {i}:\n        x += {i}\n"
                                    for i in range(MAX_CCN + 1))})
    paths = tool_files(folder)
    failures = []
    if paths != ["tools/package/synthetic_tool.py"]:
        failures.append(f"the Python files under tools/ (in every folder) were {paths}")
    found = offenders(paths, folder)
    print("lint_complexity --self-test: the lint's report on a synthetic Python tool:")
    if check(paths, folder, allowed={}) != 1:
        failures.append("the lint passed a Python file with over-long and over-complex functions")
    names = {row[1]: row for row in found}
    failures += expect_offenders(names, "Python")
    if "over_long" in names and (names["over_long"][2], names["over_long"][3]) != \
            (4, 4 + MAX_LINES + 1):
        failures.append(f"the Python over_long reported at lines {names['over_long'][2]}-"
                        f"{names['over_long'][3]}, not 4-{4 + MAX_LINES + 1}")
    return failures


def expect_offenders(names, language):
    """What is wrong with the offenders found in a synthetic file ({name: row})."""
    failures = []
    if "over_long" not in names or names["over_long"][4] <= MAX_LINES:
        failures.append(f"{language}: over_long ({MAX_LINES + 2}+ lines) was not reported by "
                        f"its length")
    if "over_complex" not in names or names["over_complex"][5] <= MAX_CCN:
        failures.append(f"{language}: over_complex (CCN {MAX_CCN + 2}) was not reported by its CCN")
    if "short_and_plain" in names:
        failures.append(f"{language}: short_and_plain was reported, but it must pass")
    return failures


def self_test_allow_list(folder):
    """A plot over the limits on the allow-list passes (and is printed); an entry that is
    no plot, or whose function is within the limits, fails."""
    with open(os.path.join(folder, "tools", "plot_demo.py"), "w", encoding="utf-8") as f:
        f.write(SELF_TEST_PYTHON.replace("def over_complex", "def plot") % {
            "long_body": "", "branchy_body": "".join(f"    if x == {i}:\n        x += {i}\n"
                                                     for i in range(MAX_CCN + 1))})
    plot = ["tools/plot_demo.py"]
    failures = []
    print("lint_complexity --self-test: a plot on the allow-list, then an allow-list with an "
          "entry that is no plot and one within the limits:")
    if check(plot, folder, allowed={("tools/plot_demo.py", "plot"): "a figure"}) != 0:
        failures.append("a plot on the allow-list failed the lint")
    stale = {("tools/plot_demo.py", "plot"): "a figure",
             ("tools/plot_demo.py", "short_and_plain"): "within the limits",
             ("tools/package/synthetic_tool.py", "over_long"): "no plot"}
    if split_allowed(offenders(plot, folder), plot, stale)[2] != [
            "tools/package/synthetic_tool.py: over_long: only plots may be on the allow-list",
            "tools/plot_demo.py: short_and_plain: within the limits now: remove it from the "
            "allow-list"] or check(plot, folder, allowed=stale) != 1:
        failures.append("an allow-list entry that is no plot, or within the limits, passed")
    return failures


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*",
                        help="files to check (default: the course's host code and its tools)")
    parser.add_argument("--root", default=ROOT, help="the course's root folder")
    parser.add_argument("--self-test", action="store_true", help="check the lint itself")
    args = parser.parse_args()
    if lizard is None:
        print(f"lint_complexity: SKIP: cannot import lizard ({LIZARD_ERROR}); "
              f"install it with: python3 -m pip install lizard")
        return SKIP
    if args.self_test:
        return self_test()
    paths = args.files or course_files(args.root) + tool_files(args.root)
    return check(paths, args.root)


if __name__ == "__main__":
    sys.exit(main())
