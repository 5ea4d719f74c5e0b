"""Label ranking: LRAP, coverage error and ranking loss of ``[*batch, n, L]`` multilabel scores.

Each sample ranks its own L labels, so the ranked axis is the last one and every sample is one
call of a 1-D kernel of the engine (`sorting.rank_and_tally` over the L labels, lifted over
``[*batch, n]`` by `recipe.sorted_metric`): one sort per sample, no loop. The results are per
sample, ``[*batch, n]``; scikit-learn returns their (weighted) mean, which `query_mean` gives.

In the kernels, for the label at ascending position i and its tie group ``[a, b)``, the labels
"ranked at or above it" are those scoring >= its score (ties count as ranked above, scikit-learn's
rule): ``relevant_at_or_above = P - positive[a]``, ``irrelevant_at_or_above = N - negative[a]``.
`sample_weight` is an entry mask: a label of weight 0 is in no count, exactly as if its column
were dropped from that sample (which is also how the eager bucket padding stays invisible).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, sorting
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe


class _AtOrAbove(NamedTuple):
    """Per ascending position i of one sample's labels (all 1-D of length L, or scalars)."""

    relevant: Array  # weight of position i if it holds a relevant label, else 0
    relevant_at_or_above: Array  # relevant labels scoring >= the score at position i
    irrelevant_at_or_above: Array  # irrelevant labels scoring >= the score at position i
    num_relevant: Array
    num_irrelevant: Array


def _at_or_above(scores: Array, labels: Array, weights: Array | None) -> _AtOrAbove:
    ranked, tallies, groups = sorting.rank_and_tally(scores, labels, weights)
    # `groups.tp[a]` counts the relevant labels scoring >= the score of the group starting at a
    start = ranked.group_start
    return _AtOrAbove(
        tallies.positive_weights,
        groups.tp[start],
        groups.fp[start],
        groups.total_positive,
        groups.total_negative,
    )


def _label_ranking_average_precision_kernel(
    scores: Array, labels: Array, weights: Array | None
) -> Array:
    counts = _at_or_above(scores, labels, weights)
    dtype = float_dtype()
    above = counts.relevant_at_or_above.astype(dtype)
    # at a relevant label the denominator counts the label itself, so it is never 0 where used
    precision = safe_divide(above, above + counts.irrelevant_at_or_above.astype(dtype), 0.0)
    total = (counts.relevant.astype(dtype) * precision).sum()
    return safe_divide(total, counts.num_relevant.astype(dtype))


def _coverage_error_kernel(scores: Array, labels: Array, weights: Array | None) -> Array:
    counts = _at_or_above(scores, labels, weights)
    ranked_down_to = counts.relevant_at_or_above + counts.irrelevant_at_or_above
    # the lowest-scored relevant label has the most labels at or above it; none relevant: 0
    deepest = jnp.where(counts.relevant > 0, ranked_down_to, 0).max()
    return deepest.astype(float_dtype())


def _label_ranking_loss_kernel(scores: Array, labels: Array, weights: Array | None) -> Array:
    counts = _at_or_above(scores, labels, weights)
    dtype = float_dtype()
    # in float before multiplying: pair counts overflow int32 from about 2^16 labels
    misordered = (counts.relevant.astype(dtype) * counts.irrelevant_at_or_above.astype(dtype)).sum()
    pairs = counts.num_relevant.astype(dtype) * counts.num_irrelevant.astype(dtype)
    return safe_divide(misordered, pairs)


_ENTRY_MASK = checks.Rule(
    checks.not_zero_or_one, "be 0 or 1 (an entry mask: 0 leaves the label out)"
)


def _label_metric(
    kernel: Callable[..., Array],
    scores: ArrayLike,
    labels: ArrayLike,
    sample_weight: ArrayLike | None,
) -> Array:
    """Check the layout and the entry mask, then run `kernel` over every sample's labels."""
    if np.ndim(scores) < 2:
        raise ValueError(
            "`scores` must have shape [*batch, n, L] (n samples, each ranking its L labels); "
            f"got shape {tuple(np.shape(scores))}."
        )
    invalid_mask = np.zeros((), bool)
    if sample_weight is not None:
        sample_weight = coercion.as_real_array(sample_weight, "sample_weight", host=True)
        invalid_mask = checks.check(sample_weight, "sample_weight", _ENTRY_MASK)
        # checked to be 0/1 (or marked): as int32 the counts are exact, and a masked eager call
        # runs the program of an unmasked one (whose unit weights are int32)
        sample_weight = sample_weight.astype(np.int32)
    value, _ = recipe.sorted_metric(kernel, scores, labels, sample_weight)
    # the mask's batch axes may be fewer than the scores' (one mask for every batch element)
    xp = checks.array_namespace(invalid_mask)
    return batching.nan_where(xp.broadcast_to(invalid_mask, value.shape), value)


