#!/usr/bin/env python3
"""Do the exercises state contracts, or dictate their answers?

For every exercise region of a solution file, the ANSWER TOKENS are what a student must work
out: the calls and API names it uses (an identifier before `(` or `<`, a qualified name
`a::b`, a member call `.name(`) and its index and parity expressions (operands joined by
+ - * / % & | ^ << >>), keywords and plain numbers left out. A token is COPYABLE from a text
when it stands there verbatim (a name as a whole word, an expression with its white space
collapsed). Per lesson, the share of answer tokens copyable from:
  - the TODO text (the TODO comments of the starter),
  - the TODO text or any other comment of the starter (file header, doc comments),
  - the README's exercise section (from a heading containing "exercise" to the next heading
    of the same or a higher level).

Checked (exit 1 naming each problem), for the lessons with hint ladders
(lessons/NN_slug/given/hints.json):
  - the shares above within the lesson's target: TARGETS below;
  - no TODO text or hint rung other than the last holds a token of its own TODO's answer,
    except the lesson's ALLOWED words (its subject, and in lessons 00-04 the API family a TODO
    may name) and the names the starter's own code shows (a given helper, a loop variable),
    which a TODO text may still not write as a call;
  - the first rung of every ladder holds no code (no call, no statement).
Lessons without ladders are measured, not checked.

Usage:
  tools/lint_contracts.py [--lessons NN ...] [--rev REV] [--report]   (--rev: measure the
      files as they were at a git revision; --report: print the table, check nothing)
  tools/lint_contracts.py --self-test
"""
import argparse
import json
import os
import re
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))

from course_cli.exercise import todo_blocks  # noqa: E402
from course_cli.starter import generate_starter  # noqa: E402
from files_per_exercise import regions_by_todo, strip_comments  # noqa: E402

# The share of answer tokens a student may copy from the TODO text or the starter's
# comments (COURSE_DESIGN.md 4a): lessons 00-04 teach the API itself and may name it.
TARGETS = {lesson: 0.25 for lesson in ("00", "01", "02", "03", "04")}
DEFAULT_TARGET = 0.10
# Words a lesson's texts may hold although its answers use them: the lesson's subject, and in
# 00-04 the API family a TODO names ("a cooperative-groups copy"). Kept short on purpose.
ALLOWED = {
    "00": {"cudaDeviceGetAttribute", "cudaGetDeviceProperties", "cudaMemcpy"},
    "02": {"memcpy_async", "cooperative_groups", "cg::memcpy_async"},
    "03": {"cuda::barrier", "cuda::memcpy_async", "memcpy_async"},
    "04": {"cuda::aligned_size_t", "aligned_size_t", "cuda::memcpy_async", "memcpy_async"},
}
KEYWORDS = set("""if else for while do return sizeof alignof static_cast reinterpret_cast const_cast
dynamic_cast decltype switch case break continue const constexpr auto void int unsigned
template typename new delete true false nullptr this operator""".split())
CALL = re.compile(r"(?<![\w.])((?:[A-Za-z_]\w*::)*[A-Za-z_]\w*)\s*(?=[(<])")
QUALIFIED = re.compile(r"\b[A-Za-z_]\w*(?:::[A-Za-z_]\w*)+\b")
MEMBER = re.compile(r"\.\s*([A-Za-z_]\w*)\s*(?=\()")
OPERAND = r"(?:[A-Za-z_][\w.]*(?:\(\))?|\d+[uUlL]*)"
EXPRESSION = re.compile(rf"{OPERAND}(?:\s*(?:<<|>>|[-+*/%&|^])\s*{OPERAND})+")
CODE_IN_TEXT = re.compile(r"\w\s*\([^)]*\)\s*;|[A-Za-z_]\w*\([^)]*\)|;\s*$")


def answer_tokens(code):
    """The calls, API names and expressions of a region's code (a set of strings)."""
    code = strip_comments(code)
    tokens = set()
    for name in CALL.findall(code) + QUALIFIED.findall(code) + MEMBER.findall(code):
        if name.split("::")[-1] not in KEYWORDS:
            tokens.add(name)
    for expression in EXPRESSION.findall(code):
        expression = " ".join(expression.split())
        # Numbers alone, and a neighbour (`k + 1`, `j - 1`: the contract names such batches),
        # are no formula to find.
        if not re.fullmatch(r"[\d\s+*/%&|^<>-]+[uUlL]*", expression) and \
                not re.fullmatch(r"[A-Za-z_]\w* [-+] 1", expression):
            tokens.add(expression)
    return tokens


