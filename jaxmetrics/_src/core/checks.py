"""The check of input values: `check` runs a value rule in the regime of its input, and the rules
of the library are small predicates beside it.

Three regimes, as the spec fixes them:

* known values (an eager call, or a constant closed over inside `jax.jit`) are read in numpy on
  the host: a bad value raises ``ValueError`` naming the argument, what was expected, what was
  found and where;
* known values split over a mesh (or with shards in other processes) are read shard by shard,
  never gathered, and raise the same error;
* traced values (under ``jax.jit``/``vmap``/``grad``) are unknown: the check becomes a boolean
  ``invalid`` flag per batch element, which the caller turns into NaN (`batching.nan_where`).

Shape and dtype errors raise in every regime (both are known at trace time); they are raised
where the arrays are made (`coercion`). This module is the one that asks whether values are known
now (`is_concrete`, `host_values`); the others call `check` (or a named check built on it) and
never ask how.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import layouts


class Rule(NamedTuple):
    """A rule on the values of an array.

    `is_bad` maps an array (numpy when the values are known, jnp when traced) to the mask of
    the entries that break the rule, with operators and ufunc-style calls that work on both;
    written so that NaN breaks it where NaN is bad (NaN fails every comparison). `expected`
    ends the sentence "`name` must ..."; `shown` writes the value found in the error.
    """

    is_bad: Callable[[Any], Any]
    expected: str
    shown: Callable[[Any], str] = repr


def is_concrete(*values: Any) -> bool:
    """True when no value is a tracer (a value inside `jax.jit`/`vmap`/`grad`, not known now).

    The one test of it: callers that choose a path by it (pad eagerly, compute on the host) ask
    here, and the checks of values ask it through `check`.
    """
    return not any(isinstance(value, jax.core.Tracer) for value in values if value is not None)


def host_values(value: Any) -> np.ndarray | None:
    """`value` as a numpy array when its values can be read here whole, else None (a tracer, or
    an array split over a mesh, which `check` reads shard by shard).

    Checks of known values run in numpy, never in jnp: inside `jax.jit` even an operation on a
    closed-over constant array is staged out and yields a tracer that cannot be tested with `if`.
    """
    if value is None or not is_concrete(value) or layouts.is_split(value):
        return None
    return np.asarray(value)


def known_values(value: Any, name: str, reason: str) -> np.ndarray:
    """The values of an input that must be known now (e.g. they fix a shape), as numpy; raises
    ``TypeError`` for a traced one. An array split over a mesh is gathered (`layouts.replicate`).
    """
    if value is None or not is_concrete(value):
        raise TypeError(
            f"`{name}` must be concrete (a numpy or JAX array known outside `jax.jit`): {reason}."
        )
    return np.asarray(layouts.replicate(value) if layouts.is_split(value) else value)


def check(values: Any, name: str, rule: Rule, *, sample_axes: int = 1, option: bool = False) -> Any:
    """The one check of input values: raise eagerly, read split arrays per shard, mark when traced.

    Known values: raise ``ValueError("`name` must <expected>; found <value> at index <i>.")`` at
    the first bad entry (in C order), else return an all-False numpy flag of the batch shape (all
    but the last `sample_axes` axes), so that a clean eager call dispatches no JAX op. Split
    values: the same, each process reading its own shards. Traced values: return the flags,
    True where a batch element holds a bad entry, for the caller to turn into NaN (or -1).

    With `option`, `values` is a scalar option (`temperature`, `margin`) and the error says
    "got <value>." instead.
    """
    values = jnp.asarray(values) if isinstance(values, list | tuple) else values
    ndim = np.ndim(values)
    sample_start = max(ndim - sample_axes, 0)
    if not is_concrete(values):
        return jnp.any(rule.is_bad(values), axis=tuple(range(sample_start, ndim)))
    if layouts.is_split(values):
        first = _first_bad_in_shards(values, rule.is_bad)
    else:
        first = _first_bad(np.asarray(values), rule.is_bad)
    if first is not None:
        found, index = first
        if option:
            raise ValueError(f"`{name}` must {rule.expected}; got {rule.shown(found)}.")
        where = "" if not index else f" at index {index[0] if len(index) == 1 else index}"
        raise ValueError(f"`{name}` must {rule.expected}; found {rule.shown(found)}{where}.")
    return np.zeros(np.shape(values)[:sample_start], bool)


def _first_bad(host: np.ndarray, is_bad: Callable[[Any], Any]) -> tuple[Any, tuple] | None:
    """(value, index) of the first bad entry of a numpy array, else None."""
    bad = np.asarray(is_bad(host))
    if not bad.any():
        return None
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return host[index].item(), index


def _first_bad_in_shards(values: Any, is_bad: Callable[[Any], Any]) -> tuple[Any, tuple] | None:
    """(value, index) of the first bad entry of a known split array, else None.

    Each process looks at its own shards in numpy; with several processes one small allgather
    makes them agree, so all raise the same error (or none does) before any collective runs.
    """
    first, found = np.inf, 0.0
    for shard in values.addressable_shards:
        data = np.asarray(shard.data)
        bad = np.asarray(is_bad(data))
        if bad.any():
            local = tuple(int(i) for i in np.argwhere(bad)[0])
            index = tuple((part.start or 0) + i for part, i in zip(shard.index, local))
            flat = int(np.ravel_multi_index(index, values.shape))
            if flat < first:
                first, found = flat, float(data[local])
    if jax.process_count() > 1:
        from jax.experimental import multihost_utils

        every = np.asarray(multihost_utils.process_allgather(np.array([first, found])))
        first, found = every[int(np.argmin(every[:, 0]))]
    if not np.isfinite(first):
        return None
    index = tuple(int(i) for i in np.unravel_index(int(first), values.shape))
    return np.asarray(found).astype(values.dtype).item(), index


def array_namespace(*values: Any) -> Any:
    """numpy when every value (None aside) can be read here whole (`host_values`), else
    jax.numpy: for code that checks or computes on the host when it can, e.g. `check` flags
    broadcast to a batch shape without a JAX op when all are clean."""
    known = all(host_values(value) is not None for value in values if value is not None)
    return np if known else jnp


# ----------------------------------------------------------------------------- the rules


def not_finite(values: Any) -> Any:
    """NaN or +-inf: NaN fails both comparisons."""
    return ~((values > -np.inf) & (values < np.inf))


def not_zero_or_one(values: Any) -> Any:
    """Anything but 0 and 1 (a 0/1 mask); NaN is neither."""
    return (values != 0) & (values != 1)


def _nan_or_inf(value: float) -> str:
    return "NaN" if value != value else "inf"


# Two spellings of a non-finite value found, each matched by tests of its callers: `FINITE`
# names its kind ("found NaN", "found inf"), `FINITE_VALUE` writes it as Python does ("nan").
FINITE = Rule(not_finite, "be finite", _nan_or_inf)
FINITE_VALUE = Rule(not_finite, "be finite")
BINARY = Rule(not_zero_or_one, "contain only 0 and 1 (1 is the positive class) in a binary problem")
NON_NEGATIVE = Rule(lambda values: values < 0, "be non-negative")
UNIT_INTERVAL = Rule(lambda v: ~((v >= 0) & (v <= 1)), "be in [0, 1]")
PROBABILITY = Rule(lambda p: ~((p >= 0) & (p <= 1)), "be probabilities in [0, 1]")
GRADE = Rule(lambda g: ~((g >= 0) & (g < np.inf)), "be non-negative and finite")
ITEM_MASK = Rule(
    not_zero_or_one,
    "be 0 or 1 (a weight there marks an item present or absent; per-query weights belong to "
    "the average over queries, `query_mean`)",
)


def class_index(num_classes: int) -> Rule:
    """The rule of class indices of a problem of `num_classes` classes: integers in [0, C)."""
    return Rule(
        lambda values: (values < 0) | (values >= num_classes),
        f"be class indices in [0, {num_classes}) (`num_classes`)",
    )


# Integer weights are counted exactly in int32, so a row's total must stay below 2^31; float
# weights are summed in float32, so a row's total must be finite there.
_INT32_TOTAL = Rule(
    lambda total: ~(total < 2.0**31),
    f"sum to at most {2**31 - 1:.4g} per row (int32 counts: scale the weights down, rates do "
    "not change)",
    lambda total: f"a total of {total:.6g}",
)
_FLOAT32_TOTAL = Rule(
    lambda total: ~(total <= float(np.finfo(np.float32).max)),
    f"sum to at most {float(np.finfo(np.float32).max):.4g} per row (float32 sums: scale the "
    "weights down, rates do not change)",
    lambda total: f"a total of {total:.6g}",
)


def check_finite(values: Any, name: str) -> Any:
    """`check` of `FINITE` over the last axis; integers are always finite (never scanned)."""
    if not jnp.issubdtype(values.dtype, jnp.floating):
        return np.zeros(np.shape(values)[:-1], bool)
    return check(values, name, FINITE)


def check_binary_labels(labels: Any, name: str = "labels") -> Any:
    """`check` of `BINARY`: labels must be 0/1 (or bool)."""
    return check(labels, name, BINARY)


def check_weights(weights: Any, name: str = "sample_weight") -> Any:
    """Weights must be finite, non-negative, and sum per row to a total the counts can hold."""
    integer = not jnp.issubdtype(weights.dtype, jnp.floating)
    invalid = check_finite(weights, name) | check(weights, name, NON_NEGATIVE)
    totals = _row_totals(weights)
    return invalid | check(totals, name, _INT32_TOTAL if integer else _FLOAT32_TOTAL, sample_axes=0)


def _row_totals(weights: Any) -> Any:
    """Each row's total: in float64 on the host when known (compared with the limits exactly),
    else in float32 as the counts sum it; of a split array, gathered (one value a row)."""
    if not is_concrete(weights):
        return weights.astype(jnp.float32).sum(axis=-1)
    if layouts.is_split(weights):
        return layouts.replicate(weights.astype(jnp.float32).sum(axis=-1))
    return np.asarray(weights).astype(np.float64).sum(axis=-1)
