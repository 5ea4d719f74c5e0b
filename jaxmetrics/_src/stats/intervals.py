"""Analytic confidence intervals: binomial proportions and the Hanley-McNeil AUC standard error.

The binomial intervals take arrays of counts (any shape) and return arrays of bounds; DeLong's
AUC variance, read off the ranking engine, is in `delong`. The quantile levels of the bootstrap's
intervals (percentile and BCa) from resampled values are here too, for `bootstrap`.

Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program: an eager call compiles once per input shape (and confidence level).
"""

from __future__ import annotations

import functools
import warnings
from statistics import NormalDist
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.beta import beta_quantile
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_probability_level
from jaxmetrics._src.core.typing import Array, ArrayLike


def normal_quantile(confidence: float) -> float:
    """The two-sided standard normal quantile of `confidence` (1.96 at 0.95)."""
    level = check_probability_level(confidence, "confidence")
    return NormalDist().inv_cdf(0.5 + level / 2)


def _proportion_inputs(
    successes: ArrayLike, trials: ArrayLike
) -> tuple[Array, Array, tuple[Array, Array]]:
    """Counts broadcast together, and an elementwise `invalid` flag for each.

    Every element is its own problem (no sample axis), so a bad element raises eagerly and, under
    jit, marks only its own bounds NaN. Concrete counts are checked in numpy on the host and stay
    numpy arrays, so that an eager call dispatches nothing before its one compiled program.
    """
    successes = coercion.as_real_array(successes, "successes", min_ndim=0, host=True)
    trials = coercion.as_real_array(trials, "trials", min_ndim=0, host=True)
    try:
        shape = tuple(np.broadcast_shapes(successes.shape, trials.shape))
    except ValueError:
        raise ValueError(
            f"`successes` and `trials` must broadcast; got shapes {successes.shape} and "
            f"{trials.shape}."
        ) from None
    xp = checks.array_namespace(successes, trials)  # the bounds compare k with n
    k, n = xp.broadcast_to(successes, shape), xp.broadcast_to(trials, shape)
    # written so that NaN fails: the comparisons are False for it
    flags = (
        checks.check(
            n, "trials", checks.Rule(lambda n: ~(n > 0), "be positive counts"), sample_axes=0
        ),
        checks.check(
            k,
            "successes",
            checks.Rule(lambda k: ~((k >= 0) & (k <= n)), "lie in [0, trials]"),
            sample_axes=0,
        ),
    )
    return k, n, flags


def _as_float(*arrays: Array) -> tuple[Array, ...]:
    dtype = float_dtype()
    return tuple(jnp.asarray(a).astype(dtype) for a in arrays)


def wilson_bounds(k: Array, n: Array, z: float) -> tuple[Array, Array]:
    """Wilson bounds of float counts, unchecked (NaN where n = 0), clipped to [0, 1].

    The formula of `wilson_interval`, traced into the callers' programs (also the reliability
    bins'); `z` is the normal quantile of the confidence level.
    """
    center = (k + z * z / 2) / (n + z * z)
    # k (n - k) / n as k ((n - k) / n): the product overflowed float32 past n ~ 1e19 (weights)
    half = z / (n + z * z) * jnp.sqrt(k * ((n - k) / n) + z * z / 4)
    return _containing(k, n, jnp.clip(center - half, 0, 1), jnp.clip(center + half, 0, 1))


def _containing(k: Array, n: Array, low: Array, high: Array) -> tuple[Array, Array]:
    """Bounds widened, where rounding left it outside, to the observed proportion k / n.

    Every interval here contains k / n in exact arithmetic, with 0 its lower bound at k = 0 and
    1 its upper bound at k = n; float rounding can miss by an ulp (Wilson's upper bound of 23 of
    23 was 0.99999994, its lower bound of 0 of 21 4.3e-10). NaN stays NaN (n = 0, a marked
    element).
    """
    proportion = k / n
    return jnp.minimum(low, proportion), jnp.maximum(high, proportion)


