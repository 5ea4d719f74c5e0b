"""The ranking engine: one sort of the scores, tie groups, and weighted prefix sums.

Every count in jaxmetrics comes from here. The sort depends on the scores only, never on labels or
weights, so when a metric is ``vmap``-ed over weight vectors (the bootstrap) JAX leaves the sort
unbatched and it runs once for all resamples. Everything after the sort is gathers and cumulative
sums, which are cheap on every backend.

Layout (1-D kernels; callers lift them over batch axes with ``validation.map_batch``):

* ``Ranked.scores[i]`` is the i-th smallest score;
* the tie group of position i is ``[group_start[i], group_stop[i])``: tied scores always move
  together, whichever order the sort left them in (`group_start` is derived in XLA and costs
  nothing unless a caller uses it);
* ``Tallies.positive[j]`` is the weight of positives among the j smallest scores (an exclusive
  prefix sum of length n + 1), so "the positives scoring >= s" is ``positive[n] - positive[a]``
  where a is the first position holding s.
"""

from __future__ import annotations

import functools
import sys
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import host_kernels, kernels

Array = jax.Array


def _host_sort(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ascending permutation, a sort key in that order whose equality is the scores' equality).

    float32 scores are sorted as packed uint64 words, (monotone image of the float) << 32 | index:
    numpy's vectorised sort of plain integers is about twice as fast as its argsort at 10^7, and
    the sorted keys come out of the same words without a gather. Tie order is irrelevant: ties
    are grouped afterwards.
    """
    if scores.dtype != np.float32:
        order = np.argsort(scores, axis=-1)
        return order, np.take_along_axis(scores, order, axis=-1)
    bits = np.ascontiguousarray(scores).view(np.uint32)
    # flip negatives entirely and set the sign bit of positives: unsigned order == float order.
    # One xor with a mask made from the sign (np.where over the two cases took 15 ms at 10^6,
    # more than half the sort's time; this takes 0.5 ms)
    key = bits ^ ((bits.view(np.int32) >> 31).view(np.uint32) | np.uint32(0x80000000))
    packed = (key.astype(np.uint64) << np.uint64(32)) | np.arange(scores.shape[-1], dtype=np.uint64)
    packed.sort(axis=-1)
    if sys.byteorder == "little":  # the two 32-bit halves of each word, read in place
        words = packed.view(np.uint32)
        return words[..., 0::2], words[..., 1::2]
    return packed & np.uint64(0xFFFFFFFF), packed >> np.uint64(32)


def _sparse_tie_groups(tied: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray] | None:
    """(group_start, group_stop) when few neighbours tie, else None.

    `tied[..., j]` says sorted positions j and j + 1 hold equal scores. Every position starts as
    its own group ``[i, i + 1)``; only the tied runs are rewritten, which costs a few passes
    over the few tied pairs instead of running minima and maxima over every position (those
    took 40% of the rank of 20 x 10^5 continuous scores, measured).
    """
    rows = tied.reshape(-1, max(n - 1, 0))
    pairs = np.flatnonzero(rows)  # flat pair index p = r * (n - 1) + j
    if pairs.size * 4 > rows.size:
        return None
    position = np.arange(n, dtype=np.int32)
    shape = tied.shape[:-1] + (n,)
    if pairs.size == 0:  # no ties: every position is its own group
        group_start = np.broadcast_to(position, shape).copy()
        return group_start, group_start + 1
    row, j = np.divmod(pairs, max(n - 1, 1))
    flat = row * n + j  # flat position of the pair's first element
    starts_run = np.ones(flat.size, bool)
    starts_run[1:] = flat[1:] != flat[:-1] + 1
    run = np.cumsum(starts_run) - 1
    first = flat[starts_run]  # flat position where each tied run begins
    last = flat[np.append(starts_run[1:], True)] + 1  # flat position where it ends
    group_start = np.broadcast_to(position, (rows.shape[0], n)).copy().reshape(-1)
    group_stop = group_start + 1
    offset = row * n
    for members in (flat, flat + 1):  # both elements of every tied pair
        group_start[members] = first[run] - offset
        group_stop[members] = last[run] + 1 - offset
    return group_start.reshape(shape), group_stop.reshape(shape)


def _host_rank(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """numpy twin of `_device_rank`: several times faster on CPU than XLA's sort with a payload."""
    # The callback receives jax Arrays; np.argsort on one would dispatch back to XLA's sort.
    order, ordered = _host_sort(np.asarray(scores))
    n = order.shape[-1]
    tied = ordered[..., 1:] == ordered[..., :-1]
    sparse = _sparse_tie_groups(tied, n) if n > 1 else None
    if sparse is not None:
        return order.astype(np.int32), *sparse
    is_end = np.concatenate([~tied, np.ones(order.shape[:-1] + (1,), bool)], axis=-1)
    stop = np.where(is_end, np.arange(1, n + 1, dtype=np.int32), np.int32(n))
    group_stop = np.flip(np.minimum.accumulate(np.flip(stop, -1), axis=-1), -1)
    is_start = np.concatenate([np.ones(order.shape[:-1] + (1,), bool), is_end[..., :-1]], axis=-1)
    start = np.where(is_start, np.arange(n, dtype=np.int32), np.int32(0))
    group_start = np.maximum.accumulate(start, axis=-1)
    return order.astype(np.int32), group_start.astype(np.int32), group_stop.astype(np.int32)


def _rank_into(scores: np.ndarray, *, out: list[np.ndarray]) -> None:
    for target, value in zip(out, _host_rank(scores)):
        target[...] = value


# looked up on every call (`host_kernels.register`): a test may replace `_host_rank`
host_kernels.register("rank", lambda: _rank_into)


def _device_rank(scores: Array) -> tuple[Array, Array, Array]:
    order = jnp.argsort(scores, axis=-1).astype(jnp.int32)
    ordered = jnp.take_along_axis(scores, order, axis=-1)
    n = scores.shape[-1]
    axis = scores.ndim - 1
    is_end = jnp.concatenate(
        [ordered[..., 1:] != ordered[..., :-1], jnp.ones(scores.shape[:-1] + (1,), bool)], axis=-1
    )
    stop = jnp.where(is_end, jnp.arange(1, n + 1, dtype=jnp.int32), n)
    is_start = jnp.concatenate([jnp.ones(scores.shape[:-1] + (1,), bool), is_end[..., :-1]], -1)
    start = jnp.where(is_start, jnp.arange(n, dtype=jnp.int32), 0)
    group_start = jax.lax.cummax(start, axis=axis)
    return order, group_start, jax.lax.cummin(stop, axis=axis, reverse=True)


def _rank_indices(scores: Array) -> tuple[Array, Array, Array]:
    """(order, group_start, group_stop) of `scores` along the last axis, all int32.

    On CPU a numpy kernel called from the program (`host_kernels`; numpy's sort and running min
    are several times faster than XLA's there); on GPU/TPU XLA's own sort. Both give the same
    groups; tie order may differ.
    """

    if not kernels.host_callbacks():
        return _device_rank(scores)

    def on_cpu(values: Array) -> tuple[Array, Array, Array]:
        result = (jax.ShapeDtypeStruct(values.shape, jnp.int32),) * 3
        return host_kernels.call("rank", result, values)

    return jax.lax.platform_dependent(scores, cpu=on_cpu, default=_device_rank)


class Ranked(NamedTuple):
    """Scores sorted ascending, with the tie group of every position."""

    scores: Array  # (n,) ascending
    order: Array  # (n,) int32: scores_sorted = scores_original[order]
    group_start: Array  # (n,) int32: first position of the tie group holding i
    group_stop: Array  # (n,) int32: one past the last position of the tie group holding i

    @property
    def is_group_start(self) -> Array:
        # from the group starts, not by comparing neighbours of `scores`: a kernel that needs no
        # sorted score then never gathers them (a random gather of n floats, measured ~20% of AP)
        return self.group_start == jnp.arange(self.group_start.shape[-1], dtype=jnp.int32)


def rank(scores: Array) -> Ranked:
    """Sort a 1-D score vector once and find its tie groups."""
    # -0.0 and +0.0 compare equal and must land in one tie group. Subnormals are flushed to zero
    # here, explicitly: XLA's CPU backend already treats them as zero in every comparison, and
    # the host sort must see the same values or its groups disagree with XLA's searches.
    # (Concrete inputs with subnormals never get here: `validation.order_keys` encodes them.)
    tiny = jnp.finfo(scores.dtype).tiny
    scores = jnp.where(jnp.abs(scores) < tiny, jnp.zeros_like(scores), scores)
    # the permutation is piecewise constant in the scores: no gradient flows through it, while
    # the sorted scores (a gather) stay differentiable for the surrogate losses
    order, group_start, group_stop = _rank_indices(jax.lax.stop_gradient(scores))
    return Ranked(scores[order], order, group_start, group_stop)


def at_thresholds(ranked: Ranked, prefix: Array, thresholds: Array, *, inclusive: bool) -> Array:
    """Read an exclusive prefix sum (length n + 1) at each threshold of the ascending order.

    `inclusive=False` gives the sum over samples scoring < threshold (the complement of the
    decision rule ``score >= threshold``); `inclusive=True` over samples scoring <= threshold
    (right-closed bins, as scikit-learn's calibration_curve).
    """
    side = "right" if inclusive else "left"
    return prefix[jnp.searchsorted(ranked.scores, thresholds, side=side)]


def count_dtype(weights: Array | None):
    """int32 for unweighted or integer weights (exact to 2^31), else the float type of `weights`."""
    if weights is None or not jnp.issubdtype(weights.dtype, jnp.floating):
        return jnp.int32
    return jnp.float64 if weights.dtype == jnp.float64 else jnp.float32


class Tallies(NamedTuple):
    """Per-sample weights in the ranked order and their exclusive prefix sums (length n + 1)."""

    positive_weights: Array  # (n,) weight of position i if it holds a positive, else 0
    weights: Array | None  # (n,) weight of position i; None when every weight is 1
    nonzero: Array  # (n + 1,) number of samples with non-zero weight among the j smallest

    @property
    def positive(self) -> Array:
        """(n + 1,) weight of positives among the j smallest scores."""
        return count_prefix_sum(self.positive_weights)

    @property
    def negative(self) -> Array:
        """(n + 1,) weight of negatives among the j smallest scores."""
        if self.weights is None:  # unit weights: everyone below minus the positives, no scan
            return self.nonzero - self.positive
        return count_prefix_sum(self.weights - self.positive_weights)

    @property
    def total_positive(self) -> Array:
        return self.positive_weights.sum()

    @property
    def total_negative(self) -> Array:
        if self.weights is None:
            return self.positive_weights.shape[0] - self.positive_weights.sum()
        return (self.weights - self.positive_weights).sum()


def prefix_sum(values: Array) -> Array:
    """Exclusive prefix sum of length n + 1: element j sums the first j values (differentiable).

    XLA's parallel scan, for values that gradients flow through (the surrogate losses). Counts
    and weights use `count_prefix_sum`.
    """
    return jnp.concatenate([jnp.zeros(1, values.dtype), jnp.cumsum(values)])


def _host_cumulative(values: np.ndarray, *, op: str) -> np.ndarray:
    values = np.asarray(values)
    if op == "max":
        return np.maximum.accumulate(values, axis=-1)
    if values.dtype.kind in "iub":  # exact: weight totals are checked to fit the int32 counts
        return np.cumsum(values, axis=-1, dtype=values.dtype)
    # floats accumulate in float64, more accurate than XLA's float32 tree
    return np.cumsum(values, axis=-1, dtype=np.float64).astype(values.dtype)


def _cumulative_into(op: str):
    def kernel(values: np.ndarray, *, out: list[np.ndarray]) -> None:
        out[0][...] = _host_cumulative(values, op=op)

    return kernel


for _op in ("sum", "max"):
    host_kernels.register(f"cumulative_{_op}", functools.partial(_cumulative_into, _op))


# Per-step host callbacks from several emulated CPU devices inside `shard_map` starve XLA's
# thread pool (seen to hang), so code traced for a mesh turns the running sums back to XLA's.


def cumulative(values: Array, *, op: str = "sum") -> Array:
    """Inclusive running sum or maximum along the last axis, without gradients.

    On CPU a numpy kernel called from the program (`host_kernels`): XLA lowers a cumulative op
    there to a parallel scan whose compilation alone takes ~0.4 s per shape (measured), the bulk
    of a metric's first call; numpy runs it as fast at any size. Elsewhere XLA's own.
    """

    if not kernels.host_cumulative() or not kernels.host_callbacks():
        return _device_cumulative(values, op=op)

    def on_cpu(values: Array) -> Array:
        result = jax.ShapeDtypeStruct(values.shape, values.dtype)
        return host_kernels.call(f"cumulative_{op}", (result,), values)[0]

    return jax.lax.platform_dependent(
        values, cpu=on_cpu, default=functools.partial(_device_cumulative, op=op)
    )


def _device_cumulative(values: Array, *, op: str) -> Array:
    axis = values.ndim - 1
    return jax.lax.cummax(values, axis=axis) if op == "max" else jnp.cumsum(values, axis=axis)


def count_prefix_sum(values: Array) -> Array:
    """Exclusive prefix sum of length n + 1 of counts or weights (no gradient; see `cumulative`)."""
    return jnp.concatenate([jnp.zeros(1, values.dtype), cumulative(values)])


def tally(ranked: Ranked, labels: Array, weights: Array | None) -> Tallies:
    """Weights in the ranked order; their prefix sums are derived (and computed) on demand.

    `labels` are int32 0/1. Counts stay integer (int32) unless the weights are floats, so they are
    exact past 2^24 samples without x64; float weights accumulate in float32 with XLA's parallel
    prefix sum (relative error below 1e-6 at 10^8 samples, measured). Each prefix sum is a full
    pass per weight vector, so a metric asks only for the ones it needs.
    """
    dtype = count_dtype(weights)
    labels = labels[ranked.order].astype(dtype)
    if weights is None:
        everyone = jnp.arange(labels.shape[0] + 1, dtype=jnp.int32)
        return Tallies(labels, None, everyone)
    weights = weights[ranked.order].astype(dtype)
    return Tallies(weights * labels, weights, count_prefix_sum((weights != 0).astype(jnp.int32)))


# ----------------------------------------------------------------------------- tie groups
# The vocabulary of every sort-based metric: for the tie group ``[a, b)`` of ascending positions
# (``a = group_start``, ``b = group_stop``), the operating point at the group's score s is "flag
# everything scoring >= s": ``tp(s) = P - positive[a]``, ``fp(s) = N - negative[a]``, and the point
# just above it (threshold just over s) is ``P - positive[b]``, ``N - negative[b]``. Zero-weight
# samples never create a point (as in scikit-learn, which drops them first).


class Groups(NamedTuple):
    """Per ascending position i, quantities of the tie group holding i (meaningful at starts)."""

    is_point: Array  # i starts a tie group holding at least one non-zero weight
    tp: Array  # operating point at this group's score
    fp: Array
    tp_above: Array  # operating point just above this group (the previous point of the curve)
    fp_above: Array
    total_positive: Array
    total_negative: Array


def groups(ranked: Ranked, tallies: Tallies) -> Groups:
    # at a group start i == a, so the prefix sums at a need no gather
    b = ranked.group_stop
    positive, negative = tallies.positive, tallies.negative
    p, n = positive[-1], negative[-1]
    return Groups(
        is_point=ranked.is_group_start & (tallies.nonzero[b] - tallies.nonzero[:-1] > 0),
        tp=p - positive[:-1],
        fp=n - negative[:-1],
        tp_above=p - positive[b],
        fp_above=n - negative[b],
        total_positive=p,
        total_negative=n,
    )


def rank_and_tally(
    scores: Array, labels: Array, weights: Array | None
) -> tuple[Ranked, Tallies, Groups]:
    """The start of every sort-based kernel: sort once, tally the weights, form the groups."""
    ranked = rank(scores)
    tallies = tally(ranked, labels, weights)
    return ranked, tallies, groups(ranked, tallies)


def neighbours(ranked: Ranked, tallies: Tallies, groups: Groups) -> tuple[Array, Array, Array]:
    """For each group: is it between two real points, and (tp, fp) of the next point below.

    "Below" is the next lower threshold; the point above is `groups.tp_above`/`fp_above`.
    A group without a neighbour on either side is an end of the curve and always kept.
    """
    n = ranked.scores.shape[0]
    position = jnp.arange(n, dtype=jnp.int32)
    has_weight = (tallies.nonzero[1:] - tallies.nonzero[:-1]) > 0
    last_weighted = cumulative(jnp.where(has_weight, position, -1), op="max")
    # the last weighted position strictly below the group start, and the start of its group
    below = jnp.where(
        ranked.group_start > 0, last_weighted[jnp.maximum(ranked.group_start - 1, 0)], -1
    )
    start_below = ranked.group_start[jnp.maximum(below, 0)]
    has_above = tallies.nonzero[-1] - tallies.nonzero[ranked.group_stop] > 0
    interior = (below >= 0) & has_above
    return interior, groups.tp[start_below], groups.fp[start_below]
