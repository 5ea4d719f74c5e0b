"""Threshold choice: the operating point that maximises F-beta, meets a precision or recall floor,
minimises expected cost, or fits a budget.

Each search sorts the scores once and scores every distinct threshold (every tie group) from the
prefix sums of the ranking engine, so it is exact and O(n log n). Each returns a NamedTuple with
``.value`` and ``.threshold`` (it unpacks as ``value, threshold``), with the rule "predicted
positive iff score >= threshold". Thresholds are the input's own score values (decoded from the
exact order keys when the input was float64, see `validation.ScoreCodec`).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp

from jaxmetrics._src import recipe, sorting, validation
from jaxmetrics._src.counts import safe_divide
from jaxmetrics._src.typing import Array, ArrayLike


class ThresholdChoice(NamedTuple):
    """The best value of a threshold search and the threshold that attains it (``[*batch]``)."""

    value: Array
    threshold: Array


class BudgetChoice(NamedTuple):
    """A budget threshold: `value` is how many samples it flags (>= k with ties at the k-th)."""

    value: Array
    threshold: Array


def _search_kernel(
    scores: Array,
    labels: Array,
    weights: Array | None,
    *,
    objective: Callable[..., tuple[Array, Array]],
    flag_nothing: Callable[..., Array] | None,
    prefer_low_threshold: bool,
    parameters: tuple,
) -> tuple[Array, Array]:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    value, feasible = objective(groups, *parameters)
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
        nothing = flag_nothing(groups, *parameters)
        better = nothing > best_value
        best_value = jnp.where(better, nothing, best_value)
        best_threshold = jnp.where(better, jnp.inf, best_threshold)
    return best_value, best_threshold


def _search(
    scores,
    labels,
    sample_weight,
    objective,
    *parameters,
    prefer_low_threshold: bool,
    flag_nothing=None,
) -> ThresholdChoice:
    """Best (value, threshold) of ``objective(groups, *parameters) -> (value, feasible)``.

    Over the distinct scores; infeasible everywhere gives (NaN, NaN). Ties in value go to the
    lowest threshold when `prefer_low_threshold`, else to the highest. ``flag_nothing(groups,
    *parameters) -> value``, when given, scores the threshold +inf, which wins only if strictly
    better. `objective` and `flag_nothing` are module-level functions and `parameters` plain
    floats, so an eager call compiles once per bucket of sizes.
    """
    (value, threshold), codec = recipe.sorted_metric(
        _search_kernel,
        scores,
        labels,
        sample_weight,
        objective=objective,
        flag_nothing=flag_nothing,
        prefer_low_threshold=prefer_low_threshold,
        parameters=tuple(float(x) for x in parameters),
    )
    return ThresholdChoice(value, codec.decode(threshold))


def _rates(groups: sorting.Groups) -> tuple[Array, Array, Array, Array]:
    dtype = validation.float_dtype()
    tp, fp = groups.tp.astype(dtype), groups.fp.astype(dtype)
    p = groups.total_positive.astype(dtype)
    return tp, fp, p - tp, groups.total_negative.astype(dtype)


def _f_beta_objective(groups: sorting.Groups, beta: float) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    if math.isinf(beta):  # the limit is recall
        return safe_divide(tp, tp + fn, jnp.nan), True
    scale = 1 + beta * beta
    return safe_divide(scale * tp, scale * tp + beta * beta * fn + fp, jnp.nan), True


def _recall_objective(groups: sorting.Groups, min_precision: float) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    precision = safe_divide(tp, tp + fp, jnp.nan)
    return safe_divide(tp, tp + fn, jnp.nan), precision >= min_precision


def _precision_objective(groups: sorting.Groups, min_recall: float) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    recall = safe_divide(tp, tp + fn, jnp.nan)
    return safe_divide(tp, tp + fp, jnp.nan), recall >= min_recall


def _negative_cost(groups: sorting.Groups, cost_fp: float, cost_fn: float) -> tuple[Array, Array]:
    _, fp, fn, negatives = _rates(groups)
    total = groups.total_positive.astype(negatives.dtype) + negatives
    return -(cost_fp * fp + cost_fn * fn) / total, True


def _negative_cost_of_nothing(groups: sorting.Groups, cost_fp: float, cost_fn: float) -> Array:
    del cost_fp  # flagging nothing raises no false alarm: every positive is missed
    _, _, _, negatives = _rates(groups)
    positives = groups.total_positive.astype(negatives.dtype)
    return -cost_fn * positives / (positives + negatives)


def _check_level(value: Any, name: str) -> float:
    if not isinstance(value, numbers.Real) or not 0 <= value <= 1:
        raise ValueError(f"`{name}` must be a number in [0, 1]; got {value!r}.")
    return float(value)


def max_f_beta(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    beta: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    """The largest F-beta over all thresholds, and the lowest threshold that attains it.

    Ties go to the lowest threshold, as a threshold sweep reports them. For calibrated
    probabilities the F1-optimal threshold is half the optimal F1 (Lipton et al. 2014).

    >>> import jaxmetrics as jm
    >>> f1, t = jm.max_f_beta([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], [1, 1, 0, 1, 0, 1, 0, 0])
    >>> round(float(f1), 4), round(float(t), 2)
    (0.8, 0.3)
    """
    if not beta >= 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")
    return _search(
        scores, labels, sample_weight, _f_beta_objective, beta, prefer_low_threshold=True
    )


def recall_at_precision(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    min_precision: float,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    """Largest recall among thresholds whose precision is at least `min_precision`.

    Ties in recall go to the highest threshold (same positives found, fewer false alarms).
    If no threshold reaches the floor, both values are NaN.
    """
    min_precision = _check_level(min_precision, "min_precision")
    return _search(
        scores,
        labels,
        sample_weight,
        _recall_objective,
        min_precision,
        prefer_low_threshold=False,
    )


def precision_at_recall(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    min_recall: float,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    """Largest precision among thresholds whose recall is at least `min_recall`.

    The screening rule "find at least 95% of cases, and among the thresholds that do, take the
    one with the best precision". Ties in precision go to the lowest threshold (more
    recall at the same precision).
    """
    min_recall = _check_level(min_recall, "min_recall")
    return _search(
        scores, labels, sample_weight, _precision_objective, min_recall, prefer_low_threshold=True
    )


def min_expected_cost(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    cost_fp: float,
    cost_fn: float,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    """Smallest cost per sample, ``(cost_fp * FP + cost_fn * FN) / n``, and its threshold.

    Searched over every distinct score and "flag nothing" (threshold +inf). Ties go to the lowest
    threshold. For calibrated probabilities the answer is close to `bayes_threshold`; for raw
    scores search on validation data, never on the test set.
    """
    _check_costs(cost_fp, cost_fn)
    value, threshold = _search(
        scores,
        labels,
        sample_weight,
        _negative_cost,
        cost_fp,
        cost_fn,
        prefer_low_threshold=True,
        flag_nothing=_negative_cost_of_nothing,
    )
    return ThresholdChoice(-value, threshold)


def _check_costs(cost_fp: Any, cost_fn: Any) -> None:
    for name, cost in (("cost_fp", cost_fp), ("cost_fn", cost_fn)):
        if not isinstance(cost, numbers.Real) or not 0 <= cost < math.inf:
            raise ValueError(f"`{name}` must be a finite number >= 0; got {cost!r}.")


def bayes_threshold(*, cost_fp: float, cost_fn: float) -> float:
    """Cost-optimal threshold for calibrated probabilities, ``cost_fp / (cost_fp + cost_fn)``.

    Flag when ``p > t``: the expected cost of a false alarm, (1 - p) cost_fp, is then below the
    expected cost of a miss, p cost_fn (Elkan 2001).

    >>> import jaxmetrics as jm
    >>> round(jm.bayes_threshold(cost_fp=5, cost_fn=500), 4)  # a miss costs 100 false alarms: 5 / 505
    0.0099
    """
    _check_costs(cost_fp, cost_fn)
    if cost_fp + cost_fn == 0:
        raise ValueError("costs `cost_fp` and `cost_fn` must not both be 0.")
    return cost_fp / (cost_fp + cost_fn)


def budget_threshold(scores: ArrayLike, *, k: int) -> BudgetChoice:
    """Threshold of a budget of k alarms: the k-th highest score (`.threshold`), and how many
    samples it selects (`.value`).

    Tie rule: the rule ``score >= threshold`` selects every sample tied with the k-th, so
    `.value` can exceed k; break the tie at random or by a second key to call exactly k, or
    use `precision_at_k`, which counts the tied group's expected share.
    """
    k = validation.check_count(k, "k")
    keys, codec = validation.order_keys(scores)
    scores = validation.as_scores(keys)
    invalid = validation.check_finite(scores, "scores")
    if k > scores.shape[-1]:
        raise ValueError(f"`k` must be at most the number of samples {scores.shape[-1]}; got {k}.")
    threshold = validation.map_batch(lambda s: sorting.rank(s).scores[s.shape[0] - k], scores)
    selected = (scores >= threshold[..., None]).sum(-1)
    value, threshold = validation.nan_where(invalid, (selected, threshold))
    return BudgetChoice(value, codec.decode(threshold))
