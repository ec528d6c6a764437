"""A synthetic class for `./course grade 08`: thirteen submissions made at test time from lesson
08's solution by small edits (no copy of the solution is committed), each with the outcome its
edit must produce.

Lesson 08 grades well on a CPU: TODOs 1 and 2 are host code (a model of a warp's batch
sequences) that CPU tests call, and TODOs 3-6 are checked in the PTX and SASS, so the CPU tier
tells the starter, the solution and each wrong answer apart. The submissions:

  alice           the solution
  bob             the untouched starter
  carol           TODO 1 wrong: every lane perceives every batch, converged or not
  dave            TODO 2 wrong: the wait count is not clamped at eight
  erin            TODO 4's bug left in: the converged round returns before its commit
  frank           TODO 6 wrong: waits for every batch (wait_prior(0)), overlap thrown away
  grace           does not compile (a missing semicolon)
  heidi           hangs: a static initializer spins, so the test program never starts
  ivan            writes out of bounds on the host: commit() stores 16 GiB past its array
  judy            tries to overwrite alice's file and result and the grade files, and to drop
                  a file in the course repository; otherwise the solution
  mallory         a copy of alice's file (same text: the second compile is a cache hit)
  niaj            submitted no .cu file
  olivia          writes out of bounds on the GPU (one row past its shared buffers): the CPU
                  tier cannot see it; memcheck can

EXPECTED_CPU[student] is the set of checks that pass on a machine without a GPU (every GPU check
is "not run" there), where the template has cuobjdump (without it the SASS check is "not run"
for every student); EXPECTED_BUILD says which do not build; EXPECTED_GPU[student] says, for a
GPU run, which GPU checks must pass or fail (those this file can be sure of; the rest are
reported for the record).
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO / "tools"))

from course_cli import starter  # noqa: E402

LESSON = "08_warp_entanglement"
SLUG = "warp_entanglement"
SOLUTION = REPO / "solutions" / LESSON / f"{SLUG}.cu"

MODEL = [
    "WarpEntanglementModel.FullyDivergedWarpFromTheProgrammingGuide",
    "WarpEntanglementModel.ConvergedWarpPerceivesTheActualSequence",
    "WarpEntanglementModel.PartlyDivergedWarpWaitsForTheOtherHalf",
    "WarpEntanglementModel.WaitPriorIsClampedAtEight",
    "WarpEntanglementModel.WaitsWithNothingToWaitFor",
    "WarpEntanglementModel.ConsumerWaitWaitsForTheOldestUnreleasedBatch",
    "WarpEntanglementModel.PredictionsForTheKernel",
]
FREE = [  # the untouched starter passes these: they score nothing
    "WarpEntanglementModel.RejectsImpossibleCalls",
    "WarpEntanglementModel.ArriveOnUpdatesOncePerConvergedGroup",
    "WarpEntanglementModel.GroupsOfPathsInPathOrder",
    "WarpEntanglementEvidence.SummaryRates",
    "WarpEntanglementEvidence.LaneDigitsAndOverWaiting",
    "WarpEntanglementShape.LanePaths",
    "WarpEntanglementShape.BatchesRoundsAndZeroFill",
    "WarpEntanglementShape.Names",
    "WarpEntanglementShape.RejectsBadLaunchesBeforeTouchingTheDevice",
    "WarpEntanglementShape.EmptyInputLaunchesNothing",
]
PTX = [
    "WarpEntanglementPtx.EveryKernelCopiesCommitsWaitsAndArrivesOn",
    "WarpEntanglementPtx.OnlyTheDivergedKernelCommitsAndArrivesInsideTheBranch",
    "WarpEntanglementPtx.SyncwarpStandsBetweenTheBranchAndTheCommit",
]
SASS = ["WarpEntanglementSass.LdgstsGroupsAndArriveOnInMachineCode"]
GPU = ["GpuWarpEntanglement", "GpuWarpEntanglementLimits", "racecheck", "synccheck", "memcheck"]
ALL_CPU = MODEL + FREE + PTX + SASS


def _without(checks: list[str], *gone: str) -> set[str]:
    return set(checks) - set(gone)


EXPECTED_CPU: dict[str, set[str]] = {
    "alice": set(ALL_CPU),
    "bob": set(FREE),
    # Converged commits still give every lane its batch: only the diverged cases fail.
    "carol": _without(ALL_CPU, MODEL[0], MODEL[2], MODEL[4], MODEL[5], MODEL[6]),
    "dave": _without(ALL_CPU, MODEL[3]),
    # The README's words: "On the CPU its PTX test objects to where the commit sits".
    "erin": _without(ALL_CPU, PTX[1]),
    "frank": _without(ALL_CPU, PTX[0]),
    "grace": set(),
    "heidi": set(),
    # Every scored model test commits, and every commit crashes.
    "ivan": set(FREE + PTX + SASS),
    "judy": set(ALL_CPU),
    "mallory": set(ALL_CPU),
    "niaj": set(),
    "olivia": set(ALL_CPU),
}
# How each submission builds ("passed" where not named): grace's file does not compile, and
# niaj has no file to build.
EXPECTED_BUILD: dict[str, str] = {"grace": "failed", "niaj": ""}
# On a GPU: checks that must pass (+) and that must fail (-); others are only reported.
EXPECTED_GPU: dict[str, tuple[set[str], set[str]]] = {
    "alice": (set(GPU), set()),
    "mallory": (set(GPU), set()),
    "judy": (set(GPU), set()),
    "bob": (set(), {"GpuWarpEntanglement"}),
    "erin": (set(), {"GpuWarpEntanglementLimits"}),
    "heidi": (set(), set(GPU)),
    "grace": (set(), set(GPU)),
    "olivia": (set(), {"memcheck"}),
}


def _edit(text: str, old: str, new: str) -> str:
    if text.count(old) != 1:
        raise AssertionError(f"the solution no longer has exactly one {old!r}: update "
                             "tests/tools/grade_class.py")
    return text.replace(old, new)


def _append(text: str, code: str) -> str:
    return text.rstrip("\n") + "\n\n" + code.strip("\n") + "\n"


def c_string(path: Path) -> str:
    return json.dumps(str(path))


def make_class(folder: Path, out: Path, repo: Path = REPO) -> dict[str, Path]:
    """Writes the class into `folder` (one folder per student); `out` is where the grades will
    go (judy aims at it). Returns {student: file}."""
    solution_text = SOLUTION.read_text(encoding="utf-8")
    solved = starter.solution_without_markers(solution_text)
    fresh = starter.expected_starter(repo, SOLUTION)
    files: dict[str, str] = {"alice": solved, "bob": fresh, "mallory": solved}
    files["carol"] = _edit(
        solved, "    if (lanes & (LaneMask{1} << lane)) perceived_[lane].push_back(batch);",
        "    perceived_[lane].push_back(batch);  // every lane sees every batch")
    files["dave"] = _edit(solved, "wait.n_applied = std::min(n, kWaitPriorClamp);",
                          "wait.n_applied = n;")
    files["erin"] = _edit(
        solved, "    copy_my_chunks(buffer, in, k, mine, batch, n);\n"
                "    commit_and_arrive_on(counter, counted, ev);\n  } else {",
        "    if (k >= mine) return;  // this block has no batch k\n"
        "    copy_my_chunks(buffer, in, k, mine, batch, n);\n"
        "    commit_and_arrive_on(counter, counted, ev);\n  } else {")
    files["frank"] = _edit(solved, "__pipeline_wait_prior(kAllowedPending);",
                           "__pipeline_wait_prior(0);")
    files["grace"] = _edit(solved, "__pipeline_wait_prior(kAllowedPending);",
                           "__pipeline_wait_prior(kAllowedPending)")
    files["heidi"] = _append(solved, """
