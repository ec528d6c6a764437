#!/usr/bin/env python3
"""No read-only file holds the answer to an exercise.

Every exercise region of every solution (solutions/NN_slug/*.cu, between BEGIN SOLUTION and
END SOLUTION) is an answer the student writes. If a file the student is given (a lesson's
headers, launch files, driver, or common/) contained that answer, the exercise could be
copied instead of written, and a change to the answer would go unnoticed there. This lint
normalises each answer (comments and `// STARTER:` lines dropped, whitespace collapsed) and
fails, naming the region and the file, when a read-only file contains it.

Which answers count: those of at least MIN_STATEMENTS statements, or of MIN_CHARACTERS
characters or more. A shorter answer (one `__syncthreads();`, one `pipe.producer_commit();`,
`return {}`) is the one way to write a call the README shows, and appears wherever the same
thing is done; the lint is about the logic of an answer, which is never that short.

Usage:
  tools/lint_answers.py              check the course (exit 1 naming every answer found)
  tools/lint_answers.py --self-test  show that a copied answer fails and a short one passes
"""
import argparse
import os
import re
import sys
import tempfile

from course_cli.regions import answer_lines, regions  # the course's one reader of regions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MIN_STATEMENTS = 2
MIN_CHARACTERS = 60
READ_ONLY_SUFFIXES = (".cu", ".cuh", ".cpp", ".h")


def normalise(code):
    """Comments dropped, whitespace collapsed (none kept around punctuation)."""
    code = re.sub(r"/\*.*?\*/", " ", code, flags=re.S)
    code = re.sub(r"//[^\n]*", " ", code)
    code = re.sub(r"\s+", " ", code).strip()
    return re.sub(r"\s*([^\w\s])\s*", r"\1", code)


def answers(path):
    """[(region number, BEGIN line, normalised answer)] of one solution file."""
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    lines = text.splitlines()
    found = []
    for region in regions(text):
        answer = "\n".join(answer_lines(lines, region))
        found.append((region["region"], region["begin"], normalise(answer)))
    return found


def substantial(answer):
    return answer.count(";") >= MIN_STATEMENTS or len(answer) >= MIN_CHARACTERS


def read_only_files(root):
    """The files a student is given: every lesson file but the exercise, and common/."""
    files = []
    lessons = os.path.join(root, "lessons")
    for lesson in sorted(os.listdir(lessons)):
        folder = os.path.join(lessons, lesson)
        if not os.path.isdir(folder) or not re.match(r"\d\d_", lesson):
            continue
        exercise = lesson[3:] + ".cu"
        files += [os.path.join(folder, n) for n in sorted(os.listdir(folder))
                  if n.endswith(READ_ONLY_SUFFIXES) and n != exercise]
        given = os.path.join(folder, "given")
        if os.path.isdir(given):
            files += [os.path.join(given, n) for n in sorted(os.listdir(given))
                      if n.endswith(READ_ONLY_SUFFIXES)]
    for top in ("common/include", "common/src"):
        for folder, _, names in sorted(os.walk(os.path.join(root, top))):
            files += [os.path.join(folder, n) for n in sorted(names) if n.endswith(READ_ONLY_SUFFIXES)]
    return files


def solution_files(root):
    solutions = os.path.join(root, "solutions")
    return [os.path.join(solutions, lesson, name)
            for lesson in sorted(os.listdir(solutions)) if os.path.isdir(os.path.join(solutions, lesson))
            for name in sorted(os.listdir(os.path.join(solutions, lesson))) if name.endswith(".cu")]


def check(root):
    """Prints each answer found in a read-only file; returns how many."""
    texts = {}
    for path in read_only_files(root):
        with open(path, encoding="utf-8") as handle:
            texts[path] = normalise(handle.read())
    found = 0
    for solution in solution_files(root):
        for number, line, answer in answers(solution):
            if not substantial(answer):
                continue
            for path, text in texts.items():
                if answer in text:
                    found += 1
                    print(f"{os.path.relpath(solution, root)}:{line}: region {number}'s answer is in "
                          f"read-only {os.path.relpath(path, root)}: {answer[:100]}", file=sys.stderr)
    return found


def self_test():
    """A copied two-statement answer fails; a one-call answer repeated elsewhere passes."""
    files = {
        "solutions/01_demo/demo.cu": (
            "void f(int* a) {\n  // BEGIN SOLUTION\n  a[0] = 1;  // first\n  a[1] = 2;\n"
            "  // END SOLUTION\n  // BEGIN SOLUTION\n  sync();\n  // END SOLUTION\n}\n"),
        "lessons/01_demo/demo.cu": "void f(int* a) {\n}\n",
        "lessons/01_demo/demo_launch.cu": "void g(int* a) {\n  sync();\n}\n",
        "common/include/course/x.h": "inline void h(int* a) { a[0] =  1;\n a[1]=2; }\n",
    }
    with tempfile.TemporaryDirectory() as root:
        for name, text in files.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        found = check(root)
    ok = found == 1
    print("self-test:", "the copied answer in common/ fails, the one-call answer passes" if ok
          else f"FAILED: {found} answers found, expected 1")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    found = check(args.root)
    if found == 0:
        print(f"no read-only file holds an answer ({len(read_only_files(args.root))} files, "
              f"answers of >= {MIN_STATEMENTS} statements or >= {MIN_CHARACTERS} characters)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
