"""Analytic confidence intervals: binomial proportions and the DeLong AUC variance.

The binomial intervals take arrays of counts (any shape) and return arrays of bounds. DeLong's
variance uses the structural components of Sun & Xu (2014), which are read off the same ranking
engine as every other metric: one sort per model, O(n log n).
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import betainc, ndtr

from jaxmetrics._src import sorting, validation

Array = jax.Array


def _z(confidence: float) -> float:
    if not 0 < confidence < 1:
        raise ValueError(f"`confidence` must be in (0, 1); got {confidence}.")
    return NormalDist().inv_cdf(0.5 + confidence / 2)


def _proportion_inputs(successes: Any, trials: Any) -> tuple[Array, Array]:
    successes = validation.as_real_array(successes, "successes", min_ndim=0)
    trials = validation.as_real_array(trials, "trials", min_ndim=0)
    if validation.is_concrete(successes, trials):
        k, n = jnp.broadcast_arrays(successes, trials)
        bad = (k < 0) | (k > n) | (n <= 0)
        if bool(bad.any()):
            index = tuple(int(i) for i in jnp.argwhere(bad)[0])
            raise ValueError(
                f"`successes` must lie in [0, trials] and `trials` be positive; found "
                f"successes={float(k[index])}, trials={float(n[index])} at index {index}."
            )
    dtype = validation.float_dtype(successes.dtype, trials.dtype)
    return successes.astype(dtype), trials.astype(dtype)


def wilson_interval(
    successes: Any, trials: Any, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Wilson score interval of a binomial proportion (e.g. a recall k / n+).

    .. math:: \frac{k + z^2/2}{n + z^2} \pm \frac{z}{n + z^2}\sqrt{\frac{k(n-k)}{n} + \frac{z^2}{4}}

    Matches `statsmodels.stats.proportion.proportion_confint(method="wilson")`.

    >>> import jaxmetrics as jm
    >>> low, high = jm.wilson_interval(40, 50)  # seed 000: a recall of 40/50
    >>> round(float(low), 3), round(float(high), 3)
    (0.67, 0.888)
    """
    k, n = _proportion_inputs(successes, trials)
    return wilson_bounds(k, n, confidence=confidence)


def wilson_bounds(k: Array, n: Array, *, confidence: float = 0.95) -> tuple[Array, Array]:
    """Wilson bounds without input checks (NaN where n = 0), for callers that count bins."""
    z = _z(confidence)
    center = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * jnp.sqrt(k * (n - k) / n + z * z / 4)
    return center - half, center + half


