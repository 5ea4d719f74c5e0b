"""Reliability: binned calibration (reliability tables, per-bin intervals, the expected
calibration error).

Binning is one kernel (`_tally_bins`): every probability gets the index of its bin, and each bin's
count, positives and probability mass are segment sums over those indices. Concrete inputs are
binned on the host, in numpy, with scikit-learn's edges and rule in the input's own precision
(float64 stays float64); traced inputs are binned in JAX. `reliability_table`,
`reliability_bins` and `expected_calibration_error` each read what they need off that kernel.

Each public function checks its inputs with `calibration.probability_inputs` (numpy, on the host,
when they are concrete), then runs one compiled program: an eager call compiles once per input
shape and options.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, kernels, sorting
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count, check_option
from jaxmetrics._src.core.typing import (
    Array,
    ArrayLike,
    BinningStrategy,
    CalibrationNorm,
    options_of,
)
from jaxmetrics._src.metrics.calibration import any_flagged, probability_inputs
from jaxmetrics._src.stats import intervals

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


def _weighted_percentiles(values, weights, levels, xp):
    """`np.percentile(values, levels)` (linear) of the sample in which each value is repeated
    its weight times (fractional weights extend it), for one 1-D vector; `xp` is np or jnp."""
    order = np.argsort(values) if xp is np else sorting.key_sort(values)[1]
    ordered = values[order]
    # on the host in float64: float32 counts past 2^24 round (W - 1) q onto a boundary and an
    # edge jumps to the next value (weights of 2^25 moved the median from 0.25 to 0.3); traced,
    # the float type of the values (the same rounding past 2^24 in float32)
    dtype = np.float64 if xp is np else ordered.dtype
    counts = xp.cumsum(weights[order].astype(dtype))
    position = (counts[-1] - 1) * (xp.asarray(levels, dtype) / 100)
    low = xp.floor(position)
    high = xp.minimum(low + 1, xp.maximum(counts[-1] - 1, 0))

    def at(rank):  # the value at 0-based position `rank` of the repeated, sorted sample
        return ordered[xp.minimum(xp.searchsorted(counts, rank, side="right"), values.size - 1)]

    return at(low) + (position - low) * (at(high) - at(low))


def _host_bins(
    probs: np.ndarray, num_bins: int, strategy: str, weights: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """(bin index of each probability, edges) of concrete probabilities, in numpy.

    Exactly `sklearn.calibration.calibration_curve`'s binning in the probabilities' own
    precision: float64 edges (`np.linspace`, or `np.percentile` of the probabilities) and
    ``np.searchsorted(edges[1:-1], p)``, so bins are right-closed and a probability of exactly 1
    lands in the last bin. The edges returned for display are in the float type of the results.
    """
    if strategy == "uniform":
        inner = np.linspace(0.0, 1.0, num_bins + 1)[1:-1]
        ids = np.searchsorted(inner, probs, side="left")
        return ids.astype(np.int32), _uniform_edges(num_bins, float_dtype())
    if weights is None:
        edges = np.moveaxis(np.percentile(probs, _quantile_levels(num_bins), axis=-1), 0, -1)
    else:
        shape = np.broadcast_shapes(probs.shape, weights.shape)
        probs, weights = np.broadcast_to(probs, shape), np.broadcast_to(weights, shape)
        rows = zip(probs.reshape(-1, shape[-1]), weights.reshape(-1, shape[-1]))
        levels = _quantile_levels(num_bins)
        edges = np.stack([_weighted_percentiles(p, w, levels, np) for p, w in rows])
        edges = edges.reshape(shape[:-1] + (num_bins + 1,))
    rows = zip(probs.reshape(-1, probs.shape[-1]), edges.reshape(-1, num_bins + 1))
    ids = np.stack([np.searchsorted(e[1:-1], p, side="left") for p, e in rows])
    return ids.reshape(probs.shape).astype(np.int32), edges.astype(float_dtype())


def _device_bins(
    probs: Array, num_bins: int, strategy: str, weights: Array | None = None
) -> tuple[Array, Array]:
    """`_host_bins` of one traced probability vector, in JAX and in its float type."""
    if strategy == "uniform":
        edges = jnp.asarray(_uniform_edges(num_bins, probs.dtype))
    elif weights is None:
        levels = jnp.asarray(_quantile_levels(num_bins), probs.dtype)
        edges = jnp.percentile(probs, levels, method="linear")
    else:
        edges = _weighted_percentiles(probs, weights, _quantile_levels(num_bins), jnp)
    return jnp.searchsorted(edges[1:-1], probs, side="left").astype(jnp.int32), edges


def _tally_bins(
    probs: Array,
    labels: Array,
    weights: Array | None,
    ids: Array | None,
    edges: Array | None,
    num_bins: int,
    strategy: str,
) -> _BinTallies:
    """Count, positives and probability mass per bin, over the batch axes (weighted sums with
    `weights`: int32 counts for integer weights, float for float ones).

    `ids` and `edges` come from `_host_bins` for concrete input; None for traced input, which
    is binned here.
    """

    def kernel(probs, labels, weights, ids, edges):
        if ids is None:
            ids, edges = _device_bins(probs, num_bins, strategy, weights)
        if weights is None:
            weights = jnp.ones_like(ids)
        else:
            weights = weights.astype(sorting.count_dtype(weights))

        def per_bin(values: Array) -> Array:
            return jax.ops.segment_sum(values, ids, num_segments=num_bins)

        count = per_bin(weights)
        positives = per_bin(jnp.where(labels == 1, weights, 0))
        return _BinTallies(count, positives, per_bin(weights * probs), edges)

    return batching.map_batch(kernel, probs, labels, weights, ids, edges)


def _binning_inputs(
    probs: ArrayLike,
    labels: ArrayLike,
    num_bins: int,
    strategy: BinningStrategy,
    sample_weight: ArrayLike | None = None,
) -> tuple[int, tuple]:
    """(num_bins, the arguments of the binned programs): options and values checked, and the
    probabilities binned on the host when they are concrete."""
    check_option(strategy, "strategy", options_of(BinningStrategy))
    num_bins = check_count(num_bins, "num_bins")
    known = checks.host_values(probs)
    probs, labels, weights, flags = probability_inputs(probs, labels, sample_weight)
    ids = edges = None
    host_weights = None if weights is None else checks.host_values(weights)
    if checks.host_values(probs) is not None and (weights is None or host_weights is not None):
        # float64 input is binned in float64 (its own precision), the rest in the results' type
        values = known if known is not None and known.dtype == np.float64 else np.asarray(probs)
        ids, edges = _host_bins(values, num_bins, strategy, host_weights)
    return num_bins, (probs, labels, weights, ids, edges, flags)


_BINNED = ("num_bins", "strategy")


@functools.partial(jax.jit, static_argnames=_BINNED)
def _table(probs, labels, weights, ids, edges, flags, *, num_bins, strategy) -> ReliabilityTable:
    tallies = _tally_bins(probs, labels, weights, ids, edges, num_bins, strategy)
    table = ReliabilityTable(
        safe_divide(tallies.positives, tallies.count, jnp.nan),
        safe_divide(tallies.mass, tallies.count, jnp.nan),
        tallies.count,
    )
    return batching.nan_where(any_flagged(flags, tallies.count.shape[:-1]), table)


@functools.partial(kernels.sample_jit, static_argnames=(*_BINNED, "z"))
def _bins(probs, labels, weights, ids, edges, flags, *, num_bins, strategy, z) -> ReliabilityBins:
    tallies = _tally_bins(probs, labels, weights, ids, edges, num_bins, strategy)
    dtype = float_dtype()
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
    return batching.nan_where(any_flagged(flags, tallies.count.shape[:-1]), bins)


@functools.partial(kernels.sample_jit, static_argnames=(*_BINNED, "norm"))
def _ece(probs, labels, weights, ids, edges, flags, *, num_bins, strategy, norm) -> Array:
    count, positives, mass, _ = _tally_bins(probs, labels, weights, ids, edges, num_bins, strategy)
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
    return batching.nan_where(any_flagged(flags, value.shape), value)


# ----------------------------------------------------------------------------- public binning


def reliability_table(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 10,
    strategy: BinningStrategy = "uniform",
    sample_weight: ArrayLike | None = None,
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

    Bins are right-closed, the first one also holding its left edge, as in scikit-learn; a
    probability of exactly 1 is in the last bin. A batch axis of size 1 is kept. Under
    `jax.jit` a bad batch element's counts are -1 and its rates NaN. Called eagerly,
    probabilities are binned on the host in their own precision against scikit-learn's float64
    edges (a float64 0.3 is in the bin (0.2, 0.3] of ten, as in scikit-learn, though
    float32(0.3) > 0.3); under `jax.jit`, against the edges rounded down to the type JAX made
    them. Bad input and precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).
      sample_weight: optional ``[*batch, n]`` non-negative weights: counts, positives and
        probability mass are weighted sums (an integer weight w counts the sample w times,
        quantile edges included), so the result can be bootstrapped.

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
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy, sample_weight)
    return _table(*arguments, num_bins=num_bins, strategy=strategy)


def reliability_bins(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 10,
    strategy: BinningStrategy = "uniform",
    confidence: float = 0.95,
    sample_weight: ArrayLike | None = None,
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

    Bins, bad input and precision as `reliability_table`; an empty bin's interval is NaN. Under
    `jax.jit` a bad batch element has counts -1 and every float field (the edges included) NaN.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).
      sample_weight: optional ``[*batch, n]`` non-negative weights: counts, positives and
        probability mass are weighted sums (an integer weight w counts the sample w times,
        quantile edges included), so the result can be bootstrapped.
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
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy, sample_weight)
    return _bins(*arguments, num_bins=num_bins, strategy=strategy, z=z)


def expected_calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 15,
    strategy: BinningStrategy = "uniform",
    norm: CalibrationNorm = "l1",
    sample_weight: ArrayLike | None = None,
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

    Bins, bad input and precision as `reliability_table`; empty bins contribute nothing. The
    value depends on the binning (and is biased upwards at small n_b), so report it with the
    bins and the Brier score.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins).
      sample_weight: optional ``[*batch, n]`` non-negative weights: counts, positives and
        probability mass are weighted sums (an integer weight w counts the sample w times,
        quantile edges included), so the result can be bootstrapped.
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
    check_option(norm, "norm", options_of(CalibrationNorm))
    num_bins, arguments = _binning_inputs(probs, labels, num_bins, strategy, sample_weight)
    return _ece(*arguments, num_bins=num_bins, strategy=strategy, norm=norm)
