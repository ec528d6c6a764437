#!/usr/bin/env python3
"""Mutation integrity: no exercise region may be invisible to the grader.

    tools/mutation.py list SOLUTION.cu
    tools/mutation.py run --build-dir DIR --solution SOLUTION.cu --region K
                          --kernels-source FILE --test-target T --exe-target E
                          [--sanitizer PATH] [--cuobjdump PATH] --work-dir DIR

For region K of a solution file (its K-th BEGIN/END SOLUTION region), `run` makes a
*mutant*: the solution with that one region replaced by its STARTER text, everything else
as in the solution; just what a student who did every TODO but that one would have. It
compiles the mutant the way the build compiles the solution (the command comes from the
build's compile_commands.json, the link from `ninja -t commands`), links the lesson's test
program and lesson program with it, and then asks, in order:
  1. does the mutant compile?             (if not, a student would see a compiler error)
  2. does a test of the lesson fail?      (or time out: a hang is caught too)
  3. does racecheck, synccheck or memcheck report it when the lesson program runs --quick
     (through tools/sanitize.py, a racecheck warning counting; a wrong result counts too)?
The region is *caught* when one of them says yes: exit 0. When none does, the region is
invisible to the grader, a student could leave it undone and pass: exit 1, naming it.
Exit 77 when the mutant's tests were skipped for want of a GPU.

The code is tools/graders/mutation.py; this script is its command line, and keeps every
name that `import mutation` gave before the move (MutantBuild, grade_tests, regions ...).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from graders.mutation import *  # noqa: E402,F401,F403
from graders.mutation import _LIVE, _LIVE_LOCK, _OBJECT, _OUTPUT  # noqa: E402,F401
from graders.mutation import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
