#!/usr/bin/env python3
"""How many files a student opens for one exercise, lesson by lesson and TODO by TODO.

An exercise is one numbered TODO of a lesson's file (all its BEGIN/END SOLUTION regions).
To write it, a student opens:
  - the lesson's README.md (the TODO's explanation);
  - the exercise file itself (lessons/NN_slug/slug.cu);
  - each header that declares a name the answer uses: the course's headers and the
    lesson's own, as far as the exercise file includes them (directly or through another
    header). A name is "declared" in a header when a line there introduces it at namespace
    or class level (a function, a variable, a type, an alias), comments left out; a name
    the exercise file declares itself (a parameter, a local, a function) needs no header,
    nor does a member (`x.count`: x's declaration names its type).
Names that come from the CUDA toolkit, CCCL or the standard library do not count: their
documentation is the student's reference, not a file of the course. Nor does a header of
common/ or of another lesson that an earlier lesson's exercise already needed (lesson 02
opens course/batches.cuh; by lesson 09 the student knows Batch and batch_of_block): the
table lists those as "known".

What the count is for: the "Anatomy v3" issue asks for at most 4 files per exercise. The
tool prints a table (lesson, TODO, files, which) and, with --max N, exits 1 naming every
exercise over N.

Usage:
  tools/files_per_exercise.py               the table, the worst exercise of each lesson
  tools/files_per_exercise.py --all         every TODO
  tools/files_per_exercise.py --max 4       also fail when an exercise needs more than 4
  tools/files_per_exercise.py --self-test   show that an exercise over the limit fails and
                                            that what the exercise file declares is free
"""
import argparse
import contextlib
import io
import os
import re
import sys
import tempfile

from course_cli.regions import answer_lines, regions  # the course's one reader of regions

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
TODO = re.compile(r"//\s*TODO\s+(\d+)\b")
IDENT = re.compile(r"\b[A-Za-z_]\w*\b")
BACKTICKED = re.compile(r"`([^`]+)`")
# A line that introduces NAME: optional template header, then specifiers and a type, then
# NAME followed by what a declarator or a type's head is followed by.
DECL_PREFIX = (
    r"^[ ]{0,4}(?:template\s*<[^;{}]*>\s*)?"
    r"(?:(?:__device__|__host__|__global__|__forceinline__|__noinline__|inline|static|"
    r"constexpr|consteval|extern|const|volatile|struct|class|enum|union|typename|unsigned|"
    r"signed|alignas\([^)]*\)|__launch_bounds__\([^)]*\)|"
    r"(?!(?:return|case|else|goto|throw|delete|new|co_return|co_await|do)\b)[\w:]+(?:<[^;{}()]*>)?)"
    r"[\s*&]+)+"
)


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", " ", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def regions_by_todo(solution_text):
    """{todo number: (TODO comment text, answer text)} of a solution file; a TODO with
    several regions gets their answers together."""
    lines = solution_text.splitlines()
    todos = {}
    for region in regions(solution_text):
        if region["todo"] == "?":
            continue
        comment = []  # the comment block right above BEGIN, when it is the TODO's own
        i = region["begin"] - 2
        while i >= 0 and lines[i].strip().startswith("//"):
            comment.insert(0, lines[i].strip())
            i -= 1
        if not any(TODO.search(line) for line in comment):
            comment = []
        answer = "".join(line + "\n" for line in answer_lines(lines, region))
        old_comment, old_answer = todos.get(int(region["todo"]), ("", ""))
        todos[int(region["todo"])] = (old_comment + "\n".join(comment) + "\n", old_answer + answer)
    return todos


def include_dirs(root):
    """Where the build looks for "..." includes: every lesson folder, its given/, and
    common/include."""
    lessons = os.path.join(root, "lessons")
    dirs = [os.path.join(lessons, d, sub) for d in sorted(os.listdir(lessons))
            for sub in ("", "given") if os.path.isdir(os.path.join(lessons, d, sub))]
    return dirs + [os.path.join(root, "common", "include")]


