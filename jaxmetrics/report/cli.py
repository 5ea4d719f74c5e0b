"""The `jaxmetrics` command line.

Every failure ends in one line on stderr and an exit status: 2 for the user's input or options
(argparse's own errors included), 1 for an internal error (also a plot that could not be drawn:
the text, the JSON and the other plots are then complete), 130 for Ctrl-C. JAXMETRICS_DEBUG=1
lets internal errors show their traceback.

Ctrl-C during a report exits 130 wherever it lands (`_CtrlC`), with one line, "interrupted",
and no output written unless the report had finished writing it.
"""

from __future__ import annotations

import _thread
import argparse
import importlib.machinery
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
    add(
        "--multiclass",
        action="store_true",
        help="one probability column per class (automatic when the labels hold more than two "
        "classes)",
    )
    add("--score", action="append", default=[], help="a score column (repeat)")
    add("--threshold", type=_finite, default=0.5, help="decision threshold (0.5)")
    add("--cost-fp", type=_cost, help="cost of a false positive (>= 0)")
    add("--cost-fn", type=_cost, help="cost of a false negative (>= 0)")
    add("--resamples", type=int, default=1000, help="bootstrap resamples (1000)")
    add("--cluster", metavar="COL", help="resample whole groups of rows (e.g. a patient id column)")
    add(
        "--group",
        metavar="COL",
        help="every model by group (e.g. a site or sex column): AUC, rates and their gaps",
    )
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


def cache_root() -> Path:
    """The command line's caches: $XDG_CACHE_HOME/jaxmetrics, or ~/.cache/jaxmetrics."""
    base = os.environ.get("XDG_CACHE_HOME", "")
    return (Path(base) if os.path.isabs(base) else Path.home() / ".cache") / "jaxmetrics"


def cache_directory() -> Path:
    """Where compiled programs are kept (JAX's persistent compilation cache)."""
    return cache_root() / "jax"


def programs_directory() -> Path:
    """Where the report's exported programs are kept (`programs.ProgramStore`)."""
    return cache_root() / "programs"


def _private(directory: Path) -> bool:
    """Make `directory` private (0700) if it is new; whether it is this user's and writable: a
    cache holds code that runs."""
    try:
        directory.mkdir(mode=0o700, parents=True, exist_ok=True)
        owner = directory.stat().st_uid
    except OSError:
        return False  # no writable cache: run without one rather than fail
    return owner == os.getuid() and os.access(directory, os.W_OK)


# the command line's caches (JAX's programs and the exported ones) together at most this many
# bytes: each new size of data adds about 1 MB, which nothing else would ever remove
CACHE_BUDGET = 256 * 2**20
_ours: set[Path] = set()  # the cache directories this process made its own (pruned after a run)


def prune_caches(directories: list[Path], budget: int = CACHE_BUDGET) -> None:
    """Past `budget` bytes in all, delete the least recently used files of `directories` (the
    later of their access and modification times) until three quarters of it are left. Only
    this user's regular files; a file another run deletes first, or one that cannot be
    deleted, is passed over (a run that misses a program compiles it again)."""
    files = []
    for directory in directories:
        try:
            entries = list(os.scandir(directory))
        except OSError:
            continue
        for entry in entries:
            try:
                info = entry.stat(follow_symlinks=False)
            except OSError:
                continue
            if entry.is_file(follow_symlinks=False) and info.st_uid == os.getuid():
                files.append((max(info.st_atime, info.st_mtime), info.st_size, entry.path))
    total = sum(size for _, size, _ in files)
    if total <= budget:
        return
    for _, size, path in sorted(files):
        if total <= budget * 3 // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size


def _use_caches():
    """Keep compiled programs on disk with JAX's persistent compilation cache, so a second run
    compiles only the programs that call numpy back (JAX keeps none of those), and the report's
    own exported programs beside it, so that it does not trace them again.

    A cache the user chose (JAX_COMPILATION_CACHE_DIR) is used as it is. Ours are made private
    (0700) and used only if this user owns them. Returns the `command.Caches` in use."""
    import jax

    from jaxmetrics.report.command import Caches

    if not jax.config.jax_compilation_cache_dir:  # else: the user chose JAX's cache
        if not _private(cache_directory()):
            return Caches(compiled=False, programs=None)
        _ours.add(cache_directory())
        jax.config.update("jax_compilation_cache_dir", str(cache_directory()))
        # the report's programs compile in well under JAX's default 1 s floor: keep them all
        jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
    programs = programs_directory()
    if not _private(programs):
        return Caches(compiled=True, programs=None)
    _ours.add(programs)
    return Caches(compiled=True, programs=programs)


# where numpy runs inside a compiled program: the library's host kernels, JAX's callbacks
_CALLBACK_FILES = (
    os.path.join("jaxmetrics", "_src", "core", "host_kernels.py"),
    os.path.join("jax", "_src", "callback.py"),
)


