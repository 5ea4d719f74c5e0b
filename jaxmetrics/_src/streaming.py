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
from jax.typing import DTypeLike

from jaxmetrics._src import counts as counts_lib
from jaxmetrics._src import multiclass, ranking, validation
from jaxmetrics._src.counts import Counts, safe_divide
from jaxmetrics._src.typing import Array, ArrayLike


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


def _is_bad(counts: Counts | Array) -> Array:
    """True when counts carry the mark of a bad batch under jit: -1 (int) or NaN (float)."""
    leaves = jax.tree_util.tree_leaves(counts)
    return jnp.any(jnp.stack([jnp.any((c < 0) | jnp.isnan(c)) for c in leaves]))


def _accumulate(total: Array, new: Array, skip: Array) -> Array:
    """`total + new` in their common type, adding nothing when `skip` (a bad batch)."""
    dtype = jnp.promote_types(total.dtype, new.dtype)
    return total.astype(dtype) + jnp.where(skip, jnp.zeros((), dtype), new.astype(dtype))


def _one_batch(values: ArrayLike, name: str) -> None:
    if np.ndim(values) != 1:
        raise ValueError(f"`{name}` must be one batch [n]; got shape {np.shape(values)}.")


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
    r"""ROC AUC, average precision and both curves from counts at a fixed threshold grid.

    A streaming state: O(T) memory for T thresholds, and merge is addition, so
    ``jax.lax.psum`` merges it across devices. ``tp[k]`` and ``fp[k]`` count the positives and
    the negatives scoring ``>= thresholds[k]``. On a grid holding every distinct score of the
    data, `compute` equals `sklearn.metrics.roc_auc_score` and
    `sklearn.metrics.average_precision_score`; on a coarser grid it is their binned
    approximation, with a bound on the AUC's error.

    .. math:: \mathrm{AUC}_{\mathrm{binned}} = \sum_k \Delta F_k \frac{T_k + T_{k+1}}{2},
              \qquad \mathrm{AP}_{\mathrm{binned}} = \sum_k \Delta T_k\, P_{k+1}, \qquad
              |\mathrm{AUC} - \mathrm{AUC}_{\mathrm{binned}}|
              \le \frac12 \sum_k \Delta F_k\, \Delta T_k

    over the grid's points from the highest threshold down, closed by (0, 0) and (1, 1), with F
    the false and T the true positive rate and P the precision. The bound holds because the
    order of the samples inside a bin is unknown, so each bin's stretch of the exact ROC curve
    can bend anywhere within its rectangle. A grid at the quantiles of the scores
    (`from_quantiles`) keeps the bins, and so the bound, small wherever the data are.

    Conventions: predicted positive iff ``score >= threshold``; tied scores share a bin. With
    one class only, the AUC, its bound and the AP are NaN. Bad values in `update` raise
    `ValueError` eagerly; under `jax.jit` the batch is not added but counted in
    ``num_bad_batches``, and `compute` is then NaN throughout (the thresholds excepted).

    Attributes:
      tp: ``[T]`` positives (summed weights) scoring ``>= thresholds[k]``.
      fp: ``[T]`` negatives scoring ``>= thresholds[k]``.
      total_positive: the positives seen.
      total_negative: the negatives seen.
      num_bad_batches: int32, the batches refused under `jax.jit`.
      thresholds: the increasing grid, a tuple of floats (static).

    Examples:
      >>> from jaxmetrics import streaming
      >>> state = streaming.BinnedCurve.empty(11)  # thresholds 0.0, 0.1, ..., 1.0
      >>> state = state.update([0.92, 0.65, 0.33], [1, 0, 1])
      >>> state = state.update([0.61, 0.24, 0.18], [1, 0, 0])
      >>> result = state.compute()  # the exact AUC is 7/9: 0.61 < 0.65 share the bin [0.6, 0.7)
      >>> round(float(result["roc_auc"]), 4), round(float(result["roc_auc_max_error"]), 4)
      (0.8333, 0.0556)
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
        thresholds: ArrayLike | None = None,
        low: float = 0.0,
        high: float = 1.0,
        dtype: DTypeLike = jnp.int32,
    ) -> BinnedCurve:
        """A state with no samples, on `num_thresholds` equally spaced in [low, high].

        Args:
          num_thresholds: the number of grid points, an int >= 2 (ignored with `thresholds`).
          thresholds: optional grid of finite values (sorted and de-duplicated, in float32).
          low: the lowest threshold of the equally spaced grid.
          high: the highest threshold of the equally spaced grid.
          dtype: of the counts: int32 counts exactly (unweighted or integer weights); float
            weights promote the counts to float on update (start with float32 to keep one type
            through a `jax.lax.scan`).

        Returns:
          An empty `BinnedCurve`.
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
    def from_quantiles(
        cls, scores: ArrayLike, num_thresholds: int = 200, **options: Any
    ) -> BinnedCurve:
        """An empty state on a grid at the quantiles of a first batch of scores.

        Call it eagerly, not under `jax.jit` (the grid is static). `options` go to `empty`.
        """
        scores = np.asarray(scores, np.float32).reshape(-1)
        levels = np.linspace(0, 1, num_thresholds)
        return cls.empty(thresholds=np.quantile(scores, levels), **options)

    @property
    def grid(self) -> Array:
        """The thresholds as a float32 array ``[T]``."""
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

    def update(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> BinnedCurve:
        """Add one batch: one sort of the batch, then a binary search per threshold.

        Args:
          scores: ``[n]`` real scores.
          labels: ``[n]`` labels in {0, 1} or bool.
          sample_weight: optional ``[n]`` non-negative weights.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` instead of added.
        """
        _one_batch(scores, "scores")
        counts = counts_lib.confusion_counts(scores, labels, self.grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: BinnedCurve) -> BinnedCurve:
        """The state of both states' samples (addition); the grids must be equal."""
        _check_same_config(self, other, "BinnedCurve")
        return _add(self, other)

    def compute(self) -> dict[str, Array]:
        """The metrics and curves of the samples seen.

        Returns:
          A dict: "roc_auc", "roc_auc_max_error" and "average_precision" (scalars); "fpr",
          "tpr" and "thresholds" (``[T + 2]``, from the highest threshold down: ``+inf``, the
          grid, ``-inf``); "precision" (``[T + 2]``, 1 at ``+inf``).
        """
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
        result = validation.nan_where(
            self.num_bad_batches > 0,
            {
                "roc_auc": jnp.where(one_class, nan, auc),
                "roc_auc_max_error": jnp.where(one_class, nan, (width * rise).sum() / 2),
                "average_precision": jnp.where(one_class, nan, ap),
                "fpr": fpr,
                "tpr": tpr,
                "precision": jnp.concatenate([jnp.ones(1, dtype), precision]),
            },
        )
        result["thresholds"] = jnp.concatenate(
            [jnp.full(1, jnp.inf), self.grid[::-1], jnp.full(1, -jnp.inf)]
        )
        return result


@_state
class ExactCurve:
    """Exact ROC AUC and average precision from a fixed-capacity buffer of the samples.

    A streaming state holding (score, label, weight) triples, O(capacity) memory. `compute`
    equals `sklearn.metrics.roc_auc_score` and `sklearn.metrics.average_precision_score` on the
    samples stored, with `jaxmetrics.roc_auc`'s and `jaxmetrics.average_precision`'s conventions
    (NaN with one class). Merge appends the other buffer; across devices gather the buffers
    (``jax.lax.all_gather``) rather than psum them.

    Conventions: when more samples arrive than fit, the extra ones are dropped and
    ``overflowed`` is set; `compute` then gives NaN metrics rather than a number computed on
    part of the data. Bad values in `update` raise `ValueError` eagerly; under `jax.jit` the
    batch is not stored but counted in ``num_bad_batches``, which also makes `compute` NaN.

    Attributes:
      scores: ``[capacity]`` the stored scores (float32, float64 under x64).
      labels: ``[capacity]`` int32 labels.
      weights: ``[capacity]`` float weights.
      count: int32, the number of slots filled.
      overflowed: bool, True once a sample was dropped for want of room.
      num_bad_batches: int32, the batches refused under `jax.jit`.

    Examples:
      >>> from jaxmetrics import streaming
      >>> state = streaming.ExactCurve.empty(8)
      >>> state = state.update([0.92, 0.65, 0.33], [1, 0, 1])
      >>> state = state.update([0.61, 0.24, 0.18], [1, 0, 0])
      >>> result = state.compute()  # 7 of the 9 positive-negative pairs ranked right
      >>> round(float(result["roc_auc"]), 4), int(result["count"])
      (0.7778, 6)
    """

    scores: Array
    labels: Array
    weights: Array
    count: Array
    overflowed: Array
    num_bad_batches: Array

    @classmethod
    def empty(cls, capacity: int) -> ExactCurve:
        """An empty buffer for `capacity` samples (a positive int, static)."""
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
        """The number of samples the buffer holds."""
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

    def update(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> ExactCurve:
        """Append one batch.

        Args:
          scores: ``[n]`` real scores.
          labels: ``[n]`` labels in {0, 1} or bool.
          sample_weight: optional ``[n]`` non-negative weights.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` and not stored.
        """
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
        """The buffer of both states' samples (overflow-checked, like `update`)."""
        merged = self._append(other.scores, other.labels, other.weights, other.count)
        return dataclasses.replace(
            merged,
            overflowed=merged.overflowed | other.overflowed,
            num_bad_batches=self.num_bad_batches + other.num_bad_batches,
        )

    def compute(self) -> dict[str, Array]:
        """The exact metrics of the samples stored.

        Returns:
          A dict: "roc_auc" and "average_precision" (scalars, NaN after an overflow or a bad
          batch), "count" (int32) and "overflowed" (bool).
        """
        filled = jnp.arange(self.capacity) < self.count
        weights = jnp.where(filled, self.weights, 0.0)
        auc = ranking.roc_auc(self.scores, self.labels, sample_weight=weights)
        ap = ranking.average_precision(self.scores, self.labels, sample_weight=weights)
        result = validation.nan_where(
            self.overflowed | (self.num_bad_batches > 0),
            {"roc_auc": auc, "average_precision": ap},
        )
        return {**result, "count": self.count, "overflowed": self.overflowed}


@_state
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

    Conventions: undefined rates are NaN. Float weights are counted in float, never truncated.
    Bad values in `update` raise `ValueError` eagerly; under `jax.jit` the batch is not added
    but counted in ``num_bad_batches``, and `compute` is then NaN throughout (the support -1).

    Attributes:
      counts: binary, `Counts` of shape ``[T]``; multiclass, the ``[C, C]`` confusion matrix
        (rows true classes).
      num_bad_batches: int32, the batches refused under `jax.jit`.
      thresholds: binary, the thresholds as a tuple of floats (static); else None.
      num_classes: multiclass, the number of classes C (static); else None.

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

    counts: Counts | Array  # Counts [T] (binary) or a [C, C] matrix
    num_bad_batches: Array
    thresholds: tuple | None = _static(default=None)
    num_classes: int | None = _static(default=None)

    @classmethod
    def empty(
        cls,
        *,
        thresholds: ArrayLike | None = None,
        num_classes: int | None = None,
        dtype: DTypeLike = jnp.int32,
    ) -> ConfusionState:
        """An empty state: give either `thresholds` (binary) or `num_classes` (multiclass).

        Args:
          thresholds: binary: the thresholds, a scalar or 1-D (float32, static).
          num_classes: multiclass: the number of classes C, an int >= 2 (static).
          dtype: of the counts: int32 counts exactly; float weights promote the counts to float
            on update (start with float32 to keep one type through a `jax.lax.scan`).

        Returns:
          An empty `ConfusionState`.
        """
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

    def _add_counts(self, counts: Counts | Array) -> ConfusionState:
        bad = _is_bad(counts)
        added = jax.tree_util.tree_map(
            lambda total, new: _accumulate(total, new, bad), self.counts, counts
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
          predictions: ``[n]`` scores (binary) or predicted class indices (multiclass).
          labels: ``[n]`` labels in {0, 1} (binary) or true class indices (multiclass).
          sample_weight: optional ``[n]`` non-negative weights.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` instead of added.
        """
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
        """The state of both states' samples (addition); the configurations must be equal."""
        _check_same_config(self, other, "ConfusionState")
        return _add(self, other)

    def compute(self) -> dict[str, Any]:
        """The rates of the samples seen.

        Returns:
          Binary: a dict of ``[T]`` arrays "precision", "recall", "f1" and "accuracy".
          Multiclass: the fields of `jaxmetrics.ClassificationReport` as a dict: "precision",
          "recall", "f1" and "support" (``[C]``), "accuracy" (a scalar), and "macro",
          "weighted" and "micro", each a dict of "precision", "recall" and "f1".
        """
        bad = self.num_bad_batches > 0
        if self.num_classes is None:
            c = self.counts
            result = {
                "precision": counts_lib.precision(c),
                "recall": counts_lib.recall(c),
                "f1": counts_lib.f_beta(c),
                "accuracy": counts_lib.accuracy(c),
            }
            return validation.nan_where(bad, result)
        report = multiclass.report_of_matrix(self.counts)
        return validation.nan_where(bad, dict(report._asdict()))


def _is_not_finite(values: ArrayLike) -> ArrayLike:
    return ~((values > -np.inf) & (values < np.inf))  # NaN fails both comparisons


@_state
class Mean:
    r"""Weighted running mean of per-sample values (a loss, an absolute error).

    A streaming state; merge is addition, so ``jax.lax.psum`` merges it across devices. `compute`
    equals ``numpy.average(values, weights=sample_weight)`` over every value seen.

    .. math:: \bar v = \frac{\sum_i w_i v_i}{\sum_i w_i}

    Conventions: with no weight seen the mean is NaN. Non-finite values and negative or
    non-finite weights raise `ValueError` eagerly; under `jax.jit` they make the total NaN,
    which survives every later update and merge.

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
        dtype = validation.float_dtype()
        return cls(jnp.zeros((), dtype), jnp.zeros((), dtype))

    def update(self, values: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Mean:
        """Add values of any shape, with optional weights broadcasting against them."""
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
        """The mean of both states' values (addition)."""
        return _add(self, other)

    def compute(self) -> dict[str, Array]:
        """A dict with "mean", the weighted mean (NaN with no weight seen)."""
        return {"mean": safe_divide(self.total, self.weight, math.nan)}


@_state
class Collection:
    """Several states updated from one batch of (scores, labels), sharing the work.

    All `BinnedCurve` and binary `ConfusionState` members are served by a single
    `jaxmetrics.confusion_counts` call on the union of their thresholds: one sort of the batch
    for all. Other members are updated individually, except a `Mean`, which needs per-sample
    values of its own (`update_mean`). Merge merges member by member. Bad input follows the
    members' rules.

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
        """Add one batch ``[n]`` to every member but the `Mean` ones."""
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
