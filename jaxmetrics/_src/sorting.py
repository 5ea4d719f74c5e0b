"""The ranking engine: one sort of the scores, tie groups, and weighted prefix sums.

Every count in jaxmetrics comes from here. The sort depends on the scores only, never on labels or
weights, so when a metric is ``vmap``-ed over weight vectors (the bootstrap) JAX leaves the sort
unbatched and it runs once for all resamples. Everything after the sort is gathers and cumulative
sums, which are cheap on every backend.

Layout (1-D kernels; callers lift them over batch axes with ``validation.map_batch``):

* ``Ranked.scores[i]`` is the i-th smallest score;
* the tie group of position i is ``[group_start[i], group_stop[i])``: tied scores always move
  together, whichever order the sort left them in;
* ``Tallies.positive[j]`` is the weight of positives among the j smallest scores (an exclusive
  prefix sum of length n + 1), so "the positives scoring >= s" is ``positive[n] - positive[a]``
  where a is the first position holding s.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def _host_argsort(scores: np.ndarray) -> np.ndarray:
    # numpy's introsort is 3-5x faster than XLA's CPU sort with a payload; tie order is irrelevant
    # because ties are grouped explicitly below.
    return np.argsort(scores, axis=-1).astype(np.int32)


def argsort(scores: Array) -> Array:
    """Permutation sorting `scores` ascending along the last axis (int32).

    On CPU the sort is a host callback to numpy; on GPU/TPU it is XLA's own sort.
    """

    def on_cpu(values: Array) -> Array:
        result = jax.ShapeDtypeStruct(values.shape, jnp.int32)
        return jax.pure_callback(_host_argsort, result, values, vmap_method="expand_dims")

    def elsewhere(values: Array) -> Array:
        return jnp.argsort(values, axis=-1).astype(jnp.int32)

    return jax.lax.platform_dependent(scores, cpu=on_cpu, default=elsewhere)


class Ranked(NamedTuple):
    """Scores sorted ascending, with the tie group of every position."""

    scores: Array  # (n,) ascending
    order: Array  # (n,) int32: scores_sorted = scores_original[order]
    group_start: Array  # (n,) int32: first position of the tie group holding position i
    group_stop: Array  # (n,) int32: one past the last position of that group

    @property
    def is_group_start(self) -> Array:
        return self.group_start == jnp.arange(self.scores.shape[0], dtype=jnp.int32)


def rank(scores: Array) -> Ranked:
    """Sort a 1-D score vector once and find its tie groups."""
    # -0.0 and +0.0 compare equal and must land in one tie group.
    scores = jnp.where(scores == 0, jnp.zeros_like(scores), scores)
    order = argsort(scores)
    ordered = scores[order]
    n = ordered.shape[0]
    position = jnp.arange(n, dtype=jnp.int32)
    differs = ordered[1:] != ordered[:-1]
    is_start = jnp.concatenate([jnp.ones(1, bool), differs])
    is_end = jnp.concatenate([differs, jnp.ones(1, bool)])
    group_start = jax.lax.cummax(jnp.where(is_start, position, 0))
    group_stop = jax.lax.cummin(jnp.where(is_end, position + 1, n), reverse=True)
    return Ranked(ordered, order, group_start, group_stop)


def count_dtype(weights: Array | None):
    """int32 for unweighted or integer weights (exact to 2^31), else the float type of `weights`."""
    if weights is None or not jnp.issubdtype(weights.dtype, jnp.floating):
        return jnp.int32
    return jnp.float64 if weights.dtype == jnp.float64 else jnp.float32


class Tallies(NamedTuple):
    """Exclusive prefix sums over the ascending order, each of length n + 1."""

    positive: Array  # weight of positives among the j smallest scores
    negative: Array  # weight of negatives among the j smallest scores
    nonzero: Array  # number of samples with non-zero weight among the j smallest (int32)

    @property
    def total_positive(self) -> Array:
        return self.positive[-1]

    @property
    def total_negative(self) -> Array:
        return self.negative[-1]


def _exclusive_cumsum(values: Array) -> Array:
    return jnp.concatenate([jnp.zeros(1, values.dtype), jnp.cumsum(values)])


def tally(ranked: Ranked, labels: Array, weights: Array | None) -> Tallies:
    """Weighted positive/negative prefix sums in the ranked order.

    `labels` are int32 0/1. Counts stay integer (int32) unless the weights are floats, so they are
    exact past 2^24 samples without x64; float weights accumulate in float32 with XLA's parallel
    prefix sum (relative error below 1e-6 at 10^8 samples, measured).
    """
    dtype = count_dtype(weights)
    labels = labels[ranked.order].astype(dtype)
    if weights is None:
        weights = jnp.ones_like(labels)
    else:
        weights = weights[ranked.order].astype(dtype)
    positive = weights * labels
    return Tallies(
        _exclusive_cumsum(positive),
        _exclusive_cumsum(weights - positive),
        _exclusive_cumsum((weights != 0).astype(jnp.int32)),
    )
