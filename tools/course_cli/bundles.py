"""`./course autograder NN --format gradescope|classroom50 --out DIR`: what each platform takes
to grade one lesson, made by the same `./course grade` that grades a class locally.

gradescope   Gradescope's autograder zip, files at its root (its specification): setup.sh, run
             once as root on Gradescope's Ubuntu image (CPU only) to install what the image
             lacks (a C++ compiler, CMake >= 3.25, Ninja, GoogleTest, the CUDA compiler and
             cuobjdump from NVIDIA's apt repository), build the lesson's template and then
             delete every solution from the image; run_autograder, run for each submission,
             which grades /autograder/submission with `./course grade --format gradescope` and
             puts /autograder/results/results.json in place; course/, this repository's files
             (solutions only for the lessons the template needs, removed by setup.sh); and
             rubric.json when the instructor gave one.
classroom50  Classroom 50's grading pieces for a self-hosted GPU runner (its Advanced
             Autograding page): autograder.py, which Classroom 50's runner starts in the
             student's checkout, grades lessons/NN_slug/slug.cu with the course installed on
             the runner and writes ./result.json (schema classroom50/result/v1); runtime.json,
             the assignment's runtime block that sends grading to a runner labelled
             self-hosted and gpu; README.md with the commands that install them. Classroom 50
             runs its own grading workflow; the runtime block, not a workflow of ours, is how it
             targets a self-hosted runner.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import stat
import subprocess
from pathlib import Path

from .catalog import Lesson, find_ready_lesson, load_catalog
from .errors import CourseError
from . import rubric as rubric_module

BUNDLES = ("gradescope", "classroom50")
CUDA_APT = "13-0"  # the toolkit the course is written for (CUDA 13.0)
SKIPPED_TOP = {".git", "build", "grades"}


def _lessons_needed(root: Path, lesson: Lesson) -> list[str]:
    from .grade import lesson_uses

    return [lesson.name, *lesson_uses(root, lesson)]


def copy_course(root: Path, destination: Path, keep_solutions: list[str]) -> int:
    """Copies the repository's files (in a checkout, those git tracks or would track: not what
    it ignores) without the build folders and without any solution but those of
    `keep_solutions`."""
    try:
        listed = subprocess.run(["git", "-C", str(root), "ls-files", "-z", "--cached", "--others",
                                 "--exclude-standard"], capture_output=True,
                                check=True).stdout.decode().split("\0")
        files = [root / f for f in listed if f]
    except (OSError, subprocess.CalledProcessError):
        files = [p for p in root.rglob("*") if p.is_file()]
    count = 0
    for path in files:
        relative = path.relative_to(root)
        parts = relative.parts
        if not path.is_file() or parts[0] in SKIPPED_TOP:
            continue
        if parts[0] == "solutions" and (len(parts) < 2 or parts[1] not in keep_solutions):
            continue
        target = destination / relative
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(path, target)
        count += 1
    return count


def _write(path: Path, text: str, executable: bool = False) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    if executable:
        path.chmod(path.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def _apt_packages(names: list[str]) -> list[str]:
    packages = [f"cuda-nvcc-{CUDA_APT}", f"cuda-cudart-dev-{CUDA_APT}", f"cuda-cccl-{CUDA_APT}",
                f"cuda-cuobjdump-{CUDA_APT}", f"cuda-nvdisasm-{CUDA_APT}"]
    if any(n.startswith(("15_", "17_")) for n in names):
        packages.append(f"libcublas-dev-{CUDA_APT}")
    if any(n.startswith("17_") for n in names):
        packages.append("libnccl-dev")
    return packages


def gradescope_setup(lesson: Lesson, names: list[str]) -> str:
    filter_regex = f"^({'|'.join(sorted(names))})$"
    return f"""#!/usr/bin/env bash
# Gradescope runs this once, as root, when it builds the autograder's image (Ubuntu, no GPU).
# Made by `./course autograder {lesson.number} --format gradescope`; do not edit by hand.
set -euxo pipefail
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends build-essential ca-certificates git gnupg \\
  libgtest-dev ninja-build python3 python3-pip util-linux wget
