#!/usr/bin/env python3
"""Compile every read-only file of every lesson on its own.

Why: the build compiles your exercise file (lessons/NN_slug/slug.cu) and the lesson's
launch file (given/slug_launch.cu) as one unit, your file first (cmake/CourseLesson.cmake). If a
read-only file used something it never declared, only that include order would hold the
build together, and an editor (or clangd) opening the file by itself would show errors that
are not there. So each read-only header declares what it uses, including what your file
defines (the kernels a launch file launches, the functions a kernel calls), and this check
compiles each file alone to prove it.

What it compiles, for every lessons/NN_slug/ folder and its given/ folder:
  - each header (*.cuh, *.h): a one-line file that #includes it;
  - each launch file (*_launch.cu): the file itself;
never the exercise file slug.cu or the driver given/main.cu (the build compiles those).

How: nvcc as the build calls it (C++17, CUDA, the Release flags, the warnings of
cmake/CourseWarnings.cmake), for sm_90 only (Hopper code guards itself), with the include
folders the build gives the lesson: its own folder and its given/, common/include, and the
same two folders of each lesson its CMakeLists.txt names after USES. Two differences, both because your file is
not there:
  - -fdevice-syntax-only: the device side stops after the front end (every name, type,
    overload and template is checked; no PTX is made). A launch file's kernels call device
    functions that only your file defines, and a GPU program cannot be made without them;
  - -diag-suppress=114,20280: "referenced but not defined" and "a kernel template
    instantiated without its definition" are what "your file defines it" looks like from a
    file alone.
Any other error fails the check. Warnings are left to the build.

Usage:
  tools/compile_alone.py                  check every lesson (exit 1 naming each failure)
  tools/compile_alone.py FILE...          check these files only
  tools/compile_alone.py -j 4 --verbose   4 compilers at once; all the output of a failure
Options for the build (tests/CMakeLists.txt passes them): --nvcc PATH, --isystem DIR (a
system include folder for every file: the toolkit's CCCL, NCCL's), --skip NN_slug (a lesson
that cannot be compiled here: lesson 17 without NCCL).
Exit codes: 0 every file compiles alone, 1 some do not, 2 a usage error (no nvcc, a file
outside lessons/NN_slug/).
"""
import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LESSONS = os.path.join(ROOT, "lessons")
FLAGS = [
    "-std=c++17", "-x", "cu", "-arch=sm_90", "-O3", "-DNDEBUG",
    "-Xcompiler=-Wall,-Wextra", "--Werror=cross-execution-space-call",
    "-fdevice-syntax-only", "-diag-suppress=114,20280",
]
HEADER_SUFFIXES = (".cuh", ".h")
CMAKE_KEYWORDS = {"TEST_HOOKS", "USES", "SOURCES"}


def lesson_folders():
    """lessons/NN_slug folders with a CMakeLists.txt, in lesson order."""
    return [name for name in sorted(os.listdir(LESSONS)) if re.match(r"\d\d_", name)
            and os.path.isfile(os.path.join(LESSONS, name, "CMakeLists.txt"))]


def read_only_files(lesson):
    """The headers and launch files of `lesson` (its folder, then given/), relative to the
    repository, sorted."""
    files = []
    for sub in ("", "given"):
        folder = os.path.join(LESSONS, lesson, sub)
        if os.path.isdir(folder):
            files += [os.path.join("lessons", lesson, sub, name) if sub else
                      os.path.join("lessons", lesson, name) for name in sorted(os.listdir(folder))
                      if name.endswith(HEADER_SUFFIXES) or name.endswith("_launch.cu")]
    return files


def used_lessons(lesson):
    """The lessons named after USES in the lesson's course_add_lesson() call. A variable
    there (lessons 10 and 11 build theirs with set() and list(APPEND)) is expanded with
    everything the file ever puts in it."""
    text = open(os.path.join(LESSONS, lesson, "CMakeLists.txt")).read()
    text = re.sub(r"#[^\n]*", "", text)
    variables = {}
    for command, body in re.findall(r"\b(set|list)\s*\(([^)]*)\)", text):
        words = body.split()
        if command == "set" and words:
            variables[words[0]] = words[1:]
        elif command == "list" and words[:1] == ["APPEND"] and len(words) > 1:
            variables.setdefault(words[1], []).extend(words[2:])
    call = re.search(r"\bcourse_add_lesson\s*\(([^)]*)\)", text)
    words = []
    for word in call.group(1).split() if call else []:
        variable = re.fullmatch(r"\$\{(\w+)\}", word)
        words += variables.get(variable.group(1), []) if variable else [word]
    uses, in_uses = [], False
    for word in words:
        if word in CMAKE_KEYWORDS:
            in_uses = word == "USES"
        elif in_uses:
            uses.append(word)
    return uses


