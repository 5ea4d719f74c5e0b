"""ROC and precision-recall curves: every operating point of a ranking, in fixed-length arrays.

Read off the same engine as every ranking metric (`sorting.rank_and_tally`): one sort, tie groups
and prefix sums. Where scikit-learn returns a data-dependent number of points, these return
``n + 1`` points with the real ones first and a `valid` mask, so they jit and batch. The point of
the tie group ``[a, b)`` is "flag everything scoring >= its score": ``tp = P - positive[a]``,
``fp = N - negative[a]``; zero-weight samples never create a point.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp

from jaxmetrics._src.core import sorting, terms
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import forms, recipe


class RocCurve(NamedTuple):
    """ROC curve of fixed length n + 1, highest threshold first (what `roc_curve` returns).

    The real points come first, in scikit-learn's order, starting at (0, 0) with threshold
    ``+inf``; `valid` marks them, and the padding after them repeats the last real point, so
    plotting the whole arrays draws the same curve. ``fpr[valid]``, ``tpr[valid]`` and
    ``thresholds[valid]`` equal the three arrays of `sklearn.metrics.roc_curve`. The fixed
    length is what lets the curve be computed under `jax.jit` and batched with `jax.vmap`.

    Attributes:
      fpr: ``[*batch, n + 1]`` false positive rates FP / N of the rule ``score >= threshold``.
      tpr: ``[*batch, n + 1]`` true positive rates TP / P.
      thresholds: ``[*batch, n + 1]`` decreasing thresholds: ``+inf``, then the input's own
        distinct score values (a float64 numpy array for eager float64 input while x64 is off).
      valid: ``[*batch, n + 1]`` bool, True at the real points.
    """

    fpr: Array
    tpr: Array
    thresholds: Array
    valid: Array


class PrCurve(NamedTuple):
    """Precision-recall curve of fixed length n + 1, lowest threshold first.

    What `precision_recall_curve` returns. The real points come first, in scikit-learn's order,
    ending with its closing point (precision 1, recall 0, threshold ``+inf``); `valid` marks
    them, and the padding after them repeats the closing point. ``precision[valid]`` and
    ``recall[valid]`` equal the first two arrays of `sklearn.metrics.precision_recall_curve`,
    and ``thresholds[valid][:-1]`` its thresholds (scikit-learn gives the closing point none).

    Attributes:
      precision: ``[*batch, n + 1]`` precision TP / (TP + FP) of the rule
        ``score >= threshold`` (1 at the closing point).
      recall: ``[*batch, n + 1]`` recall TP / P.
      thresholds: ``[*batch, n + 1]`` increasing thresholds: the input's own distinct score
        values, then ``+inf`` (a float64 numpy array for eager float64 input while x64 is off).
      valid: ``[*batch, n + 1]`` bool, True at the real points.
    """

    precision: Array
    recall: Array
    thresholds: Array
    valid: Array


def _compact(keep: Array, *arrays: Array) -> tuple[Array, ...]:
    """Move the entries where `keep` is True to the front, in order; pad with the last kept one."""
    size = keep.shape[0]
    rank_of_kept = sorting.cumulative(keep.astype(jnp.int32))
    num_kept = rank_of_kept[-1]
    wanted = jnp.minimum(jnp.arange(1, size + 1, dtype=jnp.int32), jnp.maximum(num_kept, 1))
    source = jnp.clip(jnp.searchsorted(rank_of_kept, wanted, side="left"), 0, size - 1)
    valid = jnp.arange(size) < num_kept
    return (*(x[source] for x in arrays), valid)


def roc_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    drop_intermediate: bool = True,
) -> RocCurve:
    r"""ROC curve (fpr, tpr) over every distinct threshold, in fixed-length arrays.

    Matches `sklearn.metrics.roc_curve`: ``fpr[valid]``, ``tpr[valid]`` and
    ``thresholds[valid]`` are its three arrays, `drop_intermediate` included. The first point is
    (0, 0) at threshold ``+inf``; the later thresholds are the distinct scores, highest first.
    With no negatives (no positives) fpr (tpr) is NaN, as scikit-learn gives it with a warning.
    The arrays have the fixed length n + 1, so the curve can be jitted and batched; the real
    points come first (see `RocCurve`). Scores whose sample axis is split over D devices of a
    mesh give a curve split over the same devices, sorted where the samples are (O(n / D)
    memory per device) and n + D long: a split axis must divide evenly, so each device holds
    n / D + 1 points (docs/streaming-and-meshes.md).

    .. math:: \mathrm{FPR}(t) = \frac{FP(t)}{FP(t) + TN(t)}, \qquad
              \mathrm{TPR}(t) = \frac{TP(t)}{TP(t) + FN(t)}

    Tied scores move together, as one point. Under `jax.jit` bad input makes the float fields
    of its batch element NaN. Threshold rule, bad input, weights and precision:
    docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.
      drop_intermediate: drop the points collinear with their neighbours, which do not change
        the plotted curve (True, as scikit-learn's default).

    Returns:
      `RocCurve` whose fields have shape ``[*batch, n + 1]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> curve = jm.roc_curve(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> curve.fpr[curve.valid].tolist()
      [0.0, 0.0, 0.0, 0.25, 0.25, 0.5, 0.5, 1.0]
      >>> curve.tpr[curve.valid].tolist()
      [0.0, 0.25, 0.5, 0.5, 0.75, 0.75, 1.0, 1.0]

    References:
      Fawcett (2006), "An introduction to ROC analysis", Pattern Recognition Letters
      27:861-874.
    """
    curve, codec = recipe.sorted_metric(
        _ROC_CURVE,
        scores,
        labels,
        sample_weight,
        per_point=True,
        drop_intermediate=drop_intermediate,
    )
    return curve._replace(thresholds=codec.decode(curve.thresholds))


def _roc_curve_kernel(
    scores: Array, labels: Array, weights: Array | None, *, drop_intermediate: bool
) -> RocCurve:
    ranked, tallies, groups = sorting.rank_and_tally(scores, labels, weights)
    keep = groups.is_point
    if drop_intermediate:
        # the steps into and out of each point, as differences of the same cumulative counts
        interior, tp_below, fp_below = sorting.neighbours(ranked, tallies, groups)
        bends = terms.roc_bends(
            groups.tp - groups.tp_above,
            groups.fp - groups.fp_above,
            tp_below - groups.tp,
            fp_below - groups.fp,
        )
        keep = keep & (~interior | bends)
    # highest threshold first, after the (0, 0) point at +inf
    flip = lambda x: x[::-1]  # noqa: E731
    zero = jnp.zeros(1, groups.tp.dtype)
    fp, tp, thresholds, valid = _compact(
        jnp.concatenate([jnp.ones(1, bool), flip(keep)]),
        jnp.concatenate([zero, flip(groups.fp)]),
        jnp.concatenate([zero, flip(groups.tp)]),
        jnp.concatenate([jnp.full(1, jnp.inf, scores.dtype), flip(ranked.scores)]),
    )
    fpr, tpr = terms.roc_rates(tp, fp, groups.total_positive, groups.total_negative)
    return RocCurve(fpr, tpr, thresholds, valid)


def precision_recall_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    drop_intermediate: bool = False,
) -> PrCurve:
    r"""Precision-recall curve over every distinct threshold, in fixed-length arrays.

    Matches `sklearn.metrics.precision_recall_curve`: ``precision[valid]`` and
    ``recall[valid]`` are its first two arrays and ``thresholds[valid][:-1]`` its thresholds,
    `drop_intermediate` included; the points come in increasing threshold order, then the
    closing point (precision 1, recall 0, threshold ``+inf``). One deliberate difference: with
    no positives, recall is NaN (scikit-learn warns and sets it to 1). The arrays have the fixed
    length n + 1, so the curve can be jitted and batched; the real points come first (see
    `PrCurve`). Scores whose sample axis is split over D devices of a mesh give a curve split
    over the same devices, n + D long, as `roc_curve` does.

    .. math:: P(t) = \frac{TP(t)}{TP(t) + FP(t)}, \qquad R(t) = \frac{TP(t)}{TP(t) + FN(t)}

    Tied scores move together, as one point; precision with nothing predicted positive is 0, as
    in scikit-learn. Under `jax.jit` bad input makes the float fields of its batch element NaN.
    Threshold rule, bad input, weights and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.
      drop_intermediate: drop the points whose recall equals both neighbours', which do not
        change the plotted curve (False, as scikit-learn's default).

    Returns:
      `PrCurve` whose fields have shape ``[*batch, n + 1]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> curve = jm.precision_recall_curve(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> [round(x, 4) for x in curve.precision[curve.valid].tolist()]
      [0.5, 0.5714, 0.6667, 0.6, 0.75, 0.6667, 1.0, 1.0, 1.0]
      >>> curve.recall[curve.valid].tolist()
      [1.0, 1.0, 1.0, 0.75, 0.75, 0.5, 0.5, 0.25, 0.0]

    References:
      Davis & Goadrich (2006), "The relationship between precision-recall and ROC curves",
      Proc. ICML, 233-240.
    """
    curve, codec = recipe.sorted_metric(
        _PRECISION_RECALL_CURVE,
        scores,
        labels,
        sample_weight,
        per_point=True,
        drop_intermediate=drop_intermediate,
    )
    return curve._replace(thresholds=codec.decode(curve.thresholds))


def _precision_recall_curve_kernel(
    scores: Array, labels: Array, weights: Array | None, *, drop_intermediate: bool
) -> PrCurve:
    ranked, tallies, groups = sorting.rank_and_tally(scores, labels, weights)
    keep = groups.is_point
    if drop_intermediate:
        interior, tp_below, _ = sorting.neighbours(ranked, tallies, groups)
        changes = terms.pr_bends(groups.tp - groups.tp_above, tp_below - groups.tp)
        keep = keep & (~interior | changes)
    zero = jnp.zeros(1, groups.tp.dtype)
    tp, fp, thresholds, valid = _compact(
        jnp.concatenate([keep, jnp.ones(1, bool)]),
        jnp.concatenate([groups.tp, zero]),
        jnp.concatenate([groups.fp, zero]),
        jnp.concatenate([ranked.scores, jnp.full(1, jnp.inf, scores.dtype)]),
    )
    closing = thresholds == jnp.inf  # the closing point and its copies in the padding
    precision, recall = terms.pr_rates(tp, fp, groups.total_positive, closing)
    return PrCurve(precision, recall, thresholds, valid)


# Samples split over a mesh: the curves come from the distributed sample sort (`forms.py`),
# split over the same devices, n + D long (a split axis must divide evenly over the D devices)
def _on_mesh(kind: str, result: type, drop_intermediate: bool, scores, labels, weights, split):
    fields, fits = forms.sharded_curve(
        kind, scores, labels, weights, split, drop_intermediate=drop_intermediate
    )
    return result(*fields), fits


def _roc_curve_on_mesh(*, drop_intermediate: bool):
    return functools.partial(_on_mesh, "roc", RocCurve, drop_intermediate)


def _precision_recall_curve_on_mesh(*, drop_intermediate: bool):
    return functools.partial(_on_mesh, "pr", PrCurve, drop_intermediate)


_ROC_CURVE = recipe.Kernel(_roc_curve_kernel, mesh_form=_roc_curve_on_mesh)
_PRECISION_RECALL_CURVE = recipe.Kernel(
    _precision_recall_curve_kernel, mesh_form=_precision_recall_curve_on_mesh
)
