"""Multiclass evaluation: the confusion matrix, one-vs-rest counts, kappa, top-k accuracy,
multiclass ROC AUC and a classification report.

The class count is always stated (`num_classes`), never inferred from the data: a class absent
from a fold keeps its row and column, so folds can be added (seed 003). Counting goes through the
ranking engine: the (true, predicted) pair codes are sorted once and each cell is a difference of
prefix sums, exact in int32 without a scatter.
"""

from __future__ import annotations

import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import counts as counts_lib
from jaxmetrics._src import ranking, sorting, validation
from jaxmetrics._src.counts import Counts, safe_divide

Array = jax.Array


def _check_classes(values: Array, name: str, num_classes: int) -> Array:
    """Class indices must be integers in [0, num_classes); raise or flag as elsewhere."""
    if not (jnp.issubdtype(values.dtype, jnp.integer) or jnp.issubdtype(values.dtype, jnp.bool_)):
        raise TypeError(f"`{name}` must hold integer class indices; got dtype {values.dtype}.")
    if validation.is_concrete(values):
        host = np.asarray(values)
        bad = (host < 0) | (host >= num_classes)
        if bad.any():
            index = tuple(int(i) for i in np.argwhere(bad)[0])
            raise ValueError(
                f"`{name}` must be class indices in [0, {num_classes}) (`num_classes`); "
                f"found {host[index].item()} at index {index[0] if len(index) == 1 else index}."
            )
        return jnp.zeros(values.shape[:-1], bool)
    return jnp.any((values < 0) | (values >= num_classes), axis=-1)


def _check_num_classes(num_classes: Any) -> int:
    if not isinstance(num_classes, int) or isinstance(num_classes, bool) or num_classes < 2:
        raise ValueError(
            f"`num_classes` must be an int >= 2 (stated, never inferred); got {num_classes!r}."
        )
    return num_classes


