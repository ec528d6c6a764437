"""The tour's bookkeeping: what each lesson executable said, and the summary table.

Every lesson executable ends with a `HEADLINE: ...` line (the figure the tour
quotes) and `RESULT: PASS` or `RESULT: FAIL`, and exits 0 (pass), 1 (verification
failed), 2 (usage error) or 77 (cannot run here).
"""

import re
import textwrap
from dataclasses import dataclass

RESULT_RE = re.compile(r"^\s*RESULT:\s*(PASS|FAIL)\b")
HEADLINE_RE = re.compile(r"^\s*HEADLINE:\s*(.*?)\s*$")


@dataclass
class LessonRun:
    """One row of the tour's summary."""

    number: str
    title: str
    verdict: str  # PASS, FAIL, SKIP(77) or ERROR(<exit code>)
    headline: str


def parse_output(lines: list[str]) -> tuple[str | None, str | None]:
    """The last RESULT (PASS/FAIL) and the last HEADLINE text in a program's output."""
    result = None
    headline = None
    for line in lines:
        result_match = RESULT_RE.match(line)
        if result_match:
            result = result_match.group(1)
        headline_match = HEADLINE_RE.match(line)
        if headline_match:
            headline = headline_match.group(1)
    return result, headline


def verdict(exit_code: int, result: str | None) -> str:
    """PASS, FAIL, SKIP(77) or ERROR(code) from the exit code and the RESULT line.

    A pass needs both: exit code 0 and `RESULT: PASS`.
    """
    if exit_code == 77:
        return "SKIP(77)"
    if exit_code == 0 and result == "PASS":
        return "PASS"
    if exit_code == 1 or (exit_code == 0 and result == "FAIL"):
        return "FAIL"
    return f"ERROR({exit_code})"


def lesson_run(number: str, title: str, exit_code: int, lines: list[str]) -> LessonRun:
    """The summary row for a lesson executable that exited with `exit_code`."""
    result, headline = parse_output(lines)
    outcome = verdict(exit_code, result)
    if headline is None:
        if outcome == "SKIP(77)" and lines:
            headline = lines[-1].strip()  # the reason it cannot run here
        elif result is None:
            headline = "(no RESULT line)"
        else:
            headline = "(no HEADLINE line)"
    return LessonRun(number, title, outcome, headline)


def summary_table(runs: list[LessonRun], width: int = 100) -> str:
    """The one-screen table printed at the end of the tour."""
    title_width = max([len("title")] + [len(run.title) for run in runs])
    title_width = min(title_width, 44)
    header = f"{'lesson':<6}  {'title':<{title_width}}  {'verdict':<9}  headline"
    indent = " " * (6 + 2 + title_width + 2 + 9 + 2)
    lines = [header, "-" * min(width, max(len(header), 60))]
    for run in runs:
        title = run.title if len(run.title) <= title_width else run.title[: title_width - 1] + "…"
        row = f"{run.number:<6}  {title:<{title_width}}  {run.verdict:<9}  "
        headline = textwrap.wrap(run.headline, max(width - len(indent), 30)) or [""]
        lines.append(row + headline[0])
        lines.extend(indent + more for more in headline[1:])
    passed = sum(run.verdict == "PASS" for run in runs)
    skipped = sum(run.verdict == "SKIP(77)" for run in runs)
    ending = f"; {skipped} skipped (this machine lacks what they need)" if skipped else ""
    lines.append(f"{passed} of {len(runs)} lessons passed{ending}.")
    return "\n".join(lines)


def tour_succeeded(runs: list[LessonRun]) -> bool:
    """True when every lesson passed or was skipped for what this machine lacks (a second
    GPU, a newer architecture), and at least one ran: a one-GPU student's tour succeeds."""
    return any(run.verdict == "PASS" for run in runs) and all(
        run.verdict in ("PASS", "SKIP(77)") for run in runs
    )
