"""Multiclass ranking of ``[*batch, n, C]`` class scores: top-k accuracy, ROC AUC and AP.

All three read only the order of each sample's class scores (or of each class's scores), so the rows
need not be probabilities; the class count is the last axis of the scores.
"""

from __future__ import annotations

import functools

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count, check_option
from jaxmetrics._src.core.typing import (
    Array,
    ArrayLike,
    Average,
    MultiClass,
    RocAucAverage,
    options_of,
)
from jaxmetrics._src.metrics import ranking
from jaxmetrics._src.metrics.multiclass import class_indices

_MULTI_CLASS = options_of(MultiClass)
_ROC_AUC_AVERAGES = options_of(RocAucAverage)
_AP_AVERAGES = options_of(Average)


def _probability_matrix(probs: ArrayLike, labels: ArrayLike) -> tuple[Array, Array, Array, int]:
    """Class scores ``[*batch, n, C]``, labels int32 ``[*batch, n]``, `invalid` ``[*batch]``
    and C."""
    probs = coercion.as_real_array(probs, "probs", host=True)
    if not isinstance(probs, np.ndarray):  # traced: JAX's float type; concrete: kept exact
        probs = probs.astype(float_dtype())
    if probs.ndim < 2:
        raise ValueError(f"`probs` must have shape [*batch, n, C]; got {tuple(probs.shape)}.")
    if probs.shape[-2] == 0:  # before anything transposes it to [C, n]
        raise ValueError(
            f"`probs` is empty: at least one sample (a row of [*batch, n, C]) is needed; got "
            f"shape {tuple(probs.shape)}."
        )
    num_classes = probs.shape[-1]
    labels, invalid_labels = class_indices(labels, "labels", num_classes)
    if labels.shape[-1] != probs.shape[-2]:
        raise ValueError(
            f"`labels` must have one class per row of `probs`: expected {probs.shape[-2]} samples, "
            f"got shape {tuple(labels.shape)}."
        )
    invalid = checks.check(probs, "probs", checks.FINITE_VALUE, sample_axes=2)
    try:
        batch_shape = tuple(np.broadcast_shapes(probs.shape[:-2], labels.shape[:-1]))
    except ValueError:
        raise ValueError(
            f"batch axes must broadcast; got `probs` {tuple(probs.shape)} and `labels` "
            f"{tuple(labels.shape)}."
        ) from None
    xp = checks.array_namespace(invalid, invalid_labels)  # numpy when clean: no JAX op
    invalid = xp.broadcast_to(invalid | invalid_labels, batch_shape)
    # concrete scores stay numpy (float64 ones exact: the ranking metrics rank them on the host)
    return probs, labels, invalid, num_classes


def _xp(probs: ArrayLike):
    return np if isinstance(probs, np.ndarray) else jnp


def _sample_weights(sample_weight: ArrayLike, labels: Array) -> tuple[Array, Array]:
    """Float weights ``[*batch, n]`` sharing the sample axis of `labels`, and the per-batch
    `invalid` flag of `checks.check_weights` (raised on eagerly, flagged under jit)."""
    weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
    coercion.sample_axis_shapes([("labels", labels), ("sample_weight", weights)])
    invalid = checks.check_weights(weights)
    return coercion.cast(weights, float_dtype()), invalid


