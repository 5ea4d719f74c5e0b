"""The machinery shared by the streaming states: pytree registration, merging, bad batches, labels.

A state is a frozen dataclass registered as a pytree, its configuration in static fields (see
`static_field`) so that its array leaves are exactly the things that add up. A bad batch under
jit is not added (`accumulate`) but counted, and `compute` turns that count into NaN.

A multilabel state (static ``num_labels`` L) is L single-label states stacked on a leading
``[L]`` axis of every leaf; `per_label` runs code written for one label on all of them.
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks, coercion, kernels
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics.counts import Counts


def state_class(cls):
    """Register a dataclass as a pytree: fields marked static are metadata, the rest leaves.

    Its `compute` becomes one compiled program (`one_program`).
    """
    cls = dataclasses.dataclass(frozen=True)(cls)
    data, meta = [], []
    for field in dataclasses.fields(cls):
        (meta if field.metadata.get("static") else data).append(field.name)
    if "compute" in vars(cls):
        cls.compute = one_program(vars(cls)["compute"])
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def one_program(compute: Callable[..., Any]) -> Callable[..., Any]:
    """A state's `compute` compiled as a whole by `jax.jit`: once per state type and static
    configuration (the pytree's structure), its options (`axis_name`) static.

    Called eagerly, a `compute` written op by op dispatches, and compiles, one small program per
    operation and shape: 10-48 of them, 1.7 s on a state's first use. One program compiles in
    about as long as a few of those and then runs in a millisecond; under an outer `jax.jit`
    it is inlined.
    """
    options = list(inspect.signature(compute).parameters)[1:]
    compiled = jax.jit(compute, static_argnames=options)

    @functools.wraps(compute)
    def run(self, *args, **kwargs):
        return compiled(self, *args, **kwargs)

    return run


def static_field(**kwargs):
    return dataclasses.field(metadata={"static": True}, **kwargs)


def add_states(first, second):
    """The leafwise sum of two states, in the types of `first`'s leaves."""
    return jax.tree_util.tree_map(lambda a, b: a + b.astype(a.dtype), first, second)


def is_bad(counts: Counts | Array) -> Array:
    """True when counts carry the mark of a bad batch under jit: -1 (int) or NaN (float)."""
    leaves = jax.tree_util.tree_leaves(counts)
    return jnp.any(jnp.stack([jnp.any((c < 0) | jnp.isnan(c)) for c in leaves]))


def accumulate(total: Array, new: Array, skip: Array) -> Array:
    """`total + new` in `total`'s type (a state's leaf types never change on update), adding
    nothing when `skip` (a bad batch)."""
    return total + jnp.where(skip, jnp.zeros((), total.dtype), new.astype(total.dtype))


def _passes_largest(total: Any, new: Any, xp: Any) -> Any:
    """Whether `total + new` would pass the largest value of `total`'s integer type anywhere
    (`xp`: numpy for concrete counts, jax.numpy for traced ones)."""
    return xp.any(new.astype(total.dtype) > xp.iinfo(total.dtype).max - xp.maximum(total, 0))


def wraps_around(totals: Any, news: Any) -> Array:
    """Whether adding the counts `news` to the integer counts `totals` (pytrees alike) would
    pass the largest value of their type anywhere: the sum would wrap around to a negative or
    small count. False for float counts, which round instead."""
    over = [
        _passes_largest(total, new, jnp)
        for total, new in zip(jax.tree_util.tree_leaves(totals), jax.tree_util.tree_leaves(news))
        if jnp.issubdtype(total.dtype, jnp.integer)
    ]
    return jnp.any(jnp.stack(over)) if over else jnp.zeros((), bool)


def refuse_wrap_around(totals: Any, news: Any, name: str) -> bool:
    """Raise `OverflowError` where `wraps_around(totals, news)`, if every count is concrete
    (eager code; checked in numpy: a few eager JAX ops cost an update 1.3-1.9 ms). Returns
    whether it checked: where it could not (traced), the caller counts the batch (or merge) as
    bad instead, and `compute` gives NaN."""
    leaves = jax.tree_util.tree_leaves((totals, news))
    if not all(checks.is_concrete(leaf) for leaf in leaves):
        return False
    for total, new in zip(jax.tree_util.tree_leaves(totals), jax.tree_util.tree_leaves(news)):
        total, new = np.asarray(total), np.asarray(new)
        if np.issubdtype(total.dtype, np.integer) and _passes_largest(total, new, np):
            raise OverflowError(
                f"{name}: the counts would pass {np.iinfo(total.dtype).max}, the largest "
                f"{total.dtype}, and wrap around; count in int64 (turn x64 on before creating the "
                "state) or create the state with `dtype=jnp.float32`."
            )
    return True


def add_counts(
    state: Any,
    counts: Any,
    totals: Any,
    name: str,
    add_label: Callable[..., Any],
    news: Callable[[Any], Any] = lambda counts: counts,
) -> Any:
    """``add_label(state, counts, checked=...)`` of each label, after `refuse_wrap_around` of the
    state's `totals` and the batch's ``news(counts)`` (`name` in its error; known counts are
    read in numpy, no JAX op): the sums in one compiled program per eager update (operation by
    operation they were 5-15 programs to compile on a state's first use, and as many
    dispatches per update)."""
    leaves = jax.tree_util.tree_leaves(counts)
    known = jax.tree_util.tree_map(np.asarray, counts) if checks.is_concrete(*leaves) else counts
    checked = refuse_wrap_around(totals, news(known), name)
    return _added(state, counts, add_label=add_label, checked=checked)


@functools.partial(kernels.sample_jit, static_argnames=("add_label", "checked"))
def _added(state: Any, counts: Any, *, add_label: Callable[..., Any], checked: bool) -> Any:
    return per_label(functools.partial(add_label, checked=checked), state, counts)


def merge_counts(first: Any, second: Any, totals: Callable[[Any], Any], name: str) -> Any:
    """`add_states(first, second)` for states of counts, ``totals(state)`` being the counts that
    bound all the others: a merge that would wrap them around raises `OverflowError` eagerly and,
    traced, counts as a bad batch (label by label)."""
    checked = refuse_wrap_around(totals(first), totals(second), name)
    merged = add_states(first, second)
    if checked:
        return merged
    over = per_label(lambda state, news: wraps_around(totals(state), news), first, totals(second))
    return dataclasses.replace(
        merged, num_bad_batches=merged.num_bad_batches + over.astype(jnp.int32)
    )


def default_count_dtype():
    """The default type of a state's counts: int32, or int64 when x64 is on.

    `confusion_counts` counts integer weights in int64 when x64 is on; a state whose counts
    start in that type keeps it through every unit- or integer-weighted update.
    """
    return jnp.int64 if jax.config.jax_enable_x64 else jnp.int32


def _whole_count(bits: int) -> checks.Rule:
    limit = 2.0**bits
    return checks.Rule(
        lambda w: (w % 1 != 0) | ~(w < limit),
        f"be whole numbers below 2^{bits} (a 0/1 mask, or counts) for a state with integer "
        "counts, which counts them exactly; create the state with `dtype=jnp.float32` to count "
        "fractional weights",
    )


def count_weights(sample_weight: ArrayLike | None, count_dtype: Any) -> ArrayLike | None:
    """`sample_weight` in the type of a state's counts, so that an update never changes it.

    Integer counts (the default, exact) take bool and integer weights as they are, and float
    weights that are whole numbers (a float 0/1 padding mask) converted to the counts' type; a
    fractional weight raises `ValueError` eagerly and, under `jax.jit`, becomes -1, a negative
    weight, so that the batch is refused and counted as bad. Float counts take any weight
    (`accumulate` casts their sums).
    """
    if sample_weight is None or jnp.issubdtype(count_dtype, jnp.floating):
        return sample_weight
    weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
    if not jnp.issubdtype(weights.dtype, jnp.floating):
        return weights
    rule = _whole_count(jnp.iinfo(count_dtype).bits - 1)
    if checks.is_concrete(weights):
        checks.check_weights(weights)  # NaN, inf and negative weights: their own error first
        checks.check(weights, "sample_weight", rule)
        return weights.astype(count_dtype)
    return jnp.where(rule.is_bad(weights), -1, weights).astype(count_dtype)


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
    host = checks.host_values(scores)  # None under jit: float32 scores
    if host is not None and (host.dtype.kind in "iu" or host.dtype == np.float64):
        return grid
    return grid.astype(np.float32)


def check_num_labels(num_labels: int | None) -> int | None:
    """None (a single-label state) or the number of labels L, an int >= 1."""
    return None if num_labels is None else check_count(num_labels, "num_labels")


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
            if len(shape) == 2 and shape[-1] == 1:  # [n, 1]: a model's one column of logits
                coercion.reject_single_sample_rows([(name, values)])
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
