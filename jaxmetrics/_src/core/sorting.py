"""The ranking engine: one sort of the scores, tie groups, and weighted prefix sums.

Every count in jaxmetrics comes from here. The sort depends on the scores only, never on labels or
weights, so when a metric is ``vmap``-ed over weight vectors (the bootstrap) JAX leaves the sort
unbatched and it runs once for all resamples. Everything after the sort is gathers and cumulative
sums, which are cheap on every backend. (On the CPU, without weights, `rank_and_tally` takes the
labels into the host sort and returns their prefix sum with it: one callback, and one copy of
each array between XLA and numpy; score vectors shared by several label vectors are still
sorted once.)

Layout (1-D kernels; callers lift them over batch axes with ``batching.map_batch``):

* ``Ranked.scores[i]`` is the i-th smallest score;
* the tie group of position i is ``[group_start[i], group_stop[i])``: tied scores always move
  together, whichever order the sort left them in;
* ``Tallies.positive[j]`` is the weight of positives among the j smallest scores (an exclusive
  prefix sum of length n + 1), so "the positives scoring >= s" is ``positive[n] - positive[a]``
  where a is the first position holding s.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import host_kernels, kernels, prefix

Array = jax.Array


def _host_sort(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(ascending permutation, a sort key in that order whose equality is the scores' equality,
    float32 zeros and subnormals all being +0). Tie order is irrelevant: ties are grouped
    afterwards."""
    if scores.dtype != np.float32:  # (flushed by the caller: `_host_operand`)
        order = np.argsort(scores, axis=-1)
        return order, np.take_along_axis(scores, order, axis=-1)

    def index(payload: np.ndarray) -> None:
        payload[...] = np.arange(scores.shape[-1], dtype=np.uint32)

    return host_kernels.sort_carrying(scores, scores.shape, index)


