"""Every number of the report, computed once with the public `jaxmetrics` functions.

Scores arrive as float64 numpy arrays: the library's eager ranking functions (AUC, AP, curves,
counts, threshold searches, DeLong, and the bootstrap of those) rank them exactly. Results are
stored as plain Python floats with the precision they were computed in: a float32 value is kept
as its shortest decimal (0.8125, not 0.8125000238418579), a float64 value in full.
"""

from __future__ import annotations

import contextvars
import threading
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics._src.mesh import recipe
from jaxmetrics._src.metrics.operating_points import SensitivitiesAt
from jaxmetrics._src.stats import bootstrap
from jaxmetrics.report.read import Table
from jaxmetrics.report.result import (
    AucDifference,
    AucInterval,
    Calibration,
    Clinical,
    Comparison,
    Data,
    Difference,
    Interval,
    Metadata,
    ModelReport,
    OperatingPoint,
    PrPoints,
    ReliabilityBin,
    Report,
    RocBand,
    RocPoints,
    estimate_outside,
)

# A curve keeps at most this many points in the report (and its JSON): more than a plot resolves.
MAX_CURVE_POINTS = 2000
Progress = Callable[[str, int, int], None]


def number(value) -> float:
    """A scalar as a Python float, rounded to the precision it was computed in."""
    array = np.asarray(value)
    if array.dtype == np.float64 or array.dtype.kind in "biu":
        return float(array)
    return float(str(array.astype(np.float32)[()]))  # shortest decimal that is this float32


def numbers(values) -> tuple[float, ...]:
    return tuple(number(v) for v in np.asarray(values).reshape(-1))


def seed_key(seed: int):
    """A threefry key for a seed of up to 64 bits (jax.random.key keeps only 32 without x64)."""
    words = np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)
    return jax.random.wrap_key_data(words, impl="threefry2x32")


def evaluate_data(labels: np.ndarray) -> Data:
    n, positives = int(labels.size), int(labels.sum())
    prevalence = positives / n
    return Data(n, positives, n - positives, prevalence, max(prevalence, 1 - prevalence))


def has_intervals(data: Data) -> bool:
    """Whether AUC/AP intervals mean anything: DeLong's variance needs two of each class, and a
    bootstrap of a single positive (or negative) can only copy it, giving a spurious [1, 1]."""
    return min(data.positives, data.negatives) >= 2


def _interval_or_nan(values: tuple[float, ...], data: Data) -> tuple[float, ...]:
    """(estimate, low, high, ...) with everything after the estimate NaN when too few rows."""
    if has_intervals(data):
        return values
    return (values[0],) + (float("nan"),) * (len(values) - 1)


