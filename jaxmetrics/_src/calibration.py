"""Calibration: the Brier score, log loss, reliability tables and the expected calibration error.

Binning is one kernel (`_tally_bins`): every probability gets the index of its bin, and each bin's
count, positives and probability mass are segment sums over those indices. Concrete inputs are
binned on the host, in numpy, with scikit-learn's edges and rule in the input's own precision
(float64 stays float64); traced inputs are binned in JAX. `reliability_table`,
`reliability_bins` and `expected_calibration_error` each read what they need off that kernel.

Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program: an eager call compiles once per input shape and options.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import intervals, validation
from jaxmetrics._src.counts import safe_divide
from jaxmetrics._src.typing import (
    Array,
    ArrayLike,
    BinningStrategy,
    CalibrationNorm,
    options_of,
)

# ----------------------------------------------------------------------------- inputs


def _probability_inputs(
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
    # check the caller's values where known (float64 stays float64: 1 + 1e-12 is not rounded in)
    known = validation.host_values(probs)
    probs = validation.as_scores(probs, "probs", host=True)
    labels = validation.as_real_array(labels, "labels", host=True)
    weights = (
        None
        if sample_weight is None
        else validation.as_real_array(sample_weight, "sample_weight", host=True)
    )
    validation.sample_axis_shapes(
        [("probs", probs), ("labels", labels), ("sample_weight", weights)]
    )
    # written so that NaN fails too: its comparisons are False
    flags = (
        validation.check_values(
            probs if known is None else known,
            "probs",
            lambda p: ~((p >= 0) & (p <= 1)),
            "be probabilities in [0, 1]",
        ),
        validation.check_binary_labels(labels),
    )
    if weights is not None:
        flags = (*flags, validation.check_weights(weights))
    return probs, labels, weights, flags


def _any(flags: tuple[Array, ...], shape: tuple[int, ...]) -> Array:
    """The batch elements that any check flagged, broadcast to the batch `shape`."""
    return jnp.broadcast_to(functools.reduce(jnp.logical_or, flags), shape)


def _on_host_in_float64(
    probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None
) -> list[np.ndarray | None] | None:
    """[probs, labels, weights] as numpy arrays when an eager call got float64 probabilities
    while x64 is off (JAX would round them to float32), else None."""
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
    # rounded and transferred without a program: `jnp.asarray` compiles one per shape
    return jax.device_put(np.asarray(value, validation.float_dtype()))


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
    return validation.nan_where(_any(flags, value.shape), value)


@jax.jit
def _log_loss(
    probs: Array, labels: Array, weights: Array | None, flags: tuple[Array, ...]
) -> Array:
    value = _weighted_mean(_clipped_log_loss(probs, labels, jnp), weights)
    return validation.nan_where(_any(flags, value.shape), value)


def brier_score(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Brier score: the mean squared difference between probability and 0/1 outcome.

    Matches `sklearn.metrics.brier_score_loss` for binary labels. Lower is better; it mixes
    calibration and discrimination (a lower Brier score does not by itself mean better
    calibrated probabilities), so report it with `expected_calibration_error` and a
    `reliability_table`.

    .. math:: \mathrm{BS} = \frac{\sum_i w_i (p_i - y_i)^2}{\sum_i w_i}

    Conventions: probabilities outside [0, 1] (NaN included), labels other than 0/1 and negative
    or non-finite weights raise `ValueError` eagerly, naming the argument and the index; under
    `jax.jit` that batch element is NaN. A zero total weight gives NaN. Precision: called
    eagerly on float64 input, computed in float64 on the host (so it equals scikit-learn's
    float64 result) and returned as float32; under `jax.jit` inputs are what JAX made them,
    float32 unless `jax_enable_x64` is on (then float64 end to end).

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
    probs, labels, weights, flags = _probability_inputs(probs, labels, sample_weight)
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

    Conventions: bad input, zero total weight and precision as `brier_score`; called eagerly on
    float64 input, the clip uses the float64 eps.

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
    probs, labels, weights, flags = _probability_inputs(probs, labels, sample_weight)
    if host is not None:
        p, y, w = host
        return _host_mean(_clipped_log_loss(p, y, np), w)
    return _log_loss(probs, labels, weights, flags)


# ----------------------------------------------------------------------------- binning


class ReliabilityTable(NamedTuple):
    """Per-bin calibration of fixed shape (what `reliability_table` returns).

    Empty bins are kept, with count 0 and NaN rates: ``fraction_positive[count > 0]`` and
    ``mean_predicted[count > 0]`` equal the two arrays of `sklearn.calibration.calibration_curve`.

    Attributes:
      fraction_positive: ``[*batch, num_bins]`` fraction of positives among the bin's samples.
      mean_predicted: ``[*batch, num_bins]`` mean probability of the bin's samples.
      count: ``[*batch, num_bins]`` int32 number of samples in the bin (-1 for a batch element
        whose input was bad under `jax.jit`).
    """

    fraction_positive: Array
    mean_predicted: Array
    count: Array


class ReliabilityBins(NamedTuple):
    """`ReliabilityTable`'s fields, a Wilson interval per bin and the bin edges (for diagrams).

    What `reliability_bins` returns.

    Attributes:
      fraction_positive: ``[*batch, num_bins]`` fraction of positives among the bin's samples.
      mean_predicted: ``[*batch, num_bins]`` mean probability of the bin's samples.
      count: ``[*batch, num_bins]`` int32 number of samples in the bin.
      low: ``[*batch, num_bins]`` lower bound of the Wilson interval of `fraction_positive`
        (NaN for an empty bin).
      high: ``[*batch, num_bins]`` upper bound of that interval.
      edges: ``[*batch, num_bins + 1]`` bin edges, increasing; bin b holds the probabilities in
        ``(edges[b], edges[b + 1]]`` (the first bin also its left edge). Uniform edges are
        ``k / num_bins`` rounded down to the float type of the results.
    """

    fraction_positive: Array
    mean_predicted: Array
    count: Array
    low: Array
    high: Array
    edges: Array


class _BinTallies(NamedTuple):
    """The shared binning kernel's output, ``[*batch, num_bins]`` each (edges one longer)."""

    count: Array  # int32 samples per bin
    positives: Array  # int32 positives per bin
    mass: Array  # float sum of the bin's probabilities
    edges: Array  # [*batch, num_bins + 1]


