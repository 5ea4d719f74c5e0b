"""Confusion counts: the `Counts` tuple, and the counting kernel.

`Counts` is the one currency of the library: thresholded metrics, curves, threshold choice and the
soft surrogates all produce or consume it; the rates read off it live in `rates`. Every division
goes through `numerics.safe_divide`, so undefined values behave the same everywhere.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, sorting, validation
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe


class Counts(NamedTuple):
    """Confusion counts of a binary rule: TP, FP, FN and TN (a pytree of arrays).

    What `confusion_counts` and `one_vs_rest` return and what every rate (`precision`, `recall`,
    `f_beta`, ...) takes, so that one sort of the scores serves every rate at every threshold.
    It unpacks as ``tp, fp, fn, tn``; note that ``sklearn.metrics.confusion_matrix(...).ravel()``
    gives ``tn, fp, fn, tp``.

    The fields share one shape, e.g. ``[*batch, *t]`` for a threshold grid or ``[*batch, C]``
    per class. They are int32 when computed without weights or with integer weights (exact past
    2^24 samples without `jax_enable_x64`); with x64 on, integer weights are counted in int64.
    Float weights give float sums of weights. Under `jax.jit`, a batch element whose input held
    a bad value has every count set to -1, an impossible count that every rate turns into NaN.

    Attributes:
      tp: true positives, positive samples with ``score >= threshold``.
      fp: false positives, negative samples with ``score >= threshold``.
      fn: false negatives, positive samples with ``score < threshold``.
      tn: true negatives, negative samples with ``score < threshold``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> tp, fp, fn, tn = jm.confusion_counts(scores, [1, 1, 0, 1, 0, 1, 0, 0], 0.5)
      >>> int(tp), int(fp), int(fn), int(tn)
      (3, 1, 1, 3)
    """

    tp: Array
    fp: Array
    fn: Array
    tn: Array


def confusion_counts(
    scores: ArrayLike,
    labels: ArrayLike,
    thresholds: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> Counts:
    r"""Confusion counts of the rule ``score >= threshold``, at one threshold or a whole grid.

    Matches ``sklearn.metrics.confusion_matrix(labels, scores >= t, sample_weight=w).ravel()``
    (which orders them tn, fp, fn, tp) at every threshold t of the grid, and
    `sklearn.metrics.confusion_matrix_at_thresholds` where the grid is the distinct scores. A
    grid of more than 8 thresholds is read off weighted prefix sums of the scores sorted once,
    by a binary search: O(n log n + T log n) time and O(n + T) memory, never an ``n x T``
    comparison array; up to 8, each score is compared with each threshold (no sort).

    .. math:: TP(t) = \sum_{i:\, y_i = 1,\, s_i \ge t} w_i, \qquad
              FP(t) = \sum_{i:\, y_i = 0,\, s_i \ge t} w_i

    and FN, TN likewise over ``s_i < t`` (with unit weights, counts of samples).

    ``+inf`` flags nothing and ``-inf`` everything. Counts are typed as `Counts` says. A NaN
    threshold and an empty grid are bad input too; under `jax.jit` a NaN threshold sets only its
    own counts to -1, and the thresholds are cast to the scores' dtype. Threshold rule, bad
    input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      thresholds: ``[*t]``, any shape (a scalar included); the same grid for every batch element.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `Counts` whose fields have shape ``[*batch, *t]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # eight scored examples, 4 positive
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> [int(x) for x in jm.confusion_counts(scores, labels, 0.5)]  # tp, fp, fn, tn
      [3, 1, 1, 3]
      >>> counts = jm.confusion_counts(scores, labels, [0.25, 0.5, 0.75])  # one call, any grid
      >>> counts.tp.tolist(), counts.fp.tolist()
      ([4, 3, 2], [2, 1, 0])
    """
    thresholds = coercion.as_real_array(thresholds, "thresholds", min_ndim=0, host=True)
    if thresholds.size == 0:
        raise ValueError(
            "`thresholds` must hold at least one threshold (a scalar or an array); got an empty "
            f"array of shape {tuple(thresholds.shape)}."
        )
    checks.check(thresholds, "thresholds", _NOT_NAN, sample_axes=0)
    wide = _x64_integer_weights(sample_weight)
    scores, labels, weights, invalid, codec = validation.ranking_inputs(
        scores,
        labels,
        sample_weight if wide is None else wide.astype(np.float64),
        thresholds=thresholds,
    )
    if wide is not None:  # checked above as float64 for their sign; their total against int64
        invalid = invalid | _int64_total_past_limit(wide)
        weights = wide.astype(np.int64)
    if codec.active:
        grid = codec.encode_thresholds(thresholds.reshape(-1))
    else:
        grid = thresholds.astype(scores.dtype).reshape(-1)
    counts = recipe.run_kernel(_COUNTS, scores, labels, weights, grid)
    counts = Counts(*(c.reshape(c.shape[:-1] + thresholds.shape) for c in counts))
    return batching.nan_where(invalid, counts)


# thresholds are scores, compared by `>=`: a NaN one would flag nothing and say nothing
_NOT_NAN = checks.Rule(lambda values: values != values, "not be NaN (thresholds are scores)")


_INT64_BITS_HIGH = 2**31  # a row total of 2^63 or more: (high word sum) + carries >= 2^31


def _x64_integer_weights(sample_weight: ArrayLike | None) -> Any:
    """Integer `sample_weight` when x64 is on (their counts are int64), else None.

    `checks.check_weights` holds integer weights to totals that int32 counts can hold; with
    x64 on the counts are int64, so the caller passes these weights through the shared checks as
    float64 (sign, shape) and checks their total against int64 with `_int64_total_past_limit`.
    """
    if sample_weight is None or not jax.config.jax_enable_x64:
        return None
    weights = coercion.as_real_array(sample_weight, "sample_weight", host=True, keep_split=True)
    return weights if jnp.issubdtype(weights.dtype, jnp.integer) else None


def _int64_total_past_limit(weights: Any) -> Any:
    """Per row, whether non-negative integer weights sum past int64; raises when concrete.

    Exact for any weights below 2^64 and rows below 2^32 samples: the high and low 32-bit words
    are summed apart in uint64, and the total reaches 2^63 exactly when the high sum plus the
    carry out of the low one reaches 2^31.
    """
    host = checks.host_values(weights)
    xp = np if host is not None else jnp
    words = (host if host is not None else jnp.asarray(weights)).astype(xp.uint64)
    high = (words >> 32).sum(axis=-1, dtype=xp.uint64)
    low = (words & 0xFFFFFFFF).sum(axis=-1, dtype=xp.uint64)
    too_large = high + (low >> 32) >= _INT64_BITS_HIGH
    if checks.is_concrete(too_large) and np.any(too_large):
        row = np.argwhere(np.asarray(too_large).reshape(-1))[0, 0]
        total = int(np.asarray(high).reshape(-1)[row]) * 2**32 + int(
            np.asarray(low).reshape(-1)[row]
        )
        raise ValueError(
            f"`sample_weight` must sum to at most 2^63 - 1 per row (int64 counts); found a total "
            f"of {total}. Scale the weights down (rates do not change)."
        )
    return too_large


def _count_type(weights: Array | None):
    """The counts' type: int64 for int64 weights (integer weights with x64 on), else
    `sorting.count_dtype`'s (int32 for integer weights, the type that needs no x64)."""
    if weights is not None and weights.dtype == jnp.int64:
        return jnp.int64
    return sorting.count_dtype(weights)


