"""Exact, sort-based ranking metrics: ROC AUC, average precision, precision@k (the curves are in
`curves.py`).

All of them are read off the same engine (`sorting.rank` + `sorting.tally`): one sort of the
scores, then gathers and prefix sums over tie groups. In the 1-D kernels below, for the tie group
``[a, b)`` of ascending positions (`a = group_start`, `b = group_stop`), the operating point at the
group's score s is "flag everything scoring >= s":

    tp(s) = P - positive[a],   fp(s) = N - negative[a]

and the point just above it (threshold just over s) is ``P - positive[b]``, ``N - negative[b]``.
Zero-weight samples never create a point (as in scikit-learn, which drops them first).
"""

from __future__ import annotations

import functools

import jax.numpy as jnp

from jaxmetrics._src.core import options, sorting, terms
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike, MultilabelAverage
from jaxmetrics._src.mesh import forms, recipe
from jaxmetrics._src.metrics import multilabel


@recipe.order_only
def roc_auc(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    max_fpr: float | None = None,
    average: MultilabelAverage = None,
) -> Array:
    r"""Area under the ROC curve, exact (sort-based), a tied positive-negative pair counting 1/2.

    Matches `sklearn.metrics.roc_auc_score` for binary labels, `max_fpr` included (the
    McClish-standardised partial AUC over ``fpr <= max_fpr``). With one class present, or all
    the weight on one class, the AUC is undefined and NaN, as scikit-learn 1.9 returns it (with
    a warning; earlier versions raised). It is the Mann-Whitney U statistic over the number of
    pairs: the probability that a random positive outscores a random negative.

    .. math::

      \mathrm{AUC} = \frac{1}{W_+ W_-} \sum_{i:\, y_i = 1} \sum_{j:\, y_j = 0} w_i w_j
          \left([s_i > s_j] + \tfrac12 [s_i = s_j]\right), \qquad
      \mathrm{AUC}_m = \frac12 \left(1 + \frac{A_m - m^2 / 2}{m - m^2 / 2}\right)

    with W_+ and W_- the total weights of the two classes (their sizes without weights) and A_m
    the area under the curve up to ``fpr = m = max_fpr``, the segment that crosses m cut by
    linear interpolation.

    Tied scores move together along the curve (a diagonal segment), which is the 1/2 above.
    Bad input, ties, weights and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights (e.g. bootstrap counts),
        broadcasting against `scores`.
      max_fpr: optional float in (0, 1]: the standardised partial AUC up to this false positive
        rate (1 gives the full AUC); outside (0, 1] raises `ValueError`.
      average: multilabel scores ``[*batch, L, n]`` (label l's scores of the n samples on the
        last axis: scikit-learn's ``[n, L]`` transposed) averaged over the label axis, as
        scikit-learn's `average`: "macro", "weighted" (by each label's positive weight),
        "micro" (all pairs pooled), "samples" (each sample's labels ranked, then averaged
        over the samples; `sample_weight` one per sample), or None (default) for the batched
        result ``[*batch, L]``, where a label without positives or without negatives is NaN.
        To average the defined labels only: ``jnp.nanmean(jm.roc_auc(scores, labels), -1)``.

    Returns:
      A float array of shape ``[*batch]``; with `average` the label axis is averaged away.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> float(jm.roc_auc(scores, labels))  # 13 of the 16 positive-negative pairs ranked right
      0.8125
      >>> round(float(jm.roc_auc(scores, labels, max_fpr=0.5)), 4)
      0.75
      >>> two_labels = [labels, [0, 1, 0, 0, 1, 1, 0, 1]]  # [L = 2, n = 8]
      >>> float(jm.roc_auc([scores, scores], two_labels, average="macro"))  # (0.8125 + 0.3125) / 2
      0.5625

    References:
      Hanley & McNeil (1982), "The meaning and use of the area under a receiver operating
      characteristic (ROC) curve", Radiology 143:29-36. McClish (1989), "Analyzing a portion of
      the ROC curve", Medical Decision Making 9:190-195.
    """
    if max_fpr is not None:
        max_fpr = options.check_real(max_fpr, "max_fpr")
    if max_fpr is not None and not 0 < max_fpr <= 1:
        raise ValueError(f"`max_fpr` must be in (0, 1]; got {max_fpr}.")
    if max_fpr == 1:
        max_fpr = None
    if average is not None:
        return multilabel.over_labels(
            roc_auc, scores, labels, sample_weight, average, max_fpr=max_fpr
        )
    auc, _ = recipe.sorted_metric(_ROC_AUC, scores, labels, sample_weight, max_fpr=max_fpr)
    return auc


