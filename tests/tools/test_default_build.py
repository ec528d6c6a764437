#!/usr/bin/env python3
"""The README's test run (the default preset) builds and tests the solutions only:

    tests/tools/test_default_build.py WORK_DIR

configures the default preset into WORK_DIR (lessons 13 and 14, which also check their
programs' flags) and checks that `all` makes every lesson's solution program and solution test
program and none of the starters', that the starters' targets still exist (`./course check`
and `./course grade` name them), and that no registered test runs a starter's program.
Exit 0 when all hold, 1 with what did not.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LESSONS = ("13_streams_and_sync", "14_overlap_transfers")


def run(command: list[str]) -> str:
    done = subprocess.run(command, cwd=REPO, text=True, capture_output=True, timeout=240)
    if done.returncode != 0:
        sys.exit(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    return done.stdout


def main() -> int:
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    build = Path(sys.argv[1]).resolve()
    run(["cmake", "--preset", "default", "-B", str(build),
         f"-DCOURSE_LESSON_FILTER=^({'|'.join(name[:2] for name in LESSONS)})_"])
    problems = []
    for name in LESSONS:
        made = run(["ninja", "-C", str(build), "-t", "query", f"lessons/{name}/all"])
        for program in (f"{name}_solution", f"{name}_solution_test"):
            if not re.search(rf"bin/{program}$", made, re.M):
                problems.append(f"`all` does not make {program}")
        for program in (name, f"{name}_test"):
            if re.search(rf"bin/{program}$", made, re.M):
                problems.append(f"`all` makes the starter's {program}")
            listed = run(["ninja", "-C", str(build), "-t", "targets", "all"])
            if not re.search(rf"^{program}:", listed, re.M):
                problems.append(f"no target {program}: ./course check could not build it")
    tests = json.loads(run(["ctest", "--test-dir", str(build), "--show-only=json-v1"]))["tests"]
    starter = re.compile(r"/bin/\d\d_[a-z_]+?(_test)?$")
    for test in tests:
        command = test.get("command") or []
        if any(starter.search(word) and "_solution" not in word for word in command):
            problems.append(f"test {test['name']} runs a starter's program")
    if not any(test["name"].startswith("L14.cli.14_overlap_transfers_solution.") for test in tests):
        problems.append("the solution's flag checks of lesson 14 are not registered")
    for problem in problems:
        print("FAIL:", problem)
    print(f"default preset: {len(tests)} tests registered, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