def top_k_accuracy(
    probs: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Share of samples whose true class is among their k highest-scored classes.

    Matches ``sklearn.metrics.top_k_accuracy_score(labels, probs, k=k, labels=range(C))``,
    except where the true class ties with others at the k-th place: scikit-learn's sort then
    decides by class index, while here the sample counts the chance that a random tie-break
    keeps its true class in the top k (the rule of `precision_at_k`), so the result never depends
    on the order of the classes. With ``k >= C`` every sample counts 1.

    .. math:: \mathrm{top}_k = \frac{1}{W} \sum_i w_i
              \min\Big(1, \max\Big(0, \frac{k - g_i}{t_i}\Big)\Big)

    with g_i the number of classes scored strictly above sample i's true class, t_i the number
    scored equal to it (itself included), and W the total weight.

    A zero total weight gives NaN. `k` must be a Python or numpy int >= 1 (a bool is refused
    with `TypeError`). Bad input: docs/conventions.md.

    Args:
      probs: ``[*batch, n, C]`` class scores (probabilities or logits: only their order counts).
      labels: ``[*batch, n]`` true class indices in [0, C).
      k: the number of top places, a positive int (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6],
      ...          [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.6, 0.2]]
      >>> labels = [0, 1, 2, 2, 1, 0]
      >>> round(float(jm.top_k_accuracy(probs, labels, k=1)), 4)
      0.6667
      >>> # the last sample's true class ties with another for 2nd place: it counts 1/2
      >>> round(float(jm.top_k_accuracy(probs, labels, k=2)), 4)
      0.9167
    """
    k = check_count(k, "k")
    probs, labels, invalid, _ = _probability_matrix(probs, labels)
    # numpy compares float64 scores exactly, when the labels are concrete too
    xp = checks.array_namespace(probs, labels)
    true_score = xp.take_along_axis(xp.asarray(probs), xp.asarray(labels)[..., None], axis=-1)
    higher = (xp.asarray(probs) > true_score).sum(-1, dtype=xp.int32)
    tied = (xp.asarray(probs) == true_score).sum(-1, dtype=xp.int32)  # the true class included
    weights = None
    if sample_weight is not None:
        weights, invalid_weights = _sample_weights(sample_weight, labels)
        invalid = invalid | invalid_weights
    return _top_k_value(higher, tied, weights, invalid, k)


# One compiled program per eager call (each operation was a program of its own); inlined in a
# caller's trace. `k` is traced: one program for every k.
@kernels.sample_jit
def _top_k_value(higher: Array, tied: Array, weights: Array | None, invalid: Array, k) -> Array:
    hit = jnp.clip((k - higher) / tied, 0.0, 1.0).astype(float_dtype())
    if weights is None:
        value = hit.mean(-1)
    else:
        value = safe_divide((hit * weights).sum(-1), weights.sum(-1))
    return batching.nan_where(invalid, value)


def multiclass_roc_auc(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    average: RocAucAverage = "macro",
    multi_class: MultiClass = "ovr",
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Multiclass ROC AUC, one-vs-rest or one-vs-one (Hand & Till's M).

    Matches ``sklearn.metrics.roc_auc_score(labels, probs, multi_class=multi_class,
    average=average, sample_weight=sample_weight)``, except that the rows of `probs` need not
    sum to 1 (scikit-learn refuses them; only the order of each class's scores counts) and that
    a class without samples makes its AUCs NaN (scikit-learn raises). "ovr": class c's scores
    against membership of class c; "macro" averages the C AUCs, "weighted" weighs them by
    (weighted) prevalence, "micro" pools every (sample, class) pair into one binary ranking,
    None returns them. "ovo": for each pair of classes, the mean of the
    two one-against-the-other AUCs over the samples of the pair; "macro" averages the pairs,
    "weighted" weighs a pair by its number of samples.

    .. math:: \mathrm{OvR}_c = \mathrm{AUC}\big(p_{\cdot c},\ [y = c]\big), \qquad
              M = \frac{2}{C (C - 1)} \sum_{a < b} \frac{A(a \mid b) + A(b \mid a)}{2}

    with A(a | b) the AUC of class a's scores separating the samples of a from those of b.

    An unknown `average` or `multi_class`, None or "micro" with "ovo", and `sample_weight` with
    "ovo" (which scikit-learn does not define either) raise `ValueError`. Bad input, ties (1/2,
    as in `roc_auc`), a NaN average and precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n, C]`` class scores.
      labels: ``[*batch, n]`` true class indices in [0, C).
      average: "macro", "weighted", "micro" ("ovr" only), or None for the per-class AUCs
        ("ovr" only).
      multi_class: "ovr" (one-vs-rest) or "ovo" (one-vs-one).
      sample_weight: optional ``[*batch, n]`` non-negative weights ("ovr" only).

    Returns:
      A float array of shape ``[*batch]``; ``[*batch, C]`` with ``average=None``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6],
      ...          [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.6, 0.2]]
      >>> labels = [0, 1, 2, 2, 1, 0]
      >>> round(float(jm.multiclass_roc_auc(probs, labels)), 4)
      0.8125
      >>> round(float(jm.multiclass_roc_auc(probs, labels, multi_class="ovo")), 4)
      0.8125

    References:
      Hand & Till (2001), "A simple generalisation of the area under the ROC curve for multiple
      class classification problems", Machine Learning 45:171-186.
    """
    check_option(multi_class, "multi_class", _MULTI_CLASS)
    check_option(average, "average", _ROC_AUC_AVERAGES)
    if multi_class == "ovo" and average not in ("macro", "weighted"):
        raise ValueError(
            f"`average` must be 'macro' or 'weighted' with multi_class='ovo'; got {average!r}."
        )
    if multi_class == "ovo" and sample_weight is not None:
        raise ValueError(
            "`sample_weight` must be None with multi_class='ovo' (scikit-learn does not define "
            "weighted one-vs-one AUC); got weights."
        )
    probs, labels, invalid, num_classes = _probability_matrix(probs, labels)
    by_class = _xp(probs).swapaxes(probs, -1, -2)  # [*batch, C, n]: samples on the last axis
    members = _members(labels, num_classes)  # [*batch, C, n]
    if sample_weight is None:
        weights = None
        prevalence = members.sum(-1).astype(float_dtype())
    else:
        weights, invalid_weights = _sample_weights(sample_weight, labels)
        invalid = invalid | invalid_weights
        weights = weights[..., None, :]  # one weight per sample, the same for every class
        prevalence = (members * weights).sum(-1)
    if average == "micro":  # every (sample, class) pair pooled into one binary ranking
        auc = ranking.roc_auc(by_class, members, sample_weight=weights, average="micro")
        return batching.nan_where(invalid, auc)
    if multi_class == "ovr":
        aucs = (ranking.roc_auc(by_class, members, sample_weight=weights),)
        weight = prevalence
    else:
        first, second = np.triu_indices(num_classes, k=1)
        in_pair = members[..., first, :] + members[..., second, :]  # sample weights 0/1
        forward = ranking.roc_auc(
            by_class[..., first, :], members[..., first, :], sample_weight=in_pair
        )
        backward = ranking.roc_auc(
            by_class[..., second, :], members[..., second, :], sample_weight=in_pair
        )
        aucs = (forward, backward)  # their mean is the pair's
        weight = prevalence[..., first] + prevalence[..., second]
    return _averaged(aucs, weight, invalid, average=average)


