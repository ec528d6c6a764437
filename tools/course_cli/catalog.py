"""The lesson map, read from lessons/catalog.json.

Every command works from this list: which lessons exist, what their directories and
targets are called and which are built yet. (Each lesson's hints are its own:
lessons/NN_slug/given/hints.json, read by exercise.py.)
"""

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

from . import i18n
from .errors import CourseError
from .i18n import tr

CATALOG_PATH = Path("lessons") / "catalog.json"
CATALOG_INC_PATH = Path("common") / "src" / "lesson_catalog.inc"


@dataclass
class Lesson:
    """One lesson of the course map."""

    number: str  # two digits: "00", "01", ...
    slug: str  # lower-case identifier: "device_check"
    title: str
    minutes: int
    min_cc: str  # minimum compute capability, "8.0"
    ready: bool  # False while the lesson is only planned
    min_gpus: int = 1  # GPUs of one host the lesson needs ("min_gpus" in the catalog, default 1)
    # CUDA errors the lesson's correct program meets and handles on purpose (a second
    # cudaDeviceEnablePeerAccess, say): compute-sanitizer reports them, and the check, the
    # sanitize tests and the mutation tools all pass these names to tools/sanitize.py.
    expected_api_errors: list[str] = field(default_factory=list)
    # The Chinese edition's title (`./course --lang zh`); empty: the English one.
    title_zh: str = ""
    # This lesson's changes to the grading rubric (`./course grade`, rubric.py says the shape);
    # the catalog's top-level "rubric" holds the defaults every lesson starts from.
    rubric: dict = field(default_factory=dict)

    @property
    def name(self) -> str:
        """Directory and target name: "01_register_staged"."""
        return f"{self.number}_{self.slug}"

    @property
    def min_cc_tuple(self) -> tuple[int, int]:
        """The minimum compute capability as (major, minor), for comparisons."""
        major, minor = self.min_cc.split(".")
        return int(major), int(minor)

    def lesson_dir(self, root: Path) -> Path:
        return root / "lessons" / self.name

    def solution_dir(self, root: Path) -> Path:
        return root / "solutions" / self.name


def sanitize_arguments(lesson: Lesson) -> list[str]:
    """tools/sanitize.py's arguments for the lesson's expected API errors."""
    return [arg for name in lesson.expected_api_errors for arg in ("--expected-api-error", name)]


def load_catalog(root: Path) -> list[Lesson]:
    """Read and check lessons/catalog.json under the repository root `root`."""
    path = root / CATALOG_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise CourseError(f"{path}: the lesson catalog is missing") from None
    except json.JSONDecodeError as error:
        raise CourseError(f"{path}:{error.lineno}: not valid JSON: {error.msg}") from None

    lessons = []
    for index, entry in enumerate(data.get("lessons", [])):
        where = f"{path}: lesson entry {index}"
        try:
            lesson = Lesson(
                number=entry["number"],
                slug=entry["slug"],
                title=entry["title"],
                minutes=entry["minutes"],
                min_cc=entry["min_cc"],
                ready=entry["ready"],
                min_gpus=entry.get("min_gpus", 1),
                expected_api_errors=entry.get("expected_api_errors", []),
                title_zh=entry.get("title_zh", ""),
                rubric=entry.get("rubric", {}),
            )
        except (KeyError, TypeError) as error:
            raise CourseError(f"{where}: missing or malformed field {error}") from None
        if "hints" in entry or "hints_zh" in entry:
            raise CourseError(f"{where}: hints live in lessons/NN_slug/given/hints.json, one "
                              "ladder per TODO, not in the catalog")
        _check_lesson(lesson, where)
        lessons.append(lesson)

    numbers = [lesson.number for lesson in lessons]
    if numbers != sorted(set(numbers)):
        raise CourseError(f"{path}: lesson numbers must be unique and in order, got {numbers}")
    if not lessons:
        raise CourseError(f"{path}: no lessons")
    return lessons


def catalog_rubric(root: Path) -> dict:
    """The catalog's top-level "rubric": the points per kind of check and the weights per TODO
    tag that every lesson's grade starts from (tools/course_cli/rubric.py)."""
    path = root / CATALOG_PATH
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as error:
        raise CourseError(f"{path}: cannot read the catalog: {error}") from None
    rubric = data.get("rubric", {})
    if not isinstance(rubric, dict) or not all(
            isinstance(rubric.get(key, {}), dict) for key in ("kinds", "todo_tags")):
        raise CourseError(f'{path}: "rubric" must be an object with "kinds" and "todo_tags" objects')
    return rubric


