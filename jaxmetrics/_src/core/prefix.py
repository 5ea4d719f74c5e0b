"""Running sums in XLA's programs: blocks summed by small matrix products on the CPU.

XLA's CPU backend lowers `jnp.cumsum` to a tree of windowed reductions that costs ~9 ns per
element (numpy's `cumsum`: ~1 ns); with XLA's kernels (`jm.xla_kernels()`, a bootstrap's loop
on the CPU) the running sums of weights are most of a sort-based metric's time. Here the sum
along the last axis is taken in blocks of `BLOCK`: within each block by a product with a
triangular matrix of ones, then the blocks' totals likewise (recursively), so that a running
sum is two or three matrix products (~3 ns per element at 4,000 elements, measured). Integers
stay integers (exact, as `jnp.cumsum`); floats sum in their own type, in another order than
XLA's tree (a float32 sum may differ in its last bits). Other backends keep `jnp.cumsum`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmetrics._src.core.typing import Array

# elements per block: 32 ran fastest of 16-128 (a [.., 32] by [32, 32] product per block)
BLOCK = 32


def running_sum(values: Array) -> Array:
    """Inclusive running sum along the last axis (as ``jnp.cumsum(values, axis=-1)``)."""
    axis = values.ndim - 1
    return jax.lax.platform_dependent(
        values, cpu=_blocked_sum, default=lambda v: jnp.cumsum(v, axis=axis)
    )


def _blocked_sum(values: Array) -> Array:
    n = values.shape[-1]
    if n <= 2 * BLOCK or values.dtype == jnp.bool_:
        return jnp.cumsum(values, axis=-1)
    blocks = -(-n // BLOCK)
    padded = jnp.pad(values, [(0, 0)] * (values.ndim - 1) + [(0, blocks * BLOCK - n)])
    shaped = padded.reshape(values.shape[:-1] + (blocks, BLOCK))
    within = jnp.matmul(
        shaped,
        jnp.triu(jnp.ones((BLOCK, BLOCK), values.dtype)),  # [i, j] = 1 where i <= j
        precision=jax.lax.Precision.HIGHEST,
        preferred_element_type=values.dtype,
    )
    # what the blocks before each one hold: the running sum of their totals, shifted by one
    # (a shift, not a subtraction, so no rounding is added)
    totals = _blocked_sum(within[..., -1])
    before = jnp.concatenate([jnp.zeros_like(totals[..., :1]), totals[..., :-1]], axis=-1)
    summed = within + before[..., None]
    return summed.reshape(values.shape[:-1] + (blocks * BLOCK,))[..., :n]
