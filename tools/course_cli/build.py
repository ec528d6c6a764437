"""Calling cmake, ctest and the built programs, printing each command first.

Every command is printed as `$ command` before it runs, so students see the plain
cmake/ctest lines they can type themselves.
"""

import os
import re
import shlex
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import CourseError
from .i18n import tr

PROBE_NAME = "course_gpu_probe"
SKIP_EXIT_CODE = 77  # "cannot run here": no GPU, or compute capability too low


def build_root(root: Path) -> Path:
    """Where the build directories live: $COURSE_BUILD_ROOT, or <repo>/build."""
    override = os.environ.get("COURSE_BUILD_ROOT")
    return Path(override).resolve() if override else root / "build"


def shown(path: Path, root: Path) -> str:
    """`path` relative to the repository root when it is inside it (shorter to read)."""
    try:
        return path.relative_to(root).as_posix()
    except ValueError:
        return str(path)


def print_command(command: list[str]) -> None:
    print("$ " + shlex.join(command), flush=True)


def run_command(command: list[str], root: Path) -> int:
    """Print and run `command` in the repository root; its output goes straight through."""
    print_command(command)
    try:
        return subprocess.call(command, cwd=root)
    except FileNotFoundError:
        raise CourseError(tr("cannot run {program}: not found", program=command[0]),
                          exit_code=1) from None


def run_streaming(command: list[str], root: Path) -> tuple[int, list[str]]:
    """Print and run `command`, echoing its output line by line and returning it too."""
    print_command(command)
    lines = []
    try:
        process = subprocess.Popen(
            command,
            cwd=root,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="replace",
        )
    except FileNotFoundError:
        raise CourseError(tr("cannot run {program}: not found", program=command[0]),
                          exit_code=1) from None
    with process:
        for line in process.stdout:
            print(line, end="", flush=True)
            lines.append(line.rstrip("\n"))
    return process.returncode, lines


@dataclass
class BuildTree:
    """One CMake build directory made from a configure preset (student, default, ...)."""

    root: Path  # the repository root
    preset: str

    @property
    def binary_dir(self) -> Path:
        return build_root(self.root) / self.preset

    @property
    def bin_dir(self) -> Path:
        return self.binary_dir / "bin"

    @property
    def results_dir(self) -> Path:
        return self.binary_dir / "results"

    @property
    def custom_location(self) -> bool:
        """True when COURSE_BUILD_ROOT moves the tree away from the preset's build/<preset>."""
        return self.binary_dir != self.root / "build" / self.preset

    def executable(self, target: str) -> Path:
        return self.bin_dir / target

    def is_configured(self) -> bool:
        return (self.binary_dir / "CMakeCache.txt").exists()

    def configure_command(self) -> list[str]:
        command = ["cmake", "--preset", self.preset]
        if self.custom_location:
            command += ["-B", str(self.binary_dir)]
        return command

    def build_command(self, target: str | list[str] | None = None) -> list[str]:
        if self.custom_location:
            command = ["cmake", "--build", str(self.binary_dir)]
        else:
            command = ["cmake", "--build", "--preset", self.preset]
        targets = [target] if isinstance(target, str) else list(target or [])
        if targets:
            command += ["--target", *targets]
        return command

    def cache_value(self, name: str) -> str:
        """A value of the configured tree's CMakeCache.txt ("" when unset or NOTFOUND)."""
        try:
            text = (self.binary_dir / "CMakeCache.txt").read_text(encoding="utf-8")
        except OSError:
            return ""
        for line in text.splitlines():
            key, _, value = line.partition("=")
            if key.split(":", 1)[0] == name:
                return "" if value.endswith("NOTFOUND") else value
        return ""

    def configure_if_needed(self) -> None:
        """Run the configure step once; later builds reuse the tree."""
        if self.is_configured():
            return
        if run_command(self.configure_command(), self.root) != 0:
            raise CourseError(tr("cmake --preset {preset} failed (see above)", preset=self.preset),
                              exit_code=1)

    def build(
        self, target: str | list[str] | None = None, advice: str | None = None
    ) -> None:
        """Build some targets (or everything); a failed build is a CourseError with exit 1."""
        if run_command(self.build_command(target), self.root) != 0:
            what = tr("target {target}", target=target) if isinstance(target, str) else (
                tr("the lessons' programs") if target else tr("the project"))
            raise CourseError(tr("building {what} failed: {advice}", what=what,
                                 advice=advice or tr("read the first error above")), exit_code=1)


@dataclass
class ProbeResult:
    """What course_gpu_probe said about this machine."""

    status: str  # "gpu", "no-gpu" (exit 77), "error" (another failure), "not-built"
    compute_capability: tuple[int, int] | None
    message: str  # the device line, or the reason there is none
    gpu_count: int = 0  # GPUs the probe sees ("GPUs visible: N"; 1 when it does not say)


def parse_probe_output(exit_code: int, output: str) -> ProbeResult:
    """Interpret the probe's exit code and output (stdout and stderr together)."""
    text = output.strip()
    if exit_code == SKIP_EXIT_CODE:
        return ProbeResult("no-gpu", None, text or "the probe gave no reason")
    match = re.search(r"compute capability\s+(\d+)\.(\d+)", output)
    if exit_code == 0 and match:
        first_line = text.splitlines()[0] if text else ""
        count = re.search(r"^GPUs visible:\s*(\d+)", output, re.MULTILINE)
        return ProbeResult("gpu", (int(match.group(1)), int(match.group(2))), first_line,
                           int(count.group(1)) if count else 1)
    return ProbeResult("error", None, f"the probe exited with {exit_code}: {text}")


def run_probe(probe: Path) -> ProbeResult:
    """Run a built course_gpu_probe quietly (no `$` line) and parse what it says."""
    if not probe.exists():
        return ProbeResult("not-built", None, f"{probe} is not built")
    try:
        completed = subprocess.run(
            [str(probe)], capture_output=True, text=True, errors="replace", timeout=60
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return ProbeResult("error", None, f"cannot run {probe}: {error}")
    return parse_probe_output(completed.returncode, completed.stdout + completed.stderr)
