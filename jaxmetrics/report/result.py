"""The report's numbers as typed results: `evaluate` builds them, `render` and `plots` read them.

Every field is a plain Python value (float, int, str, bool, tuple or another of these tuples),
so `to_json` is a recursive `_asdict()`; `number` makes a computed scalar one, in the precision
it was computed in. Undefined values are NaN here and null in the JSON.

Every bootstrap interval comes with `estimate_outside_interval`: a percentile interval is the
spread of the metric over resamples, and where the metric is biased on resamples (binned ECE on
a few hundred rows, a sensitivity at a specificity on few negatives) it can miss the estimate
itself. The text marks such an interval; the JSON says it here. DeLong's and Wilson's intervals
contain their estimate by construction and carry no flag.
"""

from __future__ import annotations

import json
import math
from typing import Any, NamedTuple

import numpy as np


def number(value) -> float:
    """A computed scalar as a Python float, rounded to the precision it was computed in: a
    float32 as its shortest decimal (0.8125, not 0.8125000238418579), a float64 in full."""
    array = np.asarray(value)
    if array.dtype == np.float64 or array.dtype.kind in "biu":
        return float(array)
    return float(str(array.astype(np.float32)[()]))  # shortest decimal that is this float32


def numbers(values) -> tuple[float, ...]:
    return tuple(number(v) for v in np.asarray(values).reshape(-1))


def estimate_outside(estimate: float, low: float, high: float) -> bool:
    """Whether the interval [low, high] misses `estimate`; False when either is undefined."""
    return estimate < low or estimate > high  # a NaN compares False


class Metadata(NamedTuple):
    """What was evaluated and how: enough to rerun the report."""

    file: str | None  # None for --demo
    label_column: str | None
    score_columns: tuple[str, ...]
    positive_class: str | None  # None: labels were 0/1 or true/false
    threshold: float
    cost_fp: float | None
    cost_fn: float | None
    resamples: int
    seed: int
    cluster_column: str | None  # --cluster: whole groups resampled
    calibration_bins: int
    jaxmetrics_version: str
    group_column: str | None = None  # --group (or the demo's "site"): the by-group section


class Data(NamedTuple):
    samples: int
    positives: int
    negatives: int
    prevalence: float
    majority_baseline_accuracy: float


def has_intervals(data: Data) -> bool:
    """Whether AUC/AP intervals mean anything: DeLong's variance needs two of each class, and a
    bootstrap of a single positive (or negative) can only copy it, giving a spurious [1, 1]."""
    return min(data.positives, data.negatives) >= 2


def interval_or_nan(values: tuple[float, ...], data: Data) -> tuple[float, ...]:
    """(estimate, low, high, ...) with everything after the estimate NaN when too few rows."""
    if has_intervals(data):
        return values
    return (values[0],) + (float("nan"),) * (len(values) - 1)


class AucInterval(NamedTuple):
    """ROC AUC with its bootstrap percentile interval and DeLong's interval.

    Both intervals are NaN with fewer than two positives or two negatives (also in `Interval`,
    `AucDifference` and `Difference`).
    """

    estimate: float
    low: float
    high: float
    delong_low: float
    delong_high: float
    undefined_resamples: int  # resamples with one class drawn, left out of the interval
    estimate_outside_interval: bool  # the bootstrap interval (low, high) misses the estimate


class Interval(NamedTuple):
    """A metric with its bootstrap percentile interval."""

    estimate: float
    low: float
    high: float
    undefined_resamples: int
    estimate_outside_interval: bool


class OperatingPoint(NamedTuple):
    """Confusion counts and rates at one threshold (predicted positive iff score >= threshold)."""

    rule: str  # "given", "youden", "max_f1", "max_f2", "min_cost" or "bayes"
    threshold: float
    tp: int
    fp: int
    fn: int
    tn: int
    accuracy: float
    precision: float
    recall: float
    specificity: float
    f1: float
    f2: float
    recall_wilson: tuple[float, float]
    precision_wilson: tuple[float, float]  # NaN when nothing is predicted positive
    cost_per_sample: float | None  # None without --cost-fp/--cost-fn


