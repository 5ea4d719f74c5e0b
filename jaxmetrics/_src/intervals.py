"""Analytic confidence intervals: binomial proportions and the DeLong AUC variance.

The binomial intervals take arrays of counts (any shape) and return arrays of bounds. DeLong's
variance uses the structural components of Sun & Xu (2014), which are read off the same ranking
engine as every other metric: one sort per model, O(n log n).

Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program: an eager call compiles once per input shape (and confidence level).
"""

from __future__ import annotations

import functools
from statistics import NormalDist
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import betainc, ndtr

from jaxmetrics._src import sorting, validation
from jaxmetrics._src.typing import Array, ArrayLike


def normal_quantile(confidence: float) -> float:
    """The two-sided standard normal quantile of `confidence` (1.96 at 0.95)."""
    level = validation.check_probability_level(confidence, "confidence")
    return NormalDist().inv_cdf(0.5 + level / 2)


def _proportion_inputs(
    successes: ArrayLike, trials: ArrayLike
) -> tuple[Array, Array, tuple[Array, Array]]:
    """Counts broadcast together, and an elementwise `invalid` flag for each.

    Every element is its own problem (no sample axis), so a bad element raises eagerly and, under
    jit, marks only its own bounds NaN. Concrete counts are checked in numpy on the host and stay
    numpy arrays, so that an eager call dispatches nothing before its one compiled program.
    """
    successes = validation.as_real_array(successes, "successes", min_ndim=0, host=True)
    trials = validation.as_real_array(trials, "trials", min_ndim=0, host=True)
    try:
        shape = tuple(np.broadcast_shapes(successes.shape, trials.shape))
    except ValueError:
        raise ValueError(
            f"`successes` and `trials` must broadcast; got shapes {successes.shape} and "
            f"{trials.shape}."
        ) from None
    host_k, host_n = validation.host_values(successes), validation.host_values(trials)
    if host_k is not None and host_n is not None:
        k, n = np.broadcast_to(host_k, shape), np.broadcast_to(host_n, shape)
    else:
        k, n = jnp.broadcast_to(successes, shape), jnp.broadcast_to(trials, shape)
    # written so that NaN fails: the comparisons are False for it
    flags = (
        validation.check_values(
            n, "trials", lambda n: ~(n > 0), "be positive counts", sample_axes=0
        ),
        validation.check_values(
            k, "successes", lambda k: ~((k >= 0) & (k <= n)), "lie in [0, trials]", sample_axes=0
        ),
    )
    return k, n, flags


def _as_float(*arrays: Array) -> tuple[Array, ...]:
    dtype = validation.float_dtype()
    return tuple(jnp.asarray(a).astype(dtype) for a in arrays)


def wilson_bounds(k: Array, n: Array, z: float) -> tuple[Array, Array]:
    """Wilson bounds of float counts, unchecked (NaN where n = 0), clipped to [0, 1].

    The formula of `wilson_interval`, traced into the callers' programs (also the reliability
    bins'); `z` is the normal quantile of the confidence level.
    """
    center = (k + z * z / 2) / (n + z * z)
    half = z / (n + z * z) * jnp.sqrt(k * (n - k) / n + z * z / 4)
    return jnp.clip(center - half, 0, 1), jnp.clip(center + half, 0, 1)


# The interval programs take `z` (or `alpha`) static: it is set by `confidence`, which rarely
# changes, and as a Python float it enters the formulas exactly as written.
@functools.partial(jax.jit, static_argnames="z")
def _wilson(k: Array, n: Array, flags: tuple[Array, Array], *, z: float) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    return validation.nan_where(flags[0] | flags[1], wilson_bounds(k, n, z))


@functools.partial(jax.jit, static_argnames="z")
def _agresti_coull(
    k: Array, n: Array, flags: tuple[Array, Array], *, z: float
) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    n_tilde = n + z * z
    p_tilde = (k + z * z / 2) / n_tilde
    half = z * jnp.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    bounds = jnp.clip(p_tilde - half, 0, 1), jnp.clip(p_tilde + half, 0, 1)
    return validation.nan_where(flags[0] | flags[1], bounds)


