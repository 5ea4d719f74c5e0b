"""DeLong's AUC variance: the covariance of correlated ROC AUCs, Wald intervals and paired tests.

The variance uses the structural components of Sun & Xu (2014), which are read off the same
ranking engine as every other metric: one sort per model, O(n log n). Each public function checks
its inputs (numpy, on the host, when they are concrete), then runs one compiled program.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxmetrics._src.core import (
    batching,
    checks,
    coercion,
    exact_order,
    kernels,
    layouts,
    sorting,
    terms,
)
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import forms
from jaxmetrics._src.stats.intervals import normal_quantile


class DeLong(NamedTuple):
    """DeLong AUCs of M models scored on the same samples, their covariance and Wald intervals.

    What `delong` returns. For ``[M, n]`` scores the fields are ``[M]`` (covariance
    ``[M, M]``), ``M = 1`` included; for ``[n]`` scores every field is a scalar.

    Attributes:
      auc: ``[M]`` AUCs, a tied positive-negative pair counting 1/2.
      variance: ``[M]`` DeLong variances of the AUCs (the diagonal of `covariance`).
      covariance: ``[M, M]`` DeLong covariance of the AUCs across models.
      low: ``[M]`` lower bounds ``auc - z sqrt(variance)``, clipped to [0, 1].
      high: ``[M]`` upper bounds ``auc + z sqrt(variance)``, clipped to [0, 1].
    """

    auc: Array
    variance: Array
    covariance: Array
    low: Array
    high: Array


def _structural_components(
    scores: Array, labels: Array, weights: Array | None
) -> tuple[Array, Array]:
    """Per-sample placement values of one model, in the original sample order: each sample
    takes its tie group's `terms.placement_values` of its class, and 0 for the other class."""
    dtype = float_dtype()
    ranked = sorting.rank(scores)
    v10, v01 = terms.placement_values(
        terms.engine_groups(ranked, sorting.tally(ranked, labels, weights)), dtype
    )
    # every position reads its group's values, at the group's start
    v10, v01 = v10[ranked.group_start], v01[ranked.group_start]
    is_positive = labels[ranked.order] == 1
    placement = jnp.where(is_positive, v10, v01)
    # back to the original order: position order[k] holds the k-th sorted value
    placement = jnp.zeros_like(placement).at[ranked.order].set(placement)
    zero = jnp.zeros((), dtype)
    return jnp.where(labels == 1, placement, zero), jnp.where(labels == 0, placement, zero)


def _covariance(components: Array, counts: Array) -> Array:
    """Sample covariance (ddof 1) across models of `components` [M, n], each sample counted
    `counts` times (0 for the samples of the other class): repeated rows, without repeating."""
    total = counts.sum()
    # shifted to one sample of the class first: components that are all equal (a perfect
    # separation, all scores tied) then give exactly 0, where their float mean would not
    # (picked by a mask, not an index: samples split over a mesh cannot be sliced by index)
    picked = jnp.arange(counts.shape[-1]) == jnp.argmax(counts)
    shifted = components - jnp.where(picked, components, 0).sum(-1, keepdims=True)
    centered = shifted - (shifted * counts).sum(-1, keepdims=True) / total
    if layouts.sample_split(components) is not None:  # split samples: an explicit sum over them
        products = (centered * counts)[:, None, :] * centered[None, :, :]
        return products.sum(-1) / (total - 1)
    return (centered * counts) @ centered.T / (total - 1)


def components(scores: Array, labels: Array, weights: Array | None) -> tuple[Array, Array]:
    """(V10, V01), each ``[M, n]``, of ``[M, n]`` scores.

    Samples split over a mesh stay split: the distributed sample sort places them
    (`forms.placement_values`), and the moments below add up over the devices.
    """
    split = layouts.sample_split(scores)
    if split is not None:
        return forms.placement_values(scores, labels, weights, split)
    return jax.vmap(_structural_components, in_axes=(0, None, None))(scores, labels, weights)


def _class_counts(labels: Array, weights: Array | None) -> tuple[Array, Array]:
    """How many times each sample counts as a positive and as a negative (its weight or 1)."""
    dtype = float_dtype()
    counts = jnp.ones(labels.shape, dtype) if weights is None else weights.astype(dtype)
    return jnp.where(labels == 1, counts, 0), jnp.where(labels == 0, counts, 0)


