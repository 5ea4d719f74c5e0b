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
    report = commands.add_parser(
        "report",
        help="print an evaluation report",
        description="Evaluate every --score column against the --label column: prevalence, "
        "confusion counts and rates at chosen thresholds, ROC AUC and average precision with "
        "bootstrap and DeLong intervals, calibration, and a paired comparison of the models.",
    )
    report.add_argument("file", nargs="?", help="CSV/TSV, .npz or .parquet file")
    report.add_argument("--demo", action="store_true", help="use a built-in synthetic data set")
    report.add_argument("--label", help="name of the label column (0/1, true/false)")
    report.add_argument("--positive", help="the positive class, when labels are two names")
    report.add_argument("--score", action="append", default=[], help="a score column (repeat)")
    report.add_argument("--threshold", type=float, default=0.5, help="decision threshold (0.5)")
    report.add_argument("--cost-fp", type=float, help="cost of a false positive")
    report.add_argument("--cost-fn", type=float, help="cost of a false negative")
    report.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples (1000)")
    report.add_argument("--seed", type=int, default=0, help="bootstrap seed (0)")
    report.add_argument("--json", metavar="PATH", help="also write the numbers as JSON")
    report.add_argument("--plots", metavar="DIR", help="write ROC, PR and reliability PNGs")
    report.add_argument("--quiet", action="store_true", help="print nothing but errors")
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return 0
    from jaxmetrics._src import report

    try:
        return report.run(args)
    except report.ReportError as error:
        print(f"jaxmetrics report: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # unreadable file, unwritable --json/--plots path
        print(f"jaxmetrics report: error: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
