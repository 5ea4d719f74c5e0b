"""Rates over cross-validation folds: pooled (sum the counts, divide once) or averaged.

Folds are one more leading axis of `Counts`. Pooling is the default because it is the rate of the
concatenated held-out predictions: every sample counts once, whatever the deal into folds, and a
fold where a rate is undefined (no positives to recall) adds nothing to either side of the ratio
instead of a conventional value.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from jaxmetrics._src.core import batching, coercion, kernels
from jaxmetrics._src.core.typing import Array
from jaxmetrics._src.metrics.counts import Counts


def over_folds(
    rate: Callable[..., Array],
    counts: Counts,
    *,
    fold_axis: int = 0,
    pooled: bool = True,
    **options: Any,
) -> Array:
    r"""A rate over cross-validation folds: of the pooled counts (default), or the fold mean.

    scikit-learn has no equivalent: `sklearn.model_selection.cross_val_score` returns one score
    per fold, whose mean is the averaged form (``pooled=False``). Pooled sums the folds' counts
    and divides once, so every sample counts equally and the result does not depend on how the
    samples were dealt into folds; averaged computes the rate per fold and takes the mean, so
    every fold counts equally (a fold of one sample weighs as much as a fold of a hundred).

    .. math:: \text{pooled} = r\Big(\sum_k c_k\Big), \qquad
              \text{averaged} = \frac{1}{K} \sum_{k=1}^{K} r(c_k)

    with c_k the counts of fold k and r the rate.

    Pooled, a fold where the rate is undefined (recall on a fold without positives) adds 0 to
    the numerator and the denominator; averaged, its undefined rate (`zero_division`, NaN by
    default) enters the mean. A fold carrying the -1 count marker (a bad input under `jax.jit`)
    makes the result NaN either way: pooled, the sum keeps the marker instead of adding -1s into
    the other folds' counts. A `fold_axis` outside the counts' axes, or equal to the class
    (last) axis while `average` is given, raises `ValueError`.

    Args:
      rate: any rate of `Counts` (`precision`, `recall`, `accuracy`, `f_beta`, ...).
      counts: `Counts` with a fold axis, e.g. ``[K]`` or ``[K, C]`` (per class, class axis last).
      fold_axis: the axis of the counts that holds the folds (0 by default).
      pooled: True to pool the counts (default), False to average the per-fold rates.
      **options: passed to `rate` (e.g. ``average="macro"``, ``beta=2.0``).

    Returns:
      A float array: the counts' shape less the fold axis (and less the class axis with an
      `average`).

    Examples:
      >>> import jaxmetrics as jm
      >>> # a fold of one sample (wrong) and a fold of three (right)
      >>> folds = jm.Counts(tp=[0, 2], fp=[1, 0], fn=[0, 0], tn=[0, 1])
      >>> float(jm.over_folds(jm.accuracy, folds))  # 3 of the 4 samples
      0.75
      >>> float(jm.over_folds(jm.accuracy, folds, pooled=False))  # (0 + 1) / 2
      0.5

    References:
      Forman & Scholz (2010), "Apples-to-apples in cross-validation studies: pitfalls in
      classifier performance measurement", ACM SIGKDD Explorations 12(1):49-57.
    """
    counts = Counts(*map(coercion.as_given, counts))
    ndim = counts.tp.ndim
    if not -ndim <= fold_axis < ndim:
        raise ValueError(
            f"`fold_axis` must be an axis of the counts (shape {tuple(counts.tp.shape)}); "
            f"got {fold_axis}."
        )
    fold_axis = fold_axis % ndim  # the rate's output has no class axis when it averages
    if options.get("average") is not None and fold_axis == ndim - 1:
        raise ValueError(
            f"`fold_axis` must not be the class axis (the last) with `average`; got {fold_axis} "
            f"for counts of shape {tuple(counts.tp.shape)}."
        )
    if not pooled:
        return jnp.mean(rate(counts, **options), axis=fold_axis)
    return rate(_pooled(counts, fold_axis=fold_axis), **options)


# The folds' counts added up (a fold holding the -1 marker marks the total), in one compiled
# program per eager call (each operation was a program of its own); inlined in a caller's trace.
@functools.partial(kernels.sample_jit, static_argnames=("fold_axis",))
def _pooled(counts: Counts, *, fold_axis: int) -> Counts:
    marked = jnp.any(
        (counts.tp < 0) | (counts.fp < 0) | (counts.fn < 0) | (counts.tn < 0), axis=fold_axis
    )
    total = Counts(*(c.sum(axis=fold_axis) for c in counts))
    return batching.nan_where(marked, total)
