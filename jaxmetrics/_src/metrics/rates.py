"""Rates read off `Counts`: precision, recall, specificity, FPR, accuracy and F-beta.

Every rate takes `Counts` (one sort of the scores serves every rate at every threshold), divides
with `safe_divide` and averages over a class axis with one rule (`_average`), so undefined values
and the -1 marker of a bad input under `jax.jit` behave the same everywhere.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any

import jax.numpy as jnp

from jaxmetrics._src.core import kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_option, check_real
from jaxmetrics._src.core.typing import Array, Average, options_of
from jaxmetrics._src.metrics.counts import Counts

_AVERAGES = options_of(Average)


_HOW_TO_COUNT = (
    "Rates take counts, so that one sort serves every rate: count predictions first, e.g. "
    "`jm.precision(jm.confusion_counts(scores, labels, 0.5))`."
)


def _takes_counts(rate: Callable[..., Array]) -> Callable[..., Array]:
    """Rates are ``rate(counts, *, options)``; a scikit-learn style ``rate(scores, labels)``
    call gets an error that says how to get counts, instead of Python's bare arity error."""

    @functools.wraps(rate)
    def checked(counts: Counts, *unexpected: Any, **options: Any) -> Array:
        if unexpected:
            raise TypeError(
                f"`{rate.__name__}` takes one `Counts` argument (options are keyword-only); "
                f"got {1 + len(unexpected)} positional arguments. {_HOW_TO_COUNT}"
            )
        return rate(counts, **options)

    return checked


def _as_counts(counts: Any) -> Counts:
    if not isinstance(counts, Counts):
        raise TypeError(
            f"`counts` must be a jaxmetrics.Counts (from confusion_counts or one_vs_rest); "
            f"got {type(counts).__name__}. {_HOW_TO_COUNT}"
        )
    return Counts(*(jnp.asarray(c) for c in counts))


def _pool(counts: Counts) -> Counts:
    """Micro-averaging: sum the counts over the class axis (last) before dividing."""
    return Counts(*(c.sum(axis=-1) for c in counts))


def _average(rate: Array, counts: Counts, average: Average, zero_division: float) -> Array:
    if average is None:
        return rate
    if average == "macro":
        return rate.mean(axis=-1)
    # "weighted": by support (true members of each class); a class without members weighs
    # nothing, and with no support at all the average is `zero_division` (as scikit-learn)
    support = (counts.tp + counts.fn).astype(rate.dtype)
    terms = jnp.where(support > 0, rate * support, jnp.zeros_like(rate))
    return safe_divide(terms.sum(axis=-1), support.sum(axis=-1), zero_division)


def _rate(rate_of, counts: Any, *, zero_division: float, average: Average, **params) -> Array:
    """Apply ``rate_of(counts, zero_division, **params)`` with the averaging rule and the -1
    sentinel. `rate_of` is a module-level function, so the whole computation is one compiled
    program per rate, averaging and shape (`zero_division` and `params` are traced)."""
    check_option(average, "average", _AVERAGES)
    zero_division = check_real(zero_division, "zero_division", traced=True)
    counts = _as_counts(counts)
    if average is not None and counts.tp.ndim == 0:
        raise ValueError(
            f"`average={average!r}` needs a class axis (the last axis of the counts); "
            "got scalar counts."
        )
    return _rate_program(counts, zero_division, params, rate_of=rate_of, average=average)


@functools.partial(kernels.sample_jit, static_argnames=("rate_of", "average"))
def _rate_program(counts: Counts, zero_division, params: dict, *, rate_of, average) -> Array:
    invalid = (counts.tp < 0) | (counts.fp < 0) | (counts.fn < 0) | (counts.tn < 0)
    if average == "micro":
        counts, invalid = _pool(counts), invalid.any(axis=-1)
        value = rate_of(counts, zero_division, **params)
    else:
        value = _average(rate_of(counts, zero_division, **params), counts, average, zero_division)
        invalid = invalid if average is None else invalid.any(axis=-1)
    return jnp.where(invalid, jnp.nan, value)


def _precision_of(c: Counts, z) -> Array:
    return safe_divide(c.tp, c.tp + c.fp, z)


def _recall_of(c: Counts, z) -> Array:
    return safe_divide(c.tp, c.tp + c.fn, z)


def _specificity_of(c: Counts, z) -> Array:
    return safe_divide(c.tn, c.tn + c.fp, z)


