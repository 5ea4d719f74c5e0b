"""The terms of the ranking metrics: one copy of each rule, for every path that ranks scores.

A ranking metric is read off its tie groups. For each distinct score s (one tie group):

* ``positive``, ``negative``: the weight of each class scoring exactly s;
* ``positive_below``, ``negative_below``: the weight of each class scoring strictly below s;
* ``total_positive``, ``total_negative``: the class totals P and N.

The operating point at s is "flag everything scoring >= s": ``tp = P - positive_below``,
``fp = N - negative_below``. Two paths produce the groups and both call the functions below:

* one device: the engine's sort (`sorting.rank_and_tally`), where the group ``[a, b)`` of
  ascending positions holds ``positive[b] - positive[a]`` (`engine_groups`, one row per
  position, meaningful at group starts);
* a mesh: the distributed sample sort (`mesh.sample_sort`), whose merged entries are the groups
  of one device's range of scores, the weight below them coming from a scan over the devices.

So each rule lives once: a tie counts one half, a separated set scores exactly 1 (AUC and AP),
huge weights (1e20) cannot overflow float32 (every term is scaled or divided to at most 1 before
it is multiplied or summed), and the curves keep the same points. The sums of terms are the
caller's (a plain sum on one device, a ``psum`` over a mesh), then a finishing function gives
the value.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax.numpy as jnp

from jaxmetrics._src.core import sorting
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.typing import Array


class TieGroups(NamedTuple):
    """Per distinct score s, the weight of each class at s and strictly below it, and in all."""

    positive: Array  # weight of the positives scoring exactly s
    negative: Array  # weight of the negatives scoring exactly s
    positive_below: Array  # weight of the positives scoring < s
    negative_below: Array  # weight of the negatives scoring < s
    total_positive: Array  # P, a scalar
    total_negative: Array  # N, a scalar

    @property
    def tp(self) -> Array:
        """The weight of positives flagged by ``score >= s``."""
        return self.total_positive - self.positive_below

    @property
    def fp(self) -> Array:
        """The weight of negatives flagged by ``score >= s``."""
        return self.total_negative - self.negative_below


def engine_groups(ranked: sorting.Ranked, tallies: sorting.Tallies) -> TieGroups:
    """The tie groups of one device's sort, one row per ascending position i, meaningful where
    i starts its group (there ``i == a``, so the prefix sums at a need no gather)."""
    b = ranked.group_stop
    positive, negative = tallies.positive, tallies.negative
    return TieGroups(
        positive=positive[b] - positive[:-1],
        negative=negative[b] - negative[:-1],
        positive_below=positive[:-1],
        negative_below=negative[:-1],
        total_positive=positive[-1],
        total_negative=negative[-1],
    )


# ------------------------------------------------------------------------------ ROC AUC
def auc_scale(total_negative: Array, dtype: Any) -> Array:
    """The power of two that puts ``2 N`` in [1/2, 1): twice the negatives a positive beats,
    scaled by it, is at most 1 and exact, so no product of terms can overflow."""
    _, exponent = jnp.frexp(2 * jnp.asarray(total_negative, dtype))
    return jnp.ldexp(jnp.ones((), dtype), -exponent)


def auc_wins(
    positive: Array, negative_below: Array, negative: Array, scale: Array, dtype: Any
) -> Array:
    """Per entry: the weight of its positives times twice the negatives they beat (those below,
    and half those tied with them, so twice: ``2 below + tied``), scaled by `auc_scale`.

    Linear in `positive`: an entry may be a whole tie group, or one positive sample of it with
    its group's negatives (the single-device kernel, which then needs no prefix sum of the
    positives); the sum is the same. Sum the wins (over devices too), then `auc_of_wins`.
    """
    below, tied = jnp.asarray(negative_below, dtype), jnp.asarray(negative, dtype)
    return jnp.asarray(positive, dtype) * ((2 * below + tied) * scale)


def auc_of_wins(
    wins: Array, total_positive: Array, total_negative: Array, scale: Array, dtype: Any
) -> Array:
    """The AUC from the sum of `auc_wins`: one division, rounded once (a share divided by N per
    term is not exact: XLA divides by a broadcast total through its reciprocal, and N / N came
    out 0.99999994), so a separated set is exactly 1 and a reversed one exactly 0. NaN without
    positives or without negatives."""
    p, n = jnp.asarray(total_positive, dtype), jnp.asarray(total_negative, dtype)
    # float weights: the sum of the positives' weights may exceed P by an ulp
    auc = jnp.minimum(wins / (p * (2 * n * scale)), 1)
    return jnp.where((p > 0) & (n > 0), auc, jnp.asarray(jnp.nan, dtype))


# ------------------------------------------------------------------------------ average precision
def roc_segments(groups: sorting.Groups, dtype: Any) -> tuple[Array, Array, Array, Array]:
    """Each tie group's ROC segment (fpr, tpr) from the point above it to its own point, for the
    partial areas (`max_fpr`, `partial_roc_auc`), which cut segments: one device only."""
    p = groups.total_positive.astype(dtype)
    n = groups.total_negative.astype(dtype)
    x0, x1 = groups.fp_above.astype(dtype) / n, groups.fp.astype(dtype) / n
    y0, y1 = groups.tp_above.astype(dtype) / p, groups.tp.astype(dtype) / p
    return x0, x1, y0, y1


def precision(tp: Array, fp: Array) -> Array:
    """TP / (TP + FP), 0 where nothing is flagged (scikit-learn's convention)."""
    return safe_divide(tp, tp + fp, 0.0)


def ap_steps(groups: TieGroups, dtype: Any) -> tuple[Array, Array]:
    """Per group: its step of average precision (the recall it gains, divided before it is
    multiplied by the precision of the whole group) and whether it breaks a perfect ranking (it
    holds a positive at a precision below 1). Sum the steps and `any` the second (over devices
    too), then `ap_of_steps`."""
    precision_here = precision(groups.tp, groups.fp)
    positive = jnp.asarray(groups.positive, dtype)
    steps = positive / jnp.asarray(groups.total_positive, dtype) * precision_here
    return steps, (positive != 0) & (precision_here != 1)


def ap_of_steps(
    steps: Array, any_imperfect: Array, total_positive: Array, total_negative: Array, dtype: Any
) -> Array:
    """Average precision from the sum of `ap_steps` and whether any group was imperfect. P steps
    of 1/P do not sum to 1 in floats: a perfect ranking (every group holding a positive at
    precision 1) is 1 exactly. NaN without positives or without negatives (scikit-learn gives 0
    and 1 there)."""
    ap = jnp.where(any_imperfect, jnp.minimum(steps, 1), 1).astype(dtype)
    one_class = (total_positive == 0) | (total_negative == 0)
    return jnp.where(one_class, jnp.asarray(jnp.nan, dtype), ap)


# ------------------------------------------------------------------------------ DeLong
def placement_values(groups: TieGroups, dtype: Any) -> tuple[Array, Array]:
    """DeLong's placement values of the samples of each group (Sun & Xu 2014).

    For a positive scoring s, ``V10 = (negatives below s + half those at s) / N``; for a
    negative, ``V01 = (positives above s + half those at s) / P``. Returns (V10, V01) per group;
    a sample takes its group's value of its class.
    """
    p = jnp.asarray(groups.total_positive, dtype)
    n = jnp.asarray(groups.total_negative, dtype)
    positive, negative = jnp.asarray(groups.positive, dtype), jnp.asarray(groups.negative, dtype)
    positive_above = p - jnp.asarray(groups.positive_below, dtype) - positive
    v10 = (jnp.asarray(groups.negative_below, dtype) + negative / 2) / n
    v01 = (positive_above + positive / 2) / p
    return v10, v01


# ------------------------------------------------------------------------------ curves
def roc_bends(
    positive: Array, negative: Array, positive_next: Array, negative_next: Array
) -> Array:
    """Whether the ROC curve bends at a group's point: the step into it from the point above
    (the group's own weights) differs from the step out of it to the next point below (the
    weights of the next group below holding weight). `drop_intermediate` keeps the bends and
    the two ends, as scikit-learn's second differences of the cumulative counts do."""
    return (positive_next != positive) | (negative_next != negative)


def pr_bends(positive: Array, positive_next: Array) -> Array:
    """Whether recall changes on one side of a group's point of the precision-recall curve (a
    positive in the group, or in the next group below holding weight): `drop_intermediate`
    keeps these and the two ends."""
    return (positive_next != 0) | (positive != 0)


def roc_rates(tp: Array, fp: Array, total_positive: Array, total_negative: Array):
    """(fpr, tpr) of operating points: NaN without negatives (fpr) or positives (tpr)."""
    return safe_divide(fp, total_negative, jnp.nan), safe_divide(tp, total_positive, jnp.nan)


def pr_rates(tp: Array, fp: Array, total_positive: Array, closing: Array):
    """(precision, recall) of operating points; the closing point (threshold +inf) has
    precision 1, as in scikit-learn; recall is NaN without positives."""
    return (
        jnp.where(closing, 1.0, precision(tp, fp)),
        safe_divide(tp, total_positive, jnp.nan),
    )
