#!/usr/bin/env python3
"""CPU tests of tools/sanitize.py: every branch of its verdict, on made-up tool output,
and one end-to-end run through a stand-in for compute-sanitizer."""
from __future__ import annotations

import os
import stat
import subprocess
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tools"))
import sanitize  # noqa: E402

MISSING_WAIT = "========= Barrier error detected. Missing wait.\n" \
               "=========     at one_stage_kernel+0x1a0\n" \
               "=========     by thread (3,0,0) in block (1,0,0)\n"
DIVERGENT = "========= Barrier error detected. Divergent thread(s) in block.\n" \
            "=========     at divergent_kernel+0x80\n" \
            "=========     by thread (64,0,0) in block (0,0,0)\n"
OOB = "========= Invalid __global__ read of size 16 bytes\n" \
      "=========     at pipeline_kernel+0x300\n"


def scan_of(text: str) -> sanitize.Scan:
    scan = sanitize.Scan()
    for line in text.splitlines(keepends=True):
        scan.feed(line)
    return scan


def output(*reports: str, errors: int, passed: bool = True) -> str:
    body = "========= COMPUTE-SANITIZER\nlesson output\n"
    body += "".join(reports)
    body += "RESULT: PASS\n" if passed else "RESULT: FAIL\n"
    return body + f"========= ERROR SUMMARY: {errors} error{'s' if errors != 1 else ''}\n"


class Judge(unittest.TestCase):
    def test_clean_run_passes(self):
        v = sanitize.judge(0, scan_of(output(errors=0)))
        self.assertTrue(v.ok, v.reason)

    def test_clean_run_of_a_failing_program_fails(self):
        v = sanitize.judge(1, scan_of(output(errors=0, passed=False)))
        self.assertFalse(v.ok)

    def test_any_error_fails(self):
        v = sanitize.judge(99, scan_of(output(OOB, errors=1)))
        self.assertFalse(v.ok)
        self.assertIn("Invalid __global__ read", v.reason)

    def test_missing_wait_fails_and_says_why_it_may_be_there(self):
        v = sanitize.judge(99, scan_of(output(MISSING_WAIT * 3, errors=3)))
        self.assertFalse(v.ok)
        self.assertIn("3 x 'Barrier error detected. Missing wait.'", v.reason)
        self.assertIn("not excluded", v.reason)

    def test_missing_summary_means_the_tool_did_not_finish(self):
        v = sanitize.judge(0, scan_of("RESULT: PASS\n"))
        self.assertFalse(v.ok)
        self.assertIn("did not finish", v.reason)

    def test_barrier_table_overflow_is_never_trusted(self):
        text = "Warning: Detected overflow of tracked cuda::barrier structures.\n" + \
               output(errors=0)
        self.assertFalse(sanitize.judge(0, scan_of(text)).ok)

    def test_racecheck_summary_counts_errors(self):
        text = "========= RACECHECK SUMMARY: 2 hazards displayed (1 errors, 1 warnings)\n"
        scan = scan_of("RESULT: PASS\n" + text)
        self.assertEqual(scan.error_summary, 1)
        self.assertFalse(sanitize.judge(99, scan).ok)
        clean = scan_of("RESULT: PASS\n========= RACECHECK SUMMARY: 0 hazards displayed "
                        "(0 errors, 0 warnings)\n")
        self.assertTrue(sanitize.judge(0, clean).ok)

    def test_racecheck_warnings_fail_only_when_asked(self):
        text = ("RESULT: PASS\n========= RACECHECK SUMMARY: 1 hazard displayed "
                "(0 errors, 1 warnings)\n")
        scan = scan_of(text)
        self.assertEqual(scan.racecheck_warnings, 1)
        self.assertTrue(sanitize.judge(0, scan).ok)  # the sanitize label: errors only
        v = sanitize.judge(0, scan, warnings_fail=True)  # the student's check
        self.assertFalse(v.ok)
        self.assertIn("1 racecheck warning", v.reason)

    def test_version_parsing(self):
        text = "NVIDIA (R) Compute Sanitizer\nCopyright (c) 2020-2025 NVIDIA Corporation\n" \
               "Version 2025.3.1.0 (build 36400806) (public-release)\n"
        self.assertEqual(sanitize.parse_version(text), (2025, 3))
        self.assertIsNone(sanitize.parse_version("no version here"))


PTX = """
.visible .entry _Z9with_cccl(
.param .u64 a
)
{
cp.async.ca.shared.global [%r1], [%rd1], 4;
cp.async.mbarrier.arrive.shared.b64 [%r2];
mbarrier.arrive.shared.b64 %rd3, [%r2];
}
.visible .entry _Z10with_noinc(
{
cp.async.mbarrier.arrive.noinc.shared.b64 [%r2];
}
.entry _Z5plain(
{
ld.global.u32 %r1, [%rd1];
}
.func  (.param .b32 func_retval0) _Z6helperv(
{
cp.async.mbarrier.arrive.shared.b64 [%r9];
}
.entry _Z6second(
{
cp.async.mbarrier.arrive.shared.b64 [%r2];
cp.async.mbarrier.arrive.shared.b64 [%r3];
}
"""


