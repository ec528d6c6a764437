#!/usr/bin/env python3
"""A lesson's CMakeLists.txt for a tree without solutions/ (a handout): what follows its
course_add_lesson() call, less every statement about the solution's targets.

    cmake/course_starter_only.py LESSON_CMAKELISTS OUTPUT    writes OUTPUT (exit 1: cannot)
    cmake/course_starter_only.py --self-test

cmake/CourseLesson.cmake runs it when the tree has no solutions/ (COURSE_WITH_SOLUTIONS is
OFF): course_add_lesson() then makes the student's targets only, includes OUTPUT in the
lesson's directory scope and returns from the lesson's CMakeLists.txt, so that the lesson
files stay as they are in the course and a handout builds them unchanged.

A statement is about the solution when it names a solution target (NN_slug_solution,
NN_slug_solution_kernels, ...), a path under solutions/, or a variable that a left-out
set() defined. The rules:
  - such a statement is left out (an add_test: the set_tests_properties of its name too);
  - foreach(var items...) loses the items `solution` and those naming a solution target, and
    goes when none is left (`foreach(kind starter solution)` keeps the starter's pass);
  - set_property(TARGET|TEST names...) and set_tests_properties(names...) lose those names;
  - an if() or elseif() whose condition names a solution target counts as false (without
    solutions no such target exists): its branch goes, a later elseif/else takes its place;
    a condition with NOT is refused (the rule above would be wrong for it);
  - $<TARGET_FILE_DIR:NN_slug_solution> becomes $<TARGET_FILE_DIR:NN_slug> (one bin/).
Everything else is copied as written. A left-out statement is listed in a comment of OUTPUT.
"""

import re
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

SOLUTION_NAME = re.compile(r"(?<![A-Za-z0-9_])\d\d_\w*?_solution\w*|(?<![\w-])solutions/")
BLOCKS = {"if": "endif", "foreach": "endforeach", "while": "endwhile",
          "function": "endfunction", "macro": "endmacro", "block": "endblock"}
BRACKET_OPEN = re.compile(r"\[(=*)\[")


class FilterError(Exception):
    pass


@dataclass
class Statement:
    name: str  # lower case
    text: str  # the statement as written, name to closing parenthesis
    tokens: list  # the arguments, each as written (quotes kept)
    line: int


@dataclass
class Block:
    """if/foreach/...: the opening statement, the branches (elseif/else start new ones) and
    the closing statement."""
    opener: Statement
    branches: list = field(default_factory=list)  # [(Statement or None for the first, [nodes])]
    closer: Statement | None = None


def _skip_bracket(text: str, i: int) -> int:
    """Index after a bracket argument or comment that starts at text[i] ('[')."""
    m = BRACKET_OPEN.match(text, i)
    close = "]" + m.group(1) + "]"
    end = text.find(close, m.end())
    if end < 0:
        raise FilterError(f"line {text.count(chr(10), 0, i) + 1}: unterminated bracket")
    return end + len(close)


def _skip_quoted(text: str, i: int) -> int:
    j = i + 1
    while j < len(text):
        if text[j] == "\\":
            j += 2
            continue
        if text[j] == '"':
            return j + 1
        j += 1
    raise FilterError(f"line {text.count(chr(10), 0, i) + 1}: unterminated string")


def _line(text: str, i: int) -> int:
    return text.count("\n", 0, i) + 1


def _arguments(text: str, j: int, where: int) -> tuple[list[str], int]:
    """The arguments of the command whose "(" is at text[j - 1], each as written (quotes kept,
    nested parentheses as their own tokens, comments dropped), and the index after its ")"."""
    n = len(text)
    depth, tokens, token_start = 1, [], None

    def end_token(k):
        nonlocal token_start
        if token_start is not None:
            tokens.append(text[token_start:k])
            token_start = None

    while depth:
        if j >= n:
            raise FilterError(f"line {_line(text, where)}: unclosed (")
        ch = text[j]
        if ch == '"':
            k = _skip_quoted(text, j)
            if token_start is None:  # a quoted argument; else part of an unquoted one
                tokens.append(text[j:k])
            j = k
            continue
        if token_start is None and (ch == "[" and BRACKET_OPEN.match(text, j)):
            k = _skip_bracket(text, j)
            tokens.append(text[j:k])
            j = k
            continue
        if token_start is None and ch == "#":
            j = _comment_end(text, j)
            continue
        if ch in " \t\r\n()":
            end_token(j)
            depth += {"(": 1, ")": -1}.get(ch, 0)
            if ch in "()" and depth:
                tokens.append(ch)
        elif ch == "\\" and token_start is not None:
            j += 1
        elif token_start is None:
            token_start = j
        j += 1
    return tokens, j


