"""Batch axes: 1-D kernels lifted over them (`map_batch`), and the results of a batch element
whose traced input was bad marked (`nan_where`, the end of the traced regime of `checks.check`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import checks
from jaxmetrics._src.core.typing import Array


def map_batch(kernel: Callable[..., Any], *arrays: Array | None) -> Any:
    """Apply `kernel`, written for 1-D sample arrays, over all leading (batch) axes.

    Arrays broadcast on their batch axes, but nothing is materialised: an array without a batch
    axis (or with size 1 there) is passed unmapped, so e.g. `scores` of shape (n,) with weights of
    shape (B, n) is sorted once, not B times. `None` passes through.
    """
    present = [a for a in arrays if a is not None]
    rank = max(a.ndim for a in present)
    if rank <= 1:
        return kernel(*arrays)
    arrays = tuple(
        a if a is None or a.ndim == rank else a.reshape((1,) * (rank - a.ndim) + a.shape)
        for a in arrays
    )
    in_axes = tuple(None if a is None or a.shape[0] == 1 else 0 for a in arrays)
    arrays = tuple(
        a[0] if a is not None and axis is None else a for a, axis in zip(arrays, in_axes)
    )
    if all(axis is None for axis in in_axes):  # a batch axis of size 1 is kept, never squeezed
        return jax.tree_util.tree_map(lambda leaf: leaf[None], map_batch(kernel, *arrays))
    return jax.vmap(lambda *xs: map_batch(kernel, *xs), in_axes=in_axes)(*arrays)


def nan_where(invalid: Array, tree: Any) -> Any:
    """Mark the results of a batch element whose traced input was bad (`invalid` is batch-shaped).

    Floating leaves become NaN; boolean leaves (masks) False; integer leaves (exact counts) -1,
    an impossible count that every rate turns into NaN.
    """
    flags = checks.host_values(invalid)
    if flags is not None and not flags.any():  # eager and clean: nothing to mark, no JAX op
        return tree

    def poison(leaf: Array) -> Array:
        flag = invalid.reshape(invalid.shape + (1,) * (leaf.ndim - invalid.ndim))
        if jnp.issubdtype(leaf.dtype, jnp.floating):
            bad_value = jnp.nan
        elif leaf.dtype == jnp.bool_:  # a mask (a curve's `valid`): nothing of it is valid
            bad_value = False
        else:
            bad_value = -1
        return jnp.where(flag, jnp.asarray(bad_value, leaf.dtype), leaf)

    return jax.tree_util.tree_map(poison, tree)
