"""Calibration (Brier score, log loss, ECE, reliability tables) and regression errors.

Binning goes through the ranking engine: the probabilities are sorted once and every bin's count,
positives and probability mass are differences of prefix sums read at the bin edges, so there is
no scatter and no per-bin loop.
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import intervals, sorting, validation
from jaxmetrics._src.counts import safe_divide

Array = jax.Array

_STRATEGIES = ("uniform", "quantile")
_NORMS = ("l1", "l2", "max")


def _probability_inputs(probs: Any, labels: Any, sample_weight: Any = None):
    """(probs, labels 0/1 int32, weights, invalid): shapes checked, values raised on or flagged.

    Probabilities outside [0, 1] (NaN and inf included), labels other than 0/1 and negative or
    non-finite weights raise `ValueError` eagerly, and flag their batch element under jit.
    Concrete values are checked in numpy, so a closed-over constant inside `jax.jit` is checked
    (and raised on) at trace time.
    """
    # check the caller's values where known (float64 stays float64: 1 + 1e-12 is not rounded in)
    known = validation.host_values(probs)
    probs = validation.as_scores(probs, "probs")
    labels = validation.as_real_array(labels, "labels")
    weights = (
        None if sample_weight is None else validation.as_real_array(sample_weight, "sample_weight")
    )
    batch_shape = validation.sample_axis_shapes(
        [("probs", probs), ("labels", labels), ("sample_weight", weights)]
    )
    # written so that NaN fails too: its comparisons are False
    invalid = validation.check_values(
        probs if known is None else known,
        "probs",
        lambda p: ~((p >= 0) & (p <= 1)),
        "be probabilities in [0, 1]",
    ) | validation.check_binary_labels(labels)
    if weights is not None:
        invalid = invalid | validation.check_weights(weights)
    labels = (labels == 1).astype(jnp.int32)
    return probs, labels, weights, jnp.broadcast_to(invalid, batch_shape)


def _weighted_mean(values: Array, weights: Array | None) -> Array:
    if weights is None:
        return values.mean(axis=-1)
    weights = weights.astype(values.dtype)
    return safe_divide((values * weights).sum(-1), weights.sum(-1))


def _on_host_in_float64(probs: Any, labels: Any, sample_weight: Any):
    """(probs, labels, weights) as numpy float64 arrays when an eager call got float64
    probabilities while x64 is off (JAX would round them to float32), else None."""
    if jax.config.jax_enable_x64:
        return None
    host = [validation.host_values(x) for x in (probs, labels, sample_weight)]
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
    return jnp.asarray(value, validation.float_dtype())


def brier_score(probs: Any, labels: Any, *, sample_weight: Any = None) -> Array:
    r"""Brier score, the mean squared difference between probability and 0/1 outcome.

    Matches `sklearn.metrics.brier_score_loss`. Lower is better; it mixes calibration and
    discrimination (seed 001).

    .. math:: \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}

    Precision: called eagerly on float64 input, computed in float64 on the host (so it equals
    scikit-learn's float64 result); under jit inputs are what JAX made them, float32 unless x64
    is on (then float64 end to end).

    Conventions: probabilities outside [0, 1] (NaN included), labels other than 0/1 and negative
    or non-finite weights raise `ValueError` eagerly; under jit that batch element is NaN. A zero
    total weight gives NaN.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` 0/1 labels.
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      ``[*batch]`` scores.
    """
    probs_in = probs
    probs, labels, weights, invalid = _probability_inputs(probs, labels, sample_weight)
    host = _on_host_in_float64(probs_in, labels, sample_weight)
    if host is not None:
        p, y, w = host
        return _host_mean((p - (y == 1)) ** 2, w)
    value = _weighted_mean((probs - labels) ** 2, weights)
    return validation.nan_where(invalid, value)


def _clipped_log_loss(probs, labels, xp) -> Any:
    """scikit-learn's per-sample log loss: the probability of the true class, clipped to
    [eps, 1 - eps] with eps the machine epsilon of the probabilities' dtype."""
    eps = xp.finfo(probs.dtype).eps
    of_truth = xp.where(labels == 1, probs, 1 - probs)
    return -xp.log(xp.clip(of_truth, eps, 1 - eps))


def log_loss(probs: Any, labels: Any, *, sample_weight: Any = None) -> Array:
    r"""Binary cross-entropy of probabilities; matches `sklearn.metrics.log_loss`.

    As scikit-learn does, the probability given to the true class is clipped to
    ``[eps, 1 - eps]`` with ``eps`` the machine epsilon of the input's dtype (float32: 1.19e-7, a
    confident mistake costs about 15.9; float64: 2.2e-16, about 36.0), not infinity.

    .. math:: -\frac{\sum_i w_i [y_i \log p_i + (1 - y_i) \log(1 - p_i)]}{\sum_i w_i}

    Precision: called eagerly on float64 input, computed in float64 on the host (clipped with the
    float64 eps, so it equals scikit-learn's float64 result); under jit inputs are what JAX made
    them, float32 unless x64 is on (then float64 end to end).

    Conventions: bad input as `brier_score`.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` 0/1 labels.
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      ``[*batch]`` losses.
    """
    probs_in = probs
    probs, labels, weights, invalid = _probability_inputs(probs, labels, sample_weight)
    host = _on_host_in_float64(probs_in, labels, sample_weight)
    if host is not None:
        p, y, w = host
        return _host_mean(_clipped_log_loss(p, y, np), w)
    losses = _clipped_log_loss(probs, labels, jnp)
    return validation.nan_where(invalid, _weighted_mean(losses, weights))


class ReliabilityTable(NamedTuple):
    """Per-bin calibration, ``[*batch, num_bins]`` each; empty bins are kept (count 0, NaN rates).

    `fraction_positive[count > 0]` and `mean_predicted[count > 0]` equal what
    `sklearn.calibration.calibration_curve` returns.
    """

    fraction_positive: Array
    mean_predicted: Array
    count: Array


class ReliabilityBins(NamedTuple):
    """`ReliabilityTable`'s fields, the bins' 95% Wilson interval of the fraction of positives
    (`low`, `high`; NaN for empty bins) and the bin `edges` (``[*batch, num_bins + 1]``)."""

    fraction_positive: Array
    mean_predicted: Array
    count: Array
    low: Array
    high: Array
    edges: Array


def _bin_edges(probs: Array, num_bins: int, strategy: str) -> Array:
    if strategy == "uniform":
        # exact edges k / num_bins, rounded down to the probabilities' dtype: p <= edge then holds
        # exactly when it does in real numbers (float32(0.2) > 0.2, so it is not in the first bin)
        exact = np.linspace(0.0, 1.0, num_bins + 1)
        edges = exact.astype(probs.dtype)
        edges = np.where(edges > exact, np.nextafter(edges, edges.dtype.type(-1)), edges)
        return jnp.asarray(edges)
    return jnp.percentile(probs, jnp.linspace(0.0, 100.0, num_bins + 1), method="linear")


def _binned(probs: Array, labels: Array, num_bins: int, strategy: str):
    """(count, positives, probability mass, edges) per bin of one probability vector.

    Bins are right-closed, (e_k, e_{k+1}], the first one including its left edge, as
    scikit-learn's calibration_curve; a probability of exactly 1.0 lands in the last bin.
    """
    edges = _bin_edges(probs, num_bins, strategy)
    ranked = sorting.rank(probs)
    tallies = sorting.tally(ranked, labels, None)
    inner = edges[1:-1]
    n = probs.shape[0]

    def per_bin(prefix: Array) -> Array:
        at_edges = sorting.at_thresholds(ranked, prefix, inner, inclusive=True)
        cumulative = jnp.concatenate([jnp.zeros(1, prefix.dtype), at_edges, prefix[n:]])
        return jnp.diff(cumulative)

    count = per_bin(jnp.arange(n + 1, dtype=jnp.int32))
    positives = per_bin(tallies.positive)
    mass = per_bin(sorting.prefix_sum(ranked.scores))
    return count, positives, mass, edges


def _check_binning(num_bins: Any, strategy: str) -> int:
    validation.check_option(strategy, "strategy", _STRATEGIES)
    return validation.check_count(num_bins, "num_bins")


def reliability_bins(
    probs: Any,
    labels: Any,
    *,
    num_bins: int = 10,
    strategy: str = "uniform",
    confidence: float = 0.95,
) -> ReliabilityBins:
    """`reliability_table` with a Wilson interval per bin and the bin edges (for diagrams).

    Bad input as `reliability_table`; under jit a bad batch element has counts -1 and every
    float field NaN.
    """
    num_bins = _check_binning(num_bins, strategy)
    validation.check_probability_level(confidence, "confidence")
    probs, labels, _, invalid = _probability_inputs(probs, labels)

    def kernel(probs: Array, labels: Array) -> ReliabilityBins:
        count, positives, mass, edges = _binned(probs, labels, num_bins, strategy)
        low, high = intervals.wilson_bounds(
            positives.astype(probs.dtype), count.astype(probs.dtype), confidence=confidence
        )
        return ReliabilityBins(
            safe_divide(positives, count, jnp.nan),
            safe_divide(mass, count, jnp.nan),
            count,
            low,
            high,
            edges,
        )

    return validation.nan_where(invalid, validation.map_batch(kernel, probs, labels))


def reliability_table(
    probs: Any, labels: Any, *, num_bins: int = 10, strategy: str = "uniform"
) -> ReliabilityTable:
    """Fraction of positives and mean predicted probability per bin, for a reliability diagram.

    Same bins as `sklearn.calibration.calibration_curve` ("uniform": equal width on [0, 1];
    "quantile": edges at the quantiles of `probs`, linear interpolation); empty bins are marked
    by ``count == 0`` instead of being dropped, so the output has a fixed shape. Returns
    ``(fraction_positive, mean_predicted, count)``; `reliability_bins` adds per-bin Wilson
    intervals and the edges.

    Conventions: probabilities outside [0, 1] (NaN included) and labels other than 0/1 raise
    `ValueError` eagerly; under jit that batch element's counts are -1 (the count marker) and its
    rates NaN. A batch axis of size 1 is kept.

    >>> import jaxmetrics as jm
    >>> table = jm.reliability_table([0.1, 0.3, 0.35, 0.8, 0.9], [0, 0, 1, 1, 1], num_bins=2)
    >>> [int(c) for c in table.count], [float(f) for f in table.fraction_positive]
    ([3, 2], [0.3333333432674408, 1.0])
    """
    bins = reliability_bins(probs, labels, num_bins=num_bins, strategy=strategy)
    return ReliabilityTable(bins.fraction_positive, bins.mean_predicted, bins.count)


def expected_calibration_error(
    probs: Any,
    labels: Any,
    *,
    num_bins: int = 15,
    strategy: str = "uniform",
    norm: str = "l1",
) -> Array:
    r"""Expected calibration error: the gap between confidence and frequency, over bins.

    .. math:: \mathrm{ECE}_{l1} = \sum_b \frac{n_b}{n} \left| \bar y_b - \bar p_b \right|

    "l2" is the square root of the count-weighted mean of squared gaps, "max" the largest gap
    over non-empty bins (the maximum calibration error). Bins as `reliability_table` (15
    equal-width bins by default, after Guo et al. 2017, as in seed 001); empty bins contribute
    nothing. The value depends on the binning, so report it with the bins and the Brier score.

    Conventions: bad input as `reliability_table`; under jit a bad batch element (its bin counts
    carry the -1 marker) gives NaN.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class.
      labels: ``[*batch, n]`` 0/1 labels.

    Returns:
      ``[*batch]`` errors.
    """
    validation.check_option(norm, "norm", _NORMS)
    table = reliability_table(probs, labels, num_bins=num_bins, strategy=strategy)
    marked = (table.count < 0).any(-1)
    filled = table.count > 0
    gap = jnp.where(filled, jnp.abs(table.fraction_positive - table.mean_predicted), 0.0)
    share = table.count / table.count.sum(-1, keepdims=True)
    if norm == "l1":
        value = (share * gap).sum(-1)
    elif norm == "l2":
        value = jnp.sqrt((share * gap**2).sum(-1))
    else:
        value = jnp.where(jnp.isnan(table.mean_predicted).all(-1), jnp.nan, gap.max(-1))
    return jnp.where(marked, jnp.nan, value)


def _regression_inputs(predictions: Any, targets: Any):
    predictions = validation.as_scores(predictions, "predictions")
    targets = validation.as_scores(targets, "targets")
    validation.sample_axis_shapes([("predictions", predictions), ("targets", targets)])
    invalid = validation.check_finite(predictions, "predictions") | validation.check_finite(
        targets, "targets"
    )
    return predictions, targets, invalid


def mean_absolute_error(predictions: Any, targets: Any) -> Array:
    """Mean absolute error over the last axis; matches `sklearn.metrics.mean_absolute_error`."""
    predictions, targets, invalid = _regression_inputs(predictions, targets)
    return validation.nan_where(invalid, jnp.abs(predictions - targets).mean(-1))


def root_mean_squared_error(predictions: Any, targets: Any) -> Array:
    """Root mean squared error; matches `sklearn.metrics.root_mean_squared_error`."""
    predictions, targets, invalid = _regression_inputs(predictions, targets)
    return validation.nan_where(invalid, jnp.sqrt(((predictions - targets) ** 2).mean(-1)))


def r2_score(predictions: Any, targets: Any) -> Array:
    r"""Coefficient of determination :math:`1 - \sum e_i^2 / \sum (y_i - \bar y)^2`.

    Matches `sklearn.metrics.r2_score` for one output, except that constant targets (an empty
    denominator) give NaN (scikit-learn returns 1.0 or 0.0).
    """
    predictions, targets, invalid = _regression_inputs(predictions, targets)
    residual = ((targets - predictions) ** 2).sum(-1)
    total = ((targets - targets.mean(-1, keepdims=True)) ** 2).sum(-1)
    return validation.nan_where(invalid, 1 - safe_divide(residual, total, jnp.nan))
