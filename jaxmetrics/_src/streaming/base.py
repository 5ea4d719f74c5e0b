"""The machinery shared by the streaming states: pytree registration, merging, bad batches, labels.

A state is a frozen dataclass registered as a pytree, its configuration in static fields (see
`static_field`) so that its array leaves are exactly the things that add up. A bad batch under
jit is not added (`accumulate`) but counted, and `compute` turns that count into NaN.

A multilabel state (static ``num_labels`` L) is L single-label states stacked on a leading
``[L]`` axis of every leaf; `per_label` runs code written for one label on all of them.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import validation
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics.counts import Counts


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


def default_count_dtype():
    """The default type of a state's counts: int32, or int64 when x64 is on.

    `confusion_counts` counts integer weights in int64 when x64 is on; a state whose counts
    start in that type keeps it through every unit- or integer-weighted update.
    """
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def as_thresholds(thresholds: ArrayLike, *, finite: bool = False) -> np.ndarray:
    """A state's thresholds as given, a float64 array ``[T]``; raises when empty or NaN.

    float64 holds every float32 and float64 threshold exactly, so nothing is rounded before the
    scores' precision is known (`thresholds_as_compared`).
    """
    grid = np.asarray(thresholds, np.float64).reshape(-1)
    if grid.size == 0:
        raise ValueError(
            "`thresholds` must hold at least one threshold; got an empty array of shape "
            f"{np.shape(thresholds)}."
        )
    bad = ~np.isfinite(grid) if finite else np.isnan(grid)
    if bad.any():
        index = int(np.argmax(bad))
        expected = "be finite" if finite else "not be NaN"
        raise ValueError(
            f"`thresholds` must {expected}; found {float(grid[index])!r} at index {index}."
        )
    return grid


def thresholds_as_compared(thresholds: tuple[float, ...], scores: ArrayLike) -> np.ndarray:
    """A state's thresholds in the precision they are compared in with `scores` (a host array).

    The scores' own precision: float64 when x64 is on, or for float64 or integer scores called
    eagerly (as `confusion_counts` compares those, exactly); otherwise float32, the type of
    float32 (or narrower) scores and of every score under `jax.jit` without x64, so a threshold
    of 0.7 flags a float32 score of 0.7, as ``scores >= 0.7`` does in NumPy and JAX, eagerly and
    under jit alike. Rounding is monotone, so a score equal to a threshold stays equal to it.
    A host array, not a traced one, so `confusion_counts` takes it as the exact grid it is.
    """
    grid = np.asarray(thresholds, np.float64)
    if jax.config.jax_enable_x64:
        return grid
    host = validation.host_values(scores)  # None under jit: float32 scores
    if host is not None and (host.dtype.kind in "iu" or host.dtype == np.float64):
        return grid
    return grid.astype(np.float32)


def check_num_labels(num_labels: int | None) -> int | None:
    """None (a single-label state) or the number of labels L, an int >= 1."""
    return None if num_labels is None else validation.check_count(num_labels, "num_labels")


def label_shape(num_labels: int | None) -> tuple[int, ...]:
    """The leading shape of a state's per-label leaves: () for one label, (L,) for L labels."""
    return () if num_labels is None else (num_labels,)


def check_batch(num_labels: int | None, **arrays: ArrayLike | None) -> None:
    """The shapes of one batch: ``[n]`` for a single-label state, ``[L, n]`` for a multilabel one.

    A multilabel state's `sample_weight` may also be ``[n]``: one weight per sample, shared by
    its L labels. Shapes are static, so this raises under `jax.jit` too. The sample axes are
    compared later, by the engine.
    """
    for name, values in arrays.items():
        if values is None:
            continue
        shape = tuple(np.shape(values))
        if num_labels is None:
            if len(shape) != 1:
                raise ValueError(f"`{name}` must be one batch [n]; got shape {shape}.")
        elif len(shape) != 2 or shape[0] != num_labels:
            if name == "sample_weight" and len(shape) == 1:
                continue
            expected = "[n] or [L, n]" if name == "sample_weight" else "[L, n]"
            raise ValueError(
                f"`{name}` must be one multilabel batch {expected} with L = `num_labels` = "
                f"{num_labels}; got shape {shape}."
            )


def per_label(function: Callable[..., Any], state: Any, *args: Any) -> Any:
    """`function(state, *args)`, written for a single-label state, run on each label of `state`.

    A single-label state (``num_labels`` None) is passed as it is. A multilabel one is L states
    stacked on the leading axis of its leaves: `function` runs under `jax.vmap` over that axis
    of the state and of every leaf of `args`, seeing one label's state at a time, and a state it
    returns comes back multilabel.
    """
    if state.num_labels is None:
        return function(state, *args)
    result = jax.vmap(function)(dataclasses.replace(state, num_labels=None), *args)
    if isinstance(result, type(state)):
        result = dataclasses.replace(result, num_labels=state.num_labels)
    return result


def check_same_config(first, second, name: str) -> None:
    if type(first) is not type(second):
        raise TypeError(f"cannot merge a {type(first).__name__} with a {type(second).__name__}.")
    for field in dataclasses.fields(first):
        if field.metadata.get("static") and getattr(first, field.name) != getattr(
            second, field.name
        ):
            raise ValueError(f"cannot merge {name} states with different `{field.name}`.")
