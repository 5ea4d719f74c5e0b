"""Every number of the report, computed once with the public `jaxmetrics` functions.

Scores arrive as float64 numpy arrays: the library's eager functions (curves, counts, threshold
searches, calibration, DeLong) rank them exactly, and the bootstrap (`ranking`) sees their exact
order keys. Results are stored as plain Python floats with the precision they were computed in
(`result.number`).
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.groups import evaluate_groups
from jaxmetrics.report.order import Order, curve_points, evaluate_order
from jaxmetrics.report.programs import ProgramStore
from jaxmetrics.report.ranking import Ranking, evaluate_ranking
from jaxmetrics.report.read import Table
from jaxmetrics.report.result import (
    AucDifference,
    ByGroup,
    Calibration,
    Comparison,
    Data,
    Difference,
    Metadata,
    ModelReport,
    PrPoints,
    ReliabilityBin,
    Report,
    RocPoints,
    estimate_outside,
    interval_or_nan,
    number,
    numbers,
)
from jaxmetrics.report.validation import bootstrapped as bootstrapped_validation
from jaxmetrics.report.validation import evaluate_eager, evaluate_validation

Progress = Callable[[str, int, int], None]


def evaluate_data(labels: np.ndarray) -> Data:
    n, positives = int(labels.size), int(labels.sum())
    prevalence = positives / n
    return Data(n, positives, n - positives, prevalence, max(prevalence, 1 - prevalence))


def evaluate_calibration(scores: np.ndarray, labels: np.ndarray, num_bins: int) -> Calibration:
    """Brier, log loss, and the ECE over the very bins of the reliability table."""
    bins_on_device = jm.reliability_bins(scores, labels, num_bins=num_bins)
    # numpy: indexing device arrays compiles one small program per shape
    table = type(bins_on_device)(*(np.asarray(field) for field in bins_on_device))
    # the nominal edges k / num_bins: the library's float32 edges are these rounded down
    edges = tuple(k / num_bins for k in range(num_bins + 1))
    columns = [numbers(c) for c in (table.mean_predicted, table.fraction_positive, table.low)]
    high = numbers(table.high)
    bins = tuple(
        ReliabilityBin(
            bin=(edges[b], edges[b + 1]),
            count=int(table.count[b]),
            mean_predicted=columns[0][b],
            fraction_positive=columns[1][b],
            low=columns[2][b],
            high=high[b],
        )
        for b in range(num_bins)
    )
    return Calibration(
        brier=number(jm.brier_score(scores, labels)),
        log_loss=number(jm.log_loss(scores, labels)),
        ece=number(jm.expected_calibration_error(scores, labels, num_bins=num_bins)),
        num_bins=num_bins,
        reliability=bins,
    )


def evaluate_curves(scores: np.ndarray, labels: np.ndarray) -> tuple[RocPoints, PrPoints]:
    """The ROC and precision-recall curves of one model (eager calls: the multiclass report's
    classes; the binary report's models come from `order.evaluate_order`)."""
    return curve_points(jm.roc_curve(scores, labels), jm.precision_recall_curve(scores, labels))


def evaluate_comparison(
    names: list[str],
    ranking: Ranking,
    data: Data,
    tests: dict[tuple[int, int], tuple[float, ...]],
) -> tuple[Comparison, ...]:
    """Every pair of models on the same rows: paired bootstrap differences and DeLong's test."""
    comparisons = []
    for (first, second), test in tests.items():
        pair = dict(first=first, second=second)
        auc = interval_or_nan(numbers(jm.paired_difference(ranking.auc_samples, **pair)), data)
        ap = interval_or_nan(numbers(jm.paired_difference(ranking.ap_samples, **pair)), data)
        comparisons.append(
            Comparison(
                names[first],
                names[second],
                AucDifference(*auc, *test, estimate_outside(*auc[:3])),
                Difference(*ap, estimate_outside(*ap[:3])),
            )
        )
    return tuple(comparisons)


class _Cancelled(Exception):
    """The main thread stopped (Ctrl-C, an error): the ranking thread stops at its next step."""


class _InBackground:
    """`function()` on a thread of its own, in a copy of the caller's context (the kernel
    choices are context variables), its result or exception taken with `result()`.

    Built, then started: `function` may read this object (the bootstrap's progress asks
    `cancelled`) from its first step, so the thread starts only once the caller holds it
    (starting it here failed the README's test command: the name was read before it was bound).
    """

    def __init__(self, function: Callable[[], Any], name: str = "jaxmetrics-ranking"):
        self.cancelled = threading.Event()
        self._outcome: list[Any] = []
        context = contextvars.copy_context()

        def body() -> None:
            try:
                self._outcome.append((True, context.run(function)))
            except BaseException as error:  # noqa: BLE001 (handed to the caller)
                self._outcome.append((False, error))

        self._thread = threading.Thread(target=body, name=name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        """Stop the thread at its next step and wait for it: a thread still inside XLA when the
        interpreter exits can abort the process."""
        self.cancelled.set()
        if self._thread.is_alive():
            self._thread.join()

    def result(self) -> Any:
        self._thread.join()
        finished, value = self._outcome[0]
        if not finished:
            raise value
        return value


def evaluate(
    table: Table,
    metadata: Metadata,
    *,
    progress: Progress | None = None,
    programs: Path | None = None,
) -> Report:
    """Every number of the report (what --json writes) for `table`, as `metadata` says.

    The bootstrap runs on a thread of its own while this one computes the rest (and the
    by-group bootstrap, with --group, on a third): XLA compiles and runs without Python's lock,
    so on two cores the work overlaps. With `programs` (a private directory), the bootstraps'
    panels are kept there between runs (`programs.kept_metric`); when
    it was kept, this thread lets the bootstrap's Python work (lowering it, loading it from
    JAX's cache) go first, and starts when its first resamples are done: the two threads would
    only hold each other up for Python's lock, and the bootstrap is the longer. An error here
    stops that thread and waits for it; Ctrl-C only tells it to stop (at its next step, which
    may be a compilation away) and returns at once: the command line then leaves the process
    without waiting (`cli.main`)."""
    labels, names = table.labels, list(table.models)
    scores = np.stack([table.models[name] for name in names]).astype(np.float64)
    data = evaluate_data(labels)
    order = Order.of(scores)
    keys = order.keys
    # calibration and decision curves are for models whose scores are all probabilities
    probability = tuple(m for m in range(len(names)) if _is_probability(scores[m]))
    probs = scores[list(probability)]
    extra = bootstrapped_validation(probability, metadata) if probability else None
    turn = threading.Event()  # this thread's turn: the bootstrap is running, or is compiling
    store = None if programs is None else ProgramStore(programs, on_miss=turn.set)
    background: _InBackground

    def checked(label: str, done: int, total: int) -> None:
        turn.set()
        if background.cancelled.is_set():
            raise _Cancelled
        if progress is not None:
            progress(label, done, total)

    def ranking() -> tuple[Ranking, jm.BootstrapResult | None]:
        try:
            return evaluate_ranking(
                keys, labels, data, metadata, checked, table.clusters, store, scores, extra
            )
        finally:
            turn.set()

    def by_group() -> ByGroup:
        return evaluate_groups(scores, keys, labels, table.groups, names, metadata, store)

    background = _InBackground(ranking)
    # the by-group bootstrap (other resamples) on a third thread: its compiled loop runs on the
    # other core while this thread computes the rest (it has no step at which to stop: an error
    # here waits for it)
    grouped = None if table.groups is None else _InBackground(by_group, "jaxmetrics-groups")
    clustered = table.clusters is not None
    try:
        background.start()
        if store is not None:
            turn.wait()
        if grouped is not None:
            grouped.start()
        calibrations = [
            evaluate_calibration(scores[m], labels, metadata.calibration_bins)
            if m in probability
            else None
            for m in range(len(names))
        ]
        ordered = evaluate_order(order, labels, data, metadata, probability, clustered, store)
        eager = evaluate_eager(probs, labels, metadata) if probability else None
        groups = None if grouped is None else grouped.result()
    except KeyboardInterrupt:
        background.cancelled.set()
        raise
    except BaseException:
        background.stop()
        if grouped is not None:
            grouped.stop()
        raise
    bootstrapped, validation = background.result()
    decision_curves: dict[str, Any] = dict.fromkeys(names)
    if probability:
        completions, curves = evaluate_validation(validation, eager, data, metadata)
        for m, completion, curve in zip(probability, completions, curves, strict=True):
            calibrations[m] = calibrations[m]._replace(**completion)
            decision_curves[names[m]] = curve
    models = {}
    for m, name in enumerate(names):
        delong = dict(delong_low=ordered.delong_low[m], delong_high=ordered.delong_high[m])
        models[name] = ModelReport(
            roc_auc=bootstrapped.roc_auc[m]._replace(**delong),
            average_precision=bootstrapped.average_precision[m],
            clinical=bootstrapped.clinical[m],
            thresholds=ordered.thresholds[m],
            calibration=calibrations[m],
            roc_curve=ordered.roc[m],
            roc_band=bootstrapped.roc_band[m],
            precision_recall_curve=ordered.pr[m],
            decision_curve=decision_curves[name],
        )
    comparison = evaluate_comparison(names, bootstrapped, data, ordered.tests)
    return Report(metadata, data, models, comparison, groups)


def _is_probability(scores: np.ndarray) -> bool:
    """Calibration (and the Bayes threshold) are for a model whose scores are all probabilities
    in [0, 1]: one column of logits leaves the others' calibration in place."""
    return bool(np.all((scores >= 0) & (scores <= 1)))