def _prefix_counts(ranked: sorting.Ranked, labels: Array, weights: Array | None):
    """(positive, negative): exclusive prefix sums of the weights of each class, ranked order."""
    if _count_type(weights) != jnp.int64:
        tallies = sorting.tally(ranked, labels, weights)
        return tallies.positive, tallies.negative
    weights = weights[ranked.order]  # (int64: `sorting.tally` would count in int32)
    positive = weights * labels[ranked.order].astype(jnp.int64)
    return sorting.count_prefix_sum(positive), sorting.count_prefix_sum(weights - positive)


# up to this many thresholds, every score is compared with each (n * T work, no sort: counts at
# one threshold cost a pass over the samples); past it, one sort serves the grid (n log n)
DIRECT_THRESHOLDS = 8


def _counts_kernel(scores: Array, labels: Array, weights: Array | None, grid: Array) -> Counts:
    if grid.shape[-1] <= DIRECT_THRESHOLDS:
        counts = _compared_counts(scores, labels, weights, grid)
    else:
        ranked = sorting.rank(scores)
        positive, negative = _prefix_counts(ranked, labels, weights)
        fn = sorting.at_thresholds(ranked, positive, grid, inclusive=False)
        tn = sorting.at_thresholds(ranked, negative, grid, inclusive=False)
        counts = Counts(positive[-1] - fn, negative[-1] - tn, fn, tn)
    # a NaN threshold (possible only under jit) marks its own counts, not the +inf end
    return Counts(*(jnp.where(jnp.isnan(grid), jnp.asarray(-1, c.dtype), c) for c in counts))


def _compared_counts(scores: Array, labels: Array, weights: Array | None, grid: Array) -> Counts:
    """The counts at each of a few thresholds, each score compared with each threshold as the
    sorted path's search compares them (the flushed scores, XLA's `<`), weights summed in the
    sorted path's type."""
    dtype = _count_type(weights)
    weights = jnp.ones(labels.shape, dtype) if weights is None else weights.astype(dtype)
    positive = weights * labels.astype(dtype)
    negative = weights - positive
    flagged = sorting.flush(scores) >= grid[:, None]  # [T, n]

    def total(where: Array, values: Array) -> Array:
        return jnp.sum(jnp.where(where, values, jnp.zeros((), dtype)), axis=-1, dtype=dtype)

    return Counts(
        total(flagged, positive),
        total(flagged, negative),
        total(~flagged, positive),
        total(~flagged, negative),
    )


# counts at fixed thresholds add up over any split of the samples: over a mesh, each device
# counts its own samples and a `psum` adds them (recipe.run_kernel)
_COUNTS = recipe.Kernel(_counts_kernel, additive=True)
