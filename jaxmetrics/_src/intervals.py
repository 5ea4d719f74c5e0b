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
import numpy as np
from jax.scipy.special import betainc, ndtr

from jaxmetrics._src import sorting, validation

Array = jax.Array


def _z(confidence: Any) -> float:
    level = validation.check_probability_level(confidence, "confidence")
    return NormalDist().inv_cdf(0.5 + level / 2)


def _proportion_inputs(successes: Any, trials: Any) -> tuple[Array, Array, Array]:
    """Counts as float arrays broadcast together, and the elementwise `invalid` flag.

    Every element is its own problem (no sample axis), so a bad element raises eagerly and, under
    jit, marks only its own bounds NaN. Concrete values are checked in numpy on the host.
    """
    successes = validation.as_real_array(successes, "successes", min_ndim=0)
    trials = validation.as_real_array(trials, "trials", min_ndim=0)
    try:
        shape = tuple(np.broadcast_shapes(successes.shape, trials.shape))
    except ValueError:
        raise ValueError(
            f"`successes` and `trials` must broadcast; got shapes {successes.shape} and "
            f"{trials.shape}."
        ) from None
    host_k, host_n = validation.host_values(successes), validation.host_values(trials)
    if host_k is not None and host_n is not None:
        k, n = np.broadcast_to(host_k, shape), np.broadcast_to(host_n, shape)
    else:
        k, n = jnp.broadcast_to(successes, shape), jnp.broadcast_to(trials, shape)
    # written so that NaN fails: the comparisons are False for it
    invalid = validation.check_values(
        n, "trials", lambda n: ~(n > 0), "be positive counts", sample_axes=0
    ) | validation.check_values(
        k, "successes", lambda k: ~((k >= 0) & (k <= n)), "lie in [0, trials]", sample_axes=0
    )
    dtype = validation.float_dtype()
    return (
        jnp.broadcast_to(successes, shape).astype(dtype),
        jnp.broadcast_to(trials, shape).astype(dtype),
        invalid,
    )


