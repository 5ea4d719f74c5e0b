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
NaN for every metric (and curve) of a state that ever saw one (-1 for a count such as a
support), never a number computed without the bad batch. A `Mean` is poisoned by a NaN total
instead.

Multilabel: `BinnedCurve`, `ExactCurve` and binary `ConfusionState` take ``num_labels=L`` in
``empty``: one state per label, stacked on a leading ``[L]`` axis of every leaf (the library's
multilabel layout, scores and labels ``[L, n]``, as in `jaxmetrics.roc_auc`). They update from
``[L, n]`` batches (weights ``[n]`` or ``[L, n]``), merge and psum as before, and `compute` gives
every metric per label, with a leading ``[L]`` axis; its mean over that axis is the "macro"
average. Bad batches are then refused and counted label by label: a bad score or label in row l
poisons label l only, a bad weight shared by the labels (``[n]``) every label.

Precision: a score and a threshold are compared in one precision, the scores' own, the same
eagerly and under `jax.jit`. A state keeps its thresholds as given, in float64 (static); each
batch is compared with them in float64 when x64 is on or when float64 (or integer) scores are
given eagerly, exactly as `confusion_counts` compares those, even with x64 off; and in float32
otherwise, the type of float32 scores and of every score under jit without x64 (a threshold of
0.7 flags a float32 score of 0.7, as ``scores >= 0.7`` does in NumPy and JAX). The counts are
``confusion_counts(scores, labels, thresholds)`` with the thresholds in that precision, so
eager and jitted updates agree on every input that jit leaves as it is; float64 scores jitted
with x64 off are float32 there (what JAX made them), and differ only where float32 merges a
score with a threshold that float64 tells apart.

In a training loop: a state's leaf types never change on update, whatever the weights or masks
(bool, int or float), so a jitted eval step compiles once and ``jax.lax.scan`` runs over
batches; `compute` is one compiled program (per state type and configuration). Counts are int32
(int64 with x64 on, as `confusion_counts` counts integer weights then): exact, and they take
bool and integer weights and float weights that are whole numbers (a float 0/1 padding mask),
counted exactly; a fractional weight raises `ValueError` eagerly and, under jit, makes the
batch bad (refused and counted). So do counts that an update or a merge would take past the
type's largest value (`OverflowError` eagerly): they would wrap around. Create a state with
``dtype=jnp.float32`` to count fractional weights (any weight is then added in float32). With
x64 on, results are float64.

This module holds `ConfusionState`, `Mean` and `Collection`; the curves are in
`curves` (binned) and `exact` (exact), the machinery every state shares in
`base`.
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics import counts as counts_lib
from jaxmetrics._src.metrics import multiclass
from jaxmetrics._src.metrics import rates as rates_lib
from jaxmetrics._src.metrics.counts import Counts
from jaxmetrics._src.streaming.base import (
    accumulate,
    add_counts,
    add_states,
    as_thresholds,
    check_batch,
    check_num_labels,
    check_same_config,
    count_weights,
    default_count_dtype,
    is_bad,
    label_shape,
    merge_counts,
    state_class,
    static_field,
    thresholds_as_compared,
    wraps_around,
)
from jaxmetrics._src.streaming.curves import BinnedCurve


