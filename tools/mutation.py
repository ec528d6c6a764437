#!/usr/bin/env python3
"""Mutation integrity: no exercise region may be invisible to the grader.

The command line of tools/graders/mutation.py (its docstring says what it does and how to
call it); `import mutation` keeps every name it gave before the move (MutantBuild,
grade_tests, regions ...).
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from graders.mutation import *  # noqa: E402,F401,F403
from graders.mutation import _LIVE, _LIVE_LOCK, _OBJECT, _OUTPUT  # noqa: E402,F401
from graders.mutation import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