def _false_positive_rate_of(c: Counts, z) -> Array:
    return safe_divide(c.fp, c.fp + c.tn, z)


def _accuracy_of(c: Counts, z) -> Array:
    return safe_divide(c.tp + c.tn, c.tp + c.fp + c.fn + c.tn, z)


def _balanced_accuracy_of(c: Counts, z) -> Array:
    return (_recall_of(c, z) + _specificity_of(c, z)) / 2


def _f_beta_of(c: Counts, z, beta) -> Array:
    tp = c.tp.astype(float_dtype())
    scale = 1.0 + beta * beta
    return safe_divide(scale * tp, scale * tp + beta * beta * c.fn + c.fp, z)


@_takes_counts
def precision(counts: Counts, *, zero_division: float = math.nan, average: Average = None) -> Array:
    r"""Precision TP / (TP + FP): the share of predicted positives (alarms) that are real.

    Matches `sklearn.metrics.precision_score` on the predictions the counts were taken from,
    except that an empty denominator (nothing predicted positive) gives NaN by default, where
    scikit-learn warns and gives 0.0; ``zero_division=0.0`` or ``1.0`` reproduce its options. It
    takes `Counts`, not predictions, so that one sort serves every rate at every threshold:
    ``jm.precision(jm.confusion_counts(scores, labels, 0.5))``.

    .. math:: \mathrm{precision} = \frac{TP}{TP + FP}

    Bad input (counts of -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TP + FP = 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.precision(screening)), 4)  # 90 / 981: most alarms are false
      0.0917

    References:
      van Rijsbergen (1979), Information Retrieval, 2nd ed., Butterworths, ch. 7.
    """
    return _rate(_precision_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def recall(counts: Counts, *, zero_division: float = math.nan, average: Average = None) -> Array:
    r"""Recall (sensitivity, true positive rate) TP / (TP + FN): the share of positives found.

    Matches `sklearn.metrics.recall_score` on the predictions the counts were taken from, except
    that an empty denominator (no positive samples) gives NaN by default, where scikit-learn
    warns and gives 0.0; ``zero_division=0.0`` or ``1.0`` reproduce its options. On
    `one_vs_rest` counts, ``average="micro"`` is the multiclass accuracy of
    `sklearn.metrics.accuracy_score` and ``average="macro"`` the multiclass
    `sklearn.metrics.balanced_accuracy_score`.

    .. math:: \mathrm{recall} = \frac{TP}{TP + FN}

    With ``average="weighted"`` a class without support weighs nothing. Bad input (counts of
    -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TP + FN = 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.recall(screening)), 4)  # 90 of the 100 cases found
      0.9

    References:
      van Rijsbergen (1979), Information Retrieval, 2nd ed., Butterworths, ch. 7.
    """
    return _rate(_recall_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def specificity(
    counts: Counts, *, zero_division: float = math.nan, average: Average = None
) -> Array:
    r"""Specificity (true negative rate) TN / (TN + FP): the share of negatives left unflagged.

    scikit-learn has no function of its own for it: it matches
    ``sklearn.metrics.recall_score(..., pos_label=0)`` on the predictions the counts were taken
    from, except that an empty denominator (no negative samples) gives NaN by default, where
    scikit-learn warns and gives 0.0; ``zero_division=0.0`` or ``1.0`` reproduce its options.

    .. math:: \mathrm{specificity} = \frac{TN}{TN + FP} = 1 - \mathrm{FPR}

    Bad input (counts of -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TN + FP = 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.specificity(screening)), 4)  # 9009 / 9900
      0.91
    """
    return _rate(_specificity_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def false_positive_rate(
    counts: Counts, *, zero_division: float = math.nan, average: Average = None
) -> Array:
    r"""False positive rate FP / (FP + TN): the share of negatives flagged, 1 - specificity.

    scikit-learn has no function of its own for it: it is the x axis of
    `sklearn.metrics.roc_curve`, and ``1 - recall_score(..., pos_label=0)`` on the predictions
    the counts were taken from. An empty denominator (no negative samples) gives `zero_division`,
    NaN by default.

    .. math:: \mathrm{FPR} = \frac{FP}{FP + TN}

    Bad input (counts of -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where FP + TN = 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.false_positive_rate(screening)), 4)  # 891 / 9900
      0.09
    """
    return _rate(_false_positive_rate_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def accuracy(counts: Counts, *, zero_division: float = math.nan, average: Average = None) -> Array:
    r"""Accuracy (TP + TN) / (TP + FP + FN + TN): the share of samples classified right.

    Matches `sklearn.metrics.accuracy_score` on the binary predictions the counts were taken
    from; the denominator is empty only when the counts are all 0 (no samples or zero total
    weight), which gives `zero_division`, NaN by default. On `one_vs_rest` counts it is the
    per-class binary accuracy; the multiclass accuracy of `sklearn.metrics.accuracy_score`
    (trace over total) is ``recall(counts, average="micro")``.

    .. math:: \mathrm{accuracy} = \frac{TP + TN}{TP + FP + FN + TN}

    Bad input (counts of -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where all four counts are 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.accuracy(screening)), 4)  # below the 0.99 of never flagging anyone
      0.9099
    """
    return _rate(_accuracy_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def balanced_accuracy(
    counts: Counts, *, zero_division: float = math.nan, average: Average = None
) -> Array:
    r"""Balanced accuracy (recall + specificity) / 2: accuracy with both classes weighing alike.

    Matches `sklearn.metrics.balanced_accuracy_score` (binary, ``adjusted=False``) on the
    predictions the counts were taken from, except when a class is absent: the result is then
    NaN by default (with ``zero_division=z`` the missing rate counts as z), where scikit-learn
    warns and averages the recall of the classes present. The multiclass
    `sklearn.metrics.balanced_accuracy_score` is ``recall(counts, average="macro")`` on
    `one_vs_rest` counts.

    .. math:: \mathrm{balanced\ accuracy} = \frac12 \left(\frac{TP}{TP + FN}
              + \frac{TN}{TN + FP}\right)

    Bad input (counts of -1) and a macro average over a NaN class: docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value of a rate whose denominator is 0 (a class absent); NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.balanced_accuracy(screening)), 4)  # (0.9 + 0.91) / 2
      0.905

    References:
      Brodersen, Ong, Stephan & Buhmann (2010), "The balanced accuracy and its posterior
      distribution", Proc. ICPR, 3121-3124.
    """
    return _rate(_balanced_accuracy_of, counts, zero_division=zero_division, average=average)


@_takes_counts
def f_beta(
    counts: Counts,
    *,
    beta: float = 1.0,
    zero_division: float = math.nan,
    average: Average = None,
) -> Array:
    r"""F-beta score: the weighted harmonic mean of precision and recall, recall weighing beta.

    Matches `sklearn.metrics.fbeta_score` (`sklearn.metrics.f1_score` for ``beta=1``) on the
    predictions the counts were taken from, except that it is NaN by default where undefined
    (TP = FP = FN = 0: no positives and none predicted), where scikit-learn warns and gives 0.0;
    ``zero_division=0.0`` or ``1.0`` reproduce its options. It is computed in the counting form
    below, so it is defined whenever any of TP, FP, FN is nonzero (0 when TP = 0), even where
    precision or recall is not.

    .. math:: F_\beta = \frac{(1+\beta^2)\, TP}{(1+\beta^2)\, TP + \beta^2 FN + FP}
              = \frac{(1+\beta^2)\, P R}{\beta^2 P + R}

    ``beta=0`` gives precision and ``beta=inf`` recall (the limit); a negative or NaN `beta`
    raises `ValueError`. Bad input (counts of -1) and a macro average over a NaN class:
    docs/conventions.md.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      beta: weight of recall against precision, a float >= 0 (``inf`` allowed); 1 gives F1.
      zero_division: the value where TP = FP = FN = 0; NaN by default.
      average: None (per element), or over the class axis: "micro" (counts pooled before
        dividing), "macro" (the plain mean) or "weighted" (by the support TP + FN).

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.f_beta(screening)), 4)  # F1 = 180 / 1081
      0.1665
      >>> round(float(jm.f_beta(screening, beta=2.0)), 4)  # F2 = 450 / 1381
      0.3259

    References:
      van Rijsbergen (1979), Information Retrieval, 2nd ed., Butterworths, ch. 7.
      Chinchor (1992), "MUC-4 evaluation metrics", Proc. 4th Message Understanding Conference,
      22-29.
    """
    beta = check_real(beta, "beta")
    if not beta >= 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")
    if math.isinf(beta):  # the limit of F-beta as beta grows is recall
        return recall(counts, zero_division=zero_division, average=average)
    return _rate(_f_beta_of, counts, zero_division=zero_division, average=average, beta=float(beta))