def evaluate_operating_points(
    scores: np.ndarray, labels: np.ndarray, metadata: Metadata, is_probability: bool
) -> tuple[OperatingPoint, ...]:
    """Counts and rates at the given threshold and at those that maximise F1/F2 or min cost."""
    cost_fp, cost_fn = metadata.cost_fp, metadata.cost_fn
    choices = [("given", metadata.threshold)]
    choices.append(("youden", number(jm.youden_threshold(scores, labels).threshold)))
    for beta, rule in ((1.0, "max_f1"), (2.0, "max_f2")):
        choices.append((rule, number(jm.max_f_beta(scores, labels, beta=beta).threshold)))
    if cost_fp is not None and cost_fn is not None:
        best = jm.min_expected_cost(scores, labels, cost_fp=cost_fp, cost_fn=cost_fn)
        choices.append(("min_cost", number(best.threshold)))
        if is_probability:
            choices.append(("bayes", float(jm.bayes_threshold(cost_fp=cost_fp, cost_fn=cost_fn))))
    thresholds = np.array([t for _, t in choices], np.float64)
    counts = jm.confusion_counts(scores, labels, thresholds)
    tp, fp, fn, tn = (np.asarray(c).astype(np.int64) for c in counts)
    rates = {
        "accuracy": jm.accuracy(counts),
        "precision": jm.precision(counts),
        "recall": jm.recall(counts),
        "specificity": jm.specificity(counts),
        "f1": jm.f_beta(counts),
        "f2": jm.f_beta(counts, beta=2.0),
    }
    rates = {name: numbers(values) for name, values in rates.items()}
    # numpy from here on: indexing device arrays compiles one small program per shape
    recall_interval = np.asarray(jm.wilson_interval(tp, tp + fn))  # tp + fn: never 0
    predicted = tp + fp
    precision_interval = np.asarray(jm.wilson_interval(tp, np.maximum(predicted, 1)))
    points = []
    for i, (rule, threshold) in enumerate(choices):
        precision_wilson = (
            (number(precision_interval[0][i]), number(precision_interval[1][i]))
            if predicted[i]
            else (float("nan"), float("nan"))
        )
        cost = None
        if cost_fp is not None and cost_fn is not None:
            cost = (cost_fp * int(fp[i]) + cost_fn * int(fn[i])) / int(labels.size)
        points.append(
            OperatingPoint(
                rule=rule,
                threshold=threshold,
                tp=int(tp[i]),
                fp=int(fp[i]),
                fn=int(fn[i]),
                tn=int(tn[i]),
                **{name: values[i] for name, values in rates.items()},
                recall_wilson=(number(recall_interval[0][i]), number(recall_interval[1][i])),
                precision_wilson=precision_wilson,
                cost_per_sample=cost,
            )
        )
    return tuple(points)


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


def _thin(*columns: np.ndarray) -> list[tuple[float, ...]]:
    """At most `MAX_CURVE_POINTS` points, evenly spaced along the curve, both ends kept."""
    size = columns[0].shape[0]
    keep = np.unique(np.linspace(0, size - 1, min(size, MAX_CURVE_POINTS)).round().astype(int))
    return [numbers(c[keep]) for c in columns]


def evaluate_curves(scores: np.ndarray, labels: np.ndarray) -> tuple[RocPoints, PrPoints]:
    roc = jm.roc_curve(scores, labels)
    valid = np.asarray(roc.valid)
    fpr, tpr, thresholds = (np.asarray(a)[valid] for a in (roc.fpr, roc.tpr, roc.thresholds))
    pr = jm.precision_recall_curve(scores, labels)
    valid = np.asarray(pr.valid)
    recall, precision, pr_thresholds = (
        np.asarray(a)[valid] for a in (pr.recall, pr.precision, pr.thresholds)
    )
    roc_points = RocPoints(*_thin(fpr, tpr, thresholds))
    pr_points = PrPoints(*_thin(recall, precision, pr_thresholds))
    return roc_points, pr_points


# The high-specificity region: the partial AUC over specificity >= 0.9 and the sensitivity at
# 90% and 95% specificity; the ROC band: sensitivity intervals at these specificities.
PARTIAL_FPR = (0.0, 0.1)
CLINICAL_SPECIFICITIES = (0.90, 0.95)
BAND_SPECIFICITIES = tuple(k / 20 for k in range(21))
_SENSITIVITIES = SensitivitiesAt(CLINICAL_SPECIFICITIES + BAND_SPECIFICITIES)


# the reader has checked the input: the bootstrap takes the estimate from its compiled loop,
# and the panel's eager call (four more programs, 0.7 s of a warm run) is left out
@bootstrap.estimate_in_loop
@recipe.order_only
def _ranking_panel(scores, labels, *, sample_weight=None):
    """Every bootstrapped ranking number of a model on a last axis: ROC AUC, AP, the partial
    AUC, then the sensitivities at the clinical and band specificities. One bootstrap and one
    compiled program serve them all, so all intervals come from the same resamples (the
    metrics depend on the order of the scores only, so it is marked so)."""
    weights = dict(sample_weight=sample_weight)
    return jnp.concatenate(
        [
            jnp.stack(
                [
                    jm.roc_auc(scores, labels, **weights),
                    jm.average_precision(scores, labels, **weights),
                    jm.partial_roc_auc(
                        scores, labels, fpr_range=PARTIAL_FPR, correct=True, **weights
                    ),
                ],
                axis=-1,
            ),
            _SENSITIVITIES(scores, labels, **weights),
        ],
        axis=-1,
    )