def resolve(name, here, dirs):
    for folder in [here] + dirs:
        path = os.path.join(folder, name)
        if os.path.isfile(path):
            return os.path.normpath(path)
    return None


def included_headers(path, dirs):
    """Every course header `path` includes, directly or through another, in include order."""
    seen, order, stack = set(), [], [path]
    while stack:
        current = stack.pop(0)
        with open(current, encoding="utf-8") as handle:
            text = handle.read()
        for name in INCLUDE.findall(text):
            found = resolve(name, os.path.dirname(current), dirs)
            if found and found not in seen and found != path:
                seen.add(found)
                order.append(found)
                stack.append(found)
    return order


def declares(text, name, ends=r"(?:[\(\[=;{<]|:(?!:))"):
    """True when a line of `text` introduces `name` (`ends`: what may follow the name)."""
    return re.search(DECL_PREFIX + r"\**&?" + re.escape(name) + r"\s*" + ends, text, re.M)


# Namespaces and keywords of the toolkit, CCCL and C++ that a declaration pattern could match.
EXTERNAL = {"std", "cuda", "ptx", "cg", "cooperative_groups", "nv", "static_cast",
            "reinterpret_cast", "const_cast", "sizeof", "alignof", "decltype", "return"}


def names_used(comment, answer):
    """The names an answer (and the code quoted in its TODO) refers to, members left out:
    `x.count` needs the file of x's type, which x's own declaration names."""
    code = strip_comments(answer) + "\n" + "\n".join(BACKTICKED.findall(comment))
    code = re.sub(r"(?:\.|->)\s*[A-Za-z_]\w*", " ", code)  # members
    code = re.sub(r"\b[A-Za-z_]\w*\s*::", " ", code)  # namespace and class qualifiers
    return set(IDENT.findall(code)) - EXTERNAL


def declared_in_exercise(text, name):
    """A local, a parameter or a function of the exercise file: the student has it in view."""
    parameter = r"[\(,]\s*(?:const\s+)?[\w:<>]+[\s*&]+(?:__restrict__\s+)?" + re.escape(name) + r"\s*[,)=\[:]"
    return declares(text, name, ends=r"(?:[\(\[=;{<,)]|:(?!:))") or re.search(parameter, text)


def lesson_exercises(root, lesson):
    """[(todo, [files])] for one lesson folder name, or [] when it has no exercise."""
    slug = lesson[3:]
    solution = os.path.join(root, "solutions", lesson, slug + ".cu")
    exercise = os.path.join(root, "lessons", lesson, slug + ".cu")
    if not os.path.isfile(solution) or not os.path.isfile(exercise):
        return []
    with open(solution, encoding="utf-8") as handle:
        solution_text = handle.read()
    todos = regions_by_todo(solution_text)
    own = strip_comments(solution_text)
    headers = included_headers(exercise, include_dirs(root))
    texts = {}
    for header in headers:
        with open(header, encoding="utf-8") as handle:
            texts[header] = strip_comments(handle.read())
    result = []
    for todo in sorted(todos):
        comment, answer = todos[todo]
        needed = {os.path.join("lessons", lesson, "README.md"), os.path.relpath(exercise, root)}
        for name in names_used(comment, answer):
            if declared_in_exercise(own, name):
                continue  # a parameter, a local or a function of the exercise file itself
            for header in headers:  # the first header that declares it (an overload may repeat it)
                if declares(texts[header], name):
                    needed.add(os.path.relpath(header, root))
                    break
        result.append((todo, sorted(needed)))
    return result


