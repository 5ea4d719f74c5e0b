"""The multiclass report's numbers as typed results: `multiclass.evaluate` builds them,
`multiclass_render` reads them, and `result.to_json` writes them (`"mode": "multiclass"`).

Every bootstrap interval is an `Interval` of the binary report (estimate, low, high, resamples
left out, and whether the interval misses its estimate), from the one bootstrap of the report.
"""

from __future__ import annotations

from typing import NamedTuple

from jaxmetrics.report.result import Interval, PrPoints, RocPoints

TOP_K = 2  # the report's top-k accuracy: the true class among the two most probable


class MulticlassMetadata(NamedTuple):
    """What was evaluated and how: enough to rerun the report."""

    file: str | None  # None for --demo
    label_column: str | None
    score_columns: tuple[str, ...]  # as given, in the order of --score
    resamples: int
    seed: int
    cluster_column: str | None
    top_k: int  # the k of the top-k accuracy
    jaxmetrics_version: str


class MulticlassData(NamedTuple):
    samples: int
    classes: tuple[str, ...]  # sorted; class i is column i of the confusion matrix
    majority_class: str
    majority_baseline_accuracy: float  # the share of the largest class


class ClassReport(NamedTuple):
    """One class against the rest: its probability column ranked against membership."""

    score_column: str
    samples: int
    share: float  # of the rows: the AP of a random ranking
    roc_auc: Interval
    average_precision: Interval
    roc_curve: RocPoints  # one-vs-rest points, at most `order.MAX_CURVE_POINTS`
    precision_recall_curve: PrPoints


class Averages(NamedTuple):
    """The classes' AUC and AP averaged: macro (each class alike), weighted (by class share),
    and Hand & Till's one-vs-one AUC (the mean over pairs of classes)."""

    roc_auc_macro: Interval
    roc_auc_weighted: Interval
    roc_auc_one_vs_one: Interval
    average_precision_macro: Interval
    average_precision_weighted: Interval


class Predictions(NamedTuple):
    """The most probable class of each row (ties to the first class, as numpy's argmax)."""

    confusion_matrix: tuple[tuple[int, ...], ...]  # rows true class, columns predicted
    accuracy: Interval
    cohen_kappa: Interval
    top_k_accuracy: Interval  # true class among the k most probable (`metadata.top_k`)


class MulticlassCalibration(NamedTuple):
    log_loss: Interval
    brier: Interval  # summed over the classes: 0 (perfect) to 2


class MulticlassReport(NamedTuple):
    mode: str  # "multiclass"
    metadata: MulticlassMetadata
    data: MulticlassData
    classes: dict[str, ClassReport]  # by class name, in the order of `data.classes`
    averages: Averages
    predictions: Predictions
    calibration: MulticlassCalibration