def _members(labels: Array, num_classes: int) -> Array:
    """``[*batch, C, n]`` int32 one-hot membership of each class; numpy for known labels."""
    xp = checks.array_namespace(labels)
    return (labels[..., None, :] == xp.arange(num_classes)[:, None]).astype(xp.int32)


# The per-class AUCs (or the mean of each pair's two), marked and averaged in one compiled
# program per eager call.
@functools.partial(kernels.sample_jit, static_argnames=("average",))
def _averaged(parts: tuple[Array, ...], weight: Array, invalid: Array, *, average) -> Array:
    aucs = batching.nan_where(invalid, sum(parts[1:], parts[0]) / len(parts))
    if average is None:
        return aucs
    if average == "macro":
        return aucs.mean(-1)
    return (aucs * weight).sum(-1) / weight.sum(-1)


def multiclass_average_precision(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    average: Average = "macro",
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Multiclass average precision, one-vs-rest: class c's scores against membership of c.

    Matches ``sklearn.metrics.average_precision_score(label_binarize(labels, classes=range(C)),
    probs, average=average, sample_weight=sample_weight)``, except that a class without samples
    has an undefined AP (NaN here, 0 with a warning in scikit-learn) and makes "macro" NaN.
    "macro" averages the C APs, "weighted" weighs them by the (weighted) number of samples of
    each class, "micro" pools all (sample, class) pairs into one binary ranking, None returns
    the C APs.

    .. math:: \mathrm{AP}_c = \mathrm{AP}\big(p_{\cdot c},\ [y = c]\big)

    The ties and steps of `average_precision`; rows of `probs` need not sum to 1 (only the
    order of each class's scores counts). Bad input and precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n, C]`` class scores.
      labels: ``[*batch, n]`` true class indices in [0, C).
      average: "macro" (default), "weighted", "micro", or None for the per-class APs.
      sample_weight: optional ``[*batch, n]`` non-negative weights, one per sample.

    Returns:
      A float array of shape ``[*batch]``; ``[*batch, C]`` with ``average=None``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6],
      ...          [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.6, 0.2]]
      >>> labels = [0, 1, 2, 2, 1, 0]
      >>> jm.multiclass_average_precision(probs, labels, average=None).round(4)
      Array([0.7   , 0.5833, 1.    ], dtype=float32)
    """
    check_option(average, "average", _AP_AVERAGES)
    probs, labels, invalid, num_classes = _probability_matrix(probs, labels)
    by_class = _xp(probs).swapaxes(probs, -1, -2)  # [*batch, C, n]
    members = _members(labels, num_classes)
    weights = None
    if sample_weight is not None:
        weights, invalid_weights = _sample_weights(sample_weight, labels)
        invalid = invalid | invalid_weights
        weights = weights[..., None, :]  # one weight per sample, the same for every class
    ap = ranking.average_precision(by_class, members, sample_weight=weights, average=average)
    return batching.nan_where(invalid, ap)
