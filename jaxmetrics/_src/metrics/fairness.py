"""Fairness metrics of 0/1 decisions, as fairlearn defines them: gaps between groups in the
selection rate (demographic parity), and in the true and false positive rates (equalized odds,
equal opportunity).

Each is a rate by group (`groups.masked_values`: one batched call over the group masks) and its
gap (`groups.gaps`), in one compiled program. The true and false positive rates come from
`confusion_counts` of the decisions, the one counting core, at the threshold 0.5 (a decision of
1 is positive).
"""

from __future__ import annotations

import functools
import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.options import check_count, check_real
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics import groups as by_groups
from jaxmetrics._src.metrics.counts import Counts, confusion_counts
from jaxmetrics._src.metrics.rates import false_positive_rate, recall

_DECISIONS = checks.Rule(
    checks.not_zero_or_one,
    "be 0/1 decisions (1 selected, or predicted positive); threshold scores first, e.g. "
    "`scores >= 0.5`",
)


def _flagged(flags: tuple[Any, ...], result: Array) -> Array:
    """`result` with NaN where any flag (each broadcasting to its shape) is set."""
    xp = checks.array_namespace(*flags)
    invalid = xp.broadcast_to(functools.reduce(xp.logical_or, flags), result.shape)
    return batching.nan_where(invalid, result)


def _decision_inputs(predictions: ArrayLike, labels: ArrayLike | None, sample_weight: Any):
    """(predictions, labels, weights, flags): shapes checked, bad values raised on or flagged."""
    predictions = coercion.as_real_array(predictions, "predictions", host=True)
    named = [("predictions", predictions)]
    flags = (checks.check(predictions, "predictions", _DECISIONS),)
    if labels is not None:
        labels = coercion.as_real_array(labels, "labels", host=True)
        named.append(("labels", labels))
        flags = (*flags, checks.check_binary_labels(labels))
    weights = None
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
        named.append(("sample_weight", weights))
        flags = (*flags, checks.check_weights(weights))
    coercion.sample_axis_shapes(named)
    return predictions, labels, weights, flags


@jax.jit
def _selection(predictions: Array, weights: Array | None, flags: tuple[Array, ...]) -> Array:
    selected = predictions == 1
    if weights is None:
        value = safe_divide(selected.sum(axis=-1), predictions.shape[-1])
    else:
        shape = jnp.broadcast_shapes(predictions.shape, weights.shape)
        total = jnp.broadcast_to(weights, shape).sum(axis=-1)
        value = safe_divide(jnp.where(selected, weights, 0).sum(axis=-1), total)
    return _flagged(flags, value)