@state_class
class ConfusionState:
    r"""Accumulated confusion counts: binary at fixed thresholds, or a C x C multiclass matrix.

    A streaming state; merge is addition, so ``jax.lax.psum`` merges it across devices. Binary,
    ``ConfusionState.empty(thresholds=[0.5])``, updated with scores and 0/1 labels: `compute`
    gives precision, recall, F1 and accuracy at each threshold, matching
    `sklearn.metrics.precision_score`, `recall_score`, `f1_score` and `accuracy_score` of
    ``score >= threshold`` (NaN where scikit-learn warns and gives 0). Multiclass,
    ``ConfusionState.empty(num_classes=C)``, updated with predicted and true class indices:
    `compute` gives the fields of `jaxmetrics.classification_report` under the same names.

    .. math:: \mathrm{precision} = \frac{TP}{TP + FP}, \quad
              \mathrm{recall} = \frac{TP}{TP + FN}, \quad
              F_1 = \frac{2\,TP}{2\,TP + FP + FN}

    Multilabel (binary only): ``ConfusionState.empty(thresholds=..., num_labels=L)`` holds the
    counts of each label, ``[L, T]``, updated with scores and labels ``[L, n]`` (the library's
    multilabel layout) and a `sample_weight` ``[n]`` or ``[L, n]``; they equal
    ``jaxmetrics.confusion_counts(scores, labels, thresholds)``. `compute` gives ``[L, T]``
    rates; ``result["f1"].mean(0)`` is the macro F1 at each threshold.

    Undefined rates are NaN. Integer counts (the default) take whole weights
    only, exactly; fractional weights need float counts (``dtype=jnp.float32``), never
    truncated. The counts equal ``confusion_counts(scores, labels, thresholds)``, with the
    thresholds (kept as given, in float64) in the scores' precision.
    Bad batches (``num_bad_batches``) and precision: docs/conventions.md.

    Attributes:
      counts: binary, `Counts` of shape ``[T]`` (``[L, T]`` multilabel); multiclass, the
        ``[C, C]`` confusion matrix (rows true classes).
      num_bad_batches: int32, the batches refused under `jax.jit`, a scalar (``[L]``).
      thresholds: binary, the thresholds as given, a tuple of (float64) floats (static); else
        None.
      num_classes: multiclass, the number of classes C (static); else None.
      num_labels: the number of labels L of a multilabel binary state (static); else None.

    Examples:
      >>> from jaxmetrics import streaming
      >>> binary = streaming.ConfusionState.empty(thresholds=[0.5])
      >>> binary = binary.update([0.92, 0.75, 0.33, 0.61], [1, 0, 1, 1])
      >>> round(float(binary.compute()["recall"][0]), 4)  # 2 of the 3 positives
      0.6667
      >>> multi = streaming.ConfusionState.empty(num_classes=3)
      >>> multi = multi.update([0, 1, 1], [0, 1, 2]).update([2, 2, 0], [2, 2, 1])
      >>> result = multi.compute()
      >>> round(float(result["macro"]["f1"]), 4), round(float(result["accuracy"]), 4)
      (0.6556, 0.6667)
    """

    counts: Counts | Array  # Counts [T] (binary), [L, T] (multilabel) or a [C, C] matrix
    num_bad_batches: Array
    thresholds: tuple | None = static_field(default=None)
    num_classes: int | None = static_field(default=None)
    num_labels: int | None = static_field(default=None)

    @classmethod
    def empty(
        cls,
        *,
        thresholds: ArrayLike | None = None,
        num_classes: int | None = None,
        dtype: DTypeLike | None = None,
        num_labels: int | None = None,
    ) -> ConfusionState:
        """An empty state: give either `thresholds` (binary) or `num_classes` (multiclass).

        Args:
          thresholds: binary: the thresholds, a scalar or 1-D, not NaN (kept as given, in
            float64, static).
          num_classes: multiclass: the number of classes C, an int >= 2 (static).
          dtype: of the counts, kept through every update; None (the default) is int32, or
            int64 with x64 on: exact counts of bool, integer or whole float weights (a 0/1
            mask). A float type (``jnp.float32``) counts fractional weights too.
          num_labels: binary only: the number of labels L of a multilabel state (an int >= 1,
            static), counts ``[L, T]``. None (the default): one label.

        Returns:
          An empty `ConfusionState`.
        """
        if (thresholds is None) == (num_classes is None):
            raise ValueError("give either `thresholds` (binary) or `num_classes` (multiclass).")
        dtype = default_count_dtype() if dtype is None else dtype
        if num_classes is not None:
            if num_labels is not None:
                raise ValueError(
                    "`num_labels` is for binary states (`thresholds`), not multiclass ones; got "
                    f"num_labels={num_labels!r} with num_classes={num_classes!r}."
                )
            num_classes = check_count(num_classes, "num_classes", minimum=2)
            matrix = coercion.full((num_classes, num_classes), 0, dtype)
            return cls(matrix, coercion.full((), 0, jnp.int32), None, num_classes)
        num_labels = check_num_labels(num_labels)
        grid = tuple(as_thresholds(thresholds).tolist())
        zeros = coercion.full((*label_shape(num_labels), len(grid)), 0, dtype)
        no_bad_batches = coercion.full(label_shape(num_labels), 0, jnp.int32)
        return cls(Counts(zeros, zeros, zeros, zeros), no_bad_batches, grid, None, num_labels)

    def _add_counts(self, counts: Counts | Array) -> ConfusionState:
        """Add a batch's counts (``[L, T]`` of a multilabel state: label by label)."""
        name, add = "ConfusionState.update", ConfusionState._add_label_counts
        return add_counts(self, counts, self.counts, name, add)

    def _add_label_counts(self, counts: Counts | Array, *, checked: bool) -> ConfusionState:
        bad = is_bad(counts)
        if not checked:  # (traced: counts that would wrap around are refused as a bad batch)
            bad = bad | wraps_around(self.counts, counts)
        added = jax.tree_util.tree_map(
            lambda total, new: accumulate(total, new, bad), self.counts, counts
        )
        return dataclasses.replace(
            self, counts=added, num_bad_batches=self.num_bad_batches + bad.astype(jnp.int32)
        )

    def update(
        self,
        predictions: ArrayLike,
        labels: ArrayLike,
        *,
        sample_weight: ArrayLike | None = None,
    ) -> ConfusionState:
        """Add one batch.

        Args:
          predictions: ``[n]`` scores (binary) or predicted class indices (multiclass); ``[L, n]``
            scores for a multilabel state.
          labels: ``[n]`` labels in {0, 1} (binary) or true class indices (multiclass); ``[L, n]``
            for a multilabel state.
          sample_weight: optional ``[n]`` non-negative weights; a multilabel state also takes
            ``[L, n]``.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` instead of added (label by label when multilabel).
        """
        check_batch(
            self.num_labels, predictions=predictions, labels=labels, sample_weight=sample_weight
        )
        count_dtype = jax.tree_util.tree_leaves(self.counts)[0].dtype
        sample_weight = count_weights(sample_weight, count_dtype)
        if self.num_classes is not None:
            matrix = multiclass.confusion_matrix(
                predictions, labels, num_classes=self.num_classes, sample_weight=sample_weight
            )
            return self._add_counts(matrix)
        grid = thresholds_as_compared(self.thresholds, predictions)
        counts = counts_lib.confusion_counts(predictions, labels, grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: ConfusionState) -> ConfusionState:
        """The state of both states' samples (addition); the configurations must be equal.
        Counts that would wrap around raise `OverflowError` eagerly and, under `jax.jit`, count
        as a bad batch (`jax.lax.psum` adds without this check)."""
        check_same_config(self, other, "ConfusionState")
        return merge_counts(self, other, lambda state: state.counts, "ConfusionState.merge")

    def compute(self) -> dict[str, Any]:
        """The rates of the samples seen.

        Returns:
          Binary: a dict of ``[T]`` arrays "precision", "recall", "f1" and "accuracy" (``[L, T]``
          for a multilabel state). Multiclass: the fields of `jaxmetrics.ClassificationReport`
          as a dict: "precision", "recall", "f1" and "support" (``[C]``), "accuracy" (a scalar),
          and "macro", "weighted" and "micro", each a dict of "precision", "recall" and "f1".
        """
        bad = self.num_bad_batches > 0  # [] or, multilabel, [L]: it marks its labels' rows
        if self.num_classes is None:
            c = self.counts
            result = {
                "precision": rates_lib.precision(c),
                "recall": rates_lib.recall(c),
                "f1": rates_lib.f_beta(c),
                "accuracy": rates_lib.accuracy(c),
            }
            return batching.nan_where(bad, result)
        matrix = self.counts  # float counts in the results' type (float64 under x64)
        if jnp.issubdtype(matrix.dtype, jnp.floating):
            matrix = matrix.astype(float_dtype())
        report = multiclass.report_of_matrix(matrix)
        return batching.nan_where(bad, dict(report._asdict()))


