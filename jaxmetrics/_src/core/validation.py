"""Input checking, shared by every public function.

Two regimes, as the spec fixes them:

* concrete inputs (eager calls): a bad value raises ``ValueError`` naming the argument, what was
  expected, what was found and where;
* traced inputs (under ``jax.jit``/``vmap``/``grad``): values are unknown, so the checks become a
  boolean ``invalid`` flag per batch element, which the caller turns into NaN.

Shape and dtype errors raise in both regimes, because shapes and dtypes are known at trace time.
"""

from __future__ import annotations

import sys
import warnings
from collections.abc import Callable, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import kernels, layouts
from jaxmetrics._src.core.options import (  # the option checks, used as validation.check_*
    check_count as check_count,
)
from jaxmetrics._src.core.options import (
    check_option as check_option,
)
from jaxmetrics._src.core.options import (
    check_probability_level as check_probability_level,
)
from jaxmetrics._src.core.options import (
    check_real as check_real,
)

Array = jax.Array


def is_concrete(*arrays: Any) -> bool:
    """True when no array is a tracer, i.e. the values can be inspected now."""
    return not any(isinstance(a, jax.core.Tracer) for a in arrays if a is not None)


def _where(bad: np.ndarray) -> str:
    index = tuple(int(i) for i in np.argwhere(bad)[0])
    return f"index {index[0]}" if len(index) == 1 else f"index {index}"


def host_values(value: Any) -> np.ndarray | None:
    """`value` as a numpy array when its values are known now, else None (a tracer).

    Checks of concrete values run in numpy, never in jnp: inside `jax.jit` even an operation on a
    closed-over constant array is staged out and yields a tracer that cannot be tested with `if`.
    """
    if value is None or isinstance(value, jax.core.Tracer) or layouts.is_split(value):
        return None  # (a split array is checked shard by shard: `split_first_bad`)
    return np.asarray(value)


def split_first_bad(values: Any, is_bad: Callable[[Any], Any]) -> tuple[Any, str] | None:
    """(value, "index i") of the first bad entry of a concrete split array, else None.

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
    where = f"index {index[0]}" if len(index) == 1 else f"index {index}"
    return np.asarray(found).astype(values.dtype).item(), where


def check_values(
    values: Any,
    name: str,
    is_bad: Callable[[Any], Any],
    expected: str,
    *,
    sample_axes: int = 1,
) -> Array:
    """The one raise-eagerly / mark-under-jit check.

    `is_bad` maps an array (numpy when concrete, jnp when traced) to a boolean mask of bad
    entries, using operators and ufunc-style calls that work on both. Concrete: raise
    ``ValueError("`name` must <expected>; found <value> at index <i>.")``. Traced: return the
    per-batch flag, reduced over the last `sample_axes` axes, which callers turn into NaN / -1.
    """
    values = jnp.asarray(values) if isinstance(values, list | tuple) else values
    host = host_values(values)
    batch_shape = tuple(np.shape(values))[: max(np.ndim(values) - sample_axes, 0)]
    if host is not None:
        bad = np.asarray(is_bad(host))
        if bad.any():
            found = host[tuple(np.argwhere(bad)[0])] if host.ndim else host
            raise ValueError(f"`{name}` must {expected}; found {found.item()!r} at {_where(bad)}.")
        return np.zeros(batch_shape, bool)
    if layouts.is_split(values):
        first = split_first_bad(values, is_bad)
        if first is not None:
            raise ValueError(f"`{name}` must {expected}; found {first[0]!r} at {first[1]}.")
        return np.zeros(batch_shape, bool)
    axes = tuple(range(max(np.ndim(values) - sample_axes, 0), np.ndim(values)))
    return jnp.any(is_bad(values), axis=axes)


# Predicates for `check_values`, written with comparisons that work on numpy and jnp alike.
def not_finite(values: Any) -> Any:
    """NaN or +-inf: NaN fails both comparisons."""
    return ~((values > -np.inf) & (values < np.inf))


def not_zero_or_one(values: Any) -> Any:
    """Anything but 0 and 1 (a 0/1 mask); NaN is neither."""
    return (values != 0) & (values != 1)


def float_dtype(*dtypes: Any) -> Any:
    """Float type of results: float64 whenever x64 is on (results are float64 end to end), else
    float32 (counts stay exact integers; only ratios of them are float)."""
    del dtypes  # kept for call sites that name their inputs; x64 alone decides
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def as_real_array(
    value: Any, name: str, *, min_ndim: int = 1, host: bool = False, keep_split: bool = False
) -> Array:
    """`value` as an array of real numbers (bool, int or float); raises TypeError otherwise.

    A JAX array by default; with `host=True` a concrete value stays a numpy array, so that an
    eager call can check and pad it without dispatching (and compiling) one JAX op per shape.
    An array split over a mesh is made whole on every device (`layouts.replicate`), unless
    `keep_split` (the metrics with a sharded kernel: `sharded.py`).
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
            f"`{name}` must have at least {min_ndim} dimension(s) (samples on the last axis); "
            f"got shape {tuple(value.shape)}."
        )
    if isinstance(value, jax.Array) and not keep_split:
        value = layouts.replicate(value)
    if host and not isinstance(value, jax.core.Tracer) and not layouts.is_split(value):
        return np.asarray(value)
    return to_device(value)


