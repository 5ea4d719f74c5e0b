"""A distributed sample sort: the tie groups of scores whose samples are split over a mesh.

When the sample axis of the scores is split over the devices of a mesh (one process or many,
``jax.distributed``), the ranking metrics are computed without gathering the data: memory per
device stays O(n / D). This module sorts; the metrics are `forms.py`, built from the terms of
`core/terms.py` that the single-device kernels call too.

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
4. Each device sorts and merges what it received: the tie groups of its range of scores. The
   weight of positives and negatives below its range comes from an exclusive scan of the
   per-device totals (`place`), which makes them `terms.TieGroups`.
5. Values per sample (DeLong's placement values) go back the way the entries came
   (`answer_samples`); a curve's points move to the device whose block of the output holds
   their position (`send`, see `forms.py`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import layouts, sorting, terms
from jaxmetrics._src.core.typing import Array


class Merged(NamedTuple):
    """Distinct scores ascending (padding +inf at the end) with their weight per class."""

    values: Array
    positive: Array
    negative: Array


def merge_ties(values: Array, positive: Array, negative: Array) -> Merged:
    """Sort entries and merge equal values into one; entries without weight are dropped."""
    return merge_ties_indexed(values, positive, negative)[0]


def two_key_order(major: Array, minor: Array) -> Array:
    """The stable ascending int32 permutation by unsigned (`major`, `minor`) along the last
    axis: two stable passes of (key, int32 index), the minor key first (a radix sort), each a
    single unsigned compare, the form XLA's GPU sort rewriter hands to CUB."""
    axis = major.ndim - 1
    index = jax.lax.broadcasted_iota(jnp.int32, minor.shape, axis)
    by_minor = jax.lax.sort((minor, index), dimension=axis, num_keys=1, is_stable=True)[1]
    major = jnp.take_along_axis(major, by_minor, axis=axis)
    return jax.lax.sort((major, by_minor), dimension=axis, num_keys=1, is_stable=True)[1]


def ascending_order(values: Array) -> Array:
    """The stable ascending permutation (int32) of 1-D `values`: floats as `jnp.sort` orders
    them (-0.0 with +0.0, NaN last), or int32.

    Every sort of the mesh goes through here: one unsigned key carrying an int32 index, a single
    unsigned compare, which XLA's GPU sort rewriter hands to CUB's radix sort (`sorting.key_sort`;
    a float key's NaN-aware comparator, or more operands, would keep it on XLA's comparison
    sort). The other fields follow by a gather.
    """
    if jnp.issubdtype(values.dtype, jnp.integer):
        # two's complement with the sign bit flipped: the unsigned order is the signed one
        bits = jax.lax.bitcast_convert_type(values.astype(jnp.int32), jnp.uint32)
        keys = bits ^ jnp.uint32(1 << 31)
        index = jnp.arange(values.shape[0], dtype=jnp.int32)
        return jax.lax.sort((keys, index), num_keys=1, is_stable=True)[1]
    # every NaN made the positive one, whose key lies above +inf's: last, as a float sort has it
    return sorting.key_sort(jnp.where(jnp.isnan(values), jnp.nan, values))[1]


def merge_ties_indexed(values: Array, positive: Array, negative: Array) -> tuple[Merged, Array]:
    """`merge_ties`, and the merged entry of every input position (from the same sort)."""
    empty = (positive == 0) & (negative == 0)
    values = jnp.where(empty, jnp.inf, values)
    position = ascending_order(values)  # the input position of each sorted entry
    values, positive, negative = values[position], positive[position], negative[position]
    starts = jnp.concatenate([jnp.ones(1, bool), values[1:] != values[:-1]])
    group = jnp.cumsum(starts) - 1
    size = values.shape[0]
    merged_values = jnp.full(size, jnp.inf, values.dtype).at[group].set(values)
    merged_positive = jnp.zeros_like(positive).at[group].add(positive)
    merged_negative = jnp.zeros_like(negative).at[group].add(negative)
    real = merged_values < jnp.inf
    merged = Merged(
        merged_values,
        jnp.where(real, merged_positive, 0),
        jnp.where(real, merged_negative, 0),
    )
    return merged, jnp.zeros(size, jnp.int32).at[position].set(group.astype(jnp.int32))