def _uniform_edges(num_bins: int, dtype) -> np.ndarray:
    """scikit-learn's float64 edges ``np.linspace(0, 1, num_bins + 1)``, rounded down to `dtype`.

    For values of `dtype`, ``p <= edge`` then holds exactly when it holds against the float64
    edge (float32(0.2) > 0.2, so it is not in the first of five bins).
    """
    exact = np.linspace(0.0, 1.0, num_bins + 1)
    edges = exact.astype(dtype)
    return np.where(edges > exact, np.nextafter(edges, edges.dtype.type(-1)), edges)


def _quantile_levels(num_bins: int) -> np.ndarray:
    """Percentile levels of the quantile edges, computed as scikit-learn computes them."""
    return np.linspace(0.0, 1.0, num_bins + 1) * 100


def _host_bins(probs: np.ndarray, num_bins: int, strategy: str) -> tuple[np.ndarray, np.ndarray]:
    """(bin index of each probability, edges) of concrete probabilities, in numpy.

    Exactly `sklearn.calibration.calibration_curve`'s binning in the probabilities' own
    precision: float64 edges (`np.linspace`, or `np.percentile` of the probabilities) and
    ``np.searchsorted(edges[1:-1], p)``, so bins are right-closed and a probability of exactly 1
    lands in the last bin. The edges returned for display are in the float type of the results.
    """
    if strategy == "uniform":
        inner = np.linspace(0.0, 1.0, num_bins + 1)[1:-1]
        ids = np.searchsorted(inner, probs, side="left")
        return ids.astype(np.int32), _uniform_edges(num_bins, validation.float_dtype())
    edges = np.moveaxis(np.percentile(probs, _quantile_levels(num_bins), axis=-1), 0, -1)
    rows = zip(probs.reshape(-1, probs.shape[-1]), edges.reshape(-1, num_bins + 1))
    ids = np.stack([np.searchsorted(e[1:-1], p, side="left") for p, e in rows])
    return ids.reshape(probs.shape).astype(np.int32), edges.astype(validation.float_dtype())


