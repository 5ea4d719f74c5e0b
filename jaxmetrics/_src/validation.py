"""Input checking, shared by every public function.

Two regimes, as the spec fixes them:

* concrete inputs (eager calls): a bad value raises ``ValueError`` naming the argument, what was
  expected, what was found and where;
* traced inputs (under ``jax.jit``/``vmap``/``grad``): values are unknown, so the checks become a
  boolean ``invalid`` flag per batch element, which the caller turns into NaN.

Shape and dtype errors raise in both regimes, because shapes and dtypes are known at trace time.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

Array = jax.Array


def is_concrete(*arrays: Any) -> bool:
    """True when no array is a tracer, i.e. the values can be inspected now."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays if a is not None)


def _where(bad: np.ndarray) -> str:
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"index {index[0]}" if len(index) == 1 else f"index {index}"


def float_dtype(*dtypes: Any) -> Any:
    """Float type of results: float32, or float64 when x64 is on and a float64 came in."""
    if any(jnp.dtype(d) == jnp.float64 for d in dtypes) and jax.config.jax_enable_x64:
        return jnp.float64
    return jnp.float32


def as_real_array(value: Any, name: str, *, min_ndim: int = 1) -> Array:
    """`value` as a JAX array of real numbers (bool, int or float); raises TypeError otherwise."""
    if value is None:
        raise TypeError(f"`{name}` is required; got None.")
    if not isinstance(value, jax.Array | np.ndarray):
        try:
            value = np.asarray(value)
        except (TypeError, ValueError) as error:
            raise TypeError(
                f"`{name}` must be an array of numbers; got {type(value).__name__}."
            ) from (error)
    dtype = value.dtype
    if not (
        jnp.issubdtype(dtype, jnp.floating)
        or jnp.issubdtype(dtype, jnp.integer)
        or jnp.issubdtype(dtype, jnp.bool_)
    ):
        raise TypeError(f"`{name}` must hold real numbers (bool, int or float); got dtype {dtype}.")
    if value.ndim < min_ndim:
        raise ValueError(
            f"`{name}` must have at least {min_ndim} dimension(s) (samples on the last axis); "
            f"got shape {tuple(value.shape)}."
        )
    return jnp.asarray(value)


def as_scores(scores: Any, name: str = "scores") -> Array:
    """Scores as a float array (float32 unless float64 under x64); bf16/f16 widen exactly."""
    scores = as_real_array(scores, name)
    if scores.shape[-1] == 0:
        raise ValueError(
            f"`{name}` is empty: at least one sample is needed; got shape {scores.shape}."
        )
    return scores.astype(float_dtype(scores.dtype))


def sample_axis_shapes(named: Sequence[tuple[str, Array | None]]) -> tuple[int, ...]:
    """Check arrays share the last (sample) axis and broadcast on the rest; return batch shape."""
    present = [(name, a) for name, a in named if a is not None]
    first_name, first = present[0]
    for name, array in present[1:]:
        if array.shape[-1] != first.shape[-1]:
            raise ValueError(
                f"`{name}` must have the same number of samples (last axis) as `{first_name}`: "
                f"expected {first.shape[-1]}, got shape {tuple(array.shape)}."
            )
    try:
        return tuple(np.broadcast_shapes(*(a.shape[:-1] for _, a in present)))
    except ValueError:
        shapes = ", ".join(f"`{name}` {tuple(a.shape)}" for name, a in present)
        raise ValueError(f"batch axes (all but the last) must broadcast; got {shapes}.") from None


def check_finite(values: Array, name: str) -> Array:
    """Raise on NaN/inf when concrete; return a per-batch `invalid` flag when traced."""
    if not jnp.issubdtype(values.dtype, jnp.floating):  # integers are always finite
        return jnp.zeros(values.shape[:-1], bool)
    if is_concrete(values):
        host = np.asarray(values)
        bad = ~np.isfinite(host)
        if bad.any():
            kind = "NaN" if np.isnan(host[tuple(np.argwhere(bad)[0])]) else "inf"
            raise ValueError(f"`{name}` must be finite; found {kind} at {_where(bad)}.")
        return jnp.zeros(values.shape[:-1], bool)
    return jnp.any(~jnp.isfinite(values), axis=-1)


def check_binary_labels(labels: Array, name: str = "labels") -> Array:
    """Labels must be 0/1 (or bool); raise when concrete, flag when traced."""
    if is_concrete(labels):
        host = np.asarray(labels)
        bad = (host != 0) & (host != 1)
        if bad.any():
            found = host[tuple(np.argwhere(bad)[0])]
            raise ValueError(
                f"`{name}` must contain only 0 and 1 (1 is the positive class) in a binary "
                f"problem; found {found.item()!r} at {_where(bad)}."
            )
        return jnp.zeros(labels.shape[:-1], bool)
    return jnp.any((labels != 0) & (labels != 1), axis=-1)


def check_weights(weights: Array, name: str = "sample_weight") -> Array:
    """Weights must be finite and non-negative; raise when concrete, flag when traced."""
    invalid = check_finite(weights, name)
    if is_concrete(weights):
        host = np.asarray(weights)
        bad = host < 0
        if bad.any():
            raise ValueError(
                f"`{name}` must be non-negative; found {host[tuple(np.argwhere(bad)[0])].item()!r} "
                f"at {_where(bad)}."
            )
        return invalid
    return invalid | jnp.any(weights < 0, axis=-1)


def binary_inputs(
    scores: Any, labels: Any, sample_weight: Any = None
) -> tuple[Array, Array, Array | None, Array]:
    """Check the (scores, labels, sample_weight) triple of every binary metric.

    Returns the arrays (scores as float, labels as int32 0/1, weights as given) and `invalid`, a
    boolean array of the batch shape, True where a traced input held a bad value.
    """
    scores = as_scores(scores)
    labels = as_real_array(labels, "labels")
    weights = None if sample_weight is None else as_real_array(sample_weight, "sample_weight")
    batch_shape = sample_axis_shapes(
        [("scores", scores), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = check_finite(scores, "scores") | check_binary_labels(labels)
    if weights is not None:
        invalid = invalid | check_weights(weights)
    return scores, (labels == 1).astype(jnp.int32), weights, jnp.broadcast_to(invalid, batch_shape)


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
    if all(axis is None for axis in in_axes):
        return map_batch(kernel, *arrays)
    return jax.vmap(lambda *xs: map_batch(kernel, *xs), in_axes=in_axes)(*arrays)


def nan_where(invalid: Array, tree: Any) -> Any:
    """Mark the results of a batch element whose traced input was bad (`invalid` is batch-shaped).

    Floating leaves become NaN; integer leaves (exact counts) become -1, an impossible count that
    every rate turns into NaN.
    """

    def poison(leaf: Array) -> Array:
        flag = invalid.reshape(invalid.shape + (1,) * (leaf.ndim - invalid.ndim))
        bad_value = jnp.nan if jnp.issubdtype(leaf.dtype, jnp.floating) else -1
        return jnp.where(flag, jnp.asarray(bad_value, leaf.dtype), leaf)

    return jax.tree_util.tree_map(poison, tree)
