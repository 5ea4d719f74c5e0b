"""Regression errors: mean absolute error, root mean squared error and the R² score.

Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program (`_mae`, `_rmse`, `_r2`): an eager call compiles once per input shape.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import batching, checks, coercion
from jaxmetrics._src.core.numerics import products_bound, safe_divide, weight_scale
from jaxmetrics._src.core.typing import Array, ArrayLike


def _regression_inputs(
    predictions: ArrayLike, targets: ArrayLike
) -> tuple[Array, Array, tuple[Array, Array]]:
    """(predictions, targets, flags): float arrays sharing the sample axis, and a per-batch
    `invalid` flag of each (all False for concrete inputs, which raise on NaN/inf instead).

    Concrete inputs stay numpy arrays, so that checking them dispatches no JAX op.
    """
    predictions = coercion.as_scores(predictions, "predictions", host=True)
    targets = coercion.as_scores(targets, "targets", host=True)
    coercion.sample_axis_shapes([("predictions", predictions), ("targets", targets)])
    flags = (
        checks.check_finite(predictions, "predictions"),
        checks.check_finite(targets, "targets"),
    )
    return predictions, targets, flags


def _marked(flags: tuple[Array, Array], value: Array) -> Array:
    """`value` (batch-shaped) with NaN where either input's batch element was flagged."""
    predictions_flag, targets_flag = flags
    invalid = jnp.broadcast_to(predictions_flag | targets_flag, value.shape)
    return batching.nan_where(invalid, value)


@jax.jit
def _mae(predictions: Array, targets: Array, flags: tuple[Array, Array]) -> Array:
    return _marked(flags, jnp.abs(predictions - targets).mean(-1))


def _row_scale(*deviations: Array) -> Array:
    """``[*batch, 1]``: per row, the power of two that brings the largest of the `deviations`
    below `products_bound`, so that their squares and sums cannot overflow (errors of 1e20 gave
    an RMSE of inf and an R² of NaN in float32); 1 for smaller ones, which are left exact."""
    bound = products_bound(deviations[0].dtype)
    scales = [weight_scale(jnp.abs(d), below=bound, axis=-1) for d in deviations]
    return functools.reduce(jnp.maximum, scales)  # (the deviations may broadcast)


@jax.jit
def _rmse(predictions: Array, targets: Array, flags: tuple[Array, Array]) -> Array:
    errors = predictions - targets
    scale = _row_scale(errors)
    return _marked(flags, scale[..., 0] * jnp.sqrt(((errors / scale) ** 2).mean(-1)))


@jax.jit
def _r2(predictions: Array, targets: Array, flags: tuple[Array, Array]) -> Array:
    errors, spread = targets - predictions, targets - targets.mean(-1, keepdims=True)
    scale = _row_scale(errors, spread)  # the same for both: their ratio is unchanged
    residual = ((errors / scale) ** 2).sum(-1)
    total = ((spread / scale) ** 2).sum(-1)
    return _marked(flags, 1 - safe_divide(residual, total, jnp.nan))


def mean_absolute_error(predictions: ArrayLike, targets: ArrayLike) -> Array:
    r"""Mean absolute error over the last axis.

    Matches `sklearn.metrics.mean_absolute_error` for one output (note the argument order:
    predictions first, as the losses of optax; scikit-learn takes the targets first).

    .. math:: \mathrm{MAE} = \frac1n \sum_{i=1}^n |\hat y_i - y_i|

    NaN or infinite values in either argument are bad input (docs/conventions.md). The values
    are float32 (float64 input included), float64 when `jax_enable_x64` is on.

    Args:
      predictions: ``[*batch, n]`` predicted values.
      targets: ``[*batch, n]`` true values, broadcasting against `predictions` on the batch
        axes.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.mean_absolute_error([2.5, 0.0, 2.0, 8.0], [3.0, -0.5, 2.0, 7.0])), 4)
      0.5
    """
    predictions, targets, flags = _regression_inputs(predictions, targets)
    return _mae(predictions, targets, flags)


def root_mean_squared_error(predictions: ArrayLike, targets: ArrayLike) -> Array:
    r"""Root mean squared error over the last axis.

    Matches `sklearn.metrics.root_mean_squared_error` for one output (predictions first;
    scikit-learn takes the targets first).

    .. math:: \mathrm{RMSE} = \sqrt{\frac1n \sum_{i=1}^n (\hat y_i - y_i)^2}

    Bad input and precision as `mean_absolute_error`.

    Args:
      predictions: ``[*batch, n]`` predicted values.
      targets: ``[*batch, n]`` true values, broadcasting against `predictions` on the batch
        axes.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> predictions, targets = [2.5, 0.0, 2.0, 8.0], [3.0, -0.5, 2.0, 7.0]
      >>> round(float(jm.root_mean_squared_error(predictions, targets)), 4)
      0.6124
    """
    predictions, targets, flags = _regression_inputs(predictions, targets)
    return _rmse(predictions, targets, flags)


def r2_score(predictions: ArrayLike, targets: ArrayLike) -> Array:
    r"""Coefficient of determination R²: the share of the targets' variance the predictions explain.

    Matches `sklearn.metrics.r2_score` for one output, except that constant targets (a zero
    denominator) give NaN, where scikit-learn returns 1.0 for perfect predictions and 0.0
    otherwise. Predictions first; scikit-learn takes the targets first.

    .. math:: R^2 = 1 - \frac{\sum_i (y_i - \hat y_i)^2}{\sum_i (y_i - \bar y)^2}

    Constant targets give NaN (R² is undefined); bad input and precision as
    `mean_absolute_error`. R² is negative for predictions worse than the targets' mean.

    Args:
      predictions: ``[*batch, n]`` predicted values.
      targets: ``[*batch, n]`` true values, broadcasting against `predictions` on the batch
        axes.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.r2_score([2.5, 0.0, 2.0, 8.0], [3.0, -0.5, 2.0, 7.0])), 4)
      0.9486
    """
    predictions, targets, flags = _regression_inputs(predictions, targets)
    return _r2(predictions, targets, flags)