def copyable(token, text):
    """Whether `token` stands verbatim in `text` (names as whole words). A name that is also
    an English word (`arrive`, `buffer`) counts only as code: before `(` or in a code span."""
    flat = " ".join(text.split())
    if re.fullmatch(r"[a-z]+", token):
        spans = " ".join(re.findall(r"`([^`]*)`", flat))
        return re.search(rf"(?<![\w:.]){token}\s*\(", flat) is not None or \
            re.search(rf"(?<![\w:]){token}(?![\w])", spans) is not None
    if re.fullmatch(r"[\w:]+", token):
        return re.search(rf"(?<![\w:]){re.escape(token)}(?![\w])", flat) is not None
    return " ".join(token.split()) in flat or token.replace(" ", "") in flat.replace(" ", "")


def shown_in_code(token, code):
    """Whether the starter's code (comments stripped) already shows `token`."""
    flat = " ".join(code.split())
    if re.fullmatch(r"[\w:]+", token):
        return re.search(rf"(?<![\w:]){re.escape(token)}(?![\w])", flat) is not None
    return token.replace(" ", "") in flat.replace(" ", "")


def comments(text):
    return "\n".join(m.group(1) for m in re.finditer(r"//([^\n]*)", text))


def todo_texts(starter):
    """{todo: the text of its TODO comment blocks} of a starter."""
    texts = {}
    for block in todo_blocks(starter):
        key = str(block.number)
        texts[key] = texts.get(key, "") + " ".join(block.text) + "\n"
    return texts


def exercise_section(readme):
    """The README's exercise section (its heading and text up to the next heading of the
    same or a higher level)."""
    lines = readme.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+.*exercise", line, re.I)
        if m:
            level = len(m.group(1))
            out = [line]
            for more in lines[i + 1:]:
                h = re.match(r"^(#+)\s", more)
                if h and len(h.group(1)) <= level:
                    break
                out.append(more)
            return "\n".join(out)
    return ""


class Reader:
    """Reads a repository file as it is now, or as it was at a git revision."""

    def __init__(self, rev=None):
        self.rev = rev

    def read(self, path):
        if self.rev is None:
            full = os.path.join(ROOT, path)
            return open(full, encoding="utf-8").read() if os.path.exists(full) else None
        result = subprocess.run(["git", "-C", ROOT, "show", f"{self.rev}:{path}"],
                                capture_output=True, text=True)
        return result.stdout if result.returncode == 0 else None

    def lessons(self):
        if self.rev is None:
            names = os.listdir(os.path.join(ROOT, "solutions"))
        else:
            out = subprocess.run(["git", "-C", ROOT, "ls-tree", "--name-only", f"{self.rev}:solutions"],
                                 capture_output=True, text=True).stdout
            names = out.split()
        return sorted(n for n in names if re.match(r"\d\d_", n))


def measure_lesson(reader, lesson):
    """The lesson's counts and problems (a dict)."""
    number, slug = lesson[:2], lesson[3:]
    solution = reader.read(f"solutions/{lesson}/{slug}.cu")
    readme = reader.read(f"lessons/{lesson}/README.md") or ""
    hints_text = reader.read(f"lessons/{lesson}/given/hints.json")
    ladders = json.loads(hints_text)["todos"] if hints_text else None
    starter = generate_starter(solution, lesson)
    given_code = strip_comments(starter)
    texts = todo_texts(starter)
    all_comments = comments(starter)
    section = exercise_section(readme)
    allowed = ALLOWED.get(number, set())
    result = {"lesson": lesson, "tokens": 0, "todo": 0, "comments": 0, "readme": 0,
              "problems": [], "checked": ladders is not None}
    by_todo = {str(todo): answer_tokens(answer)
               for todo, (_, answer) in sorted(regions_by_todo(solution).items())}
    for todo, tokens in by_todo.items():
        result["tokens"] += len(tokens)
        todo_text = texts.get(todo, "")
        result["todo"] += sum(copyable(t, todo_text) for t in tokens)
        result["comments"] += sum(copyable(t, all_comments) for t in tokens)
        result["readme"] += sum(copyable(t, section) for t in tokens)
        if ladders is not None:
            rungs = ladders.get(todo, {}).get("hints", [])
            result["problems"] += todo_problems(f"{lesson} TODO {todo}", tokens - allowed,
                                                todo_text, rungs, given_code)
    if ladders is not None and result["tokens"]:
        result["problems"] += share_problems(result, TARGETS.get(number, DEFAULT_TARGET))
    return result