def label_ranking_average_precision(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Label ranking average precision (LRAP) of each sample: how high its relevant labels rank.

    Matches `sklearn.metrics.label_ranking_average_precision_score` per sample (scikit-learn
    returns the mean over samples; `query_mean` gives it, with per-sample weights), except that
    a sample without relevant labels is NaN, where scikit-learn counts it as 1. For each
    relevant label, the share of relevant labels among those ranked at or above it, averaged:

    .. math::

      \mathrm{LRAP}_i = \frac{1}{|Y_i|} \sum_{j \in Y_i}
          \frac{|\{k \in Y_i : s_{ik} \ge s_{ij}\}|}{|\{k : s_{ik} \ge s_{ij}\}|}

    with Y_i the relevant labels of sample i and s_i its label scores.

    Labels tied with label j count as ranked above it (scikit-learn's rule), so a tie costs
    precision; a sample whose labels are all relevant has LRAP 1. Bad input and precision:
    docs/conventions.md.

    Args:
      scores: ``[*batch, n, L]`` label scores of n samples, larger meaning more relevant; each
        sample ranks its own L labels (the last axis).
      labels: ``[*batch, n, L]`` relevance in {0, 1} or bool, broadcasting against `scores`.
      sample_weight: optional ``[*batch, n, L]`` entry mask of 0 and 1, broadcasting against
        `scores` (the last axis must be L): 0 leaves that label out of that sample.

    Returns:
      A float array of shape ``[*batch, n]``, one value per sample.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> scores = [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1]]
      >>> labels = [[1, 0, 0], [0, 0, 1]]
      >>> # the relevant label ranks 2nd of 3, then 3rd of 3: scikit-learn's mean is 0.416
      >>> lrap = jm.label_ranking_average_precision(scores, labels)
      >>> [round(value, 4) for value in np.asarray(lrap).tolist()]
      [0.5, 0.3333]

    References:
      Tsoumakas, Katakis & Vlahavas (2010), "Mining multi-label data", in Data Mining and
      Knowledge Discovery Handbook, 667-685. Madjarov et al. (2012), "An extensive experimental
      comparison of methods for multi-label learning", Pattern Recognition 45:3084-3104.
    """
    return _label_metric(_label_ranking_average_precision_kernel, scores, labels, sample_weight)


def coverage_error(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Coverage error of each sample: how far down its ranking all relevant labels are covered.

    Matches `sklearn.metrics.coverage_error` per sample (scikit-learn returns the mean over
    samples; `query_mean` gives it, with per-sample weights). The number of labels scored at
    least as high as the lowest-scored relevant label; the best value is the number of
    relevant labels.

    .. math:: \mathrm{coverage}_i = \big|\{k : s_{ik} \ge \min_{j \in Y_i} s_{ij}\}\big|

    with Y_i the relevant labels of sample i and s_i its label scores.

    Labels tied with the lowest relevant label are all counted (scikit-learn's rule). A sample
    without relevant labels needs no label to be covered: its coverage is 0, as in
    scikit-learn. Bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n, L]`` label scores of n samples, larger meaning more relevant; each
        sample ranks its own L labels (the last axis).
      labels: ``[*batch, n, L]`` relevance in {0, 1} or bool, broadcasting against `scores`.
      sample_weight: optional ``[*batch, n, L]`` entry mask of 0 and 1, broadcasting against
        `scores` (the last axis must be L): 0 leaves that label out of that sample.

    Returns:
      A float array of shape ``[*batch, n]``, one count per sample.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> scores = [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1], [0.3, 0.9, 0.3]]
      >>> labels = [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
      >>> np.asarray(jm.coverage_error(scores, labels)).tolist()
      [2.0, 3.0, 0.0]

    References:
      Tsoumakas, Katakis & Vlahavas (2010), "Mining multi-label data", in Data Mining and
      Knowledge Discovery Handbook, 667-685.
    """
    return _label_metric(_coverage_error_kernel, scores, labels, sample_weight)


def label_ranking_loss(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Ranking loss of each sample: the share of (relevant, irrelevant) label pairs misordered.

    Matches `sklearn.metrics.label_ranking_loss` per sample (scikit-learn returns the mean over
    samples; `query_mean` gives it, with per-sample weights), except that a sample without
    pairs (no relevant or no irrelevant label) is NaN, where scikit-learn counts it as 0.

    .. math::

      \mathrm{loss}_i = \frac{|\{(j, k) \in Y_i \times \bar Y_i : s_{ik} \ge s_{ij}\}|}
          {|Y_i|\, |\bar Y_i|}

    with Y_i and \bar Y_i the relevant and irrelevant labels of sample i and s_i its scores.

    A tied pair counts as a whole error (scikit-learn's rule, unlike the 1/2 of `roc_auc`, so
    the loss is not 1 - AUC under ties). Bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n, L]`` label scores of n samples, larger meaning more relevant; each
        sample ranks its own L labels (the last axis).
      labels: ``[*batch, n, L]`` relevance in {0, 1} or bool, broadcasting against `scores`.
      sample_weight: optional ``[*batch, n, L]`` entry mask of 0 and 1, broadcasting against
        `scores` (the last axis must be L): 0 leaves that label out of that sample.

    Returns:
      A float array of shape ``[*batch, n]``, one value per sample.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> scores = [[0.75, 0.5, 1.0], [1.0, 0.2, 0.1], [0.3, 0.9, 0.3]]
      >>> labels = [[1, 0, 0], [0, 0, 1], [0, 0, 0]]
      >>> # 1 of 2 pairs misordered, then 2 of 2; the last sample has no pair
      >>> np.asarray(jm.label_ranking_loss(scores, labels)).tolist()
      [0.5, 1.0, nan]

    References:
      Tsoumakas, Katakis & Vlahavas (2010), "Mining multi-label data", in Data Mining and
      Knowledge Discovery Handbook, 667-685.
    """
    return _label_metric(_label_ranking_loss_kernel, scores, labels, sample_weight)
