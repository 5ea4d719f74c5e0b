"""`jaxmetrics report`: check the options and output paths, read, evaluate, then write.

Once the numbers are computed, the text is printed and the JSON written before any plot is
drawn, so a plot that fails never costs the report: it is left out, named on one line of
stderr, the other plots are written, and the exit status is 1 (a requested output is missing,
which a script must be able to see). Every file appears whole or not at all: it is written under
a temporary name beside its destination and then renamed, the plots all together; a run that
fails or is interrupted before its outputs leaves none.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple, TextIO

from jaxmetrics import __version__
from jaxmetrics.report.multiclass_read import load
from jaxmetrics.report.multiclass_render import render_multiclass
from jaxmetrics.report.multiclass_result import TOP_K, MulticlassMetadata
from jaxmetrics.report.plots import FILES, figure, pyplot, save
from jaxmetrics.report.read import (
    DEMO_GROUP_COLUMN,
    MulticlassTable,
    ReportError,
    Table,
    demo_data,
    multiclass_demo_data,
)
from jaxmetrics.report.render import render
from jaxmetrics.report.result import Metadata, Report, to_json

CALIBRATION_BINS = 10


def one_line(error: BaseException) -> str:
    """`error` as `Type: first line of its message`."""
    lines = str(error).strip().splitlines()
    text = lines[0] if lines else ""
    return f"{type(error).__name__}: {text}" if text else type(error).__name__


def _is_terminal(stream: TextIO) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):  # no isatty, or closed
        return False


class Progress:
    """Bootstrap progress on stderr. On a terminal, one line rewritten in place (`close` ends a
    line left open); elsewhere (a log file, a pipe), where a carriage return would pile every
    update onto one line, whole lines: the first update, one each tenth of the work, the last."""

    def __init__(self, err: TextIO):
        self.err, self.open = err, False
        self.in_place = _is_terminal(err)
        self._shown: tuple[str, int] | None = None  # (label, tenths done) of the last line

    def __call__(self, label: str, done: int, total: int) -> None:
        text = f"bootstrap {label}: {done}/{total} resamples"
        if not self.in_place:
            shown = (label, 10 * done // total)
            if shown != self._shown:
                self._shown = shown
                self.err.write(text + "\n")
                self.err.flush()
            return
        self.open = True  # before writing: an interrupt may come at any moment
        self.err.write("\r" + text)
        if done == total:
            self.err.write("\n")
            self.open = False
        self.err.flush()

    def close(self) -> None:
        if self.open:
            self.err.write("\n")
            self.open = False


def _probe(directory: Path, option: str, given: Path) -> None:
    """Raise unless a file can be created in `directory` (os.access is blind for root)."""
    probe = directory / f".jaxmetrics-probe-{os.getpid()}"
    try:
        probe.open("xb").close()
        probe.unlink()
    except OSError as error:
        reason = error.strerror or str(error)
        raise ReportError(f"{option} {given}: cannot write in {directory} ({reason})") from None


def check_output_paths(json_path: str | None, plots_dir: str | None) -> None:
    """Fail at once, before any work, on an output path that cannot be written."""
    if json_path:
        path = Path(json_path)
        parent = path.parent
        if path.is_dir():
            raise ReportError(f"--json {path}: is a directory; give a file name")
        if not parent.is_dir():
            what = "is not a directory" if parent.exists() else "does not exist"
            raise ReportError(f"--json {path}: {parent} {what}")
        _probe(parent, "--json", path)
    if plots_dir:
        path = Path(plots_dir)
        existing = path
        while not existing.exists() and existing != existing.parent:
            existing = existing.parent
        if not existing.is_dir():
            raise ReportError(f"--plots {path}: {existing} is not a directory")
        _probe(existing, "--plots", path)
        pyplot()  # matplotlib missing: say so now, not after the computation


def _staged_name(final: Path) -> Path:
    return final.with_name(f".{final.name}.{os.getpid()}.tmp")


def write_whole(final: Path, text: str) -> None:
    """Write `text` (UTF-8) under a temporary name beside `final`, then rename it into place."""
    temporary = _staged_name(final)
    try:
        with temporary.open("x", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(temporary, final)
    except BaseException:
        temporary.unlink(missing_ok=True)
        raise


def _remove_empty(folders: list[Path]) -> None:
    for folder in reversed(folders):
        try:
            folder.rmdir()
        except OSError:
            pass


def write_plots(directory: Path, report: Report) -> tuple[list[Path], dict[str, Exception]]:
    """Draw each figure and write it as PNG in `directory` (made if need be), all renamed into
    place together; returns the files written and, by file name, the error of each figure that
    failed (the others are still written)."""
    plt = pyplot()
    staged: list[tuple[Path, Path]] = []
    failed: dict[str, Exception] = {}
    created = [p for p in (directory, *directory.parents) if not p.exists()][::-1]
    try:
        for folder in created:
            folder.mkdir()
        for name in FILES:
            final, open_before = directory / name, set(plt.get_fignums())
            try:
                drawn = figure(name, report)
                if drawn is None:
                    continue
                staged.append((_staged_name(final), final))
                with staged[-1][0].open("xb") as handle:
                    save(drawn, handle)
            except Exception as error:  # noqa: BLE001 (a failed plot costs that plot alone)
                failed[name] = error
                if staged and staged[-1][1] == final:
                    staged.pop()[0].unlink(missing_ok=True)
                for number in set(plt.get_fignums()) - open_before:
                    plt.close(number)
        for temporary, final in staged:
            os.replace(temporary, final)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        _remove_empty(created)
        raise
    if not staged:
        _remove_empty(created)
    return [final for _, final in staged], failed


def _options(args) -> None:
    if args.demo and args.file:
        raise ReportError("give either FILE or --demo, not both")
    if args.demo and (args.label or args.score or args.positive or args.cluster):
        raise ReportError(
            "--demo uses its own data: drop --label, --score, --positive and --cluster"
        )
    if args.demo and args.group not in (None, DEMO_GROUP_COLUMN):
        raise ReportError(
            f"--demo uses its own data, whose group column is {DEMO_GROUP_COLUMN!r} (shown "
            "without --group): drop --group"
        )
    if args.group is not None and args.cluster is not None:
        raise ReportError(
            "give --group or --cluster, not both: the by-group intervals resample rows within "
            "each group"
        )
    if args.demo and args.multiclass and args.group is not None:
        raise ReportError("--group: the by-group section is for a binary report")
    if not args.demo:
        if not args.file:
            raise ReportError("give a FILE (with --label and --score) or --demo")
        if not args.label:
            raise ReportError("give the label column with --label")
        if not args.score:
            raise ReportError("give at least one --score column")
    if (args.cost_fp is None) != (args.cost_fn is None):
        raise ReportError("give both --cost-fp and --cost-fn, or neither")
    if args.cost_fp == 0 and args.cost_fn == 0:
        raise ReportError("--cost-fp and --cost-fn cannot both be 0")
    if args.resamples < 2:
        raise ReportError(f"--resamples must be at least 2; got {args.resamples}")
    if args.multiclass and args.positive is not None:
        raise ReportError("--positive names the positive class of a binary report: drop it")


def _metadata(args, table: Table) -> Metadata:
    return Metadata(
        file=None if args.demo else str(args.file),
        label_column=None if args.demo else args.label,
        score_columns=tuple(table.models),
        positive_class=args.positive,
        threshold=args.threshold,
        cost_fp=args.cost_fp,
        cost_fn=args.cost_fn,
        resamples=args.resamples,
        seed=args.seed,
        cluster_column=None if args.demo else args.cluster,
        calibration_bins=CALIBRATION_BINS,
        jaxmetrics_version=__version__,
        group_column=DEMO_GROUP_COLUMN if args.demo else args.group,
    )


def _multiclass_metadata(args, table: MulticlassTable) -> MulticlassMetadata:
    """The multiclass report's metadata; costs are for a binary report."""
    if args.cost_fp is not None:
        raise ReportError(
            f"--cost-fp and --cost-fn are for a binary report; the labels hold "
            f"{len(table.classes)} classes ({', '.join(table.classes)})"
        )
    return MulticlassMetadata(
        file=None if args.demo else str(args.file),
        label_column=None if args.demo else args.label,
        score_columns=tuple(table.columns),
        resamples=args.resamples,
        seed=args.seed,
        cluster_column=None if args.demo else args.cluster,
        top_k=TOP_K,
        jaxmetrics_version=__version__,
    )