def splitters(merged: Merged, axes: tuple[str, ...], devices: int) -> Array:
    """The same D - 1 splitters on every device, from D regular samples of each device."""
    count = jnp.sum(merged.values < jnp.inf)
    positions = (jnp.arange(devices) * count) // devices
    offers = jnp.where(count > 0, merged.values[positions], jnp.inf)
    pool = jax.lax.all_gather(offers, axes, tiled=True)
    pool = pool[ascending_order(pool)]
    return pool[jnp.arange(1, devices) * devices + devices // 2 - 1]


class Route(NamedTuple):
    """How `send` moved the entries, to send answers back the same way (`send_back`)."""

    first: Array  # [D] where the entries for each destination start locally
    sizes: Array  # [D] how many local entries went to each destination
    incoming: Array  # [D] how many entries arrived from each source
    where: Array  # [D] where each source's entries start in the receive buffer
    rounds: Array  # rounds of `block` entries per pair
    fits: Array  # whether every receive buffer held its entries


def exchange(
    merged: Merged, cuts: Array, axes: tuple[str, ...], block: int, capacity: int
) -> tuple[Merged, Route]:
    """Send every entry to the device owning its range (`cuts`: the splitters); returns
    (received, route)."""
    count = jnp.sum(merged.values < jnp.inf)
    edges = jnp.minimum(jnp.searchsorted(merged.values, cuts, side="right"), count)
    first = jnp.concatenate([jnp.zeros(1, edges.dtype), edges])
    sizes = jnp.concatenate([edges, count[None]]) - first  # entries for each device
    received, route = send(tuple(merged), (jnp.inf, 0, 0), first, sizes, axes, block, capacity)
    return Merged(*received), route


def send(
    fields: tuple[Array, ...],
    fills: tuple[Any, ...],
    first: Array,
    sizes: Array,
    axes: tuple[str, ...],
    block: int,
    capacity: int,
) -> tuple[tuple[Array, ...], Route]:
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
    return received, Route(first, sizes, incoming, where, rounds, fits)


def send_back(
    answers: tuple[Array, ...], route: Route, axes: tuple[str, ...], block: int, size: int
) -> tuple[Array, ...]:
    """The reverse of `exchange`: a value per received entry goes back to the entry's sender,
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


class Placed(NamedTuple):
    """This device's distinct scores ascending (padding +inf, without weight, at the end) and
    their tie groups, with the global weight of each class below them and in all."""

    values: Array
    groups: terms.TieGroups


def place(merged: Merged, axes: tuple[str, ...]) -> Placed:
    """The tie groups of this device's merged entries: the weight of each class below its range
    is the total of the lower devices (an exclusive scan of the per-device totals)."""
    totals = jnp.stack([merged.positive.sum(), merged.negative.sum()])
    every = jax.lax.all_gather(totals, axes, tiled=False)  # [device, 2]
    me = jax.lax.axis_index(axes)
    before = jnp.where(jnp.arange(every.shape[0])[:, None] < me, every, 0).sum(axis=0)
    overall = every.sum(axis=0)
    below = lambda w, start: start + jnp.cumsum(w) - w  # noqa: E731
    groups = terms.TieGroups(
        positive=merged.positive,
        negative=merged.negative,
        positive_below=below(merged.positive, before[0]),
        negative_below=below(merged.negative, before[1]),
        total_positive=overall[0],
        total_negative=overall[1],
    )
    return Placed(merged.values, groups)


def _block(scores: Array, devices: int) -> int:
    """Entries moved per device pair and round: n / D, rounded up."""
    return max(1, -(-scores.shape[0] // devices))


def _local_entries(scores: Array, labels: Array, weights: Array) -> tuple[Merged, Array]:
    positive = jnp.where(labels == 1, weights, 0)
    negative = jnp.where(labels == 1, 0, weights)
    return merge_ties_indexed(scores, positive, negative)


def sort_over_devices(
    scores: Array, labels: Array, weights: Array, axes: tuple[str, ...], capacity: int
) -> tuple[Placed, Array]:
    """Inside `shard_map`: the tie groups of this device's range of the scores of all devices
    along `axes`, and whether they fit the capacity everywhere (the same flag on every device).

    `scores`, `labels` (0/1) and `weights` are this device's 1-D samples (weight 0 for empty
    slots).
    """
    devices = jax.lax.axis_size(axes)
    local, _ = _local_entries(scores, labels, weights)
    cuts = splitters(local, axes, devices)
    received, route = exchange(local, cuts, axes, _block(scores, devices), capacity)
    return place(merge_ties(*received), axes), route.fits


def answer_samples(
    scores: Array,
    labels: Array,
    weights: Array,
    axes: tuple[str, ...],
    capacity: int,
    answer: Callable[[terms.TieGroups], tuple[Array, ...]],
) -> tuple[tuple[Array, ...], Array]:
    """Inside `shard_map`: ``answer(groups)`` (arrays, one value per tie group) read by each of
    this device's samples at its own score, and whether the buffers held every entry.

    The merged entries travel to their owners as for `sort_over_devices`, the owners answer for
    each entry they received, and the answers come back the same way (`send_back`).
    """
    devices = jax.lax.axis_size(axes)
    local, entry = _local_entries(scores, labels, weights)
    cuts = splitters(local, axes, devices)
    block = _block(scores, devices)
    received, route = exchange(local, cuts, axes, block, capacity)
    placed = place(merge_ties(*received), axes)
    at = jnp.clip(jnp.searchsorted(placed.values, received.values, side="left"), 0, capacity - 1)
    per_entry = tuple(value[at] for value in answer(placed.groups))
    per_local_entry = send_back(per_entry, route, axes, block, scores.shape[0])
    return tuple(value[entry] for value in per_local_entry), route.fits


def laid_out(
    scores: Array, labels: Array, weights: Array | None, split: Any
) -> tuple[tuple[Array, Array, Array], int]:
    """The operands of a sharded program: unit weights made explicit, every array's last axis
    split over the mesh axes of `split`; and the number of devices along them."""
    mesh, axes = split
    if weights is None:
        weights = jnp.ones_like(labels)
    arrays = tuple(layouts.split_like(jnp.asarray(a), split) for a in (scores, labels, weights))
    return arrays, int(np.prod([mesh.shape[a] for a in axes]))


def default_capacity(local: int, devices: int) -> int:
    """Receive buffer per device: regular sampling keeps it under ~2n/D distinct entries."""
    return 2 * local + 2 * devices
