"""The mesh forms of the ranking metrics: ROC AUC, average precision, the ROC and
precision-recall curves and DeLong's placement values of scores whose samples are split over a
mesh, computed where the samples are (O(n / D) memory per device).

Each form sorts with the distributed sample sort (`sample_sort.py`) and reads its tie groups
with the same term functions as the single-device kernels (`core/terms.py`): the metric is a sum
of per-group terms, added up with ``psum``; a curve's points are the groups themselves. Every
value equals the single-device result up to float rounding, and follows the same rules (a
separated set scores exactly 1; weights of 1e20 cannot overflow float32).

A curve stays split: an exclusive scan of the per-device point counts gives each point its
global position, and ``all_to_all`` rounds move it to the device whose block of the output
holds that position, n / D + 1 points per device (drop_intermediate's neighbour test reads the
nearest lower device's highest group across a boundary).

Metric modules hand these to `recipe.Kernel` as the `mesh_form` of their kernels.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
from jax.sharding import PartitionSpec

from jaxmetrics._src.core import kernels, terms
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.typing import Array
from jaxmetrics._src.mesh import sample_sort


# ------------------------------------------------------------------------------ metrics
def auc_over_axes(groups: terms.TieGroups, axes: tuple[str, ...]) -> Array:
    """Inside `shard_map`: the ROC AUC of all devices' tie groups (this device's `groups`)."""
    dtype = float_dtype()
    scale = terms.auc_scale(groups.total_negative, dtype)
    local = terms.auc_wins(groups.positive, groups.negative_below, groups.negative, scale, dtype)
    wins = jax.lax.psum(local.sum(), axes)
    return terms.auc_of_wins(wins, groups.total_positive, groups.total_negative, scale, dtype)


def ap_over_axes(groups: terms.TieGroups, axes: tuple[str, ...]) -> Array:
    """Inside `shard_map`: the average precision of all devices' tie groups."""
    dtype = float_dtype()
    steps, imperfect = terms.ap_steps(groups, dtype)
    total = jax.lax.psum(steps.sum(), axes)
    any_imperfect = jax.lax.psum(jnp.any(imperfect).astype(jnp.int32), axes) > 0
    return terms.ap_of_steps(
        total, any_imperfect, groups.total_positive, groups.total_negative, dtype
    )


def ranking_over_axes(
    scores: Array,
    labels: Array,
    weights: Array,
    axes: tuple[str, ...],
    *,
    capacity: int | None = None,
) -> tuple[Array, Array, Array]:
    """Inside `shard_map`: (ROC AUC, average precision, fits) of the samples of all devices
    along `axes`, from one sample sort; every device gets the same values.

    `scores`, `labels` (0/1) and `weights` are this device's 1-D samples (weight 0 for empty
    slots). `fits`: whether the receive buffers held every entry (if not, the values are NaN).
    """
    devices = jax.lax.axis_size(axes)
    capacity = capacity or sample_sort.default_capacity(scores.shape[0], devices)
    return _over_axes((auc_over_axes, ap_over_axes), scores, labels, weights, axes, capacity)


def _over_axes(metrics, scores, labels, weights, axes, capacity) -> tuple[Array, ...]:
    placed, fits = sample_sort.sort_over_devices(scores, labels, weights, axes, capacity)
    # never a partial sum: NaN where a buffer overflowed
    values = [jnp.where(fits, metric(placed.groups, axes), jnp.nan) for metric in metrics]
    return (*values, fits)


@functools.partial(jax.jit, static_argnames=("metric", "mesh", "axes", "capacity"))
def _sharded_metric(scores, labels, weights, *, metric, mesh, axes, capacity):
    spec = PartitionSpec(axes)
    return jax.shard_map(
        lambda *arrays: _over_axes((metric,), *arrays, axes, capacity),
        mesh=mesh,
        in_specs=(spec, spec, spec),
        out_specs=(PartitionSpec(), PartitionSpec()),
        check_vma=False,
    )(scores, labels, weights)