def to_device(value: Any) -> Array:
    """`jnp.asarray(value)`, without compiling for a numpy array outside any trace.

    `jnp.asarray` of a numpy array compiles a small copy program ("stage") for every new shape
    and type, 5-40 ms each on the CPU; `jax.device_put` copies it without one.
    """
    if isinstance(value, np.ndarray | np.generic) and kernels.trace_state_clean():
        return jax.device_put(value)
    return jnp.asarray(value)


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


def _no_flags(values: Any) -> np.ndarray:
    return np.zeros(np.shape(values)[:-1], bool)


def check_finite(values: Array, name: str) -> Array:
    """Raise on NaN/inf when concrete; return a per-batch `invalid` flag when traced."""
    if not jnp.issubdtype(values.dtype, jnp.floating):  # integers are always finite
        return _no_flags(values)
    host = host_values(values)
    if host is not None:
        bad = ~np.isfinite(host)
        if bad.any():
            kind = "NaN" if np.isnan(host[tuple(np.argwhere(bad)[0])]) else "inf"
            raise ValueError(f"`{name}` must be finite; found {kind} at {_where(bad)}.")
        return _no_flags(values)
    if layouts.is_split(values):
        first = split_first_bad(values, lambda v: ~np.isfinite(v))
        if first is not None:
            kind = "NaN" if np.isnan(first[0]) else "inf"
            raise ValueError(f"`{name}` must be finite; found {kind} at {first[1]}.")
        return _no_flags(values)
    return jnp.any(~jnp.isfinite(values), axis=-1)


def check_binary_labels(labels: Array, name: str = "labels") -> Array:
    """Labels must be 0/1 (or bool); raise when concrete, flag when traced."""
    host = host_values(labels)
    if host is not None:
        bad = (host != 0) & (host != 1)
        if bad.any():
            found = host[tuple(np.argwhere(bad)[0])]
            raise ValueError(
                f"`{name}` must contain only 0 and 1 (1 is the positive class) in a binary "
                f"problem; found {found.item()!r} at {_where(bad)}."
            )
        return _no_flags(labels)
    if layouts.is_split(labels):
        first = split_first_bad(labels, lambda v: (v != 0) & (v != 1))
        if first is not None:
            raise ValueError(
                f"`{name}` must contain only 0 and 1 (1 is the positive class) in a binary "
                f"problem; found {first[0]!r} at {first[1]}."
            )
        return _no_flags(labels)
    return jnp.any((labels != 0) & (labels != 1), axis=-1)


# Integer weights are counted exactly in int32: their total must stay below 2^31.
_INT32_LIMIT = 2**31 - 1


def check_weights(weights: Array, name: str = "sample_weight") -> Array:
    """Weights must be finite, non-negative, and sum to a total the counts can hold.

    Integer weights are counted exactly in int32, so a row's total must stay below 2^31; float
    weights are summed in float32, so a row's total must be finite there. Raise when concrete,
    flag when traced.
    """
    invalid = check_finite(weights, name)
    host = host_values(weights)
    integer = not jnp.issubdtype(weights.dtype, jnp.floating)
    if host is not None:
        bad = host < 0
        if bad.any():
            raise ValueError(
                f"`{name}` must be non-negative; found {host[tuple(np.argwhere(bad)[0])].item()!r} "
                f"at {_where(bad)}."
            )
        total = host.astype(np.float64).sum(axis=-1)
        limit = _INT32_LIMIT if integer else float(np.finfo(np.float32).max)
        if np.any(total > limit):
            kind = "int32 counts" if integer else "float32 sums"
            raise ValueError(
                f"`{name}` must sum to at most {limit:.4g} per row ({kind}); found a total of "
                f"{float(np.max(total)):.6g}. Scale the weights down (rates do not change)."
            )
        return invalid
    if layouts.is_split(weights):
        first = split_first_bad(weights, lambda v: v < 0)
        if first is not None:
            raise ValueError(f"`{name}` must be non-negative; found {first[0]!r} at {first[1]}.")
        total = np.asarray(layouts.replicate(weights.astype(jnp.float32).sum(axis=-1)))
        limit = _INT32_LIMIT if integer else float(np.finfo(np.float32).max)
        if np.any(total > limit) or not np.all(np.isfinite(total)):
            kind = "int32 counts" if integer else "float32 sums"
            raise ValueError(
                f"`{name}` must sum to at most {limit:.4g} per row ({kind}); found a total of "
                f"{float(np.max(total)):.6g}. Scale the weights down (rates do not change)."
            )
        return invalid
    total = weights.astype(jnp.float32).sum(axis=-1)
    too_large = total >= 2.0**31 if integer else ~jnp.isfinite(total)
    return invalid | jnp.any(weights < 0, axis=-1) | too_large