def wilson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Wilson score interval of a binomial proportion k / n (e.g. a recall, k of n positives).

    Matches `statsmodels.stats.proportion.proportion_confint(k, n, method="wilson")` and
    `scipy.stats.binomtest(k, n).proportion_ci(method="wilson")`, except that the bounds are
    clipped to [0, 1] (at k = 0 the formula's lower bound is 0 only up to rounding, -1.5e-8 in
    float32). It inverts the score test, so it stays inside [0, 1] and keeps close to its
    nominal coverage at small n and at proportions near 0 or 1, where the Wald interval fails.

    .. math::

      \frac{k + z^2/2}{n + z^2} \pm \frac{z}{n + z^2}\sqrt{\frac{k(n-k)}{n} + \frac{z^2}{4}}

    with z the standard normal quantile at ``(1 + confidence) / 2``.

    Conventions: `successes` and `trials` broadcast elementwise, each element its own
    proportion. A count outside ``0 <= successes <= trials``, ``trials > 0`` (NaN included)
    raises `ValueError` eagerly, naming the argument and the index; under `jax.jit` that
    element's bounds are NaN. Counts need not be integers (weighted counts work). Precision:
    float32, float64 when `jax_enable_x64` is on.

    Args:
      successes: the number of successes k, an array of any shape.
      trials: the number of trials n, an array broadcasting against `successes`.
      confidence: the confidence level, in (0, 1).

    Returns:
      ``(low, high)``, two float arrays of the broadcast shape of `successes` and `trials`.

    Examples:
      >>> import jaxmetrics as jm
      >>> low, high = jm.wilson_interval(40, 50)  # a recall of 40 out of 50 positives
      >>> round(float(low), 3), round(float(high), 3)
      (0.67, 0.888)

    References:
      Wilson (1927), "Probable inference, the law of succession, and statistical inference",
      Journal of the American Statistical Association 22:209-212.
    """
    z = normal_quantile(confidence)
    return _wilson(*_proportion_inputs(successes, trials), z=z)


def agresti_coull_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Agresti-Coull interval of a binomial proportion: the Wald interval of k + z²/2 successes
    in n + z² trials.

    Matches `statsmodels.stats.proportion.proportion_confint(k, n, method="agresti_coull")`;
    the bounds are clipped to [0, 1], as statsmodels clips them.

    .. math::

      \tilde p \pm z \sqrt{\frac{\tilde p (1 - \tilde p)}{\tilde n}}, \qquad
      \tilde n = n + z^2, \quad \tilde p = \frac{k + z^2 / 2}{\tilde n}

    Conventions: as `wilson_interval` (elementwise broadcasting, bad counts raise eagerly and give
    NaN bounds under `jax.jit`, float32 unless x64).

    Args:
      successes: the number of successes k, an array of any shape.
      trials: the number of trials n, an array broadcasting against `successes`.
      confidence: the confidence level, in (0, 1).

    Returns:
      ``(low, high)``, two float arrays of the broadcast shape of `successes` and `trials`.

    Examples:
      >>> import jaxmetrics as jm
      >>> low, high = jm.agresti_coull_interval(18, 20)
      >>> round(float(low), 4), round(float(high), 4)
      (0.6868, 0.9843)

    References:
      Agresti & Coull (1998), "Approximate is better than 'exact' for interval estimation of
      binomial proportions", The American Statistician 52:119-126.
    """
    z = normal_quantile(confidence)
    return _agresti_coull(*_proportion_inputs(successes, trials), z=z)


def _beta_quantile(q: Array, a: Array, b: Array) -> Array:
    """Inverse of the regularised incomplete beta function, by bisection (60 halvings)."""

    def halve(_, bounds):
        low, high = bounds
        middle = (low + high) / 2
        below = betainc(a, b, middle) < q
        return jnp.where(below, middle, low), jnp.where(below, high, middle)

    low, high = jax.lax.fori_loop(0, 60, halve, (jnp.zeros_like(q), jnp.ones_like(q)))
    return (low + high) / 2


@functools.partial(jax.jit, static_argnames="alpha")
def _clopper_pearson(
    k: Array, n: Array, flags: tuple[Array, Array], *, alpha: float
) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    invalid = flags[0] | flags[1]
    # a marked element's counts would make the bisection's beta parameters invalid: compute on 0/1
    k, n = jnp.where(invalid, 0.0, k), jnp.where(invalid, 1.0, n)
    low = _beta_quantile(jnp.full_like(k, alpha), jnp.maximum(k, 1), n - k + 1)
    high = _beta_quantile(jnp.full_like(k, 1 - alpha), k + 1, jnp.maximum(n - k, 1))
    bounds = jnp.where(k == 0, 0.0, low), jnp.where(k == n, 1.0, high)
    return validation.nan_where(invalid, bounds)