def sharded_metric(
    metric: Callable[[terms.TieGroups, tuple[str, ...]], Array],
    scores: Array,
    labels: Array,
    weights: Array | None,
    split: Any,
) -> tuple[Array, Array]:
    """`metric` (`auc_over_axes` or `ap_over_axes`) of 1-D scores split over mesh axes, and
    whether the receive buffers sufficed (if not, the value is NaN: recompute it gathered)."""
    mesh, axes = split
    (scores, labels, weights), devices = sample_sort.laid_out(scores, labels, weights, split)
    capacity = sample_sort.default_capacity(scores.shape[-1] // devices, devices)
    return _sharded_metric(
        scores, labels, weights, metric=metric, mesh=mesh, axes=axes, capacity=capacity
    )


def placement_values(
    scores: Array, labels: Array, weights: Array | None, split: Any
) -> tuple[Array, Array]:
    """DeLong's placement values (V10, V01), each ``[M, n]``, of ``[M, n]`` scores whose sample
    axis is split over mesh axes (`split`), computed where the samples are: O(n / D) memory
    per device. As `terms.placement_values` gives them on one device: each 0 for the other
    class; NaN if a receive buffer overflowed (see `sample_sort.py`)."""
    mesh, axes = split
    (scores, labels, weights), devices = sample_sort.laid_out(scores, labels, weights, split)
    capacity = sample_sort.default_capacity(scores.shape[-1] // devices, devices)
    dtype = float_dtype()
    answer = functools.partial(terms.placement_values, dtype=dtype)

    def one_model(row, labels, weights):
        (v10, v01), fits = sample_sort.answer_samples(row, labels, weights, axes, capacity, answer)
        nan = jnp.asarray(jnp.nan, dtype)
        v10 = jnp.where(fits, jnp.where(labels == 1, v10, 0), nan)
        v01 = jnp.where(fits, jnp.where(labels == 1, 0, v01), nan)
        return v10, v01

    def on_device(scores, labels, weights):
        per_model = [one_model(row, labels, weights) for row in scores]
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
    (scores, labels, weights), _ = sample_sort.laid_out(scores, labels, weights, split)
    return _summed_over_devices(kernel, scores, labels, weights, tuple(extra), mesh=mesh, axes=axes)


# ------------------------------------------------------------------------------ curves
def _curve_points(
    placed: sample_sort.Placed, kind: str, drop_intermediate: bool, axes: tuple[str, ...]
) -> tuple[Array, Array, Array]:
    """Inside `shard_map`: which of this device's groups are points of the curve, and where.

    Returns (keep, position in the global curve, number of points of all devices). A group's
    neighbour below may sit on a lower device (the nearest one holding groups), and whether it
    has one above depends on the higher devices: one small gather of each device's count and
    highest group settles both. ROC points go highest threshold first after the (0, 0) point;
    precision-recall points lowest threshold first.
    """
    groups = placed.groups
    size = placed.values.shape[0]
    index = jnp.arange(size)
    count = jnp.sum(placed.values < jnp.inf)
    real = index < count
    top = jnp.maximum(count - 1, 0)
    ends = jax.lax.all_gather(
        jnp.stack(
            [count.astype(groups.positive.dtype), groups.positive[top], groups.negative[top]]
        ),
        axes,
        tiled=False,
    )  # [device, (count, positive, negative) of its highest group]
    me = jax.lax.axis_index(axes)
    device = jnp.arange(ends.shape[0])
    holding = ends[:, 0] > 0
    lower = jnp.max(jnp.where(holding & (device < me), device, -1))
    from_lower = ends[jnp.maximum(lower, 0)]
    positive_next = jnp.concatenate([from_lower[1:2], groups.positive[:-1]])
    negative_next = jnp.concatenate([from_lower[2:3], groups.negative[:-1]])
    has_below = (index > 0) | (lower >= 0)
    has_above = (index < count - 1) | jnp.any(holding & (device > me))
    keep = real
    if drop_intermediate:
        interior = has_below & has_above
        if kind == "roc":
            bends = terms.roc_bends(groups.positive, groups.negative, positive_next, negative_next)
        else:
            bends = terms.pr_bends(groups.positive, positive_next)
        keep = real & (~interior | bends)
    kept = jnp.sum(keep)
    every = jax.lax.all_gather(kept, axes, tiled=False)
    rank = jnp.cumsum(keep) - 1  # among this device's points, ascending thresholds
    if kind == "roc":
        position = 1 + jnp.sum(jnp.where(device > me, every, 0)) + kept - 1 - rank
    else:
        position = jnp.sum(jnp.where(device < me, every, 0)) + rank
    return keep, position, jnp.sum(every)


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
    placed, fits = sample_sort.sort_over_devices(scores, labels, weights, axes, capacity)
    keep, position, points = _curve_points(placed, kind, drop_intermediate, axes)
    groups = placed.groups
    # this device's points in the order of their global positions, each to the device whose
    # block of the output holds it (a block holds each position once: `block` receive slots)
    big = jnp.iinfo(jnp.int32).max
    order = jnp.where(keep, position, big).astype(jnp.int32)
    by_position = sample_sort.ascending_order(order)
    order, tp, fp, values = (x[by_position] for x in (order, groups.tp, groups.fp, placed.values))
    owner_starts = jnp.arange(devices + 1, dtype=jnp.int32) * block
    edges = jnp.searchsorted(order, owner_starts, side="left")
    first, sizes = edges[:-1], edges[1:] - edges[:-1]
    step = max(1, -(-block // devices))
    (order, tp, fp, values), _ = sample_sort.send(
        (order, tp, fp, values), (big, 0, 0, jnp.inf), first, sizes, axes, step, block
    )
    me = jax.lax.axis_index(axes)
    here = me * block + jnp.arange(block)  # the global positions of this device's block
    p, n = groups.total_positive, groups.total_negative
    if kind == "roc":
        # (0, 0) at +inf first; after the last point, its copy: all weight flagged, at the
        # lowest score (the origin again when there is no weight at all)
        lowest = jax.lax.pmin(placed.values[0], axes)
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
        first_field, second_field = terms.roc_rates(tp_out, fp_out, p, n)
    else:
        first_field, second_field = terms.pr_rates(tp_out, fp_out, p, thresholds == jnp.inf)
    dtype = float_dtype()
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
    (scores, labels, weights), devices = sample_sort.laid_out(scores, labels, weights, split)
    capacity = sample_sort.default_capacity(scores.shape[-1] // devices, devices)
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
