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
"""
import re
import sys

# ![caption](any ../ then docs/results/<folder>/ or docs/figures/ ) -> ![caption](
PICTURE = re.compile(r"(!\[[^\]]*\]\()(?:\.\./)*docs/(?:results/[^/)\s]+|figures)/")


def rewrite(text):
    return PICTURE.sub(r"\1", text)


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
    ]
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
        sys.stdout.write(rewrite(handle.read()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