_ORDER_HINT = (
    "(The scores come first: f(scores, labels), unlike scikit-learn's (y_true, y_score); the "
    "scores here are all 0 or 1.)"
)
_swap_warned = False


def _zeros_and_ones(values: np.ndarray | None) -> bool:
    return values is not None and values.size > 0 and bool(np.all((values == 0) | (values == 1)))


def warn_if_swapped(scores: Any, labels: Any) -> None:
    """Warn, once a process, when both arrays are 0/1 integers (or bools), concrete.

    ``jm.roc_auc(y, hard_predictions)`` in scikit-learn's order is then valid input and gives
    another number without an error. Float scores are never suspected (and never scanned).
    """
    global _swap_warned
    if _swap_warned:
        return
    arrays = [np.asarray(a) if isinstance(a, list | tuple) else a for a in (scores, labels)]
    if not all(
        isinstance(a, np.ndarray | jax.Array)
        and (a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer))
        for a in arrays
    ):
        return
    if all(_zeros_and_ones(host_values(a)) for a in arrays):
        _swap_warned = True
        frame, level = sys._getframe(0), 1  # point at the caller's line, outside jaxmetrics
        while frame is not None and frame.f_globals.get("__name__", "").startswith("jaxmetrics"):
            frame, level = frame.f_back, level + 1
        warnings.warn(
            "`scores` and `labels` are both 0/1 integers: jaxmetrics takes f(scores, labels), "
            "unlike scikit-learn's (y_true, y_score). If the first array holds the labels, swap "
            "them. (Hard 0/1 predictions as scores are fine; this is said once.)",
            UserWarning,
            stacklevel=level,
        )


def binary_inputs(
    scores: Any,
    labels: Any,
    sample_weight: Any = None,
    *,
    host: bool = False,
    keep_split: bool = False,
) -> tuple[Array, Array, Array | None, Array]:
    """Check the (scores, labels, sample_weight) triple of every binary metric.

    Returns the arrays (scores as float, labels as int32 0/1, weights as given) and `invalid`, a
    boolean array of the batch shape, True where a traced input held a bad value. With
    `host=True`, concrete inputs come back as numpy arrays (see `as_real_array`).
    """
    split = {"host": host, "keep_split": keep_split}
    warn_if_swapped(scores, labels)
    scores = as_scores(scores, **split)
    labels = as_real_array(labels, "labels", **split)
    weights = (
        None if sample_weight is None else as_real_array(sample_weight, "sample_weight", **split)
    )
    batch_shape = sample_axis_shapes(
        [("scores", scores), ("labels", labels), ("sample_weight", weights)]
    )
    try:
        invalid = check_finite(scores, "scores") | check_binary_labels(labels)
    except ValueError as error:
        if _zeros_and_ones(host_values(scores)):  # labels passed where the scores go?
            raise ValueError(f"{error} {_ORDER_HINT}") from None
        raise
    if weights is not None:
        invalid = invalid | check_weights(weights)
    xp = np if isinstance(invalid, np.ndarray) else jnp
    return scores, (labels == 1).astype(np.int32), weights, xp.broadcast_to(invalid, batch_shape)


# ----------------------------------------------------------------------------- exact order

# Order keys are float32 bit patterns counted up from the smallest normal float: every rank maps
# to a distinct, positive, normal, finite float32 (no subnormal that XLA could flush to zero), so
# the engine sorts and compares keys exactly like scores, at any number of distinct values.
_FIRST_KEY_BITS = np.uint32(0x00800000)


