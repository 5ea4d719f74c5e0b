"""Confusion counts and every rate derived from them.

`Counts` is the one currency of the library: thresholded metrics, curves, threshold choice and the
soft surrogates all produce or consume it. Rates share one division helper (`safe_divide`) and one
averaging rule (`_average`), so undefined values behave the same everywhere.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmetrics._src import recipe, sorting, validation
from jaxmetrics._src.typing import Array, ArrayLike, Average, options_of

_AVERAGES = options_of(Average)


class Counts(NamedTuple):
    """Confusion counts of a binary rule: TP, FP, FN and TN (a pytree of arrays).

    What `confusion_counts` and `one_vs_rest` return and what every rate (`precision`, `recall`,
    `f_beta`, ...) takes, so that one sort of the scores serves every rate at every threshold.
    It unpacks as ``tp, fp, fn, tn``; note that ``sklearn.metrics.confusion_matrix(...).ravel()``
    gives ``tn, fp, fn, tp``.

    Conventions: the fields share one shape, e.g. ``[*batch, *t]`` for a threshold grid or
    ``[*batch, C]`` per class. They are int32 when computed without weights or with integer
    weights (exact past 2^24 samples without `jax_enable_x64`) and float sums of weights
    otherwise. Under `jax.jit`, a batch element whose input held a bad value has every count set
    to -1, an impossible count that every rate turns into NaN.

    Attributes:
      tp: true positives, positive samples with ``score >= threshold``.
      fp: false positives, negative samples with ``score >= threshold``.
      fn: false negatives, positive samples with ``score < threshold``.
      tn: true negatives, negative samples with ``score < threshold``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> tp, fp, fn, tn = jm.confusion_counts(scores, [1, 1, 0, 1, 0, 1, 0, 0], 0.5)
      >>> int(tp), int(fp), int(fn), int(tn)
      (3, 1, 1, 3)
    """

    tp: Array
    fp: Array
    fn: Array
    tn: Array


def safe_divide(
    numerator: ArrayLike, denominator: ArrayLike, zero_division: float = math.nan
) -> Array:
    r"""Elementwise ``numerator / denominator`` in float, `zero_division` where it divides by 0.

    The one division of the library: every rate goes through it, so undefined values behave the
    same everywhere. Its `zero_division` is scikit-learn's option of the same name (its rates
    take ``0.0``, ``1.0`` or ``np.nan``), with NaN as the default.

    .. math:: \mathrm{safe\_divide}(a, b) = \begin{cases} a / b & b \ne 0 \\
              \mathrm{zero\_division} & b = 0 \end{cases}

    Conventions: any numerator over a zero denominator gives `zero_division`, never ``inf``. The
    result is float32 (float64 when `jax_enable_x64` is on) and a true, correctly rounded
    division, not a product with a reciprocal, so it is exact wherever the ratio is
    representable (``41 / 41`` is exactly 1 and an ROC curve ends at exactly (1, 1)).

    Args:
      numerator: an array of any shape, broadcasting against `denominator`.
      denominator: an array of any shape, broadcasting against `numerator`.
      zero_division: the value where the denominator is 0; NaN by default.

    Returns:
      A float array of the broadcast shape of `numerator` and `denominator`.

    Examples:
      >>> import jax.numpy as jnp
      >>> import jaxmetrics as jm
      >>> [float(x) for x in jm.safe_divide(jnp.array([1, 2]), jnp.array([4, 0]))]
      [0.25, nan]
      >>> float(jm.safe_divide(2, 0, zero_division=0.0))
      0.0
    """
    dtype = validation.float_dtype()
    numerator = jnp.asarray(numerator, dtype)
    denominator = jnp.asarray(denominator, dtype)
    shape = jnp.broadcast_shapes(numerator.shape, denominator.shape)
    empty = denominator == 0
    # XLA rewrites a division by a broadcast scalar as a product with its reciprocal, which is
    # not exact (41/41 would be 0.99999994); the barrier keeps it a true, correctly rounded
    # division, so a rate is exact wherever the ratio is representable.
    safe = jax.lax.optimization_barrier(
        jnp.broadcast_to(jnp.where(empty, jnp.ones_like(denominator), denominator), shape)
    )
    return jnp.where(empty, jnp.asarray(zero_division, dtype), numerator / safe)


def confusion_counts(
    scores: ArrayLike,
    labels: ArrayLike,
    thresholds: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> Counts:
    r"""Confusion counts of the rule ``score >= threshold``, at one threshold or a whole grid.

    Matches ``sklearn.metrics.confusion_matrix(labels, scores >= t, sample_weight=w).ravel()``
    (which orders them tn, fp, fn, tp) at every threshold t of the grid, and
    `sklearn.metrics.confusion_matrix_at_thresholds` where the grid is the distinct scores. The
    scores are sorted once and every threshold is read off weighted prefix sums by a binary
    search: O(n log n + T log n) time and O(n + T) memory, never an ``n x T`` comparison array.

    .. math:: TP(t) = \sum_{i:\, y_i = 1,\, s_i \ge t} w_i, \qquad
              FP(t) = \sum_{i:\, y_i = 0,\, s_i \ge t} w_i

    and FN, TN likewise over ``s_i < t`` (with unit weights, counts of samples).

    Conventions: predicted positive iff ``score >= threshold``, so the samples tied at a
    threshold are all flagged; ``+inf`` flags nothing and ``-inf`` everything. Counts are int32
    without weights or with integer weights and float sums of weights otherwise (see `Counts`).
    NaN or infinite scores, labels outside {0, 1}, negative weights and NaN thresholds raise
    `ValueError` naming the argument and the index; under `jax.jit` every count of the affected
    batch element is -1 (a NaN threshold marks only its own counts). Precision: called eagerly,
    float64 and large-integer scores and thresholds are compared exactly (README, "Precision
    rules"); under `jax.jit` they are what JAX made them (float32 unless `jax_enable_x64` is on)
    and the thresholds are cast to the scores' dtype.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      thresholds: ``[*t]``, any shape (a scalar included); the same grid for every batch element.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      `Counts` whose fields have shape ``[*batch, *t]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # eight scored examples, 4 positive
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> [int(x) for x in jm.confusion_counts(scores, labels, 0.5)]  # tp, fp, fn, tn
      [3, 1, 1, 3]
      >>> counts = jm.confusion_counts(scores, labels, [0.25, 0.5, 0.75])  # one sort, any grid
      >>> counts.tp.tolist(), counts.fp.tolist()
      ([4, 3, 2], [2, 1, 0])
    """
    thresholds = validation.as_real_array(thresholds, "thresholds", min_ndim=0, host=True)
    validation.check_values(
        thresholds, "thresholds", _is_nan, "not be NaN (thresholds are scores)", sample_axes=0
    )
    scores, labels, weights, invalid, codec = validation.ranking_inputs(
        scores, labels, sample_weight, thresholds=thresholds
    )
    if codec.active:
        grid = codec.encode_thresholds(thresholds.reshape(-1))
    else:
        grid = thresholds.astype(scores.dtype).reshape(-1)
    counts = recipe.run_kernel(_counts_kernel, scores, labels, weights, grid)
    counts = Counts(*(c.reshape(c.shape[:-1] + thresholds.shape) for c in counts))
    return validation.nan_where(invalid, counts)


def _is_nan(values: Any) -> Any:
    return values != values


def _counts_kernel(scores: Array, labels: Array, weights: Array | None, grid: Array) -> Counts:
    ranked, tallies, _ = sorting.rank_and_tally(scores, labels, weights)
    positive, negative = tallies.positive, tallies.negative
    fn = sorting.at_thresholds(ranked, positive, grid, inclusive=False)
    tn = sorting.at_thresholds(ranked, negative, grid, inclusive=False)
    counts = Counts(positive[-1] - fn, negative[-1] - tn, fn, tn)
    # a NaN threshold (possible only under jit) marks its own counts, not the +inf end
    return Counts(*(jnp.where(jnp.isnan(grid), jnp.asarray(-1, c.dtype), c) for c in counts))


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
    validation.check_option(average, "average", _AVERAGES)
    counts = _as_counts(counts)
    if average is not None and counts.tp.ndim == 0:
        raise ValueError(
            f"`average={average!r}` needs a class axis (the last axis of the counts); "
            "got scalar counts."
        )
    return _rate_program(counts, zero_division, params, rate_of=rate_of, average=average)


@functools.partial(jax.jit, static_argnames=("rate_of", "average"))
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
    tp = c.tp.astype(validation.float_dtype())
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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis, e.g. of `one_vs_rest`
    counts: "micro" pools the counts before dividing, "macro" is the plain mean (NaN when any
    class is NaN, where scikit-learn's ``zero_division=np.nan`` leaves that class out),
    "weighted" weighs each class by its support TP + FN. Counts holding the -1 marker of a bad
    input under `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TP + FP = 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

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
    return _rate(
        _precision_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis: "micro" pools the counts
    before dividing, "macro" is the plain mean (NaN when any class is NaN), "weighted" weighs
    each class by its support TP + FN (a class without support weighs nothing). Counts holding
    the -1 marker of a bad input under `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TP + FN = 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

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
    return _rate(
        _recall_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis: "micro" pools the counts
    before dividing, "macro" is the plain mean (NaN when any class is NaN), "weighted" weighs
    each class by its support TP + FN. Counts holding the -1 marker of a bad input under
    `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where TN + FP = 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.specificity(screening)), 4)  # 9009 / 9900
      0.91
    """
    return _rate(
        _specificity_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis: "micro" pools the counts
    before dividing, "macro" is the plain mean (NaN when any class is NaN), "weighted" weighs
    each class by its support TP + FN. Counts holding the -1 marker of a bad input under
    `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where FP + TN = 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.false_positive_rate(screening)), 4)  # 891 / 9900
      0.09
    """
    return _rate(
        _false_positive_rate_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


@_takes_counts
def accuracy(counts: Counts, *, zero_division: float = math.nan, average: Average = None) -> Array:
    r"""Accuracy (TP + TN) / (TP + FP + FN + TN): the share of samples classified right.

    Matches `sklearn.metrics.accuracy_score` on the binary predictions the counts were taken
    from; the denominator is empty only when the counts are all 0 (no samples or zero total
    weight), which gives `zero_division`, NaN by default. On `one_vs_rest` counts it is the
    per-class binary accuracy; the multiclass accuracy of `sklearn.metrics.accuracy_score`
    (trace over total) is ``recall(counts, average="micro")``.

    .. math:: \mathrm{accuracy} = \frac{TP + TN}{TP + FP + FN + TN}

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis: "micro" pools the counts
    before dividing, "macro" is the plain mean (NaN when any class is NaN), "weighted" weighs
    each class by its support TP + FN. Counts holding the -1 marker of a bad input under
    `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value where all four counts are 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

    Returns:
      A float array of shape ``[*batch]``, the counts' shape less the class axis when `average`
      is given.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.accuracy(screening)), 4)  # below the 0.99 of never flagging anyone
      0.9099
    """
    return _rate(
        _accuracy_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). `average` works over the last (class) axis: "micro" pools the counts
    before dividing, "macro" is the plain mean (NaN when any class is NaN), "weighted" weighs
    each class by its support TP + FN. Counts holding the -1 marker of a bad input under
    `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      zero_division: the value of a rate whose denominator is 0 (a class absent); NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

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
    return _rate(
        _balanced_accuracy_of,
        counts,
        zero_division=zero_division,
        average=average,
    )


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

    Conventions: the counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). ``beta=0`` gives precision and ``beta=inf`` recall (the limit);
    a negative or NaN `beta` raises `ValueError`. `average` works over the last (class) axis:
    "micro" pools the counts before dividing, "macro" is the plain mean (NaN when any class is
    NaN), "weighted" weighs each class by its support TP + FN. Counts holding the -1 marker of
    a bad input under `jax.jit` give NaN.

    Args:
      counts: `Counts` whose fields share a shape ``[*batch]``; with `average`, the last axis is
        the class axis, ``[*batch, C]``.
      beta: weight of recall against precision, a float >= 0 (``inf`` allowed); 1 gives F1.
      zero_division: the value where TP = FP = FN = 0; NaN by default.
      average: None (per element), "micro", "macro" or "weighted" over the class axis.

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
    if not beta >= 0:
        raise ValueError(f"`beta` must be >= 0; got {beta}.")
    if math.isinf(beta):  # the limit of F-beta as beta grows is recall
        return recall(counts, zero_division=zero_division, average=average)
    return _rate(_f_beta_of, counts, zero_division=zero_division, average=average, beta=float(beta))


def _float(x: Array) -> Array:
    return x.astype(validation.float_dtype())


def matthews_corrcoef(
    counts_or_matrix: Counts | ArrayLike, *, zero_division: float = math.nan
) -> Array:
    r"""Matthews correlation coefficient of binary `Counts` or of a ``[*batch, C, C]`` matrix.

    Matches `sklearn.metrics.matthews_corrcoef` on the predictions the counts or the matrix were
    taken from, except that an empty denominator (a constant prediction, or a single class
    present) gives `zero_division`, NaN by default, where scikit-learn returns 0.0. It is the
    correlation of the predicted and the true labels, in [-1, 1]; for a C x C confusion matrix
    it is Gorodkin's R_K statistic, as in scikit-learn.

    .. math:: \mathrm{MCC} = \frac{TP \cdot TN - FP \cdot FN}
              {\sqrt{(TP+FP)(TP+FN)(TN+FP)(TN+FN)}}, \qquad
              R_K = \frac{c\, s - \sum_k p_k t_k}
              {\sqrt{\left(s^2 - \sum_k p_k^2\right)\left(s^2 - \sum_k t_k^2\right)}}

    with c the trace of the matrix, s its total, p_k the samples predicted as class k and t_k
    the samples of true class k.

    Conventions: binary counts carry the threshold rule (predicted positive iff
    ``score >= threshold``). Products are formed in float, so large integer counts cannot
    overflow. Counts or matrix cells holding the -1 marker of a bad input under `jax.jit` give
    NaN; a matrix that is not square raises `ValueError`.

    Args:
      counts_or_matrix: `Counts` whose fields share a shape ``[*batch]``, or a ``[*batch, C, C]``
        confusion matrix with rows the true and columns the predicted class (as
        `confusion_matrix` and `sklearn.metrics.confusion_matrix` return it).
      zero_division: the value where the denominator is 0; NaN by default.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.matthews_corrcoef(screening)), 4)
      0.2709
      >>> round(float(jm.matthews_corrcoef([[3, 1], [1, 3]])), 4)  # a 2 x 2 confusion matrix
      0.5

    References:
      Matthews (1975), "Comparison of the predicted and observed secondary structure of T4 phage
      lysozyme", Biochimica et Biophysica Acta 405:442-451. Gorodkin (2004), "Comparing two
      K-category assignments by a K-category correlation coefficient", Computational Biology
      and Chemistry 28:367-374.
    """
    if isinstance(counts_or_matrix, Counts):
        c = Counts(*(_float(jnp.asarray(x)) for x in counts_or_matrix))
        invalid = (c.tp < 0) | (c.fp < 0) | (c.fn < 0) | (c.tn < 0)
        numerator = c.tp * c.tn - c.fp * c.fn
        denominator = jnp.sqrt((c.tp + c.fp) * (c.tp + c.fn)) * jnp.sqrt(
            (c.tn + c.fp) * (c.tn + c.fn)
        )
        return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))
    matrix = validation.as_real_array(counts_or_matrix, "counts_or_matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            f"`counts_or_matrix` must be Counts or a square [*batch, C, C] matrix; "
            f"got shape {matrix.shape}."
        )
    # a matrix marked bad under jit (-1 cells) has no correlation: NaN
    invalid = jnp.any(matrix < 0, axis=(-2, -1))
    matrix = _float(matrix)
    true_per_class = matrix.sum(axis=-1)
    predicted_per_class = matrix.sum(axis=-2)
    correct = jnp.trace(matrix, axis1=-2, axis2=-1)
    total = matrix.sum(axis=(-2, -1))
    numerator = correct * total - (predicted_per_class * true_per_class).sum(-1)
    denominator = jnp.sqrt(total**2 - (predicted_per_class**2).sum(-1)) * jnp.sqrt(
        total**2 - (true_per_class**2).sum(-1)
    )
    return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))