def todo_problems(where, tokens, todo_text, rungs, given_code):
    """What one TODO's text and hint rungs give away of its answer `tokens` (those the
    lesson does not allow): a problem line each, starting with `where`."""
    problems = []
    # A name the starter's own code shows (a given helper, a variable the loop declares)
    # may be named in a contract: the student sees it anyway.
    own = {t for t in tokens if not shown_in_code(t, given_code)}
    # ...but not as a call: "before copy_batch() starts" dictates the answer's shape.
    called = {t for t in tokens if re.fullmatch(r"[\w:]+", t) and
              re.search(rf"(?<![\w:.]){re.escape(t)}\s*\(", " ".join(todo_text.split()))}
    leaks = sorted({t for t in own if copyable(t, todo_text)} | called)
    if leaks:
        problems.append(f"{where}: the TODO text holds {leaks}")
    for k, rung in enumerate(rungs[:-1], start=1):
        leaks = sorted(t for t in own if copyable(t, rung))
        if leaks:
            problems.append(f"{where}: hint rung {k} holds {leaks}")
    if rungs and CODE_IN_TEXT.search(rungs[0]):
        problems.append(f"{where}: hint rung 1 holds code: "
                        f"{CODE_IN_TEXT.search(rungs[0]).group(0)!r}")
    return problems


def share_problems(result, target):
    """A problem line for each of the lesson's starter comments and README exercise section
    from which more than `target` of its answer tokens can be copied."""
    problems = []
    for kind in ("comments", "readme"):
        share = result[kind] / result["tokens"]
        if share > target:
            what = "TODO text or starter comments" if kind == "comments" else "README exercise section"
            problems.append(f"{result['lesson']}: {share:.0%} of the answer tokens are copyable "
                            f"from its {what} (target <= {target:.0%})")
    return problems


def share(part, whole):
    return f"{part / whole:4.0%}" if whole else "   -"


def run(lessons, rev, report_only):
    reader = Reader(rev)
    names = [n for n in reader.lessons() if not lessons or n[:2] in lessons]
    print(f"{'lesson':<26} {'tokens':>6} {'TODO':>5} {'comments':>8} {'README':>6}  checked")
    totals = [0, 0, 0, 0]
    problems = []
    for name in names:
        r = measure_lesson(reader, name)
        totals = [a + b for a, b in zip(totals, [r["tokens"], r["todo"], r["comments"], r["readme"]])]
        print(f"{name:<26} {r['tokens']:>6} {share(r['todo'], r['tokens']):>5} "
              f"{share(r['comments'], r['tokens']):>8} {share(r['readme'], r['tokens']):>6}  "
              f"{'yes' if r['checked'] else 'no (no hints.json)'}")
        problems += r["problems"]
    print(f"{'all':<26} {totals[0]:>6} {share(totals[1], totals[0]):>5} "
          f"{share(totals[2], totals[0]):>8} {share(totals[3], totals[0]):>6}")
    if report_only:
        return 0
    for problem in problems:
        print(problem)
    print(f"lint_contracts: {len(names)} lesson(s), {len(problems)} problem(s)")
    return 1 if problems else 0


def self_test():
    failures = []
    tokens = answer_tokens("pipe.producer_acquire();\ncuda::memcpy_async(block, s + v * blockDim.x "
                           "+ threadIdx.x, n, pipe);  // a comment call()\nif (k) return;")
    for want in ("producer_acquire", "cuda::memcpy_async", "s + v * blockDim.x + threadIdx.x"):
        if want not in tokens:
            failures.append(f"token {want!r} not found in {sorted(tokens)}")
    for unwanted in ("if", "return", "call"):
        if unwanted in tokens:
            failures.append(f"{unwanted!r} counted as a token")
    if not copyable("producer_acquire", "call producer_acquire() first"):
        failures.append("a named call was not found copyable")
    if copyable("wait", "consumer_wait() waits"):
        failures.append("a part of a longer name was found copyable")
    if not CALL.search("before copy_batch() starts"):
        failures.append("a call in a TODO's text was not seen")
    if copyable("arrive", "every thread must arrive") or not copyable("arrive", "call `arrive`"):
        failures.append("an English word misjudged as code, or code missed")
    if not copyable("v * blockDim.x + t", "vector v*blockDim.x+t of the batch"):
        failures.append("an expression with other spacing was not found copyable")
    if not CODE_IN_TEXT.search("Call pipe.consumer_wait() here") or CODE_IN_TEXT.search(
            "Which copies does a wait cover?"):
        failures.append("code in a rung misjudged")
    section = exercise_section("# L\n## Concept\nx\n## The exercise\nTODO 1\n### Part\ny\n## Next\nz")
    if "TODO 1" not in section or "y" not in section or "z" in section:
        failures.append(f"exercise section misread: {section!r}")
    for failure in failures:
        print(f"self-test FAILED: {failure}")
    if not failures:
        print("self-test passed")
    return 1 if failures else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--lessons", nargs="*", default=[], metavar="NN")
    parser.add_argument("--rev", help="measure the files as they were at this git revision")
    parser.add_argument("--report", action="store_true", help="print the table, check nothing")
    parser.add_argument("--self-test", action="store_true")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    return run(set(args.lessons), args.rev, args.report)


if __name__ == "__main__":
    sys.exit(main())