# CMake >= 3.25 (the distribution's may be older).
python3 -m pip install --no-cache-dir "cmake>=3.25,<4"
# The CUDA compiler, runtime headers and cuobjdump (no driver: the CPU tier needs none).
. /etc/os-release
wget -q "https://developer.download.nvidia.com/compute/cuda/repos/ubuntu${{VERSION_ID//./}}/x86_64/cuda-keyring_1.1-1_all.deb"
dpkg -i cuda-keyring_1.1-1_all.deb
rm cuda-keyring_1.1-1_all.deb
apt-get update -q
apt-get install -y -q --no-install-recommends {' '.join(_apt_packages(names))}
export PATH="/usr/local/cuda/bin:$PATH"

# The lesson's template build: what every submission's unit is compiled and linked against.
cd /autograder/source/course
cmake --preset default -B build/grade/{lesson.name} "-DCOURSE_LESSON_FILTER={filter_regex}"
cmake --build build/grade/{lesson.name} --target {lesson.name}_test {lesson.name} course_gpu_probe

# A submission runs in this image: no answer may stay where it could read one.
# (This lesson's solution objects too, if any were built; the compiled kernels of the lessons
# it builds on stay: the template links them, as the course does.)
rm -rf solutions build/grade/{lesson.name}/bin/*_solution* \\
  build/grade/{lesson.name}/lessons/{lesson.name}/CMakeFiles/{lesson.name}_solution*
chmod -R a+rX /autograder/source
"""


def gradescope_run(lesson: Lesson, limit: float, has_rubric: bool) -> str:
    rubric = " --rubric /autograder/source/rubric.json" if has_rubric else ""
    return f"""#!/usr/bin/env bash
# Gradescope runs this for every submission, as root, in /autograder: grade the submission's
# {lesson.slug}.cu (CPU tier: Gradescope has no GPU) and put results.json where it reads it.
# Made by `./course autograder {lesson.number} --format gradescope`; do not edit by hand.
set -uo pipefail
export PATH="/usr/local/cuda/bin:$PATH"
out=/autograder/grade-out
rm -rf "$out"
cd /autograder/source/course
python3 ./course grade {lesson.number} /autograder/submission --student submission \\
  --format gradescope --out "$out" --build-dir build/grade/{lesson.name} --no-build \\
  --limit {limit:g}{rubric}
status=$?
mkdir -p /autograder/results
if [ -f "$out/gradescope/submission/results.json" ]; then
  cp "$out/gradescope/submission/results.json" /autograder/results/results.json
else
  python3 - "$status" <<'EOF'
import json, sys
json.dump({{"score": 0, "output": "The grader itself failed (exit status " + sys.argv[1] +
           "); your submission was not graded. Tell your instructor.", "tests": []}},
          open("/autograder/results/results.json", "w"))
EOF
fi
"""


def classroom50_autograder(lesson: Lesson, limit: float, has_rubric: bool) -> str:
    return f'''"""Classroom 50 autograder for lesson {lesson.number} ({lesson.title}).

Made by `./course autograder {lesson.number} --format classroom50`; do not edit by hand. It goes
to CLASSROOM/autograders/ASSIGNMENT/autograder.py in your classroom50 repository. Classroom
50's runner starts it in the student's checkout, on the runner the assignment's runtime block
names (runtime.json: a self-hosted runner with a GPU). It grades the student's
lessons/{lesson.name}/{lesson.slug}.cu with the course installed on that runner
($COURSE_GRADER_ROOT, default /opt/async-copy-course, its template built beforehand) and writes
./result.json. A non-zero exit is an infrastructure error, as Classroom 50's contract says.
"""
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).parent
COURSE = Path(os.environ.get("COURSE_GRADER_ROOT", "/opt/async-copy-course"))
LESSON = "{lesson.number}"
STUDENT_FILE = Path.cwd() / "lessons" / "{lesson.name}" / "{lesson.slug}.cu"

out = Path(tempfile.mkdtemp(prefix="course-grade-"))
command = [sys.executable, str(COURSE / "course"), "grade", LESSON, str(STUDENT_FILE),
           "--student", "submission", "--format", "classroom50", "--out", str(out / "grades"),
           "--limit", "{limit:g}", "--no-build"]
if (HERE / "rubric.json").is_file():
    command += ["--rubric", str(HERE / "rubric.json")]
status = subprocess.run(command, cwd=COURSE).returncode
result = out / "grades" / "classroom50" / "submission" / "result.json"
if status != 0 or not result.is_file():
    print(f"::error::./course grade exited with {{status}} and wrote no result.json", file=sys.stderr)
    sys.exit(1)
shutil.copyfile(result, "result.json")
shutil.rmtree(out, ignore_errors=True)
'''


def classroom50_readme(lesson: Lesson, has_rubric: bool) -> str:
    rubric_line = ("rubric.json goes beside autograder.py (the autograder passes it to "
                   "`./course grade --rubric`).\n" if has_rubric else "")
    return f"""# Classroom 50 autograder: lesson {lesson.number} ({lesson.title})

Made by `./course autograder {lesson.number} --format classroom50`.

1. On the GPU machine that will grade (a self-hosted GitHub Actions runner with the labels
   `self-hosted` and `gpu`): install the CUDA toolkit, CMake and GoogleTest as the course's
   README says, clone the course (with its solutions) to /opt/async-copy-course (or set
   COURSE_GRADER_ROOT for the runner), and build the template once:

       cd /opt/async-copy-course && ./course grade {lesson.number} --show-rubric

   Keep that clone readable to the runner's user only where the grader's isolation is weaker
   than namespaces (`./course grade` prints which one it uses).
2. In your classroom50 repository: copy autograder.py to
   CLASSROOM/autograders/ASSIGNMENT/autograder.py. {rubric_line}
3. Give the assignment the runtime block in runtime.json, e.g.
   `gh teacher assignment add ORG CLASSROOM ASSIGNMENT ... --runtime runtime.json`, or paste
   it under Advanced settings in the web form. Classroom 50's own runner workflow then grades
   each submission on your GPU runner; result.json's tests carry the points of every check
   that ran, and the checks that could not run are listed under "not_run" with no score.
"""


def cmd_autograder(root: Path, args: argparse.Namespace) -> int:
    lesson = find_ready_lesson(load_catalog(root), args.lesson)
    out = Path(args.out).resolve()
    if out.exists() and any(out.iterdir()):
        raise CourseError(f"{out} exists and is not empty: name a new folder")
    has_rubric = bool(args.rubric)
    if has_rubric:
        rubric_module.read_override_file(Path(args.rubric))  # a bad rubric fails here, not later
    out.mkdir(parents=True, exist_ok=True)
    names = _lessons_needed(root, lesson)
    if args.format == "gradescope":
        count = copy_course(root, out / "course", names)
        _write(out / "setup.sh", gradescope_setup(lesson, names), executable=True)
        _write(out / "run_autograder", gradescope_run(lesson, args.limit, has_rubric),
               executable=True)
        if has_rubric:
            shutil.copyfile(args.rubric, out / "rubric.json")
        _write(out / "README.md", f"""# Gradescope autograder: lesson {lesson.number}

Zip the contents of this folder (not the folder itself: setup.sh and run_autograder must be at
the root of the zip) and upload it as the assignment's autograder, on an Ubuntu base image.
Students submit {lesson.slug}.cu. Gradescope has no GPU: the GPU checks are reported as "not
run" with no score, and the total is that of the CPU tier.

    cd {out.name} && zip -r ../autograder_{lesson.name}.zip .
""")
        print(f"wrote {out}: setup.sh, run_autograder, README.md and course/ ({count} files)")
        print(f"zip it from inside: cd {out} && zip -r ../autograder_{lesson.name}.zip .")
    else:
        _write(out / "autograder.py", classroom50_autograder(lesson, args.limit, has_rubric))
        _write(out / "runtime.json", json.dumps({"runs-on": ["self-hosted", "gpu"]}, indent=2) + "\n")
        _write(out / "README.md", classroom50_readme(lesson, has_rubric))
        if has_rubric:
            shutil.copyfile(args.rubric, out / "rubric.json")
        print(f"wrote {out}: autograder.py, runtime.json, README.md"
              + (", rubric.json" if has_rubric else ""))
    return 0