class Ranking(NamedTuple):
    """Each model's ROC AUC, AP and clinical numbers with intervals, its ROC band, and the
    bootstrap samples of AUC and AP (the paired comparison reuses them: both models were scored
    on the same resamples)."""

    roc_auc: list[AucInterval]
    average_precision: list[Interval]
    clinical: list[Clinical]
    roc_band: list[RocBand]
    auc_samples: jm.BootstrapResult
    ap_samples: jm.BootstrapResult


def _interval(result: jm.BootstrapResult, m: int, k: int, data: Data) -> Interval:
    """Model `m`'s metric `k` of a bootstrap `result` with fields [M, K] (samples [B, M, K])."""
    values = numbers([result.estimate[m, k], result.low[m, k], result.high[m, k]])
    values = _interval_or_nan(values, data)
    undefined = int(np.isnan(result.samples[:, m, k]).sum())
    return Interval(*values, undefined, estimate_outside(*values))


def evaluate_ranking(
    scores: np.ndarray,
    labels: np.ndarray,
    data: Data,
    metadata: Metadata,
    progress: Progress | None = None,
    clusters: np.ndarray | None = None,
) -> Ranking:
    """Bootstrap (percentile) intervals of ROC AUC, AP and the clinical numbers, the ROC band,
    and DeLong's interval of the AUC (clustered data: whole clusters resampled)."""

    label = "ROC AUC, average precision and sensitivities"
    tick = None if progress is None else (lambda done, total: progress(label, done, total))
    panel = jm.bootstrap(
        _ranking_panel,
        scores,
        labels,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        groups=clusters,
        progress=tick,
    )
    # numpy from here on: indexing device arrays would compile one small program per shape
    panel = jm.BootstrapResult(*(np.asarray(field) for field in panel))
    auc, ap = (jm.BootstrapResult(*(field[..., k] for field in panel)) for k in (0, 1))
    clinical, bands = [], []
    first_band = 3 + len(CLINICAL_SPECIFICITIES)
    for m in range(scores.shape[0]):
        clinical.append(Clinical(*(_interval(panel, m, k, data) for k in (2, 3, 4))))
        band = [numbers(field[m, first_band:]) for field in panel[:3]]
        if not has_intervals(data):
            band[1] = band[2] = (float("nan"),) * len(BAND_SPECIFICITIES)
        bands.append(RocBand(BAND_SPECIFICITIES, *band))
    nan = [float("nan")] * scores.shape[0]
    delong_low, delong_high = nan, nan
    if has_intervals(data) and clusters is None:  # DeLong's variance needs independent rows
        delong = jm.delong(scores, labels)
        delong_low, delong_high = numbers(np.asarray(delong.low)), numbers(np.asarray(delong.high))
    aucs, aps = [], []
    for m in range(scores.shape[0]):
        interval = _interval(panel, m, 0, data)
        aucs.append(
            AucInterval(
                *interval[:3],
                delong_low[m],
                delong_high[m],
                interval.undefined_resamples,
                interval.estimate_outside_interval,
            )
        )
        aps.append(_interval(panel, m, 1, data))
    return Ranking(aucs, aps, clinical, bands, auc, ap)


