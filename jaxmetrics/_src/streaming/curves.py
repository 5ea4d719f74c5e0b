"""Streaming ranking curve at a threshold grid: `BinnedCurve` (counts, merged by addition; the
exact buffer is `exact.ExactCurve`).

The state machinery and the rules for bad batches and multilabel states are `base`'s;
see `streaming` for the overview.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import jax.numpy as jnp
import numpy as np
from jax.typing import DTypeLike

from jaxmetrics._src.core import batching, coercion
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics import counts as counts_lib
from jaxmetrics._src.metrics.counts import Counts
from jaxmetrics._src.streaming.base import (
    accumulate,
    add_counts,
    as_thresholds,
    check_batch,
    check_num_labels,
    check_same_config,
    count_weights,
    default_count_dtype,
    is_bad,
    label_shape,
    merge_counts,
    per_label,
    state_class,
    static_field,
    thresholds_as_compared,
    wraps_around,
)


def _batch_class_totals(counts: Counts) -> tuple[Array, Array]:
    """A batch's positives and negatives (``[L]`` of multilabel counts ``[L, T]``)."""
    return counts.tp[..., 0] + counts.fn[..., 0], counts.fp[..., 0] + counts.tn[..., 0]


@state_class
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

    Multilabel: ``BinnedCurve.empty(..., num_labels=L)`` is one curve per label on a shared
    grid, every leaf with a leading ``[L]`` axis. It is updated with scores and labels
    ``[L, n]`` (the library's multilabel layout, `jaxmetrics.roc_auc`'s with ``average=None``)
    and a `sample_weight` ``[n]`` or ``[L, n]``, merges and psums the same way, and `compute`
    gives per-label values: ``result["roc_auc"]`` is ``[L]`` and equals
    ``jaxmetrics.roc_auc(scores, labels)`` on a grid holding every score;
    ``result["roc_auc"].mean()`` is ``average="macro"`` (NaN when a label is undefined).

    Tied scores share a bin. With one class only, the AUC, its bound and the AP
    are NaN. Given thresholds are kept as given, in float64, an equally spaced grid is made of
    float32 values, and ``tp`` and ``fp`` equal ``confusion_counts(scores, labels, thresholds)``
    with the thresholds in the scores' precision. After a bad batch `compute` is NaN throughout,
    the thresholds excepted. Bad batches (``num_bad_batches``), thresholds and precision:
    docs/conventions.md.

    Attributes:
      tp: ``[T]`` (``[L, T]``) positives (summed weights) scoring ``>= thresholds[k]``.
      fp: ``[T]`` (``[L, T]``) negatives scoring ``>= thresholds[k]``.
      total_positive: the positives seen, a scalar (``[L]``).
      total_negative: the negatives seen, a scalar (``[L]``).
      num_bad_batches: int32, the batches refused under `jax.jit`, a scalar (``[L]``).
      thresholds: the increasing grid, a tuple of (float64) floats (static), shared by the
        labels.
      num_labels: the number of labels L of a multilabel state (static); None for one label.

    Examples:
      >>> from jaxmetrics import streaming
      >>> state = streaming.BinnedCurve.empty(11)  # thresholds 0.0, 0.1, ..., 1.0
      >>> state = state.update([0.92, 0.65, 0.33], [1, 0, 1])
      >>> state = state.update([0.61, 0.24, 0.18], [1, 0, 0])
      >>> result = state.compute()  # the exact AUC is 7/9: 0.61 < 0.65 share the bin [0.6, 0.7)
      >>> round(float(result["roc_auc"]), 4), round(float(result["roc_auc_max_error"]), 4)
      (0.8333, 0.0556)
      >>> multilabel = streaming.BinnedCurve.empty(11, num_labels=2)  # scores, labels [2, n]
      >>> multilabel = multilabel.update([[0.92, 0.65, 0.33], [0.1, 0.8, 0.4]],
      ...                                [[1, 0, 1], [0, 1, 1]])
      >>> [round(float(auc), 4) for auc in multilabel.compute()["roc_auc"]]
      [0.5, 1.0]
    """

    tp: Array
    fp: Array
    total_positive: Array
    total_negative: Array
    num_bad_batches: Array
    thresholds: tuple = static_field()
    num_labels: int | None = static_field(default=None)

    @classmethod
    def empty(
        cls,
        num_thresholds: int = 200,
        *,
        thresholds: ArrayLike | None = None,
        low: float = 0.0,
        high: float = 1.0,
        dtype: DTypeLike | None = None,
        num_labels: int | None = None,
    ) -> BinnedCurve:
        """A state with no samples, on `num_thresholds` equally spaced in [low, high].

        Args:
          num_thresholds: the number of grid points, an int >= 2 (ignored with `thresholds`).
          thresholds: optional grid of finite values (sorted and de-duplicated, kept as given
            in float64: a score equal to a threshold is counted at it).
          low: the lowest threshold of the equally spaced grid.
          high: the highest threshold of the equally spaced grid (the grid's points are
            float32 values, the values float32 scores take).
          dtype: of the counts; None (the default) is int32, or int64 with x64 on: exact
            counts (unweighted, or bool, integer or whole float weights such as a 0/1 mask),
            kept through every update. A float type (``jnp.float32``) counts fractional
            weights too.
          num_labels: the number of labels L of a multilabel state (an int >= 1, static): one
            curve per label, leaves with a leading ``[L]`` axis. None (the default): one label.

        Returns:
          An empty `BinnedCurve`.
        """
        if thresholds is None:
            if not isinstance(num_thresholds, int) or num_thresholds < 2:
                raise ValueError(f"`num_thresholds` must be an int >= 2; got {num_thresholds!r}.")
            grid = np.linspace(low, high, num_thresholds, dtype=np.float32)
        else:
            grid = np.unique(as_thresholds(thresholds, finite=True))
        dtype = default_count_dtype() if dtype is None else dtype
        num_labels = check_num_labels(num_labels)
        per_label_shape = label_shape(num_labels)
        zeros = coercion.full((*per_label_shape, grid.size), 0, dtype)
        return cls(
            zeros,
            zeros,
            coercion.full(per_label_shape, 0, dtype),
            coercion.full(per_label_shape, 0, dtype),
            coercion.full(per_label_shape, 0, jnp.int32),
            tuple(grid.astype(np.float64).tolist()),
            num_labels,
        )

    @classmethod
    def from_quantiles(
        cls, scores: ArrayLike, num_thresholds: int = 200, **options: Any
    ) -> BinnedCurve:
        """An empty state on a grid at the quantiles of a first batch of scores.

        Call it eagerly, not under `jax.jit` (the grid is static). `options` go to `empty`. The
        quantiles of multilabel scores ``[L, n]`` are those of all labels' scores pooled, taken
        in float64.
        """
        scores = np.asarray(scores, np.float64).reshape(-1)
        levels = np.linspace(0, 1, num_thresholds)
        return cls.empty(thresholds=np.quantile(scores, levels), **options)

    @property
    def grid(self) -> Array:
        """The thresholds as an array ``[T]`` of the results' float type (float32 unless x64)."""
        return jnp.asarray(self.thresholds, float_dtype())

    def _add_counts(self, counts: Counts) -> BinnedCurve:
        """Add a batch's counts at the grid, ``[T]`` (``[L, T]``: label by label)."""
        name, add = "BinnedCurve.update", BinnedCurve._add_label_counts
        return add_counts(self, counts, self._class_totals(), name, add, _batch_class_totals)

    def _class_totals(self) -> tuple[Array, Array]:
        """The positives and negatives counted: every other count is at most one of them."""
        return self.total_positive, self.total_negative

    def _add_label_counts(self, counts: Counts, *, checked: bool) -> BinnedCurve:
        positives, negatives = _batch_class_totals(counts)
        bad = is_bad(counts)
        if not checked:  # (traced: counts that would wrap around are refused as a bad batch)
            bad = bad | wraps_around(self._class_totals(), (positives, negatives))
        return dataclasses.replace(
            self,
            tp=accumulate(self.tp, counts.tp, bad),
            fp=accumulate(self.fp, counts.fp, bad),
            total_positive=accumulate(self.total_positive, positives, bad),
            total_negative=accumulate(self.total_negative, negatives, bad),
            num_bad_batches=self.num_bad_batches + bad.astype(jnp.int32),
        )

    def update(
        self, scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
    ) -> BinnedCurve:
        """Add one batch: one sort of the batch (of each label), then a binary search per threshold.

        Args:
          scores: ``[n]`` real scores; ``[L, n]`` for a multilabel state.
          labels: ``[n]`` labels in {0, 1} or bool; ``[L, n]`` for a multilabel state.
          sample_weight: optional ``[n]`` non-negative weights; a multilabel state also takes
            ``[L, n]``.

        Returns:
          The updated state. Bad values raise `ValueError` eagerly; under `jax.jit` the batch is
          counted in ``num_bad_batches`` instead of added (label by label when multilabel).
        """
        check_batch(self.num_labels, scores=scores, labels=labels, sample_weight=sample_weight)
        grid = thresholds_as_compared(self.thresholds, scores)
        sample_weight = count_weights(sample_weight, self.tp.dtype)
        counts = counts_lib.confusion_counts(scores, labels, grid, sample_weight=sample_weight)
        return self._add_counts(counts)

    def merge(self, other: BinnedCurve) -> BinnedCurve:
        """The state of both states' samples (addition); grids and `num_labels` must be equal.
        Counts that would wrap around raise `OverflowError` eagerly and, under `jax.jit`, count
        as a bad batch (`jax.lax.psum` adds without this check)."""
        check_same_config(self, other, "BinnedCurve")
        return merge_counts(self, other, BinnedCurve._class_totals, "BinnedCurve.merge")

    def compute(self) -> dict[str, Array]:
        """The metrics and curves of the samples seen.

        Returns:
          A dict: "roc_auc", "roc_auc_max_error" and "average_precision" (scalars); "fpr",
          "tpr" and "thresholds" (``[T + 2]``, from the highest threshold down: ``+inf``, the
          grid in the results' float type, ``-inf``); "precision" (``[T + 2]``, 1 at
          ``+inf``). A multilabel state gives every value but "thresholds" (shared by the
          labels) per label: ``[L]`` and ``[L, T + 2]``.
        """
        result = per_label(BinnedCurve._label_metrics, self)
        result["thresholds"] = jnp.concatenate(
            [jnp.full(1, jnp.inf), self.grid[::-1], jnp.full(1, -jnp.inf)]
        )
        return result

    def _label_metrics(self) -> dict[str, Array]:
        dtype = float_dtype()
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
        return batching.nan_where(
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