def clopper_pearson_interval(
    successes: ArrayLike, trials: ArrayLike, *, confidence: float = 0.95
) -> tuple[Array, Array]:
    r"""Clopper-Pearson ("exact") interval of a binomial proportion, from beta quantiles.

    Matches `statsmodels.stats.proportion.proportion_confint(k, n, method="beta")` and
    `scipy.stats.binomtest(k, n).proportion_ci(method="exact")`. It inverts two one-sided
    binomial tests, so its coverage is at least the nominal level (conservative); the bounds are
    0 at k = 0 and 1 at k = n.

    .. math::

      \mathrm{low} = B^{-1}\!\left(\tfrac{\alpha}{2};\ k,\ n - k + 1\right), \qquad
      \mathrm{high} = B^{-1}\!\left(1 - \tfrac{\alpha}{2};\ k + 1,\ n - k\right)

    with :math:`B^{-1}(q; a, b)` the q-quantile of the Beta(a, b) distribution and
    ``alpha = 1 - confidence``; the quantiles are found by 60 bisections of the regularised
    incomplete beta function (to about 1e-7 in float32).

    Conventions: as `wilson_interval` (elementwise broadcasting, bad counts raise eagerly and give
    NaN bounds under `jax.jit`, float32 unless x64).

    Args:
      successes: the number of successes k, an array of any shape.
      trials: the number of trials n, an array broadcasting against `successes`.
      confidence: the confidence level, in (0, 1).

    Returns:
      ``(low, high)``, two float arrays of the broadcast shape of `successes` and `trials`.

    Examples:
      >>> import jaxmetrics as jm
      >>> low, high = jm.clopper_pearson_interval(18, 20)
      >>> round(float(low), 4), round(float(high), 4)
      (0.683, 0.9877)

    References:
      Clopper & Pearson (1934), "The use of confidence or fiducial limits illustrated in the
      case of the binomial", Biometrika 26:404-413.
    """
    alpha = (1 - validation.check_probability_level(confidence, "confidence")) / 2
    return _clopper_pearson(*_proportion_inputs(successes, trials), alpha=alpha)


@jax.jit
def _hanley_mcneil(
    auc: Array, num_positive: Array, num_negative: Array, flags: tuple[Array, Array, Array]
) -> Array:
    auc, num_positive, num_negative = _as_float(auc, num_positive, num_negative)
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    variance = (
        auc * (1 - auc) + (num_positive - 1) * (q1 - auc**2) + (num_negative - 1) * (q2 - auc**2)
    ) / (num_positive * num_negative)
    invalid = jnp.broadcast_to(flags[0] | flags[1] | flags[2], variance.shape)
    return validation.nan_where(invalid, jnp.sqrt(variance))


def hanley_mcneil_standard_error(
    auc: ArrayLike, num_positive: ArrayLike, num_negative: ArrayLike
) -> Array:
    r"""Standard error of an AUC from the AUC and the class sizes alone (Hanley & McNeil 1982).

    There is no scikit-learn function; this is the formula of Hanley & McNeil (1982), which
    reproduces their Table I. It assumes that the two classes' scores have exponential
    distributions; `delong`, which needs the scores, makes no such assumption.

    .. math::

      \mathrm{SE}^2 = \frac{A(1-A) + (n_+ - 1)(Q_1 - A^2) + (n_- - 1)(Q_2 - A^2)}{n_+ n_-},
      \qquad Q_1 = \frac{A}{2-A},\quad Q_2 = \frac{2A^2}{1+A}

    Conventions: the arguments broadcast elementwise. An `auc` outside [0, 1] or a class size
    below 1 (NaN included) raises `ValueError` eagerly, naming the argument and the index; under
    `jax.jit` that element is NaN. A NaN `auc` (an undefined AUC, e.g. one class present) is not
    an error: its standard error is NaN. Precision: float32, float64 when `jax_enable_x64` is on.

    Args:
      auc: AUCs in [0, 1], an array of any shape.
      num_positive: the number of positives n+, broadcasting against `auc`.
      num_negative: the number of negatives n-, broadcasting against `auc`.

    Returns:
      A float array of the broadcast shape of the arguments.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.hanley_mcneil_standard_error(0.8932, 51, 58)), 4)  # Table I
      0.0325

    References:
      Hanley & McNeil (1982), "The meaning and use of the area under a receiver operating
      characteristic (ROC) curve", Radiology 143:29-36.
    """
    values = [
        validation.as_real_array(x, name, min_ndim=0, host=True)
        for x, name in (
            (auc, "auc"),
            (num_positive, "num_positive"),
            (num_negative, "num_negative"),
        )
    ]
    flags = [
        validation.check_values(
            values[0], "auc", lambda a: (a < 0) | (a > 1), "be in [0, 1]", sample_axes=0
        )
    ]
    for value, name in zip(values[1:], ("num_positive", "num_negative")):
        flags.append(
            validation.check_values(
                value, name, lambda n: ~(n >= 1), "be a class size >= 1", sample_axes=0
            )
        )
    return _hanley_mcneil(*values, tuple(flags))


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


