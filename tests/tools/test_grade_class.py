#!/usr/bin/env python3
"""The synthetic class of lesson 08 (grade_class.py) graded for real by `./course grade`, with
a build tree where lesson 08 is built as the template:

    tests/tools/test_grade_class.py --build-dir BUILD [--work DIR] [--limit S] [--jobs N]

Checks: every submission builds or not as it must (EXPECTED_BUILD; one that does not prints
the grade's build output, the compiler's and linker's text), its checks pass or fail as its
edit must (EXPECTED_CPU; on a GPU also EXPECTED_GPU; the SASS check "not run" for everyone
where the template has no cuobjdump), each score is the sum of the points of the checks that
passed, every graded student has the same maximum, the GPU checks of a machine without a GPU
are "not run" with no score, the submission that does not compile says
so with the compiler's error, the one that hangs costs at most its limit, the one that crashes
says which signal, the one that tampers reaches nothing of the others' or of the grader's (where
the isolation claims it: namespaces or user ids), a submission graded alone gets what it got in
the class, and every file written is valid for its platform (platform_formats.py).
Exit 0 when all hold, 1 with the list of what did not.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tools"))

import grade_class  # noqa: E402
import platform_formats  # noqa: E402
from course_cli.grade_formats import FORMATS  # noqa: E402

GPU_CHECKS = set(grade_class.GPU)
SASS_CHECKS = set(grade_class.SASS)


def grade(build_dir: Path, submissions: Path, out: Path, limit: float, jobs: int, *extra: str):
    command = [sys.executable, str(REPO / "course"), "grade", "08", str(submissions),
               "--build-dir", str(build_dir), "--no-build", "--out", str(out), "--format",
               ",".join(FORMATS), "--limit", str(limit), "--jobs", str(jobs), *extra]
    print("$ " + " ".join(command), flush=True)
    start = time.monotonic()
    completed = subprocess.run(command, text=True, capture_output=True, timeout=1500)
    print(completed.stdout[-6000:] + completed.stderr[-4000:], flush=True)
    return completed, time.monotonic() - start


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest() if path.is_file() else "missing"


def cache_value(build_dir: Path, name: str) -> str:
    """A CMakeCache.txt entry of the template ("" when missing or NOTFOUND)."""
    for line in (build_dir / "CMakeCache.txt").read_text(encoding="utf-8").splitlines():
        key, _, value = line.partition("=")
        if key.split(":", 1)[0] == name:
            return "" if value.endswith("NOTFOUND") else value
    return ""


# The grader's compiler variables (a sandboxed compile sees those of grade.BUILD_ENVIRONMENT and
# no other): printed when a build's outcome is not the expected one, in case the template's
# build needed one.
COMPILER_ENVIRONMENT = ("CPATH", "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH",
                        "LD_LIBRARY_PATH", "NVCC_PREPEND_FLAGS", "NVCC_APPEND_FLAGS", "CUDA_HOME",
                        "CUDA_PATH", "CC", "CXX", "CUDAHOSTCXX")


def check_builds(grades: dict, expect) -> None:
    """Each submission compiles and links as its edit must (grace does not, niaj has no file);
    where one does not, the grade's build output (the compiler's and linker's text) is printed,
    so that a run on another machine shows why."""
    wrong = []
    for student, g in sorted(grades.items()):
        must = grade_class.EXPECTED_BUILD.get(student, "passed")
        expect(g["build"] == must, f"{student}: build {g['build'] or 'not tried'!r}, expected {must!r}")
        if g["build"] != must:
            wrong.append(student)
            print(f"\n--- {student}: build {g['build'] or 'not tried'} (expected {must}); "
                  f"its build output:\n{g['build_output'][-4000:] or '(none)'}\n---", flush=True)
    if wrong:
        seen = {k: os.environ[k] for k in COMPILER_ENVIRONMENT if k in os.environ}
        print(f"the grader's compiler variables: {seen or 'none'}", flush=True)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", required=True, type=Path)
    parser.add_argument("--work", type=Path, help="scratch folder (default: BUILD/grade_class)")
    parser.add_argument("--limit", type=float,
                        help="each submission's run limit (default 20 s without a GPU, 300 s "
                             "with one: the sanitizers take their time)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    build_dir = args.build_dir.resolve()
    if not (build_dir / "bin" / f"{grade_class.LESSON}_test").is_file():
        print(f"{build_dir} has no {grade_class.LESSON}_test: lesson 08 is not built there")
        return 1
    if args.limit is None:
        probe = subprocess.run([str(build_dir / "bin" / "course_gpu_probe")], capture_output=True)
        args.limit = 300.0 if probe.returncode == 0 else 20.0
    work = (args.work or build_dir / "grade_class").resolve()
    shutil.rmtree(work, ignore_errors=True)
    submissions, out = work / "class", work / "grades"
    files = grade_class.make_class(submissions, out)
    tamper_mark = REPO / "tamper_was_here.txt"
    tamper_mark.unlink(missing_ok=True)
    before = {student: digest(path) for student, path in files.items() if path.is_file()}

    problems: list[str] = []
    completed, seconds = grade(build_dir, submissions, out, args.limit, args.jobs)
    if completed.returncode != 0:
        print(f"./course grade exited with {completed.returncode}")
        return 1
    data = json.loads((out / "grades.json").read_text())
    grades = {g["student"]: g for g in data["grades"]}
    points = {c["id"]: c["points"] for c in data["rubric"]["checks"]}
    isolation_text = next(iter(grades.values()))["isolation"]
    level = isolation_text.split(":")[0]
    gpu_ran = not next(iter(grades.values()))["gpu"]
    # Without cuobjdump the SASS check skips in the template: "not run" for every student.
    sass_runs = bool(cache_value(build_dir, "COURSE_CUOBJDUMP"))
    print(f"isolation: {level}; GPU checks {'ran' if gpu_ran else 'not run'}; template "
          f"CMAKE_CUDA_ARCHITECTURES={cache_value(build_dir, 'CMAKE_CUDA_ARCHITECTURES')}, "
          f"SASS check {'runs' if sass_runs else 'not run (no cuobjdump)'}; {seconds:.0f} s")

    def expect(condition: bool, message: str) -> None:
        if not condition:
            problems.append(message)

    expect(sorted(grades) == sorted(grade_class.EXPECTED_CPU), f"students: {sorted(grades)}")
    check_builds(grades, expect)
    max_scores = set()
    print(f"\n{'student':<9} {'score':>6} {'max':>5}  passed/failed/not run  (build, run seconds)")
    for student, g in sorted(grades.items()):
        checks = {c["id"]: c for c in g["checks"]}
        passed = {i for i, c in checks.items() if c["status"] == "passed"}
        failed = {i for i, c in checks.items() if c["status"] == "failed"}
        not_run = {i for i, c in checks.items() if c["status"] == "not run"}
        print(f"{student:<9} {g['score']:>6g} {g['max_score']:>5g}  {len(passed)}/{len(failed)}/"
              f"{len(not_run)}  ({g['build_seconds']:.0f} s, {g['run_seconds']:.0f} s)")
        cpu_passed = passed - GPU_CHECKS
        expected = grade_class.EXPECTED_CPU[student] - (set() if sass_runs else SASS_CHECKS)
        expect(cpu_passed <= expected, f"{student}: CPU checks {sorted(cpu_passed - expected)} "
                                       "passed, and its edit must fail them")
        expect(expected <= cpu_passed, f"{student}: CPU checks {sorted(expected - cpu_passed)} "
                                       "did not pass, and its edit must pass them")
        if not sass_runs:
            expect(all(checks[c]["status"] == "not run" and checks[c]["max_score"] is None
                       for c in SASS_CHECKS),
                   f"{student}: {sorted(SASS_CHECKS)} must be 'not run' without cuobjdump")
        expect(abs(g["score"] - sum(points[i] for i in passed)) < 1e-9,
               f"{student}: score {g['score']} is not the sum of its passed checks' points")
        if gpu_ran:
            must_pass, must_fail = grade_class.EXPECTED_GPU.get(student, (set(), set()))
            expect(must_pass <= passed, f"{student}: GPU checks {sorted(must_pass - passed)} must pass")
            expect(must_fail <= failed, f"{student}: GPU checks {sorted(must_fail - failed)} must fail")
        else:
            for check in GPU_CHECKS:
                c = checks[check]
                expect(c["status"] == "not run" and c["score"] is None and c["max_score"] is None
                       and c["output"].startswith("not run: needs a GPU (sm_80)"),
                       f"{student}: {check} must be 'not run: needs a GPU (sm_80)' with no score")
        if not g["problem"]:
            max_scores.add(g["max_score"])
    expect(len(max_scores) == 1, f"every graded student has the same maximum, got {max_scores}")

    grace, heidi, ivan, niaj = grades["grace"], grades["heidi"], grades["ivan"], grades["niaj"]
    expect(grace["build"] == "failed" and "warp_entanglement.cu" in "\n".join(
        c["output"] for c in grace["checks"][:1]) + json.dumps(grace) and "error" in json.dumps(grace),
           "grace: the build entry must show the compiler's error in warp_entanglement.cu")
    expect(heidi["run_seconds"] <= args.limit + 5,
           f"heidi hangs and must cost at most the limit ({args.limit:g} s): {heidi['run_seconds']} s")
    expect(any("hung" in c["output"] or "timed out" in c["output"] for c in heidi["checks"]),
           "heidi: the grade must say the program hung")
    expect(any("SIGSEGV" in c["output"] for c in ivan["checks"]),
           "ivan: the grade must say the program crashed with SIGSEGV")
    expect("no warp_entanglement.cu" in niaj["problem"], f"niaj: {niaj['problem']!r}")

    # Tampering: judy reached none of the others' files nor the grade files.
    if level in ("namespaces", "user"):
        after = {student: digest(path) for student, path in files.items() if path.is_file()}
        expect(after == before, "judy changed another submission's file")
        expect(not tamper_mark.exists(), "judy wrote into the course repository")
        for path in out.rglob("*"):
            if path.is_file() and path.suffix in (".json", ".csv", ".xml"):
                expect(b"tampered by judy" not in path.read_bytes(), f"judy reached {path}")
    else:
        print(f"isolation {level}: the tamper checks are not claimed here and not checked")
    tamper_mark.unlink(missing_ok=True)
    expect([c["status"] for c in grades["alice"]["checks"]] ==
           [c["status"] for c in grades["mallory"]["checks"]],
           "alice and mallory submitted the same file and must get the same grade")

    # Every file against its platform's documented fields.
    students = sorted(grades, key=lambda s: list(grade_class.EXPECTED_CPU).index(s))
    for student in grades:
        for fmt, path, check in (
                ("gradescope", out / "gradescope" / student / "results.json", platform_formats.gradescope),
                ("prairielearn", out / "prairielearn" / student / "results.json", platform_formats.prairielearn),
                ("classroom50", out / "classroom50" / student / "result.json", platform_formats.classroom50)):
            found = check(json.loads(path.read_text())) if path.is_file() else ["missing"]
            expect(not found, f"{path.relative_to(out)}: {found}")
        found = platform_formats.junit((out / "junit" / f"{student}.xml").read_bytes())
        expect(not found, f"junit/{student}.xml: {found}")
    expect(not platform_formats.junit((out / "junit.xml").read_bytes()), "junit.xml")
    order = [g["student"] for g in data["grades"]]
    todos = [int(t) for t in data["rubric"]["todos"]]
    found = platform_formats.grades_csv((out / "grades.csv").read_text(), order, todos)
    expect(not found, f"grades.csv: {found}")
    del students

    # A submission graded alone gets what it got in the class (no cross-talk).
    alone_out = work / "alone"
    completed, _ = grade(build_dir, files["judy"], alone_out, args.limit, 1, "--student", "judy")
    if completed.returncode == 0:
        alone = json.loads((alone_out / "grades.json").read_text())["grades"][0]
        expect([(c["id"], c["status"], c["score"]) for c in alone["checks"]] ==
               [(c["id"], c["status"], c["score"]) for c in grades["judy"]["checks"]],
               "judy graded alone differs from judy graded in the class")
    else:
        problems.append(f"grading judy alone exited with {completed.returncode}")
    tamper_mark.unlink(missing_ok=True)

    if problems:
        print("\nFAILED:\n  " + "\n  ".join(problems))
        return 1
    print(f"\nPASS: {len(grades)} submissions graded as expected in {seconds:.0f} s "
          f"(isolation {level})")
    shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
