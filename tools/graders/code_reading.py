"""Reading C++ as text for the operator mutants: comments, strings and preprocessor lines
masked out, brackets matched, calls and simple statements found, with their character spans.

Every operator (graders/operators.py) finds what to change through these functions, so an
operator never matches a word in a comment or a string (the PTX of an asm statement is
code: the count and swap-args operators read its text in the unmasked source).
"""
from __future__ import annotations

import re
from dataclasses import dataclass


def mask(text: str) -> str:
    """`text` with comments, the inside of string and character literals, and preprocessor
    lines blanked (same length, newlines kept), so that patterns only ever match code."""
    out = list(text)
    i, n = 0, len(text)
    line_start = True
    while i < n:
        c = text[i]
        if c == "\n":
            line_start = True
            i += 1
        elif line_start and c in " \t":
            i += 1
        elif line_start and c == "#":
            i = blank_directive(text, out, i)
        else:
            line_start = False
            i = blank_comment_or_literal(text, out, i)
    return "".join(out)


def blank_directive(text: str, out: list[str], i: int) -> int:
    """Blanks in `out` the preprocessor line starting at `i`, with its continuation lines
    (their newlines kept); returns the index of the newline that ends it."""
    while i < len(text) and text[i] != "\n":
        out[i] = " "
        i += 2 if text.startswith("\\\n", i) else 1
    return i


def blank_comment_or_literal(text: str, out: list[str], i: int) -> int:
    """Blanks in `out` the comment, or the inside of the string or character literal, that
    starts at `i` (newlines of a block comment kept); returns the index after it (i + 1 when
    none starts there)."""
    if text.startswith("//", i):
        end = text.find("\n", i)
        end = len(text) if end < 0 else end
    elif text.startswith("/*", i):
        end = text.find("*/", i + 2)
        end = len(text) if end < 0 else end + 2
    elif text[i] in "\"'":
        return blank_literal(text, out, i)
    else:
        return i + 1
    for j in range(i, end):
        if text[j] != "\n":
            out[j] = " "
    return end


def blank_literal(text: str, out: list[str], i: int) -> int:
    """Blanks the inside of the literal whose quote is at `i` (it ends at the closing quote or
    at the end of the line); returns the index after its closing quote."""
    quote, n = text[i], len(text)
    j = i + 1
    while j < n and text[j] != quote and text[j] != "\n":
        j += 2 if text[j] == "\\" else 1
    for k in range(i + 1, min(j, n)):
        out[k] = " "
    return j + 1


CLOSING = {"(": ")", "[": "]", "{": "}"}


def match_close(masked: str, open_index: int) -> int:
    """Index of the bracket closing the one at `open_index` (-1 when unbalanced)."""
    depth = 0
    for i in range(open_index, len(masked)):
        c = masked[i]
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                return i
    return -1


def split_args(masked: str, open_index: int, close_index: int) -> list[tuple[int, int]]:
    """The (start, end) spans of the comma-separated arguments between two brackets,
    whitespace trimmed."""
    spans = []
    depth = 0
    start = open_index + 1
    for i in range(open_index + 1, close_index + 1):
        c = masked[i]
        if c in "([{":
            depth += 1
        elif c in ")]}" and i != close_index:
            depth -= 1
        if (c == "," and depth == 0) or i == close_index:
            a, b = start, i
            while a < b and masked[a].isspace():
                a += 1
            while b > a and masked[b - 1].isspace():
                b -= 1
            if b > a:
                spans.append((a, b))
            start = i + 1
    return spans


def skip_template_args(masked: str, i: int) -> int:
    """When masked[i] (after spaces) opens a template argument list, the index after its
    closing '>'; otherwise i."""
    j = i
    while j < len(masked) and masked[j] in " \t":
        j += 1
    if j >= len(masked) or masked[j] != "<":
        return i
    depth = 0
    for k in range(j, len(masked)):
        if masked[k] == "<":
            depth += 1
        elif masked[k] == ">":
            depth -= 1
            if depth == 0:
                return k + 1
        elif masked[k] in ";{}":
            return i
    return i


KEYWORDS_BEFORE_CALL = {"return", "else", "do", "case", "throw", "co_return", "sizeof", "not",
                        "and", "or", "new", "delete"}