// Never lets the test program reach its first test.
namespace {
volatile int grader_test_spin = 0;
const int grader_test_hang = [] {
  while (grader_test_spin == 0) {
  }
  return 0;
}();
}  // namespace
""")
    files["ivan"] = _edit(
        solved, "    if (lanes & (LaneMask{1} << lane)) perceived_[lane].push_back(batch);\n  }",
        "    if (lanes & (LaneMask{1} << lane)) perceived_[lane].push_back(batch);\n  }\n"
        "  // out of bounds, far past the array: a certain crash\n"
        "  *(reinterpret_cast<volatile int*>(perceived_.data()) + (std::size_t{1} << 32)) = batch;")
    targets = [out / "grades.csv", out / "grades.json", out / "junit.xml",
               out / "gradescope" / "alice" / "results.json",
               out / "work" / "alice" / f"{SLUG}.cu", folder / "alice" / f"{SLUG}.cu",
               repo / "tamper_was_here.txt"]
    writes = "\n".join(f"  grader_test_scribble({c_string(p)});" for p in targets)
    files["judy"] = _append(solved, f"""
// Tries to overwrite another student's file and result, and the grade files.
#include <cstdio>
namespace {{
void grader_test_scribble(const char* path) {{
  if (std::FILE* f = std::fopen(path, "a")) {{
    std::fputs("\\n#error tampered by judy\\n", f);
    std::fclose(f);
  }}
}}
const int grader_test_tamper = [] {{
{writes}
  return 0;
}}();
}}  // namespace
""")
    files["olivia"] = _edit(
        solved, "for (std::size_t i = threadIdx.x; i < kStages * (batch / 4); i += blockDim.x) {",
        "for (std::size_t i = threadIdx.x; i < (kStages + 1) * (batch / 4); i += blockDim.x) {")
    written = {}
    for student, text in files.items():
        path = folder / student / f"{SLUG}.cu"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        written[student] = path
    (folder / "niaj").mkdir(parents=True, exist_ok=True)
    (folder / "niaj" / "notes.txt").write_text("I ran out of time.\n", encoding="utf-8")
    written["niaj"] = folder / "niaj"
    return written


if __name__ == "__main__":
    target = Path(sys.argv[1])
    make_class(target, Path(sys.argv[2]) if len(sys.argv) > 2 else target.parent / "grades")
    print(f"wrote the synthetic class of lesson 08 to {target}")