def _device_bins(probs: Array, num_bins: int, strategy: str) -> tuple[Array, Array]:
    """`_host_bins` of one traced probability vector, in JAX and in its float type."""
    if strategy == "uniform":
        edges = jnp.asarray(_uniform_edges(num_bins, probs.dtype))
    else:
        levels = jnp.asarray(_quantile_levels(num_bins), probs.dtype)
        edges = jnp.percentile(probs, levels, method="linear")
    return jnp.searchsorted(edges[1:-1], probs, side="left").astype(jnp.int32), edges


def _tally_bins(
    probs: Array,
    labels: Array,
    ids: Array | None,
    edges: Array | None,
    num_bins: int,
    strategy: str,
) -> _BinTallies:
    """Count, positives and probability mass per bin, over the batch axes.

    `ids` and `edges` come from `_host_bins` for concrete input; None for traced input, which
    is binned here.
    """

    def kernel(probs, labels, ids, edges):
        if ids is None:
            ids, edges = _device_bins(probs, num_bins, strategy)

        def per_bin(values: Array) -> Array:
            return jax.ops.segment_sum(values, ids, num_segments=num_bins)

        count = per_bin(jnp.ones_like(ids))
        positives = per_bin((labels == 1).astype(jnp.int32))
        return _BinTallies(count, positives, per_bin(probs), edges)

    return validation.map_batch(kernel, probs, labels, ids, edges)


def _binning_inputs(
    probs: ArrayLike, labels: ArrayLike, num_bins: int, strategy: BinningStrategy
) -> tuple[int, tuple]:
    """(num_bins, the arguments of the binned programs): options and values checked, and the
    probabilities binned on the host when they are concrete."""
    validation.check_option(strategy, "strategy", options_of(BinningStrategy))
    num_bins = validation.check_count(num_bins, "num_bins")
    known = validation.host_values(probs)
    probs, labels, _, flags = _probability_inputs(probs, labels)
    ids = edges = None
    if validation.host_values(probs) is not None:
        # float64 input is binned in float64 (its own precision), the rest in the results' type
        values = known if known.dtype == np.float64 else np.asarray(probs)
        ids, edges = _host_bins(values, num_bins, strategy)
    return num_bins, (probs, labels, ids, edges, flags)


_BINNED = ("num_bins", "strategy")


@functools.partial(jax.jit, static_argnames=_BINNED)
def _table(probs, labels, ids, edges, flags, *, num_bins, strategy) -> ReliabilityTable:
    tallies = _tally_bins(probs, labels, ids, edges, num_bins, strategy)
    table = ReliabilityTable(
        safe_divide(tallies.positives, tallies.count, jnp.nan),
        safe_divide(tallies.mass, tallies.count, jnp.nan),
        tallies.count,
    )
    return validation.nan_where(_any(flags, tallies.count.shape[:-1]), table)


@functools.partial(jax.jit, static_argnames=(*_BINNED, "z"))
def _bins(probs, labels, ids, edges, flags, *, num_bins, strategy, z) -> ReliabilityBins:
    tallies = _tally_bins(probs, labels, ids, edges, num_bins, strategy)
    dtype = validation.float_dtype()
    low, high = intervals.wilson_bounds(
        tallies.positives.astype(dtype), tallies.count.astype(dtype), z
    )
    bins = ReliabilityBins(
        safe_divide(tallies.positives, tallies.count, jnp.nan),
        safe_divide(tallies.mass, tallies.count, jnp.nan),
        tallies.count,
        low,
        high,
        tallies.edges,
    )
    return validation.nan_where(_any(flags, tallies.count.shape[:-1]), bins)


