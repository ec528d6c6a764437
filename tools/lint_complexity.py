#!/usr/bin/env python3
"""The complexity lint: no host function of common/ or the lessons over 80 lines or a
cyclomatic complexity over 20.

Why: students read this code to learn how a measured, checked CUDA program is put together.
A 200-line main() with seven lambdas teaches nothing but scrolling; a function with one job
and a name that says it can be read, changed and tested on its own. The limits are those of
the "Anatomy v3" issue; lizard (PyPI) measures, as it does for many C++ projects.

What it measures (the course's host code, where the complexity went):
  - everything under common/src and common/include;
  - in every lessons/NN_slug/ folder, every .cu, .cuh, .cpp and .h file except the
    student's exercise file NN_slug/slug.cu (generated from solutions/, where the exercise
    is the point);
  - functions only: a device function (__global__, or __device__ without __host__) is left
    out wherever it lives: the lint is about host code.

Lines are lizard's function length (first to last line, comments and blank lines
included); the cyclomatic complexity counts a lambda's branches in the function that holds
it (a lambda is part of the function a reader has to hold in mind).

Usage:
  tools/lint_complexity.py              check the course (exit 1 naming every offender)
  tools/lint_complexity.py FILE...      check these files instead
  tools/lint_complexity.py --self-test  show that an over-long or over-complex function
                                        fails and that a short one and a kernel pass
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
    """(name, first line, last line, lines, ccn) of every host function in `path`."""
    with open(path, encoding="utf-8") as f:
        code = f.read()
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
    found = []
    for path in paths:
        full = path if os.path.isabs(path) else os.path.join(root, path)
        for name, first, last, lines, ccn in measure(full):
            if lines > MAX_LINES or ccn > MAX_CCN:
                found.append((path, name, first, last, lines, ccn))
    return found


def report(found, checked):
    if not found:
        print(f"lint_complexity: PASS: {checked} files, no host function over {MAX_LINES} lines "
              f"or a cyclomatic complexity of {MAX_CCN}")
        return 0
    print(f"lint_complexity: FAIL: {len(found)} host function(s) over {MAX_LINES} lines or a "
          f"cyclomatic complexity of {MAX_CCN}; split each into named steps:")
    for path, name, first, last, lines, ccn in found:
        why = []
        if lines > MAX_LINES:
            why.append(f"{lines} lines > {MAX_LINES}")
        if ccn > MAX_CCN:
            why.append(f"CCN {ccn} > {MAX_CCN}")
        print(f"  {path}:{first}-{last}: {name}: {lines} lines, CCN {ccn} ({'; '.join(why)})")
    return 1


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


def self_test():
    long_body = "".join(f"  x += {i};\n" for i in range(MAX_LINES))
    branchy_body = "".join(f"  if (x == {i}) x += {i};\n" for i in range(MAX_CCN + 1))
    failures = []
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "synthetic_main.cu")
        with open(path, "w", encoding="utf-8") as f:
            f.write(SELF_TEST_SOURCE % {"long_body": long_body, "branchy_body": branchy_body})
        found = offenders([path], folder)
        names = {row[1]: row for row in found}
        print("lint_complexity --self-test: the lint's report on a synthetic file:")
        code = report(found, 1)
        if code != 1:
            failures.append("the lint passed a file with over-long and over-complex functions")
        if "over_long" not in names or names["over_long"][4] <= MAX_LINES:
            failures.append(f"over_long ({MAX_LINES + 2}+ lines) was not reported by its length")
        if "over_complex" not in names or names["over_complex"][5] <= MAX_CCN:
            failures.append(f"over_complex (CCN {MAX_CCN + 2}) was not reported by its CCN")
        if "also_on_the_host" not in names:
            failures.append("a __host__ __device__ function was left out (it runs on the host)")
        for clean in ("short_and_plain", "long_kernel"):
            if clean in names:
                failures.append(f"{clean} was reported, but it must pass")
        line = [r for r in found if r[1] == "over_long"]
        if line and (line[0][2], line[0][3]) != (5, 5 + MAX_LINES + 2):
            failures.append(f"over_long reported at lines {line[0][2]}-{line[0][3]}, "
                            f"not 5-{5 + MAX_LINES + 2}")
    for f in failures:
        print("self-test FAILED:", f)
    if not failures:
        print("lint_complexity --self-test: PASS (over-long and over-complex host functions fail, "
              "named with their lines and CCN; a short function and a kernel pass)")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("files", nargs="*", help="files to check (default: the course's host code)")
    parser.add_argument("--root", default=ROOT, help="the course's root folder")
    parser.add_argument("--self-test", action="store_true", help="check the lint itself")
    args = parser.parse_args()
    if lizard is None:
        print(f"lint_complexity: SKIP: cannot import lizard ({LIZARD_ERROR}); "
              f"install it with: python3 -m pip install lizard")
        return SKIP
    if args.self_test:
        return self_test()
    paths = args.files or course_files(args.root)
    return report(offenders(paths, args.root), len(paths))


if __name__ == "__main__":
    sys.exit(main())
