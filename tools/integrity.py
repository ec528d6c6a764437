#!/usr/bin/env python3
"""integrity: a starter's tests must fail, a solution's tests must pass (GPU only).

    integrity.py --probe PROBE --expect fail STARTER_TEST_EXE
    integrity.py --probe PROBE --expect pass SOLUTION_TEST_EXE

Exits 77 (ctest: skipped) when PROBE finds no GPU, or fewer than --min-gpus (lessons 16-17
need two: their GPU tests skip on one GPU, and "every GPU test ran" cannot hold). A starter "fails" only when its test
executable exits with gtest's failure code and reports failed tests: a crash, a hang
(killed by the timeout) or a run where everything skipped is not the failure students
must see. A solution "passes" only when every GPU test ran and passed: none skipped.
"""
import argparse
import re
import subprocess
import sys


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--probe", required=True)
    parser.add_argument("--expect", choices=["fail", "pass"], required=True)
    parser.add_argument("--min-gpus", type=int, default=1,
                        help="skip unless the probe reports at least this many GPUs")
    parser.add_argument("test_exe")
    args = parser.parse_args()

    probe = subprocess.run([args.probe], capture_output=True, text=True)
    if probe.returncode != 0:
        print(f"skipped: {probe.stdout.strip()}")
        return 77
    visible = re.search(r"^GPUs visible: (\d+)", probe.stdout, re.M)
    if args.min_gpus > 1 and (visible is None or int(visible.group(1)) < args.min_gpus):
        print(f"skipped: this lesson needs {args.min_gpus} GPUs; the probe says: "
              f"{probe.stdout.strip()}")
        return 77

    run = subprocess.run([args.test_exe], capture_output=True, text=True, timeout=540)
    output = run.stdout + run.stderr
    failed = re.findall(r"^\[  FAILED  \] (\S+)", output, re.M)
    skipped = re.findall(r"^\[  SKIPPED \] (\S+)", output, re.M)
    passed = re.search(r"^\[  PASSED  \] (\d+) test", output, re.M)
    print(output[-4000:])
    if args.expect == "fail":
        if run.returncode == 1 and failed:
            print(f"integrity: the starter fails as it must ({len(set(failed))} failing tests)")
            return 0
        print(f"integrity: the starter must fail its tests, but it exited {run.returncode} "
              f"with {len(set(failed))} failing tests")
        return 1
    # A GPU test that skipped on a GPU machine verified nothing; a CPU test may skip for a
    # reason of the build (a PTX check of an architecture this build leaves out).
    gpu_skipped = sorted({name for name in skipped if "Gpu" in name.split(".")[0]})
    if run.returncode == 0 and passed and not gpu_skipped:
        cpu_note = f" ({len(set(skipped))} CPU tests skipped)" if skipped else ""
        print(f"integrity: the solution passes all {passed.group(1)} tests{cpu_note}")
        return 0
    print(f"integrity: the solution must pass every test, no GPU test skipped; exit "
          f"{run.returncode}, {len(set(failed))} failed, {len(gpu_skipped)} GPU tests skipped")
    return 1


if __name__ == "__main__":
    sys.exit(main())
