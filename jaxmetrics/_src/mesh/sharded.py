"""Exact ranking metrics and curves of scores sharded over a mesh: a distributed sample sort.

When the sample axis of the scores is split over the devices of a mesh (one process or many,
``jax.distributed``), AUC and average precision are computed without gathering the data: memory
per device stays O(n / D); so are the ROC and precision-recall curves, which stay split.

1. Each device sorts its own samples and merges its ties into one entry per distinct score (the
   positive and negative weight there). A score held by a million samples is then one entry per
   device, so heavy ties cannot overload a device (the skew of sample sort).
2. Splitters: every device offers D regularly spaced entries of its sorted values; all devices
   gather the D * D offers, sort them and take the same D - 1 splitters (regular sampling, Shi
   and Schaeffer 1992). Entry v goes to device ``searchsorted(splitters, v, side="right")``, so
   equal scores always land on the same device.
3. The entries move with ``all_to_all`` in rounds of a fixed block per device pair (XLA needs
   static sizes; the rounds repeat while a pair has entries left), into a receive buffer of
   static capacity 2n/D + 2D. Regular sampling keeps every device under about 2n/D - n/D^2
   distinct entries (Li et al. 1993), and merging ties keeps a heavy score to one entry per
   device, so the buffer holds them. The matrix of pair counts is gathered first, so every
   device knows the number of rounds and whether the buffer suffices; if it ever did not, the
   program returns NaN rather than a wrong number, and an eager call is recomputed exactly on
   the gathered samples (O(n) memory per device). No gather is compiled into the sharded
   program: its memory per device stays O(n / D).
4. Each device sorts and merges what it received; the weight of positives and negatives below
   its range comes from an exclusive scan of the per-device totals. The metric is a sum of
   per-entry terms, added up with ``psum``.
5. A curve's points are those entries (drop_intermediate's neighbour test reads the nearest
   lower device's highest entry across a boundary). An exclusive scan of the per-device point
   counts gives each point its global position, and ``all_to_all`` rounds move it to the device
   whose block of the output holds that position: the curve stays split, n / D + 1 points per
   device.

Every value equals the single-device result up to float rounding. As on one device, each
per-entry term is a share (divided by the class totals before it is multiplied and summed), so
huge weights (1e20) cannot overflow float32.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec

from jaxmetrics._src.core import kernels, layouts, validation
from jaxmetrics._src.core.numerics import safe_divide

Array = jax.Array


# ------------------------------------------------------------------------------ the sort
class _Merged(NamedTuple):
    """Distinct scores ascending (padding +inf at the end) with their weight per class."""

    values: Array
    positive: Array
    negative: Array


def _merge_ties(values: Array, positive: Array, negative: Array) -> _Merged:
    """Sort entries and merge equal values into one; entries without weight are dropped."""
    return _merge_ties_indexed(values, positive, negative)[0]


def _merge_ties_indexed(values: Array, positive: Array, negative: Array) -> tuple[_Merged, Array]:
    """`_merge_ties`, and the merged entry of every input position (from the same sort)."""
    empty = (positive == 0) & (negative == 0)
    values = jnp.where(empty, jnp.inf, values)
    position = jnp.arange(values.shape[0], dtype=jnp.int32)
    values, positive, negative, position = jax.lax.sort(
        (values, positive, negative, position), num_keys=1
    )
    starts = jnp.concatenate([jnp.ones(1, bool), values[1:] != values[:-1]])
    group = jnp.cumsum(starts) - 1
    size = values.shape[0]
    merged_values = jnp.full(size, jnp.inf, values.dtype).at[group].set(values)
    merged_positive = jnp.zeros_like(positive).at[group].add(positive)
    merged_negative = jnp.zeros_like(negative).at[group].add(negative)
    real = merged_values < jnp.inf
    merged = _Merged(
        merged_values,
        jnp.where(real, merged_positive, 0),
        jnp.where(real, merged_negative, 0),
    )
    return merged, jnp.zeros(size, jnp.int32).at[position].set(group.astype(jnp.int32))


def _splitters(merged: _Merged, axes: tuple[str, ...], devices: int) -> Array:
    """The same D - 1 splitters on every device, from D regular samples of each device."""
    count = jnp.sum(merged.values < jnp.inf)
    positions = (jnp.arange(devices) * count) // devices
    offers = jnp.where(count > 0, merged.values[positions], jnp.inf)
    pool = jnp.sort(jax.lax.all_gather(offers, axes, tiled=True))
    return pool[jnp.arange(1, devices) * devices + devices // 2 - 1]


class _Route(NamedTuple):
    """How `_exchange` moved the entries, to send answers back the same way."""

    first: Array  # [D] where the entries for each destination start locally
    sizes: Array  # [D] how many local entries went to each destination
    incoming: Array  # [D] how many entries arrived from each source
    where: Array  # [D] where each source's entries start in the receive buffer
    rounds: Array  # rounds of `block` entries per pair
    fits: Array  # whether every receive buffer held its entries


def _exchange(
    merged: _Merged,
    splitters: Array,
    axes: tuple[str, ...],
    devices: int,
    block: int,
    capacity: int,
) -> tuple[_Merged, _Route]:
    """Send every entry to the device owning its range; returns (received, route)."""
    count = jnp.sum(merged.values < jnp.inf)
    edges = jnp.minimum(jnp.searchsorted(merged.values, splitters, side="right"), count)
    first = jnp.concatenate([jnp.zeros(1, edges.dtype), edges])
    sizes = jnp.concatenate([edges, count[None]]) - first  # entries for each device
    received, route = _send(tuple(merged), (jnp.inf, 0, 0), first, sizes, axes, block, capacity)
    return _Merged(*received), route


def _send(
    fields: tuple[Array, ...],
    fills: tuple[Any, ...],
    first: Array,
    sizes: Array,
    axes: tuple[str, ...],
    block: int,
    capacity: int,
) -> tuple[tuple[Array, ...], _Route]:
    """Entries ``first[t] : first[t] + sizes[t]`` of the local `fields` go to device t.

    Received entries are stored by source device, each source's in its order, in buffers of
    `capacity` (the rest `fills`). Moves `block` entries per device pair and round with
    ``all_to_all``; the pair counts are gathered first, so every device runs the same rounds
    and knows whether every buffer holds its entries (``route.fits``; if not, nothing moves).
    """
    table = jax.lax.all_gather(sizes, axes, tiled=False)  # [source, destination]
    me = jax.lax.axis_index(axes)
    incoming = table[:, me]
    fits = jnp.all(table.sum(axis=0) <= capacity)
    rounds = (jnp.max(table) + block - 1) // block
    where = jnp.concatenate([jnp.zeros(1, incoming.dtype), jnp.cumsum(incoming)[:-1]])
    slots = jnp.arange(block)

    def one_round(r, received):
        offset = r * block + slots  # [block]
        index = first[:, None] + offset[None, :]  # [destination, block]
        sending = offset[None, :] < sizes[:, None]
        index = jnp.where(sending, index, 0)
        parts = [jnp.where(sending, field[index], fill) for field, fill in zip(fields, fills)]
        arrived = [jax.lax.all_to_all(p, axes, 0, 0, tiled=False) for p in parts]
        target = where[:, None] + offset[None, :]  # [source, block]
        real = offset[None, :] < incoming[:, None]
        target = jnp.where(real & fits, target, capacity).reshape(-1)
        return tuple(
            field.at[target].set(part.reshape(-1), mode="drop")
            for field, part in zip(received, arrived)
        )

    empty = tuple(jnp.full(capacity, fill, field.dtype) for field, fill in zip(fields, fills))
    received = jax.lax.fori_loop(0, jnp.where(fits, rounds, 0), one_round, empty)
    return received, _Route(first, sizes, incoming, where, rounds, fits)


def _send_back(
    answers: tuple[Array, ...], route: _Route, axes: tuple[str, ...], block: int, size: int
) -> tuple[Array, ...]:
    """The reverse of `_exchange`: a value per received entry goes back to the entry's sender,
    landing at the entry's place among the sender's `size` local entries."""
    slots = jnp.arange(block)

    def one_round(r, local):
        offset = r * block + slots
        real = offset[None, :] < route.incoming[:, None]  # [source, block]
        index = jnp.where(real, route.where[:, None] + offset[None, :], 0)
        parts = [jnp.where(real, answer[index], 0) for answer in answers]
        arrived = [jax.lax.all_to_all(p, axes, 0, 0, tiled=False) for p in parts]
        mine = offset[None, :] < route.sizes[:, None]  # [owner, block]
        target = jnp.where(mine, route.first[:, None] + offset[None, :], size).reshape(-1)
        return tuple(
            field.at[target].set(part.reshape(-1), mode="drop")
            for field, part in zip(local, arrived)
        )

    empty = tuple(jnp.zeros(size, answer.dtype) for answer in answers)
    return jax.lax.fori_loop(0, jnp.where(route.fits, route.rounds, 0), one_round, empty)


class _Placed(NamedTuple):
    """This device's distinct scores with the global weight of each class below them."""

    merged: _Merged
    positive_below: Array
    negative_below: Array
    total_positive: Array
    total_negative: Array