SELF_TEST_FILES = {
    "common/include/course/a.h": "int helper_a(int x);\n",
    "lessons/01_demo/one.cuh": "#include \"course/a.h\"\nstruct Shape { int rows; };\n",
    "lessons/01_demo/two.cuh": "#include \"one.cuh\"\n__device__ inline int helper_b(int);\n",
    "lessons/01_demo/three.cuh": "constexpr int kTile = 32;\n",
    "lessons/01_demo/README.md": "# demo\n",
    "lessons/01_demo/demo.cu": '#include "two.cuh"\n#include "three.cuh"\n',
    # TODO 1 needs a.h, one.cuh, two.cuh and three.cuh: 6 files; TODO 2 only its own names.
    "solutions/01_demo/demo.cu": (
        '#include "two.cuh"\n#include "three.cuh"\n'
        "__device__ int mine(int value) {\n"
        "  // TODO 1: the sum.\n  // BEGIN SOLUTION\n"
        "  Shape s{helper_a(value)};\n  return helper_b(s.rows) + kTile;\n  // END SOLUTION\n"
        "  // TODO 2: the value.\n  // BEGIN SOLUTION\n  return value;\n  // END SOLUTION\n}\n"),
}


def self_test():
    """An exercise over the limit fails, naming its files; one within it passes."""
    with tempfile.TemporaryDirectory() as root:
        for name, text in SELF_TEST_FILES.items():
            os.makedirs(os.path.dirname(os.path.join(root, name)), exist_ok=True)
            with open(os.path.join(root, name), "w", encoding="utf-8") as handle:
                handle.write(text)
        exercises = dict(lesson_exercises(root, "01_demo"))
        errors = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(errors):
            over = check(root, show_all=True, limit=4)
            within = check(root, show_all=True, limit=6)
    ok = (len(exercises[1]) == 6 and len(exercises[2]) == 2 and over == 1 and within == 0
          and "01_demo TODO 1: 6 files" in errors.getvalue())
    print("self-test:", "the 6-file exercise fails --max 4 and passes --max 6; the 2-file one "
          "passes" if ok else f"FAILED: {exercises} {errors.getvalue()!r}")
    return 0 if ok else 1


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--all", action="store_true", help="every TODO, not only the worst")
    parser.add_argument("--max", type=int, help="fail when an exercise needs more files")
    parser.add_argument("--root", default=ROOT)
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    return check(args.root, args.all, args.max)


def check(root, show_all=False, limit=None):
    """Prints the table; returns 1 when an exercise needs more than `limit` files."""
    lessons = sorted(d for d in os.listdir(os.path.join(root, "lessons")) if re.match(r"\d\d_", d))
    over = []
    known = set()  # shared headers an earlier lesson's exercise needed
    print(f"{'lesson':<26} {'TODO':>4} {'files':>5}  headers besides README.md and the exercise file")
    for lesson in lessons:
        exercises = lesson_exercises(root, lesson)
        if not exercises:
            continue
        counted = split_known(lesson, exercises, known)
        print_rows(lesson, counted if show_all else [max(counted, key=lambda e: (len(e[1]), -e[0]))])
        over += [(lesson, todo, files) for todo, files, _ in counted if limit and len(files) > limit]
        known |= {f for _, files in exercises for f in files
                  if not f.endswith(("README.md", os.sep + lesson[3:] + ".cu"))}
    for lesson, todo, files in over:
        print(f"{lesson} TODO {todo}: {len(files)} files to open (at most {limit}): {', '.join(files)}",
              file=sys.stderr)
    return 1 if over else 0


def split_known(lesson, exercises, known):
    """[(todo, files to open, shared headers an earlier lesson already needed)] of a lesson's
    exercises ([(todo, files)]): the lesson's own files always count."""
    here = os.path.join("lessons", lesson) + os.sep
    return [(todo, [f for f in files if f.startswith(here) or f not in known],
             [f for f in files if not f.startswith(here) and f in known])
            for todo, files in exercises]


def print_rows(lesson, counted):
    """One table row per exercise: its count and the headers besides README.md and the
    exercise file (and the known ones in parentheses)."""
    for todo, files, old in counted:
        extra = [os.path.basename(f) for f in files if not f.endswith(("README.md", lesson[3:] + ".cu"))]
        also = f"  (known: {', '.join(os.path.basename(f) for f in old)})" if old else ""
        print(f"{lesson:<26} {todo:>4} {len(files):>5}  {', '.join(extra)}{also}")


if __name__ == "__main__":
    sys.exit(main())