def selection_rate(predictions: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Array:
    r"""The share of the rows selected (predicted positive): the weighted mean of 0/1 decisions.

    Matches `fairlearn.metrics.selection_rate` (``pos_label=1``); with `by_group`, the
    selection rate of every group, MetricFrame's example. A zero total weight gives NaN.
    Decisions other than 0/1 (or bool) and bad weights raise `ValueError` eagerly and give NaN
    under `jax.jit`.

    .. math:: \mathrm{selection\ rate} = \frac{\sum_i w_i\, \hat y_i}{\sum_i w_i}

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 selected.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `predictions`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> float(jm.selection_rate([1, 0, 0, 1, 1, 0, 0, 0]))
      0.375
    """
    predictions, _, weights, flags = _decision_inputs(predictions, None, sample_weight)
    return _selection(predictions, weights, flags)


def _prediction_counts(predictions: Array, labels: Array, *, sample_weight: Array) -> Array:
    """``[*batch, 4]``: tp, fp, fn, tn of 0/1 decisions (positive iff >= 0.5)."""
    counts = confusion_counts(predictions, labels, 0.5, sample_weight=sample_weight)
    return jnp.stack(counts, axis=-1)


def _selection_gaps(predictions, groups, num_groups, sample_weight) -> tuple[Array, Array]:
    """(difference, ratio) of the selection rates between the groups."""
    num_groups = check_count(num_groups, "num_groups")
    predictions, _, weights, flags = _decision_inputs(predictions, None, sample_weight)
    checked = by_groups.group_inputs(selection_rate, (predictions,), groups, num_groups, weights)
    flags = (*flags, checked.invalid)
    return _selection_gap_program(
        checked.arrays, checked.groups, checked.weights, flags, num_groups=num_groups
    )


@functools.partial(kernels.jit, static_argnames="num_groups")
def _selection_gap_program(arrays, groups, weights, flags, *, num_groups):
    rates = by_groups.masked_values(selection_rate, arrays, groups, weights, num_groups=num_groups)
    return tuple(_flagged(flags, gap) for gap in by_groups.gaps(rates))


def _rate_gaps(predictions, labels, groups, num_groups, sample_weight, zero_division):
    """((TPR difference, TPR ratio), (FPR difference, FPR ratio)) between the groups."""
    num_groups = check_count(num_groups, "num_groups")
    zero_division = check_real(zero_division, "zero_division", traced=True)
    predictions, labels, weights, flags = _decision_inputs(predictions, labels, sample_weight)
    arrays = (predictions, labels)
    checked = by_groups.group_inputs(_prediction_counts, arrays, groups, num_groups, weights)
    flags = (*flags, checked.invalid)
    return _rate_gap_program(
        checked.arrays, checked.groups, checked.weights, flags, zero_division, num_groups=num_groups
    )


@functools.partial(kernels.jit, static_argnames="num_groups")
def _rate_gap_program(arrays, groups, weights, flags, zero_division, *, num_groups):
    values = by_groups.masked_values(
        _prediction_counts, arrays, groups, weights, num_groups=num_groups
    )
    counts = Counts(*jnp.moveaxis(values, -1, 0))  # each [G, *batch]
    rates = (recall(counts, zero_division=zero_division),)
    rates = (*rates, false_positive_rate(counts, zero_division=zero_division))
    return tuple(tuple(_flagged(flags, gap) for gap in by_groups.gaps(rate)) for rate in rates)


def demographic_parity_difference(
    predictions: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""The largest minus the smallest selection rate between groups (0: demographic parity).

    Matches `fairlearn.metrics.demographic_parity_difference` (which takes and ignores the
    labels), ``method="between_groups"``: `by_group` of `selection_rate` and its difference.
    Groups without rows (a zero total weight) are left out; bad input raises `ValueError`
    eagerly and gives NaN under `jax.jit` (docs/conventions.md).

    .. math:: \max_g \Pr(\hat Y = 1 \mid A = g) - \min_g \Pr(\hat Y = 1 \mid A = g)

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 selected.
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 1, 0, 1, 0, 0, 0]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> float(jm.demographic_parity_difference(predictions, groups=groups, num_groups=2))
      0.5

    References:
      Weerts et al. (2023), "Fairlearn: Assessing and Improving Fairness of AI Systems",
      Journal of Machine Learning Research 24(257):1-8.
    """
    return _selection_gaps(predictions, groups, num_groups, sample_weight)[0]


def demographic_parity_ratio(
    predictions: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""The smallest over the largest selection rate between groups (1: demographic parity).

    Matches `fairlearn.metrics.demographic_parity_ratio`, ``method="between_groups"``; 0 / 0
    (no group selects anyone) is NaN, as there. Groups without rows are left out; bad input as
    in `demographic_parity_difference`.

    .. math:: \min_g \Pr(\hat Y = 1 \mid A = g) \,/\, \max_g \Pr(\hat Y = 1 \mid A = g)

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 selected.
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 1, 0, 1, 0, 0, 0]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> float(jm.demographic_parity_ratio(predictions, groups=groups, num_groups=2))
      0.3333333432674408
    """
    return _selection_gaps(predictions, groups, num_groups, sample_weight)[1]


def equalized_odds_difference(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
    zero_division: float = math.nan,
) -> Array:
    r"""The larger of the true positive rate's and the false positive rate's gaps between groups.

    Matches `fairlearn.metrics.equalized_odds_difference` (``agg="worst_case"``,
    ``method="between_groups"``) with ``zero_division=0.0``; by default a group without
    positives (negatives) has no TPR (FPR) and is left out of that gap, where fairlearn counts
    its rate as 0. 0: equalized odds. NaN when a gap has no defined group, or on bad input
    under `jax.jit` (eagerly it raises, docs/conventions.md).

    .. math:: \max\Big(\max_g \mathrm{TPR}_g - \min_g \mathrm{TPR}_g,\
              \max_g \mathrm{FPR}_g - \min_g \mathrm{FPR}_g\Big)

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 predicted positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive).
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.
      zero_division: a group's rate where its denominator is 0; NaN (the default) leaves the
        group out of that rate's gap, 0.0 is fairlearn's value.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 0, 0, 1, 0, 1, 0]
      >>> labels = [1, 1, 1, 0, 1, 0, 0, 1]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> float(jm.equalized_odds_difference(predictions, labels, groups=groups, num_groups=2))
      0.5
    """
    tpr, fpr = _rate_gaps(predictions, labels, groups, num_groups, sample_weight, zero_division)
    return jnp.maximum(tpr[0], fpr[0])


def equalized_odds_ratio(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
    zero_division: float = math.nan,
) -> Array:
    r"""The smaller of the true positive rate's and the false positive rate's ratios between
    groups (smallest over largest; 1: equalized odds).

    Matches `fairlearn.metrics.equalized_odds_ratio` (``agg="worst_case"``,
    ``method="between_groups"``) with ``zero_division=0.0``; undefined rates and bad input as
    in `equalized_odds_difference`; a ratio 0 / 0 is NaN.

    .. math:: \min\Big(\frac{\min_g \mathrm{TPR}_g}{\max_g \mathrm{TPR}_g},\
              \frac{\min_g \mathrm{FPR}_g}{\max_g \mathrm{FPR}_g}\Big)

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 predicted positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive).
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.
      zero_division: a group's rate where its denominator is 0; NaN (the default) leaves the
        group out of that rate's gap, 0.0 is fairlearn's value.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 0, 0, 1, 0, 1, 0]
      >>> labels = [1, 1, 1, 0, 1, 0, 0, 1]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> float(jm.equalized_odds_ratio(predictions, labels, groups=groups, num_groups=2))
      0.0
    """
    tpr, fpr = _rate_gaps(predictions, labels, groups, num_groups, sample_weight, zero_division)
    return jnp.minimum(tpr[1], fpr[1])


def equal_opportunity_difference(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
    zero_division: float = math.nan,
) -> Array:
    r"""The largest minus the smallest true positive rate between groups (0: equal opportunity).

    Matches `fairlearn.metrics.equal_opportunity_difference` (``method="between_groups"``)
    with ``zero_division=0.0``; undefined rates and bad input as in
    `equalized_odds_difference`.

    .. math:: \max_g \mathrm{TPR}_g - \min_g \mathrm{TPR}_g

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 predicted positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive).
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.
      zero_division: a group's rate where its denominator is 0; NaN (the default) leaves the
        group out of that rate's gap, 0.0 is fairlearn's value.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 0, 0, 1, 0, 1, 0]
      >>> labels = [1, 1, 1, 0, 1, 0, 0, 1]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> round(float(jm.equal_opportunity_difference(
      ...     predictions, labels, groups=groups, num_groups=2)), 4)
      0.1667
    """
    tpr, _ = _rate_gaps(predictions, labels, groups, num_groups, sample_weight, zero_division)
    return tpr[0]


def equal_opportunity_ratio(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
    zero_division: float = math.nan,
) -> Array:
    r"""The smallest over the largest true positive rate between groups (1: equal opportunity).

    Matches `fairlearn.metrics.equal_opportunity_ratio` (``method="between_groups"``) with
    ``zero_division=0.0``; undefined rates and bad input as in `equalized_odds_difference`.

    .. math:: \min_g \mathrm{TPR}_g \,/\, \max_g \mathrm{TPR}_g

    Args:
      predictions: ``[*batch, n]`` 0/1 decisions (or bool), 1 predicted positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive).
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.
      zero_division: a group's rate where its denominator is 0; NaN (the default) leaves the
        group out of that rate's gap, 0.0 is fairlearn's value.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions = [1, 1, 0, 0, 1, 0, 1, 0]
      >>> labels = [1, 1, 1, 0, 1, 0, 0, 1]
      >>> groups = [0, 0, 0, 0, 1, 1, 1, 1]
      >>> round(float(jm.equal_opportunity_ratio(
      ...     predictions, labels, groups=groups, num_groups=2)), 4)
      0.75
    """
    tpr, _ = _rate_gaps(predictions, labels, groups, num_groups, sample_weight, zero_division)
    return tpr[1]
