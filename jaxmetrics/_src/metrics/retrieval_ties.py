"""The machinery of `retrieval.py`: the 1-D kernels and their tie rules, and the input checks.

A query's items are sorted once (`sorting.rank`) and tallied with the item mask as weights
(`sorting.tally`). Places count present items only, highest score first, 1-based. For the tie
group holding ascending position i, `above` present items score higher and `size` present items
tie in it, so the group occupies the places ``above + 1 .. above + size``; ``offset = place -
above`` (1 .. size) is the place of an item inside its group, in whatever order the sort left the
ties. Every tie rule below is the expected value over the ``size!`` orders of each group, all
equally likely (McSherry & Najork 2008): a sum over a group's places, or over its items, never
depends on which item the sort put where.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, exact_order, sorting, validation
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array
from jaxmetrics._src.mesh import recipe


class Places(NamedTuple):
    """Per ascending position i of one sorted query (meaningful where `present`)."""

    order: Array  # (m,) int32: sorted = original[order]
    present: Array  # (m,) bool: i holds an item of weight 1
    relevant: Array  # (m,) int32: 1 where i holds a present relevant item
    place: Array  # (m,) int32: 1-based place of i among present items, highest score first
    above: Array  # (m,) int32: present items scoring strictly above i's tie group
    size: Array  # (m,) int32: present items in i's tie group
    relevant_above: Array  # (m,) int32: relevant items in the groups above i's
    relevant_here: Array  # (m,) int32: relevant items in i's tie group
    group: Array  # (m,) int32: first ascending position of i's tie group (its id)
    total: Array  # () int32: present items
    total_relevant: Array  # () int32: present relevant items


def places(scores: Array, labels: Array, weights: Array | None) -> Places:
    """Sort a query once and read every item's place and tie group off the prefix counts."""
    # the mask is 0/1 (checked), so the counts stay exact int32 whatever its dtype
    mask = None if weights is None else weights.astype(jnp.int32)
    ranked = sorting.rank(scores)
    tallies = sorting.tally(ranked, labels, mask)
    present_below, relevant_below = tallies.nonzero, tallies.positive  # (m + 1,) exclusive
    start, stop = ranked.group_start, ranked.group_stop
    total, total_relevant = present_below[-1], relevant_below[-1]
    return Places(
        order=ranked.order,
        present=present_below[1:] > present_below[:-1],
        relevant=tallies.positive_weights,
        place=total - present_below[:-1],
        above=total - present_below[stop],
        size=present_below[stop] - present_below[start],
        relevant_above=total_relevant - relevant_below[stop],
        relevant_here=relevant_below[stop] - relevant_below[start],
        group=start,
        total=total,
        total_relevant=total_relevant,
    )


def _group_counts(p: Places) -> tuple[Array, Array, Array, Array]:
    """(offset, g, r, left) in float: the item's place in its group, the group's size and
    relevant count, and the group's items not placed before this place (``g - offset + 1``)."""
    dtype = float_dtype()
    offset = (p.place - p.above).astype(dtype)
    size = p.size.astype(dtype)
    return offset, size, p.relevant_here.astype(dtype), size - offset + 1


def _expected_hits(p: Places, budget: Array) -> Array:
    """Expected relevant items in the first `budget` places: a group cut by the budget counts
    its relevant share of the places it keeps."""
    inside = jnp.clip(budget - p.above, 0, p.size)
    return (p.relevant * safe_divide(inside, p.size, 0.0)).sum()


def ndcg_kernel(
    scores: Array, relevance: Array, weights: Array | None, k: Array, *, top: int | None = None
) -> Array:
    dtype = float_dtype()
    relevance = relevance.astype(dtype)
    p = places(scores, (relevance > 0).astype(jnp.int32), weights)
    num_items = scores.shape[0]
    counted = p.present & (p.place <= k)
    discount = jnp.where(counted, 1 / jnp.log2(p.place.astype(dtype) + 1), 0)
    # a group's items share the discounts of its places (sklearn's tie average). A per-group
    # sum, not a difference of prefix sums: float32 prefixes would swamp deep, small discounts.
    group_discount = jax.ops.segment_sum(
        discount, p.group, num_segments=num_items, indices_are_sorted=True
    )[p.group]
    gain = relevance[p.order]
    dcg = jnp.where(p.present, gain * group_discount / p.size.astype(dtype), 0).sum()
    present = jnp.ones(num_items, bool) if weights is None else weights != 0
    # the ideal order: relevance descending. Absent items get gain 0 and sort below every
    # relevant one, so they take no place that a gain could use.
    gains = jnp.where(present, relevance, 0)
    if top is None:
        ideal = sorting.rank(gains).scores[::-1]
    else:  # NDCG@k needs the k largest gains only: a partial sort, several times cheaper
        ideal = jax.lax.top_k(gains, min(top, num_items))[0]
    ideal_places = jnp.arange(1, ideal.shape[0] + 1)
    ideal_discount = jnp.where(ideal_places <= k, 1 / jnp.log2(ideal_places.astype(dtype) + 1), 0)
    return safe_divide(dcg, (ideal * ideal_discount).sum(), jnp.nan)


class BinaryValues(NamedTuple):
    """The metrics of binary relevance of one query, read off one sort (`binary_kernel`)."""

    reciprocal_rank: Array
    recall_at_k: Array
    hit_rate_at_k: Array
    average_precision_at_k: Array
    average_precision_retrieved: Array
    r_precision: Array


