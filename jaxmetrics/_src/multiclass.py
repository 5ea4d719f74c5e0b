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


def _class_indices(values: Any, name: str, num_classes: int) -> tuple[Array, Array]:
    """Class indices as int32 and the per-batch `invalid` flag: integers in [0, num_classes),
    raised on eagerly (checked in numpy on the host) and flagged under jit."""
    values = validation.as_real_array(values, name, host=True)
    if not (jnp.issubdtype(values.dtype, jnp.integer) or jnp.issubdtype(values.dtype, jnp.bool_)):
        raise TypeError(f"`{name}` must hold integer class indices; got dtype {values.dtype}.")
    invalid = validation.check_values(
        values,
        name,
        lambda v: (v < 0) | (v >= num_classes),
        f"be class indices in [0, {num_classes}) (`num_classes`)",
    )
    return jnp.asarray(values).astype(jnp.int32), invalid


def _check_num_classes(num_classes: Any) -> int:
    """`num_classes` is stated, never inferred: a Python or numpy int >= 2."""
    return validation.check_count(num_classes, "num_classes", minimum=2)


def _count_weights(weights: Any) -> tuple[Array | None, Array]:
    """Weights ready for counting, and the per-batch `invalid` flag.

    `validation.check_weights` refuses negative and non-finite weights and, for integer weights
    (counted exactly in int32), a total of 2^31 or more per batch element; integer weights are
    then cast to int32 (uint32 values that fit are kept, not wrapped into negatives).
    """
    if weights is None:
        return None, jnp.zeros((), bool)
    weights = validation.as_real_array(weights, "sample_weight", host=True)
    invalid = validation.check_weights(weights)
    if jnp.issubdtype(weights.dtype, jnp.floating):
        return jnp.asarray(weights).astype(validation.float_dtype()), invalid
    return jnp.asarray(weights).astype(jnp.int32), invalid


