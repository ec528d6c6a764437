#!/usr/bin/env python3
"""Operator mutation: is the grader judged on wrong answers, not only on missing ones?

    tools/op_mutation.py list   [--lessons 00-15] [--shard I/N] [--operator OP] [--diff]
    tools/op_mutation.py counts [--lessons 00-17]
    tools/op_mutation.py show ID
    tools/op_mutation.py run    --results FILE.jsonl [--lessons 00-15] [--shard I/N]
                                [--preset quick | --build-dir DIR] [--jobs N] [--gpu-jobs 6]
                                [--time-limit 500] [--no-build]
    tools/op_mutation.py report --results FILE.jsonl... [--out DIR] [--gpu NAME]
    tools/op_mutation.py check-equivalents [--results-dir docs/results]

tools/mutation.py replaces a whole exercise region by its starter text: that only shows
that a student who does nothing fails. This tool makes *operator mutants*: the solution
with ONE thing changed inside one exercise region, the way students get things wrong:

  wait-count, count, stage-count, stage-index, boundary, phase, sync-remove, sync-weaken,
  wait-move, stream, swap-args, bytes (tools/graders/operators.py says what each changes).

Only code is mutated, never comments or strings (the PTX of an asm statement is code: the
count and swap-args operators read it). Each mutant has a stable id,

    LNN/file.cu/rR+D/operator/key      e.g.  L01/register_staged.cu/r2+1/sync-weaken/__syncthreads()->__syncwarp()

(lesson, file, region R, line D counted from the region's BEGIN SOLUTION line, operator, the
edit), so an id survives edits elsewhere in the file. A mutant identical to the solution or
to an earlier mutant is dropped.

`run` (exit 0: all graded; 3: time ran out, run the same command again; 77: some could
not be judged for want of a GPU) grades every mutant exactly as tools/mutation.py grades a
blank region, which is how
`./course check NN` grades a student (compile; every test of the lesson; the lesson program
--quick under racecheck, synccheck and memcheck), in parallel: --jobs compilations at once,
--gpu-jobs graded at once on the GPU; a mutant's test run stops at its first failing
test, except in the lessons whose caught verdicts are confirmed with the GPU alone. It
stops at --time-limit seconds and appends every verdict to the results file as one JSON
line, so a second call carries on where the first stopped (a mutant already graded with
the same source hash is skipped). `report` writes
operator_mutation.md and operator_mutation.csv; it exits 1 when a survivor is not listed in
tests/mutation_equivalents.json with the reason it cannot be told from the solution.
`check-equivalents` is the authoring test that keeps that list honest.

The code is the package tools/graders/ (its __init__.py lists the modules); this script is
its command line, and keeps every name that `import op_mutation` gave before the split.
"""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
# Every name of the old single-file op_mutation, from the modules that define it now. A test
# that replaces a function must replace it in the module that calls it (e.g.
# graders.grading.gpu_description), not here.
from graders import ROOT, RESULTS_NAME, TOOLS, mutation  # noqa: E402,F401
from graders.code_reading import *  # noqa: E402,F401,F403
from graders.operators import *  # noqa: E402,F401,F403
from graders.mutants import *  # noqa: E402,F401,F403
from graders.grading import *  # noqa: E402,F401,F403
from graders.report import *  # noqa: E402,F401,F403
from graders.equivalents import *  # noqa: E402,F401,F403
from graders.operator_cli import *  # noqa: E402,F401,F403
from graders.operator_cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
