"""The frame every plot script shares: its command line, its self-test's skip when
matplotlib is missing, and matplotlib set up to draw into files.

A plot script (tools/plot_*.py) holds what is its own: reading its CSVs, drawing the
picture, and a self-test that writes small synthetic CSVs in a temporary folder, checks the
parsing and plots them. Its main() is one call of this module:

    def main():   # one CSV in, one picture beside it (or -o PATH)
        return plot_frame.one_csv_main(__doc__, self_test, plot_csv, "the sweep CSV (...)")

    def main():   # other inputs: the script adds its own arguments and makes the picture
        return plot_frame.main(__doc__, self_test, make, "the PNG to write", add_arguments)

Exit codes, the same in every script: 0 the picture was written (or the self-test passed),
2 a usage error, 77 matplotlib is missing (ctest reports the self-test as skipped); an input
that cannot be plotted exits non-zero, naming why.
"""
import argparse
import pathlib
import sys

SKIP = 77


def pyplot():
    """matplotlib.pyplot, drawing into files (the Agg backend: no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def has_matplotlib():
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        return False
    return True


def main(doc, self_test, make, output_help, add_arguments=None):
    """Parses the command line (-o/--output, the script's own arguments, --self-test) and
    runs the self-test, or `make(args, parser)`: it returns the picture's path (printed as
    "wrote PATH", or a longer text after "wrote"), or an exit code."""
    parser = argparse.ArgumentParser(description=" ".join(doc.split("\n\n")[0].split()))
    parser.add_argument("-o", "--output", help=output_help)
    if add_arguments:
        add_arguments(parser)
    parser.add_argument("--self-test", action="store_true", help="check this script and exit")
    args = parser.parse_args()
    if args.self_test:
        return self_test()
    made = make(args, parser)
    if isinstance(made, int):
        return made
    print(f"wrote {made}")
    return 0


def one_csv_main(doc, self_test, plot_csv, csv_help,
                 default_output=lambda csv: csv.with_suffix(".png")):
    """main() of a script that draws one CSV: `plot_csv(csv, output)` writes the picture of
    the CSV (a pathlib.Path) to `output`, by default `default_output(csv)` (beside the CSV,
    with the suffix .png). An input it cannot plot (OSError, ValueError) exits 1, naming
    why."""
    def make(args, parser):
        if not args.csv:
            parser.error("give the sweep CSV (or --self-test)")
        if not has_matplotlib():
            print("matplotlib is not installed: nothing drawn", file=sys.stderr)
            return SKIP
        csv = pathlib.Path(args.csv)
        output = pathlib.Path(args.output) if args.output else default_output(csv)
        try:
            plot_csv(csv, output)
        except (OSError, ValueError) as error:
            print(f"error: {error}", file=sys.stderr)
            return 1
        return output

    return main(doc, self_test, make, "the PNG to write (default: next to the CSV)",
                lambda parser: parser.add_argument("csv", nargs="?", help=csv_help))
