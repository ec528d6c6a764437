"""Reading the JUnit XML file that `ctest --output-junit` writes.

ctest writes one <testcase> per test with status="run", "fail", "notrun" or
"disabled". A test skipped on purpose (GTEST_SKIP, exit code 77) is "notrun" with
<skipped message="SKIP_REGULAR_EXPRESSION_MATCHED"/> or "SKIP_RETURN_CODE=77"; a test
that could not start at all (its executable was never built) is "notrun" too, with
another message, and ctest counts that one as failed, so we do as well.
"""

import re
import xml.etree.ElementTree as ElementTree
from dataclasses import dataclass, field
from pathlib import Path

# What tests/support/gpu_test.cpp prints when a test skips because this machine has no GPU
# it can use. (A GPU too old for some tests says "has compute capability ...": the tests it
# ran still verify the work; `check` compares the GPU with the lesson's minimum itself.)
NO_GPU_MARKS = ("no usable GPU",)


@dataclass
class TestSummary:
    """The outcome of one ctest run."""

    passed: list[str] = field(default_factory=list)
    failed: list[str] = field(default_factory=list)
    skipped: list[str] = field(default_factory=list)
    # For each failed test, the TODOs its failure messages name ("[concerns TODO k]").
    todos_of_failed: dict[str, list[int]] = field(default_factory=dict)
    # The skipped tests that skipped because no usable GPU was found (decided from what the
    # test printed when it skipped, never from its name).
    skipped_for_gpu: list[str] = field(default_factory=list)
    # Every other skipped test, with the reason it printed (the line after "Skipped"; empty
    # when it printed none): `check` explains each one.
    skip_reasons: dict[str, str] = field(default_factory=dict)

    @property
    def total(self) -> int:
        return len(self.passed) + len(self.failed) + len(self.skipped)

    @property
    def verdict(self) -> str:
        """"pass", "fail", "skipped" (some work was not verified: a test skipped for want of a
        GPU, or nothing passed at all) or "no tests"."""
        if self.failed:
            return "fail"
        if self.total == 0:
            return "no tests"
        if self.skipped_for_gpu or not self.passed:
            return "skipped"
        return "pass"


def _outcome(testcase: ElementTree.Element) -> str:
    """"passed", "failed" or "skipped" for one <testcase> element."""
    status = testcase.get("status", "run")
    if testcase.find("failure") is not None or testcase.find("error") is not None:
        return "failed"
    if status == "fail":
        return "failed"
    if status == "disabled":
        return "skipped"
    skipped = testcase.find("skipped")
    if skipped is not None or status == "notrun":
        message = skipped.get("message", "") if skipped is not None else ""
        if message == "" or message.startswith("SKIP_"):
            return "skipped"
        return "failed"  # not run for another reason, e.g. "Unable to find executable"
    return "passed"


def skip_reason(output: str) -> str:
    """The message a GoogleTest skip printed: the first non-empty line after "Skipped"."""
    lines = [line.strip() for line in output.splitlines()]
    for i, line in enumerate(lines):
        if line.endswith("Skipped"):
            return next((after for after in lines[i + 1:] if after), "")
    return ""


def parse_junit_text(text: str) -> TestSummary:
    """Summarise the JUnit XML in `text`."""
    try:
        tree = ElementTree.fromstring(text)
    except ElementTree.ParseError as error:
        raise ValueError(f"not a JUnit XML file: {error}") from None
    summary = TestSummary()
    for testcase in tree.iter("testcase"):
        name = testcase.get("name", "?")
        outcome = _outcome(testcase)
        if outcome == "passed":
            summary.passed.append(name)
        elif outcome == "failed":
            summary.failed.append(name)
            output = " ".join(node.text or "" for node in testcase.iter("system-out"))
            todos = sorted({int(k) for k in re.findall(r"\[concerns TODO (\d+)\]", output)})
            if todos:
                summary.todos_of_failed[name] = todos
        else:
            summary.skipped.append(name)
            output = " ".join(node.text or "" for node in testcase.iter("system-out"))
            if any(mark in output for mark in NO_GPU_MARKS):
                summary.skipped_for_gpu.append(name)
            else:
                summary.skip_reasons[name] = skip_reason(output)
    return summary


def read_junit(path: Path) -> TestSummary | None:
    """The summary of a JUnit file, or None when it is missing or unreadable."""
    try:
        return parse_junit_text(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
