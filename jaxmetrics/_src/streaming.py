"""Streaming metric states for training loops: update batch by batch, merge across devices.

Each state is a pytree (a registered dataclass) with ``empty(...)``, ``update(...)``,
``merge(other)`` and ``compute() -> dict``, all usable under `jax.jit`. Configuration (threshold
grids, capacities, class counts) lives in static fields, so a state's array leaves are exactly
the things that add up: ``jax.lax.psum(state, axis)`` merges the states of all devices of a mesh
axis for every state whose merge is addition (`BinnedCurve`, `ConfusionState`, `Mean`).

Counting goes through the library's engine: a batch's counts at a threshold grid are one call to
`confusion_counts` (one sort), and a `Collection` gives all its thresholded states one such call.
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

    ``tp[k]``/``fp[k]`` count the positives/negatives scoring >= ``thresholds[k]``. `compute`
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

        `dtype` int32 counts exactly (unweighted or integer weights); use float32 for float
        weights.
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
        return cls(zeros, zeros, jnp.zeros((), dtype), jnp.zeros((), dtype), tuple(grid.tolist()))

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
        dtype = self.tp.dtype
        return dataclasses.replace(
            self,
            tp=self.tp + counts.tp.astype(dtype),
            fp=self.fp + counts.fp.astype(dtype),
            total_positive=self.total_positive + (counts.tp[0] + counts.fn[0]).astype(dtype),
            total_negative=self.total_negative + (counts.fp[0] + counts.tn[0]).astype(dtype),
        )

    def update(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> BinnedCurve:
        """Add a 1-D batch (one sort of the batch, then a binary search per threshold)."""
        counts = counts_lib.confusion_counts(scores, labels, self.grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: BinnedCurve) -> BinnedCurve:
        _check_same_config(self, other, "BinnedCurve")
        return _add(self, other)

    def compute(self) -> dict:
        p = self.total_positive.astype(jnp.float32)
        n = self.total_negative.astype(jnp.float32)
        # points from the highest threshold down, closed by (0, 0) and (1, 1)
        tp = jnp.concatenate([jnp.zeros(1), self.tp[::-1].astype(jnp.float32), p[None]])
        fp = jnp.concatenate([jnp.zeros(1), self.fp[::-1].astype(jnp.float32), n[None]])
        tpr, fpr = tp / p, fp / n
        width, rise = jnp.diff(fpr), jnp.diff(tpr)
        auc = (width * (tpr[1:] + tpr[:-1]) / 2).sum()
        precision = safe_divide(tp[1:], tp[1:] + fp[1:], 1.0)
        ap = (rise * precision).sum()
        one_class = (p == 0) | (n == 0)
        nan = jnp.nan
        return {
            "roc_auc": jnp.where(one_class, nan, auc),
            "roc_auc_max_error": jnp.where(one_class, nan, (width * rise).sum() / 2),
            "average_precision": jnp.where(one_class, nan, ap),
            "fpr": fpr,
            "tpr": tpr,
            "precision": jnp.concatenate([jnp.ones(1), precision]),
            "thresholds": jnp.concatenate(
                [jnp.full(1, jnp.inf), self.grid[::-1], jnp.full(1, -jnp.inf)]
            ),
        }


@_state
class ExactCurve:
    """A fixed-capacity buffer of (score, label, weight) with exact AUC/AP/curves at `compute`.

    Memory is O(capacity). When more samples arrive than fit, the extra ones are dropped and
    ``overflowed`` is set; `compute` then returns NaN metrics and ``overflowed: True`` rather than
    a number computed on part of the data. Merge appends the other buffer (also overflow-checked);
    across devices gather the buffers (``jax.lax.all_gather``) rather than psum them.
    """

    scores: Array
    labels: Array
    weights: Array
    count: Array
    overflowed: Array

    @classmethod
    def empty(cls, capacity: int) -> ExactCurve:
        if not isinstance(capacity, int) or capacity < 1:
            raise ValueError(f"`capacity` must be a positive int; got {capacity!r}.")
        return cls(
            jnp.zeros(capacity, jnp.float32),
            jnp.zeros(capacity, jnp.int32),
            jnp.zeros(capacity, jnp.float32),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), bool),
        )

    @property
    def capacity(self) -> int:
        return self.scores.shape[-1]

    def _append(self, scores: Array, labels: Array, weights: Array, size: Array) -> ExactCurve:
        position = jnp.arange(self.capacity, dtype=jnp.int32)
        source = position - self.count
        incoming = (source >= 0) & (source < size)
        take = jnp.clip(source, 0, scores.shape[0] - 1)
        return ExactCurve(
            jnp.where(incoming, scores[take], self.scores),
            jnp.where(incoming, labels[take], self.labels),
            jnp.where(incoming, weights[take], self.weights),
            jnp.minimum(self.count + size, self.capacity),
            self.overflowed | (self.count + size > self.capacity),
        )

    def update(self, scores: Any, labels: Any, *, sample_weight: Any = None) -> ExactCurve:
        scores, labels, weights, invalid = validation.binary_inputs(scores, labels, sample_weight)
        if scores.ndim != 1:
            raise ValueError(f"`scores` must be one batch [n]; got shape {scores.shape}.")
        weights = jnp.ones(scores.shape, jnp.float32) if weights is None else weights
        weights = jnp.where(invalid, jnp.nan, weights.astype(jnp.float32))
        size = jnp.asarray(scores.shape[0], jnp.int32)
        return self._append(scores.astype(jnp.float32), labels, weights, size)

    def merge(self, other: ExactCurve) -> ExactCurve:
        merged = self._append(other.scores, other.labels, other.weights, other.count)
        return dataclasses.replace(merged, overflowed=merged.overflowed | other.overflowed)

    def compute(self) -> dict:
        filled = jnp.arange(self.capacity) < self.count
        weights = jnp.where(filled, self.weights, 0.0)
        poisoned = self.overflowed | jnp.isnan(weights).any()
        weights = jnp.where(jnp.isnan(weights), 0.0, weights)
        auc = ranking.roc_auc(self.scores, self.labels, sample_weight=weights)
        ap = ranking.average_precision(self.scores, self.labels, sample_weight=weights)
        return {
            "roc_auc": jnp.where(poisoned, jnp.nan, auc),
            "average_precision": jnp.where(poisoned, jnp.nan, ap),
            "count": self.count,
            "overflowed": self.overflowed,
        }


@_state
class ConfusionState:
    """Accumulated confusion counts: binary at fixed thresholds, or a C x C multiclass matrix.

    Binary: ``ConfusionState.empty(thresholds=[0.5])``, updated with scores and 0/1 labels.
    Multiclass: ``ConfusionState.empty(num_classes=C)``, updated with predicted and true classes.
    Merge is addition. `compute` gives precision, recall, F1 and accuracy (per threshold, or
    per class with macro/micro averages).
    """

    counts: Any  # Counts [T] (binary) or a [C, C] matrix
    thresholds: tuple | None = _static(default=None)
    num_classes: int | None = _static(default=None)

    @classmethod
    def empty(cls, *, thresholds: Any = None, num_classes: int | None = None) -> ConfusionState:
        if (thresholds is None) == (num_classes is None):
            raise ValueError("give either `thresholds` (binary) or `num_classes` (multiclass).")
        if num_classes is not None:
            return cls(jnp.zeros((num_classes, num_classes), jnp.int32), None, num_classes)
        grid = tuple(np.asarray(thresholds, np.float32).reshape(-1).tolist())
        zeros = jnp.zeros(len(grid), jnp.int32)
        return cls(Counts(zeros, zeros, zeros, zeros), grid, None)

    def _add_counts(self, counts: Counts) -> ConfusionState:
        return dataclasses.replace(
            self, counts=Counts(*(a + b for a, b in zip(self.counts, counts)))
        )

    def update(self, predictions: Any, labels: Any, *, sample_weight: Any = None) -> ConfusionState:
        if self.num_classes is not None:
            matrix = multiclass.confusion_matrix(
                predictions, labels, num_classes=self.num_classes, sample_weight=sample_weight
            )
            return dataclasses.replace(self, counts=self.counts + matrix.astype(self.counts.dtype))
        grid = jnp.asarray(self.thresholds, jnp.float32)
        counts = counts_lib.confusion_counts(predictions, labels, grid, sample_weight=sample_weight)
        return self._add_counts(Counts(*(c.astype(jnp.int32) for c in counts)))

    def merge(self, other: ConfusionState) -> ConfusionState:
        _check_same_config(self, other, "ConfusionState")
        return _add(self, other)

    def compute(self) -> dict:
        if self.num_classes is None:
            c = self.counts
            return {
                "precision": counts_lib.precision(c),
                "recall": counts_lib.recall(c),
                "f1": counts_lib.f_beta(c),
                "accuracy": counts_lib.accuracy(c),
            }
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
        return result


@_state
class Mean:
    """Weighted running mean of per-sample values (a loss, an absolute error)."""

    total: Array
    weight: Array

    @classmethod
    def empty(cls) -> Mean:
        return cls(jnp.zeros((), jnp.float32), jnp.zeros((), jnp.float32))

    def update(self, values: Any, *, sample_weight: Any = None) -> Mean:
        values = jnp.asarray(values, jnp.float32)
        weights = (
            jnp.ones_like(values)
            if sample_weight is None
            else jnp.asarray(sample_weight, jnp.float32)
        )
        return Mean(self.total + (values * weights).sum(), self.weight + weights.sum())

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
