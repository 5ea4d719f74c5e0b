"""Every number of the multiclass report, computed with the public `jaxmetrics` functions.

Every number and its interval comes from one `jm.bootstrap` of one panel, all on the same
resamples. The panel takes the probabilities as ``[C, n]``, so that its arrays share their last
(sample) axis, and beside them their exact order keys (`order.order_keys`): what depends on
the order only (AUC, AP, top-k) is then what scikit-learn computes in float64, and the log loss
and Brier score estimates are eager float64 calls.
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.evaluate import evaluate_curves
from jaxmetrics.report.multiclass_result import (
    TOP_K,
    Averages,
    ClassReport,
    MulticlassCalibration,
    MulticlassData,
    MulticlassMetadata,
    MulticlassReport,
    Predictions,
)
from jaxmetrics.report.order import order_keys
from jaxmetrics.report.ranking import seed_key
from jaxmetrics.report.read import MulticlassTable
from jaxmetrics.report.result import Interval, estimate_outside, number, numbers

LABEL = "multiclass ranking, predictions and calibration"
# the panel's values after the C per-class AUCs and the C per-class APs, in this order
SUMMARIES = (
    "roc_auc_macro",
    "roc_auc_weighted",
    "roc_auc_one_vs_one",
    "average_precision_macro",
    "average_precision_weighted",
    "accuracy",
    "cohen_kappa",
    "top_k_accuracy",
    "log_loss",
    "brier",
)


def _weighted_average(values, weights):
    return (values * weights).sum(-1) / weights.sum(-1)


@jm.estimate_in_loop  # the reader checked the probabilities and labels
def panel(keys, by_class, labels, predictions, *, sample_weight=None):
    """Every bootstrapped number: the C one-vs-rest AUCs, the C APs, then `SUMMARIES`, for
    `order_keys` and probabilities ``[C, n]`` of the classes, class indices and the predicted
    (most probable) classes ``[n]``. What depends on the order of the probabilities only is
    computed from their keys, exactly; the log loss and Brier score from the probabilities."""
    num_classes = keys.shape[0]
    if sample_weight is None:
        sample_weight = jnp.ones(labels.shape, jnp.int32)
    weights = dict(sample_weight=sample_weight)
    members = labels == jnp.arange(num_classes)[:, None]  # [C, n]
    support = (members * sample_weight).sum(-1)
    auc = jm.multiclass_roc_auc(keys.T, labels, average=None, **weights)
    ap = jm.multiclass_average_precision(keys.T, labels, average=None, **weights)
    # Hand & Till: each pair of classes ranked on its own samples, both ways
    first, second = np.triu_indices(num_classes, k=1)
    in_pair = (members[first] | members[second]) * sample_weight
    forward = jm.roc_auc(keys[first], members[first], sample_weight=in_pair)
    backward = jm.roc_auc(keys[second], members[second], sample_weight=in_pair)
    matrix = jm.confusion_matrix(predictions, labels, num_classes=num_classes, **weights)
    summaries = [
        auc.mean(),
        _weighted_average(auc, support),
        ((forward + backward) / 2).mean(),
        ap.mean(),
        _weighted_average(ap, support),
        jnp.trace(matrix) / matrix.sum(),
        jm.cohen_kappa(matrix),
        jm.top_k_accuracy(keys.T, labels, k=TOP_K, **weights),
        jm.multiclass_log_loss(by_class.T, labels, **weights),
        jm.multiclass_brier_score(by_class.T, labels, **weights),
    ]
    return jnp.concatenate([auc, ap, jnp.stack(summaries).astype(auc.dtype)])


def _interval(value: float, bootstrapped: jm.BootstrapResult, k: int, defined: bool) -> Interval:
    nan = float("nan")
    low, high = (
        (number(bootstrapped.low[k]), number(bootstrapped.high[k])) if defined else (nan, nan)
    )
    undefined = int(np.isnan(bootstrapped.samples[:, k]).sum())
    return Interval(value, low, high, undefined, estimate_outside(value, low, high))


def evaluate_multiclass(
    table: MulticlassTable,
    metadata: MulticlassMetadata,
    *,
    progress: Callable[[str, int, int], None] | None = None,
) -> MulticlassReport:
    """Every number of the multiclass report (what --json writes) for `table`.

    Intervals need at least two rows of every class (a resample of a single row can only copy
    it); with fewer they are NaN."""
    probs, labels, classes = table.probs, table.labels, table.classes
    num_classes = len(classes)
    counts = np.bincount(labels, minlength=num_classes)
    predictions = probs.argmax(-1).astype(np.int32)  # ties: the first class, as numpy and sklearn
    tick = None if progress is None else (lambda done, total: progress(LABEL, done, total))
    by_class = np.ascontiguousarray(probs.T)
    bootstrapped = jm.bootstrap(
        panel,
        order_keys(by_class),
        by_class,
        labels,
        predictions,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        groups=table.clusters,
        progress=tick,
    )
    bootstrapped = jm.BootstrapResult(*(np.asarray(field) for field in bootstrapped))
    values = list(numbers(bootstrapped.estimate))
    # the log loss and Brier score in float64, as scikit-learn computes them (an eager call on
    # float64 probabilities is scored on the host); the loop saw them rounded to float32
    values[-2] = number(jm.multiclass_log_loss(probs, labels))
    values[-1] = number(jm.multiclass_brier_score(probs, labels))
    matrix = np.asarray(jm.confusion_matrix(predictions, labels, num_classes=num_classes))
    defined = bool(counts.min() >= 2)

    def interval(k: int) -> Interval:
        return _interval(values[k], bootstrapped, k, defined)

    per_class = {}
    for c, name in enumerate(classes):
        roc_points, pr_points = evaluate_curves(probs[:, c], (labels == c).astype(np.int32))
        per_class[name] = ClassReport(
            score_column=table.columns[c],
            samples=int(counts[c]),
            share=float(counts[c] / labels.size),
            roc_auc=interval(c),
            average_precision=interval(num_classes + c),
            roc_curve=roc_points,
            precision_recall_curve=pr_points,
        )
    summary = {name: interval(2 * num_classes + i) for i, name in enumerate(SUMMARIES)}
    majority = int(counts.argmax())
    return MulticlassReport(
        mode="multiclass",
        metadata=metadata,
        data=MulticlassData(
            samples=int(labels.size),
            classes=tuple(classes),
            majority_class=classes[majority],
            majority_baseline_accuracy=float(counts[majority] / labels.size),
        ),
        classes=per_class,
        averages=Averages(*(summary[name] for name in Averages._fields)),
        predictions=Predictions(
            confusion_matrix=tuple(tuple(int(x) for x in row) for row in matrix),
            accuracy=summary["accuracy"],
            cohen_kappa=summary["cohen_kappa"],
            top_k_accuracy=summary["top_k_accuracy"],
        ),
        calibration=MulticlassCalibration(summary["log_loss"], summary["brier"]),
    )