@functools.partial(jax.jit, static_argnames=(*_BINNED, "norm"))
def _ece(probs, labels, ids, edges, flags, *, num_bins, strategy, norm) -> Array:
    count, positives, mass, _ = _tally_bins(probs, labels, ids, edges, num_bins, strategy)
    gap = jnp.where(
        count > 0,
        jnp.abs(safe_divide(positives, count, jnp.nan) - safe_divide(mass, count, jnp.nan)),
        0.0,
    )
    share = count / count.sum(-1, keepdims=True)
    if norm == "l1":
        value = (share * gap).sum(-1)
    elif norm == "l2":
        value = jnp.sqrt((share * gap**2).sum(-1))
    else:  # every sample lies in a bin, so some bin is filled (n >= 1 is checked)
        value = gap.max(-1)
    return validation.nan_where(_any(flags, value.shape), value)


# ----------------------------------------------------------------------------- public binning


def reliability_table(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 10,
    strategy: BinningStrategy = "uniform",
) -> ReliabilityTable:
    r"""Fraction of positives and mean predicted probability per bin, for a reliability diagram.

    Matches `sklearn.calibration.calibration_curve` (``prob_true, prob_pred``), except that
    empty bins are kept, marked by ``count == 0`` and NaN rates, instead of being dropped, so
    that the output has a fixed shape. "uniform" bins have equal width on [0, 1]; "quantile"
    bins have edges at the quantiles of `probs` (linear interpolation), so they hold about the
    same number of samples. `reliability_bins` adds a Wilson interval per bin and the edges.

    .. math::

      \bar y_b = \frac{1}{n_b} \sum_{i:\, p_i \in B_b} y_i, \qquad
      \bar p_b = \frac{1}{n_b} \sum_{i:\, p_i \in B_b} p_i, \qquad
      B_b = (e_b, e_{b+1}]

    Conventions: bins are right-closed, the first one also holding its left edge, as in
    scikit-learn; a probability of exactly 1 is in the last bin. Probabilities outside [0, 1]
    (NaN included) and labels other than 0/1 raise `ValueError` eagerly, naming the argument
    and the index; under `jax.jit` that batch element's counts are -1 (the count marker) and
    its rates NaN. A batch axis of size 1 is kept. Precision: called eagerly, probabilities are
    binned on the host in their own precision against scikit-learn's float64 edges (a float64
    0.3 is in the bin (0.2, 0.3] of ten, as in scikit-learn, though float32(0.3) > 0.3); under
    `jax.jit` they are what JAX made them (float32 unless `jax_enable_x64` is on), binned
    against the edges rounded down to that type. Rates are float32 (float64 under x64).

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).

    Returns:
      `ReliabilityTable` whose fields have shape ``[*batch, num_bins]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> table = jm.reliability_table([0.1, 0.3, 0.35, 0.8, 0.9], [0, 0, 1, 1, 1], num_bins=2)
      >>> table.count.tolist(), [round(float(f), 4) for f in table.fraction_positive]
      ([3, 2], [0.3333, 1.0])

    References:
      Naeini, Cooper & Hauskrecht (2015), "Obtaining well calibrated probabilities using
      Bayesian binning", Proc. AAAI, 2901-2907. Guo, Pleiss, Sun & Weinberger (2017), "On
      calibration of modern neural networks", Proc. ICML, 1321-1330.
    """
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy)
    return _table(*arguments, num_bins=num_bins, strategy=strategy)


