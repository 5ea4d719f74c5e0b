"""The `jaxmetrics` command line."""

from __future__ import annotations

import argparse
import sys


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="jaxmetrics",
        description="Evaluate binary classifiers from a file of labels and scores.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    report = commands.add_parser("report", help="print an evaluation report")
    report.add_argument("file", nargs="?", help="CSV/TSV file with a label and score columns")
    report.add_argument("--demo", action="store_true", help="use a built-in synthetic data set")
    report.add_argument("--label", help="name of the 0/1 label column")
    report.add_argument("--score", action="append", default=[], help="a score column (repeatable)")
    report.add_argument("--threshold", type=float, default=0.5, help="decision threshold")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from jaxmetrics._src import report

    return report.run(args, out=sys.stdout)


if __name__ == "__main__":
    sys.exit(main())
