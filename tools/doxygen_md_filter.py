#!/usr/bin/env python3
"""Doxygen's input filter for Markdown: picture links that work on GitHub also work in the site.

    tools/doxygen_md_filter.py FILE.md     FILE.md on stdout, its picture links rewritten
    tools/doxygen_md_filter.py --self-test

A lesson README links a picture relative to itself, `![...](../../docs/results/<gpu>/x.png)`
or `![...](../../docs/figures/x.svg)`, which GitHub and editors resolve. Doxygen 1.9 does not:
it looks an image up in IMAGE_PATH by a path that must end the image's folder, which
`../../` never does, and otherwise writes the link into the page unchanged, where it points
nowhere (the site is in build/<preset>/docs/html). Every docs/results folder and docs/figures
are in IMAGE_PATH and picture names are unique across them (tools/results_table.py checks
it), so the file name alone is enough: this filter keeps only that. Nothing else changes,
not even line breaks, so Doxygen's line numbers stay right. docs/Doxyfile.in runs it on
every *.md (FILTER_PATTERNS).

Each README and NOTES starts with a line that links its other edition (English, 中文), then a
blank line and the title. Doxygen takes a page's title from its first line only, so the filter
swaps the edition line and the title: the title comes first, the link right below it, and the
line count stays the same. The link itself names the other edition's page (`@ref`): Doxygen
finds a bare `README.zh.md` by its file name alone, and every lesson has one.
"""
import re
import sys
from pathlib import Path

# ![caption](any ../ then docs/results/<folder>/ or docs/figures/ ) -> ![caption](
PICTURE = re.compile(r"(!\[[^\]]*\]\()(?:\.\./)*docs/(?:results/[^/)\s]+|figures)/")


# Line 1 of either edition (tools/translation_check.py writes the rule).
EDITION = re.compile(r"^(\*\*English\*\* · \[中文\]\([^)]*\)|\[English\]\([^)]*\) · \*\*中文\*\*)$")


# An inline code span right beside a non-ASCII character (Chinese text and its full-width
# punctuation: `、`cp.async`（`): Doxygen 1.9 takes that character for part of a word and does
# not see the span, so the filter puts a space between them (outside fenced code blocks).
CODE_SPAN = re.compile(r"`[^`\n]+`")


def space_code_spans(line):
    def spaced(m):
        before = " " if m.start() > 0 and ord(line[m.start() - 1]) > 127 else ""
        after = " " if m.end() < len(line) and ord(line[m.end()]) > 127 else ""
        return before + m.group(0) + after

    return CODE_SPAN.sub(spaced, line)


ROOT = Path(__file__).resolve().parent.parent
TITLE_ANCHOR = re.compile(r"\{#([A-Za-z0-9_-]+)\}\s*$")


def other_edition_page(path, title):
    """The Doxygen page of the other edition of `path` (a README or NOTES with title `title`):
    the title's anchor with or without _zh, else the name Doxygen gives a Markdown file without
    one (md_ and its path from the root, / and . as _), the top README being the main page."""
    chinese = path.name.endswith(".zh.md")
    anchor = TITLE_ANCHOR.search(title)
    if anchor:
        name = anchor.group(1)
        return name[:-3] if chinese else name + "_zh"
    other = path.with_name(path.name[:-6] + ".md" if chinese else path.name[:-3] + ".zh.md")
    try:
        relative = other.resolve().relative_to(ROOT).as_posix()
    except ValueError:
        relative = other.name
    return "index" if relative == "README.md" else "md_" + re.sub(r"[/.]", "_", relative[:-3])


def rewrite(text, path=None):
    lines = text.split("\n")
    if len(lines) > 2 and EDITION.match(lines[0]) and not lines[1] and lines[2].startswith("# "):
        if path is not None:
            lines[0] = re.sub(r"\]\([^)]*\)", f"](@ref {other_edition_page(path, lines[2])})",
                              lines[0])
        lines[0], lines[2] = lines[2], lines[0]
    fenced = False
    for i, line in enumerate(lines):
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
        elif not fenced:
            lines[i] = space_code_spans(line)
    return PICTURE.sub(r"\1", "\n".join(lines))


def self_test():
    cases = [
        ("![A (GPU)](../../docs/results/nvidia-h200/14_x-nvidia-h200.svg)",
         "![A (GPU)](14_x-nvidia-h200.svg)"),
        ("see ![B](../../docs/figures/06_pipeline_stages.svg) here",
         "see ![B](06_pipeline_stages.svg) here"),
        ("![C](docs/results/nvidia-h100-80gb-hbm3-x2/16_p.png)", "![C](16_p.png)"),
        # Not pictures of docs/: left alone.
        ("[a link](../../docs/results/nvidia-h200/results.md)",
         "[a link](../../docs/results/nvidia-h200/results.md)"),
        ("![D](https://example.org/docs/figures/x.svg)", "![D](https://example.org/docs/figures/x.svg)"),
        ("`docs/results/<gpu>/` in text\n", "`docs/results/<gpu>/` in text\n"),
        # The edition line goes below the title, which Doxygen wants on line 1.
        ("**English** · [中文](README.zh.md)\n\n# Lesson 03 {#lesson03}\ntext",
         "# Lesson 03 {#lesson03}\n\n**English** · [中文](README.zh.md)\ntext"),
        ("[English](NOTES.md) · **中文**\n\n# 笔记\n", "# 笔记\n\n[English](NOTES.md) · **中文**\n"),
        # Code spans beside Chinese get a space, so that Doxygen sees them; code blocks do not.
        ("为`cp.async`、`x`（y）", "为 `cp.async` 、 `x` （y）"),
        ("```\n为`a`\n```\n", "```\n为`a`\n```\n"),
    ]
    pages = [  # the edition line names the other edition's page
        ("lessons/03_cuda_barrier/README.md", "**English** · [中文](README.zh.md)\n\n# L03 {#lesson03}\n",
         "# L03 {#lesson03}\n\n**English** · [中文](@ref lesson03_zh)\n"),
        ("lessons/03_cuda_barrier/README.zh.md", "[English](README.md) · **中文**\n\n# 第 03 课 {#lesson03_zh}\n",
         "# 第 03 课 {#lesson03_zh}\n\n[English](@ref lesson03) · **中文**\n"),
        ("solutions/03_cuda_barrier/NOTES.md", "**English** · [中文](NOTES.zh.md)\n\n# Notes\n",
         "# Notes\n\n**English** · [中文](@ref md_solutions_03_cuda_barrier_NOTES_zh)\n"),
        ("README.zh.md", "[English](README.md) · **中文**\n\n# 课程\n",
         "# 课程\n\n[English](@ref index) · **中文**\n"),
    ]
    for relative, given, expected in pages:
        got = rewrite(given, ROOT / relative)
        if got != expected:
            print(f"self-test FAILED: {relative}: {given!r} -> {got!r}, expected {expected!r}")
            return 1
    for given, expected in cases:
        if rewrite(given) != expected:
            print(f"self-test FAILED: {given!r} -> {rewrite(given)!r}, expected {expected!r}")
            return 1
    print("self-test passed")
    return 0


def main():
    if sys.argv[1:] == ["--self-test"]:
        return self_test()
    if len(sys.argv) != 2:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    with open(sys.argv[1], encoding="utf-8") as handle:
        sys.stdout.write(rewrite(handle.read(), Path(sys.argv[1])))
    return 0


if __name__ == "__main__":
    sys.exit(main())