def _cannot_take_interrupt(frame) -> bool:
    """Whether a KeyboardInterrupt raised in `frame` would do harm: inside a host kernel it
    would become an XLA runtime error, and inside the set-up of a compiled extension module
    it crashed the process (raised while jaxlib's were set up on `import jax`, a segfault in 4
    of 5 tries)."""
    while frame is not None:
        if frame.f_code.co_filename.endswith(_CALLBACK_FILES):
            return True
        if frame.f_code.co_name in ("create_module", "exec_module") and isinstance(
            frame.f_locals.get("self"), importlib.machinery.ExtensionFileLoader
        ):
            return True
        frame = frame.f_back
    return False


class _CtrlC:
    """Ctrl-C during a report (a context): KeyboardInterrupt in the main thread, and `received`
    set, so that `main` exits 130 however the report ends.

    Where the exception cannot be taken, the signal is delivered again 50 ms later: inside a
    host kernel (the library's numpy sort and bincount on CPU, called from a compiled program)
    or an import (`_cannot_take_interrupt`); and inside a garbage-collector callback or a
    `__del__` (JAX has both), where Python prints "Exception ignored" and carries on (the report
    then finished with exit 0 in 13 of 60 runs). Once the report is over, a signal is only
    recorded. Outside the main thread, which alone receives signals, it does nothing."""

    def __init__(self):
        self.received = False
        self._active = threading.current_thread() is threading.main_thread()
        self._over = False
        self._lock = threading.Lock()  # `_over` set while no delivery is on its way

    def __enter__(self) -> _CtrlC:
        if self._active:
            self._previous_handler = signal.signal(signal.SIGINT, self._on_signal)
            self._previous_hook, sys.unraisablehook = sys.unraisablehook, self._on_unraisable
        return self

    def __exit__(self, *exception) -> None:
        with self._lock:
            self._over = True
        if self._active:
            # a signal still pending reaches `_on_signal` here (recorded), before the swap
            signal.signal(signal.SIGINT, self._previous_handler)
            sys.unraisablehook = self._previous_hook

    def _on_signal(self, number, frame) -> None:
        self.received = True
        if self._over:
            return
        if _cannot_take_interrupt(frame):
            self._deliver_later()
            return
        raise KeyboardInterrupt

    def _on_unraisable(self, unraisable) -> None:
        if issubclass(unraisable.exc_type, KeyboardInterrupt):  # ours, swallowed: again
            self._deliver_later()
        else:
            self._previous_hook(unraisable)

    def _deliver_later(self) -> None:
        threading.Timer(0.05, self._deliver).start()

    def _deliver(self) -> None:
        with self._lock:
            if not self._over:
                _thread.interrupt_main()  # as a signal: `_on_signal` on the main thread


def _leave(status: int) -> None:
    """End the process at once, without the interpreter's exit, once stdout and stderr are
    flushed (every file the report writes is closed when it returns). Interrupted, the report's
    bootstrap thread may still be inside XLA (compiling), and an interpreter exiting under it
    aborted ("FATAL: exception not rethrown") or crashed in 22 of 60 runs interrupted during
    compilation; finished, the interpreter's exit would only take JAX's backends and compiled
    programs apart (JAX's exit handler), 0.3-0.5 s of a 4-5 s `report --demo`."""
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe: nothing more can be said
            pass
    os._exit(status)


def main(argv: list[str] | None = None) -> int:
    """The command for `argv` (sys.argv[1:] when None); returns the exit status.

    The installed command (`argv` None) leaves the process at once (`_leave`) when interrupted
    (status 130) or once JAX has run; called with `argv`, from Python, it returns the status
    (130 when interrupted: the report's bootstrap thread then stops at its next step)."""
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
    interrupts = _CtrlC()
    try:
        with interrupts:  # from the first import on: numpy, then JAX, take seconds
            status, message = _report(args, prog)
    except KeyboardInterrupt:
        status, message = 130, None
    if interrupts.received or status == 130:  # whatever the interrupt became on its way
        status, message = 130, f"{prog}: interrupted"
    if message is not None:
        print(message, file=sys.stderr)
    if argv is None and (status == 130 or "jax" in sys.modules):
        _leave(status)
    return status


def _report(args: argparse.Namespace, prog: str) -> tuple[int, str | None]:
    """Run the report: its exit status, and the line to print on stderr (None: none)."""
    from jaxmetrics import report
    from jaxmetrics.report.command import one_line

    use_cache = not (args.no_cache or os.environ.get("JAXMETRICS_NO_CACHE", "") not in ("", "0"))
    try:
        # programs are kept in JAX's persistent cache, but for those calling numpy back
        status = report.run(args, before_jax=_use_caches if use_cache else None)
        prune_caches(sorted(_ours))  # once the report is out (a cache the user chose is not ours)
        return status, None
    except report.ReportError as error:
        return 2, f"{prog}: error: {error}"
    except OSError as error:  # an unreadable file, an output that could not be written
        return 2, f"{prog}: error: {one_line(error)}"
    except Exception as error:
        if os.environ.get("JAXMETRICS_DEBUG", "") not in ("", "0"):
            raise
        return (
            1,
            f"{prog}: internal error: {one_line(error)} (JAXMETRICS_DEBUG=1 shows the traceback)",
        )


if __name__ == "__main__":
    sys.exit(main())