def _roc_auc_kernel(
    scores: Array, labels: Array, weights: Array | None, *, max_fpr: float | None
) -> Array:
    ranked, tallies, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = float_dtype()
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
        # the pair count (`terms.auc_wins`): each positive beats the negatives below its tie
        # group and half of those inside it; one prefix sum (negatives) per weight vector, the
        # bootstrap's case: each positive sample is its own entry, with its group's negatives
        negatives = tallies.negative
        below, through = negatives[ranked.group_start], negatives[ranked.group_stop]
        p, n = tallies.total_positive, tallies.total_negative
        scale = terms.auc_scale(n, dtype)
        wins = terms.auc_wins(tallies.positive_weights, below, through - below, scale, dtype)
        return terms.auc_of_wins(wins.sum(), p, n, scale, dtype)
    x0, x1, y0, y1 = terms.roc_segments(groups, dtype)
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
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    average: MultilabelAverage = None,
) -> Array:
    r"""Average precision: the step sum of precision over the recall gained, no interpolation.

    Matches `sklearn.metrics.average_precision_score` for binary labels, except where the
    ranking is undefined: with no positives the result is NaN (scikit-learn warns and returns
    0.0), and with no negatives also NaN (scikit-learn returns 1.0). Without ties it is the mean,
    over the positives, of the precision at each positive's rank.

    .. math:: \mathrm{AP} = \sum_k (R_k - R_{k-1})\, P_k

    over the distinct thresholds k, highest first, with P_k and R_k the precision and recall of
    the rule ``score >= threshold_k`` and R_0 = 0.

    Tied scores form one step, at the precision of the whole tie group, so the result never
    depends on the sample order. Bad input, ties, weights and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.
      average: multilabel scores ``[*batch, L, n]`` (scikit-learn's ``[n, L]`` transposed)
        averaged over the label axis: "macro", "weighted", "micro", "samples" or None, as in
        `roc_auc`. A label (or, with "samples", a sample) without positives or without
        negatives is NaN and so is any average over it (scikit-learn counts 0 or 1 there);
        ``jnp.nanmean(jm.average_precision(scores, labels), -1)`` skips them.

    Returns:
      A float array of shape ``[*batch]``; with `average` the label axis is averaged away.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> round(float(jm.average_precision(scores, labels)), 4)  # mean of 1, 1, 3/4, 4/6
      0.8542
      >>> two_labels = [labels, [0, 1, 0, 0, 1, 1, 0, 1]]  # [L = 2, n = 8]
      >>> jm.average_precision([scores, scores], two_labels).round(4)  # average=None
      Array([0.8542, 0.475 ], dtype=float32)

    References:
      Davis & Goadrich (2006), "The relationship between precision-recall and ROC curves",
      Proc. ICML, 233-240 (why the steps are not interpolated linearly).
    """
    if average is not None:
        return multilabel.over_labels(average_precision, scores, labels, sample_weight, average)
    ap, _ = recipe.sorted_metric(_AVERAGE_PRECISION, scores, labels, sample_weight)
    return ap