def _comment_end(text: str, i: int) -> int:
    """The index after the comment that starts at text[i] ("#")."""
    if BRACKET_OPEN.match(text, i + 1):
        return _skip_bracket(text, i + 1)
    end = text.find("\n", i)
    return len(text) if end < 0 else end


COMMAND = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)[ \t]*\(")


def parse(text: str) -> list:
    """The file's statements and comments: Statement objects and comment strings."""
    items = []
    i = 0
    while i < len(text):
        if text[i] in " \t\r\n":
            i += 1
            continue
        if text[i] == "#":
            end = _comment_end(text, i)
            items.append(text[i:end])
            i = end
            continue
        m = COMMAND.match(text, i)
        if not m:
            raise FilterError(f"line {_line(text, i)}: expected a command and its (")
        tokens, j = _arguments(text, m.end(), i)
        items.append(Statement(m.group(1).lower(), text[i:j], tokens, _line(text, i)))
        i = j
    return items


def tree(items: list) -> list:
    """Nests the statements of parse() into Blocks."""
    root: list = []
    stack: list = []  # (Block, its current branch's node list)
    current = root
    for item in items:
        if isinstance(item, Statement) and item.name in BLOCKS:
            block = Block(item)
            block.branches.append((None, []))
            current.append(block)
            stack.append(block)
            current = block.branches[-1][1]
            continue
        if isinstance(item, Statement) and item.name in ("elseif", "else"):
            if not stack or stack[-1].opener.name != "if":
                raise FilterError(f"line {item.line}: {item.name} outside an if()")
            stack[-1].branches.append((item, []))
            current = stack[-1].branches[-1][1]
            continue
        if isinstance(item, Statement) and item.name in BLOCKS.values():
            if not stack or BLOCKS[stack[-1].opener.name] != item.name:
                raise FilterError(f"line {item.line}: unmatched {item.name}()")
            stack.pop().closer = item
            current = stack[-1].branches[-1][1] if stack else root
            continue
        current.append(item)
    if stack:
        raise FilterError(f"line {stack[-1].opener.line}: {stack[-1].opener.name}() never closed")
    return root


class Filter:
    def __init__(self):
        self.tainted: set[str] = set()  # variables a left-out set() defined
        self.dropped_tests: set[str] = set()
        self.left_out: list[str] = []

    def mentions(self, tokens: list) -> bool:
        for token in tokens:
            if SOLUTION_NAME.search(token):
                return True
            for variable in re.findall(r"\$\{(\w+)\}", token):
                if variable in self.tainted:
                    return True
        return False

    def leave_out(self, statement: Statement) -> None:
        first = " ".join(statement.text.split())
        self.left_out.append(f"line {statement.line}: {first[:110]}")

    def statement(self, s: Statement) -> str | None:
        tokens = [re.sub(r"\$<TARGET_FILE_DIR:(\d\d_\w+?)_solution>", r"$<TARGET_FILE_DIR:\1>", t)
                  for t in s.tokens]
        rewritten = tokens != s.tokens
        if s.name == "set_tests_properties" and "PROPERTIES" in tokens:
            k = tokens.index("PROPERTIES")
            names = [t for t in tokens[:k] if t not in self.dropped_tests and not self.mentions([t])]
            if not names:
                self.leave_out(s)
                return None
            if len(names) != k:
                tokens, rewritten = names + tokens[k:], True
        if s.name == "set_property" and tokens[:1] in (["TARGET"], ["TEST"]):
            k = 1
            while k < len(tokens) and tokens[k] not in ("APPEND", "APPEND_STRING", "PROPERTY"):
                k += 1
            names = [t for t in tokens[1:k] if t not in self.dropped_tests and not self.mentions([t])]
            if not names:
                self.leave_out(s)
                return None
            if len(names) != k - 1:
                tokens, rewritten = tokens[:1] + names + tokens[k:], True
        if self.mentions(tokens):
            self.leave_out(s)
            if s.name == "add_test" and len(tokens) > 1 and tokens[0] == "NAME":
                self.dropped_tests.add(tokens[1])
            if s.name in ("set", "list") and tokens:
                self.tainted.add(tokens[1] if s.name == "list" and len(tokens) > 1 else tokens[0])
            return None
        if rewritten:
            return f"{s.name}({' '.join(tokens)})"
        return s.text

    def nodes(self, nodes: list, indent: str = "") -> list[str]:
        out = []
        for node in nodes:
            if isinstance(node, str):
                out.append(indent + node.strip())
            elif isinstance(node, Statement):
                kept = self.statement(node)
                if kept is not None:
                    out.append(indent + kept)
            else:
                out += self.block(node, indent)
        return out

    def block(self, block: Block, indent: str) -> list[str]:
        opener = block.opener
        if opener.name == "foreach":
            tokens = opener.tokens
            if len(tokens) > 1 and tokens[1] not in ("RANGE", "IN"):
                items = [t for t in tokens[1:] if t != "solution" and not self.mentions([t])]
                if not items:
                    self.leave_out(opener)
                    return []
                header = (opener.text if len(items) == len(tokens) - 1
                          else f"foreach({tokens[0]} {' '.join(items)})")
            elif self.mentions(tokens):
                self.leave_out(opener)
                return []
            else:
                header = opener.text
            body = self.nodes(block.branches[0][1], indent + "  ")
            return [indent + header] + body + [indent + block.closer.text]
        if opener.name == "if":
            out = []
            for k, (head, body) in enumerate(block.branches):
                condition = opener.tokens if head is None else head.tokens
                if head is not None and head.name == "else":
                    kept_head = "else()" if out else None
                else:
                    if self.mentions(condition):
                        if "NOT" in condition:
                            raise FilterError(f"line {(head or opener).line}: a condition with "
                                              "NOT about a solution target: say what it means")
                        self.leave_out(head or opener)
                        continue
                    if head is None:
                        kept_head = opener.text
                    elif out:
                        kept_head = head.text
                    else:  # the first branch went: this elseif opens the if
                        kept_head = f"if({' '.join(condition)})"
                lines = self.nodes(body, indent + "  ")
                if kept_head is None:  # an else whose if and elseifs all went: its body stays
                    out += [line[2:] if line.startswith(indent + "  ") else line for line in lines]
                    return out
                out += [indent + kept_head] + lines
            if out:
                out.append(indent + block.closer.text)
            return out
        if self.mentions(opener.tokens):
            self.leave_out(opener)
            return []
        body = self.nodes(block.branches[0][1], indent + "  ")
        return [indent + opener.text] + body + [indent + block.closer.text]


def starter_only(text: str, label: str) -> str:
    """The text of the output file for a lesson CMakeLists.txt with text `text`."""
    nodes = tree(parse(text))
    calls = [k for k, node in enumerate(nodes)
             if isinstance(node, Statement) and node.name == "course_add_lesson"]
    if len(calls) != 1:
        raise FilterError(f"expected one course_add_lesson() call at the top level, found "
                          f"{len(calls)}")
    flt = Filter()
    body = flt.nodes(nodes[calls[0] + 1:])
    head = [f"# Generated by cmake/course_starter_only.py from {label}: the statements after",
            "# course_add_lesson(), less those about the solution's targets (this tree has no",
            "# solutions/)."]
    if flt.left_out:
        head.append("# Left out:")
        head += [f"#   {line}" for line in flt.left_out]
    return "\n".join(head + [""] + body) + "\n"


def self_test() -> int:
    source = """\
set(before 1)
course_add_lesson(07 demo TEST_HOOKS USES 01_a)  # the call
foreach(kind starter solution)
  target_compile_options(07_demo_${kind}_kernels PRIVATE -x)
endforeach()
foreach(exe 07_demo 07_demo_solution)
  add_test(NAME L07.cli.${exe}.usage COMMAND $<TARGET_FILE:${exe}> --bad)
endforeach()
if(COURSE_NCU)
  set(_run "$<TARGET_FILE:07_demo_solution> --quick")
  set(_runs --run "a=${_run} x")
  add_test(NAME L07.profile.one COMMAND ncu ${_runs})
  set_tests_properties(L07.profile.one PROPERTIES LABELS "L07;profile")
endif()
add_test(NAME L07.kept COMMAND $<TARGET_FILE:07_demo> "a ) quoted" [[bracket ( ]])
set_tests_properties(L07.kept L07.profile.one PROPERTIES TIMEOUT 5)
target_compile_definitions(07_demo_tests PRIVATE DIR="$<TARGET_FILE_DIR:07_demo_solution>")
add_dependencies(07_demo_solution_test 07_demo_solution)
if(TARGET 06_x_solution_kernels)
  message(STATUS "with 06")
elseif(OTHER)
  message(STATUS "other")
else()
  message(STATUS "without 06")
endif()
if(TARGET 06_x_solution_kernels)
  message(STATUS "only with 06")
endif()
set_property(TARGET 07_demo 07_demo_solution APPEND PROPERTY BUILD_RPATH "/x")
"""
    expected_lines = [
        "foreach(kind starter)",
        "  target_compile_options(07_demo_${kind}_kernels PRIVATE -x)",
        "foreach(exe 07_demo)",
        "  add_test(NAME L07.cli.${exe}.usage COMMAND $<TARGET_FILE:${exe}> --bad)",
        "if(COURSE_NCU)",
        'add_test(NAME L07.kept COMMAND $<TARGET_FILE:07_demo> "a ) quoted" [[bracket ( ]])',
        "set_tests_properties(L07.kept PROPERTIES TIMEOUT 5)",
        'target_compile_definitions(07_demo_tests PRIVATE DIR="$<TARGET_FILE_DIR:07_demo>")',
        "if(OTHER)",
        '  message(STATUS "other")',
        "else()",
        '  message(STATUS "without 06")',
        'set_property(TARGET 07_demo APPEND PROPERTY BUILD_RPATH "/x")',
    ]
    absent = ["07_demo_solution", "_run", "L07.profile.one PROPERTIES", "add_dependencies",
              "only with 06", 'message(STATUS "with 06")', "set(before"]
    out = starter_only(source, "demo/CMakeLists.txt")
    body = out.split("\n\n", 1)[1]
    failures = [f"missing: {line!r}" for line in expected_lines if line not in body.splitlines()]
    failures += [f"should be gone: {text!r}" for text in absent if text in body]
    for bad, words in [("course_add_lesson(a b)\ncourse_add_lesson(c d)\n", "found 2"),
                       ("course_add_lesson(a b)\nif(NOT TARGET 01_a_solution)\nendif()\n", "NOT"),
                       ("course_add_lesson(a b)\nforeach(x a)\n", "never closed"),
                       ('course_add_lesson(a "b)\n', "unterminated")]:
        try:
            starter_only(bad, "x")
            failures.append(f"accepted: {bad!r}")
        except FilterError as error:
            if words not in str(error):
                failures.append(f"{bad!r}: {error} (expected {words!r})")
    # Every lesson of the course filters (checked on the real files when they are there).
    lessons = Path(__file__).resolve().parent.parent / "lessons"
    for path in sorted(lessons.glob("[0-9][0-9]_*/CMakeLists.txt")):
        try:
            text = starter_only(path.read_text(encoding="utf-8"), str(path))
        except FilterError as error:
            failures.append(f"{path}: {error}")
            continue
        rest = text.split("\n\n", 1)[1]
        if SOLUTION_NAME.search(rest):
            failures.append(f"{path}: a solution target is left: {SOLUTION_NAME.search(rest)[0]}")
    if failures:
        print("self-test FAILED:\n  " + "\n  ".join(failures) + "\n--- output ---\n" + out)
        return 1
    print("self-test passed")
    return 0


def main(argv: list[str]) -> int:
    if argv == ["--self-test"]:
        return self_test()
    if len(argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    source, output = Path(argv[0]), Path(argv[1])
    try:
        text = starter_only(source.read_text(encoding="utf-8"), str(source))
    except (OSError, FilterError) as error:
        print(f"{source}: {error}", file=sys.stderr)
        return 1
    output.parent.mkdir(parents=True, exist_ok=True)
    if not output.exists() or output.read_text(encoding="utf-8") != text:
        with tempfile.NamedTemporaryFile("w", dir=output.parent, delete=False,
                                         encoding="utf-8") as handle:
            handle.write(text)
        Path(handle.name).replace(output)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