def _place(merged: _Merged, axes: tuple[str, ...]) -> _Placed:
    totals = jnp.stack([merged.positive.sum(), merged.negative.sum()])
    every = jax.lax.all_gather(totals, axes, tiled=False)  # [device, 2]
    me = jax.lax.axis_index(axes)
    before = jnp.where(jnp.arange(every.shape[0])[:, None] < me, every, 0).sum(axis=0)
    overall = every.sum(axis=0)
    below = lambda w, start: start + jnp.cumsum(w) - w  # noqa: E731
    return _Placed(
        merged,
        below(merged.positive, before[0]),
        below(merged.negative, before[1]),
        overall[0],
        overall[1],
    )


def _sorted_over_devices(
    scores: Array, labels: Array, weights: Array, axes: tuple[str, ...], devices: int, capacity: int
) -> tuple[_Merged, Array]:
    """Inside `shard_map`: the merged distinct scores of this device's value range, whether they
    fit the capacity everywhere (the same flag on every device)."""
    positive = jnp.where(labels == 1, weights, 0)
    negative = jnp.where(labels == 1, 0, weights)
    local = _merge_ties(scores, positive, negative)
    splitters = _splitters(local, axes, devices)
    block = max(1, -(-scores.shape[0] // devices))
    received, route = _exchange(local, splitters, axes, devices, block, capacity)
    return _merge_ties(*received), route.fits


def _placement_values(
    scores: Array, labels: Array, weights: Array, axes: tuple[str, ...], capacity: int, dtype: Any
) -> tuple[Array, Array, Array]:
    """Inside `shard_map`: DeLong's placement values of this device's samples under one model.

    For a positive, V10 = (negatives below its score + half the tied) / N; for a negative,
    V01 = (positives above + half the tied) / P (each 0 for the other class), as
    `delong._structural_components` gives them on one device. The merged entries travel to
    their owners as for the AUC, the owners answer for each entry they received, and the answers
    come back the same way (`_send_back`). Returns (V10, V01, fits).
    """
    devices = jax.lax.axis_size(axes)
    positive = jnp.where(labels == 1, weights, 0)
    negative = jnp.where(labels == 1, 0, weights)
    local, entry = _merge_ties_indexed(scores, positive, negative)
    splitters = _splitters(local, axes, devices)
    block = max(1, -(-scores.shape[0] // devices))
    received, route = _exchange(local, splitters, axes, devices, block, capacity)
    placed = _place(_merge_ties(*received), axes)
    m = placed.merged
    at = jnp.clip(jnp.searchsorted(m.values, received.values, side="left"), 0, capacity - 1)
    p = placed.total_positive.astype(dtype)
    n = placed.total_negative.astype(dtype)
    tied_negative, tied_positive = m.negative[at].astype(dtype), m.positive[at].astype(dtype)
    v10 = (placed.negative_below[at].astype(dtype) + tied_negative / 2) / n
    above = p - placed.positive_below[at].astype(dtype) - tied_positive
    v01 = (above + tied_positive / 2) / p
    v10, v01 = _send_back((v10, v01), route, axes, block, scores.shape[0])
    v10 = jnp.where(labels == 1, v10[entry], 0)
    v01 = jnp.where(labels == 1, 0, v01[entry])
    nan = jnp.asarray(jnp.nan, dtype)
    return jnp.where(route.fits, v10, nan), jnp.where(route.fits, v01, nan), route.fits


# ------------------------------------------------------------------------------ metrics
def _shares(placed: _Placed, dtype: Any) -> tuple[Array, Array]:
    """The global weight of each class, 1 where it is 0 (the finish marks those NaN): each term
    is divided before it is multiplied or summed, so huge weights (1e20) cannot overflow."""
    p = placed.total_positive.astype(dtype)
    n = placed.total_negative.astype(dtype)
    return jnp.where(p > 0, p, 1), jnp.where(n > 0, n, 1)


def _auc_terms(placed: _Placed, dtype: Any) -> Array:
    m = placed.merged
    p, n = _shares(placed, dtype)
    beaten = (placed.negative_below.astype(dtype) + m.negative.astype(dtype) / 2) / n
    return (m.positive.astype(dtype) / p * beaten).sum()


def _ap_terms(placed: _Placed, dtype: Any) -> Array:
    m = placed.merged
    true_above = (placed.total_positive - placed.positive_below).astype(dtype)
    false_above = (placed.total_negative - placed.negative_below).astype(dtype)
    above = true_above + false_above
    precision = true_above / jnp.where(above > 0, above, 1)
    p, _ = _shares(placed, dtype)
    return (m.positive.astype(dtype) / p * precision).sum()


def _finish_auc(total: Array, placed: _Placed, dtype: Any) -> Array:
    defined = (placed.total_positive > 0) & (placed.total_negative > 0)
    return jnp.where(defined, total, jnp.asarray(jnp.nan, dtype))


def _finish_ap(total: Array, placed: _Placed, dtype: Any) -> Array:
    return jnp.where(placed.total_positive > 0, total, jnp.asarray(jnp.nan, dtype))


_METRICS = {"roc_auc": (_auc_terms, _finish_auc), "average_precision": (_ap_terms, _finish_ap)}


def _laid_out(scores: Array, labels: Array, weights: Array | None, split) -> tuple:
    """The operands of a sharded program: unit weights made explicit, every array's last axis
    split over the mesh axes of `split`; and the number of devices along them."""
    mesh, axes = split
    if weights is None:
        weights = jnp.ones_like(labels)
    arrays = tuple(layouts.split_like(jnp.asarray(a), split) for a in (scores, labels, weights))
    return arrays, int(np.prod([mesh.shape[a] for a in axes]))


def placement_values(
    scores: Array, labels: Array, weights: Array | None, split
) -> tuple[Array, Array]:
    """DeLong's placement values (V10, V01), each ``[M, n]``, of ``[M, n]`` scores whose sample
    axis is split over mesh axes (`split`), computed where the samples are: O(n / D) memory
    per device. NaN if a receive buffer overflowed (see the module docstring)."""
    mesh, axes = split
    (scores, labels, weights), devices = _laid_out(scores, labels, weights, split)
    capacity = default_capacity(scores.shape[-1] // devices, devices)
    dtype = validation.float_dtype()

    def on_device(scores, labels, weights):
        per_model = [
            _placement_values(row, labels, weights, axes, capacity, dtype)[:2] for row in scores
        ]
        return tuple(jnp.stack(column) for column in zip(*per_model))

    return jax.shard_map(
        on_device,
        mesh=mesh,
        in_specs=(PartitionSpec(None, axes), PartitionSpec(axes), PartitionSpec(axes)),
        out_specs=(PartitionSpec(None, axes),) * 2,
        check_vma=False,
    )(scores, labels, weights)


@functools.partial(jax.jit, static_argnames=("kernel", "mesh", "axes"))
def _summed_over_devices(kernel, scores, labels, weights, extra, *, mesh, axes):
    spec = PartitionSpec(axes)

    def on_device(scores, labels, weights, extra):
        with kernels.without_callbacks():
            local = kernel(scores, labels, weights, *extra)
        total = jax.lax.psum(local, axes)
        # a mark (-1, a NaN threshold's counts) stays one mark, not D of them
        return jax.tree_util.tree_map(
            lambda t: jnp.where(t < 0, jnp.asarray(-1, t.dtype), t), total
        )

    return jax.shard_map(
        on_device,
        mesh=mesh,
        in_specs=(spec, spec, spec, PartitionSpec()),
        out_specs=PartitionSpec(),
        check_vma=False,
    )(scores, labels, weights, extra)


def summed_over_devices(kernel, scores, labels, weights, extra, split):
    """A kernel whose result adds up over any split of the samples (counts at fixed
    thresholds), run on each device's samples and summed with `psum`: exact, O(n / D)."""
    mesh, axes = split
    (scores, labels, weights), _ = _laid_out(scores, labels, weights, split)
    return _summed_over_devices(kernel, scores, labels, weights, tuple(extra), mesh=mesh, axes=axes)


def default_capacity(local: int, devices: int) -> int:
    """Receive buffer per device: regular sampling keeps it under ~2n/D distinct entries."""
    return 2 * local + 2 * devices


def over_axes(
    metrics: tuple[str, ...],
    scores: Array,
    labels: Array,
    weights: Array,
    axes: tuple[str, ...],
    *,
    capacity: int | None = None,
) -> tuple[tuple[Array, ...], Array]:
    """Inside `shard_map`: each of `metrics` of the samples of all devices along `axes`.

    `scores`, `labels` (0/1) and `weights` are this device's 1-D samples (weight 0 for empty
    slots). One sample sort serves all the metrics; every device gets the same values. Returns
    the values and whether the receive buffers held every entry (if not, the values are NaN).
    """
    devices = jax.lax.axis_size(axes)
    capacity = capacity or default_capacity(scores.shape[0], devices)
    dtype = validation.float_dtype()
    received, fits = _sorted_over_devices(scores, labels, weights, axes, devices, capacity)
    placed = _place(received, axes)
    values = []
    for metric in metrics:
        terms, finish = _METRICS[metric]
        value = finish(jax.lax.psum(terms(placed, dtype), axes), placed, dtype)
        values.append(jnp.where(fits, value, jnp.nan))  # never a partial sum
    return tuple(values), fits


@functools.partial(jax.jit, static_argnames=("metric", "mesh", "axes", "capacity"))
def _sharded_metric(scores, labels, weights, *, metric, mesh, axes, capacity):
    spec = PartitionSpec(axes)

    def on_device(scores, labels, weights):
        (value,), fits = over_axes((metric,), scores, labels, weights, axes, capacity=capacity)
        return value, fits

    return jax.shard_map(
        on_device,
        mesh=mesh,
        in_specs=(spec, spec, spec),
        out_specs=(PartitionSpec(), PartitionSpec()),
        check_vma=False,
    )(scores, labels, weights)


def sharded_metric(
    metric: str, scores: Array, labels: Array, weights: Array | None, split
) -> tuple[Array, Array]:
    """`metric` ("roc_auc" or "average_precision") of 1-D scores split over mesh axes, and
    whether the receive buffers sufficed (if not, the value is NaN: recompute it gathered)."""
    mesh, axes = split
    (scores, labels, weights), devices = _laid_out(scores, labels, weights, split)
    capacity = default_capacity(scores.shape[-1] // devices, devices)
    return _sharded_metric(
        scores, labels, weights, metric=metric, mesh=mesh, axes=axes, capacity=capacity
    )


# ------------------------------------------------------------------------------ curves
def _curve_points(
    placed: _Placed, kind: str, drop_intermediate: bool, axes: tuple[str, ...]
) -> tuple[Array, Array, Array, Array, Array]:
    """Inside `shard_map`: which of this device's entries are points of the curve, and where.

    Returns (keep, position in the global curve, number of points of all devices, tp, fp). An
    entry's neighbour below may sit on a lower device (the nearest one holding entries), and
    whether it has one above depends on the higher devices: one small gather of each device's
    count and highest entry settles both. ROC points go highest threshold first after the
    (0, 0) point; precision-recall points lowest threshold first.
    """
    m = placed.merged
    size = m.values.shape[0]
    index = jnp.arange(size)
    count = jnp.sum(m.values < jnp.inf)
    real = index < count
    top = jnp.maximum(count - 1, 0)
    ends = jax.lax.all_gather(
        jnp.stack([count.astype(m.positive.dtype), m.positive[top], m.negative[top]]),
        axes,
        tiled=False,
    )  # [device, (count, positive, negative) of its highest entry]
    me = jax.lax.axis_index(axes)
    device = jnp.arange(ends.shape[0])
    holding = ends[:, 0] > 0
    lower = jnp.max(jnp.where(holding & (device < me), device, -1))
    from_lower = ends[jnp.maximum(lower, 0)]
    previous_positive = jnp.concatenate([from_lower[1:2], m.positive[:-1]])
    previous_negative = jnp.concatenate([from_lower[2:3], m.negative[:-1]])
    has_below = (index > 0) | (lower >= 0)
    has_above = (index < count - 1) | jnp.any(holding & (device > me))
    keep = real
    if drop_intermediate:
        interior = has_below & has_above
        if kind == "roc":  # a bend: the step into this point differs from the step out of it
            bends = (previous_positive != m.positive) | (previous_negative != m.negative)
        else:  # recall changes on one side
            bends = (previous_positive != 0) | (m.positive != 0)
        keep = real & (~interior | bends)
    kept = jnp.sum(keep)
    every = jax.lax.all_gather(kept, axes, tiled=False)
    rank = jnp.cumsum(keep) - 1  # among this device's points, ascending thresholds
    if kind == "roc":
        position = 1 + jnp.sum(jnp.where(device > me, every, 0)) + kept - 1 - rank
    else:
        position = jnp.sum(jnp.where(device < me, every, 0)) + rank
    tp = placed.total_positive - placed.positive_below
    fp = placed.total_negative - placed.negative_below
    return keep, position, jnp.sum(every), tp, fp


def _curve_on_device(
    scores: Array,
    labels: Array,
    weights: Array,
    *,
    kind: str,
    drop_intermediate: bool,
    axes: tuple[str, ...],
    capacity: int,
    block: int,
):
    """Inside `shard_map`: this device's block of `block` points of the global curve."""

    devices = jax.lax.axis_size(axes)
    dtype = validation.float_dtype()
    received, fits = _sorted_over_devices(scores, labels, weights, axes, devices, capacity)
    placed = _place(received, axes)
    keep, position, points, tp, fp = _curve_points(placed, kind, drop_intermediate, axes)
    # this device's points in the order of their global positions, each to the device whose
    # block of the output holds it (a block holds each position once: `block` receive slots)
    big = jnp.iinfo(jnp.int32).max
    order = jnp.where(keep, position, big).astype(jnp.int32)
    order, tp, fp, values = jax.lax.sort((order, tp, fp, placed.merged.values), num_keys=1)
    owner_starts = jnp.arange(devices + 1, dtype=jnp.int32) * block
    edges = jnp.searchsorted(order, owner_starts, side="left")
    first, sizes = edges[:-1], edges[1:] - edges[:-1]
    step = max(1, -(-block // devices))
    (order, tp, fp, values), _ = _send(
        (order, tp, fp, values), (big, 0, 0, jnp.inf), first, sizes, axes, step, block
    )
    me = jax.lax.axis_index(axes)
    here = me * block + jnp.arange(block)  # the global positions of this device's block
    p, n = placed.total_positive, placed.total_negative
    if kind == "roc":
        # (0, 0) at +inf first; after the last point, its copy: all weight flagged, at the
        # lowest score (the origin again when there is no weight at all)
        lowest = jax.lax.pmin(placed.merged.values[0], axes)
        any_point = points > 0
        fill = (
            jnp.where(here == 0, 0, jnp.where(any_point, p, 0)),
            jnp.where(here == 0, 0, jnp.where(any_point, n, 0)),
            jnp.where((here == 0) | ~any_point, jnp.inf, lowest),
        )
    else:  # the closing point (precision 1, recall 0, +inf) after the last and as padding
        fill = (jnp.zeros(block, tp.dtype), jnp.zeros(block, fp.dtype), jnp.full(block, jnp.inf))
    slot = jnp.where(order < big, order - me * block, block)
    tp_out, fp_out, thresholds = (
        jnp.broadcast_to(f, (block,)).astype(x.dtype).at[slot].set(x, mode="drop")
        for f, x in zip(fill, (tp, fp, values))
    )
    valid = here <= points  # the points and one more: (0, 0) first, or the closing point
    if kind == "roc":
        first_field = safe_divide(fp_out, n, jnp.nan)
        second_field = safe_divide(tp_out, p, jnp.nan)
    else:
        closing = thresholds == jnp.inf
        first_field = jnp.where(closing, 1.0, safe_divide(tp_out, tp_out + fp_out, 0.0))
        second_field = safe_divide(tp_out, p, jnp.nan)
    nan = jnp.asarray(jnp.nan, dtype)
    fields = (
        jnp.where(fits, first_field.astype(dtype), nan),
        jnp.where(fits, second_field.astype(dtype), nan),
        jnp.where(fits, thresholds, jnp.nan),
        valid & fits,
    )
    return fields, fits


@functools.partial(
    jax.jit, static_argnames=("kind", "drop_intermediate", "mesh", "axes", "capacity", "block")
)
def _sharded_curve(
    scores, labels, weights, *, kind, drop_intermediate, mesh, axes, capacity, block
):
    spec = PartitionSpec(axes)
    on_device = functools.partial(
        _curve_on_device,
        kind=kind,
        drop_intermediate=drop_intermediate,
        axes=axes,
        capacity=capacity,
        block=block,
    )
    fields, fits = jax.shard_map(
        on_device,
        mesh=mesh,
        in_specs=(spec, spec, spec),
        out_specs=((spec,) * 4, PartitionSpec()),
        check_vma=False,
    )(scores, labels, weights)
    return fields, fits


def sharded_curve(
    kind: str, scores: Array, labels: Array, weights: Array | None, split, *, drop_intermediate
) -> tuple[tuple[Array, ...], Array]:
    """The ROC (`kind` "roc") or precision-recall ("pr") curve of 1-D scores split over mesh
    axes, as the fields of `RocCurve` / `PrCurve` (real points first, then copies of the last
    one), split over the same devices: O(n / D) memory per device. Their length is n + D, not
    n + 1: a split axis must divide evenly over the D devices, so each holds n / D + 1 points.
    Also returns whether the receive buffers sufficed (if not, the float fields are NaN and
    nothing is valid: recompute it gathered)."""
    mesh, axes = split
    (scores, labels, weights), devices = _laid_out(scores, labels, weights, split)
    capacity = default_capacity(scores.shape[-1] // devices, devices)
    return _sharded_curve(
        scores,
        labels,
        weights,
        kind=kind,
        drop_intermediate=drop_intermediate,
        mesh=mesh,
        axes=axes,
        capacity=capacity,
        block=scores.shape[-1] // devices + 1,  # n + 1 points over D devices, rounded up
    )
