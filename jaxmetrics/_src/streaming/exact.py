"""Streaming exact ranking curve: `ExactCurve`, a fixed-capacity buffer of the samples whose
scores are kept exactly (float64 values as order-preserving 64-bit keys), with exact metrics.

The state machinery and the rules for bad batches and multilabel states are `base`'s;
see `streaming` for the overview.
"""

from __future__ import annotations

import dataclasses

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import (
    batching,
    checks,
    coercion,
    kernels,
    numerics,
    options,
    sorting,
    validation,
)
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import forms, sample_sort
from jaxmetrics._src.metrics import ranking
from jaxmetrics._src.streaming.base import (
    check_batch,
    check_num_labels,
    check_same_config,
    label_shape,
    per_label,
    state_class,
    static_field,
)


@state_class
class ExactCurve:
    """Exact ROC AUC and average precision from a fixed-capacity buffer of the samples.

    A streaming state holding (score, label, weight) triples, O(capacity) memory. `compute`
    equals `sklearn.metrics.roc_auc_score` and `sklearn.metrics.average_precision_score` on the
    samples stored, with `jaxmetrics.roc_auc`'s and `jaxmetrics.average_precision`'s conventions
    (NaN with one class). Merge appends the other buffer; across devices gather the buffers
    (``jax.lax.all_gather``) rather than psum them.

    Multilabel: ``ExactCurve.empty(capacity, num_labels=L)`` is one buffer per label (of
    `capacity` samples each), every leaf with a leading ``[L]`` axis. It is updated with scores
    and labels ``[L, n]`` (the library's multilabel layout) and a `sample_weight` ``[n]`` or
    ``[L, n]``; merge appends label by label; `compute` gives ``[L]`` values equal to
    ``jaxmetrics.roc_auc(scores, labels)`` and ``jaxmetrics.average_precision(scores,
    labels)`` on the samples stored, and ``result["roc_auc"].mean()`` is ``average="macro"``.

    The scores are stored exactly, as the values `update` receives, in every
    precision: eagerly, float64 scores keep their float64 values even with x64 off (so `compute`
    equals ``jaxmetrics.roc_auc`` of them, called eagerly; integers are kept as their float64
    values). Each is kept as a 64-bit order key (two uint32 words), so the buffer's type never
    depends on the scores'. With `compute`'s `axis_name`, the devices' samples are ranked
    together in the results' float type (float32 unless x64 is on). When more samples arrive
    than fit, the extra ones are dropped and ``overflowed`` is set; `compute` then gives NaN
    metrics rather than a number computed on part of the data. Bad batches
    (``num_bad_batches``) and precision under `jax.jit`: docs/conventions.md.

    Attributes:
      keys: uint32 ``[capacity, 2]`` (``[L, capacity, 2]``), each stored score as the high and
        low words of an order key: the bits of its float64 value, made to sort as unsigned
        integers. The `scores` property gives the values back.
      labels: ``[capacity]`` (``[L, capacity]``) int32 labels.
      weights: ``[capacity]`` (``[L, capacity]``) float weights.
      count: int32, the number of slots filled, a scalar (``[L]``).
      overflowed: bool, True once a sample was dropped for want of room, a scalar (``[L]``).
      num_bad_batches: int32, the batches refused under `jax.jit`, a scalar (``[L]``).
      num_labels: the number of labels L of a multilabel state (static); None for one label.

    Examples:
      >>> from jaxmetrics import streaming
      >>> state = streaming.ExactCurve.empty(8)
      >>> state = state.update([0.92, 0.65, 0.33], [1, 0, 1])
      >>> state = state.update([0.61, 0.24, 0.18], [1, 0, 0])
      >>> result = state.compute()  # 7 of the 9 positive-negative pairs ranked right
      >>> round(float(result["roc_auc"]), 4), int(result["count"])
      (0.7778, 6)
    """

    keys: Array
    labels: Array
    weights: Array
    count: Array
    overflowed: Array
    num_bad_batches: Array
    num_labels: int | None = static_field(default=None)

    @classmethod
    def empty(cls, capacity: int, *, num_labels: int | None = None) -> ExactCurve:
        """An empty buffer for `capacity` samples (a positive int, static).

        With `num_labels` L (an int >= 1, static), a multilabel state: one buffer of `capacity`
        samples per label, leaves with a leading ``[L]`` axis. None (the default): one label.
        """
        capacity = options.check_count(capacity, "capacity")
        num_labels = check_num_labels(num_labels)
        per_label_shape = label_shape(num_labels)
        buffer_shape = (*per_label_shape, capacity)
        dtype = numerics.float_dtype()
        return cls(
            coercion.to_device(np.broadcast_to(_host_keys(np.zeros(1)), (*buffer_shape, 2))),
            coercion.full(buffer_shape, 0, jnp.int32),
            coercion.full(buffer_shape, 0, dtype),
            coercion.full(per_label_shape, 0, jnp.int32),
            coercion.full(per_label_shape, False, bool),
            coercion.full(per_label_shape, 0, jnp.int32),
            num_labels,
        )

    @property
    def capacity(self) -> int:
        """The number of samples the buffer holds."""
        return self.labels.shape[-1]

    @property
    def scores(self) -> Array:
        """The stored scores ``[capacity]`` (``[L, capacity]``; 0 in empty slots) in the results'
        float type: exact with x64 on, else rounded to the nearest float32."""
        return _values_of_keys(self.keys)

    def _append(self, keys: Array, labels: Array, weights: Array, size: Array) -> ExactCurve:
        """Append the first `size` samples (keys ``[n, 2]``, the rest ``[n]``) to one label."""
        position = jnp.arange(self.capacity, dtype=jnp.int32)
        source = position - self.count
        incoming = (source >= 0) & (source < size)
        take = jnp.clip(source, 0, keys.shape[0] - 1)
        return dataclasses.replace(
            self,
            keys=jnp.where(incoming[:, None], keys[take], self.keys),
            labels=jnp.where(incoming, labels[take], self.labels),
            weights=jnp.where(incoming, weights[take].astype(self.weights.dtype), self.weights),
            count=jnp.minimum(self.count + size, self.capacity),
            overflowed=self.overflowed | (self.count + size > self.capacity),
        )

    def update(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> ExactCurve:
        """Append one batch.

        Args:
          scores: ``[n]`` real scores; ``[L, n]`` for a multilabel state.
          labels: ``[n]`` labels in {0, 1} or bool; ``[L, n]`` for a multilabel state.
          sample_weight: optional ``[n]`` non-negative weights; a multilabel state also takes
            ``[L, n]``.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` and not stored (label by label when multilabel).
        """
        check_batch(self.num_labels, scores=scores, labels=labels, sample_weight=sample_weight)
        # checked as the ranking metrics check them: concrete scores by their order, so float64
        # values float32 cannot hold pass (and are stored exactly, `_score_keys`)
        checked, labels, weights, invalid, _ = validation.ranking_inputs(
            scores, labels, sample_weight
        )
        return _appended(self, _score_keys(scores, checked), labels, weights, invalid)

    def merge(self, other: ExactCurve) -> ExactCurve:
        """The buffer of both states' samples (overflow-checked, like `update`; label by label)."""
        check_same_config(self, other, "ExactCurve")
        return per_label(ExactCurve._merge_label, self, other)

    def _merge_label(self, other: ExactCurve) -> ExactCurve:
        merged = self._append(other.keys, other.labels, other.weights, other.count)
        return dataclasses.replace(
            merged,
            overflowed=merged.overflowed | other.overflowed,
            num_bad_batches=self.num_bad_batches + other.num_bad_batches,
        )

    def compute(self, axis_name: str | tuple[str, ...] | None = None) -> dict[str, Array]:
        """The exact metrics of the samples stored.

        Args:
          axis_name: inside `jax.shard_map`, the mesh axis (or axes) whose devices each hold
            one state: the metrics are those of all their samples together, computed by the
            distributed sample sort (``mesh/forms.py``: O(capacity) memory per device, no gather
            of the buffers). None (the default): this state alone.

        Returns:
          A dict: "roc_auc" and "average_precision" (scalars, NaN after an overflow or a bad
          batch), "count" (int32) and "overflowed" (bool); each ``[L]`` for a multilabel state.
        """
        # the batched engine: a multilabel state's buffers [L, capacity] are L batch rows
        filled = jnp.arange(self.capacity) < self.count[..., None]
        weights = jnp.where(filled, self.weights, 0.0)
        count, overflowed, bad = self.count, self.overflowed, self.num_bad_batches
        if axis_name is None:  # the keys' own order, exactly
            ranks = _rank_keys(self.keys)
            auc = ranking.roc_auc(ranks, self.labels, sample_weight=weights)
            ap = ranking.average_precision(ranks, self.labels, sample_weight=weights)
        else:  # devices' keys do not rank together: their values do, in the results' float type
            axes = axis_name if isinstance(axis_name, tuple) else (axis_name,)
            rows = lambda a: [a] if self.num_labels is None else list(a)  # noqa: E731
            pairs = [  # (NaN in the unlikely event that a device's buffer overflows)
                forms.ranking_over_axes(s, y, w, axes)[:2]
                for s, y, w in zip(rows(self.scores), rows(self.labels), rows(weights))
            ]
            auc, ap = (jnp.stack(column).reshape(count.shape) for column in zip(*pairs))
            count = jax.lax.psum(count, axes)
            overflowed = jax.lax.psum(overflowed.astype(jnp.int32), axes) > 0
            bad = jax.lax.psum(bad, axes)
        result = batching.nan_where(
            overflowed | (bad > 0), {"roc_auc": auc, "average_precision": ap}
        )
        return {**result, "count": count, "overflowed": overflowed}


# ----------------------------------------------------------------------------- exact score keys
# `ExactCurve` keeps each score as a 64-bit order key: the bits of its float64 value, negatives
# flipped whole and the sign bit of the rest set, so that unsigned order is the values' order.
# Two uint32 words (high, low) hold it: no float64 array exists with x64 off, and the buffer's
# type is then the same whatever scores arrive.
_SIGN = np.uint32(0x80000000)
_FLOAT64_EXPONENT_OF_FLOAT32 = 1023 - 127  # float64 exponent bias minus float32's
_FIRST_RANK_BITS = 0x00800000  # the smallest normal float32's bits (`exact_order.ScoreCodec`)


def _host_keys(values: np.ndarray) -> np.ndarray:
    """Order keys ``[..., n, 2]`` of concrete scores: their float64 values, exactly."""
    bits = (values.astype(np.float64) + 0.0).view(np.uint64)  # (+ 0.0 makes -0.0 +0.0)
    negative = (bits >> np.uint64(63)) == 1
    keys = np.where(negative, ~bits, bits | np.uint64(1 << 63))
    return np.stack([(keys >> np.uint64(32)).astype(np.uint32), keys.astype(np.uint32)], -1)


def _device_keys(scores: Array) -> Array:
    """Order keys of traced scores (float32, or float64 with x64 on), as `_host_keys` gives.

    A float32's float64 bits are built from its own: the exponent rebiased, the 23-bit mantissa
    shifted to the top of the 52-bit one. Subnormals are zero, as XLA's CPU compares them.
    """
    if scores.dtype == jnp.float64:
        bits = jax.lax.bitcast_convert_type(jnp.where(scores == 0, 0.0, scores), jnp.uint64)
        keys = jnp.where((bits >> 63) == 1, ~bits, bits | np.uint64(1 << 63))
        return jnp.stack([(keys >> 32).astype(jnp.uint32), keys.astype(jnp.uint32)], -1)
    bits = jax.lax.bitcast_convert_type(scores.astype(jnp.float32), jnp.uint32)
    exponent = (bits >> 23) & 0xFF
    mantissa = bits & 0x7FFFFF
    normal = exponent != 0
    high = jnp.where(normal, ((exponent + _FLOAT64_EXPONENT_OF_FLOAT32) << 20) | (mantissa >> 3), 0)
    low = jnp.where(normal, (mantissa & 7) << 29, 0)
    negative = normal & (bits >= _SIGN)
    high = jnp.where(negative, ~high & ~_SIGN, high | _SIGN)
    return jnp.stack([high, jnp.where(negative, ~low, low)], -1).astype(jnp.uint32)


# One compiled program per eager update (operation by operation, an update compiled about 30
# programs on a state's first use); inlined in a caller's trace.
@kernels.sample_jit
def _appended(
    state: ExactCurve, keys: Array, labels: Array, weights: Array | None, invalid: Array
) -> ExactCurve:
    labels = jnp.asarray(labels)
    # one weight per sample is every label's weight of that sample
    weights = jnp.ones(labels.shape, state.weights.dtype) if weights is None else weights
    weights = jnp.broadcast_to(jnp.asarray(weights), labels.shape)
    invalid = jnp.asarray(invalid)  # [] or [L]: the labels whose batch is refused
    size = jnp.where(invalid, 0, labels.shape[-1]).astype(jnp.int32)
    appended = per_label(ExactCurve._append, state, keys, labels, weights, size)
    return dataclasses.replace(
        appended, num_bad_batches=state.num_bad_batches + invalid.astype(jnp.int32)
    )


def _score_keys(scores: ArrayLike, checked: Array) -> Array:
    """Order keys of a batch: of the values given when concrete (numpy), else of the checked
    scores."""
    values = checks.host_values(scores)
    if values is not None:
        return _host_keys(values)
    return _device_keys(checked)


def _rank_keys(keys: Array) -> Array:
    """float32 stand-ins ``[..., m]`` for the scores of keys ``[..., m, 2]``: the same order and
    ties, as the dense rank of each key made a positive normal float32 (`ScoreCodec`'s keys)."""
    high, low = keys[..., 0], keys[..., 1]
    order = sample_sort.two_key_order(high, low)
    high, low = (jnp.take_along_axis(word, order, axis=-1) for word in (high, low))
    first = jnp.ones((*high.shape[:-1], 1), bool)
    changes = (high[..., 1:] != high[..., :-1]) | (low[..., 1:] != low[..., :-1])
    rank = sorting.cumulative(jnp.concatenate([first, changes], -1).astype(jnp.int32)) - 1
    # back to buffer order: the positions (a permutation, so unsigned) carry the ranks
    _, rank = _stable_sort(order.astype(jnp.uint32), rank)
    return jax.lax.bitcast_convert_type(rank.astype(jnp.uint32) + _FIRST_RANK_BITS, jnp.float32)


def _stable_sort(keys: Array, values: Array) -> tuple[Array, Array]:
    """Unsigned `keys` sorted stably along the last axis, carrying int32 `values`: one
    unsigned compare, the form XLA's GPU sort rewriter hands to CUB's radix sort."""
    return jax.lax.sort((keys, values), dimension=keys.ndim - 1, num_keys=1, is_stable=True)


def _values_of_keys(keys: Array) -> Array:
    """The scores of keys ``[..., 2]`` in the results' float type.

    With x64 on, exactly. Without, rounded to the nearest float32 (ties to even) from the
    float64 bits, subnormals to zero: monotone, so the order is kept but for new ties.
    """
    high, low = keys[..., 0], keys[..., 1]
    positive = high >= _SIGN
    high = jnp.where(positive, high ^ _SIGN, ~high)  # the float64 bits' two words
    low = jnp.where(positive, low, ~low)
    if jax.config.jax_enable_x64:
        bits = (high.astype(jnp.uint64) << 32) | low.astype(jnp.uint64)
        return jax.lax.bitcast_convert_type(bits, jnp.float64)
    exponent = ((high >> 20) & 0x7FF).astype(jnp.int32) - _FLOAT64_EXPONENT_OF_FLOAT32
    mantissa = ((high & 0xFFFFF) << 3) | (low >> 29)  # the top 23 of the 52 mantissa bits
    rest, half = low & 0x1FFFFFFF, 0x10000000  # the 29 bits dropped, and half a float32 ulp
    round_up = (rest > half) | ((rest == half) & ((mantissa & 1) == 1))
    # a carry out of the mantissa moves to the next exponent, and past the largest to infinity
    magnitude = ((jnp.clip(exponent, 0, 255).astype(jnp.uint32) << 23) | mantissa) + round_up
    magnitude = jnp.where(exponent >= 255, 0x7F800000, jnp.where(exponent <= 0, 0, magnitude))
    return jax.lax.bitcast_convert_type((high & _SIGN) | magnitude, jnp.float32)