def confusion_matrix(
    predictions: Any, labels: Any, *, num_classes: int, sample_weight: Any = None
) -> Array:
    """Multiclass confusion matrix, rows true classes and columns predicted classes.

    Matches `sklearn.metrics.confusion_matrix(labels, predictions, labels=range(num_classes))`.

    Conventions: class indices outside [0, num_classes) and negative or non-finite weights raise
    `ValueError` eagerly; under jit that batch element's matrix is all -1 (NaN with float
    weights). Counts are int32, exact, without weights or with integer weights, whose total per
    batch element must be below 2^31 (checked on the host; under jit a larger float32 total marks
    the element); float weights give float32 counts (float64 under x64).

    Args:
      predictions: ``[*batch, n]`` predicted class indices.
      labels: ``[*batch, n]`` true class indices.
      num_classes: the number of classes C (static); never inferred.
      sample_weight: optional ``[*batch, n]`` weights.

    Returns:
      ``[*batch, C, C]``: int32 counts (float with float weights).

    >>> import jaxmetrics as jm
    >>> jm.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3).tolist()
    [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    """
    num_classes = _check_num_classes(num_classes)
    cells = num_classes * num_classes
    if cells >= 2**24:
        raise ValueError(f"`num_classes` too large for exact pair codes; got {num_classes}.")
    predictions, invalid_predictions = _class_indices(predictions, "predictions", num_classes)
    labels, invalid_labels = _class_indices(labels, "labels", num_classes)
    weights, invalid_weights = _count_weights(sample_weight)
    batch_shape = validation.sample_axis_shapes(
        [("predictions", predictions), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = invalid_predictions | invalid_labels | invalid_weights

    def kernel(predictions: Array, labels: Array, weights: Array | None) -> Array:
        code = labels * num_classes + predictions
        ranked = sorting.rank(code.astype(jnp.float32))  # codes < 2^24 are exact in float32
        tallies = sorting.tally(ranked, jnp.zeros_like(code), weights)
        total = tallies.negative  # every sample is a "negative" here: the prefix of all weight
        edges = jnp.arange(cells + 1, dtype=jnp.float32) - 0.5
        cumulative = sorting.at_thresholds(ranked, total, edges, inclusive=False)
        return jnp.diff(cumulative).reshape(num_classes, num_classes)

    matrix = validation.map_batch(kernel, predictions, labels, weights)
    return validation.nan_where(jnp.broadcast_to(invalid, batch_shape), matrix)


def _marked(matrix: Array) -> Array:
    """Per-batch flag of a matrix that carries the -1 count marker of a bad jit input."""
    return jnp.any(matrix < 0, axis=(-2, -1))


def one_vs_rest(matrix: Any) -> Counts:
    """Per-class binary counts of a ``[*batch, C, C]`` confusion matrix, class axis last.

    For class c: TP the diagonal, FP the rest of column c, FN the rest of row c, TN everything
    else. Feed the result to any rate with ``average=None | "micro" | "macro" | "weighted"``.
    A matrix carrying the -1 marker (a bad input under jit) gives counts that are all -1 (NaN
    for float counts), so every rate of them is NaN.
    """
    matrix = _square(matrix)
    tp = jnp.diagonal(matrix, axis1=-2, axis2=-1)
    fp = matrix.sum(-2) - tp
    fn = matrix.sum(-1) - tp
    tn = matrix.sum((-2, -1))[..., None] - tp - fp - fn
    return validation.nan_where(_marked(matrix), Counts(tp, fp, fn, tn))


def _square(matrix: Any) -> Array:
    matrix = validation.as_real_array(matrix, "matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(f"`matrix` must be square [*batch, C, C]; got shape {matrix.shape}.")
    return matrix


def cohen_kappa(matrix: Any, *, weights: str | None = None) -> Array:
    r"""Cohen's kappa of a ``[*batch, C, C]`` confusion matrix; matches sklearn's cohen_kappa_score.

    .. math:: \kappa = 1 - \frac{\sum_{ij} w_{ij} O_{ij}}{\sum_{ij} w_{ij} E_{ij}}

    with E the outer product of the margins (scaled to the total) and w 0/1 off the diagonal,
    ``|i - j|`` ("linear") or ``(i - j)^2`` ("quadratic"). The matrix is scaled to proportions
    first, so huge weights (1e20) cannot overflow. An empty denominator or an empty matrix gives
    NaN, and so does a matrix carrying the -1 marker of a bad input under jit.

    Returns:
      ``[*batch]`` kappas, float32 (float64 under x64).
    """
    validation.check_option(weights, "weights", (None, "linear", "quadratic"))
    matrix = _square(matrix)
    marked = _marked(matrix)
    dtype = validation.float_dtype()
    shares = safe_divide(matrix, matrix.sum((-2, -1), keepdims=True))
    expected = shares.sum(-1, keepdims=True) * shares.sum(-2, keepdims=True)
    index = np.arange(matrix.shape[-1])
    distance = jnp.asarray(np.abs(index[:, None] - index[None, :]), dtype)
    if weights is None:
        cost = (distance > 0).astype(dtype)
    else:
        cost = distance if weights == "linear" else distance**2
    observed_cost = (cost * shares).sum((-2, -1))
    expected_cost = (cost * expected).sum((-2, -1))
    return jnp.where(marked, jnp.nan, 1 - safe_divide(observed_cost, expected_cost, jnp.nan))


def _is_not_finite(values: Any) -> Any:
    return ~((values > -np.inf) & (values < np.inf))  # NaN fails both comparisons


def _probability_matrix(probs: Any, labels: Any):
    """Class scores ``[*batch, n, C]``, labels int32 ``[*batch, n]`` and `invalid` ``[*batch]``."""
    probs = validation.as_scores(probs, "probs", host=True)
    if probs.ndim < 2:
        raise ValueError(f"`probs` must have shape [*batch, n, C]; got {probs.shape}.")
    num_classes = probs.shape[-1]
    labels, invalid_labels = _class_indices(labels, "labels", num_classes)
    if labels.shape[-1] != probs.shape[-2]:
        raise ValueError(
            f"`labels` must have one class per row of `probs`: expected {probs.shape[-2]} samples, "
            f"got shape {labels.shape}."
        )
    invalid = validation.check_values(probs, "probs", _is_not_finite, "be finite", sample_axes=2)
    try:
        batch_shape = tuple(np.broadcast_shapes(probs.shape[:-2], labels.shape[:-1]))
    except ValueError:
        raise ValueError(
            f"batch axes must broadcast; got `probs` {probs.shape} and `labels` {labels.shape}."
        ) from None
    invalid = jnp.broadcast_to(invalid | invalid_labels, batch_shape)
    return jnp.asarray(probs), labels, invalid, num_classes


def top_k_accuracy(probs: Any, labels: Any, *, k: int, sample_weight: Any = None) -> Array:
    """Share of samples whose true class is among the k highest scores.

    Matches `sklearn.metrics.top_k_accuracy_score` when scores are distinct. Tie rule: when the
    true class ties with others at the k-th place, the sample counts the chance that a random
    tie-break keeps it in the top k (the same rule as `precision_at_k`).

    Conventions: NaN/inf scores, class indices outside [0, C) and negative or non-finite weights
    raise `ValueError` eagerly; under jit that batch element is NaN. A zero total weight gives
    NaN.

    Args:
      probs: ``[*batch, n, C]`` class scores.
      labels: ``[*batch, n]`` true class indices.
      k: a positive int (static; Python or numpy).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      ``[*batch]`` accuracies.
    """
    k = validation.check_count(k, "k")
    probs, labels, invalid, _ = _probability_matrix(probs, labels)
    true_score = jnp.take_along_axis(probs, labels[..., None], axis=-1)
    higher = (probs > true_score).sum(-1)
    tied = (probs == true_score).sum(-1)  # includes the true class itself
    hit = jnp.clip((k - higher) / tied, 0.0, 1.0).astype(validation.float_dtype())
    if sample_weight is None:
        value = hit.mean(-1)
    else:
        weights = validation.as_real_array(sample_weight, "sample_weight", host=True)
        validation.sample_axis_shapes([("labels", labels), ("sample_weight", weights)])
        invalid = invalid | validation.check_weights(weights)
        weights = jnp.asarray(weights).astype(hit.dtype)
        value = safe_divide((hit * weights).sum(-1), weights.sum(-1))
    return validation.nan_where(invalid, value)


def multiclass_roc_auc(
    probs: Any, labels: Any, *, average: str | None = "macro", multi_class: str = "ovr"
) -> Array:
    """Multiclass ROC AUC, one-vs-rest or one-vs-one (Hand & Till 2001), as scikit-learn.

    Matches `sklearn.metrics.roc_auc_score(labels, probs, multi_class=..., average=...)`.
    "ovr": class c's scores against membership of class c; "macro" averages the C AUCs, "weighted"
    weighs them by prevalence, None returns them. "ovo": for every pair (a, b), the mean of
    AUC(a vs b) on a's scores and AUC(b vs a) on b's scores, over the samples of a and b only;
    "macro" averages the pairs (Hand & Till's M), "weighted" weighs a pair by its share of samples.
    A class without samples makes its AUCs NaN, and a macro average over them NaN.

    Conventions: NaN/inf scores and class indices outside [0, C) raise `ValueError` eagerly;
    under jit that batch element is NaN.

    Args:
      probs: ``[*batch, n, C]`` class scores (each row a distribution, for sklearn's checks).
      labels: ``[*batch, n]`` class indices.

    Returns:
      ``[*batch]`` (``[*batch, C]`` per class for ``average=None``).
    """
    validation.check_option(multi_class, "multi_class", ("ovr", "ovo"))
    validation.check_option(average, "average", (None, "macro", "weighted"))
    if multi_class == "ovo" and average is None:
        raise ValueError("`average=None` is not defined for multi_class='ovo'.")
    probs, labels, invalid, num_classes = _probability_matrix(probs, labels)
    by_class = jnp.swapaxes(probs, -1, -2)  # [*batch, C, n]: the samples on the last axis
    classes = jnp.arange(num_classes)[:, None]
    members = (labels[..., None, :] == classes).astype(jnp.int32)  # [*batch, C, n]
    prevalence = members.sum(-1).astype(validation.float_dtype())
    if multi_class == "ovr":
        aucs = ranking.roc_auc(by_class, members)
        weight = prevalence
    else:
        first, second = np.triu_indices(num_classes, k=1)
        in_pair = members[..., first, :] + members[..., second, :]  # sample weights 0/1
        forward = ranking.roc_auc(
            by_class[..., first, :], members[..., first, :], sample_weight=in_pair
        )
        backward = ranking.roc_auc(
            by_class[..., second, :], members[..., second, :], sample_weight=in_pair
        )
        aucs = (forward + backward) / 2
        weight = prevalence[..., first] + prevalence[..., second]
    aucs = validation.nan_where(invalid, aucs)
    if average is None:
        return aucs
    if average == "macro":
        return aucs.mean(-1)
    return (aucs * weight).sum(-1) / weight.sum(-1)


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
    average over a NaN class is NaN. Bad input as `confusion_matrix`: under jit a bad batch
    element has every rate and the accuracy NaN and its support -1.
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
    support, accuracy = validation.nan_where(_marked(matrix), (counts.tp + counts.fn, accuracy))
    return ClassificationReport(
        per_class["precision"],
        per_class["recall"],
        per_class["f1"],
        support,
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

    A fold carrying the -1 count marker (a bad input under jit) makes the result NaN either way:
    pooled, the sum keeps the marker instead of adding -1s into the other folds' counts.
    """
    counts = Counts(*(jnp.asarray(c) for c in counts))
    if not pooled:
        return jnp.mean(rate(counts, **options), axis=fold_axis)
    marked = jnp.any(
        (counts.tp < 0) | (counts.fp < 0) | (counts.fn < 0) | (counts.tn < 0), axis=fold_axis
    )
    total = Counts(*(c.sum(axis=fold_axis) for c in counts))
    return rate(validation.nan_where(marked, total), **options)
