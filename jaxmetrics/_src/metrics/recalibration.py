"""Calibration you can test: logistic recalibration on the logit of the probabilities
(calibration-in-the-large and the calibration slope, each with a Wald interval) and
Spiegelhalter's z-test. The binned tests (Hosmer-Lemeshow, the debiased calibration error) are
in `binned_calibration`.

Both fits are Newton's method on the weighted log-likelihood, with the step halved until the
log-likelihood does not drop, in a bounded `lax.while_loop`: one compiled program that runs
eagerly, under `jax.jit` and `jax.vmap`, and inside `bootstrap` (whose resamples are weights).
Each public function checks its inputs with `calibration.probability_inputs`, then runs that
program, which marks a bad batch element NaN under `jax.jit`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxmetrics._src.core import batching, coercion, kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide, weight_scale
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics.calibration import any_flagged, probability_inputs
from jaxmetrics._src.stats.intervals import normal_quantile


class Estimate(NamedTuple):
    """A maximum-likelihood estimate with its Wald interval.

    What `calibration_intercept` and `calibration_slope` return.

    Attributes:
      value: ``[*batch]`` the estimate (NaN where the fit has no finite maximum).
      low: ``[*batch]`` ``value - z * se``, with z the normal quantile of the confidence level
        and se the standard error from the observed information at the estimate.
      high: ``[*batch]`` ``value + z * se``.
    """

    value: Array
    low: Array
    high: Array


class SpiegelhalterTest(NamedTuple):
    """Spiegelhalter's z-test of calibration (what `spiegelhalter_test` returns).

    Attributes:
      statistic: ``[*batch]`` the z statistic; positive when the outcomes are further from the
        probabilities than calibration predicts.
      p_value: ``[*batch]`` its two-sided p-value ``2 Phi(-|z|)``.
    """

    statistic: Array
    p_value: Array


# ----------------------------------------------------------------------------- the fit

# tries of a step (taken or halved): 3-14 were needed from a = 0, b = 1 to true values from
# (0, 1) to (-8, 0.05), (6, 6) and (0, -1)
_MAX_TRIES = 100


def clipped_logit(probs: Array) -> Array:
    """logit(p) of the probabilities clipped to ``[eps, 1 - eps]``, eps the machine epsilon of
    their float type (float32: logit(p) in [-15.9, 15.9]; float64: [-36.0, 36.0])."""
    eps = jnp.finfo(probs.dtype).eps
    clipped = jnp.clip(probs, eps, 1 - eps)
    return jnp.log(clipped) - jnp.log1p(-clipped)


def _newton(logit: Array, labels: Array, weights: Array, *, slope: bool):
    """(estimate, covariance, converged) of one sample vector's logistic recalibration with
    frequency weights: theta = (a, b) of ``logit P(y=1) = a + b * logit`` with `slope`, else
    theta = (a,) of ``a + logit``; started at perfect calibration (a = 0, b = 1).

    One loop tries a step: taken if the log-likelihood does not drop by more than its rounding
    (then the next Newton step is computed), else halved. The log-likelihood is concave, so
    this climbs to the maximum when there is one. The loop stops after a full Newton step that
    moves no parameter by more than ``tol * (1 + |theta|)``, or after `_MAX_TRIES` tries.
    Sums, not matrix products: a float32 dot may run in TF32 or bf16 on an accelerator.
    """
    dtype = logit.dtype
    eps = jnp.finfo(dtype).eps
    tol = jnp.sqrt(eps) / 8  # float32: 4.3e-5; what is left after that step is ~tol^2
    sign = 2 * labels - 1

    def newton(theta):
        """(log-likelihood, its rounding, Newton step, information) at `theta`."""
        eta = theta[0] + (theta[1] * logit if slope else logit)
        # one exponential for the loss and the probability: with e = exp(-|eta|) in (0, 1],
        # y eta - log(1 + e^eta) = -softplus(-sign eta) = -(max(-sign eta, 0) + log1p(e)),
        # sigmoid(eta) = (1 or e) / (1 + e) and sigmoid(eta) (1 - sigmoid(eta)) = e / (1 + e)^2
        e = jnp.exp(-jnp.abs(eta))
        losses = (weights * (jnp.maximum(-sign * eta, 0) + jnp.log1p(e))).sum()
        mu = jnp.where(eta >= 0, 1, e) / (1 + e)
        residual, curvature = weights * (labels - mu), weights * e / (1 + e) ** 2
        if slope:
            score = jnp.stack([residual.sum(), (residual * logit).sum()])
            cross = (curvature * logit).sum()
            information = jnp.stack(
                [
                    jnp.stack([curvature.sum(), cross]),
                    jnp.stack([cross, (curvature * logit**2).sum()]),
                ]
            )
        else:
            score, information = residual.sum()[None], curvature.sum()[None, None]
        step = (_inverse(information) * score).sum(-1)
        return -losses, 16 * eps * losses, step, information

    def attempt(state):
        theta, step, size, log_likelihood, rounding, _, information, tries = state
        candidate = theta + size * step
        new_log_likelihood, new_rounding, new_step, new_information = newton(candidate)
        taken = (new_log_likelihood >= log_likelihood - rounding) | (size < 2.0**-40)
        # the size of a full step just taken (inf after a halved one): the loop stops on it
        full = (size == 1) & (tries > 0)  # the first try only evaluates the start
        moved = jnp.where(full, jnp.max(jnp.abs(step) / (1 + jnp.abs(theta))), jnp.inf)
        keep = lambda new, old: jnp.where(taken, new, old)  # noqa: E731
        return (
            keep(candidate, theta),
            keep(new_step, step),
            keep(jnp.ones((), dtype), size / 2),
            keep(new_log_likelihood, log_likelihood),
            keep(new_rounding, rounding),
            keep(moved, jnp.inf),
            keep(new_information, information),
            tries + 1,
        )

    def going(state):
        return (state[5] > tol) & (state[7] < _MAX_TRIES)  # a NaN step stops it

    # the first try takes a step of 0 from the start, so `newton` is traced once, in the loop
    start = jnp.array([0.0, 1.0] if slope else [0.0], dtype)
    state = (
        start,
        jnp.zeros_like(start),
        jnp.ones((), dtype),
        jnp.asarray(-jnp.inf, dtype),
        jnp.zeros((), dtype),
        jnp.asarray(jnp.inf, dtype),
        jnp.zeros((start.size, start.size), dtype),
        jnp.int32(0),
    )
    theta, _, _, _, _, moved, information, _ = jax.lax.while_loop(going, attempt, state)
    return theta, _inverse(information), moved <= tol


def _inverse(matrix: Array) -> Array:
    """The inverse of a 1x1 or 2x2 matrix, written out (no LU factorisation to compile)."""
    if matrix.shape[-1] == 1:
        return 1 / matrix
    (a, b), (c, d) = matrix[0], matrix[1]
    return jnp.array([[d, -b], [-c, a]]) / (a * d - b * c)


def _fit_kernel(probs, labels, weights, z, *, slope):
    """(value, low, high) of one sample vector: the slope's, or the intercept's with the slope
    fixed at 1; NaN where the maximum-likelihood estimate does not exist."""
    dtype = float_dtype()
    logit = clipped_logit(probs.astype(dtype))
    labels = jnp.broadcast_to(labels == 1, logit.shape)
    weights = jnp.broadcast_to(
        jnp.ones((), dtype) if weights is None else weights.astype(dtype), logit.shape
    )
    present = weights > 0
    positives, negatives = present & labels, present & ~labels
    if slope:
        # logit P = a + b x has no finite maximum iff the classes are (quasi-)separated on x:
        # every positive at or above every negative, or the reverse (one class only included)
        low_positive = jnp.min(jnp.where(positives, logit, jnp.inf))
        high_positive = jnp.max(jnp.where(positives, logit, -jnp.inf))
        low_negative = jnp.min(jnp.where(negatives, logit, jnp.inf))
        high_negative = jnp.max(jnp.where(negatives, logit, -jnp.inf))
        exists = (high_negative > low_positive) & (high_positive > low_negative)
    else:  # logit P = a + x: a finite maximum iff both classes are present
        exists = positives.any() & negatives.any()
    # the fit is the same for weights times any constant, and its information scales with them:
    # weights above 1 are scaled down by a power of two (exactly) to at most 1, so that the 2 x 2
    # information's determinant cannot overflow (weights of 1e30 gave the start, slope 1)
    scale = weight_scale(weights)
    theta, covariance, converged = _newton(
        logit, labels.astype(dtype), weights / scale, slope=slope
    )
    index = 1 if slope else 0
    value = jnp.where(exists & converged, theta[index], jnp.nan)
    half = z * jnp.sqrt(covariance[index, index] / scale)
    return value, value - half, value + half


@functools.partial(kernels.sample_jit, static_argnames=("slope",))
def _recalibration(probs, labels, weights, flags, z, *, slope) -> Estimate:
    kernel = functools.partial(_fit_kernel, z=z, slope=slope)
    estimate = Estimate(*batching.map_batch(kernel, probs, labels, weights))
    return batching.nan_where(any_flagged(flags, estimate.value.shape), estimate)


def _fit(probs, labels, sample_weight, confidence, *, slope: bool) -> Estimate:
    z = normal_quantile(confidence)
    coercion.reject_single_sample_rows([("probs", probs)])
    probs, labels, weights, flags = probability_inputs(probs, labels, sample_weight)
    return _recalibration(probs, labels, weights, flags, np.asarray(z, float_dtype()), slope=slope)


def calibration_intercept(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    confidence: float = 0.95,
) -> Estimate:
    r"""Calibration-in-the-large: the intercept of a logistic recalibration with slope 1.

    The maximum-likelihood a of the logistic model with ``logit(p)`` as an offset, and its Wald
    interval; matches ``statsmodels.api.GLM(labels, ones, family=Binomial(),
    offset=logit(probs), freq_weights=sample_weight).fit()`` (``params``, ``conf_int()``, with
    `probs` clipped as below).
    a = 0 when the probabilities are right on average; a > 0 when they are too low (events
    more frequent than predicted), a < 0 when they are too high.

    .. math::

      \operatorname{logit} P(y_i = 1) = a + \operatorname{logit}(p_i), \qquad
      a \pm z_{(1+c)/2} \Big/ \sqrt{\textstyle\sum_i w_i \hat\mu_i (1 - \hat\mu_i)}

    with :math:`\hat\mu_i` the fitted probabilities. Fitted by Newton's method (step halving,
    at most 100 tries, from a = 0), so it runs under `jax.jit`, `jax.vmap` and `bootstrap`.
    Probabilities are clipped to ``[eps, 1 - eps]``, eps the machine epsilon of the float type
    of the results (float32: logit in [-15.9, 15.9]), so p = 0 or 1 is allowed, but a confident
    mistake (p = 1 with y = 0) then weighs as much as that type lets it, and the result depends
    on the type. Computed in float32 unless x64 is on.

    NaN (value and bounds) where a has no finite maximum: one class only (of positive weight),
    a zero total weight, a fit that does not converge. Bad input and precision:
    docs/conventions.md; a sample axis of length 1 under batch axes (``[n, 1]``) raises.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      sample_weight: optional ``[*batch, n]`` non-negative frequency weights (an integer weight
        w counts the sample w times), broadcasting against `probs`; so it can be bootstrapped.
      confidence: the level of the Wald interval, in (0, 1).

    Returns:
      `Estimate` of arrays of shape ``[*batch]``.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> rng = np.random.default_rng(0)
      >>> probs = rng.uniform(0.05, 0.95, 400)
      >>> labels = rng.random(400) < probs**1.5   # events rarer than predicted: a < 0
      >>> fit = jm.calibration_intercept(probs, labels)
      >>> [round(float(x), 3) for x in fit]
      [-0.672, -0.906, -0.439]

    References:
      Cox (1958), "Two further applications of a model for binary regression", Biometrika
      45:562-565. Van Calster et al. (2019), "Calibration: the Achilles heel of predictive
      analytics", BMC Medicine 17:230.
    """
    return _fit(probs, labels, sample_weight, confidence, slope=False)


def calibration_slope(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
    confidence: float = 0.95,
) -> Estimate:
    r"""Calibration slope: b of the logistic recalibration ``logit P(y=1) = a + b logit(p)``.

    The maximum-likelihood b and its Wald interval, the intercept a a nuisance parameter;
    matches ``statsmodels.api.GLM(labels, [1, logit(probs)], family=Binomial(),
    freq_weights=sample_weight).fit()`` (``params[1]``, ``conf_int()[1]``). b = 1 for
    calibrated probabilities; b < 1 when they are too extreme (typical of an overfitted model),
    b > 1 when they are too moderate.

    .. math::

      \operatorname{logit} P(y_i = 1) = a + b \operatorname{logit}(p_i), \qquad
      b \pm z_{(1+c)/2} \sqrt{(I^{-1})_{bb}}, \qquad
      I = \sum_i w_i \hat\mu_i (1 - \hat\mu_i) \begin{pmatrix} 1 & x_i \\ x_i & x_i^2
      \end{pmatrix}

    with :math:`x_i = \operatorname{logit}(p_i)` and :math:`\hat\mu_i` the fitted probabilities.
    Fitted by Newton's method (step halving, at most 100 tries, from a = 0, b = 1). Clipping of
    p = 0 or 1, precision and bad input as `calibration_intercept`.

    NaN (value and bounds) where b has no finite maximum: the classes (of positive weight) are
    separated by ``logit(p)`` (every positive at or above every negative, or the reverse; one
    class only, or a single distinct probability, included), a zero total weight, a fit that
    does not converge.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      sample_weight: optional ``[*batch, n]`` non-negative frequency weights (an integer weight
        w counts the sample w times), broadcasting against `probs`; so it can be bootstrapped.
      confidence: the level of the Wald interval, in (0, 1).

    Returns:
      `Estimate` of arrays of shape ``[*batch]``.

    Examples:
      >>> import jax
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> rng = np.random.default_rng(0)
      >>> probs = rng.uniform(0.05, 0.95, 400)
      >>> labels = rng.random(400) < probs
      >>> extreme = 1 / (1 + ((1 - probs) / probs) ** 2)  # logit doubled: slope 1/2
      >>> [round(float(x), 3) for x in jm.calibration_slope(extreme, labels)]
      [0.585, 0.467, 0.704]

      A bootstrap interval instead of the Wald one (resamples are weights):

      >>> result = jm.bootstrap(
      ...     lambda p, y, sample_weight: jm.calibration_slope(
      ...         p, y, sample_weight=sample_weight).value,
      ...     extreme, labels, key=jax.random.key(0), num_resamples=200)
      >>> round(float(result.estimate), 3), bool(result.low < result.estimate < result.high < 1)
      (0.585, True)

    References:
      Cox (1958), "Two further applications of a model for binary regression", Biometrika
      45:562-565. Steyerberg (2019), "Clinical Prediction Models", 2nd ed., Springer, ch. 15.
    """
    return _fit(probs, labels, sample_weight, confidence, slope=True)


# ----------------------------------------------------------------------------- Spiegelhalter


@kernels.sample_jit
def _spiegelhalter(probs, labels, weights, flags) -> SpiegelhalterTest:
    y = (labels == 1).astype(probs.dtype)
    weights = jnp.ones((), probs.dtype) if weights is None else weights.astype(probs.dtype)
    numerator = (weights * (y - probs) * (1 - 2 * probs)).sum(-1)
    variance = (weights * (1 - 2 * probs) ** 2 * probs * (1 - probs)).sum(-1)
    statistic = safe_divide(numerator, jnp.sqrt(variance))
    result = SpiegelhalterTest(statistic, 2 * ndtr(-jnp.abs(statistic)))
    return batching.nan_where(any_flagged(flags, statistic.shape), result)


def spiegelhalter_test(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> SpiegelhalterTest:
    r"""Spiegelhalter's z-test of the null hypothesis that the probabilities are calibrated.

    Under calibration the Brier score has mean :math:`\sum_i w_i p_i (1 - p_i)` and a known
    variance; z is its standardised deviation from that mean, normal under the null. There is
    no scikit-learn or statsmodels function; R's ``rms::val.prob`` reports it as "S:z" and
    "S:p". Unlike the Hosmer-Lemeshow test it needs no grouping.

    .. math::

      z = \frac{\sum_i w_i (y_i - p_i)(1 - 2 p_i)}
               {\sqrt{\sum_i w_i (1 - 2 p_i)^2\, p_i (1 - p_i)}}, \qquad
      p = 2\,\Phi(-|z|)

    Defined with one class only (calibration needs no second class). Probabilities of 0, 1/2
    and 1 add nothing to the variance: NaN where every probability is one of them (or the total
    weight is 0); a confident mistake (p = 1, y = 0) among other probabilities makes z large.
    Bad input as docs/conventions.md; a sample axis of length 1 under batch axes raises.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      sample_weight: optional ``[*batch, n]`` non-negative frequency weights, broadcasting
        against `probs`.

    Returns:
      `SpiegelhalterTest` of arrays of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> test = jm.spiegelhalter_test([0.1, 0.2, 0.7, 0.9, 0.4], [0, 0, 1, 1, 1])
      >>> round(float(test.statistic), 3), round(float(test.p_value), 3)
      (-0.602, 0.547)

    References:
      Spiegelhalter (1986), "Probabilistic prediction in patient management and clinical
      trials", Statistics in Medicine 5:421-433.
    """
    coercion.reject_single_sample_rows([("probs", probs)])
    probs, labels, weights, flags = probability_inputs(probs, labels, sample_weight)
    return _spiegelhalter(probs, labels, weights, flags)
