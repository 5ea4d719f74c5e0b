"""The `jaxmetrics` command line.

Every failure ends in one line on stderr and an exit status: 2 for the user's input or options
(argparse's own errors included), 1 for an internal error, 130 for Ctrl-C. JAXMETRICS_DEBUG=1
lets internal errors show their traceback.
"""

from __future__ import annotations

import argparse
import math
import os
import signal
import sys
import threading
from pathlib import Path

from jaxmetrics import __version__

_SEED_LIMIT = 2**64


class _Parser(argparse.ArgumentParser):
    """argparse, with errors on one line (no usage block): `PROG: error: MESSAGE`, status 2."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: error: {message}\n")


def _finite(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number; got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"expected a finite number; got {text!r}")
    return value


def _cost(text: str) -> float:
    value = _finite(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"a cost must be >= 0; got {text!r}")
    return value


def _seed(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer; got {text!r}") from None
    if not 0 <= value < _SEED_LIMIT:
        raise argparse.ArgumentTypeError(f"must be in [0, 2**64 - 1]; got {text}")
    return value


def _parsers() -> tuple[argparse.ArgumentParser, argparse.ArgumentParser]:
    """The `jaxmetrics` parser and its `report` subcommand's."""
    parser = _Parser(
        prog="jaxmetrics",
        description="Evaluate binary classifiers from a file of labels and scores.",
    )
    parser.add_argument("--version", action="version", version=f"jaxmetrics {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    report = commands.add_parser(
        "report",
        help="print an evaluation report",
        description="Evaluate every --score column against the --label column: prevalence, "
        "confusion counts and rates at chosen thresholds, ROC AUC and average precision with "
        "bootstrap and DeLong intervals, calibration, and a paired comparison of the models.",
    )
    add = report.add_argument
    add("file", nargs="?", help="CSV/TSV, .npz or .parquet file")
    add("--demo", action="store_true", help="use a built-in synthetic data set")
    add("--label", help="name of the label column (0/1, true/false)")
    add("--positive", help="the positive class, when labels are two names")
    add("--score", action="append", default=[], help="a score column (repeat)")
    add("--threshold", type=_finite, default=0.5, help="decision threshold (0.5)")
    add("--cost-fp", type=_cost, help="cost of a false positive (>= 0)")
    add("--cost-fn", type=_cost, help="cost of a false negative (>= 0)")
    add("--resamples", type=int, default=1000, help="bootstrap resamples (1000)")
    add("--cluster", metavar="COL", help="resample whole groups of rows (e.g. a patient id column)")
    add("--seed", type=_seed, default=0, help="bootstrap seed, 0 to 2**64 - 1 (0)")
    add("--json", metavar="PATH", help="also write the numbers as JSON")
    add("--plots", metavar="DIR", help="write ROC, PR and reliability PNGs")
    add("--quiet", action="store_true", help="print nothing but errors")
    add(
        "--no-cache",
        action="store_true",
        help="do not keep compiled code in the user's cache directory (also JAXMETRICS_NO_CACHE=1)",
    )
    return parser, report


def cache_directory() -> Path:
    """Where compiled programs are kept: $XDG_CACHE_HOME/jaxmetrics/programs, or
    ~/.cache/jaxmetrics/programs."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    root = Path(base) if os.path.isabs(base) else Path.home() / ".cache"
    return root / "jaxmetrics" / "programs"


def _use_compilation_cache() -> bool:
    """Keep every compiled program on disk, so a second run neither traces nor compiles it.

    jaxmetrics' own cache (`programs`) finds a program without tracing it. JAX's persistent
    cache stays off beside it: an executable that JAX had loaded from its cache, serialized
    again, did not run. A cache the user chose (JAX_COMPILATION_CACHE_DIR) is the only one.
    Returns whether a cache is in use."""
    import jax

    from jaxmetrics._src import programs

    if jax.config.jax_compilation_cache_dir:  # the user chose JAX's cache
        return True
    directory = cache_directory()
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError:
        return False  # no writable cache: run without one rather than fail
    if not os.access(directory, os.W_OK):
        return False
    programs.use(directory)
    return True


# where numpy runs inside a compiled program: the library's host kernels, JAX's callbacks
_CALLBACK_FILES = (
    os.path.join("jaxmetrics", "_src", "host_kernels.py"),
    os.path.join("jax", "_src", "callback.py"),
)


def _in_host_callback(frame) -> bool:
    while frame is not None:
        if frame.f_code.co_filename.endswith(_CALLBACK_FILES):
            return True
        frame = frame.f_back
    return False


def _on_interrupt(number, frame) -> None:
    """Ctrl-C as KeyboardInterrupt, except inside a host kernel (the library's numpy sort and
    bincount on CPU, called from a compiled program): it would become an XLA runtime error, so
    the signal is delivered again a moment later, once the kernel has returned."""
    if _in_host_callback(frame):
        threading.Timer(0.05, _deliver_again).start()
        return
    raise KeyboardInterrupt


def _deliver_again() -> None:
    if signal.getsignal(signal.SIGINT) is _on_interrupt:  # the report is still running
        os.kill(os.getpid(), signal.SIGINT)


def _one_line(error: BaseException) -> str:
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def main(argv: list[str] | None = None) -> int:
    parser, report_parser = _parsers()
    args, unknown = parser.parse_known_args(argv)
    if unknown:  # name the subcommand in the message, as its own errors do
        (report_parser if args.command == "report" else parser).error(
            f"unrecognized arguments: {' '.join(unknown)}"
        )
    if args.command is None:
        parser.print_help()
        return 0
    prog = "jaxmetrics report"
    from jaxmetrics._src import report

    handles_signals = threading.current_thread() is threading.main_thread()
    previous = signal.signal(signal.SIGINT, _on_interrupt) if handles_signals else None
    use_cache = not (args.no_cache or os.environ.get("JAXMETRICS_NO_CACHE", "") not in ("", "0"))
    try:
        # every program of the report is kept (`programs`), those calling the CPU's numpy
        # kernels included: they are custom calls registered by name (`host_kernels`)
        return report.run(args, before_jax=_use_compilation_cache if use_cache else None)
    except report.ReportError as error:
        print(f"{prog}: error: {error}", file=sys.stderr)
        return 2
    except OSError as error:  # an unreadable file, an output that could not be written
        print(f"{prog}: error: {_one_line(error)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as error:
        if os.environ.get("JAXMETRICS_DEBUG", "") not in ("", "0"):
            raise
        print(
            f"{prog}: internal error: {_one_line(error)} (JAXMETRICS_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 1
    finally:
        if handles_signals:
            signal.signal(signal.SIGINT, previous)


if __name__ == "__main__":
    sys.exit(main())
