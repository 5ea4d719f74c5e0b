"""Streaming metric states for training loops: update batch by batch, merge across devices.

Each state is a pytree (a registered dataclass) with ``empty(...)``, ``update(...)``,
``merge(other)`` and ``compute() -> dict``, all usable under `jax.jit`. Configuration (threshold
grids, capacities, class counts) lives in static fields, so a state's array leaves are exactly
the things that add up: ``jax.lax.psum(state, axis)`` merges the states of all devices of a mesh
axis for every state whose merge is addition (`BinnedCurve`, `ConfusionState`, `Mean`).

Counting goes through the library's engine: a batch's counts at a threshold grid are one call to
`confusion_counts` (one sort), and a `Collection` gives all its thresholded states one such call.

Bad batches: called eagerly, `update` raises on a bad value (NaN score, label 2, negative
weight) like every metric. Under jit it cannot, so the batch is not added; instead the state's
``num_bad_batches`` leaf counts it, merging by addition like the counts, and `compute` returns
NaN for every metric (and curve) of a state that ever saw one, never a number computed without
the bad batch. A `Mean` is poisoned by a NaN total instead.

Float weights give float counts: a state created with int32 counts (the default, exact) is
promoted to float on its first float-weighted update (create it with ``dtype=jnp.float32`` to
keep one type through a `lax.scan`). With x64 on, results are float64.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import counts as counts_lib
from jaxmetrics._src import multiclass, ranking, validation
from jaxmetrics._src.counts import Counts, safe_divide

Array = jax.Array


def _state(cls):
    """Register a dataclass as a pytree: fields marked static are metadata, the rest leaves."""
    cls = dataclasses.dataclass(frozen=True)(cls)
    data, meta = [], []
    for field in dataclasses.fields(cls):
        (meta if field.metadata.get("static") else data).append(field.name)
    return jax.tree_util.register_dataclass(cls, data_fields=data, meta_fields=meta)


def _static(**kwargs):
    return dataclasses.field(metadata={"static": True}, **kwargs)


def _add(first, second):
    return jax.tree_util.tree_map(jnp.add, first, second)


def _is_bad(counts: Any) -> Array:
    """True when counts carry the mark of a bad batch under jit: -1 (int) or NaN (float)."""
    leaves = jax.tree_util.tree_leaves(counts)
    return jnp.any(jnp.stack([jnp.any((c < 0) | jnp.isnan(c)) for c in leaves]))


def _accumulate(total: Array, new: Array, skip: Array) -> Array:
    """`total + new` in their common type, adding nothing when `skip` (a bad batch)."""
    dtype = jnp.promote_types(total.dtype, new.dtype)
    return total.astype(dtype) + jnp.where(skip, jnp.zeros((), dtype), new.astype(dtype))


def _one_batch(values: Any, name: str) -> None:
    if np.ndim(values) != 1:
        raise ValueError(f"`{name}` must be one batch [n]; got shape {np.shape(values)}.")


def _poisoned(result: dict, bad: Array) -> dict:
    """NaN for every float result of a state that saw a bad batch."""
    return {
        key: jnp.where(bad, jnp.nan, value)
        if jnp.issubdtype(jnp.asarray(value).dtype, jnp.floating)
        else value
        for key, value in result.items()
    }


def _check_same_config(first, second, name: str) -> None:
    if type(first) is not type(second):
        raise TypeError(f"cannot merge a {type(first).__name__} with a {type(second).__name__}.")
    for field in dataclasses.fields(first):
        if field.metadata.get("static") and getattr(first, field.name) != getattr(
            second, field.name
        ):
            raise ValueError(f"cannot merge {name} states with different `{field.name}`.")


@_state
class BinnedCurve:
    """Counts at a fixed threshold grid: O(T) memory, merge is addition (psum-able).

    ``tp[k]``/``fp[k]`` count the positives/negatives scoring >= ``thresholds[k]``;
    ``num_bad_batches`` counts batches refused under jit (`compute` is then all NaN). `compute`
    gives ROC AUC (trapezoids between grid points), AP (step sum over the grid), the curves, and
    ``roc_auc_max_error``: the exact AUC lies within this distance of the binned one, because the
    order of samples inside a bin is unknown and each bin's ROC segment can bend anywhere within
    its rectangle (the bound is the sum of the half-rectangles). A grid from the quantiles of the
    scores (`from_quantiles`) keeps the bins, and so the bound, small wherever the data are.
    """

    tp: Array
    fp: Array
    total_positive: Array
    total_negative: Array
    num_bad_batches: Array
    thresholds: tuple = _static()

    @classmethod
    def empty(
        cls,
        num_thresholds: int = 200,
        *,
        thresholds: Any = None,
        low: float = 0.0,
        high: float = 1.0,
        dtype=jnp.int32,
    ) -> BinnedCurve:
        """A grid of `num_thresholds` equally spaced in [low, high], or the given `thresholds`.

        `dtype` int32 counts exactly (unweighted or integer weights); float weights promote the
        counts to float on update (start with float32 to keep one type through a scan).
        """
        if thresholds is None:
            if not isinstance(num_thresholds, int) or num_thresholds < 2:
                raise ValueError(f"`num_thresholds` must be an int >= 2; got {num_thresholds!r}.")
            grid = np.linspace(low, high, num_thresholds, dtype=np.float32)
        else:
            grid = np.unique(np.asarray(thresholds, np.float32).reshape(-1))
            if grid.size < 1 or not np.isfinite(grid).all():
                raise ValueError("`thresholds` must be a non-empty set of finite numbers.")
        zeros = jnp.zeros(grid.size, dtype)
        return cls(
            zeros,
            zeros,
            jnp.zeros((), dtype),
            jnp.zeros((), dtype),
            jnp.zeros((), jnp.int32),
            tuple(grid.tolist()),
        )

    @classmethod
    def from_quantiles(cls, scores: Any, num_thresholds: int = 200, **kwargs) -> BinnedCurve:
        """A grid at the quantiles of a first batch of scores (call eagerly, not under jit)."""
        scores = np.asarray(scores, np.float32).reshape(-1)
        levels = np.linspace(0, 1, num_thresholds)
        return cls.empty(thresholds=np.quantile(scores, levels), **kwargs)

    @property
    def grid(self) -> Array:
        return jnp.asarray(self.thresholds, jnp.float32)

    def _add_counts(self, counts: Counts) -> BinnedCurve:
        bad = _is_bad(counts)
        return BinnedCurve(
            _accumulate(self.tp, counts.tp, bad),
            _accumulate(self.fp, counts.fp, bad),
            _accumulate(self.total_positive, counts.tp[0] + counts.fn[0], bad),
            _accumulate(self.total_negative, counts.fp[0] + counts.tn[0], bad),
            self.num_bad_batches + bad.astype(jnp.int32),
            self.thresholds,
        )

    def update(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> BinnedCurve:
        """Add a 1-D batch (one sort of the batch, then a binary search per threshold).

        Bad values raise eagerly; under jit the batch is counted in ``num_bad_batches``.
        """
        _one_batch(scores, "scores")
        counts = counts_lib.confusion_counts(scores, labels, self.grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: BinnedCurve) -> BinnedCurve:
        _check_same_config(self, other, "BinnedCurve")
        return _add(self, other)

    def compute(self) -> dict:
        dtype = validation.float_dtype()
        p = self.total_positive.astype(dtype)
        n = self.total_negative.astype(dtype)
        # points from the highest threshold down, closed by (0, 0) and (1, 1)
        zero = jnp.zeros(1, dtype)
        tp = jnp.concatenate([zero, self.tp[::-1].astype(dtype), p[None]])
        fp = jnp.concatenate([zero, self.fp[::-1].astype(dtype), n[None]])
        tpr, fpr = tp / p, fp / n
        width, rise = jnp.diff(fpr), jnp.diff(tpr)
        auc = (width * (tpr[1:] + tpr[:-1]) / 2).sum()
        precision = safe_divide(tp[1:], tp[1:] + fp[1:], 1.0)
        ap = (rise * precision).sum()
        one_class = (p == 0) | (n == 0)
        nan = jnp.nan
        result = _poisoned(
            {
                "roc_auc": jnp.where(one_class, nan, auc),
                "roc_auc_max_error": jnp.where(one_class, nan, (width * rise).sum() / 2),
                "average_precision": jnp.where(one_class, nan, ap),
                "fpr": fpr,
                "tpr": tpr,
                "precision": jnp.concatenate([jnp.ones(1, dtype), precision]),
            },
            self.num_bad_batches > 0,
        )
        result["thresholds"] = jnp.concatenate(
            [jnp.full(1, jnp.inf), self.grid[::-1], jnp.full(1, -jnp.inf)]
        )
        return result


@_state
class ExactCurve:
    """A fixed-capacity buffer of (score, label, weight) with exact AUC/AP/curves at `compute`.

    Memory is O(capacity). When more samples arrive than fit, the extra ones are dropped and
    ``overflowed`` is set; `compute` then returns NaN metrics and ``overflowed: True`` rather than
    a number computed on part of the data. A bad batch under jit is not stored but counted in
    ``num_bad_batches``, which also makes `compute` NaN. Merge appends the other buffer (also
    overflow-checked); across devices gather the buffers (``jax.lax.all_gather``) rather than
    psum them.
    """

    scores: Array
    labels: Array
    weights: Array
    count: Array
    overflowed: Array
    num_bad_batches: Array

    @classmethod
    def empty(cls, capacity: int) -> ExactCurve:
        capacity = validation.check_count(capacity, "capacity")
        dtype = validation.float_dtype()
        return cls(
            jnp.zeros(capacity, dtype),
            jnp.zeros(capacity, jnp.int32),
            jnp.zeros(capacity, dtype),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), bool),
            jnp.zeros((), jnp.int32),
        )

    @property
    def capacity(self) -> int:
        return self.scores.shape[-1]

    def _append(self, scores: Array, labels: Array, weights: Array, size: Array) -> ExactCurve:
        position = jnp.arange(self.capacity, dtype=jnp.int32)
        source = position - self.count
        incoming = (source >= 0) & (source < size)
        take = jnp.clip(source, 0, scores.shape[0] - 1)
        return dataclasses.replace(
            self,
            scores=jnp.where(incoming, scores[take].astype(self.scores.dtype), self.scores),
            labels=jnp.where(incoming, labels[take], self.labels),
            weights=jnp.where(incoming, weights[take].astype(self.weights.dtype), self.weights),
            count=jnp.minimum(self.count + size, self.capacity),
            overflowed=self.overflowed | (self.count + size > self.capacity),
        )

    def update(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> ExactCurve:
        """Append a 1-D batch; bad values raise eagerly, under jit the batch is counted in
        ``num_bad_batches`` and not stored."""
        _one_batch(scores, "scores")
        scores, labels, weights, invalid = validation.binary_inputs(scores, labels, sample_weight)
        weights = jnp.ones(scores.shape, self.weights.dtype) if weights is None else weights
        size = jnp.where(invalid, 0, scores.shape[0]).astype(jnp.int32)
        appended = self._append(
            jnp.asarray(scores), jnp.asarray(labels), jnp.asarray(weights), size
        )
        return dataclasses.replace(
            appended, num_bad_batches=self.num_bad_batches + jnp.asarray(invalid, jnp.int32)
        )

    def merge(self, other: ExactCurve) -> ExactCurve:
        merged = self._append(other.scores, other.labels, other.weights, other.count)
        return dataclasses.replace(
            merged,
            overflowed=merged.overflowed | other.overflowed,
            num_bad_batches=self.num_bad_batches + other.num_bad_batches,
        )

    def compute(self) -> dict:
        filled = jnp.arange(self.capacity) < self.count
        weights = jnp.where(filled, self.weights, 0.0)
        auc = ranking.roc_auc(self.scores, self.labels, sample_weight=weights)
        ap = ranking.average_precision(self.scores, self.labels, sample_weight=weights)
        result = _poisoned(
            {"roc_auc": auc, "average_precision": ap},
            self.overflowed | (self.num_bad_batches > 0),
        )
        return {**result, "count": self.count, "overflowed": self.overflowed}


@_state
class ConfusionState:
    """Accumulated confusion counts: binary at fixed thresholds, or a C x C multiclass matrix.

    Binary: ``ConfusionState.empty(thresholds=[0.5])``, updated with scores and 0/1 labels.
    Multiclass: ``ConfusionState.empty(num_classes=C)``, updated with predicted and true classes.
    Merge is addition. `compute` gives precision, recall, F1 and accuracy (per threshold, or
    per class with macro/micro averages); all NaN once a bad batch was seen under jit
    (``num_bad_batches``). Float weights are counted in float, never truncated.
    """

    counts: Any  # Counts [T] (binary) or a [C, C] matrix
    num_bad_batches: Array
    thresholds: tuple | None = _static(default=None)
    num_classes: int | None = _static(default=None)

    @classmethod
    def empty(
        cls, *, thresholds: Any = None, num_classes: int | None = None, dtype=jnp.int32
    ) -> ConfusionState:
        """`dtype` int32 counts exactly; float weights promote the counts to float on update."""
        if (thresholds is None) == (num_classes is None):
            raise ValueError("give either `thresholds` (binary) or `num_classes` (multiclass).")
        no_bad_batches = jnp.zeros((), jnp.int32)
        if num_classes is not None:
            num_classes = validation.check_count(num_classes, "num_classes", minimum=2)
            matrix = jnp.zeros((num_classes, num_classes), dtype)
            return cls(matrix, no_bad_batches, None, num_classes)
        grid = tuple(np.asarray(thresholds, np.float32).reshape(-1).tolist())
        zeros = jnp.zeros(len(grid), dtype)
        return cls(Counts(zeros, zeros, zeros, zeros), no_bad_batches, grid, None)

    def _add_counts(self, counts: Any) -> ConfusionState:
        bad = _is_bad(counts)
        added = jax.tree_util.tree_map(
            lambda total, new: _accumulate(total, new, bad), self.counts, counts
        )
        return dataclasses.replace(
            self, counts=added, num_bad_batches=self.num_bad_batches + bad.astype(jnp.int32)
        )

    def update(self, predictions: Any, labels: Any, *, sample_weight: Any = None) -> ConfusionState:
        """Add a 1-D batch; bad values raise eagerly, under jit the batch is counted in
        ``num_bad_batches``."""
        _one_batch(predictions, "predictions")
        if self.num_classes is not None:
            matrix = multiclass.confusion_matrix(
                predictions, labels, num_classes=self.num_classes, sample_weight=sample_weight
            )
            return self._add_counts(matrix)
        grid = jnp.asarray(self.thresholds, jnp.float32)
        counts = counts_lib.confusion_counts(predictions, labels, grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: ConfusionState) -> ConfusionState:
        _check_same_config(self, other, "ConfusionState")
        return _add(self, other)

    def compute(self) -> dict:
        bad = self.num_bad_batches > 0
        if self.num_classes is None:
            c = self.counts
            result = {
                "precision": counts_lib.precision(c),
                "recall": counts_lib.recall(c),
                "f1": counts_lib.f_beta(c),
                "accuracy": counts_lib.accuracy(c),
            }
            return _poisoned(result, bad)
        c = multiclass.one_vs_rest(self.counts)
        result = {"accuracy": counts_lib.accuracy(c, average="micro")}
        for name, rate in (
            ("precision", counts_lib.precision),
            ("recall", counts_lib.recall),
            ("f1", counts_lib.f_beta),
        ):
            result[name] = rate(c)
            result[f"{name}_macro"] = rate(c, average="macro")
            result[f"{name}_micro"] = rate(c, average="micro")
        return _poisoned(result, bad)


def _is_not_finite(values: Any) -> Any:
    return ~((values > -np.inf) & (values < np.inf))  # NaN fails both comparisons


@_state
class Mean:
    """Weighted running mean of per-sample values (a loss, an absolute error).

    Non-finite values and negative or non-finite weights raise eagerly; under jit they make the
    total NaN, which survives every later update and merge.
    """

    total: Array
    weight: Array

    @classmethod
    def empty(cls) -> Mean:
        dtype = validation.float_dtype()
        return cls(jnp.zeros((), dtype), jnp.zeros((), dtype))

    def update(self, values: Any, *, sample_weight: Any = None) -> Mean:
        dtype = self.total.dtype
        values = validation.as_real_array(values, "values", min_ndim=0, host=True)
        every_axis = max(np.ndim(values), 1)
        invalid = validation.check_values(
            values, "values", _is_not_finite, "be finite", sample_axes=every_axis
        )
        values = jnp.asarray(values, dtype)
        if sample_weight is None:
            weights = jnp.ones_like(values)
        else:
            weights = validation.as_real_array(
                sample_weight, "sample_weight", min_ndim=0, host=True
            )
            invalid = invalid | jnp.any(validation.check_weights(jnp.atleast_1d(weights)))
            weights = jnp.broadcast_to(jnp.asarray(weights, dtype), values.shape)
        total = jnp.where(invalid, jnp.nan, (values * weights).sum())
        return Mean(self.total + total, self.weight + weights.sum())

    def merge(self, other: Mean) -> Mean:
        return _add(self, other)

    def compute(self) -> dict:
        return {"mean": safe_divide(self.total, self.weight, math.nan)}


@_state
class Collection:
    """Several states updated from one batch of (scores, labels), sharing the work.

    All `BinnedCurve` and binary `ConfusionState` members are served by a single
    `confusion_counts` call on the union of their thresholds: one sort of the batch for all.
    Other members are updated individually. `compute` returns ``{name: member.compute()}``.
    """

    states: dict

    def update(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> Collection:
        _one_batch(scores, "scores")
        thresholded = {
            name: state
            for name, state in self.states.items()
            if isinstance(state, BinnedCurve)
            or (isinstance(state, ConfusionState) and state.num_classes is None)
        }
        updated = dict(self.states)
        if thresholded:
            grids = [np.asarray(state.thresholds, np.float32) for state in thresholded.values()]
            union = np.unique(np.concatenate(grids))
            counts = counts_lib.confusion_counts(
                scores, labels, jnp.asarray(union), sample_weight=sample_weight
            )
            for (name, state), grid in zip(thresholded.items(), grids):
                index = jnp.asarray(np.searchsorted(union, grid))
                updated[name] = state._add_counts(Counts(*(c[index] for c in counts)))
        for name, state in self.states.items():
            if name not in thresholded:
                if isinstance(state, Mean):
                    continue  # a Mean needs per-sample values: update it with `update_mean`
                updated[name] = state.update(scores, labels, sample_weight=sample_weight)
        return Collection(updated)

    def update_mean(self, name: str, values: Any, *, sample_weight: Any = None) -> Collection:
        states = dict(self.states)
        states[name] = states[name].update(values, sample_weight=sample_weight)
        return Collection(states)

    def merge(self, other: Collection) -> Collection:
        if set(self.states) != set(other.states):
            raise ValueError("cannot merge collections with different members.")
        return Collection(
            {name: state.merge(other.states[name]) for name, state in self.states.items()}
        )

    def compute(self) -> dict:
        return {name: state.compute() for name, state in self.states.items()}
