"""DeLong's test of two AUCs measured on different samples (unpaired), with Welch-style df.

Each AUC and its DeLong variance come from `delong`'s structural components, one sort per
sample set; the two variances add, as for independent estimates.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxmetrics._src.core import batching, kernels
from jaxmetrics._src.core.beta import continued_fraction
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_probability_level
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.stats.delong import (
    components,
    delong_inputs,
    delong_moments,
    stacked,
    z_statistic,
)


class DeLongUnpairedTest(NamedTuple):
    """Unpaired DeLong test of AUC_a - AUC_b (what `delong_test_unpaired` returns).

    Attributes:
      statistic: pROC's D, ``(AUC_a - AUC_b) / sqrt(Var_a + Var_b)``, a scalar.
      degrees_of_freedom: the Welch-Satterthwaite degrees of freedom of D's t distribution.
      p_value: the two-sided p-value ``2 T_df(-|D|)``.
      difference: ``AUC_a - AUC_b``.
      low: the lower bound of the interval ``difference - t sqrt(Var_a + Var_b)``, with t the
        quantile of the same t distribution (not clipped).
      high: the upper bound of that interval.
    """

    statistic: Array
    degrees_of_freedom: Array
    p_value: Array
    difference: Array
    low: Array
    high: Array


def _auc_and_variance(scores: tuple, labels: Array, invalid: tuple, shared: Array):
    scores, labels, flags = stacked(scores, labels, invalid, shared)
    auc, covariance = delong_moments(*components(scores, labels, None), labels, None)
    return auc[0], covariance[0, 0], flags[0]


def _log_gamma_ratio(a: Array) -> Array:
    """``lgamma(a + 1/2) - lgamma(a)`` without the cancellation of two large lgammas.

    Shifted by ten (``Gamma(z + 1) = z Gamma(z)``) into Stirling's series, whose terms past
    ``z^-7`` are below 1e-12 at z >= 10: float32 keeps its relative precision at any a, where
    ``lgamma(a + 1/2) - lgamma(a)`` itself loses ~1e-4 at a ~ 100.
    """
    shifts = jnp.arange(10, dtype=a.dtype)
    below = jnp.log1p(0.5 / (a[..., None] + shifts)).sum(-1)
    z = a + 10
    stirling = (
        jnp.log(z) / 2
        + (z * jnp.log1p(0.5 / z) - 0.5)
        + (1 / (z + 0.5) - 1 / z) / 12
        - (1 / (z + 0.5) ** 3 - 1 / z**3) / 360
        + (1 / (z + 0.5) ** 5 - 1 / z**5) / 1260
        - (1 / (z + 0.5) ** 7 - 1 / z**7) / 1680
    )
    return stirling - below


def _hill_cutoff(dtype) -> float:
    """Degrees of freedom past which Hill's normal deviate replaces the continued fraction.

    Hill's relative error falls as df^-2: about 1e-6 at 300 df, 1e-11 at 10^5; the continued
    fraction's length grows as sqrt(df), and in float32 it collects ~1e-5 of rounding by 1000.
    """
    return 300.0 if dtype == jnp.float32 else 1e5


def _t_tail(x: Array, y: Array, df: Array) -> Array:
    """Two-sided tail ``2 T_df(-|t|)`` of ``x = df / (df + t^2)`` and ``y = t^2 / (df + t^2)``.

    Both are given (x + y = 1), so the logarithm of the smaller one never rounds. Up to the
    cutoff it is ``I_x(df/2, 1/2)``: the continued fraction of that form when it converges fast
    (small p), of the complement ``1 - I_y(1/2, df/2)`` otherwise (p above ~0.08), so a small
    p keeps its relative precision. Past it, Hill's (1970) asymptotic normal deviate.
    """
    log_x = jnp.where(x < 0.5, jnp.log(x), jnp.log1p(-y))
    log_y = jnp.where(y < 0.5, jnp.log(y), jnp.log1p(-x))
    cutoff = _hill_cutoff(x.dtype)
    hill = _hill_tail(-log_x, df)
    df = jnp.minimum(df, cutoff)  # the fraction's value is discarded past the cutoff
    a = df / 2
    direct = x < (a + 1) / (a + 2.5)
    first, second = jnp.where(direct, a, 0.5), jnp.where(direct, 0.5, a)
    log_beta = np.log(np.sqrt(np.pi)) - _log_gamma_ratio(a)  # log B(a, 1/2) = log B(1/2, a)
    log_front = a * log_x + 0.5 * log_y - jnp.log(first) - log_beta
    value = jnp.exp(log_front) * continued_fraction(jnp.where(direct, x, y), first, second)
    fraction = jnp.where(direct, value, 1 - value)
    return jnp.where(df >= cutoff, hill, fraction)


def _hill_tail(log_ratio: Array, df: Array) -> Array:
    """``2 T_df(-|t|)`` from ``log_ratio = log(1 + t^2 / df)`` by Hill's normal deviate.

    Hill (1970), Algorithm 395: ``w = sqrt(a log(1 + t^2/df))`` with ``a = df - 1/2``, corrected
    by a rational term in ``w^2`` over ``48 a^2``, is a standard normal deviate to O(df^-2).
    """
    a = df - 0.5
    b = 48 * a * a
    square = a * log_ratio
    c = (
        (((-0.4 * square - 3.3) * square - 24) * square - 85.5) / (0.8 * square * square + 100 + b)
        + square
        + 3
    )
    return 2 * ndtr(-jnp.sqrt(square) * (1 + c / b))


def _t_p_value(statistic: Array, df: Array) -> Array:
    """``2 T_df(-|t|)``, the two-sided p-value of a t statistic."""
    square = statistic * statistic
    infinite = jnp.isinf(statistic)
    x = jnp.where(infinite, 0.0, df / (df + square))
    y = jnp.where(infinite, 1.0, square / (df + square))
    return _t_tail(x, y, df)


def _t_quantile(alpha: Array, df: Array) -> Array:
    """The t > 0 with ``2 T_df(-t) = alpha``, by bisection on log t over [-30, 30]."""

    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) / 2
        above = _t_p_value(jnp.exp(middle), df) > alpha  # the tail shrinks as t grows
        return jnp.where(above, middle, low), jnp.where(above, high, middle)

    start = (jnp.full_like(df, -30.0), jnp.full_like(df, 30.0))
    low, high = jax.lax.fori_loop(0, 60, halve, start)
    return jnp.exp((low + high) / 2)


@kernels.jit  # (ranks: the kernel branch is part of its key)
def _unpaired_fields(inputs_a: tuple, inputs_b: tuple, alpha: Array) -> DeLongUnpairedTest:
    auc_a, variance_a, invalid_a = _auc_and_variance(*inputs_a)
    auc_b, variance_b, invalid_b = _auc_and_variance(*inputs_b)
    size_a, size_b = inputs_a[1].shape[0], inputs_b[1].shape[0]
    variance = variance_a + variance_b
    difference = auc_a - auc_b
    standard_error = jnp.sqrt(jnp.maximum(variance, 0))
    degenerate = standard_error == 0
    statistic = z_statistic(difference, standard_error)
    safe_variance = jnp.where(degenerate, 1.0, variance)
    df = safe_variance**2 / (variance_a**2 / (size_a - 1) + variance_b**2 / (size_b - 1))
    df = jnp.where(degenerate, jnp.nan, df)
    # with a zero standard error the statistic alone decides: p = 1 (no difference) or 0
    p_value = jnp.where(
        degenerate,
        jnp.where(difference == 0, 1.0, 0.0),
        _t_p_value(statistic, jnp.where(degenerate, 1.0, df)),
    )
    half = jnp.where(
        degenerate, 0.0, _t_quantile(alpha, jnp.where(degenerate, 1.0, df)) * standard_error
    )
    result = DeLongUnpairedTest(
        statistic, df, p_value, difference, difference - half, difference + half
    )
    return DeLongUnpairedTest(*batching.nan_where(invalid_a | invalid_b, result))


def delong_test_unpaired(
    scores_a: ArrayLike,
    labels_a: ArrayLike,
    scores_b: ArrayLike,
    labels_b: ArrayLike,
    *,
    confidence: float = 0.95,
) -> DeLongUnpairedTest:
    r"""Unpaired DeLong test of two AUCs measured on different samples (Welch-style t test).

    Matches pROC's ``roc.test(roc_a, roc_b, method="delong", paired=FALSE)``: the statistic D,
    its degrees of freedom and the two-sided p-value. pROC gives no interval of the difference
    for this test; the one here is the set of differences the same t test does not reject.

    .. math::

      D = \frac{A_a - A_b}{\sqrt{V_a + V_b}}, \qquad
      \nu = \frac{(V_a + V_b)^2}{V_a^2 / (N_a - 1) + V_b^2 / (N_b - 1)}, \qquad
      p = 2\, T_\nu(-|D|)

    with A and V each sample set's AUC and DeLong variance (see `delong`), N its number of
    samples (both classes) and T_nu the t distribution's CDF; the interval of the difference is
    ``A_a - A_b ± t sqrt(V_a + V_b)`` with ``2 T_nu(-t) = 1 - confidence``.

    When both variances are 0 (e.g. each set's scores separate its classes perfectly), nu is
    undefined (NaN) and the statistic alone decides: 0 with p-value 1 for equal AUCs, ±inf with
    p-value 0 otherwise, and the interval is the difference itself. Bad input as `delong`
    (fewer than two samples of a class in either set included); under `jax.jit` it makes every
    field NaN. There is no `sample_weight`: nu counts the samples N_a and N_b, which would need
    frequency weights' totals; with such weights, repeat the rows. Precision as `delong`; the t
    distribution's tail is computed to a relative 1e-5 in float32 and 1e-11 in float64 at any
    degrees of freedom (a continued fraction of the incomplete beta function; Hill's normal
    deviate past 300 df, past 10^5 under x64).

    Args:
      scores_a: ``[n_a]`` scores of the first sample set.
      labels_a: ``[n_a]`` its labels in {0, 1} or bool, with at least two of each class.
      scores_b: ``[n_b]`` scores of the second sample set.
      labels_b: ``[n_b]`` its labels.
      confidence: the level of the interval of the difference, in (0, 1).

    Returns:
      `DeLongUnpairedTest` of scalars.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores_a = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # AUC 0.8125
      >>> labels_a = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> scores_b = [0.8, 0.3, 0.5, 0.6, 0.2, 0.4]  # AUC 7/9
      >>> labels_b = [1, 1, 0, 1, 0, 0]
      >>> test = jm.delong_test_unpaired(scores_a, labels_a, scores_b, labels_b)
      >>> round(float(test.statistic), 3), round(float(test.degrees_of_freedom), 2)
      (0.116, 9.29)
      >>> round(float(test.p_value), 3)
      0.911

    References:
      DeLong, DeLong & Clarke-Pearson (1988), Biometrics 44:837-845. Robin et al. (2011),
      "pROC: an open-source package for R and S+ to analyze and compare ROC curves", BMC
      Bioinformatics 12:77.
    """
    alpha = 1 - check_probability_level(confidence, "confidence")
    for name, value in (("scores_a", scores_a), ("scores_b", scores_b)):
        if np.ndim(value) != 1:
            raise ValueError(f"`{name}` must have shape [n]; got {np.shape(value)}.")
    scores_a, labels_a, _, invalid_a, shared_a = delong_inputs(
        [("scores_a", scores_a)], labels_a, labels_name="labels_a"
    )
    scores_b, labels_b, _, invalid_b, shared_b = delong_inputs(
        [("scores_b", scores_b)], labels_b, labels_name="labels_b"
    )
    return _unpaired_fields(
        (scores_a, labels_a, invalid_a, shared_a),
        (scores_b, labels_b, invalid_b, shared_b),
        np.asarray(alpha, float_dtype()),
    )
