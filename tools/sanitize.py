#!/usr/bin/env python3
"""Runs one program under one compute-sanitizer tool and decides pass or fail.

    tools/sanitize.py --sanitizer PATH --tool TOOL [--log FILE] -- PROGRAM [ARGS...]

Exit status: 0 clean, 1 errors (or the program failed), 77 when the program itself
skipped (no suitable GPU), 2 for bad usage.

Why a wrapper and not the bare tool: the bare tool's exit status cannot tell a known
false positive of the tool from a real error, and its output can run to millions of
lines. The wrapper streams the output, counts every error by its headline, prints the
first few reports in full and a summary of the rest, and writes everything to --log.

One known false positive is set aside, and only this one. Compute Sanitizer 2025.4's
release notes say: "Fixed an issue where synccheck would report false positives when
using cp.async.mbarrier.arrive without .noinc" (the fix needs a 13.1 or newer compiler).
CCCL's cuda::memcpy_async with a cuda::barrier, and cuda::pipeline's producer_commit,
emit exactly that instruction, so on CUDA 13.0 synccheck reports "Barrier error
detected. Missing wait." for correct code (tests/sanitizer/synccheck_probe.cu shows it
on a minimal kernel). The wrapper accepts a synccheck run whose errors are ALL of that
one kind, with a tool older than 2025.4, and only when the program itself printed
"RESULT: PASS" (its values were checked). Any other error, or any error at all from a
newer tool, fails. Racecheck still checks the same kernels for the data hazards a real
missing wait would cause.
"""
from __future__ import annotations

import argparse
import re
import subprocess
import sys
from dataclasses import dataclass, field

SKIP = 77
PREFIX = "========= "
KNOWN_FALSE_POSITIVE = "Barrier error detected. Missing wait."
FIXED_IN = (2025, 4)
# Tool messages that mean its results cannot be trusted, whatever the error count says.
UNTRUSTWORTHY = (
    "Detected overflow of tracked cuda::barrier structures",
    "Internal Sanitizer Error",
)
REPORTS_SHOWN = 8  # full error reports echoed to the test log (all of them go to --log)


@dataclass
class Verdict:
    ok: bool
    reason: str


@dataclass
class Scan:
    """What one sanitizer run printed, counted line by line."""
    error_summary: int | None = None        # "ERROR SUMMARY: N errors"
    headlines: dict[str, int] = field(default_factory=dict)  # error headline -> count
    untrustworthy: list[str] = field(default_factory=list)
    program_passed: bool = False            # the program printed "RESULT: PASS"

    def feed(self, line: str) -> None:
        text = line.rstrip("\n")
        if text.startswith("RESULT: PASS"):
            self.program_passed = True
        for marker in UNTRUSTWORTHY:
            if marker in text:
                self.untrustworthy.append(marker)
        if not text.startswith(PREFIX):
            return
        body = text[len(PREFIX):]
        m = re.match(r"ERROR SUMMARY: (\d+) errors?", body)
        if m:
            self.error_summary = int(m.group(1))
            return
        # racecheck: "RACECHECK SUMMARY: 3 hazards displayed (2 errors, 1 warnings)"
        m = re.match(r"RACECHECK SUMMARY: \d+ hazards? displayed \((\d+) errors?", body)
        if m:
            self.error_summary = max(self.error_summary or 0, int(m.group(1)))
            return
        # An error report starts with an unindented headline such as "Invalid __global__
        # read of size 16 bytes" or "Barrier error detected. Missing wait."; its details
        # follow, indented.
        if body and not body[0].isspace() and is_error_headline(body):
            self.headlines[body] = self.headlines.get(body, 0) + 1


def is_error_headline(body: str) -> bool:
    return bool(re.match(
        r"(Barrier error detected|Invalid |Uninitialized |Potential (RAW|WAR|WAW) hazard|"
        r"Race reported|Leaked |Program hit |Malloc/Free error|Misaligned |Out-of-range|"
        r"Illegal |Hardware exception|Error:)", body))