class ReliabilityBin(NamedTuple):
    bin: tuple[float, float]  # (low edge, high edge]
    count: int
    mean_predicted: float  # NaN for an empty bin
    fraction_positive: float
    low: float  # Wilson 95% interval of fraction_positive
    high: float


class RecalibrationFit(NamedTuple):
    """A coefficient of a logistic recalibration (`jm.calibration_intercept`,
    `jm.calibration_slope`): the estimate, its Wald interval, and a bootstrap percentile interval
    from the report's resamples. NaN where the fit has no finite maximum (one class, separated
    classes)."""

    estimate: float
    wald_low: float
    wald_high: float
    low: float  # bootstrap
    high: float
    undefined_resamples: int  # resamples where the fit had no finite maximum, left out
    estimate_outside_interval: bool  # the bootstrap interval (low, high) misses the estimate


class Spiegelhalter(NamedTuple):
    """Spiegelhalter's z-test of the null hypothesis that the probabilities are calibrated."""

    z: float
    p_value: float


class Calibration(NamedTuple):
    """Brier score, log loss, and ECE over the same equal-width bins as the reliability table;
    the recalibration intercept and slope, Spiegelhalter's test, and the binned L2 calibration
    error with its debiased form (Kumar et al. 2019) over those bins."""

    brier: float
    log_loss: float
    ece: float
    num_bins: int
    reliability: tuple[ReliabilityBin, ...]
    intercept: RecalibrationFit | None = None  # calibration-in-the-large: 0 if calibrated
    slope: RecalibrationFit | None = None  # 1 if calibrated
    spiegelhalter: Spiegelhalter | None = None
    l2_calibration_error: float | None = None  # binned, biased upwards
    debiased_calibration_error: float | None = None  # its debiased form (L2, same bins)


class NetBenefit(NamedTuple):
    """The decision curve at one threshold probability t (treat iff probability >= t)."""

    threshold: float
    rules: tuple[str, ...]  # why it is in the table: "given", "bayes", or () for a fixed one
    net_benefit: Interval  # TP/n - FP/n * t / (1 - t), with its bootstrap interval
    treat_all: float  # treat none: 0
    interventions_avoided: float  # net interventions avoided per patient (x 100: per 100)
    standardized_net_benefit: float  # net benefit / prevalence


class DecisionCurvePoints(NamedTuple):
    """Net benefit of the model and of treating all over a grid of thresholds in (0, 1)."""

    thresholds: tuple[float, ...]
    net_benefit: tuple[float, ...]
    treat_all: tuple[float, ...]


class DecisionCurve(NamedTuple):
    """A probability model's decision curve (Vickers & Elkin 2006): the table at chosen
    thresholds and the curve over a grid, for the plot."""

    points: tuple[NetBenefit, ...]
    curve: DecisionCurvePoints


class RocPoints(NamedTuple):
    """The ROC curve's points, highest threshold first, as scikit-learn's `roc_curve`.

    Both curves keep at most `order.MAX_CURVE_POINTS` points, evenly spaced along the curve.
    """

    fpr: tuple[float, ...]
    tpr: tuple[float, ...]
    thresholds: tuple[float, ...]  # the first is +inf (null in the JSON): nothing predicted


class PrPoints(NamedTuple):
    """The precision-recall curve's points as scikit-learn orders them: lowest threshold first,
    ending at (recall 0, precision 1) at threshold +inf. Plot as steps-post."""

    recall: tuple[float, ...]
    precision: tuple[float, ...]
    thresholds: tuple[float, ...]


class Clinical(NamedTuple):
    """The high-specificity region, with bootstrap intervals from the report's resamples."""

    partial_auc: Interval  # McClish-standardised partial AUC over specificity >= 0.9
    sensitivity_at_90_specificity: Interval  # the most sensitive threshold with spec >= 0.90
    sensitivity_at_95_specificity: Interval


