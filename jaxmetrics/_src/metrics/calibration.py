"""Calibration scores: the Brier score and log loss, and the probability-input check they share
with the binned measures of `reliability`.

Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program: an eager call compiles once per input shape and options. Eager float64
probabilities are scored on the host in float64 when x64 is off.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike

# ----------------------------------------------------------------------------- inputs


def probability_inputs(
    probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None = None
) -> tuple[Array, Array, Array | None, tuple[Array, ...]]:
    """(probs, labels, weights, flags): shapes checked, values raised on or flagged.

    Probabilities outside [0, 1] (NaN and inf included), labels other than 0/1 and negative or
    non-finite weights raise `ValueError` when concrete; traced, each check gives a per-batch
    flag (`flags`, one per check, each broadcasting to the batch shape), which the compiled
    program turns into NaN. Concrete values stay numpy arrays (probs in the float type of the
    results), so that checking them dispatches no JAX op; a closed-over constant inside
    `jax.jit` is checked, and raised on, at trace time.
    """
    # the caller's values are checked (float64 stays float64: 1 + 1e-12 is not rounded in)
    given = coercion.as_real_array(probs, "probs", host=True)
    probs = coercion.as_scores(given, "probs", host=True)
    labels = coercion.as_real_array(labels, "labels", host=True)
    weights = (
        None
        if sample_weight is None
        else coercion.as_real_array(sample_weight, "sample_weight", host=True)
    )
    coercion.sample_axis_shapes([("probs", probs), ("labels", labels), ("sample_weight", weights)])
    flags = (checks.check(given, "probs", checks.PROBABILITY), checks.check_binary_labels(labels))
    if weights is not None:
        flags = (*flags, checks.check_weights(weights))
    return probs, labels, weights, flags


def any_flagged(flags: tuple[Array, ...], shape: tuple[int, ...]) -> Array:
    """The batch elements that any check flagged, broadcast to the batch `shape`."""
    return jnp.broadcast_to(functools.reduce(jnp.logical_or, flags), shape)


def _on_host_in_float64(
    probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None
) -> list[np.ndarray | None] | None:
    """[probs, labels, weights] as numpy arrays when an eager call got float64 probabilities
    while x64 is off (JAX would round them to float32), else None."""
    if jax.config.jax_enable_x64:
        return None
    host = [checks.host_values(x) for x in (probs, labels, sample_weight)]
    if host[0] is None or host[1] is None or (sample_weight is not None and host[2] is None):
        return None
    if host[0].dtype != np.float64:
        return None
    return host


def _host_mean(terms: np.ndarray, weights: np.ndarray | None) -> Array:
    """Weighted mean over the last axis in float64 (NaN for zero total weight), as float32."""
    if weights is None:
        value = terms.mean(axis=-1)
    else:
        weights = np.broadcast_to(weights.astype(np.float64), terms.shape)
        total = weights.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(total > 0, (terms * weights).sum(-1) / total, np.nan)
    # rounded and transferred without a program: `jnp.asarray` compiles one per shape
    return jax.device_put(np.asarray(value, float_dtype()))


# ----------------------------------------------------------------------------- Brier, log loss


def _weighted_mean(values: Array, weights: Array | None) -> Array:
    if weights is None:
        return values.mean(axis=-1)
    weights = weights.astype(values.dtype)
    return safe_divide((values * weights).sum(-1), weights.sum(-1))


def _clipped_log_loss(probs, labels, xp):
    """scikit-learn's per-sample log loss: the probability of the true class, clipped to
    [eps, 1 - eps] with eps the machine epsilon of the probabilities' dtype."""
    eps = xp.finfo(probs.dtype).eps
    of_truth = xp.where(labels == 1, probs, 1 - probs)
    return -xp.log(xp.clip(of_truth, eps, 1 - eps))


@jax.jit
def _brier(probs: Array, labels: Array, weights: Array | None, flags: tuple[Array, ...]) -> Array:
    value = _weighted_mean((probs - (labels == 1).astype(probs.dtype)) ** 2, weights)
    return batching.nan_where(any_flagged(flags, value.shape), value)


@jax.jit
def _log_loss(
    probs: Array, labels: Array, weights: Array | None, flags: tuple[Array, ...]
) -> Array:
    value = _weighted_mean(_clipped_log_loss(probs, labels, jnp), weights)
    return batching.nan_where(any_flagged(flags, value.shape), value)


def brier_score(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Brier score: the mean squared difference between probability and 0/1 outcome.

    Matches `sklearn.metrics.brier_score_loss` for binary labels. Lower is better; it mixes
    calibration and discrimination (a lower Brier score does not by itself mean better
    calibrated probabilities), so report it with `expected_calibration_error` and a
    `reliability_table`.

    .. math:: \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}

    A zero total weight gives NaN. Called eagerly on float64 input, it is computed in float64 on
    the host (scikit-learn's result) and returned as float32 while x64 is off. Bad input and
    precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `probs`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.brier_score([0.1, 0.9, 0.8, 0.3], [0, 1, 1, 0])), 4)
      0.0375

    References:
      Brier (1950), "Verification of forecasts expressed in terms of probability", Monthly
      Weather Review 78:1-3.
    """
    host = _on_host_in_float64(probs, labels, sample_weight)
    probs, labels, weights, flags = probability_inputs(probs, labels, sample_weight)
    if host is not None:
        p, y, w = host
        return _host_mean((p - (y == 1)) ** 2, w)
    return _brier(probs, labels, weights, flags)


def log_loss(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Binary cross-entropy of probabilities (the logarithmic score).

    Matches `sklearn.metrics.log_loss` for binary labels given the positive class's
    probability: as scikit-learn does, the probability given to the true class is clipped to
    ``[eps, 1 - eps]`` with ``eps`` the machine epsilon of the input's dtype (float32: 1.19e-7,
    a confident mistake costs about 15.9; float64: 2.2e-16, about 36.0), not infinity.

    .. math::

      \mathrm{LL} = -\frac{\sum_i w_i [y_i \log p_i + (1 - y_i) \log(1 - p_i)]}{\sum_i w_i}

    A zero total weight gives NaN; called eagerly on float64 input, it is computed in float64
    on the host and the clip uses the float64 eps. Bad input and precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `probs`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.log_loss([0.1, 0.9, 0.8, 0.3], [0, 1, 1, 0])), 4)
      0.1976

    References:
      Good (1952), "Rational decisions", Journal of the Royal Statistical Society B 14:107-114.
    """
    host = _on_host_in_float64(probs, labels, sample_weight)
    probs, labels, weights, flags = probability_inputs(probs, labels, sample_weight)
    if host is not None:
        p, y, w = host
        return _host_mean(_clipped_log_loss(p, y, np), w)
    return _log_loss(probs, labels, weights, flags)