def _average_precision_kernel(scores: Array, labels: Array, weights: Array | None) -> Array:
    ranked, tallies, _ = sorting.rank_and_tally(scores, labels, weights)
    groups = terms.engine_groups(ranked, tallies)
    dtype = float_dtype()
    steps, imperfect = terms.ap_steps(groups, dtype)
    start = ranked.is_group_start
    return terms.ap_of_steps(
        jnp.where(start, steps, 0).sum(),
        jnp.any(start & imperfect),
        groups.total_positive,
        groups.total_negative,
        dtype,
    )


@recipe.order_only
def precision_at_k(
    scores: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Precision among the k highest-scoring samples (precision@k), ties at the k-th shared.

    scikit-learn has no equivalent (`sklearn.metrics.top_k_accuracy_score` asks whether each
    sample's true class is among its k best-scored classes, a different question). Without a tie
    at the k-th score it is the share of positives among the top k.

    .. math:: \mathrm{P@}k = \frac{1}{k}\left(TP_{>s} + (k - n_{>s})\,
              \frac{TP_{=s}}{n_{=s}}\right)

    with s the k-th highest score, TP_{>s} and n_{>s} the positives and the samples scoring
    above s, and TP_{=s} and n_{=s} those scoring exactly s (weights summed when given).

    When the k-th highest score is shared by samples inside and outside the top k, the tied
    group contributes its share of positives to the places left, which is the expected precision
    when the tie is broken at random, so the result never depends on the sample order. With
    weights, k counts weight; if the total weight is below k, the precision is over all samples;
    with no weight at all, or no positive (a query without a relevant item), it is NaN. Bad
    input, ties and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      k: the number of top places, a positive Python int (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> float(jm.precision_at_k(scores, [1, 1, 0, 1, 0, 1, 0, 0], k=4))  # 3 of the top 4
      0.75
      >>> # the 2nd place goes to one of three tied samples, one of them positive: (1 + 1/3) / 2
      >>> round(float(jm.precision_at_k([0.9, 0.5, 0.5, 0.5, 0.1], [1, 1, 0, 0, 1], k=2)), 4)
      0.6667

    References:
      McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    k = options.check_count(k, "k")
    value, _ = recipe.sorted_metric(_precision_at_k_kernel, scores, labels, sample_weight, k=k)
    return value


def _precision_at_k_kernel(scores: Array, labels: Array, weights: Array | None, *, k: int) -> Array:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = float_dtype()
    taken_above = (groups.tp_above + groups.fp_above).astype(dtype)
    taken_here = (groups.tp + groups.fp).astype(dtype)
    total = (groups.total_positive + groups.total_negative).astype(dtype)
    budget = jnp.minimum(jnp.asarray(k, dtype), total)
    crossing = ranked.is_group_start & (taken_above < budget) & (budget <= taken_here)
    share = safe_divide(groups.tp - groups.tp_above, taken_here - taken_above, 0.0)
    hits = groups.tp_above.astype(dtype) + (budget - taken_above) * share
    value = safe_divide(jnp.where(crossing, hits, 0).sum(), budget, jnp.nan)
    # a query without a relevant item has nothing to retrieve: undefined, as in every retrieval
    # metric of the library (never a 0 that would pull a mean over queries down)
    return jnp.where(groups.total_positive > 0, value, jnp.nan)


# Samples split over a mesh: the distributed sample sort (`forms.py`) computes the AUC (without
# `max_fpr`) and the AP where the samples are.
def _roc_auc_on_mesh(*, max_fpr: float | None):
    if max_fpr is not None:
        return None
    return functools.partial(forms.sharded_metric, forms.auc_over_axes)


def _average_precision_on_mesh():
    return functools.partial(forms.sharded_metric, forms.ap_over_axes)


_ROC_AUC = recipe.Kernel(_roc_auc_kernel, mesh_form=_roc_auc_on_mesh)
_AVERAGE_PRECISION = recipe.Kernel(_average_precision_kernel, mesh_form=_average_precision_on_mesh)