def _check_lesson(lesson: Lesson, where: str) -> None:
    """Raise CourseError when a catalog entry has a field of the wrong shape."""
    if not re.fullmatch(r"\d\d", str(lesson.number)):
        raise CourseError(f"{where}: number must be two digits, got {lesson.number!r}")
    if not re.fullmatch(r"[a-z][a-z0-9_]*", str(lesson.slug)):
        raise CourseError(f"{where}: slug must be a lower-case identifier, got {lesson.slug!r}")
    if not re.fullmatch(r"\d+\.\d", str(lesson.min_cc)):
        raise CourseError(f"{where}: min_cc must look like \"8.0\", got {lesson.min_cc!r}")
    if not isinstance(lesson.title, str) or not lesson.title:
        raise CourseError(f"{where}: title must be a non-empty string")
    if not isinstance(lesson.minutes, int) or isinstance(lesson.minutes, bool):
        raise CourseError(f"{where}: minutes must be a whole number")
    if not isinstance(lesson.ready, bool):
        raise CourseError(f"{where}: ready must be true or false")
    if not isinstance(lesson.min_gpus, int) or isinstance(lesson.min_gpus, bool) or lesson.min_gpus < 1:
        raise CourseError(f"{where}: min_gpus must be a whole number >= 1, got {lesson.min_gpus!r}")
    if not isinstance(lesson.rubric, dict):
        raise CourseError(f"{where}: rubric must be an object (see tools/course_cli/rubric.py)")
    if not isinstance(lesson.title_zh, str):
        raise CourseError(f"{where}: title_zh must be a string")
    if not isinstance(lesson.expected_api_errors, list) or not all(
            isinstance(e, str) and re.fullmatch(r"cudaError\w+", e)
            for e in lesson.expected_api_errors):
        raise CourseError(f"{where}: expected_api_errors must be a list of cudaError names, "
                          f"got {lesson.expected_api_errors!r}")


def find_lesson(lessons: list[Lesson], text: str) -> Lesson:
    """The lesson named by `text`: "1", "01", "01_register_staged" or "register_staged"."""
    wanted = text.strip().lower()
    number, _, slug = wanted.partition("_")
    for lesson in lessons:
        if wanted == lesson.slug:
            return lesson
        # isascii(): "²".isdigit() is True, but int("²") fails.
        if number.isascii() and number.isdigit() and int(number) == int(lesson.number):
            if slug in ("", lesson.slug):
                return lesson
    known = ", ".join(lesson.name for lesson in lessons)
    raise CourseError(tr("unknown lesson {text}; the lessons are: {known}", text=repr(text),
                         known=known))


def find_ready_lesson(lessons: list[Lesson], text: str) -> Lesson:
    """Like find_lesson, but a lesson that is only planned is an error too."""
    lesson = find_lesson(lessons, text)
    if not lesson.ready:
        raise CourseError(tr("lesson {number} ({title}) is planned but not built yet; "
                             "`./course list` shows the lessons that are ready",
                             number=lesson.number, title=i18n.title(lesson)))
    return lesson


def next_lesson(lessons: list[Lesson], lesson: Lesson) -> Lesson | None:
    """The lesson after `lesson` in the map, or None after the last one."""
    position = lessons.index(lesson)
    if position + 1 < len(lessons):
        return lessons[position + 1]
    return None


def c_string(text: str) -> str:
    """`text` as a C/C++ string literal."""
    escaped = (
        text.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n").replace("\t", "\\t")
    )
    return f'"{escaped}"'


def catalog_inc_text(lessons: list[Lesson]) -> str:
    """The contents of common/src/lesson_catalog.inc: one C++ initializer per lesson."""
    lines = [
        "// Generated by ./course sync from lessons/catalog.json: do not edit; "
        "edit the catalog and run ./course sync."
    ]
    for lesson in lessons:
        major, minor = lesson.min_cc_tuple
        ready = "true" if lesson.ready else "false"
        lines.append(
            f"{{{c_string(lesson.number)}, {c_string(lesson.slug)}, {c_string(lesson.title)}, "
            f"{major}, {minor}, {ready}, {lesson.min_gpus}}},"
        )
    return "\n".join(lines) + "\n"
