"""Threshold choice: the operating point that maximises F-beta, meets a precision or recall floor,
or minimises expected cost (a budget of k alarms is in `budget.py`).

Each search sorts the scores once and scores every distinct threshold (every tie group) from the
prefix sums of the ranking engine, so it is exact and O(n log n). Each returns a NamedTuple with
``.value`` and ``.threshold`` (it unpacks as ``value, threshold``), with the rule "predicted
positive iff score >= threshold". Thresholds are the input's own score values (decoded from the
exact order keys when the input was float64, see `exact_order.ScoreCodec`).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import sorting
from jaxmetrics._src.core.floors import check_level, meets_floor, split_level
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_real
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe


class ThresholdChoice(NamedTuple):
    """The best value of a threshold search and the threshold that attains it.

    What `max_f_beta`, `recall_at_precision`, `precision_at_recall` and `min_expected_cost`
    return; it unpacks as ``value, threshold``. The threshold applies the rule "predicted
    positive iff ``score >= threshold``"; ``+inf`` means flag nothing (only `min_expected_cost`
    chooses it). Both fields are NaN where no threshold qualifies, and under `jax.jit` where the
    batch element's input held a bad value.

    Attributes:
      value: ``[*batch]`` the optimised quantity (F-beta, recall, precision or expected cost).
      threshold: ``[*batch]`` one of the input's own score values (a float64 numpy array for
        eager float64 input while x64 is off), or ``+inf``.
    """

    value: Array
    threshold: Array


def _search_kernel(
    scores: Array,
    labels: Array,
    weights: Array | None,
    parameters: Array,
    *,
    objective: Callable[..., tuple[Array, Array]],
    flag_nothing: Callable[..., Array] | None,
    prefer_low_threshold: bool,
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
    better. `objective` and `flag_nothing` are module-level functions and `parameters` an array
    traced into the program, so an eager call compiles once per objective and bucket of sizes
    (F1 and F2 share one program).
    """
    (value, threshold), codec = recipe.sorted_metric(
        _search_kernel,
        scores,
        labels,
        sample_weight,
        np.asarray(parameters, float_dtype()),
        objective=objective,
        flag_nothing=flag_nothing,
        prefer_low_threshold=prefer_low_threshold,
    )
    return ThresholdChoice(value, codec.decode(threshold))


def _rates(groups: sorting.Groups) -> tuple[Array, Array, Array, Array]:
    dtype = float_dtype()
    tp, fp = groups.tp.astype(dtype), groups.fp.astype(dtype)
    p = groups.total_positive.astype(dtype)
    return tp, fp, p - tp, groups.total_negative.astype(dtype)


def _f_beta_objective(groups: sorting.Groups, beta: Array) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    scale = 1 + beta * beta
    return safe_divide(scale * tp, scale * tp + beta * beta * fn + fp, jnp.nan), True


def _recall_only(groups: sorting.Groups) -> tuple[Array, Array]:
    """F-beta's limit as beta grows: recall."""
    tp, _, fn, _ = _rates(groups)
    return safe_divide(tp, tp + fn, jnp.nan), True


def _recall_objective(groups: sorting.Groups, *floor: Array) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    return safe_divide(tp, tp + fn, jnp.nan), meets_floor(tp, tp + fp, floor)


def _precision_objective(groups: sorting.Groups, *floor: Array) -> tuple[Array, Array]:
    tp, fp, fn, _ = _rates(groups)
    return safe_divide(tp, tp + fp, jnp.nan), meets_floor(tp, tp + fn, floor)


def _negative_cost(groups: sorting.Groups, cost_fp: float, cost_fn: float) -> tuple[Array, Array]:
    _, fp, fn, negatives = _rates(groups)
    total = groups.total_positive.astype(negatives.dtype) + negatives
    return -(cost_fp * fp + cost_fn * fn) / total, True


def _negative_cost_of_nothing(groups: sorting.Groups, cost_fp: float, cost_fn: float) -> Array:
    del cost_fp  # flagging nothing raises no false alarm: every positive is missed
    _, _, _, negatives = _rates(groups)
    positives = groups.total_positive.astype(negatives.dtype)
    return -cost_fn * positives / (positives + negatives)


