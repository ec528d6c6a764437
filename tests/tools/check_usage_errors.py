#!/usr/bin/env python3
"""Checks that a lesson executable rejects bad command lines with exit code 2.

Each bad command line must exit 2, print an error and the usage on stderr, and never
reach the device: the check also runs with CUDA_VISIBLE_DEVICES="" so a program that
touched CUDA before validating its flags would exit 77 instead of 2. --help must print
the usage on stdout and exit 0, also without a GPU.
"""
import os
import subprocess
import sys

BAD_COMMAND_LINES = [
    ["--no-such-flag"],
    ["--iters", "abc"],
    ["--iters", "0"],
    ["--iters"],
    ["--warmup", "-1"],
    ["--size", "12Q"],
    ["--size", ""],
    ["--device", "x"],
    ["--variant", "no-such-variant"],
    ["--quick=yes"],
    ["positional"],
    # An output path that cannot be written is found before the run, not after it.
    ["--csv", "/nonexistent-directory/out.csv"],
]

# Range errors that only the lesson's own checks can find (run_driver's `validate`): they
# too must exit 2 before the device is opened, also on a machine without a GPU. Keyed by
# the executable's lesson number.
LESSON_BAD_COMMAND_LINES = {
    "00": [["--size", "6"]],
    "13": [["--spin-ms", "2147483647"]],
    "14": [["--chunks", "100000"], ["--chunks", "0"], ["--sweep", "0"], ["--sweep", "1,x"],
           ["--rounds", "0"]],
}


def run(exe, args):
    env = dict(os.environ, CUDA_VISIBLE_DEVICES="")
    return subprocess.run([exe] + args, capture_output=True, text=True, timeout=30, env=env)


def main():
    exe = sys.argv[1]
    lesson = os.path.basename(exe)[:2]
    command_lines = BAD_COMMAND_LINES + LESSON_BAD_COMMAND_LINES.get(lesson, [])
    failures = []
    for args in command_lines:
        result = run(exe, args)
        if result.returncode != 2:
            failures.append(f"{args}: exit {result.returncode}, expected 2")
        elif "usage:" not in result.stderr or "error:" not in result.stderr:
            failures.append(f"{args}: stderr lacks the error and the usage:\n{result.stderr}")
    result = run(exe, ["--help"])
    if result.returncode != 0 or "usage:" not in result.stdout:
        failures.append(f"--help: exit {result.returncode}, stdout:\n{result.stdout}")
    for failure in failures:
        print("FAIL", failure)
    print(f"{len(command_lines) + 1 - len(failures)} passed, {len(failures)} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
