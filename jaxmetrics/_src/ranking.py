"""Exact, sort-based ranking metrics: ROC/PR curves, ROC AUC, average precision, precision@k.

All of them are read off the same engine (`sorting.rank` + `sorting.tally`): one sort of the
scores, then gathers and prefix sums over tie groups. In the 1-D kernels below, for the tie group
``[a, b)`` of ascending positions (`a = group_start`, `b = group_stop`), the operating point at the
group's score s is "flag everything scoring >= s":

    tp(s) = P - positive[a],   fp(s) = N - negative[a]

and the point just above it (threshold just over s) is ``P - positive[b]``, ``N - negative[b]``.
Zero-weight samples never create a point (as in scikit-learn, which drops them first).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp

from jaxmetrics._src import recipe, sorting, validation
from jaxmetrics._src.counts import safe_divide
from jaxmetrics._src.typing import Array, ArrayLike


class RocCurve(NamedTuple):
    """ROC curve of fixed length n + 1, highest threshold first.

    The real points come first, in scikit-learn's order; ``valid`` marks them and the padding
    after them repeats the last real point (so plotting the whole arrays draws the same curve).
    ``fpr[valid]``, ``tpr[valid]``, ``thresholds[valid]`` equal `sklearn.metrics.roc_curve`.
    """

    fpr: Array
    tpr: Array
    thresholds: Array
    valid: Array


class PrCurve(NamedTuple):
    """Precision-recall curve of fixed length n + 1, lowest threshold first.

    The real points come first, ending with scikit-learn's closing point (precision 1, recall 0,
    threshold +inf); ``valid`` marks them and the padding repeats the closing point.
    ``precision[valid]`` and ``recall[valid]`` equal `sklearn.metrics.precision_recall_curve`;
    ``thresholds[valid][:-1]`` equals its thresholds (sklearn has no threshold for the last point).
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


def _auc_terms(groups: sorting.Groups, dtype) -> tuple[Array, Array, Array, Array]:
    """Each group's ROC segment from the point above it to its own point, in rates."""
    p = groups.total_positive.astype(dtype)
    n = groups.total_negative.astype(dtype)
    x0, x1 = groups.fp_above.astype(dtype) / n, groups.fp.astype(dtype) / n
    y0, y1 = groups.tp_above.astype(dtype) / p, groups.tp.astype(dtype) / p
    return x0, x1, y0, y1


@recipe.order_only
def roc_auc(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
) -> Array:
    r"""Area under the ROC curve, exact (sort-based), with ties counting one half.

    Matches `sklearn.metrics.roc_auc_score` (binary), including `max_fpr`, the McClish-standardised
    partial AUC ``0.5 * (1 + (A - m^2/2) / (m - m^2/2))`` over ``fpr <= m``.

    .. math:: \mathrm{AUC} = \frac{1}{n_+ n_-}\sum_{i \in P}\sum_{j \in N}
              \big([s_i > s_j] + \tfrac12 [s_i = s_j]\big)

    (weighted: each pair counts ``w_i w_j``). Conventions: one sort per score vector; tied scores
    move together along the curve (a diagonal segment); with one class present (or all weight on
    one class) the AUC is undefined and NaN (sklearn raises); NaN scores raise (NaN under jit).

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` 0/1 labels, broadcasting against `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights (e.g. bootstrap counts).
      max_fpr: optional float in (0, 1]: standardised partial AUC up to this false positive rate.

    Returns:
      ``[*batch]`` AUC values.

    >>> import jaxmetrics as jm
    >>> float(jm.roc_auc([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], [1, 1, 0, 1, 0, 1, 0, 0]))
    0.8125

    References:
      Hanley & McNeil (1982), Radiology 143:29-36; McClish (1989), Med. Decis. Making 9:190-195.
    """
    if max_fpr is not None and not 0 < max_fpr <= 1:
        raise ValueError(f"`max_fpr` must be in (0, 1]; got {max_fpr}.")
    if max_fpr == 1:
        max_fpr = None
    auc, _ = recipe.sorted_metric(_roc_auc_kernel, scores, labels, sample_weight, max_fpr=max_fpr)
    return auc