def delong_moments(
    v10: Array, v01: Array, labels: Array, weights: Array | None
) -> tuple[Array, Array]:
    """AUCs ``[M]`` and their covariance ``[M, M]`` from the structural components."""
    positive, negative = _class_counts(labels, weights)
    num_positive, num_negative = positive.sum(), negative.sum()
    auc = (v10 * positive).sum(-1) / num_positive
    # behind a barrier: XLA rewrites x / (total - 1) / total as x / ((total - 1) total), which
    # overflowed float32 for weights of 1e30 (the variance came out 0)
    between = jax.lax.optimization_barrier((_covariance(v10, positive), _covariance(v01, negative)))
    covariance = between[0] / num_positive + between[1] / num_negative
    return auc, covariance


def delong_inputs(
    named_scores: list[tuple[str, ArrayLike]],
    labels: ArrayLike,
    sample_weight: ArrayLike | None = None,
    labels_name: str = "labels",
) -> tuple:
    """Checked scores (a tuple of ``[n]`` / ``[M, n]``), labels ``[n]``, weights ``[n]`` or
    None, and the bad-value flags: one per score array, and one shared by all of them.

    Concrete scores are exact order keys (DeLong depends on each model's order only) and stay
    on the host with the labels, so that an eager call compiles one program (`_delong_fields`).
    """
    kept = {"host": True, "keep_split": True}  # split samples stay split (`components`)
    scores = [
        coercion.as_scores(exact_order.order_keys(value, name)[0], name, **kept)
        for name, value in named_scores
    ]
    labels = coercion.as_real_array(labels, labels_name, **kept)
    weights = None
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", **kept)
    if (
        any(s.ndim > 2 for s in scores)
        or labels.ndim != 1
        or (weights is not None and weights.ndim != 1)
    ):
        shapes = ", ".join(f"{name} {s.shape}" for (name, _), s in zip(named_scores, scores))
        extra = "" if weights is None else f", sample_weight {weights.shape}"
        raise ValueError(
            f"DeLong takes scores [n] or [M, n] (M models on the same samples), `{labels_name}` "
            f"[n] and `sample_weight` [n]; got {shapes}, {labels_name} {labels.shape}{extra}."
        )
    coercion.sample_axis_shapes(
        [(name, s) for (name, _), s in zip(named_scores, scores)]
        + [(labels_name, labels), ("sample_weight", weights)]
    )
    invalid = tuple(checks.check_finite(s, name) for (name, _), s in zip(named_scores, scores))
    shared = checks.check_binary_labels(labels, labels_name)
    if weights is not None:
        shared = shared | checks.check_weights(weights)
    host_labels = checks.host_values(labels)
    host_weights = None if weights is None else checks.host_values(weights)
    if host_labels is not None and (weights is None or host_weights is not None):
        counts = np.ones(host_labels.shape) if weights is None else host_weights.astype(float)
        positives = float(counts[host_labels == 1].sum())
        negatives = float(counts[host_labels == 0].sum())
        if weights is None and (positives < 2 or negatives < 2):
            raise ValueError(
                f"DeLong needs at least two positives and two negatives in `{labels_name}`; "
                f"found {positives:.0f} positives and {negatives:.0f} negatives."
            )
        if weights is not None and (positives <= 1 or negatives <= 1):
            raise ValueError(
                "DeLong needs a total `sample_weight` above 1 in each class (the sample "
                "covariances divide by total - 1); found "
                f"{positives:.6g} on the positives and {negatives:.6g} on the negatives."
            )
    else:  # too few of a class: the variance is undefined, mark it rather than divide by zero
        positive, negative = _class_counts(jnp.asarray(labels), weights)
        shared = shared | (positive.sum() <= 1) | (negative.sum() <= 1)
    return tuple(scores), labels, weights, invalid, shared


def stacked(scores: tuple, labels: Array, invalid: tuple, shared: Array):
    stacked = jnp.concatenate([jnp.atleast_2d(s) for s in scores])
    flags = jnp.concatenate([jnp.atleast_1d(flag) for flag in invalid]) | shared
    return stacked, (labels == 1).astype(jnp.int32), flags


@functools.partial(kernels.sample_jit, static_argnames=("scalar",))
def _delong_fields(
    scores: tuple,
    labels: Array,
    weights: Array | None,
    invalid: tuple,
    shared: Array,
    z: Array,
    scalar: bool = False,
):
    """Every field of `DeLong` for ``[M, n]`` scores, in one compiled program; `scalar`: of one
    model's ``[n]`` scores, every field a scalar (reshaped in the program: an eager reshape of
    each field compiled two more programs)."""
    scores, labels, invalid = stacked(scores, labels, invalid, shared)
    auc, covariance = delong_moments(*components(scores, labels, weights), labels, weights)
    variance = jnp.diagonal(covariance)
    half = z * jnp.sqrt(variance)
    low, high = jnp.clip(auc - half, 0, 1), jnp.clip(auc + half, 0, 1)
    auc, variance, low, high = batching.nan_where(invalid, (auc, variance, low, high))
    covariance = jnp.where(invalid[:, None] | invalid[None, :], jnp.nan, covariance)
    result = DeLong(auc, variance, covariance, low, high)
    return DeLong(*(x.reshape(()) for x in result)) if scalar else result