def confusion_matrix(
    predictions: Any, labels: Any, *, num_classes: int, sample_weight: Any = None
) -> Array:
    """Multiclass confusion matrix, rows true classes and columns predicted classes.

    Matches `sklearn.metrics.confusion_matrix(labels, predictions, labels=range(num_classes))`.

    Args:
      predictions: ``[*batch, n]`` predicted class indices.
      labels: ``[*batch, n]`` true class indices.
      num_classes: the number of classes C (static); never inferred.
      sample_weight: optional ``[*batch, n]`` weights.

    Returns:
      ``[*batch, C, C]``: int32 counts (float with float weights); under jit a batch element with
      an out-of-range class is all -1.

    >>> import jaxmetrics as jm
    >>> jm.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3).tolist()
    [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    """
    num_classes = _check_num_classes(num_classes)
    predictions = validation.as_real_array(predictions, "predictions")
    labels = validation.as_real_array(labels, "labels")
    weights = (
        None if sample_weight is None else validation.as_real_array(sample_weight, "sample_weight")
    )
    batch_shape = validation.sample_axis_shapes(
        [("predictions", predictions), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = _check_classes(predictions, "predictions", num_classes) | _check_classes(
        labels, "labels", num_classes
    )
    if weights is not None:
        invalid = invalid | validation.check_weights(weights)
    cells = num_classes * num_classes

    def kernel(predictions: Array, labels: Array, weights: Array | None) -> Array:
        code = labels.astype(jnp.int32) * num_classes + predictions.astype(jnp.int32)
        ranked = sorting.rank(code.astype(jnp.float32))  # codes < 2^24 are exact in float32
        tallies = sorting.tally(ranked, jnp.zeros_like(code), weights)
        total = tallies.negative  # every sample is a "negative" here: the prefix of all weight
        edges = jnp.arange(cells + 1, dtype=jnp.float32) - 0.5
        cumulative = sorting.at_thresholds(ranked, total, edges, inclusive=False)
        return jnp.diff(cumulative).reshape(num_classes, num_classes)

    if cells >= 2**24:
        raise ValueError(f"`num_classes` too large for exact pair codes; got {num_classes}.")
    matrix = validation.map_batch(kernel, predictions, labels, weights)
    return validation.nan_where(jnp.broadcast_to(invalid, batch_shape), matrix)


def one_vs_rest(matrix: Any) -> Counts:
    """Per-class binary counts of a ``[*batch, C, C]`` confusion matrix, class axis last.

    For class c: TP the diagonal, FP the rest of column c, FN the rest of row c, TN everything
    else. Feed the result to any rate with ``average=None | "micro" | "macro" | "weighted"``.
    """
    matrix = validation.as_real_array(matrix, "matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(f"`matrix` must be square [*batch, C, C]; got shape {matrix.shape}.")
    tp = jnp.diagonal(matrix, axis1=-2, axis2=-1)
    fp = matrix.sum(-2) - tp
    fn = matrix.sum(-1) - tp
    tn = matrix.sum((-2, -1))[..., None] - tp - fp - fn
    return Counts(tp, fp, fn, tn)


def cohen_kappa(matrix: Any, *, weights: str | None = None) -> Array:
    r"""Cohen's kappa of a ``[*batch, C, C]`` confusion matrix; matches sklearn's cohen_kappa_score.

    .. math:: \kappa = 1 - \frac{\sum_{ij} w_{ij} O_{ij}}{\sum_{ij} w_{ij} E_{ij}}

    with E the outer product of the margins (scaled to the total) and w 0/1 off the diagonal,
    ``|i - j|`` ("linear") or ``(i - j)^2`` ("quadratic"). An empty denominator gives NaN.
    """
    if weights not in (None, "linear", "quadratic"):
        raise ValueError(f"`weights` must be None, 'linear' or 'quadratic'; got {weights!r}.")
    matrix = validation.as_real_array(matrix, "matrix", min_ndim=2).astype(jnp.float32)
    num_classes = matrix.shape[-1]
    total = matrix.sum((-2, -1), keepdims=True)
    expected = matrix.sum(-1, keepdims=True) * matrix.sum(-2, keepdims=True) / total
    index = jnp.arange(num_classes)
    distance = jnp.abs(index[:, None] - index[None, :]).astype(jnp.float32)
    if weights is None:
        cost = (distance > 0).astype(jnp.float32)
    else:
        cost = distance if weights == "linear" else distance**2
    observed_cost = (cost * matrix).sum((-2, -1))
    expected_cost = (cost * expected).sum((-2, -1))
    return 1 - safe_divide(observed_cost, expected_cost, jnp.nan)


def _probability_matrix(probs: Any, labels: Any, sample_weight: Any = None):
    probs = validation.as_scores(probs, "probs")
    if probs.ndim < 2:
        raise ValueError(f"`probs` must have shape [*batch, n, C]; got {probs.shape}.")
    num_classes = probs.shape[-1]
    labels = validation.as_real_array(labels, "labels")
    if labels.shape[-1] != probs.shape[-2]:
        raise ValueError(
            f"`labels` must have one class per row of `probs`: expected {probs.shape[-2]} samples, "
            f"got shape {labels.shape}."
        )
    invalid = validation.check_finite(probs.reshape(probs.shape[:-2] + (-1,)), "probs")
    invalid = invalid | _check_classes(labels, "labels", num_classes)
    weights = (
        None if sample_weight is None else validation.as_real_array(sample_weight, "sample_weight")
    )
    return probs, labels.astype(jnp.int32), weights, invalid, num_classes


def top_k_accuracy(probs: Any, labels: Any, *, k: int, sample_weight: Any = None) -> Array:
    """Share of samples whose true class is among the k highest scores.

    Matches `sklearn.metrics.top_k_accuracy_score` when scores are distinct. Tie rule: when the
    true class ties with others at the k-th place, the sample counts the chance that a random
    tie-break keeps it in the top k (the same rule as `precision_at_k`).

    Args:
      probs: ``[*batch, n, C]`` class scores.
      labels: ``[*batch, n]`` true class indices.
      k: a positive int (static).
    """
    if not isinstance(k, int) or k < 1:
        raise ValueError(f"`k` must be a positive int; got {k!r}.")
    probs, labels, weights, invalid, _ = _probability_matrix(probs, labels, sample_weight)
    true_score = jnp.take_along_axis(probs, labels[..., None], axis=-1)
    higher = (probs > true_score).sum(-1)
    tied = (probs == true_score).sum(-1)  # includes the true class itself
    hit = jnp.clip((k - higher) / tied, 0.0, 1.0)
    if weights is None:
        value = hit.mean(-1)
    else:
        weights = weights.astype(hit.dtype)
        value = safe_divide((hit * weights).sum(-1), weights.sum(-1))
    return validation.nan_where(invalid, value)


def multiclass_roc_auc(
    probs: Any, labels: Any, *, average: str = "macro", multi_class: str = "ovr"
) -> Array:
    """Multiclass ROC AUC, one-vs-rest or one-vs-one (Hand & Till 2001), as scikit-learn.

    Matches `sklearn.metrics.roc_auc_score(labels, probs, multi_class=..., average=...)`.
    "ovr": class c's scores against membership of class c; "macro" averages the C AUCs, "weighted"
    weighs them by prevalence, None returns them. "ovo": for every pair (a, b), the mean of
    AUC(a vs b) on a's scores and AUC(b vs a) on b's scores, over the samples of a and b only;
    "macro" averages the pairs (Hand & Till's M), "weighted" weighs a pair by its share of samples.
    A class without samples makes its AUCs NaN, and a macro average over them NaN.

    Args:
      probs: ``[n, C]`` class scores (each row a distribution, for sklearn's checks).
      labels: ``[n]`` class indices.
    """
    if multi_class not in ("ovr", "ovo"):
        raise ValueError(f"`multi_class` must be 'ovr' or 'ovo'; got {multi_class!r}.")
    if average not in (None, "macro", "weighted"):
        raise ValueError(f"`average` must be None, 'macro' or 'weighted'; got {average!r}.")
    probs, labels, _, invalid, num_classes = _probability_matrix(probs, labels)
    if probs.ndim != 2:
        raise ValueError(f"`probs` must have shape [n, C]; got {probs.shape}.")
    classes = jnp.arange(num_classes)
    members = (labels[None, :] == classes[:, None]).astype(jnp.int32)  # [C, n]
    prevalence = members.sum(-1).astype(jnp.float32)
    if multi_class == "ovr":
        aucs = ranking.roc_auc(probs.T, members)
        weight = prevalence
    else:
        if average is None:
            raise ValueError("`average=None` is not defined for multi_class='ovo'.")
        first, second = np.triu_indices(num_classes, k=1)
        in_pair = members[first] + members[second]  # [pairs, n] sample weights 0/1
        forward = ranking.roc_auc(probs.T[first], members[first], sample_weight=in_pair)
        backward = ranking.roc_auc(probs.T[second], members[second], sample_weight=in_pair)
        aucs = (forward + backward) / 2
        weight = prevalence[first] + prevalence[second]
    aucs = jnp.where(invalid, jnp.nan, aucs)
    if average is None:
        return aucs
    if average == "macro":
        return aucs.mean()
    return (aucs * weight).sum() / weight.sum()


class ClassificationReport(NamedTuple):
    """Per-class rates ``[*batch, C]`` and their averages (dicts of ``[*batch]`` arrays)."""

    precision: Array
    recall: Array
    f1: Array
    support: Array
    accuracy: Array
    macro: dict
    weighted: dict
    micro: dict


def classification_report(
    predictions: Any,
    labels: Any,
    *,
    num_classes: int,
    sample_weight: Any = None,
    zero_division: float = math.nan,
) -> ClassificationReport:
    """Per-class precision, recall, F1 and support, with accuracy and the three averages.

    The numbers of `sklearn.metrics.classification_report` (as arrays, not text), computed from
    one confusion matrix. Undefined rates are `zero_division` (NaN by default), and a macro
    average over a NaN class is NaN.
    """
    matrix = confusion_matrix(
        predictions, labels, num_classes=num_classes, sample_weight=sample_weight
    )
    counts = one_vs_rest(matrix)
    rates = {
        "precision": counts_lib.precision,
        "recall": counts_lib.recall,
        "f1": counts_lib.f_beta,
    }

    def averaged(average: str) -> dict:
        return {
            name: rate(counts, zero_division=zero_division, average=average)
            for name, rate in rates.items()
        }

    per_class = {name: rate(counts, zero_division=zero_division) for name, rate in rates.items()}
    accuracy = safe_divide(
        jnp.trace(matrix, axis1=-2, axis2=-1), matrix.sum((-2, -1)), zero_division
    )
    return ClassificationReport(
        per_class["precision"],
        per_class["recall"],
        per_class["f1"],
        counts.tp + counts.fn,
        accuracy,
        averaged("macro"),
        averaged("weighted"),
        averaged("micro"),
    )


def over_folds(
    rate, counts: Counts, *, fold_axis: int = 0, pooled: bool = True, **options
) -> Array:
    """A rate over cross-validation folds: pooled (default) or averaged.

    Pooled sums the folds' counts and divides once, so every sample counts equally and the result
    does not depend on how the samples were dealt into folds (seed 003); averaged computes the
    rate per fold and takes the mean, so every fold counts equally (a fold of one weighs as much
    as a fold of a hundred).

    Args:
      rate: any rate of `Counts` (`precision`, `accuracy`, `f_beta`, ...).
      counts: `Counts` with a fold axis.
      fold_axis: which axis of the counts holds the folds.
      pooled: False to average the per-fold rates instead.
      **options: passed to `rate` (e.g. ``average="macro"``, ``beta=2.0``).
    """
    counts = Counts(*(jnp.asarray(c) for c in counts))
    if pooled:
        return rate(Counts(*(c.sum(axis=fold_axis) for c in counts)), **options)
    return jnp.mean(rate(counts, **options), axis=fold_axis)
