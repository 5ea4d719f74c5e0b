"""`balanced_batches`: the sampler that gives every batch the positives a pair loss needs.

Pair losses (AUC, AP, their partial forms) see no pair in a batch without positives; at low
prevalence most random batches have none. Each batch here holds a fixed share of positives.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks, coercion
from jaxmetrics._src.core.options import check_count, check_probability_level
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh.sample_sort import two_key_order
from jaxmetrics._src.stats.resampling import check_key


def balanced_batches(
    key: ArrayLike, labels: ArrayLike, *, batch_size: int, positive_fraction: float
) -> Array:
    r"""One epoch of batches over the negatives, each with a fixed number of positives.

    Every batch holds ``p = floor(positive_fraction * batch_size + 1/2)`` positives in its
    first p columns and ``q = batch_size - p`` negatives after them. The epoch runs over the
    N negatives: one permutation of them, cut into ``num_batches = N // q`` batches (the
    N mod q left over sit this epoch out). The P positives are dealt from a permutation of
    them, without replacement, and from a fresh one when they run out; with P >= p the last
    ``P mod p`` of each permutation are skipped, so no batch holds a positive twice (with
    P < p, batches take whole permutations). For SOAP and AUC losses (LibAUC's DualSampler).

    The result is a function of `key` and `labels` alone (`jax.random`): pass
    ``jax.random.fold_in(key, epoch)`` for a new epoch. `labels` must be concrete (the number
    of batches depends on them). `positive_fraction` outside (0, 1), or one that leaves no
    positive or no negative in a batch, raises `ValueError`; so do labels outside {0, 1}, no
    positive, and fewer than q negatives.

    Args:
      key: a `jax.random` key.
      labels: ``[n]`` labels in {0, 1} or bool of the training set.
      batch_size: the number of samples per batch, an int >= 2.
      positive_fraction: the share of positives in each batch, in (0, 1).

    Returns:
      An int32 array ``[num_batches, batch_size]`` of indices into `labels`.

    Examples:
      >>> import jax
      >>> import jaxmetrics.losses as jl
      >>> labels = [1, 0, 0, 1, 0, 0, 0, 0, 0, 1, 0, 0]
      >>> batches = jl.balanced_batches(
      ...     jax.random.key(0), labels, batch_size=4, positive_fraction=0.25)
      >>> batches.shape  # 9 negatives, 3 a batch
      (3, 4)
      >>> [[labels[i] for i in batch] for batch in batches.tolist()]
      [[1, 0, 0, 0], [1, 0, 0, 0], [1, 0, 0, 0]]
    """
    check_key(key)
    batch_size = check_count(batch_size, "batch_size", minimum=2)
    fraction = check_probability_level(positive_fraction, "positive_fraction")
    per_batch = math.floor(fraction * batch_size + 0.5)
    if not 1 <= per_batch <= batch_size - 1:
        raise ValueError(
            f"`positive_fraction` * `batch_size` must round to 1 .. {batch_size - 1} positives "
            f"per batch; got {positive_fraction!r} * {batch_size}."
        )
    labels = coercion.as_real_array(labels, "labels", host=True)
    host = checks.known_values(labels, "labels", "the number of batches depends on them")
    if host.ndim != 1:
        raise ValueError(f"`labels` must have shape [n]; got {host.shape}.")
    checks.check_binary_labels(host)
    positives, negatives = np.flatnonzero(host == 1), np.flatnonzero(host == 0)
    negatives_per_batch = batch_size - per_batch
    num_batches = negatives.size // negatives_per_batch
    if positives.size == 0 or num_batches == 0:
        raise ValueError(
            f"`labels` must hold a positive and at least {negatives_per_batch} negatives; got "
            f"{positives.size} positives and {negatives.size} negatives."
        )
    count = positives.size
    dealt = count if count < per_batch else count // per_batch * per_batch  # per permutation
    shape = (num_batches, per_batch, negatives_per_batch)
    return _deal(key, positives, negatives, shape=shape, dealt=dealt).astype(jnp.int32)


def _permutations(bits: Array) -> Array:
    """A permutation of the second-to-last axis per leading index: sort by 64 random bits.

    Two stable passes of one uint32 word carrying an int32 index, the low word first (a radix
    sort): each a single unsigned compare, which XLA's GPU sort rewriter hands to CUB.
    """
    return two_key_order(bits[..., 0], bits[..., 1])


@functools.partial(jax.jit, static_argnames=("shape", "dealt"))
def _deal(
    key: Array, positives: Array, negatives: Array, *, shape: tuple[int, int, int], dealt: int
) -> Array:
    """`balanced_batches`' rows: `dealt` positives of each permutation, then the negatives."""
    num_batches, per_batch, negatives_per_batch = shape
    needed = num_batches * per_batch
    cycles = -(-needed // dealt)
    # one draw of random bits for every permutation (a vmap of jax.random.permutation
    # compiles several times slower)
    bits = jax.random.bits(key, (negatives.size + cycles * positives.size, 2))
    order = _permutations(bits[: negatives.size])
    negative_rows = order[: num_batches * negatives_per_batch].reshape(num_batches, -1)
    cycle_orders = _permutations(bits[negatives.size :].reshape(cycles, positives.size, 2))
    positive_rows = cycle_orders[:, :dealt].reshape(-1)[:needed].reshape(num_batches, -1)
    return jnp.concatenate([positives[positive_rows], negatives[negative_rows]], axis=1)