@kernels.sample_jit
def _delong_test_fields(
    scores: tuple, labels: Array, weights: Array | None, invalid: tuple, shared: Array, z: Array
):
    """Every field of `DeLongTest` for two ``[n]`` score vectors, in one compiled program."""
    scores, labels, invalid = stacked(scores, labels, invalid, shared)
    v10, v01 = components(scores, labels, weights)
    # the difference's variance from the differences of the components: exactly 0 when the two
    # models order every pair alike, where var_a + var_b - 2 cov_ab would be rounding noise
    difference, variance = delong_moments(v10[:1] - v10[1:], v01[:1] - v01[1:], labels, weights)
    difference, standard_error = difference[0], jnp.sqrt(jnp.maximum(variance[0, 0], 0))
    statistic = z_statistic(difference, standard_error)
    p_value = 2 * ndtr(-jnp.abs(statistic))
    result = (statistic, p_value, difference - z * standard_error, difference + z * standard_error)
    return DeLongTest(*batching.nan_where(invalid.any(), result))


def z_statistic(difference: Array, standard_error: Array) -> Array:
    """``difference / standard_error``; with a zero standard error 0 (no difference) or ±inf."""
    degenerate = standard_error == 0
    return jnp.where(
        degenerate,
        jnp.where(difference == 0, 0.0, jnp.sign(difference) * jnp.inf),
        difference / jnp.where(degenerate, 1.0, standard_error),
    )