def parse_version(text: str) -> tuple[int, int] | None:
    m = re.search(r"Version (\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else None


def judge(tool: str, returncode: int, scan: Scan, version: tuple[int, int] | None) -> Verdict:
    """The decision, kept free of I/O so that CPU tests can check every branch."""
    if returncode == SKIP and not scan.headlines:
        return Verdict(False, "skipped: the program found no suitable GPU")
    if scan.untrustworthy:
        return Verdict(False, "the tool says its own results cannot be trusted: " +
                       "; ".join(sorted(set(scan.untrustworthy))))
    if scan.error_summary is None:
        return Verdict(False, f"no 'ERROR SUMMARY' line: the tool did not finish "
                              f"(exit status {returncode})")
    if scan.error_summary == 0:
        if returncode != 0:
            return Verdict(False, f"no sanitizer errors, but the program exited {returncode}")
        return Verdict(True, "clean: 0 errors")
    known = scan.headlines.get(KNOWN_FALSE_POSITIVE, 0)
    others = {h: n for h, n in scan.headlines.items() if h != KNOWN_FALSE_POSITIVE}
    if tool != "synccheck" or others or known != scan.error_summary:
        listed = ", ".join(f"{n} x '{h}'" for h, n in scan.headlines.items()) or "none printed"
        return Verdict(False, f"{scan.error_summary} errors ({listed})")
    if version is None or version >= FIXED_IN:
        return Verdict(False, f"{known} x '{KNOWN_FALSE_POSITIVE}' from a tool that has the "
                              f"fix (version {version}): treat them as real")
    if not scan.program_passed:
        return Verdict(False, f"{known} x '{KNOWN_FALSE_POSITIVE}' and the program did not "
                              "print RESULT: PASS")
    return Verdict(True, f"clean apart from {known} x '{KNOWN_FALSE_POSITIVE}', the known "
                         f"false positive of synccheck {version[0]}.{version[1]} on "
                         "cp.async.mbarrier.arrive (fixed in 2025.4): see tools/sanitize.py")


def tool_arguments(tool: str) -> list[str]:
    # Every error is printed (and counted: see judge), without host backtraces, which
    # would add a dozen lines to each report.
    args = ["--tool", tool, "--error-exitcode", "99", "--print-limit", "0",
            "--show-backtrace", "device"]
    if tool == "memcheck":
        args += ["--leak-check", "full"]
    if tool == "synccheck":
        # The lessons carve their mbarriers out of shared memory the tool's automatic
        # count does not see (lesson 08 has one per warp); too small a table overflows.
        args += ["--num-cuda-barriers", "64"]
    return args


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sanitizer", required=True)
    parser.add_argument("--tool", required=True,
                        choices=["memcheck", "racecheck", "synccheck", "initcheck"])
    parser.add_argument("--log", help="write the tool's whole output here")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given (put it after --)")

    try:
        version_text = subprocess.run([args.sanitizer, "--version"], capture_output=True,
                                      text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"sanitize.py: cannot run {args.sanitizer}: {exc}", file=sys.stderr)
        return 1
    version = parse_version(version_text)
    command = [args.sanitizer, *tool_arguments(args.tool), *program]
    print("sanitize.py:", " ".join(command), f"(tool version {version})", flush=True)

    scan = Scan()
    shown_reports = 0
    in_report = False
    log = open(args.log, "w", encoding="utf-8") if args.log else None
    try:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if log:
                    log.write(line)
                before = sum(scan.headlines.values())
                scan.feed(line)
                if sum(scan.headlines.values()) > before:  # a new error report starts
                    in_report = True
                    shown_reports += 1
                    if shown_reports == REPORTS_SHOWN + 1:
                        print("sanitize.py: further reports are counted, not shown")
                elif not line.startswith(PREFIX + " "):  # not an indented detail line
                    in_report = False
                if not in_report or shown_reports <= REPORTS_SHOWN:
                    sys.stdout.write(line)
            returncode = proc.wait()
    finally:
        if log:
            log.close()

    for headline, count in scan.headlines.items():
        print(f"sanitize.py: {count} x {headline}")
    verdict = judge(args.tool, returncode, scan, version)
    if returncode == SKIP and not scan.headlines:
        print("sanitize.py: SKIPPED:", verdict.reason)
        return SKIP
    print("sanitize.py:", "PASS:" if verdict.ok else "FAIL:", verdict.reason)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