class RocBand(NamedTuple):
    """Bootstrap intervals of the sensitivity at a grid of specificities (a shaded ROC band)."""

    specificity: tuple[float, ...]
    sensitivity: tuple[float, ...]
    low: tuple[float, ...]
    high: tuple[float, ...]


class ModelReport(NamedTuple):
    roc_auc: AucInterval
    average_precision: Interval
    clinical: Clinical
    thresholds: tuple[OperatingPoint, ...]
    calibration: Calibration | None  # None when this model's scores are not all in [0, 1]
    roc_curve: RocPoints
    roc_band: RocBand
    precision_recall_curve: PrPoints
    decision_curve: DecisionCurve | None = None  # None when not all scores are in [0, 1]


class AucDifference(NamedTuple):
    """ROC AUC of first minus second: paired bootstrap and DeLong's paired test."""

    estimate: float
    low: float
    high: float
    bootstrap_p_value: float
    delong_z: float
    delong_p_value: float
    delong_low: float
    delong_high: float
    estimate_outside_interval: bool  # the bootstrap interval (low, high) misses the estimate


class Difference(NamedTuple):
    estimate: float
    low: float
    high: float
    bootstrap_p_value: float
    estimate_outside_interval: bool


class Comparison(NamedTuple):
    first: str
    second: str
    roc_auc_difference: AucDifference
    average_precision_difference: Difference


class GroupValue(NamedTuple):
    """A model's number in one group (or over all rows), or a gap between groups, with its
    bootstrap percentile interval (resampled within each group)."""

    estimate: float
    low: float
    high: float
    undefined_resamples: int
    estimate_outside_interval: bool


class GroupRow(NamedTuple):
    """One group's rows and a model's numbers on them (at the given threshold)."""

    group: str  # the group's value in the column, or "all" for every row
    samples: int
    positives: int
    prevalence: float
    roc_auc: GroupValue  # NaN with one class in the group
    sensitivity: GroupValue
    specificity: GroupValue
    selection_rate: GroupValue  # the share predicted positive


class GroupGaps(NamedTuple):
    """The largest minus the smallest group value (`difference`) and the smallest over the
    largest (`ratio`), over the groups where the value is defined."""

    difference: GroupValue
    ratio: GroupValue


class GroupModel(NamedTuple):
    """A model by group: each group's row, all rows, the gaps, and the fairness differences at
    the given threshold (fairlearn's definitions)."""

    groups: tuple[GroupRow, ...]
    overall: GroupRow
    roc_auc_gap: GroupGaps
    sensitivity_gap: GroupGaps
    specificity_gap: GroupGaps
    selection_rate_gap: GroupGaps
    demographic_parity_difference: GroupValue  # the selection rate's difference
    equalized_odds_difference: GroupValue  # max(sensitivity's, false positive rate's)


class ByGroup(NamedTuple):
    """The by-group section (--group COL)."""

    column: str
    threshold: float
    models: dict[str, GroupModel]
    notes: tuple[str, ...]  # e.g. a group with one class, where its AUC is undefined


class Report(NamedTuple):
    metadata: Metadata
    data: Data
    models: dict[str, ModelReport]
    comparison: tuple[Comparison, ...]  # every pair of models, in the order given
    by_group: ByGroup | None = None  # --group


def plain(value: Any) -> Any:
    """`value` as JSON-ready Python: tuples to dicts and lists, NaN and infinities to None."""
    if isinstance(value, tuple) and hasattr(value, "_asdict"):
        return {key: plain(item) for key, item in value._asdict().items()}
    if isinstance(value, dict):
        return {key: plain(item) for key, item in value.items()}
    if isinstance(value, (tuple, list)):
        return [plain(item) for item in value]
    if isinstance(value, float) and not math.isfinite(value):
        return None
    return value


def to_json(report: Report) -> str:
    """The --json document: strict JSON (no NaN), undefined values as null."""
    return json.dumps(plain(report), indent=2, allow_nan=False) + "\n"