def delong(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    confidence: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> DeLong:
    r"""DeLong's nonparametric variance and covariance of the AUCs of models on the same samples.

    Matches pROC's `var(roc, method="delong")`, `cov(roc1, roc2, method="delong")` and
    `ci.auc(roc, method="delong")`, computed with the fast midrank algorithm of Sun & Xu (2014):
    one sort per model, O(n log n). The interval is the Wald interval ``auc ± z sqrt(variance)``,
    clipped to [0, 1].

    .. math::

      \widehat{\mathrm{Cov}}(A_r, A_s) = \frac{S^{10}_{rs}}{n_+} + \frac{S^{01}_{rs}}{n_-},
      \qquad V^{10}_r(x_i) = \frac{1}{n_-} \sum_j \psi(x^r_i, y^r_j), \quad
      V^{01}_r(y_j) = \frac{1}{n_+} \sum_i \psi(x^r_i, y^r_j)

    with x the positives' and y the negatives' scores, ``psi(x, y) = [x > y] + [x = y] / 2``, and
    S^10, S^01 the sample covariances (ddof 1) of the components V^10 over the positives and
    V^01 over the negatives.

    With `sample_weight`, weights are frequency weights: a sample of weight w counts as w
    copies of it, so that integer weights give exactly the result of the repeated rows (every
    count above becomes a sum of weights, n+ and n- the classes' total weights, and the
    covariances divide by n+ - 1 and n- - 1). Non-integer weights extend the same formulas;
    weights normalised to sum to 1 are not frequencies and leave the variance undefined.

    Fewer than two samples of a class (with weights: a class total weight of at most 1) is bad
    input too. Under `jax.jit` a model with a bad score gets NaN auc, variance, bounds and
    covariance row and column, and bad labels or weights (or too few of a class) make every
    field NaN. DeLong depends on each model's order only, so eagerly its scores are ranked
    exactly. Bad input and precision: docs/conventions.md.

    Args:
      scores: ``[n]`` or ``[M, n]`` scores of M models on the same samples, larger meaning more
        positive.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      confidence: the level of the Wald intervals, in (0, 1).
      sample_weight: optional ``[n]`` non-negative frequency weights of the samples, shared by
        the models.

    Returns:
      `DeLong`: for ``[M, n]`` scores auc, variance, low and high ``[M]`` and covariance
      ``[M, M]``; for ``[n]`` scores, scalars.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> result = jm.delong(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> round(float(result.auc), 4), round(float(result.variance), 5)
      (0.8125, 0.02865)
      >>> round(float(result.low), 3), float(result.high)
      (0.481, 1.0)

    References:
      DeLong, DeLong & Clarke-Pearson (1988), "Comparing the areas under two or more correlated
      receiver operating characteristic curves: a nonparametric approach", Biometrics
      44:837-845. Sun & Xu (2014), "Fast implementation of DeLong's algorithm for comparing the
      areas under correlated receiver operating characteristic curves", IEEE Signal Processing
      Letters 21:1389-1393.
    """
    z = normal_quantile(confidence)
    scalar = np.ndim(scores) == 1
    inputs = delong_inputs([("scores", scores)], labels, sample_weight)
    result = _delong_fields(*inputs, np.asarray(z, float_dtype()), scalar=scalar)
    if _overflowed(inputs[0], result.auc):  # eager: recompute on the gathered samples
        result = _delong_fields(*_gathered(inputs), np.asarray(z, float_dtype()), scalar=scalar)
    return result


def _overflowed(scores: tuple, values: Array) -> bool:
    """Whether an eager result over split samples is NaN where gathered samples might not give
    NaN: a sample sort buffer overflowed (never seen; `sample_sort.py`), or the value is undefined
    anyway (one class only), which the recomputation confirms."""
    split = any(layouts.sample_split(s) is not None for s in scores)
    return split and checks.is_concrete(values) and bool(np.isnan(np.asarray(values)).any())


def _gathered(inputs: tuple) -> tuple:
    """`delong_inputs`' result with every array whole on every device."""
    whole = lambda a: a if a is None else layouts.replicate(a)  # noqa: E731
    return jax.tree_util.tree_map(whole, inputs, is_leaf=lambda a: a is None)


class DeLongTest(NamedTuple):
    """Paired DeLong test of AUC_a - AUC_b on the same samples (what `delong_test` returns).

    Attributes:
      statistic: the z statistic ``(AUC_a - AUC_b) / SE``, a scalar.
      p_value: its two-sided p-value, a scalar.
      low: the lower bound of the Wald interval of ``AUC_a - AUC_b`` (not clipped).
      high: the upper bound of that interval.
    """

    statistic: Array
    p_value: Array
    low: Array
    high: Array


def delong_test(
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    labels: ArrayLike,
    *,
    confidence: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> DeLongTest:
    r"""Paired DeLong z-test of two correlated AUCs (two models scored on the same samples).

    Matches pROC's `roc.test(roc_a, roc_b, method="delong", paired=TRUE)`: the statistic, the
    two-sided p-value and the confidence interval of the difference.

    .. math::

      z = \frac{A_a - A_b}{\sqrt{\widehat{\mathrm{Var}}(A_a - A_b)}}, \qquad
      p = 2\,\Phi(-|z|)

    with the variance of the difference computed from the differences of the two models'
    structural components (see `delong`), which is exactly 0 when the models order every pair
    alike.

    Two models that order every pair alike have a zero standard error and a zero difference:
    statistic 0 and p-value 1, as pROC gives (a non-zero difference with zero standard error
    would give ±inf and p-value 0). `sample_weight` are frequency weights, as in `delong`
    (integer weights give the test of the repeated rows). Bad input and precision as `delong`,
    except that under `jax.jit` a bad score, label or weight makes every field NaN.

    Args:
      scores_a: ``[n]`` scores of the first model.
      scores_b: ``[n]`` scores of the second model, on the same samples.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      confidence: the level of the interval of the difference, in (0, 1).
      sample_weight: optional ``[n]`` non-negative frequency weights of the samples.

    Returns:
      `DeLongTest` of scalars.

    Examples:
      >>> import jaxmetrics as jm
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> scores_a = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # AUC 0.8125
      >>> scores_b = [0.8, 0.9, 0.3, 0.5, 0.6, 0.2, 0.4, 0.1]  # AUC 0.75
      >>> test = jm.delong_test(scores_a, scores_b, labels)
      >>> round(float(test.statistic), 3), round(float(test.p_value), 3)
      (0.463, 0.643)

    References:
      DeLong, DeLong & Clarke-Pearson (1988), Biometrics 44:837-845. Sun & Xu (2014), IEEE
      Signal Processing Letters 21:1389-1393.
    """
    z = normal_quantile(confidence)
    if np.ndim(scores_a) != 1 or np.shape(scores_a) != np.shape(scores_b):
        raise ValueError(
            f"`scores_a` and `scores_b` must both have shape [n]; got {np.shape(scores_a)} and "
            f"{np.shape(scores_b)}."
        )
    inputs = delong_inputs([("scores_a", scores_a), ("scores_b", scores_b)], labels, sample_weight)
    result = _delong_test_fields(*inputs, np.asarray(z, float_dtype()))
    if _overflowed(inputs[0], result.statistic):  # eager: recompute on the gathered samples
        result = _delong_test_fields(*_gathered(inputs), np.asarray(z, float_dtype()))
    return result