def _host_rank(scores: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """numpy twin of `_device_rank` (of `flush`-ed scores): several times faster on CPU than
    XLA's sort with a payload. Takes `_host_operand(scores)`."""
    # The callback receives jax Arrays; np.argsort on one would dispatch back to XLA's sort.
    order, ordered = _host_sort(np.asarray(scores))
    group_start, group_stop = np.empty(order.shape, np.int32), np.empty(order.shape, np.int32)
    host_kernels.fill_tie_groups(ordered, group_start, group_stop)
    return order.astype(np.int32), group_start, group_stop


def _rank_into(scores: np.ndarray, *, out: list[np.ndarray]) -> None:
    for target, value in zip(out, _host_rank(scores)):
        target[...] = value


# From this many samples on, `_rank_and_count_into` sorts the labels with the scores. Below it
# their gather stays in the cache and costs what carrying them does (measured: the same at 10^5
# and 3 x 10^5 samples; carrying them 1.2 times faster at 10^6, 1.4 times at 3 x 10^6, where a
# random gather of the labels cost more than the rest of the kernel but the sort), so small
# samples take `_host_rank`, the sort of every other kernel.
CARRY_LABELS_SAMPLES = 1 << 19


def _rank_and_count_into(scores: np.ndarray, labels: np.ndarray, *, out: list[np.ndarray]) -> None:
    """`_host_rank` of `scores` and the exclusive prefix sum of the 0/1 `labels` in its order.

    Large float32 samples carry each label through the sort in the low bit of the payload, next
    to the index: the labels come out in the ranked order without a gather.
    """
    order, group_start, group_stop, positive = out
    scores, labels = np.asarray(scores), np.asarray(labels)
    n = order.shape[-1]
    # (scores shared by several label vectors under vmap are sorted once, by `_host_rank`)
    if scores.dtype == np.float32 and scores.size == order.size and n >= CARRY_LABELS_SAMPLES:

        def index_and_label(payload: np.ndarray) -> None:  # n < 2^31: int32 indices
            np.left_shift(np.arange(n, dtype=np.uint32), np.uint32(1), out=payload)
            np.bitwise_or(payload, labels & np.uint8(1), out=payload, casting="unsafe")

        payload, ordered = host_kernels.sort_carrying(scores, order.shape, index_and_label)
        np.right_shift(payload, np.uint32(1), out=order.view(np.uint32))
        labels = payload & np.uint32(1)
        host_kernels.fill_tie_groups(ordered, group_start, group_stop)
    else:
        for target, value in zip(out, _host_rank(scores)):
            target[...] = value
        labels = np.take_along_axis(np.broadcast_to(labels, order.shape), order, axis=-1)
    positive[..., 0] = 0
    np.cumsum(labels, axis=-1, dtype=np.int32, out=positive[..., 1:])


# looked up on every call (`host_kernels.register`): a test may replace `_host_rank`
host_kernels.register("rank", lambda: _rank_into)
host_kernels.register("rank_and_count", lambda: _rank_and_count_into)


def unsigned_keys(scores: Array) -> Array:
    """An unsigned integer image of float `scores` with their order: uint32 (uint64 for float64).

    The sign bit is set on non-negative floats and every bit inverted on negative ones, so a
    plain unsigned compare orders the keys as the floats; -0.0 is folded into +0.0 (equal keys
    for equal scores). bfloat16 and float16 widen to float32 first. NaN must be handled before.
    """
    if scores.dtype != jnp.float64:
        scores = scores.astype(jnp.float32)
    unsigned = jnp.uint64 if scores.dtype == jnp.float64 else jnp.uint32
    scores = jnp.where(scores == 0, jnp.zeros_like(scores), scores)
    bits = jax.lax.bitcast_convert_type(scores, unsigned)
    sign = jnp.array(1 << (8 * bits.dtype.itemsize - 1), unsigned)
    return jnp.where(bits & sign, ~bits, bits | sign)


def key_sort(scores: Array) -> tuple[Array, Array]:
    """(ascending `unsigned_keys` of float `scores`, int32 permutation) along the last axis.

    The one device sort of float scores: a stable sort of one unsigned key carrying an int32
    index, whose comparator is a single compare, the form XLA's GPU sort rewriter hands to CUB's
    radix sort (a float key's NaN-aware comparator keeps it on XLA's comparison sort).
    """
    keys = unsigned_keys(scores)
    axis = scores.ndim - 1
    index = jax.lax.broadcasted_iota(jnp.int32, keys.shape, axis)
    keys, order = jax.lax.sort((keys, index), dimension=axis, num_keys=1, is_stable=True)
    return keys, order


def _device_rank(scores: Array) -> tuple[Array, Array, Array]:
    ordered, order = key_sort(scores)  # equal keys are equal scores: the tie groups
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


def flush(scores: Array) -> Array:
    """Scores with -0.0 and the subnormals made +0.0.

    -0.0 and +0.0 compare equal and must land in one tie group. Subnormals are flushed to zero
    explicitly: XLA's CPU backend already treats them as zero in every comparison, and the sort
    must see the same values or its groups disagree with XLA's searches. (Concrete inputs with
    subnormals never get here: `exact_order.order_keys` encodes them.)
    """
    tiny = jnp.finfo(scores.dtype).tiny
    return jnp.where(jnp.abs(scores) < tiny, jnp.zeros_like(scores), scores)


def _host_operand(scores: Array) -> Array:
    """The scores a host kernel sorts: float32 ones raw (its keys flush them, `float32_keys`, so
    that no flushed copy is written for the callback to copy again), others flushed here."""
    return scores if scores.dtype == jnp.float32 else flush(scores)


def _rank_indices(scores: Array) -> tuple[Array, Array, Array]:
    """(order, group_start, group_stop) of the raw `scores` along the last axis, all int32.

    On CPU a numpy kernel called from the program (`host_kernels`; numpy's sort and running min
    are several times faster than XLA's there); on GPU/TPU XLA's own sort. Both give the same
    groups; tie order may differ.
    """

    def elsewhere(values: Array) -> tuple[Array, Array, Array]:
        return _device_rank(flush(values))

    if not kernels.host_callbacks():
        return elsewhere(scores)

    def on_cpu(values: Array) -> tuple[Array, Array, Array]:
        result = (jax.ShapeDtypeStruct(values.shape, jnp.int32),) * 3
        return host_kernels.call("rank", result, _host_operand(values))

    return jax.lax.platform_dependent(scores, cpu=on_cpu, default=elsewhere)


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
    """Sort a 1-D score vector once and find its tie groups (zeros and subnormals as +0)."""
    # the permutation is piecewise constant in the scores: no gradient flows through it, while
    # the sorted scores (a gather) stay differentiable for the surrogate losses
    order, group_start, group_stop = _rank_indices(jax.lax.stop_gradient(scores))
    return Ranked(flush(scores)[order], order, group_start, group_stop)


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
    # (n + 1,) `positive` where the sort computed it (`rank_and_tally` on the CPU), else None
    positive_prefix: Array | None = None

    @property
    def positive(self) -> Array:
        """(n + 1,) weight of positives among the j smallest scores."""
        if self.positive_prefix is not None:
            return self.positive_prefix
        return count_prefix_sum(self.positive_weights)

    @property
    def negative(self) -> Array:
        """(n + 1,) weight of negatives among the j smallest scores."""
        if self.weights is None:  # unit weights: everyone below minus the positives, no scan
            return self.nonzero - self.positive
        return count_prefix_sum(self.weights - self.positive_weights)

    @property
    def total_positive(self) -> Array:
        if self.positive_prefix is not None:
            return self.positive_prefix[-1]
        return self.positive_weights.sum()

    @property
    def total_negative(self) -> Array:
        if self.weights is None:
            return self.positive_weights.shape[0] - self.total_positive
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
    return jax.lax.cummax(values, axis=axis) if op == "max" else prefix.running_sum(values)


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
        return Tallies(labels, None, _everyone(labels.shape[0]))
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
    positive = tallies.positive
    # (each read of a prefix sum is a callback of its own: XLA merges no two)
    negative = tallies.nonzero - positive if tallies.weights is None else tallies.negative
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
    """The start of every sort-based kernel: sort once, tally the weights, form the groups.

    Without weights, on the CPU, the labels ride through the host sort and come back with their
    prefix sum: one callback instead of a sort, a gather of the labels and a running sum.
    """
    host = kernels.host_callbacks() and kernels.host_cumulative()
    if weights is None and host and jax.default_backend() == "cpu":
        ranked, tallies = _rank_and_count(scores, labels)
    else:
        ranked = rank(scores)
        tallies = tally(ranked, labels, weights)
    return ranked, tallies, groups(ranked, tallies)


def _everyone(n: int) -> Array:
    return jnp.arange(n + 1, dtype=jnp.int32)


def _rank_and_count(scores: Array, labels: Array) -> tuple[Ranked, Tallies]:
    """`rank` and `tally` of unit weights in one host callback on the CPU (XLA's elsewhere)."""
    labels = labels.astype(jnp.uint8)  # 0/1: a quarter of the bytes to copy for the callback

    def elsewhere(values: Array, labels: Array) -> tuple[Array, Array, Array, Array]:
        order, group_start, group_stop = _device_rank(flush(values))
        positive = _device_cumulative(labels[order].astype(jnp.int32), op="sum")
        return order, group_start, group_stop, jnp.concatenate([jnp.zeros(1, jnp.int32), positive])

    def on_cpu(values: Array, labels: Array) -> tuple[Array, Array, Array, Array]:
        shape, n = values.shape[:-1], values.shape[-1]
        indices = jax.ShapeDtypeStruct(shape + (n,), jnp.int32)
        prefix = jax.ShapeDtypeStruct(shape + (n + 1,), jnp.int32)
        results = (indices,) * 3 + (prefix,)
        return host_kernels.call("rank_and_count", results, _host_operand(values), labels)

    order, group_start, group_stop, positive = jax.lax.platform_dependent(
        jax.lax.stop_gradient(scores), labels, cpu=on_cpu, default=elsewhere
    )
    ranked = Ranked(flush(scores)[order], order, group_start, group_stop)
    positive_weights = positive[1:] - positive[:-1]  # the labels in the ranked order
    return ranked, Tallies(positive_weights, None, _everyone(scores.shape[-1]), positive)


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
