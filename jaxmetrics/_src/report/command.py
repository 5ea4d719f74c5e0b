"""`jaxmetrics report`: check the options and output paths, read, evaluate, then write.

Outputs appear all at once or not at all: every file is first written under a temporary name
beside its destination and renamed into place only when all of them are written, so a run that
fails or is interrupted leaves no partial JSON and no half set of plots.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from jaxmetrics import __version__
from jaxmetrics._src.report.plots import draw, pyplot, save
from jaxmetrics._src.report.read import ReportError, Table, demo_data, load_table
from jaxmetrics._src.report.render import render
from jaxmetrics._src.report.result import Metadata, to_json

CALIBRATION_BINS = 10


class Progress:
    """Bootstrap progress on one rewritten stderr line; `close` ends a line left open."""

    def __init__(self, err: TextIO):
        self.err, self.open = err, False

    def __call__(self, label: str, done: int, total: int) -> None:
        self.open = True  # before writing: an interrupt may come at any moment
        self.err.write(f"\rbootstrap {label}: {done}/{total} resamples")
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


def write_outputs(
    json_path: Path | None,
    json_text: str | None,
    plots_dir: Path | None,
    figures: dict[str, Any],
) -> list[Path]:
    """Write the JSON and the figures under temporary names, then rename them all into place."""
    staged: list[tuple[Path, Path]] = []
    created: list[Path] = []
    try:
        if figures:
            missing = [p for p in (plots_dir, *plots_dir.parents) if not p.exists()]
            for directory in reversed(missing):
                directory.mkdir()
                created.append(directory)
            for name, figure in figures.items():
                final = plots_dir / name
                staged.append((_staged_name(final), final))
                with staged[-1][0].open("xb") as handle:
                    save(figure, handle)
        if json_text is not None:
            staged.append((_staged_name(json_path), json_path))
            with staged[-1][0].open("x", encoding="utf-8") as handle:
                handle.write(json_text)
        for temporary, final in staged:
            os.replace(temporary, final)
    except BaseException:
        for temporary, _ in staged:
            temporary.unlink(missing_ok=True)
        for directory in reversed(created):
            try:
                directory.rmdir()
            except OSError:
                pass
        for figure in figures.values():
            pyplot().close(figure)  # closing a saved (closed) figure is harmless
        raise
    return [final for _, final in staged]


def _options(args) -> None:
    if args.demo and args.file:
        raise ReportError("give either FILE or --demo, not both")
    if args.demo and (args.label or args.score or args.positive or args.cluster):
        raise ReportError(
            "--demo uses its own data: drop --label, --score, --positive and --cluster"
        )
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


def run(
    args,
    out: TextIO | None = None,
    err: TextIO | None = None,
    before_jax: Callable[[], object] | None = None,
) -> int:
    """Run the report for parsed command-line `args`; `ReportError` for bad input or options.

    The options, the output paths and the input are checked first, with numpy alone, so bad
    input fails before JAX starts (about 0.7 s); `before_jax` (the command line's choice of a
    compilation cache) is called just before JAX is imported."""
    out, err = out or sys.stdout, err or sys.stderr
    _options(args)
    check_output_paths(args.json, args.plots)
    if args.demo:
        table: Table = demo_data(seed=args.seed)
        source = "built-in demo (classifiers A and B on 4,000 rows, 5% positives)"
    else:
        table = load_table(
            args.file, args.label, args.score, positive=args.positive, cluster=args.cluster
        )
        source = str(args.file)
    metadata = Metadata(
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
    )
    if before_jax is not None:
        before_jax()
    from jaxmetrics._src.report.evaluate import evaluate  # JAX starts here

    progress = None if args.quiet else Progress(err)
    try:
        report = evaluate(table, metadata, progress=progress)
    finally:
        if progress is not None:
            progress.close()
    text = render(report, source=source)
    json_path = Path(args.json) if args.json else None
    json_text = to_json(report) if args.json else None
    plots_dir = Path(args.plots) if args.plots else None
    figures = draw(report) if args.plots else {}
    written = write_outputs(json_path, json_text, plots_dir, figures)
    if not args.quiet:
        out.write(text)
        if json_path is not None:
            out.write(f"\nJSON written to {json_path}\n")
        if figures or args.plots:
            pngs = [str(p) for p in written if p.suffix == ".png"]
            out.write("plots written: " + ", ".join(pngs) + "\n")
    return 0