def _roc_auc_kernel(
    scores: Array, labels: Array, weights: Array | None, *, max_fpr: float | None
) -> Array:
    ranked, tallies, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = validation.float_dtype()
    if max_fpr is None and weights is None:
        # Mann-Whitney from midranks: with unit weights the midrank of position i is
        # (a + b + 1) / 2 for its tie group [a, b), so U = (sum over positives of (a + b) - P^2) / 2
        # needs no prefix sum at all, only the sort (measured: AUC at 10^6 costs the sort alone)
        positive = tallies.positive_weights == 1
        p = tallies.total_positive.astype(dtype)
        n = (tallies.positive_weights.shape[0] - tallies.total_positive).astype(dtype)
        ends = (ranked.group_start + ranked.group_stop).astype(dtype)
        return (jnp.where(positive, ends, 0).sum() - p * p) / (2 * p * n)
    if max_fpr is None:
        # the pair count: each positive beats the negatives below its tie group and half of
        # those inside it; one prefix sum (negatives) per weight vector, the bootstrap's case.
        # Each factor is a share (divided before multiplying), so huge weights cannot overflow.
        negatives = tallies.negative.astype(dtype)
        p, n = tallies.total_positive.astype(dtype), tallies.total_negative.astype(dtype)
        beaten = (negatives[ranked.group_start] + negatives[ranked.group_stop]) / (2 * n)
        return (tallies.positive_weights.astype(dtype) / p * beaten).sum()
    x0, x1, y0, y1 = _auc_terms(groups, dtype)
    start = ranked.is_group_start
    # clip each segment at fpr = max_fpr, interpolating linearly along it (as sklearn does)
    right = jnp.minimum(x1, max_fpr)
    width = jnp.maximum(right - x0, 0)
    slope = safe_divide(y1 - y0, x1 - x0, 0.0)
    y_right = y0 + slope * width
    partial = jnp.where(start, width * (y0 + y_right), 0).sum() / 2
    smallest = max_fpr**2 / 2
    return 0.5 * (1 + (partial - smallest) / (max_fpr - smallest))