@state_class
class Mean:
    r"""Weighted running mean of per-sample values (a loss, an absolute error).

    A streaming state; merge is addition, so ``jax.lax.psum`` merges it across devices. `compute`
    equals ``numpy.average(values, weights=sample_weight)`` over every value seen.

    .. math:: \bar v = \frac{\sum_i w_i v_i}{\sum_i w_i}

    With no weight seen the mean is NaN. Non-finite values and negative or
    non-finite weights raise `ValueError` eagerly; under `jax.jit` they make the total NaN
    (no ``num_bad_batches`` here), which survives every later update and merge.

    Attributes:
      total: the weighted sum of the values (float32, float64 under x64).
      weight: the sum of the weights.

    Examples:
      >>> from jaxmetrics import streaming
      >>> mean = streaming.Mean.empty().update([0.5, 1.5]).update([4.0], sample_weight=[2.0])
      >>> float(mean.compute()["mean"])  # (0.5 + 1.5 + 2 * 4) / 4
      2.5
    """

    total: Array
    weight: Array

    @classmethod
    def empty(cls) -> Mean:
        """A mean of nothing yet."""
        dtype = float_dtype()
        return cls(coercion.full((), 0, dtype), coercion.full((), 0, dtype))

    def update(self, values: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Mean:
        """Add values of any shape, with optional weights broadcasting against them."""
        values = coercion.as_real_array(values, "values", min_ndim=0, host=True)
        every_axis = max(np.ndim(values), 1)
        invalid = checks.check(values, "values", checks.FINITE_VALUE, sample_axes=every_axis)
        weights = None
        if sample_weight is not None:
            weights = coercion.as_real_array(sample_weight, "sample_weight", min_ndim=0, host=True)
            xp = checks.array_namespace(weights)  # numpy for known weights: no JAX op
            invalid = invalid | checks.check_weights(xp.atleast_1d(weights)).any()
        return _mean_update(self, values, weights, invalid)

    def merge(self, other: Mean) -> Mean:
        """The mean of both states' values (addition)."""
        return add_states(self, other)

    def compute(self) -> dict[str, Array]:
        """A dict with "mean", the weighted mean (NaN with no weight seen)."""
        return {"mean": safe_divide(self.total, self.weight, math.nan)}


# One compiled program per eager update (each operation was a program of its own); inlined in a
# caller's trace.
@kernels.sample_jit
def _mean_update(state: Mean, values: Array, weights: Array | None, invalid: Array) -> Mean:
    dtype = state.total.dtype
    values = jnp.asarray(values, dtype)
    if weights is None:
        weights = jnp.ones_like(values)
    else:
        weights = jnp.broadcast_to(jnp.asarray(weights, dtype), values.shape)
    total = jnp.where(invalid, jnp.nan, (values * weights).sum())
    return Mean(state.total + total, state.weight + weights.sum())


@state_class
class Collection:
    """Several states updated from one batch of (scores, labels), sharing the work.

    All `BinnedCurve` and binary `ConfusionState` members are served by a single
    `jaxmetrics.confusion_counts` call on the union of their thresholds: one sort of the batch
    for all, in the members' precision (`jaxmetrics.streaming`, "Precision"), so a member's
    counts equal those of its own `update`. Other members are updated individually, except a
    `Mean`, which needs per-sample values of its own (`update_mean`). Merge merges member by
    member. Bad input follows the members' rules. Multilabel members (``num_labels=L``) are
    updated together from ``[L, n]`` batches; all members but the `Mean` ones must then share
    `num_labels`.

    Attributes:
      states: a dict of member states by name.

    Examples:
      >>> from jaxmetrics import streaming
      >>> states = streaming.Collection({
      ...     "curve": streaming.BinnedCurve.empty(11),
      ...     "at_half": streaming.ConfusionState.empty(thresholds=[0.5]),
      ... })
      >>> states = states.update([0.92, 0.75, 0.33, 0.61], [1, 0, 1, 1])
      >>> result = states.compute()
      >>> round(float(result["curve"]["roc_auc"]), 4)  # the negative outscores two positives
      0.3333
      >>> round(float(result["at_half"]["precision"][0]), 4)
      0.6667
    """

    states: dict

    def update(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> Collection:
        """Add one batch (``[L, n]`` for multilabel members) to every member but the `Mean` ones."""
        label_counts = {
            getattr(state, "num_labels", None)
            for state in self.states.values()
            if not isinstance(state, Mean)
        }
        if len(label_counts) > 1:
            found = sorted(label_counts, key=str)
            raise ValueError(f"the members of a `Collection` must share `num_labels`; got {found}.")
        check_batch(next(iter(label_counts), None), scores=scores, labels=labels)
        thresholded = {
            name: state
            for name, state in self.states.items()
            if isinstance(state, BinnedCurve)
            or (isinstance(state, ConfusionState) and state.num_classes is None)
        }
        updated = dict(self.states)
        if thresholded:
            # integer counts take whole weights only (`count_weights`): if any member counts in
            # integers, all are given the weights as integers (exact for the float ones too)
            count_dtypes = [
                jax.tree_util.tree_leaves(state)[0].dtype for state in thresholded.values()
            ]
            integer = [d for d in count_dtypes if not jnp.issubdtype(d, jnp.floating)]
            sample_weight = count_weights(sample_weight, integer[0] if integer else count_dtypes[0])
            grids = [np.asarray(state.thresholds, np.float64) for state in thresholded.values()]
            union = np.unique(np.concatenate(grids))
            grid = thresholds_as_compared(tuple(union.tolist()), scores)
            counts = counts_lib.confusion_counts(scores, labels, grid, sample_weight=sample_weight)
            # each member's columns: in numpy when known (four eager gathers per member were
            # most of an update's time), else gathered in the caller's trace
            xp = checks.array_namespace(*counts)
            counts = Counts(*(xp.asarray(c) for c in counts))
            for (name, state), own in zip(thresholded.items(), grids):
                index = np.searchsorted(union, own)
                updated[name] = state._add_counts(Counts(*(c[..., index] for c in counts)))
        for name, state in self.states.items():
            if name not in thresholded:
                if isinstance(state, Mean):
                    continue  # a Mean needs per-sample values: update it with `update_mean`
                updated[name] = state.update(scores, labels, sample_weight=sample_weight)
        return Collection(updated)

    def update_mean(
        self, name: str, values: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> Collection:
        """Add values to the `Mean` member `name`."""
        states = dict(self.states)
        states[name] = states[name].update(values, sample_weight=sample_weight)
        return Collection(states)

    def merge(self, other: Collection) -> Collection:
        """Merge member by member; the two collections must have the same members."""
        if set(self.states) != set(other.states):
            raise ValueError("cannot merge collections with different members.")
        return Collection(
            {name: state.merge(other.states[name]) for name, state in self.states.items()}
        )

    def compute(self) -> dict[str, dict]:
        """``{name: member.compute()}``."""
        return {name: state.compute() for name, state in self.states.items()}
