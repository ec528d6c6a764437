"""`course`: the command-line tool of the CUDA asynchronous data movement course.

The `course` script at the repository root calls main(). The modules:
  catalog.py   the lesson map (lessons/catalog.json)
  starter.py   the generator of starters from solutions (`sync`, `reset`)
  exercise.py  the TODOs one by one: their Chinese contracts and hint ladders (`hint`, `check`)
  build.py     cmake, ctest and the GPU probe
  junit.py     reading ctest's JUnit results (`check`, `list`)
  tour.py      parsing the lesson programs' output and the tour's summary
  i18n.py      the language of the messages (English, or Chinese with --lang zh)
  commands.py  one function per command, and the argument parser
  handout.py   `handout`: a student repository without the solutions, and what the other
               commands ask of one (a handout refuses what needs the solutions)
"""

import sys
from pathlib import Path

from . import handout, i18n
from .commands import build_parser
from .errors import CourseError


def split_extra_args(argv: list[str]) -> tuple[list[str], list[str]]:
    """Split at the first `--`: course's own arguments, then the program's arguments."""
    if "--" in argv:
        position = argv.index("--")
        return argv[:position], argv[position + 1 :]
    return argv, []


def main(argv: list[str] | None = None, root: Path | None = None) -> int:
    """Run one command and return its exit code.

    `root` is the repository root; by default the directory above tools/.
    """
    if argv is None:
        argv = sys.argv[1:]
    if root is None:
        root = Path(__file__).resolve().parents[2]
    own_args, extra_args = split_extra_args(argv)

    # The language first: --help and the usage errors are written in it too.
    asked = i18n.language_in_argv(own_args)
    # A handout (./course handout) of the Chinese edition speaks Chinese unless told otherwise,
    # and one of a single edition names every README README.md.
    i18n.set_language(i18n.choose(asked, default=handout.default_language(root)),
                      by_flag=asked in i18n.LANGUAGES)
    i18n.set_one_edition(handout.single_edition(root))
    i18n.install_argparse_words()
    parser = build_parser()
    args = parser.parse_args(own_args)  # exits 2 with a message on a usage error
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if extra_args and not args.accepts_extra:
        parser.error(f"`{args.command}` takes no arguments after --")
    args.extra = extra_args

    try:
        return args.handler(root, args)
    except CourseError as error:
        print(i18n.tr("course: error: {message}", message=error), file=sys.stderr)
        return error.exit_code
    except KeyboardInterrupt:
        print("course: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # `./course list | head`: the reader went away. Say nothing more, and keep Python
        # from complaining about the closed stdout when it exits.
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