@recipe.order_only
def average_precision(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Average precision, the step sum over the precision-recall curve (no interpolation).

    Matches `sklearn.metrics.average_precision_score` (binary), except that with no positives the
    result is NaN (sklearn returns 0 with a warning) and with no negatives also NaN (undefined
    ranking; sklearn returns 1).

    .. math:: \mathrm{AP} = \sum_k (R_k - R_{k-1})\, P_k

    over the distinct thresholds k, highest first; tied scores form one step.

    >>> import jaxmetrics as jm
    >>> round(float(jm.average_precision([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1],
    ...                                  [1, 1, 0, 1, 0, 1, 0, 0])), 4)
    0.8542
    """
    ap, _ = recipe.sorted_metric(_average_precision_kernel, scores, labels, sample_weight)
    return ap


def _average_precision_kernel(scores: Array, labels: Array, weights: Array | None) -> Array:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = validation.float_dtype()
    positives_in_group = (groups.tp - groups.tp_above).astype(dtype)
    precision_at_group = safe_divide(groups.tp, groups.tp + groups.fp, 0.0)
    recall_steps = positives_in_group / groups.total_positive.astype(dtype)
    steps = jnp.where(ranked.is_group_start, recall_steps * precision_at_group, 0)
    one_class = (groups.total_positive == 0) | (groups.total_negative == 0)
    return jnp.where(one_class, jnp.nan, steps.sum())


def roc_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    drop_intermediate: bool = True,
) -> RocCurve:
    """ROC curve (fpr, tpr) over every distinct threshold, in a fixed-length array.

    Matches `sklearn.metrics.roc_curve`: same points (``drop_intermediate`` drops the points
    collinear with their neighbours, as sklearn's default does), the first point is (0, 0) at
    threshold +inf, later thresholds are the distinct scores, highest first. With no negatives
    (positives), fpr (tpr) is NaN, as in sklearn.

    Returns:
      `RocCurve` whose fields have shape ``[*batch, n + 1]``; see its docstring for the layout.
    """
    curve, codec = recipe.sorted_metric(
        _roc_curve_kernel,
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
        interior, tp_below, fp_below = sorting.neighbours(ranked, tallies, groups)
        bends = (tp_below - 2 * groups.tp + groups.tp_above != 0) | (
            fp_below - 2 * groups.fp + groups.fp_above != 0
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
    fpr = safe_divide(fp, groups.total_negative, jnp.nan)
    tpr = safe_divide(tp, groups.total_positive, jnp.nan)
    return RocCurve(fpr, tpr, thresholds, valid)


def precision_recall_curve(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    drop_intermediate: bool = False,
) -> PrCurve:
    """Precision-recall curve over every distinct threshold, in a fixed-length array.

    Matches `sklearn.metrics.precision_recall_curve` (points in increasing threshold order, then
    precision 1 at recall 0), with one deliberate difference: with no positives, recall is NaN
    (sklearn sets it to 1). Precision with no predicted positive is 0, as in sklearn.

    Returns:
      `PrCurve` whose fields have shape ``[*batch, n + 1]``; see its docstring for the layout.
    """
    curve, codec = recipe.sorted_metric(
        _precision_recall_curve_kernel,
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
        changes = (tp_below != groups.tp) | (groups.tp_above != groups.tp)
        keep = keep & (~interior | changes)
    zero = jnp.zeros(1, groups.tp.dtype)
    tp, fp, thresholds, valid = _compact(
        jnp.concatenate([keep, jnp.ones(1, bool)]),
        jnp.concatenate([groups.tp, zero]),
        jnp.concatenate([groups.fp, zero]),
        jnp.concatenate([ranked.scores, jnp.full(1, jnp.inf, scores.dtype)]),
    )
    closing = valid & (thresholds == jnp.inf)
    precision = jnp.where(closing, 1.0, safe_divide(tp, tp + fp, 0.0))
    recall = safe_divide(tp, groups.total_positive, jnp.nan)
    return PrCurve(precision, recall, thresholds, valid)


@recipe.order_only
def precision_at_k(
    scores: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    """Precision among the k highest-scoring samples.

    Tie rule at k: when the k-th highest score is shared by samples inside and outside the top k,
    the tied group contributes its positive share to the open places, i.e. the expected
    precision when the tie is broken at random; the result never depends on the sample order.
    With weights, k counts weight (an integer weight w is w copies of the sample); if the total
    weight is below k, the precision is over all samples. No sklearn equivalent.

    Args:
      k: a positive Python int (static).

    Returns:
      ``[*batch]`` values.
    """
    k = validation.check_count(k, "k")
    value, _ = recipe.sorted_metric(_precision_at_k_kernel, scores, labels, sample_weight, k=k)
    return value


def _precision_at_k_kernel(scores: Array, labels: Array, weights: Array | None, *, k: int) -> Array:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = validation.float_dtype()
    taken_above = (groups.tp_above + groups.fp_above).astype(dtype)
    taken_here = (groups.tp + groups.fp).astype(dtype)
    total = (groups.total_positive + groups.total_negative).astype(dtype)
    budget = jnp.minimum(jnp.asarray(k, dtype), total)
    crossing = ranked.is_group_start & (taken_above < budget) & (budget <= taken_here)
    share = safe_divide(groups.tp - groups.tp_above, taken_here - taken_above, 0.0)
    hits = groups.tp_above.astype(dtype) + (budget - taken_above) * share
    return safe_divide(jnp.where(crossing, hits, 0).sum(), budget, jnp.nan)