# The interval programs take `z` (or `alpha`) static: it is set by `confidence`, which rarely
# changes, and as a Python float it enters the formulas exactly as written.
@functools.partial(kernels.sample_jit, static_argnames="z")
def _wilson(k: Array, n: Array, flags: tuple[Array, Array], *, z: float) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    return batching.nan_where(flags[0] | flags[1], wilson_bounds(k, n, z))


@functools.partial(jax.jit, static_argnames="z")
def _agresti_coull(
    k: Array, n: Array, flags: tuple[Array, Array], *, z: float
) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    n_tilde = n + z * z
    p_tilde = (k + z * z / 2) / n_tilde
    half = z * jnp.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    bounds = _containing(k, n, jnp.clip(p_tilde - half, 0, 1), jnp.clip(p_tilde + half, 0, 1))
    return batching.nan_where(flags[0] | flags[1], bounds)


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

    Each element is its own proportion; a count outside ``0 <= successes <= trials``,
    ``trials > 0`` (NaN included) is bad input. Counts need not be integers (weighted counts
    work). Bad input and precision: docs/conventions.md.

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

    Bad input and precision as `wilson_interval`.

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


@functools.partial(jax.jit, static_argnames="alpha")
def _clopper_pearson(
    k: Array, n: Array, flags: tuple[Array, Array], *, alpha: float
) -> tuple[Array, Array]:
    k, n = _as_float(k, n)
    invalid = flags[0] | flags[1]
    # a marked element's counts would make the bisection's beta parameters invalid: compute on 0/1
    k, n = jnp.where(invalid, 0.0, k), jnp.where(invalid, 1.0, n)
    low = beta_quantile(jnp.full_like(k, alpha), jnp.maximum(k, 1), n - k + 1)
    high = beta_quantile(jnp.full_like(k, 1 - alpha), k + 1, jnp.maximum(n - k, 1))
    bounds = _containing(k, n, jnp.where(k == 0, 0.0, low), jnp.where(k == n, 1.0, high))
    return batching.nan_where(invalid, bounds)


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
    ``alpha = 1 - confidence``; the quantiles are found by bisecting the regularised incomplete
    beta function (written to stay accurate in float32 at 10^6 trials and more, where
    `jax.scipy.special.betainc` is not), to about 1e-6 relative in float32.

    Bad input and precision as `wilson_interval`.

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
    alpha = (1 - check_probability_level(confidence, "confidence")) / 2
    return _clopper_pearson(*_proportion_inputs(successes, trials), alpha=alpha)


@jax.jit
def _hanley_mcneil(
    auc: Array, num_positive: Array, num_negative: Array, flags: tuple[Array, Array, Array]
) -> Array:
    auc, num_positive, num_negative = _as_float(auc, num_positive, num_negative)
    q1 = auc / (2 - auc)
    q2 = 2 * auc**2 / (1 + auc)
    numerator = (
        auc * (1 - auc) + (num_positive - 1) * (q1 - auc**2) + (num_negative - 1) * (q2 - auc**2)
    )
    # divided by each class size in turn (a barrier between: XLA would multiply them again),
    # as their product overflowed float32 past 1e19 each
    variance = jax.lax.optimization_barrier(numerator / num_positive) / num_negative
    invalid = jnp.broadcast_to(flags[0] | flags[1] | flags[2], variance.shape)
    return batching.nan_where(invalid, jnp.sqrt(variance))


# NaN passes: an undefined AUC (of one class) has an undefined standard error, NaN
_AUC = checks.Rule(lambda a: (a < 0) | (a > 1), "be in [0, 1]")


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

    An `auc` outside [0, 1] or a class size below 1 (or NaN) is bad input; a NaN `auc` (an
    undefined AUC, e.g. one class present) is not: its standard error is NaN. Bad input and
    precision: docs/conventions.md.

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
        coercion.as_real_array(x, name, min_ndim=0, host=True)
        for x, name in (
            (auc, "auc"),
            (num_positive, "num_positive"),
            (num_negative, "num_negative"),
        )
    ]
    class_size = checks.Rule(lambda n: ~(n >= 1), "be a class size >= 1")
    flags = [checks.check(values[0], "auc", _AUC, sample_axes=0)]
    for value, name in zip(values[1:], ("num_positive", "num_negative")):
        flags.append(checks.check(value, name, class_size, sample_axes=0))
    return _hanley_mcneil(*values, tuple(flags))


