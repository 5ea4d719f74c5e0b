"""Threshold choice: the operating point that maximises F-beta, meets a precision or recall floor,
minimises expected cost, or fits a budget.

Each function sorts the scores once and scores every distinct threshold (every tie group) from the
prefix sums of the ranking engine, so the search is exact and O(n log n). Each returns
``(value, threshold)`` with the rule "predicted positive iff score >= threshold".
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._src import sorting, validation
from jaxmetrics._src.counts import safe_divide
from jaxmetrics._src.ranking import _Groups, _rank_and_tally

Array = jax.Array


def _search(
    scores, labels, sample_weight, objective, *, prefer_low_threshold: bool, flag_nothing=None
):
    """Best (value, threshold) of `objective(groups) -> (value, feasible)` over distinct scores.

    Infeasible everywhere gives (NaN, NaN). Ties in value go to the lowest threshold when
    `prefer_low_threshold`, else to the highest. `flag_nothing(groups) -> value`, when given,
    scores the threshold +inf, which wins only if strictly better.
    """
    scores, labels, weights, invalid = validation.binary_inputs(scores, labels, sample_weight)

    def kernel(scores: Array, labels: Array, weights: Array | None) -> tuple[Array, Array]:
        ranked, _, groups = _rank_and_tally(scores, labels, weights)
        value, feasible = objective(groups)
        candidate = groups.is_point & feasible & ~jnp.isnan(value)
        value = jnp.where(candidate, value, -jnp.inf)
        # positions ascend with the threshold: argmax takes the first (lowest) of equal values
        if prefer_low_threshold:
            best = jnp.argmax(value)
        else:
            best = value.shape[0] - 1 - jnp.argmax(value[::-1])
        found = candidate.any()
        best_value = jnp.where(found, value[best], jnp.nan)
        best_threshold = jnp.where(found, ranked.scores[best], jnp.nan)
        if flag_nothing is not None:
            nothing = flag_nothing(groups)
            better = nothing > best_value
            best_value = jnp.where(better, nothing, best_value)
            best_threshold = jnp.where(better, jnp.inf, best_threshold)
        return best_value, best_threshold

    result = validation.map_batch(kernel, scores, labels, weights)
    return validation.nan_where(invalid, result)


def _rates(groups: _Groups, dtype) -> tuple[Array, Array, Array, Array]:
    tp, fp = groups.tp.astype(dtype), groups.fp.astype(dtype)
    p = groups.total_positive.astype(dtype)
    return tp, fp, p - tp, groups.total_negative.astype(dtype)


def max_f_beta(
    scores: Any, labels: Any, *, beta: float = 1.0, sample_weight: Any = None
) -> tuple[Array, Array]:
    """The largest F-beta over all thresholds, and the lowest threshold that attains it.

    Ties go to the lowest threshold, as a threshold sweep reports them (seed 003). For calibrated
    probabilities the F1-optimal threshold is half the optimal F1 (Lipton et al. 2014).

    >>> import jaxmetrics as jm
    >>> f1, t = jm.max_f_beta([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], [1, 1, 0, 1, 0, 1, 0, 0])
    >>> round(float(f1), 4), round(float(t), 2)
    (0.8, 0.3)
    """
    if beta < 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")

    def objective(groups: _Groups) -> tuple[Array, Array]:
        tp, fp, fn, _ = _rates(groups, jnp.float32)
        scale = 1 + beta * beta
        return safe_divide(scale * tp, scale * tp + beta * beta * fn + fp, jnp.nan), True

    return _search(scores, labels, sample_weight, objective, prefer_low_threshold=True)


def recall_at_precision(
    scores: Any, labels: Any, *, min_precision: float, sample_weight: Any = None
) -> tuple[Array, Array]:
    """Largest recall among thresholds whose precision is at least `min_precision`.

    Ties in recall go to the highest threshold (same positives found, fewer false alarms).
    If no threshold reaches the floor, both values are NaN.
    """

    def objective(groups: _Groups) -> tuple[Array, Array]:
        tp, fp, fn, _ = _rates(groups, jnp.float32)
        precision = safe_divide(tp, tp + fp, jnp.nan)
        return safe_divide(tp, tp + fn, jnp.nan), precision >= min_precision

    return _search(scores, labels, sample_weight, objective, prefer_low_threshold=False)


def precision_at_recall(
    scores: Any, labels: Any, *, min_recall: float, sample_weight: Any = None
) -> tuple[Array, Array]:
    """Largest precision among thresholds whose recall is at least `min_recall`.

    The screening rule of seed 000 ("find at least 95% of cases, and among the thresholds that do,
    take the one with the best precision"). Ties in precision go to the lowest threshold (more
    recall at the same precision).
    """

    def objective(groups: _Groups) -> tuple[Array, Array]:
        tp, fp, fn, _ = _rates(groups, jnp.float32)
        recall = safe_divide(tp, tp + fn, jnp.nan)
        return safe_divide(tp, tp + fp, jnp.nan), recall >= min_recall

    return _search(scores, labels, sample_weight, objective, prefer_low_threshold=True)


def min_expected_cost(
    scores: Any, labels: Any, *, cost_fp: float, cost_fn: float, sample_weight: Any = None
) -> tuple[Array, Array]:
    """Smallest cost per sample, ``(cost_fp * FP + cost_fn * FN) / n``, and its threshold.

    Searched over every distinct score and "flag nothing" (threshold +inf). Ties go to the lowest
    threshold. For calibrated probabilities the answer is close to `bayes_threshold`; for raw
    scores search on validation data, never on the test set.
    """
    if cost_fp < 0 or cost_fn < 0:
        raise ValueError(f"costs must be >= 0; got cost_fp={cost_fp}, cost_fn={cost_fn}.")

    def objective(groups: _Groups) -> tuple[Array, Array]:
        tp, fp, fn, n = _rates(groups, jnp.float32)
        total = groups.total_positive.astype(jnp.float32) + n
        return -(cost_fp * fp + cost_fn * fn) / total, True

    def flag_nothing(groups: _Groups) -> Array:  # every positive is missed
        p = groups.total_positive.astype(jnp.float32)
        return -cost_fn * p / (p + groups.total_negative.astype(jnp.float32))

    value, threshold = _search(
        scores,
        labels,
        sample_weight,
        objective,
        prefer_low_threshold=True,
        flag_nothing=flag_nothing,
    )
    return -value, threshold


def bayes_threshold(*, cost_fp: float, cost_fn: float) -> float:
    """Cost-optimal threshold for calibrated probabilities, ``cost_fp / (cost_fp + cost_fn)``.

    Flag when ``p > t``: the expected cost of a false alarm, (1 - p) cost_fp, is then below the
    expected cost of a miss, p cost_fn (Elkan 2001).

    >>> import jaxmetrics as jm
    >>> round(jm.bayes_threshold(cost_fp=5, cost_fn=500), 4)  # seed 000: 5 / 505
    0.0099
    """
    if cost_fp < 0 or cost_fn < 0 or cost_fp + cost_fn == 0:
        raise ValueError(f"costs must be >= 0 and not both 0; got {cost_fp}, {cost_fn}.")
    return cost_fp / (cost_fp + cost_fn)


def budget_threshold(scores: Any, *, k: int) -> tuple[Array, Array]:
    """Threshold of a budget of k alarms: the k-th highest score, and how many it selects.

    Tie rule: the rule ``score >= threshold`` selects every sample tied with the k-th, so the
    second value can exceed k; break the tie at random or by a second key to call exactly k
    (seed 000), or use `precision_at_k`, which counts the tied group's expected share.
    """
    if not isinstance(k, int) or isinstance(k, bool) or k < 1:
        raise ValueError(f"`k` must be a positive int; got {k!r}.")
    scores = validation.as_scores(scores)
    invalid = validation.check_finite(scores, "scores")
    if k > scores.shape[-1]:
        raise ValueError(f"`k` must be at most the number of samples {scores.shape[-1]}; got {k}.")
    threshold = validation.map_batch(lambda s: sorting.rank(s).scores[s.shape[0] - k], scores)
    selected = (scores >= threshold[..., None]).sum(-1)
    return validation.nan_where(invalid, (threshold, selected))