def binary_kernel(scores: Array, labels: Array, weights: Array | None, k: Array) -> BinaryValues:
    """Every metric of binary relevance at once: an eager call of any of them compiles one
    program for all, and the extra arithmetic is small next to the sort (under the caller's
    `jax.jit`, XLA drops the values nobody reads)."""
    p = places(scores, labels, weights)
    budget = jnp.minimum(k, p.total)
    undefined = p.total_relevant == 0
    precision_sum = _precision_sum(p, budget)
    return BinaryValues(
        reciprocal_rank=jnp.where(undefined, jnp.nan, _reciprocal_rank(p)),
        recall_at_k=safe_divide(_expected_hits(p, budget), p.total_relevant, jnp.nan),
        hit_rate_at_k=jnp.where(undefined, jnp.nan, _hit_rate(p, budget)),
        average_precision_at_k=safe_divide(
            precision_sum, jnp.minimum(k, p.total_relevant), jnp.nan
        ),
        # torchmetrics' normaliser: the relevant items found (0 found: 0, as theirs)
        average_precision_retrieved=jnp.where(
            undefined, jnp.nan, safe_divide(precision_sum, _expected_hits(p, budget), 0.0)
        ),
        r_precision=safe_divide(_expected_hits(p, p.total_relevant), p.total_relevant, jnp.nan),
    )


def _reciprocal_rank(p: Places) -> Array:
    offset, _, r, left = _group_counts(p)
    # the highest group holding a relevant item: the first relevant one is at offset t with
    # chance prod_{s<t} (1 - r / left_s) * r / left_t, zero past t = g - r + 1 (left_t < r)
    first = p.present & (p.relevant_above == 0) & (p.relevant_here > 0)
    reachable = first & (left >= r)
    log_pass = jnp.where(reachable & (left > r), jnp.log1p(-r / left), 0)
    # offsets before t sit at higher ascending positions of the same group (log1p keeps each
    # factor's precision when the group is large)
    passed = sorting.count_prefix_sum(log_pass)
    chance = jnp.exp(passed[-1] - passed[1:]) * r / left
    return jnp.where(reachable, chance / p.place.astype(r.dtype), 0).sum()


def _hit_rate(p: Places, budget: Array) -> Array:
    _, _, r, left = _group_counts(p)
    inside = p.present & (p.place <= budget)
    # the chance that a place misses, given the places before it in its group missed:
    # 1 - r / left (0 once the group has only relevant items left). A group wholly inside
    # the cut gives 0 if it holds a relevant item; the group cut by it, the hypergeometric
    # C(g - r, t) / C(g, t) for its first t places.
    log_miss = jnp.where(r >= left, -jnp.inf, jnp.log1p(-r / left))
    log_miss = jnp.where(inside, log_miss, 0).sum()
    return 0 - jnp.expm1(log_miss)  # 0 - expm1, not -expm1: a sure miss is 0.0, not -0.0


def _precision_sum(p: Places, budget: Array) -> Array:
    """The expected sum of rel_p * precision@p over the first `budget` places."""
    offset, g, r, _ = _group_counts(p)
    # E[rel_t * hits_t] at offset t: the place holds a relevant item with chance r / g, and
    # then the t - 1 places before it in the group hold (t - 1)(r - 1) / (g - 1) on average
    before = safe_divide((offset - 1) * (r - 1), g - 1, 0.0)
    expected = r / g * (p.relevant_above.astype(r.dtype) + 1 + before)
    return jnp.where(p.present & (p.place <= budget), expected / p.place.astype(r.dtype), 0).sum()


def run(
    kernel: Callable[..., Array],
    scores: Any,
    targets: Any,
    sample_weight: Any,
    *,
    k: int = sys.maxsize,
    graded: bool = False,
    **options: Any,
) -> Any:
    """Check the inputs (raise eagerly, mark under jit), then run a kernel of this module over
    the batch axes (bucket-padded and compiled once per shape when eager). `targets` are
    labels, or with `graded` relevance grades; `sample_weight` is the 0/1 item mask; `options`
    are the kernel's static options."""
    if graded:
        keys, _ = exact_order.order_keys(scores)
        scores = coercion.as_scores(keys, host=True)
        targets = coercion.as_real_array(targets, "relevance", host=True)
        weights = None
        if sample_weight is not None:
            weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
        batch_shape = coercion.sample_axis_shapes(
            [("scores", scores), ("relevance", targets), ("sample_weight", weights)]
        )
        invalid = checks.check_finite(scores, "scores") | checks.check(
            targets, "relevance", checks.GRADE
        )
        targets = targets.astype(float_dtype())
    else:
        scores, targets, weights, invalid, _ = validation.ranking_inputs(
            scores, targets, sample_weight
        )
        batch_shape = invalid.shape
    if weights is not None:
        invalid = invalid | checks.check(weights, "sample_weight", checks.ITEM_MASK)
    invalid = checks.array_namespace(invalid).broadcast_to(invalid, batch_shape)
    # k is traced, not static: one compiled program serves every k; past m it changes nothing
    cut = np.int32(min(k, scores.shape[-1]))
    result = recipe.run_kernel(kernel, scores, targets, weights, cut, **options)
    return batching.nan_where(invalid, result)


def run_binary(
    scores: Any, labels: Any, sample_weight: Any, *, k: int = sys.maxsize
) -> BinaryValues:
    """`run` of `binary_kernel`: every binary metric of each query, one compiled program."""
    return run(binary_kernel, scores, labels, sample_weight, k=k)