def max_f_beta(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    beta: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    r"""The largest F-beta over all thresholds, and the lowest threshold that attains it.

    scikit-learn has no function that returns it; it equals the maximum, over the thresholds, of
    ``sklearn.metrics.metric_at_thresholds(labels, scores, fbeta_score,
    metric_params={"beta": beta})``, found exactly from one sort: every distinct score is tried,
    in O(n log n).

    .. math:: \max_t F_\beta(t), \qquad F_\beta(t) = \frac{(1+\beta^2)\, TP(t)}
              {(1+\beta^2)\, TP(t) + \beta^2 FN(t) + FP(t)}

    Ties in F-beta go to the lowest threshold (more recall at the same F-beta), as a threshold
    sweep reports them; flagging nothing is not a candidate. ``beta=0`` maximises precision and
    ``beta=inf`` recall; a negative or NaN `beta` raises `ValueError`. For calibrated
    probabilities the F1-optimal threshold is half the optimal F1 (Lipton et al.). Choose the
    threshold on validation data, never on the test set. Threshold rule, bad input and
    precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      beta: weight of recall against precision, a float >= 0 (``inf`` allowed); 1 gives F1.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `ThresholdChoice` ``(value, threshold)``, each of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> f1, threshold = jm.max_f_beta(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> round(float(f1), 4), round(float(threshold), 2)  # all 4 positives, 2 false alarms
      (0.8, 0.3)

    References:
      Lipton, Elkan & Naryanaswamy (2014), "Optimal thresholding of classifiers to maximize F1
      measure", Proc. ECML PKDD, LNCS 8725:225-239.
    """
    beta = check_real(beta, "beta")
    if not beta >= 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")
    if math.isinf(beta):
        return _search(scores, labels, sample_weight, _recall_only, prefer_low_threshold=True)
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
    r"""The largest recall among thresholds whose precision is at least `min_precision`.

    scikit-learn has no function that returns it; it is the largest
    ``recall[precision >= min_precision]`` over the points of
    `sklearn.metrics.precision_recall_curve` other than its closing point (precision 1 at
    recall 0, a convention that no threshold attains), with that point's threshold.

    .. math:: \max_t R(t) \quad \text{subject to} \quad P(t) \ge p_{\min}

    Ties in recall go to the highest threshold (the same positives found with fewer false
    alarms). If no threshold reaches the floor, or there are no positives, both fields are NaN.
    `min_precision` outside [0, 1] raises `ValueError`. Choose the threshold on validation
    data, never on the test set. Threshold rule, bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      min_precision: the precision floor, a number in [0, 1].
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `ThresholdChoice` ``(value, threshold)``: the recall and its threshold, each of shape
      ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> recall, threshold = jm.recall_at_precision(scores, labels, min_precision=0.75)
      >>> round(float(recall), 4), round(float(threshold), 2)  # 3 of 4 found, 1 false alarm
      (0.75, 0.6)
    """
    min_precision = split_level(check_level(min_precision, "min_precision"))
    return _search(
        scores,
        labels,
        sample_weight,
        _recall_objective,
        *min_precision,
        prefer_low_threshold=False,
    )


def precision_at_recall(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    min_recall: float,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    r"""The largest precision among thresholds whose recall is at least `min_recall`.

    The screening rule "find at least 95% of cases, and among the thresholds that do, take the
    one with the best precision". scikit-learn has no function that returns it; it is the
    largest ``precision[recall >= min_recall]`` over the points of
    `sklearn.metrics.precision_recall_curve` other than its closing point, with that point's
    threshold.

    .. math:: \max_t P(t) \quad \text{subject to} \quad R(t) \ge r_{\min}

    Ties in precision go to the lowest threshold (more recall at the same precision). With no
    positives both fields are NaN (recall is undefined). `min_recall` outside [0, 1] raises
    `ValueError`. Choose the threshold on validation data, never on the test set.
    Threshold rule, bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      min_recall: the recall floor, a number in [0, 1].
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `ThresholdChoice` ``(value, threshold)``: the precision and its threshold, each of shape
      ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> precision, threshold = jm.precision_at_recall(scores, labels, min_recall=1.0)
      >>> round(float(precision), 4), round(float(threshold), 2)  # every case found: 4 of 6
      (0.6667, 0.3)
    """
    min_recall = split_level(check_level(min_recall, "min_recall"))
    return _search(
        scores, labels, sample_weight, _precision_objective, *min_recall, prefer_low_threshold=True
    )


def min_expected_cost(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    cost_fp: float,
    cost_fn: float,
    sample_weight: ArrayLike | None = None,
) -> ThresholdChoice:
    r"""The smallest expected cost per sample over all thresholds, and the threshold attaining it.

    scikit-learn has no function that returns it; it equals the minimum of
    ``(cost_fp * fps + cost_fn * fns) / n`` over the thresholds of
    `sklearn.metrics.confusion_matrix_at_thresholds` and over "flag nothing" (threshold
    ``+inf``), found exactly from one sort. For calibrated probabilities the chosen threshold is
    close to `bayes_threshold`; for raw scores, search on validation data, never on the test
    set.

    .. math:: \min_{t \in \{s_i\} \cup \{+\infty\}}
              \frac{c_{FP}\, FP(t) + c_{FN}\, FN(t)}{W}

    with W the total weight (n without weights).

    Ties in cost go to the lowest threshold, and flagging nothing wins only when strictly
    cheaper. Costs that are not finite numbers >= 0 raise `ValueError`. Threshold rule, bad
    input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      cost_fp: the cost of a false positive (a false alarm), a finite number >= 0.
      cost_fn: the cost of a false negative (a miss), a finite number >= 0.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `ThresholdChoice` ``(value, threshold)``: the cost per sample (per unit of weight) and its
      threshold, each of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> cost, threshold = jm.min_expected_cost(scores, labels, cost_fp=1.0, cost_fn=5.0)
      >>> round(float(cost), 4), round(float(threshold), 2)  # no miss, 2 false alarms: 2 / 8
      (0.25, 0.3)

    References:
      Elkan (2001), "The foundations of cost-sensitive learning", Proc. IJCAI, 973-978.
    """
    cost_fp, cost_fn = _check_costs(cost_fp, cost_fn)
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


def _check_costs(cost_fp: Any, cost_fn: Any) -> tuple[float, float]:
    costs = []
    for name, cost in (("cost_fp", cost_fp), ("cost_fn", cost_fn)):
        costs.append(check_real(cost, name))
        if not 0 <= costs[-1] < math.inf:
            raise ValueError(f"`{name}` must be a finite number >= 0; got {cost!r}.")
    return costs[0], costs[1]


def bayes_threshold(*, cost_fp: float, cost_fn: float) -> float:
    r"""Cost-optimal threshold for calibrated probabilities, ``cost_fp / (cost_fp + cost_fn)``.

    Flagging a sample of probability p costs (1 - p) cost_fp in expectation (a false alarm),
    leaving it costs p cost_fn (a miss); flagging is cheaper exactly when p > t below, and at
    p = t the two costs are equal, so the library's rule ``p >= t`` is optimal too. No data
    enter: the threshold is only as good as the calibration of the probabilities (check it with
    `reliability_table`); for raw scores use `min_expected_cost` on validation data.
    scikit-learn has no equivalent.

    .. math:: t^* = \frac{c_{FP}}{c_{FP} + c_{FN}}

    Costs that are not finite numbers >= 0, or both 0, raise `ValueError`.

    Args:
      cost_fp: the cost of a false positive (a false alarm), a finite number >= 0.
      cost_fn: the cost of a false negative (a miss), a finite number >= 0.

    Returns:
      The threshold, a Python float in [0, 1].

    Examples:
      >>> import jaxmetrics as jm
      >>> round(jm.bayes_threshold(cost_fp=5, cost_fn=500), 4)  # a miss costs 100 alarms: 5/505
      0.0099

    References:
      Elkan (2001), "The foundations of cost-sensitive learning", Proc. IJCAI, 973-978.
    """
    cost_fp, cost_fn = _check_costs(cost_fp, cost_fn)
    if cost_fp + cost_fn == 0:
        raise ValueError("costs `cost_fp` and `cost_fn` must not both be 0.")
    return cost_fp / (cost_fp + cost_fn)