def reliability_bins(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 10,
    strategy: BinningStrategy = "uniform",
    confidence: float = 0.95,
) -> ReliabilityBins:
    r"""`reliability_table` with a Wilson interval per bin and the bin edges, for diagrams.

    The rates and counts are `reliability_table`'s (so they match
    `sklearn.calibration.calibration_curve` on the filled bins); each bin's interval is the
    Wilson interval of its fraction of positives, as `wilson_interval` (and
    `statsmodels.stats.proportion.proportion_confint(method="wilson")`) gives it.

    .. math::

      \bar y_b \in \frac{k_b + z^2/2}{n_b + z^2}
        \pm \frac{z}{n_b + z^2}\sqrt{\frac{k_b(n_b-k_b)}{n_b} + \frac{z^2}{4}}

    with k_b the positives and n_b the samples of bin b.

    Conventions: as `reliability_table`; an empty bin's interval is NaN. Under `jax.jit` a bad
    batch element has counts -1 and every float field (the edges included) NaN.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).
      confidence: the level of the per-bin intervals, in (0, 1).

    Returns:
      `ReliabilityBins`: rates, counts and bounds ``[*batch, num_bins]``, edges
      ``[*batch, num_bins + 1]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> bins = jm.reliability_bins([0.1, 0.3, 0.35, 0.8, 0.9], [0, 0, 1, 1, 1], num_bins=2)
      >>> bins.edges.tolist()
      [0.0, 0.5, 1.0]
      >>> round(float(bins.low[0]), 4), round(float(bins.high[0]), 4)  # 1 positive of 3
      (0.0615, 0.7923)

    References:
      Wilson (1927), "Probable inference, the law of succession, and statistical inference",
      Journal of the American Statistical Association 22:209-212.
    """
    z = intervals.normal_quantile(confidence)
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy)
    return _bins(*arguments, num_bins=num_bins, strategy=strategy, z=z)


def expected_calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 15,
    strategy: BinningStrategy = "uniform",
    norm: CalibrationNorm = "l1",
) -> Array:
    r"""Expected calibration error: the gap between predicted probability and frequency, over bins.

    There is no scikit-learn function; this is the binned ECE of Naeini et al. (2015), with 15
    equal-width bins by default as in Guo et al. (2017): the count-weighted mean, over the bins
    of `reliability_table`, of the gap between the fraction of positives and the mean predicted
    probability. "l2" is the square root of the count-weighted mean of squared gaps, "max" the
    largest gap over the filled bins (the maximum calibration error, MCE).

    .. math::

      \mathrm{ECE} = \sum_b \frac{n_b}{n} \left| \bar y_b - \bar p_b \right|, \qquad
      \mathrm{ECE}_{l2} = \sqrt{\sum_b \frac{n_b}{n} \left(\bar y_b - \bar p_b\right)^2},
      \qquad \mathrm{MCE} = \max_{b:\, n_b > 0} \left| \bar y_b - \bar p_b \right|

    Conventions: bins, bad input and precision as `reliability_table`; empty bins contribute
    nothing; under `jax.jit` a bad batch element gives NaN. The value depends on the binning
    (and is biased upwards at small n_b), so report it with the bins and the Brier score.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).
      norm: "l1" (the ECE), "l2" or "max" (the MCE).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs, labels = [0.1, 0.3, 0.35, 0.8, 0.9], [0, 0, 1, 1, 1]
      >>> # bins (0, 0.5] and (0.5, 1]: 3/5 * |1/3 - 0.25| + 2/5 * |1 - 0.85|
      >>> round(float(jm.expected_calibration_error(probs, labels, num_bins=2)), 4)
      0.11
      >>> round(float(jm.expected_calibration_error(probs, labels, num_bins=2, norm="max")), 4)
      0.15

    References:
      Naeini, Cooper & Hauskrecht (2015), "Obtaining well calibrated probabilities using
      Bayesian binning", Proc. AAAI, 2901-2907. Guo, Pleiss, Sun & Weinberger (2017), "On
      calibration of modern neural networks", Proc. ICML, 1321-1330.
    """
    validation.check_option(norm, "norm", options_of(CalibrationNorm))
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy)
    return _ece(*arguments, num_bins=num_bins, strategy=strategy, norm=norm)
