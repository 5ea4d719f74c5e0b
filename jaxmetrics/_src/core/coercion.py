"""Inputs made arrays: real numbers of at least the dimensions asked, sharing a sample axis.

Type and shape errors raise here, in every regime (both are known at trace time), in one
wording: each array's shape named, and the rule, `SAMPLE_AXIS_RULE`; a sample axis of length 1
under batch axes (``[n, 1]`` logits) is refused by the doors that compare samples
(`reject_single_sample_rows`). The values are checked afterwards by `checks.check`. Known
inputs may stay numpy arrays (`host=True`), so that an eager call checks and pads them without
dispatching, and compiling, one JAX op per shape.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks, kernels, layouts
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.typing import Array

# The one wording of a shape error: every message names each array's shape and states this rule.
SAMPLE_AXIS_RULE = "samples lie on the last axis, leading axes are batch axes"


def as_real_array(
    value: Any, name: str, *, min_ndim: int = 1, host: bool = False, keep_split: bool = False
) -> Array:
    """`value` as an array of real numbers (bool, int or float); raises TypeError otherwise.

    A JAX array by default; with `host=True` a known value stays a numpy array, so that an
    eager call can check and pad it without dispatching (and compiling) one JAX op per shape.
    An array split over a mesh is made whole on every device (`layouts.replicate`), unless
    `keep_split` (the metrics with a mesh form: `mesh/forms.py`).
    """
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
            f"`{name}` must have at least {min_ndim} dimension(s); got shape "
            f"{tuple(value.shape)}; {SAMPLE_AXIS_RULE}."
        )
    if isinstance(value, jax.Array) and not keep_split:
        value = layouts.replicate(value)
    known = checks.host_values(value) if host else None
    return known if known is not None else to_device(value)


def to_device(value: Any) -> Array:
    """`jnp.asarray(value)`, without compiling for a numpy array outside any trace.

    `jnp.asarray` of a numpy array compiles a small copy program ("stage") for every new shape
    and type, 5-40 ms each on the CPU; `jax.device_put` copies it without one.
    """
    if isinstance(value, np.ndarray | np.generic) and kernels.trace_state_clean():
        return jax.device_put(value)
    return jnp.asarray(value)


def cast(value: Any, dtype: Any) -> Any:
    """`value` as `dtype`: a numpy array is cast in numpy and stays numpy (a compiled program
    takes it as it is, where `jnp.asarray` would compile a copy program per new shape), anything
    else in JAX."""
    if isinstance(value, np.ndarray | np.generic):
        return np.asarray(value).astype(dtype, copy=False)
    return jnp.asarray(value).astype(dtype)


def as_given(value: Any) -> Any:
    """An array as it is (a compiled program takes a numpy one without the copy program that
    `jnp.asarray` compiles per shape); a Python number or list through `jnp.asarray` (one too
    large for int32 raises `OverflowError`)."""
    if isinstance(value, jax.Array | np.ndarray | np.generic):
        return value
    return jnp.asarray(value)


def device_arrays(dtype: Any, *values: Any) -> tuple[Array, ...]:
    """Each value as a JAX array of `dtype`: numpy arrays cast in numpy and copied without a
    compiled program (`cast`, `to_device`)."""
    return tuple(to_device(cast(value, dtype)) for value in values)


def full(shape: tuple[int, ...], value: Any, dtype: Any) -> Array:
    """`value` everywhere in `shape`: made by numpy and copied outside any trace (`jnp.full`
    and `jnp.zeros` compile a program per shape), a broadcast inside one (no constant of that
    size in the program)."""
    if kernels.trace_state_clean():
        return to_device(np.full(shape, value, dtype))
    return jnp.full(shape, value, dtype)


def as_scores(
    scores: Any, name: str = "scores", *, host: bool = False, keep_split: bool = False
) -> Array:
    """Scores as a float array (float32, or float64 under x64); bf16/f16 widen exactly."""
    scores = as_real_array(scores, name, host=host, keep_split=keep_split)
    if scores.shape[-1] == 0:
        raise ValueError(
            f"`{name}` is empty: at least one sample is needed; got shape {scores.shape}."
        )
    return scores.astype(float_dtype())


def samples_mismatch(name: str, array: Any, first_name: str, first: Any) -> str:
    """The sentence of a sample-axis mismatch: `name` against `first_name`, both shapes named."""
    return (
        f"`{name}` must have the same number of samples (the last axis) as `{first_name}`: "
        f"`{name}` has shape {tuple(np.shape(array))}, `{first_name}` has shape "
        f"{tuple(np.shape(first))}; {SAMPLE_AXIS_RULE}."
    )


def reject_single_sample_rows(named: Sequence[tuple[str, Any]]) -> None:
    """Raise for an array whose sample axis has length 1 under batch axes (``[n, 1]``).

    Such an array is n rows of one sample each: a ranking metric or a loss over pairs, lists or
    sets of samples then sees no pair and gives NaN, or a loss of 0 and a zero gradient, while
    the caller meant one column of n samples (a model's ``nnx.Linear(h, 1)`` output). Shapes
    are static, so this raises under `jax.jit` too. Only the first array present (the scores or
    predictions) is read so: a label or weight array of one sample against scores of n is a
    mismatch of sample axes, which `sample_axis_shapes` names.
    """
    for name, array in [(name, array) for name, array in named if array is not None][:1]:
        shape = tuple(np.shape(array))
        if len(shape) >= 2 and shape[-1] == 1:
            rows = int(np.prod(shape[:-1]))
            raise ValueError(
                f"`{name}` has shape {shape}; {SAMPLE_AXIS_RULE}, so this is {rows} row(s) of "
                "one sample each (no pairs to rank: NaN metrics, or losses and gradients of "
                f"0). For one column of n samples, a model's [n, 1] output, pass "
                f"`{name}[..., 0]`, shape {shape[:-1]}."
            )


def sample_axis_shapes(named: Sequence[tuple[str, Array | None]]) -> tuple[int, ...]:
    """Check arrays share the last (sample) axis and broadcast on the rest; return batch shape."""
    present = [(name, a) for name, a in named if a is not None]
    first_name, first = present[0]
    for name, array in present[1:]:
        if array.shape[-1] != first.shape[-1]:
            raise ValueError(samples_mismatch(name, array, first_name, first))
    try:
        return tuple(np.broadcast_shapes(*(a.shape[:-1] for _, a in present)))
    except ValueError:
        shapes = ", ".join(f"`{name}` {tuple(a.shape)}" for name, a in present)
        raise ValueError(
            f"batch axes (all but the last) must broadcast; got shapes {shapes}; "
            f"{SAMPLE_AXIS_RULE}."
        ) from None