# with a compilation cache, data of at most this many rows is evaluated with XLA's kernels
XLA_KERNELS_ROWS = 50_000


class Caches(NamedTuple):
    """The caches a report runs with: JAX's persistent compilation cache, and a private
    directory for the report's exported programs (`programs.ProgramStore`), or None."""

    compiled: bool
    programs: Path | None


def run(
    args,
    out: TextIO | None = None,
    err: TextIO | None = None,
    before_jax: Callable[[], Caches] | None = None,
) -> int:
    """Run the report for parsed command-line `args`: 0, or 1 when a plot failed (the text and
    JSON are complete); `ReportError` for bad input or options.

    The options, the output paths and the input are checked first, with numpy alone, so bad
    input fails before JAX starts (about 0.7 s); `before_jax` (the command line's choice of
    caches) is called just before JAX is imported."""
    out, err = out or sys.stdout, err or sys.stderr
    _options(args)
    check_output_paths(args.json, args.plots)
    table: Table | MulticlassTable
    if args.demo and args.multiclass:
        table = multiclass_demo_data(seed=args.seed)
        source = "built-in demo (a classifier of cats, dogs and foxes on 3,000 rows)"
    elif args.demo:
        table = demo_data(seed=args.seed)
        source = "built-in demo (classifiers A and B on 4,000 rows, 5% positives)"
    else:
        table = load(
            args.file,
            args.label,
            args.score,
            positive=args.positive,
            cluster=args.cluster,
            multiclass=args.multiclass,
            group=args.group,
        )
        source = str(args.file)
    multiclass = isinstance(table, MulticlassTable)
    metadata = _multiclass_metadata(args, table) if multiclass else _metadata(args, table)
    caches = before_jax() if before_jax is not None else Caches(compiled=False, programs=None)
    import contextlib

    import jaxmetrics as jm
    import jaxmetrics.report.programs as programs
    from jaxmetrics.report.evaluate import evaluate  # JAX starts here
    from jaxmetrics.report.multiclass import evaluate_multiclass

    # JAX's persistent cache keeps no program that calls numpy back (the CPU's host kernels):
    # with a cache, small data is evaluated with XLA's own kernels, whose programs it keeps and
    # `jax.export` can keep (at 4,000 rows the bootstrap takes about twice as long with them,
    # far less than compiling its numpy-kernel program again; past ~50,000 numpy's sort pays)
    xla = caches.compiled and table.labels.shape[-1] <= XLA_KERNELS_ROWS
    kept = caches.programs if xla and programs.available() else None
    choice = jm.xla_kernels() if xla else contextlib.nullcontext()
    progress = None if args.quiet else Progress(err)
    try:
        with choice:
            if multiclass:
                report = evaluate_multiclass(table, metadata, progress=progress)
            else:
                report = evaluate(table, metadata, progress=progress, programs=kept)
    finally:
        if progress is not None:
            progress.close()
    if not args.quiet:
        text = (render_multiclass if multiclass else render)(report, source=source)
        out.write(text)
        out.flush()  # whatever happens to the files
    if args.json:
        write_whole(Path(args.json), to_json(report))
        if not args.quiet:
            out.write(f"\nJSON written to {Path(args.json)}\n")
            out.flush()  # before any plot is drawn
    if not args.plots:
        return 0
    written, failed = write_plots(Path(args.plots), report)
    if written and not args.quiet:
        out.write("plots written: " + ", ".join(str(p) for p in written) + "\n")
    for name, error in failed.items():
        err.write(
            f"jaxmetrics report: plot {Path(args.plots) / name} not written: {one_line(error)} "
            "(the rest of the report is complete)\n"
        )
    return 1 if failed else 0
