"""The machinery shared by the streaming states: pytree registration, merging, bad batches.

A state is a frozen dataclass registered as a pytree, its configuration in static fields (see
`static_field`) so that its array leaves are exactly the things that add up. A bad batch under
jit is not added (`accumulate`) but counted, and `compute` turns that count into NaN.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.counts import Counts
from jaxmetrics._src.typing import Array, ArrayLike


def state_class(cls):
    """Register a dataclass as a pytree: fields marked static are metadata, the rest leaves."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    data, meta = [], []
    for field in dataclasses.fields(cls):
        (meta if field.metadata.get("static") else data).append(field.name)
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def static_field(**kwargs):
    return dataclasses.field(metadata={"static": True}, **kwargs)


def add_states(first, second):
    return jax.tree_util.tree_map(jnp.add, first, second)


def is_bad(counts: Counts | Array) -> Array:
    """True when counts carry the mark of a bad batch under jit: -1 (int) or NaN (float)."""
    leaves = jax.tree_util.tree_leaves(counts)
    return jnp.any(jnp.stack([jnp.any((c < 0) | jnp.isnan(c)) for c in leaves]))


def accumulate(total: Array, new: Array, skip: Array) -> Array:
    """`total + new` in their common type, adding nothing when `skip` (a bad batch)."""
    dtype = jnp.promote_types(total.dtype, new.dtype)
    return total.astype(dtype) + jnp.where(skip, jnp.zeros((), dtype), new.astype(dtype))


def check_one_batch(values: ArrayLike, name: str) -> None:
    if np.ndim(values) != 1:
        raise ValueError(f"`{name}` must be one batch [n]; got shape {np.shape(values)}.")


def check_same_config(first, second, name: str) -> None:
    if type(first) is not type(second):
        raise TypeError(f"cannot merge a {type(first).__name__} with a {type(second).__name__}.")
    for field in dataclasses.fields(first):
        if field.metadata.get("static") and getattr(first, field.name) != getattr(
            second, field.name
        ):
            raise ValueError(f"cannot merge {name} states with different `{field.name}`.")