def wilson_interval(
    successes: Any, trials: Any, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Wilson score interval of a binomial proportion (e.g. a recall k / n+).

    .. math:: \frac{k + z^2/2}{n + z^2} \pm \frac{z}{n + z^2}\sqrt{\frac{k(n-k)}{n} + \frac{z^2}{4}}

    Matches `statsmodels.stats.proportion.proportion_confint(method="wilson")`; the bounds are
    clipped to [0, 1] (at k = 0 the formula's lower bound is 0 only up to rounding).

    Conventions: `successes` and `trials` broadcast elementwise; a count outside
    ``0 <= successes <= trials``, ``trials > 0`` (or NaN) raises `ValueError` eagerly and gives NaN
    bounds for that element under jit.

    >>> import jaxmetrics as jm
    >>> low, high = jm.wilson_interval(40, 50)  # seed 000: a recall of 40/50
    >>> round(float(low), 3), round(float(high), 3)
    (0.67, 0.888)
    """
    k, n, invalid = _proportion_inputs(successes, trials)
    return validation.nan_where(invalid, wilson_bounds(k, n, confidence=confidence))


def wilson_bounds(k: Array, n: Array, *, confidence: float = 0.95) -> tuple[Array, Array]:
    """Wilson bounds without input checks (NaN where n = 0), clipped to [0, 1], for callers that
    count bins."""
    z = _z(confidence)
    center = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * jnp.sqrt(k * (n - k) / n + z * z / 4)
    return jnp.clip(center - half, 0, 1), jnp.clip(center + half, 0, 1)


def agresti_coull_interval(
    successes: Any, trials: Any, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Agresti-Coull interval: the Wald interval around (k + z²/2) / (n + z²), clipped to [0, 1].

    Matches `statsmodels.stats.proportion.proportion_confint(method="agresti_coull")`. Inputs and
    bad counts as `wilson_interval`.
    """
    z = _z(confidence)
    k, n, invalid = _proportion_inputs(successes, trials)
    n_tilde = n + z * z
    p_tilde = (k + z * z / 2) / n_tilde
    half = z * jnp.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    bounds = jnp.clip(p_tilde - half, 0, 1), jnp.clip(p_tilde + half, 0, 1)
    return validation.nan_where(invalid, bounds)


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

    Matches `statsmodels.stats.proportion.proportion_confint(method="beta")`. Inputs and bad
    counts as `wilson_interval`.
    """
    alpha = (1 - validation.check_probability_level(confidence, "confidence")) / 2
    k, n, invalid = _proportion_inputs(successes, trials)
    # a marked element's counts would make the bisection's beta parameters invalid: compute on 0/1
    k, n = jnp.where(invalid, 0.0, k), jnp.where(invalid, 1.0, n)
    low = _beta_quantile(jnp.full_like(k, alpha), jnp.maximum(k, 1), n - k + 1)
    high = _beta_quantile(jnp.full_like(k, 1 - alpha), k + 1, jnp.maximum(n - k, 1))
    bounds = jnp.where(k == 0, 0.0, low), jnp.where(k == n, 1.0, high)
    return validation.nan_where(invalid, bounds)


def hanley_mcneil_standard_error(auc: Any, num_positive: Any, num_negative: Any) -> Array:
    r"""Hanley & McNeil (1982) standard error of an AUC, from the AUC and the class sizes.

    .. math:: \mathrm{SE}^2 = \frac{A(1-A) + (n_+ - 1)(Q_1 - A^2) + (n_- - 1)(Q_2 - A^2)}
              {n_+ n_-},\quad Q_1 = \frac{A}{2-A},\ Q_2 = \frac{2A^2}{1+A}

    It assumes exponential score distributions; DeLong's estimate makes no such assumption.

    Conventions: arguments broadcast elementwise. An `auc` outside [0, 1] or a class size below 1
    raises `ValueError` eagerly and gives NaN for that element under jit; a NaN `auc` (undefined,
    e.g. one class present) gives a NaN standard error.
    """
    values = [
        validation.as_real_array(x, name, min_ndim=0)
        for x, name in (
            (auc, "auc"),
            (num_positive, "num_positive"),
            (num_negative, "num_negative"),
        )
    ]
    invalid = validation.check_values(
        values[0], "auc", lambda a: (a < 0) | (a > 1), "be in [0, 1]", sample_axes=0
    )
    for value, name in zip(values[1:], ("num_positive", "num_negative")):
        invalid = invalid | validation.check_values(
            value, name, lambda n: ~(n >= 1), "be a class size >= 1", sample_axes=0
        )
    auc, num_positive, num_negative = (x.astype(validation.float_dtype()) for x in values)
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    variance = (
        auc * (1 - auc) + (num_positive - 1) * (q1 - auc**2) + (num_negative - 1) * (q2 - auc**2)
    ) / (num_positive * num_negative)
    return validation.nan_where(invalid, jnp.sqrt(variance))


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
    dtype = validation.float_dtype()
    ranked = sorting.rank(scores)
    tallies = sorting.tally(ranked, labels, None)
    a, b = ranked.group_start, ranked.group_stop
    positive, negative = tallies.positive.astype(dtype), tallies.negative.astype(dtype)
    p, n = positive[-1], negative[-1]
    negatives_below = (negative[a] + negative[b]) / 2  # ties count one half
    positives_above = p - (positive[a] + positive[b]) / 2
    is_positive = labels[ranked.order] == 1
    placement = jnp.where(is_positive, negatives_below / n, positives_above / p)
    # back to the original order: position order[k] holds the k-th sorted value
    placement = jnp.zeros_like(placement).at[ranked.order].set(placement)
    zero = jnp.zeros((), dtype)
    return jnp.where(labels == 1, placement, zero), jnp.where(labels == 0, placement, zero)


def _covariance(components: Array, mask: Array) -> Array:
    """Sample covariance (ddof 1) across models of `components` [M, n] over the masked samples."""
    count = mask.sum()
    mean = components.sum(-1, keepdims=True) / count
    centered = jnp.where(mask, components - mean, 0.0)
    return centered @ centered.T / (count - 1)


def _components(scores: Array, labels: Array) -> tuple[Array, Array]:
    """(V10, V01), each ``[M, n]``, of ``[M, n]`` scores."""
    return jax.vmap(_structural_components, in_axes=(0, None))(scores, labels)


def _delong_moments(v10: Array, v01: Array, labels: Array) -> tuple[Array, Array]:
    """AUCs ``[M]`` and their covariance ``[M, M]`` from the structural components."""
    positive, negative = labels == 1, labels == 0
    auc = v10.sum(-1) / positive.sum()
    covariance = (
        _covariance(v10, positive) / positive.sum() + _covariance(v01, negative) / negative.sum()
    )
    return auc, covariance


def _delong_inputs(named_scores: list[tuple[str, Any]], labels: Any) -> tuple:
    """Checked scores (a tuple of ``[n]`` / ``[M, n]``), labels ``[n]`` and their bad-value flags.

    Concrete scores are exact order keys (DeLong depends on each model's order only) and stay
    on the host with the labels, so that an eager call compiles one program (`_delong_fields`).
    """
    scores = [
        validation.as_scores(validation.order_keys(value, name)[0], name, host=True)
        for name, value in named_scores
    ]
    labels = validation.as_real_array(labels, "labels", host=True)
    if any(s.ndim > 2 for s in scores) or labels.ndim != 1:
        shapes = ", ".join(f"{name} {s.shape}" for (name, _), s in zip(named_scores, scores))
        raise ValueError(
            "DeLong takes `scores` [n] or [M, n] (M models on the same samples) and `labels` [n]; "
            f"got {shapes}, labels {labels.shape}."
        )
    validation.sample_axis_shapes(
        [(name, s) for (name, _), s in zip(named_scores, scores)] + [("labels", labels)]
    )
    invalid = tuple(validation.check_finite(s, name) for (name, _), s in zip(named_scores, scores))
    shared = validation.check_binary_labels(labels)
    host = validation.host_values(labels)
    if host is not None:
        positives = int((host == 1).sum())
        if positives < 2 or host.shape[0] - positives < 2:
            raise ValueError(
                "DeLong needs at least two positives and two negatives in `labels`; "
                f"found {positives} positives and {host.shape[0] - positives} negatives."
            )
    else:  # too few of a class: the variance is undefined, mark it rather than divide by zero
        positives = (labels == 1).sum()
        shared = shared | (positives < 2) | (labels.shape[0] - positives < 2)
    return tuple(scores), labels, invalid, shared


def _stacked(scores: tuple, labels: Array, invalid: tuple, shared: Array):
    stacked = jnp.concatenate([jnp.atleast_2d(s) for s in scores])
    flags = jnp.concatenate([jnp.atleast_1d(flag) for flag in invalid]) | shared
    return stacked, (labels == 1).astype(jnp.int32), flags


@jax.jit
def _delong_fields(scores: tuple, labels: Array, invalid: tuple, shared: Array, z: Array):
    """Every field of `DeLong` for ``[M, n]`` scores, in one compiled program."""
    scores, labels, invalid = _stacked(scores, labels, invalid, shared)
    auc, covariance = _delong_moments(*_components(scores, labels), labels)
    variance = jnp.diagonal(covariance)
    half = z * jnp.sqrt(variance)
    low, high = jnp.clip(auc - half, 0, 1), jnp.clip(auc + half, 0, 1)
    auc, variance, low, high = validation.nan_where(invalid, (auc, variance, low, high))
    covariance = jnp.where(invalid[:, None] | invalid[None, :], jnp.nan, covariance)
    return DeLong(auc, variance, covariance, low, high)


@jax.jit
def _delong_test_fields(scores: tuple, labels: Array, invalid: tuple, shared: Array, z: Array):
    """Every field of `DeLongTest` for two ``[n]`` score vectors, in one compiled program."""
    scores, labels, invalid = _stacked(scores, labels, invalid, shared)
    v10, v01 = _components(scores, labels)
    # the difference's variance from the differences of the components: exactly 0 when the two
    # models order every pair alike, where var_a + var_b - 2 cov_ab would be rounding noise
    difference, variance = _delong_moments(v10[:1] - v10[1:], v01[:1] - v01[1:], labels)
    difference, standard_error = difference[0], jnp.sqrt(jnp.maximum(variance[0, 0], 0))
    degenerate = standard_error == 0
    statistic = jnp.where(
        degenerate,
        jnp.where(difference == 0, 0.0, jnp.sign(difference) * jnp.inf),
        difference / jnp.where(degenerate, 1.0, standard_error),
    )
    p_value = 2 * ndtr(-jnp.abs(statistic))
    result = (statistic, p_value, difference - z * standard_error, difference + z * standard_error)
    return DeLongTest(*validation.nan_where(invalid.any(), result))


def delong(scores: Any, labels: Any, *, confidence: float = 0.95) -> DeLong:
    """DeLong's nonparametric AUC variance and covariance (fast midrank algorithm of Sun & Xu).

    Matches pROC's `var(roc, method="delong")`, `cov(...)` and `ci.auc(..., method="delong")`.
    The interval is the Wald interval ``auc ± z·sqrt(variance)``, clipped to [0, 1]. Results are
    float32, float64 when x64 is on.

    Conventions: NaN/inf scores, labels other than 0/1 and fewer than two samples of a class raise
    `ValueError` eagerly; under jit a model with a bad score gets NaN auc, variance, bounds and
    covariance row and column, and bad labels make every field NaN.

    Args:
      scores: ``[n]`` or ``[M, n]`` scores of M models on the same samples.
      labels: ``[n]`` 0/1 labels with at least two of each class.

    Returns:
      `DeLong`: for ``[M, n]`` scores, auc/variance/low/high ``[M]`` and covariance ``[M, M]``
      (``M = 1`` included); for ``[n]`` scores, scalars (covariance too).

    References:
      DeLong, DeLong & Clarke-Pearson (1988), Biometrics 44:837-845; Sun & Xu (2014), IEEE Signal
      Processing Letters 21:1389-1393.
    """
    z = _z(confidence)
    was_1d = np.ndim(scores) == 1
    inputs = _delong_inputs([("scores", scores)], labels)
    result = _delong_fields(*inputs, np.asarray(z, validation.float_dtype()))
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
    and the confidence interval of the difference. Two models that order every pair alike have
    a zero standard error and a zero difference: statistic 0 and p-value 1, as pROC (a non-zero
    difference with zero standard error would give ±inf and p-value 0). Bad input as `delong`:
    under jit every field is NaN.
    """
    z = _z(confidence)
    if np.ndim(scores_a) != 1 or np.shape(scores_a) != np.shape(scores_b):
        raise ValueError(
            f"`scores_a` and `scores_b` must both have shape [n]; got {np.shape(scores_a)} and "
            f"{np.shape(scores_b)}."
        )
    inputs = _delong_inputs([("scores_a", scores_a), ("scores_b", scores_b)], labels)
    return _delong_test_fields(*inputs, np.asarray(z, validation.float_dtype()))