def evaluate_comparison(
    scores: np.ndarray,
    labels: np.ndarray,
    names: list[str],
    ranking: Ranking,
    data: Data,
    clustered: bool = False,
) -> tuple[Comparison, ...]:
    """Every pair of models on the same rows: paired bootstrap differences and DeLong's test."""
    comparisons = []
    for first in range(len(names)):
        for second in range(first + 1, len(names)):
            test = [float("nan")] * 4
            if has_intervals(data) and not clustered:  # DeLong needs independent rows
                test = numbers(jm.delong_test(scores[first], scores[second], labels))
            pair = dict(first=first, second=second)
            auc = _interval_or_nan(numbers(jm.paired_difference(ranking.auc_samples, **pair)), data)
            ap = _interval_or_nan(numbers(jm.paired_difference(ranking.ap_samples, **pair)), data)
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

    def __init__(self, function: Callable[[], Any]):
        self.cancelled = threading.Event()
        self._outcome: list[Any] = []
        context = contextvars.copy_context()

        def body() -> None:
            try:
                self._outcome.append((True, context.run(function)))
            except BaseException as error:  # noqa: BLE001 (handed to the caller)
                self._outcome.append((False, error))

        self._thread = threading.Thread(target=body, name="jaxmetrics-ranking", daemon=True)

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


def evaluate(table: Table, metadata: Metadata, *, progress: Progress | None = None) -> Report:
    """Every number of the report (what --json writes) for `table`, as `metadata` says.

    The bootstrap (with DeLong) runs on a thread of its own while this one computes the rest:
    XLA compiles and runs without Python's lock, so on two cores the compilations overlap. An
    error here stops that thread and waits for it; Ctrl-C only tells it to stop (at its next
    step, which may be a compilation away) and returns at once: the command line then leaves
    the process without waiting (`cli.main`)."""
    labels, names = table.labels, list(table.models)
    scores = np.stack([table.models[name] for name in names]).astype(np.float64)
    data = evaluate_data(labels)
    background: _InBackground

    def checked(label: str, done: int, total: int) -> None:
        if background.cancelled.is_set():
            raise _Cancelled
        if progress is not None:
            progress(label, done, total)

    background = _InBackground(
        lambda: evaluate_ranking(scores, labels, data, metadata, checked, table.clusters)
    )
    try:
        background.start()
        models = _evaluate_models(metadata, scores, labels, names, background)
    except KeyboardInterrupt:
        background.cancelled.set()
        raise
    except BaseException:
        background.stop()
        raise
    clustered = table.clusters is not None
    ranking = background.result()
    comparison = evaluate_comparison(scores, labels, names, ranking, data, clustered)
    return Report(metadata, data, models, comparison)


def _evaluate_models(
    metadata: Metadata,
    scores: np.ndarray,
    labels: np.ndarray,
    names: list[str],
    background: _InBackground,
) -> dict[str, ModelReport]:
    """Each model's numbers: its own sections here, its ranking numbers from `background`.

    Calibration (and the Bayes threshold) are for a model whose scores are all probabilities
    in [0, 1]: one column of logits leaves the others' calibration in place."""
    models, parts = {}, {}
    for m, name in enumerate(names):
        is_probability = bool(np.all((scores[m] >= 0) & (scores[m] <= 1)))
        calibration = None
        if is_probability:
            calibration = evaluate_calibration(scores[m], labels, metadata.calibration_bins)
        roc_points, pr_points = evaluate_curves(scores[m], labels)
        thresholds = evaluate_operating_points(scores[m], labels, metadata, is_probability)
        parts[name] = (calibration, roc_points, pr_points, thresholds)
    ranking = background.result()
    for m, name in enumerate(names):
        calibration, roc_points, pr_points, thresholds = parts[name]
        models[name] = ModelReport(
            roc_auc=ranking.roc_auc[m],
            average_precision=ranking.average_precision[m],
            clinical=ranking.clinical[m],
            thresholds=thresholds,
            calibration=calibration,
            roc_curve=roc_points,
            roc_band=ranking.roc_band[m],
            precision_recall_curve=pr_points,
        )
    return models
