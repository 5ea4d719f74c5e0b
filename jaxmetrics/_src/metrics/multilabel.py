"""Averages of a binary ranking metric over the label axis of multilabel scores ``[..., L, n]``.

The last axis is the ranked one everywhere in the library, so multilabel scores are laid out
``[..., L, n]``: label l's scores of the n samples on the last axis (scikit-learn's ``[n, L]``
transposed). `roc_auc` and `average_precision` take ``average=`` and come here:

* None: the metric of every label, ``[..., L]`` (the batched result, a label being a batch row);
* "macro": their plain mean (NaN when any label is undefined, e.g. has no positive);
* "weighted": their mean weighted by each label's (weighted) number of positives; a label
  without positives has weight 0 and takes no part, as in scikit-learn;
* "micro": the metric of all (label, sample) pairs pooled into one binary problem;
* "samples": the metric of each sample's L scores against its L labels (ranking the labels of
  a sample), averaged over the samples with their weights.

Work stays on the engine: "micro" is one sort of L·n scores, "samples" one sort per sample.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, kernels, validation
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_option
from jaxmetrics._src.core.typing import Array, MultilabelAverage, options_of

_AVERAGES = options_of(MultilabelAverage)


def _as_array(value: Any, xp) -> Any:
    return None if value is None else xp.asarray(value)


def over_labels(
    metric: Callable[..., Array],
    scores: Any,
    labels: Any,
    sample_weight: Any,
    average: MultilabelAverage,
    **options: Any,
) -> Array:
    """`metric` (a batched binary metric) averaged over the label axis (-2) as `average` says."""
    check_option(average, "average", _AVERAGES)
    if average is None:
        return metric(scores, labels, sample_weight=sample_weight, **options)
    # numpy while every array is known (float64 scores stay exact for the ranking), else jnp
    xp = checks.array_namespace(scores, labels, sample_weight)
    scores, labels, weights = (_as_array(a, xp) for a in (scores, labels, sample_weight))
    if scores.ndim < 2:
        raise ValueError(
            f"`average={average!r}` averages over the label axis of `scores` [..., L, n]; got "
            f"shape {tuple(scores.shape)} (use average=None for one label)."
        )
    # one sample axis for all three, checked here: "micro" and "samples" reshape them
    coercion.sample_axis_shapes(
        [("scores", scores), ("labels", labels), ("sample_weight", weights)]
    )
    if average == "samples":
        return _samples_average(metric, scores, labels, weights, xp, **options)
    if average == "micro":
        shape = np.broadcast_shapes(
            scores.shape, labels.shape, () if weights is None else weights.shape
        )
        pooled = shape[:-2] + (shape[-2] * shape[-1],)

        def pool(a):
            return None if a is None else xp.broadcast_to(a, shape).reshape(pooled)

        return metric(pool(scores), pool(labels), sample_weight=pool(weights), **options)
    per_label = metric(scores, labels, sample_weight=weights, **options)
    if average == "macro":
        return per_label.mean(-1)
    # a label row without positives is left out, but not its bad values: under jit the row's
    # mark (a label 2, a NaN score) would go with it (eagerly the metric has raised already)
    invalid = checks.check_binary_labels(labels) | checks.check_finite(scores, "scores")
    if weights is not None:
        invalid = invalid | checks.check_weights(weights)
    return _by_support(per_label, labels, weights, invalid)


# "weighted": by each label's positive weight; labels with none are left out, not NaN. One
# compiled program per eager call (each operation was a program of its own).
@kernels.sample_jit
def _by_support(per_label: Array, labels: Array, weights: Array | None, invalid: Array) -> Array:
    positives = jnp.asarray(labels == 1, float_dtype())
    if weights is not None:
        positives = positives * jnp.asarray(weights, float_dtype())
    support = jnp.broadcast_to(positives.sum(-1), per_label.shape)
    # `!= 0`, not `> 0`: a NaN or negative support (bad weights under jit) must not drop a label
    counted = support != 0
    total = jnp.where(counted, support, 0).sum(-1)
    weighted = jnp.where(counted, per_label * support, 0).sum(-1)
    average = jnp.where(total == 0, jnp.nan, weighted / jnp.where(total == 0, 1, total))
    return batching.nan_where(jnp.broadcast_to(invalid, per_label.shape).any(-1), average)


def _samples_average(metric, scores, labels, weights, xp, **options) -> Array:
    """Each sample's metric over its labels, then the weighted mean over the samples."""
    if weights is not None and weights.ndim >= 2 and weights.shape[-2] != 1:
        raise ValueError(
            "`sample_weight` must be one weight per sample (shape [..., n] or [..., 1, n]) with "
            f"average='samples'; got shape {tuple(weights.shape)}."
        )
    # errors name the index in the caller's [..., L, n] layout, not the transposed one (traced,
    # the metric below marks its own rows)
    validation.binary_inputs(scores, labels, host=True, keep_split=True)
    shape = np.broadcast_shapes(scores.shape, labels.shape)
    by_sample = [xp.swapaxes(xp.broadcast_to(a, shape), -1, -2) for a in (scores, labels)]
    per_sample = metric(*by_sample, **options)  # [..., n]
    if weights is None:
        return per_sample.mean(-1)
    if weights.ndim >= 2:
        weights = weights[..., 0, :]
    invalid = checks.check_weights(weights)  # the metric above never saw them
    return _weighted_mean(per_sample, weights, invalid)


# One compiled program per eager call (each operation was a program of its own).
@kernels.sample_jit
def _weighted_mean(per_sample: Array, weights: Array, invalid: Array) -> Array:
    weights = jnp.broadcast_to(jnp.asarray(weights, float_dtype()), per_sample.shape)
    # a sample of zero weight takes no part, even where its metric is undefined
    total = weights.sum(-1)
    summed = jnp.where(weights > 0, per_sample * weights, 0).sum(-1)
    average = jnp.where(total > 0, summed / jnp.where(total > 0, total, 1), jnp.nan)
    return batching.nan_where(invalid, average)