def include_folders(lesson, extra):
    """nvcc's include options for a file of `lesson`, as the build gives them."""
    folders = [os.path.join(LESSONS, name, sub) if sub else os.path.join(LESSONS, name)
               for name in [lesson] + used_lessons(lesson) for sub in ("", "given")]
    folders += [os.path.join(ROOT, "common", "include")]
    return ([flag for folder in folders for flag in ("-I", folder)] +
            [flag for folder in extra for flag in ("-isystem", folder)])


def first_error(output):
    """The first line of the compiler's output that reports an error."""
    for line in output.splitlines():
        if re.search(r"\berror\b", line):
            return line.strip().replace(ROOT + os.sep, "")
    lines = [line for line in output.splitlines() if line.strip()]
    return lines[-1].strip() if lines else "(no output)"


def compile_alone(path, nvcc, extra_includes, scratch):
    """Compiles one file alone. Returns (path, None) or (path, the compiler's output)."""
    lesson = path.split(os.sep)[1]
    source = os.path.join(ROOT, path)
    work = tempfile.mkdtemp(dir=scratch)
    if path.endswith(HEADER_SUFFIXES):
        unit = os.path.join(work, "alone.cu")
        with open(unit, "w") as f:
            f.write(f'#include "{source}"\n')
        source = unit
    command = [nvcc, *FLAGS, *include_folders(lesson, extra_includes),
               "-c", source, "-o", os.path.join(work, "alone.o")]
    result = subprocess.run(command, capture_output=True, text=True, cwd=work)
    if result.returncode == 0:
        return path, None
    return path, " ".join(command) + "\n" + result.stdout + result.stderr


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("files", nargs="*", help="files to check (default: every lesson's)")
    parser.add_argument("-j", "--jobs", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--nvcc", default=shutil.which("nvcc") or "nvcc")
    parser.add_argument("--isystem", dest="includes", action="append", default=[], metavar="DIR")
    parser.add_argument("--skip", action="append", default=[], metavar="NN_slug")
    parser.add_argument("--verbose", action="store_true", help="all the output of a failure")
    args = parser.parse_args()
    if not shutil.which(args.nvcc):
        print(f"compile_alone.py: nvcc not found ({args.nvcc}): pass --nvcc", file=sys.stderr)
        return 2

    if args.files:
        files = [os.path.relpath(os.path.abspath(f), ROOT) for f in args.files]
        outside = [f for f in files if not re.match(r"lessons/\d\d_[^/]+/(given/)?[^/]+$", f)]
        if outside:
            print(f"compile_alone.py: not a lesson's file: {', '.join(outside)}", file=sys.stderr)
            return 2
    else:
        files = [f for lesson in lesson_folders() if lesson not in args.skip
                 for f in read_only_files(lesson)]
    if args.skip:
        print(f"skipped: {', '.join(args.skip)}")

    failures = {}
    with tempfile.TemporaryDirectory(prefix="compile_alone.") as scratch, \
            concurrent.futures.ThreadPoolExecutor(max(1, args.jobs)) as pool:
        jobs = [pool.submit(compile_alone, f, args.nvcc, args.includes, scratch) for f in files]
        for job in concurrent.futures.as_completed(jobs):
            path, output = job.result()
            print(f"{'ok  ' if output is None else 'FAIL'} {path}", flush=True)
            if output is not None:
                failures[path] = output

    for path in sorted(failures):
        print(f"\n{path} does not compile alone:\n  {first_error(failures[path])}")
        if args.verbose:
            print(failures[path])
    print(f"\n{len(files) - len(failures)} of {len(files)} files compile alone.")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
