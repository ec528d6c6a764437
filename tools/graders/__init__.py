"""The graders: do the lessons' tests catch what a student can get wrong?

Two kinds of mutant of a lesson's solution, each graded the way `./course check NN` grades a
student (compile; every test of the lesson; the program --quick under racecheck, synccheck
and memcheck):
  - a blank region: one exercise region left as its starter text (tools/mutation.py, the
    ctest label `mutation`);
  - an operator mutant: one thing changed inside one region, the way students get things
    wrong (tools/op_mutation.py: list, counts, show, run, report, check-equivalents).

The modules, in the order a mutant meets them:
  mutation.py      blank regions, and the parts every grader uses: building a mutant like
                   the build (MutantBuild), running a bounded command, grading the tests and
                   the sanitizers
  code_reading.py  C++ read as text: comments and strings masked, calls and statements found
  operators.py     the twelve operators, each yielding candidate edits in one region
  mutants.py       the mutants of the solutions, with stable ids; lessons and shards chosen
  grading.py       the runner that grades operator mutants in parallel, into a results file
  report.py        operator_mutation.md and .csv from the results
  equivalents.py   the list of mutants no test can tell from the solution, and its check
  operator_cli.py  tools/op_mutation.py's command line

The exercise regions themselves are read by course_cli/regions.py (the course's command-line
tool needs them in a student's handout, where this package is not shipped). Import this
package with tools/ on sys.path, as tools/mutation.py and tools/op_mutation.py do.
"""
from pathlib import Path

TOOLS = Path(__file__).resolve().parent.parent
ROOT = TOOLS.parent
RESULTS_NAME = "operator_mutation"  # docs/results/<gpu>/operator_mutation.{md,csv}