def _structural_components(scores: Array, labels: Array) -> tuple[Array, Array]:
    """Per-sample placement values of one model, in the original sample order.

    For a positive i, V10_i = (negatives below s_i + half the tied ones) / n-; for a negative j,
    V01_j = (positives above s_j + half the tied ones) / n+. Each is 0 for the other class.
    """
    dtype = validation.float_dtype()
    ranked = sorting.rank(scores)
    tallies = sorting.tally(ranked, labels, None)
    a, b = ranked.group_start, ranked.group_stop
    positive, negative = tallies.positive.astype(dtype), tallies.negative.astype(dtype)
    p, n = positive[-1], negative[-1]
    negatives_below = (negative[a] + negative[b]) / 2  # ties count one half
    positives_above = p - (positive[a] + positive[b]) / 2
    is_positive = labels[ranked.order] == 1
    placement = jnp.where(is_positive, negatives_below / n, positives_above / p)
    # back to the original order: position order[k] holds the k-th sorted value
    placement = jnp.zeros_like(placement).at[ranked.order].set(placement)
    zero = jnp.zeros((), dtype)
    return jnp.where(labels == 1, placement, zero), jnp.where(labels == 0, placement, zero)


def _covariance(components: Array, mask: Array) -> Array:
    """Sample covariance (ddof 1) across models of `components` [M, n] over the masked samples."""
    count = mask.sum()
    mean = components.sum(-1, keepdims=True) / count
    centered = jnp.where(mask, components - mean, 0.0)
    return centered @ centered.T / (count - 1)


def _components(scores: Array, labels: Array) -> tuple[Array, Array]:
    """(V10, V01), each ``[M, n]``, of ``[M, n]`` scores."""
    return jax.vmap(_structural_components, in_axes=(0, None))(scores, labels)


def _delong_moments(v10: Array, v01: Array, labels: Array) -> tuple[Array, Array]:
    """AUCs ``[M]`` and their covariance ``[M, M]`` from the structural components."""
    positive, negative = labels == 1, labels == 0
    auc = v10.sum(-1) / positive.sum()
    covariance = (
        _covariance(v10, positive) / positive.sum() + _covariance(v01, negative) / negative.sum()
    )
    return auc, covariance


def _delong_inputs(named_scores: list[tuple[str, ArrayLike]], labels: ArrayLike) -> tuple:
    """Checked scores (a tuple of ``[n]`` / ``[M, n]``), labels ``[n]`` and their bad-value flags.

    Concrete scores are exact order keys (DeLong depends on each model's order only) and stay
    on the host with the labels, so that an eager call compiles one program (`_delong_fields`).
    """
    scores = [
        validation.as_scores(validation.order_keys(value, name)[0], name, host=True)
        for name, value in named_scores
    ]
    labels = validation.as_real_array(labels, "labels", host=True)
    if any(s.ndim > 2 for s in scores) or labels.ndim != 1:
        shapes = ", ".join(f"{name} {s.shape}" for (name, _), s in zip(named_scores, scores))
        raise ValueError(
            "DeLong takes `scores` [n] or [M, n] (M models on the same samples) and `labels` [n]; "
            f"got {shapes}, labels {labels.shape}."
        )
    validation.sample_axis_shapes(
        [(name, s) for (name, _), s in zip(named_scores, scores)] + [("labels", labels)]
    )
    invalid = tuple(validation.check_finite(s, name) for (name, _), s in zip(named_scores, scores))
    shared = validation.check_binary_labels(labels)
    host = validation.host_values(labels)
    if host is not None:
        positives = int((host == 1).sum())
        if positives < 2 or host.shape[0] - positives < 2:
            raise ValueError(
                "DeLong needs at least two positives and two negatives in `labels`; "
                f"found {positives} positives and {host.shape[0] - positives} negatives."
            )
    else:  # too few of a class: the variance is undefined, mark it rather than divide by zero
        positives = (labels == 1).sum()
        shared = shared | (positives < 2) | (labels.shape[0] - positives < 2)
    return tuple(scores), labels, invalid, shared