class ScoreCodec:
    """An exact order-preserving map from the input's scores to float32 keys, and back.

    Ranking metrics depend on the order and the ties of the scores only. When the scores cannot
    enter JAX without losing some of both (float64 values that float32 merges, integers above
    2^24, subnormals that XLA flushes to zero), they are replaced on the host by the rank of
    their value among the distinct values, stored as a float32 key; thresholds are encoded the
    same way, so ``score >= threshold`` holds for the keys exactly when it holds for the values.
    Results that hold scores (curve thresholds, chosen thresholds) are decoded back into the
    input's own values.
    """

    def __init__(self, distinct: np.ndarray | None):
        self.distinct = distinct  # sorted distinct input values; None: scores pass unchanged

    @property
    def active(self) -> bool:
        return self.distinct is not None

    def keys_of_ranks(self, ranks: np.ndarray) -> np.ndarray:
        return (ranks.astype(np.uint32) + _FIRST_KEY_BITS).view(np.float32)

    def encode_thresholds(self, thresholds: np.ndarray) -> np.ndarray:
        """Keys of thresholds: the rank of the first distinct score >= t (so >= is preserved)."""
        ranks = np.searchsorted(self.distinct, thresholds, side="left")
        return self.keys_of_ranks(np.asarray(ranks))

    def decode(self, keys: Any) -> Any:
        """Input values of score keys; +-inf and NaN (markers, the closing curve point) stay."""
        if not self.active:
            return keys
        if isinstance(keys, jax.core.Tracer):
            # concrete scores closed over inside jit: the result is traced, so the values come
            # back in JAX's float type (float32 unless x64), as everything under jit does
            ranks = jax.lax.bitcast_convert_type(keys, jnp.uint32) - _FIRST_KEY_BITS
            distinct = jnp.asarray(self.distinct, float_dtype())
            values = distinct[jnp.clip(ranks.astype(jnp.int32), 0, self.distinct.size - 1)]
            return jnp.where(jnp.isfinite(keys), values, keys.astype(values.dtype))
        keys = np.asarray(keys, np.float32)
        finite = np.isfinite(keys)
        ranks = keys.view(np.uint32).astype(np.int64) - int(_FIRST_KEY_BITS)
        values = self.distinct[np.clip(ranks, 0, self.distinct.size - 1)].astype(np.float64)
        values = np.where(finite, values, keys.astype(np.float64))
        return jnp.asarray(values) if jax.config.jax_enable_x64 else values


def _needs_codec(host: np.ndarray, dtype: Any) -> bool:
    """True when casting `host` to the engine's float `dtype` would merge, move or flush values."""
    if host.dtype == np.bool_:
        return False
    cast = host.astype(dtype)
    tiny = np.finfo(dtype).tiny
    if np.any((cast != 0) & (np.abs(cast) < tiny)):  # subnormal: XLA's CPU flushes it to zero
        return True
    if host.dtype == dtype:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        if np.issubdtype(host.dtype, np.integer):
            if host.size == 0:
                return False
            limit = 2 ** (np.finfo(dtype).nmant + 1)
            return bool(np.max(np.abs(host.astype(np.float64))) > limit)
        return bool(np.any(cast.astype(host.dtype) != host))


def order_keys(
    scores: Any, name: str = "scores", *, thresholds: Any = None
) -> tuple[Any, ScoreCodec]:
    """Scores for a metric that depends only on their order, exact on any concrete input.

    Traced scores (under jit) pass unchanged: their values are what JAX made them (float32
    unless x64 is on). Concrete scores that the engine's float type would change are replaced
    by order keys (see `ScoreCodec`); NaN/inf are left for `check_finite` to report.
    """
    host = host_values(scores)
    if host is None or host.dtype.kind not in "biuf":
        return scores, ScoreCodec(None)
    # thresholds compared with the scores must be encoded with them, or not at all
    grid = None if thresholds is None else host_values(thresholds)
    if thresholds is not None and (grid is None or grid.dtype.kind not in "biuf"):
        return scores, ScoreCodec(None)
    needed = _needs_codec(host, float_dtype()) or (
        grid is not None and _needs_codec(grid[~np.isnan(grid)], float_dtype())
    )
    if not needed or not np.all(np.isfinite(host)):
        return scores, ScoreCodec(None)
    distinct = np.unique(host.astype(np.float64) if host.dtype.kind == "f" else host)
    if distinct.size >= 2**31:
        raise ValueError(f"`{name}` has too many distinct values to rank exactly.")
    codec = ScoreCodec(distinct)
    keys = codec.keys_of_ranks(np.searchsorted(distinct, host))
    return keys, codec


def ranking_inputs(
    scores: Any, labels: Any, sample_weight: Any = None, *, thresholds: Any = None
) -> tuple[Array, Array, Array | None, Array, ScoreCodec]:
    """`binary_inputs` for metrics of the scores' order only, plus the codec of their keys.

    With `thresholds` (compared against the scores), the codec is used only when they are
    concrete too, and then encodes them with the scores.
    """
    warn_if_swapped(scores, labels)
    keys, codec = order_keys(scores, thresholds=thresholds)
    scores, labels, weights, invalid = binary_inputs(
        keys, labels, sample_weight, host=True, keep_split=True
    )
    return scores, labels, weights, invalid, codec


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

    flags = host_values(invalid)
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