def nan_quantile(samples: Array, q: Array) -> Array:
    """Quantiles over axis 0 ignoring NaN, linear interpolation (numpy's default); q per column."""
    return jax.vmap(lambda column, level: jnp.nanquantile(column, level), in_axes=(1, 0))(
        samples.reshape(samples.shape[0], -1), jnp.broadcast_to(q, samples.shape[1:]).reshape(-1)
    ).reshape(samples.shape[1:])


class BcaFallbacks(NamedTuple):
    """Where BCa's levels are undefined, per output element of the metric (bool arrays)."""

    no_resample: Array  # every resample NaN: the interval is NaN, as the percentile one is
    undefined_estimate: Array  # a NaN estimate: z0 has no reference, the percentile interval
    one_sided: Array  # every defined resample on one side of the estimate: z0 infinite, ditto


def bca_levels(
    samples: Array, estimate: Array, jackknife: Array, alpha: float
) -> tuple[Array, BcaFallbacks]:
    """BCa's adjusted quantile levels, ``[2, *shape]``, and where they fell back (traced).

    The bias correction z0 is undefined when the estimate is NaN and infinite when no defined
    resample lies below the estimate or none above it (ties count half); those elements get
    the percentile levels. The acceleration is 0/0 when the jackknife values do not vary (a
    perfect AUC, a metric no single sample moves) and is not finite when they overflow: it is
    taken as 0 there (the bias-corrected interval), as no jackknife skewness is seen.
    """
    defined = (~jnp.isnan(samples)).sum(0)
    below = jnp.where(samples < estimate, 1.0, 0.0).sum(0)
    ties = jnp.where(samples == estimate, 0.5, 0.0).sum(0)
    share = (below + ties) / defined
    no_resample = defined == 0
    undefined_estimate = jnp.isnan(estimate) & ~no_resample
    one_sided = ((share == 0) | (share == 1)) & ~no_resample & ~undefined_estimate
    bias = ndtri(share)
    jackknife = jnp.where(jnp.isfinite(jackknife), jackknife, jnp.nan)
    deviations = jnp.nanmean(jackknife, axis=0) - jackknife
    acceleration = jnp.nansum(deviations**3, axis=0) / (
        6 * jnp.nansum(deviations**2, axis=0) ** 1.5
    )
    acceleration = jnp.where(jnp.isfinite(acceleration), acceleration, 0.0)
    percentile = jnp.asarray([alpha, 1 - alpha]).reshape((2,) + (1,) * estimate.ndim)
    z = ndtri(percentile)
    adjusted = ndtr(bias + (bias + z) / (1 - acceleration * (bias + z)))
    levels = jnp.where(undefined_estimate | one_sided, percentile, adjusted)
    return levels, BcaFallbacks(no_resample, undefined_estimate, one_sided)


_BCA_CAUSES = {
    "one_sided": "every defined resample lies on one side of the estimate (all above it or all "
    "below it), so BCa's bias correction z0 is infinite (typical of a biased metric, such as "
    "the expected calibration error of well-calibrated probabilities): the percentile "
    "interval is given instead",
    "undefined_estimate": "the estimate is NaN (the metric is undefined on the full data), so "
    "BCa's bias correction has no reference: the percentile interval is given instead",
    "no_resample": "the metric is NaN on every resample (see `num_undefined`): the interval is NaN",
}


def warn_bca_fallbacks(fallbacks: BcaFallbacks) -> None:
    """A `RuntimeWarning` for each cause by which BCa fell back (eagerly; silent under jit)."""
    if not checks.is_concrete(*fallbacks):
        return
    for field, cause in _BCA_CAUSES.items():
        flags = np.asarray(getattr(fallbacks, field))
        if not flags.any():
            continue
        where = ""
        if flags.ndim:
            first = tuple(int(i) for i in np.argwhere(flags)[0])
            where = f" for {int(flags.sum())} of {flags.size} outputs (the first at index {first})"
        warnings.warn(f"`method='bca'`{where}: {cause}.", RuntimeWarning, stacklevel=3)