def _stacked(scores: tuple, labels: Array, invalid: tuple, shared: Array):
    stacked = jnp.concatenate([jnp.atleast_2d(s) for s in scores])
    flags = jnp.concatenate([jnp.atleast_1d(flag) for flag in invalid]) | shared
    return stacked, (labels == 1).astype(jnp.int32), flags


@jax.jit
def _delong_fields(scores: tuple, labels: Array, invalid: tuple, shared: Array, z: Array):
    """Every field of `DeLong` for ``[M, n]`` scores, in one compiled program."""
    scores, labels, invalid = _stacked(scores, labels, invalid, shared)
    auc, covariance = _delong_moments(*_components(scores, labels), labels)
    variance = jnp.diagonal(covariance)
    half = z * jnp.sqrt(variance)
    low, high = jnp.clip(auc - half, 0, 1), jnp.clip(auc + half, 0, 1)
    auc, variance, low, high = validation.nan_where(invalid, (auc, variance, low, high))
    covariance = jnp.where(invalid[:, None] | invalid[None, :], jnp.nan, covariance)
    return DeLong(auc, variance, covariance, low, high)


@jax.jit
def _delong_test_fields(scores: tuple, labels: Array, invalid: tuple, shared: Array, z: Array):
    """Every field of `DeLongTest` for two ``[n]`` score vectors, in one compiled program."""
    scores, labels, invalid = _stacked(scores, labels, invalid, shared)
    v10, v01 = _components(scores, labels)
    # the difference's variance from the differences of the components: exactly 0 when the two
    # models order every pair alike, where var_a + var_b - 2 cov_ab would be rounding noise
    difference, variance = _delong_moments(v10[:1] - v10[1:], v01[:1] - v01[1:], labels)
    difference, standard_error = difference[0], jnp.sqrt(jnp.maximum(variance[0, 0], 0))
    degenerate = standard_error == 0
    statistic = jnp.where(
        degenerate,
        jnp.where(difference == 0, 0.0, jnp.sign(difference) * jnp.inf),
        difference / jnp.where(degenerate, 1.0, standard_error),
    )
    p_value = 2 * ndtr(-jnp.abs(statistic))
    result = (statistic, p_value, difference - z * standard_error, difference + z * standard_error)
    return DeLongTest(*validation.nan_where(invalid.any(), result))


def delong(scores: ArrayLike, labels: ArrayLike, *, confidence: float = 0.95) -> DeLong:
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

    Conventions: NaN/inf scores, labels other than 0/1 and fewer than two samples of a class
    raise `ValueError` eagerly; under `jax.jit` a model with a bad score gets NaN auc, variance,
    bounds and covariance row and column, and bad labels (or too few of a class) make every field
    NaN. Precision: called eagerly, float64 and large-integer scores are ranked exactly (DeLong
    depends on each model's order only); under `jax.jit` they are what JAX made them (float32
    unless x64). Results are float32, float64 when `jax_enable_x64` is on.

    Args:
      scores: ``[n]`` or ``[M, n]`` scores of M models on the same samples, larger meaning more
        positive.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      confidence: the level of the Wald intervals, in (0, 1).

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
    was_1d = np.ndim(scores) == 1
    inputs = _delong_inputs([("scores", scores)], labels)
    result = _delong_fields(*inputs, np.asarray(z, validation.float_dtype()))
    if was_1d:
        result = DeLong(*(x.reshape(()) for x in result))
    return result


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
    scores_a: ArrayLike, scores_b: ArrayLike, labels: ArrayLike, *, confidence: float = 0.95
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

    Conventions: two models that order every pair alike have a zero standard error and a zero
    difference: statistic 0 and p-value 1, as pROC gives (a non-zero difference with zero
    standard error would give ±inf and p-value 0). Bad input as `delong`; under `jax.jit` a bad
    score or label makes every field NaN. Precision as `delong`.

    Args:
      scores_a: ``[n]`` scores of the first model.
      scores_b: ``[n]`` scores of the second model, on the same samples.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      confidence: the level of the interval of the difference, in (0, 1).

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
    inputs = _delong_inputs([("scores_a", scores_a), ("scores_b", scores_b)], labels)
    return _delong_test_fields(*inputs, np.asarray(z, validation.float_dtype()))