class PtxScan(unittest.TestCase):
    def test_only_kernels_with_the_plain_arrive_are_excluded(self):
        entries, funcs = sanitize.kernels_synccheck_cannot_check(PTX)
        self.assertEqual(entries, ["_Z9with_cccl", "_Z6second"])
        self.assertEqual(funcs, ["_Z6helperv"])

    def test_exclusion_argument_names_every_kernel(self):
        args = sanitize.tool_arguments("synccheck", ["_Z1a", "_Z1b"])
        self.assertIn("--num-cuda-barriers", args)
        self.assertEqual(args[args.index("--kernel-name-exclude") + 1], "regex=(_Z1a|_Z1b)")
        self.assertNotIn("--kernel-name-exclude", sanitize.tool_arguments("synccheck", []))
        self.assertIn("--leak-check", sanitize.tool_arguments("memcheck", []))


class EndToEnd(unittest.TestCase):
    """main() against a stand-in sanitizer that prints canned output."""

    def run_wrapper(self, canned: str, exit_status: int, tool: str = "synccheck"):
        with tempfile.TemporaryDirectory() as tmp:
            fake = Path(tmp) / "compute-sanitizer"
            fake.write_text(textwrap.dedent(f"""\
                #!{sys.executable}
                import sys
                if "--version" in sys.argv:
                    print("Version 2025.3.0.0 (build 1)")
                    sys.exit(0)
                sys.stdout.write({canned!r})
                sys.exit({exit_status})
                """))
            fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
            log = Path(tmp) / "log.txt"
            proc = subprocess.run(
                [sys.executable, str(ROOT / "tools" / "sanitize.py"), "--sanitizer", str(fake),
                 "--tool", tool, "--log", str(log), "--", "program", "--quick"],
                capture_output=True, text=True, timeout=60, env=dict(os.environ))
            return proc, log.read_text()

    def test_clean_run_passes(self):
        proc, _ = self.run_wrapper(output(errors=0), 0)
        self.assertEqual(proc.returncode, 0, proc.stdout + proc.stderr)
        self.assertIn("PASS: clean: 0 errors", proc.stdout)

    def test_many_reports_fail_and_are_summarised(self):
        proc, log = self.run_wrapper(output(MISSING_WAIT * 50, errors=50), 99)
        self.assertEqual(proc.returncode, 1, proc.stdout + proc.stderr)
        self.assertIn("50 x Barrier error detected. Missing wait.", proc.stdout)
        self.assertIn("counted, not shown", proc.stdout)
        self.assertEqual(log.count("Missing wait"), 50)  # the log keeps everything
        self.assertLess(proc.stdout.count("Missing wait"), 20)

    def test_real_error_fails(self):
        proc, _ = self.run_wrapper(output(DIVERGENT, errors=1), 99)
        self.assertEqual(proc.returncode, 1)
        self.assertIn("FAIL", proc.stdout)

    def test_program_skip_is_passed_on(self):
        proc, _ = self.run_wrapper("no CUDA device\n", 77)
        self.assertEqual(proc.returncode, 77)

    def test_usage_error(self):
        proc = subprocess.run([sys.executable, str(ROOT / "tools" / "sanitize.py"),
                               "--sanitizer", "x", "--tool", "memcheck"],
                              capture_output=True, text=True, timeout=60)
        self.assertEqual(proc.returncode, 2)



class ExpectedApiErrors(unittest.TestCase):
    def scan_of(self, lines):
        scan = sanitize.Scan()
        for line in lines:
            scan.feed(line)
        return scan

    def test_expected_api_error_reports_do_not_count_and_others_still_do(self):
        lines = [
            "========= Program hit cudaErrorPeerAccessAlreadyEnabled (error 704) due to "
            "\"peer access is already enabled\" on CUDA API call to cudaGetLastError.\n",
            "========= ERROR SUMMARY: 1 error\n",
        ]
        scan = self.scan_of(lines)
        self.assertFalse(sanitize.judge(0, scan).ok)
        self.assertTrue(sanitize.judge(0, scan, False, ("cudaErrorPeerAccessAlreadyEnabled",)).ok)
        # The tool exits with its error status when it counted only expected reports.
        self.assertTrue(sanitize.judge(99, scan, False, ("cudaErrorPeerAccessAlreadyEnabled",)).ok)
        self.assertFalse(sanitize.judge(1, scan, False, ("cudaErrorPeerAccessAlreadyEnabled",)).ok)
        self.assertFalse(sanitize.judge(0, scan, False, ("cudaErrorInvalidValue",)).ok)
        lines.insert(1, "========= Invalid __global__ read of size 4 bytes\n")
        lines[-1] = "========= ERROR SUMMARY: 2 errors\n"
        scan = self.scan_of(lines)
        self.assertFalse(sanitize.judge(0, scan, False, ("cudaErrorPeerAccessAlreadyEnabled",)).ok)

if __name__ == "__main__":
    unittest.main()