def is_declaration(masked: str, name_start: int) -> bool:
    """Whether the name at `name_start` is being declared or defined (a type name or a
    specifier comes right before it: `void commit_group()`) rather than called."""
    j = name_start - 1
    while j >= 0 and masked[j] in " \t\n":
        j -= 1
    if j < 0:
        return False
    if masked[j] == ">":  # `std::vector<int> f(` -- or `a > f(`: only a type when a word
        return bool(re.search(r"[\w:]+<[\w:, *]*>$", masked[max(0, j - 60):j + 1]))
    if masked[j] == "*" or masked[j] == "&":
        k = j - 1
        while k >= 0 and masked[k] in " \t":
            k -= 1
        return k >= 0 and (masked[k].isalnum() or masked[k] == "_") and bool(
            re.search(r"\b(?:const|void|char|int|unsigned|bool|float|double|auto|"
                      r"[A-Z]\w*|std::\w+|cuda\w*_t|\w+_t)\s*[*&]$",
                      masked[max(0, k - 40):j + 1]))
    if masked[j].isalnum() or masked[j] == "_":
        word = re.search(r"(\w+)$", masked[:j + 1]).group(1)
        return word not in KEYWORDS_BEFORE_CALL
    return False


@dataclass
class Call:
    name_start: int
    name_end: int   # end of the name (before any template argument list)
    open: int       # index of '('
    close: int      # index of the matching ')'
    args: list[tuple[int, int]]


def find_calls(masked: str, name: str, lo: int, hi: int, method: bool | None = None) -> list[Call]:
    """Calls of `name` (a regular expression for the last name component) starting in
    [lo, hi): `ns::name<T>(...)`, `obj.name(...)`; not declarations. `method`: True only
    `obj.name(`, False only free calls, None both."""
    calls = []
    for m in re.finditer(r"(?<![\w])(" + name + r")\b", masked[lo:hi]):
        start = lo + m.start(1)
        before = masked[start - 1] if start > 0 else " "
        is_method = before == "." or (before == ">" and masked[start - 2:start] == "->")
        if method is True and not is_method:
            continue
        if method is False and is_method:
            continue
        after = skip_template_args(masked, lo + m.end(1))
        k = after
        while k < len(masked) and masked[k] in " \t\n":
            k += 1
        if k >= len(masked) or masked[k] != "(":
            continue
        qualified = start
        while qualified >= 2 and masked[qualified - 2:qualified] == "::":
            q = re.search(r"(\w+)$", masked[:qualified - 2])
            if not q:
                break
            qualified = q.start(1)
        if not is_method and is_declaration(masked, qualified):
            continue
        close = match_close(masked, k)
        if close < 0:
            continue
        calls.append(Call(start, lo + m.end(1), k, close, split_args(masked, k, close)))
    return calls


@dataclass
class Statement:
    start: int     # first character of the statement
    end: int       # one past its ';'
    header: str    # a guarding `if (...)`/`else` prefix on the statement itself, masked


def statements(masked: str, lo: int, hi: int) -> list[Statement]:
    """The simple statements (ending in ';' at bracket depth 0) in [lo, hi), in order. A
    statement guarded by a brace-less `if (...)` includes its header. Statements inside a
    lambda's braces are part of the enclosing call's statement."""
    found = []
    depth = 0
    start = lo
    i = lo
    while i < hi:
        c = masked[i]
        if c in "([":
            depth += 1
        elif c in ")]":
            depth -= 1
        elif c == "{" and depth == 0:
            start = i + 1
        elif c == "}" and depth == 0:
            start = i + 1
        elif c == "{" or c == "}":
            pass
        elif c == ";" and depth == 0:
            a = start
            while a < i and masked[a].isspace():
                a += 1
            if a < i:
                header = ""
                m = re.match(r"(?:else\s+)?(?:if\s*(?:constexpr\s*)?\(|else\b)", masked[a:i])
                if m:
                    if masked[a:i].lstrip().startswith("else") and not re.match(
                            r"else\s+if", masked[a:i]):
                        header = "else"
                    else:
                        paren = masked.index("(", a)
                        close = match_close(masked, paren)
                        header = masked[a:close + 1] if 0 < close < i else ""
                found.append(Statement(a, i + 1, header))
            start = i + 1
        i += 1
    return found


def top_level_assignment(masked: str) -> bool:
    """Whether `masked` (one statement) assigns or declares at bracket depth 0."""
    depth = 0
    for i, c in enumerate(masked):
        if c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif c == "=" and depth == 0:
            prev = masked[i - 1] if i > 0 else ""
            nxt = masked[i + 1] if i + 1 < len(masked) else ""
            if prev not in "=!<>" and nxt != "=":
                return True
    return False


def compact(text: str) -> str:
    """Code with its whitespace collapsed, for ids and descriptions."""
    return re.sub(r"\s+", " ", text).strip().replace("( ", "(").replace(" )", ")")


def key_text(text: str, limit: int = 48) -> str:
    """A short key for an id: no spaces, at most `limit` characters."""
    text = re.sub(r"\s+", "", text)
    return text if len(text) <= limit else text[:limit - 1] + "~"
