"""Confusion counts and every rate derived from them.

`Counts` is the one currency of the library: thresholded metrics, curves, threshold choice and the
soft surrogates all produce or consume it. Rates share one division helper (`safe_divide`) and one
averaging rule (`_average`), so undefined values behave the same everywhere.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmetrics._src import recipe, sorting, validation
from jaxmetrics._src.typing import Array, ArrayLike, Average, options_of

_AVERAGES = options_of(Average)


class Counts(NamedTuple):
    """True positives, false positives, false negatives and true negatives (a pytree).

    Fields share one shape. They are int32 when computed without weights or with integer weights
    (exact past 2^24 samples) and float otherwise. Under `jax.jit`, a batch element whose input held
    a bad value has every count set to -1, which every rate turns into NaN.
    """

    tp: Array
    fp: Array
    fn: Array
    tn: Array


def safe_divide(numerator: Array, denominator: Array, zero_division: float = math.nan) -> Array:
    """`numerator / denominator` in float, with `zero_division` where the denominator is 0."""
    dtype = validation.float_dtype()
    numerator = jnp.asarray(numerator, dtype)
    denominator = jnp.asarray(denominator, dtype)
    shape = jnp.broadcast_shapes(numerator.shape, denominator.shape)
    empty = denominator == 0
    # XLA rewrites a division by a broadcast scalar as a product with its reciprocal, which is
    # not exact (41/41 would be 0.99999994); the barrier keeps it a true, correctly rounded
    # division, so a rate is exact wherever the ratio is representable.
    safe = jax.lax.optimization_barrier(
        jnp.broadcast_to(jnp.where(empty, jnp.ones_like(denominator), denominator), shape)
    )
    return jnp.where(empty, jnp.asarray(zero_division, dtype), numerator / safe)


def confusion_counts(
    scores: ArrayLike,
    labels: ArrayLike,
    thresholds: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> Counts:
    """Confusion counts of the rule ``score >= threshold`` at one threshold or a whole grid.

    Matches `sklearn.metrics.confusion_matrix(labels, scores >= t, sample_weight=...)` at every t.

    Sorts the scores once and reads every threshold off weighted prefix sums with a binary search:
    O(n log n + T log n) time and O(n + T) memory, never an n x T comparison array.

    Conventions: predicted positive iff ``score >= threshold``; thresholds are compared in the
    scores' dtype; NaN/inf scores, labels outside {0, 1} and negative weights raise `ValueError`
    (under jit the counts of that batch element are -1).

    Args:
      scores: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` 0/1 labels (1 positive), broadcasting against `scores`.
      thresholds: any shape ``[*t]``; the same grid for every batch element.
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      `Counts` with fields of shape ``[*batch, *t]``.

    >>> import jaxmetrics as jm
    >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # eight scored examples, 4 positive
    >>> c = jm.confusion_counts(scores, [1, 1, 0, 1, 0, 1, 0, 0], 0.5)
    >>> [int(x) for x in c]
    [3, 1, 1, 3]
    """
    thresholds = validation.as_real_array(thresholds, "thresholds", min_ndim=0, host=True)
    validation.check_values(
        thresholds, "thresholds", _is_nan, "not be NaN (thresholds are scores)", sample_axes=0
    )
    scores, labels, weights, invalid, codec = validation.ranking_inputs(
        scores, labels, sample_weight, thresholds=thresholds
    )
    if codec.active:
        grid = codec.encode_thresholds(thresholds.reshape(-1))
    else:
        grid = thresholds.astype(scores.dtype).reshape(-1)
    counts = recipe.run_kernel(_counts_kernel, scores, labels, weights, grid)
    counts = Counts(*(c.reshape(c.shape[:-1] + thresholds.shape) for c in counts))
    return validation.nan_where(invalid, counts)


def _is_nan(values: Any) -> Any:
    return values != values


def _counts_kernel(scores: Array, labels: Array, weights: Array | None, grid: Array) -> Counts:
    ranked, tallies, _ = sorting.rank_and_tally(scores, labels, weights)
    positive, negative = tallies.positive, tallies.negative
    fn = sorting.at_thresholds(ranked, positive, grid, inclusive=False)
    tn = sorting.at_thresholds(ranked, negative, grid, inclusive=False)
    counts = Counts(positive[-1] - fn, negative[-1] - tn, fn, tn)
    # a NaN threshold (possible only under jit) marks its own counts, not the +inf end
    return Counts(*(jnp.where(jnp.isnan(grid), jnp.asarray(-1, c.dtype), c) for c in counts))


_HOW_TO_COUNT = (
    "Rates take counts, so that one sort serves every rate: count predictions first, e.g. "
    "`jm.precision(jm.confusion_counts(scores, labels, 0.5))`."
)


def _takes_counts(rate: Callable[..., Array]) -> Callable[..., Array]:
    """Rates are ``rate(counts, *, options)``; a scikit-learn style ``rate(scores, labels)``
    call gets an error that says how to get counts, instead of Python's bare arity error."""

    @functools.wraps(rate)
    def checked(counts: Counts, *unexpected: Any, **options: Any) -> Array:
        if unexpected:
            raise TypeError(
                f"`{rate.__name__}` takes one `Counts` argument (options are keyword-only); "
                f"got {1 + len(unexpected)} positional arguments. {_HOW_TO_COUNT}"
            )
        return rate(counts, **options)

    return checked


def _as_counts(counts: Any) -> Counts:
    if not isinstance(counts, Counts):
        raise TypeError(
            f"`counts` must be a jaxmetrics.Counts (from confusion_counts or one_vs_rest); "
            f"got {type(counts).__name__}. {_HOW_TO_COUNT}"
        )
    return Counts(*(jnp.asarray(c) for c in counts))


def _pool(counts: Counts) -> Counts:
    """Micro-averaging: sum the counts over the class axis (last) before dividing."""
    return Counts(*(c.sum(axis=-1) for c in counts))


def _average(rate: Array, counts: Counts, average: Average, zero_division: float) -> Array:
    if average is None:
        return rate
    if average == "macro":
        return rate.mean(axis=-1)
    # "weighted": by support (true members of each class); a class without members weighs
    # nothing, and with no support at all the average is `zero_division` (as scikit-learn)
    support = (counts.tp + counts.fn).astype(rate.dtype)
    terms = jnp.where(support > 0, rate * support, jnp.zeros_like(rate))
    return safe_divide(terms.sum(axis=-1), support.sum(axis=-1), zero_division)


def _rate(rate_of, counts: Any, *, zero_division: float, average: Average) -> Array:
    """Apply `rate_of(counts, zero_division)` with the averaging rule and the -1 sentinel."""
    validation.check_option(average, "average", _AVERAGES)
    counts = _as_counts(counts)
    if average is not None and counts.tp.ndim == 0:
        raise ValueError(
            f"`average={average!r}` needs a class axis (the last axis of the counts); "
            "got scalar counts."
        )
    invalid = (counts.tp < 0) | (counts.fp < 0) | (counts.fn < 0) | (counts.tn < 0)
    if average == "micro":
        counts, invalid = _pool(counts), invalid.any(axis=-1)
        value = rate_of(counts, zero_division)
    else:
        value = _average(rate_of(counts, zero_division), counts, average, zero_division)
        invalid = invalid if average is None else invalid.any(axis=-1)
    return jnp.where(invalid, jnp.nan, value)


@_takes_counts
def precision(counts: Counts, *, zero_division: float = math.nan, average: Average = None):
    """Precision TP / (TP + FP), the share of alarms that are real.

    Matches `sklearn.metrics.precision_score` (from counts). Undefined (no predicted positives)
    gives `zero_division`, NaN by default; ``average`` works over the last (class) axis: "micro"
    pools counts before dividing, "macro" is NaN if any class is NaN, "weighted" weighs by support.

    >>> import jaxmetrics as jm
    >>> round(float(jm.precision(jm.Counts(90, 891, 10, 9009))), 4)  # a screening test: 1% prevalence
    0.0917
    """
    return _rate(
        lambda c, z: safe_divide(c.tp, c.tp + c.fp, z),
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def recall(counts: Counts, *, zero_division: float = math.nan, average: Average = None):
    """Recall (sensitivity, TPR) TP / (TP + FN). Matches `sklearn.metrics.recall_score`."""
    return _rate(
        lambda c, z: safe_divide(c.tp, c.tp + c.fn, z),
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def specificity(counts: Counts, *, zero_division: float = math.nan, average: Average = None):
    """Specificity (TNR) TN / (TN + FP); sklearn's `recall_score` with `pos_label=0`."""
    return _rate(
        lambda c, z: safe_divide(c.tn, c.tn + c.fp, z),
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def false_positive_rate(
    counts: Counts, *, zero_division: float = math.nan, average: Average = None
):
    """False positive rate FP / (FP + TN) = 1 - specificity."""
    return _rate(
        lambda c, z: safe_divide(c.fp, c.fp + c.tn, z),
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def accuracy(counts: Counts, *, zero_division: float = math.nan, average: Average = None):
    """Accuracy (TP + TN) / (TP + FP + FN + TN). Matches `sklearn.metrics.accuracy_score`.

    >>> import jaxmetrics as jm
    >>> round(float(jm.accuracy(jm.Counts(90, 891, 10, 9009))), 4)
    0.9099
    """
    return _rate(
        lambda c, z: safe_divide(c.tp + c.tn, c.tp + c.fp + c.fn + c.tn, z),
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def balanced_accuracy(counts: Counts, *, zero_division: float = math.nan, average: Average = None):
    """Balanced accuracy (recall + specificity) / 2; matches sklearn's `balanced_accuracy_score`.

    Undefined when either class is absent (`zero_division` enters through the missing rate).
    """
    return _rate(
        lambda c, z: (safe_divide(c.tp, c.tp + c.fn, z) + safe_divide(c.tn, c.tn + c.fp, z)) / 2,
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def f_beta(
    counts: Counts,
    *,
    beta: float = 1.0,
    zero_division: float = math.nan,
    average: Average = None,
):
    r"""F-beta in its counting form; matches `sklearn.metrics.fbeta_score` (f1_score for beta=1).

    .. math:: F_\beta = \frac{(1+\beta^2) TP}{(1+\beta^2) TP + \beta^2 FN + FP}

    Undefined only when TP = FP = FN = 0, where it gives `zero_division`.

    >>> import jaxmetrics as jm
    >>> round(float(jm.f_beta(jm.Counts(90, 891, 10, 9009), beta=2.0)), 3)  # 450 / 1381
    0.326
    """
    if not beta >= 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")
    if math.isinf(beta):  # the limit of F-beta as beta grows is recall
        return recall(counts, zero_division=zero_division, average=average)
    scale = 1.0 + beta * beta

    def rate_of(c: Counts, z: float) -> Array:
        tp = c.tp.astype(validation.float_dtype())
        return safe_divide(scale * tp, scale * tp + beta * beta * c.fn + c.fp, z)

    return _rate(rate_of, counts, zero_division=zero_division, average=average)


def _float(x: Array) -> Array:
    return x.astype(validation.float_dtype())


def matthews_corrcoef(counts_or_matrix: ArrayLike, *, zero_division: float = math.nan) -> Array:
    r"""Matthews correlation coefficient of binary `Counts` or of a ``[*batch, C, C]`` matrix.

    Matches `sklearn.metrics.matthews_corrcoef`, except that an empty denominator (a constant
    prediction or a single class) gives `zero_division` (NaN by default; sklearn returns 0.0).

    .. math:: \mathrm{MCC} = \frac{TP \cdot TN - FP \cdot FN}
              {\sqrt{(TP+FP)(TP+FN)(TN+FP)(TN+FN)}}

    For a C x C matrix (rows true, columns predicted) Gorodkin's R_K statistic is used.
    Products are formed in float, so integer counts cannot overflow.
    """
    if isinstance(counts_or_matrix, Counts):
        c = Counts(*(_float(jnp.asarray(x)) for x in counts_or_matrix))
        invalid = (c.tp < 0) | (c.fp < 0) | (c.fn < 0) | (c.tn < 0)
        numerator = c.tp * c.tn - c.fp * c.fn
        denominator = jnp.sqrt((c.tp + c.fp) * (c.tp + c.fn)) * jnp.sqrt(
            (c.tn + c.fp) * (c.tn + c.fn)
        )
        return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))
    matrix = validation.as_real_array(counts_or_matrix, "counts_or_matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            f"`counts_or_matrix` must be Counts or a square [*batch, C, C] matrix; "
            f"got shape {matrix.shape}."
        )
    # a matrix marked bad under jit (-1 cells) has no correlation: NaN
    invalid = jnp.any(matrix < 0, axis=(-2, -1))
    matrix = _float(matrix)
    true_per_class = matrix.sum(axis=-1)
    predicted_per_class = matrix.sum(axis=-2)
    correct = jnp.trace(matrix, axis1=-2, axis2=-1)
    total = matrix.sum(axis=(-2, -1))
    numerator = correct * total - (predicted_per_class * true_per_class).sum(-1)
    denominator = jnp.sqrt(total**2 - (predicted_per_class**2).sum(-1)) * jnp.sqrt(
        total**2 - (true_per_class**2).sum(-1)
    )
    return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))
