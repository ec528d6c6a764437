#!/usr/bin/env python3
"""Runs one program under one compute-sanitizer tool and decides pass or fail.

    tools/sanitize.py --sanitizer PATH --tool TOOL [--cuobjdump PATH] [--log FILE]
                      -- PROGRAM [ARGS...]

Exit status: 0 clean, 1 errors (or the program failed), 77 when the program itself
skipped (no suitable GPU), 2 for bad usage.

Why a wrapper and not the bare tool: the output can run to thousands of reports. The
wrapper streams it, counts every error by its headline, prints the first few reports in
full and a count of the rest, and writes everything to --log. A run passes only with an
"ERROR SUMMARY: 0 errors" (or racecheck's summary with 0 errors) and the program's own
exit status 0.

One limitation of the tool is handled, openly. Compute Sanitizer 2025.4's release notes
say: "Fixed an issue where synccheck would report false positives when using
cp.async.mbarrier.arrive without .noinc" (the fix also needs a 13.1 or newer compiler).
CUDA 13.0 ships 2025.3, and CCCL's cuda::memcpy_async with a cuda::barrier, and
cuda::pipeline's producer_commit, emit exactly that instruction: synccheck reports
"Barrier error detected. Missing wait." for every thread of such a kernel and then
aborts it (tests/sanitizer/synccheck_probe.cu shows both on a minimal kernel, and a
sanitize test fails as soon as a tool no longer does). So for synccheck older than
2025.4 the wrapper reads the program's PTX (cuobjdump -ptx), finds the kernels that
contain cp.async.mbarrier.arrive without .noinc, prints them, and excludes exactly those
from synccheck (--kernel-name-exclude): they still run, and memcheck, racecheck and
initcheck still check them. Every other kernel gets the full synccheck.
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
ERROR_EXIT = 99  # --error-exitcode: the tool's exit status when it counted any error
REPORTS_SHOWN = 8  # full error reports echoed to the test log (all of them go to --log)


@dataclass
class Verdict:
    ok: bool
    reason: str


@dataclass
class Scan:
    """What one sanitizer run printed, counted line by line."""
    error_summary: int | None = None        # "ERROR SUMMARY: N errors"
    racecheck_warnings: int = 0             # "(N errors, M warnings)" of racecheck's summary
    headlines: dict[str, int] = field(default_factory=dict)  # error headline -> count
    untrustworthy: list[str] = field(default_factory=list)

    def feed(self, line: str) -> None:
        text = line.rstrip("\n")
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
            w = re.search(r"(\d+) warnings?", body)
            self.racecheck_warnings += int(w.group(1)) if w else 0
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


def expected_reports(scan: Scan, expected_api_errors: tuple[str, ...]) -> int:
    """How many reports are "Program hit <NAME> ..." for a NAME the lesson expects."""
    return sum(count for headline, count in scan.headlines.items()
               if any(headline.startswith(f"Program hit {name} ") for name in expected_api_errors))


def judge(returncode: int, scan: Scan, warnings_fail: bool = False,
          expected_api_errors: tuple[str, ...] = ()) -> Verdict:
    """The decision, kept free of I/O so that CPU tests can check every branch.
    With `warnings_fail`, a racecheck warning fails like an error: some real races (a
    write-after-read between warps that rarely meet, say) are only reported as warnings.
    `expected_api_errors`: CUDA error names a CUDA call of the program returns on purpose
    (lesson 16 shows what a second cudaDeviceEnablePeerAccess returns) or that a library
    returns to itself (NCCL probing for kernel images); their "Program hit" reports do not
    count. Every CUDA call of the course is checked by the program itself anyway."""
    expected = expected_reports(scan, expected_api_errors)
    if scan.untrustworthy:
        return Verdict(False, "the tool says its own results cannot be trusted: " +
                       "; ".join(sorted(set(scan.untrustworthy))))
    if scan.error_summary is None:
        return Verdict(False, f"no 'ERROR SUMMARY' line: the tool did not finish "
                              f"(exit status {returncode})")
    if scan.error_summary - expected > 0:
        listed = ", ".join(f"{n} x '{h}'" for h, n in scan.headlines.items()) or "none printed"
        hint = ""
        if KNOWN_FALSE_POSITIVE in scan.headlines:
            hint = (" ('Missing wait' from a kernel that was not excluded: either a real "
                    "missing wait, or a kernel the PTX scan did not attribute)")
        return Verdict(False, f"{scan.error_summary} errors ({listed}){hint}")
    if warnings_fail and scan.racecheck_warnings > 0:
        return Verdict(False, f"{scan.racecheck_warnings} racecheck warning(s): a hazard that "
                              "may be a real race (see the first report above)")
    if returncode == ERROR_EXIT and expected > 0 and scan.error_summary == expected:
        return Verdict(True, f"clean: 0 errors besides {expected} expected API error report(s)")
    if returncode != 0:
        return Verdict(False, f"no sanitizer errors, but the program exited {returncode}")
    return Verdict(True, "clean: 0 errors")


def kernels_synccheck_cannot_check(ptx: str) -> tuple[list[str], list[str]]:
    """Kernels (mangled .entry names) whose PTX holds cp.async.mbarrier.arrive without
    .noinc, and the names of non-kernel .func bodies that hold it (which cannot be
    attributed to a kernel from the text alone)."""
    entries: list[str] = []
    funcs: list[str] = []
    current: tuple[str, str] | None = None
    for line in ptx.splitlines():
        m = re.search(r"\.(entry|func)\s+(?:\([^)]*\)\s*)?([A-Za-z_$][\w$]*)", line)
        if m:
            current = (m.group(1), m.group(2))
            continue
        if current and "cp.async.mbarrier.arrive" in line and ".noinc" not in line:
            kind, name = current
            target = entries if kind == "entry" else funcs
            if name not in target:
                target.append(name)
    return entries, funcs


def tool_arguments(tool: str, excluded: list[str]) -> list[str]:
    # Every error is printed (and counted: see judge), without host backtraces, which
    # would add a dozen lines to each report.
    args = ["--tool", tool, "--error-exitcode", str(ERROR_EXIT), "--print-limit", "0",
            "--show-backtrace", "device"]
    if tool == "memcheck":
        args += ["--leak-check", "full"]
    if tool == "synccheck":
        # The lessons carve their mbarriers out of shared memory the tool's automatic
        # count does not see (lesson 08 has one per warp); too small a table overflows.
        args += ["--num-cuda-barriers", "64"]
    if excluded:
        args += ["--kernel-name-exclude", "regex=(" + "|".join(excluded) + ")"]
    return args


def exclusions(cuobjdump: str | None, program: str) -> list[str]:
    """The kernels of `program` to keep out of an old synccheck, printed as it goes."""
    if not cuobjdump:
        print("sanitize.py: no cuobjdump given: no kernel is excluded from synccheck")
        return []
    proc = subprocess.run([cuobjdump, "-ptx", program], capture_output=True, text=True,
                          timeout=120)
    if proc.returncode != 0:
        print(f"sanitize.py: cuobjdump -ptx {program} failed: no kernel is excluded\n"
              f"{proc.stderr.strip()}")
        return []
    entries, funcs = kernels_synccheck_cannot_check(proc.stdout)
    for name in funcs:
        print(f"sanitize.py: WARNING: cp.async.mbarrier.arrive without .noinc in the "
              f"non-kernel function {name}: its callers are NOT excluded")
    print(f"sanitize.py: excluded from synccheck: {len(entries)} kernel(s) with "
          "cp.async.mbarrier.arrive without .noinc, which synccheck before 2025.4 reports "
          "falsely (see tools/sanitize.py):")
    for name in entries:
        print(f"sanitize.py:   {demangle(name)}")
    return entries


def demangle(name: str) -> str:
    try:
        return subprocess.run(["c++filt", name], capture_output=True, text=True,
                              timeout=30).stdout.strip() or name
    except (OSError, subprocess.SubprocessError):
        return name


def main(argv: list[str]) -> int:
    args, program = parse_arguments(argv)
    try:
        version_text = subprocess.run([args.sanitizer, "--version"], capture_output=True,
                                      text=True, timeout=60).stdout
    except (OSError, subprocess.SubprocessError) as exc:
        print(f"sanitize.py: cannot run {args.sanitizer}: {exc}", file=sys.stderr)
        return 1
    version = parse_version(version_text)
    excluded: list[str] = []
    if args.tool == "synccheck" and (version is None or version < FIXED_IN):
        excluded = exclusions(args.cuobjdump, program[0])
    command = [args.sanitizer, *tool_arguments(args.tool, excluded), *program]
    print("sanitize.py:", " ".join(command), f"(tool version {version})", flush=True)
    returncode, scan = run_and_scan(command, args.log)
    return report(returncode, scan, args.warnings_fail, tuple(args.expected_api_error))


def parse_arguments(argv: list[str]) -> tuple[argparse.Namespace, list[str]]:
    """The options, and the program's command line (what follows --)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sanitizer", required=True)
    parser.add_argument("--tool", required=True,
                        choices=["memcheck", "racecheck", "synccheck", "initcheck"])
    parser.add_argument("--log", help="write the tool's whole output here")
    parser.add_argument("--cuobjdump", help="cuobjdump, to read the program's PTX (synccheck)")
    parser.add_argument("--warnings-fail", action="store_true",
                        help="a racecheck warning fails the run too (the student's check)")
    parser.add_argument("--expected-api-error", action="append", default=[], metavar="NAME",
                        help="a CUDA error name whose 'Program hit' reports do not count")
    parser.add_argument("program", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given (put it after --)")
    return args, program


class ReportEcho:
    """Echoes the tool's output as it comes, but only the first REPORTS_SHOWN error reports
    in full: the Scan counts the others, which are not shown."""

    def __init__(self, scan: Scan):
        self.scan = scan
        self.shown_reports = 0
        self.in_report = False

    def feed(self, line: str) -> None:
        before = sum(self.scan.headlines.values())
        self.scan.feed(line)
        if sum(self.scan.headlines.values()) > before:  # a new error report starts
            self.in_report = True
            self.shown_reports += 1
            if self.shown_reports == REPORTS_SHOWN + 1:
                print("sanitize.py: further reports are counted, not shown")
        elif not line.startswith(PREFIX + " "):  # not an indented detail line
            self.in_report = False
        if not self.in_report or self.shown_reports <= REPORTS_SHOWN:
            sys.stdout.write(line)


def run_and_scan(command: list[str], log_path: str | None) -> tuple[int, Scan]:
    """Runs the sanitizer's command, echoing and scanning its output (all of it written to
    `log_path` too, when given): (its exit status, the Scan of its output)."""
    scan = Scan()
    echo = ReportEcho(scan)
    log = open(log_path, "w", encoding="utf-8") if log_path else None
    try:
        with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, errors="replace") as proc:
            assert proc.stdout is not None
            for line in proc.stdout:
                if log:
                    log.write(line)
                echo.feed(line)
            returncode = proc.wait()
    finally:
        if log:
            log.close()
    return returncode, scan


def report(returncode: int, scan: Scan, warnings_fail: bool, expected: tuple[str, ...]) -> int:
    """Prints what the tool reported and the verdict: the exit status (0 pass, 1 fail, 77 no
    GPU)."""
    for headline, count in scan.headlines.items():
        print(f"sanitize.py: {count} x {headline}")
    if returncode == SKIP and not scan.headlines:
        print("sanitize.py: SKIPPED: the program found no suitable GPU")
        return SKIP
    if expected:
        print(f"sanitize.py: {expected_reports(scan, expected)} report(s) of expected API "
              f"errors not counted ({', '.join(expected)})")
    verdict = judge(returncode, scan, warnings_fail, expected)
    print("sanitize.py:", "PASS:" if verdict.ok else "FAIL:", verdict.reason)
    return 0 if verdict.ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