def agresti_coull_interval(
    successes: Any, trials: Any, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Agresti-Coull interval: the Wald interval around (k + z²/2) / (n + z²), clipped to [0, 1].

    Matches `statsmodels.stats.proportion.proportion_confint(method="agresti_coull")`.
    """
    z = _z(confidence)
    k, n = _proportion_inputs(successes, trials)
    n_tilde = n + z * z
    p_tilde = (k + z * z / 2) / n_tilde
    half = z * jnp.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    return jnp.clip(p_tilde - half, 0, 1), jnp.clip(p_tilde + half, 0, 1)


def _beta_quantile(q: Array, a: Array, b: Array) -> Array:
    """Inverse of the regularised incomplete beta function, by bisection (60 halvings)."""

    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) / 2
        below = betainc(a, b, middle) < q
        return jnp.where(below, middle, low), jnp.where(below, high, middle)

    low, high = jax.lax.fori_loop(0, 60, halve, (jnp.zeros_like(q), jnp.ones_like(q)))
    return (low + high) / 2


def clopper_pearson_interval(
    successes: Any, trials: Any, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    """Clopper-Pearson ("exact") interval from beta quantiles; 0 / 1 at k = 0 / k = n.

    Matches `statsmodels.stats.proportion.proportion_confint(method="beta")`.
    """
    _z(confidence)
    k, n = _proportion_inputs(successes, trials)
    alpha = (1 - confidence) / 2
    k, n = jnp.broadcast_arrays(k, n)
    low = _beta_quantile(jnp.full_like(k, alpha), jnp.maximum(k, 1), n - k + 1)
    high = _beta_quantile(jnp.full_like(k, 1 - alpha), k + 1, jnp.maximum(n - k, 1))
    return jnp.where(k == 0, 0.0, low), jnp.where(k == n, 1.0, high)


def hanley_mcneil_standard_error(auc: Any, num_positive: Any, num_negative: Any) -> Array:
    r"""Hanley & McNeil (1982) standard error of an AUC, from the AUC and the class sizes.

    .. math:: \mathrm{SE}^2 = \frac{A(1-A) + (n_+ - 1)(Q_1 - A^2) + (n_- - 1)(Q_2 - A^2)}
              {n_+ n_-},\quad Q_1 = \frac{A}{2-A},\ Q_2 = \frac{2A^2}{1+A}

    It assumes exponential score distributions; DeLong's estimate makes no such assumption.
    """
    auc = jnp.asarray(auc, jnp.float32)
    num_positive = jnp.asarray(num_positive, jnp.float32)
    num_negative = jnp.asarray(num_negative, jnp.float32)
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    variance = (
        auc * (1 - auc) + (num_positive - 1) * (q1 - auc**2) + (num_negative - 1) * (q2 - auc**2)
    ) / (num_positive * num_negative)
    return jnp.sqrt(variance)


class DeLong(NamedTuple):
    """DeLong AUCs of M models on the same samples, their covariance and Wald intervals."""

    auc: Array  # [M] (scalar for 1-D scores)
    variance: Array  # [M]
    covariance: Array  # [M, M]
    low: Array  # [M], clipped to [0, 1]
    high: Array  # [M]


def _structural_components(scores: Array, labels: Array) -> tuple[Array, Array]:
    """Per-sample placement values of one model, in the original sample order.

    For a positive i, V10_i = (negatives below s_i + half the tied ones) / n-; for a negative j,
    V01_j = (positives above s_j + half the tied ones) / n+. Each is 0 for the other class.
    """
    ranked = sorting.rank(scores)
    tallies = sorting.tally(ranked, labels, None)
    a, b = ranked.group_start, ranked.group_stop
    positive, negative = tallies.positive, tallies.negative
    p, n = positive[-1], negative[-1]
    negatives_below = (negative[a] + negative[b]) / 2  # ties count one half
    positives_above = p - (positive[a] + positive[b]) / 2
    is_positive = labels[ranked.order] == 1
    placement = jnp.where(is_positive, negatives_below / n, positives_above / p)
    # back to the original order: position order[k] holds the k-th sorted value
    placement = jnp.zeros_like(placement).at[ranked.order].set(placement)
    return jnp.where(labels == 1, placement, 0.0), jnp.where(labels == 0, placement, 0.0)


def _covariance(components: Array, mask: Array) -> Array:
    """Sample covariance (ddof 1) across models of `components` [M, n] over the masked samples."""
    count = mask.sum()
    mean = components.sum(-1, keepdims=True) / count
    centered = jnp.where(mask, components - mean, 0.0)
    return centered @ centered.T / (count - 1)


def _delong_moments(scores: Array, labels: Array) -> tuple[Array, Array]:
    v10, v01 = jax.vmap(_structural_components, in_axes=(0, None))(scores, labels)
    positive, negative = labels == 1, labels == 0
    auc = v10.sum(-1) / positive.sum()
    covariance = (
        _covariance(v10, positive) / positive.sum() + _covariance(v01, negative) / negative.sum()
    )
    return auc, covariance


def _delong_inputs(scores: Any, labels: Any) -> tuple[Array, Array, Array]:
    scores, labels, _, invalid = validation.binary_inputs(scores, labels)
    if scores.ndim > 2 or labels.ndim != 1:
        raise ValueError(
            "DeLong takes `scores` [n] or [M, n] (M models on the same samples) and `labels` [n]; "
            f"got scores {scores.shape}, labels {labels.shape}."
        )
    if validation.is_concrete(labels):
        positives = int(labels.sum())
        if positives < 2 or labels.shape[0] - positives < 2:
            raise ValueError(
                "DeLong needs at least two positives and two negatives in `labels`; "
                f"found {positives} positives and {labels.shape[0] - positives} negatives."
            )
    return jnp.atleast_2d(scores), labels, jnp.atleast_1d(invalid)


def delong(scores: Any, labels: Any, *, confidence: float = 0.95) -> DeLong:
    """DeLong's nonparametric AUC variance and covariance (fast midrank algorithm of Sun & Xu).

    Matches pROC's `var(roc, method="delong")`, `cov(...)` and `ci.auc(..., method="delong")`.
    The interval is the Wald interval ``auc ± z·sqrt(variance)``, clipped to [0, 1].

    Args:
      scores: ``[n]`` or ``[M, n]`` scores of M models on the same samples.
      labels: ``[n]`` 0/1 labels with at least two of each class.

    Returns:
      `DeLong`: for ``[M, n]`` scores, auc/variance/low/high ``[M]`` and covariance ``[M, M]``;
      for ``[n]`` scores, scalars (covariance too).

    References:
      DeLong, DeLong & Clarke-Pearson (1988), Biometrics 44:837-845; Sun & Xu (2014), IEEE Signal
      Processing Letters 21:1389-1393.
    """
    z = _z(confidence)
    was_1d = jnp.ndim(scores) == 1
    scores, labels, invalid = _delong_inputs(scores, labels)
    auc, covariance = _delong_moments(scores, labels)
    auc = jnp.where(invalid, jnp.nan, auc)
    variance = jnp.diagonal(covariance)
    half = z * jnp.sqrt(variance)
    result = DeLong(
        auc, variance, covariance, jnp.clip(auc - half, 0, 1), jnp.clip(auc + half, 0, 1)
    )
    if was_1d:
        result = DeLong(*(x.reshape(()) for x in result))
    return result


class DeLongTest(NamedTuple):
    """Paired DeLong test of AUC_a - AUC_b on the same samples."""

    statistic: Array  # z = (AUC_a - AUC_b) / SE
    p_value: Array  # two-sided
    low: Array  # Wald interval of the difference (not clipped)
    high: Array


def delong_test(
    scores_a: Any, scores_b: Any, labels: Any, *, confidence: float = 0.95
) -> DeLongTest:
    """Paired DeLong z-test of two correlated AUCs (two models scored on the same samples).

    Matches pROC's `roc.test(..., method="delong", paired=TRUE)`: statistic, two-sided p-value
    and the confidence interval of the difference.
    """
    z = _z(confidence)
    scores_a = validation.as_scores(scores_a, "scores_a")
    scores_b = validation.as_scores(scores_b, "scores_b")
    if scores_a.shape != scores_b.shape or scores_a.ndim != 1:
        raise ValueError(
            f"`scores_a` and `scores_b` must both have shape [n]; got {scores_a.shape} and "
            f"{scores_b.shape}."
        )
    scores, labels, invalid = _delong_inputs(jnp.stack([scores_a, scores_b]), labels)
    auc, covariance = _delong_moments(scores, labels)
    difference = auc[0] - auc[1]
    standard_error = jnp.sqrt(covariance[0, 0] + covariance[1, 1] - 2 * covariance[0, 1])
    statistic = jnp.where(invalid.any(), jnp.nan, difference / standard_error)
    p_value = 2 * ndtr(-jnp.abs(statistic))
    return DeLongTest(
        statistic, p_value, difference - z * standard_error, difference + z * standard_error
    )
