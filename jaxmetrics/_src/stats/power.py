"""Power and sample size of AUC tests (Obuchowski & McClish 1997), as pROC's `power.roc.test`.

Two designs: one AUC against the chance level 1/2, with Obuchowski's binormal approximation of
the AUC's variance; and two models on the same samples, with their DeLong variances and
covariance (`delong`). Every test is two-sided at level `alpha`, as pROC's default; a one-sided
test at level a is the two-sided one at ``alpha = 2 a``.
"""

from __future__ import annotations

from statistics import NormalDist
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr, ndtri

from jaxmetrics._src.core import batching, checks, coercion
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_probability_level
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.stats.delong import delong


class SampleSize(NamedTuple):
    """Numbers of samples a test needs (what `auc_sample_size` and `delong_sample_size` return).

    Attributes:
      num_positive: the number of positives (pROC's ``ncases``), a float, not rounded up.
      num_negative: the number of negatives (pROC's ``ncontrols``), a float.
    """

    num_positive: Array
    num_negative: Array


def _level(value: Any, name: str) -> float:
    return check_probability_level(value, name)


def _normal_quantile(probability: float) -> float:
    return NormalDist().inv_cdf(probability)


def _obuchowski_variance(auc: Array, negatives_per_positive: Array) -> Array:
    """Obuchowski's (2004, formula 3) variance of an AUC, times the number of positives.

    From the binormal model with equal variances: ``A = 1.414 Phi^-1(AUC)``; the limit 0 at an
    AUC of 0 or 1, where A is infinite.
    """
    a = 1.414 * ndtri(auc)
    variance = (
        0.0099 * jnp.exp(-(a**2) / 2) * ((5 * a**2 + 8) + (a**2 + 8) / negatives_per_positive)
    )
    return jnp.where(jnp.isfinite(a), variance, 0.0)


_POSITIVE = checks.Rule(lambda n: ~(n > 0), "be positive")


def _checked_aucs(auc: ArrayLike, counts: list[tuple[ArrayLike, str]]) -> tuple[list, list]:
    """`auc` and the counts as arrays (host when concrete) and their elementwise `invalid` flags."""
    values = [coercion.as_real_array(auc, "auc", min_ndim=0, host=True)]
    flags = [checks.check(values[0], "auc", checks.UNIT_INTERVAL, sample_axes=0)]
    shape = values[0].shape
    for value, name in counts:
        value = coercion.as_real_array(value, name, min_ndim=0, host=True)
        try:
            shape = np.broadcast_shapes(shape, value.shape)
        except ValueError:
            raise ValueError(
                f"`{name}` must broadcast against `auc` and the counts before it: expected a "
                f"shape compatible with {tuple(shape)}, got {tuple(value.shape)}."
            ) from None
        flags.append(checks.check(value, name, _POSITIVE, sample_axes=0))
        values.append(value)
    return values, flags


@jax.jit
def _auc_power(auc, num_positive, num_negative, flags, z_alpha):
    dtype = float_dtype()
    auc, num_positive, num_negative = (
        jnp.asarray(x, dtype) for x in (auc, num_positive, num_negative)
    )
    ratio = num_negative / num_positive
    null_sd = jnp.sqrt(0.0792 * (1 + 1 / ratio))
    alternative_sd = jnp.sqrt(_obuchowski_variance(auc, ratio))
    power = ndtr((jnp.sqrt(num_positive) * jnp.abs(auc - 0.5) - z_alpha * null_sd) / alternative_sd)
    invalid = jnp.broadcast_to(flags[0] | flags[1] | flags[2], power.shape)
    return batching.nan_where(invalid, power)


def auc_power(
    auc: ArrayLike, *, num_positive: ArrayLike, num_negative: ArrayLike, alpha: float = 0.05
) -> Array:
    r"""Power of the test of an AUC against 1/2 (Obuchowski & McClish 1997), as pROC's.

    Matches pROC's ``power.roc.test(auc=, ncases=, ncontrols=, sig.level=)``: the probability
    that a two-sided z test at level `alpha` rejects ``AUC = 1/2`` when the true AUC is `auc`.

    .. math::

      1 - \beta = \Phi\!\left(\frac{\sqrt{n_+}\,|\theta - \tfrac12| - z_{1-\alpha/2}\sqrt{V_0}}
          {\sqrt{V(\theta)}}\right), \qquad
      V(\theta) = 0.0099\, e^{-A^2/2}\left(5A^2 + 8 + \frac{A^2 + 8}{\kappa}\right)

    with ``A = 1.414 Phi^-1(theta)``, ``kappa = n- / n+`` and ``V_0 = V(1/2) = 0.0792 (1 +
    1 / kappa)`` (Obuchowski 2004's variances of the AUC times n+, from the binormal model).

    An `auc` outside [0, 1] or a non-positive count (NaN included) is bad input. An AUC below
    1/2 counts as far from 1/2 as its mirror image. At an AUC of exactly 0 or 1 the variance is
    0 (its limit). Counts need not be integers. Bad input and precision: docs/conventions.md.

    Args:
      auc: the true AUC under the alternative, an array of any shape.
      num_positive: the number of positives n+ (pROC's ``ncases``), broadcasting against `auc`.
      num_negative: the number of negatives n- (pROC's ``ncontrols``).
      alpha: the level of the two-sided test, in (0, 1).

    Returns:
      The power, a float array of the broadcast shape of the arguments.

    Examples:
      >>> import jaxmetrics as jm
      >>> round(float(jm.auc_power(0.73, num_positive=41, num_negative=72)), 4)  # pROC: 0.9897
      0.9897

    References:
      Obuchowski & McClish (1997), "Sample size determination for diagnostic accuracy studies
      involving binormal ROC curve indices", Statistics in Medicine 16:1529-1542. Obuchowski,
      Lieber & Wians (2004), "ROC curves in Clinical Chemistry: uses, misuses, and possible
      solutions", Clinical Chemistry 50:1118-1125.
    """
    z_alpha = _normal_quantile(1 - _level(alpha, "alpha") / 2)
    values, flags = _checked_aucs(
        auc, [(num_positive, "num_positive"), (num_negative, "num_negative")]
    )
    return _auc_power(*values, tuple(flags), np.asarray(z_alpha, float_dtype()))


@jax.jit
def _auc_sample_size(auc, flags, ratio, z_alpha, z_power):
    auc = jnp.asarray(auc, float_dtype())
    null_sd = jnp.sqrt(0.0792 * (1 + 1 / ratio))
    alternative_sd = jnp.sqrt(_obuchowski_variance(auc, ratio))
    positives = (z_alpha * null_sd + z_power * alternative_sd) ** 2 / (auc - 0.5) ** 2
    positives = batching.nan_where(flags, positives)
    return SampleSize(positives, ratio * positives)


def auc_sample_size(
    auc: ArrayLike,
    *,
    power: float,
    negatives_per_positive: float = 1.0,
    alpha: float = 0.05,
) -> SampleSize:
    r"""Numbers of samples for a test of an AUC against 1/2 to reach `power`, as pROC's.

    Matches pROC's ``power.roc.test(auc=, power=, kappa=, sig.level=)``: the `auc_power`
    equation solved for the number of positives.

    .. math::

      n_+ = \frac{\left(z_{1-\alpha/2}\sqrt{V_0} + z_{1-\beta}\sqrt{V(\theta)}\right)^2}
          {(\theta - \tfrac12)^2}, \qquad n_- = \kappa\, n_+

    with V and V_0 as in `auc_power` and ``kappa = negatives_per_positive``.

    An `auc` outside [0, 1] (NaN included) is bad input. An AUC of exactly 1/2 needs
    infinitely many samples (inf). The counts are not rounded up (pROC's neither). Bad input and
    precision: docs/conventions.md.

    Args:
      auc: the true AUC under the alternative, an array of any shape.
      power: the power to reach, in (0, 1).
      negatives_per_positive: kappa = n- / n+ (pROC's ``kappa``), a positive number.
      alpha: the level of the two-sided test, in (0, 1).

    Returns:
      `SampleSize` of float arrays of the shape of `auc`.

    Examples:
      >>> import jaxmetrics as jm
      >>> size = jm.auc_sample_size(0.7313686, power=0.95, negatives_per_positive=1.7)  # pROC
      >>> round(float(size.num_positive), 2), round(float(size.num_negative), 2)
      (29.3, 49.81)

    References:
      Obuchowski & McClish (1997), Statistics in Medicine 16:1529-1542. Obuchowski, Lieber &
      Wians (2004), Clinical Chemistry 50:1118-1125.
    """
    z_alpha = _normal_quantile(1 - _level(alpha, "alpha") / 2)
    z_power = _normal_quantile(_level(power, "power"))
    ratio = _positive_number(negatives_per_positive, "negatives_per_positive")
    values, flags = _checked_aucs(auc, [])
    dtype = float_dtype()
    return _auc_sample_size(
        values[0], flags[0], *(np.asarray(x, dtype) for x in (ratio, z_alpha, z_power))
    )


def _positive_number(value: Any, name: str) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a positive number; got {value!r}.") from None
    if not number > 0:  # NaN fails too
        raise ValueError(f"`{name}` must be a positive number; got {value!r}.")
    return number


def _two_model_variances(scores: ArrayLike, labels: ArrayLike) -> tuple[Array, ...]:
    """(difference, sd under the null, sd under the alternative, n+, n-) of two models."""
    if np.ndim(scores) != 2 or np.shape(scores)[0] != 2:
        raise ValueError(
            f"`scores` must have shape [2, n] (two models on the same samples); got "
            f"{np.shape(scores)}."
        )
    result = delong(scores, labels)
    return _variances(result.auc, result.covariance, jnp.asarray(labels))


@jax.jit
def _variances(auc: Array, covariance: Array, labels: Array) -> tuple[Array, ...]:
    # pROC's convention: under the null hypothesis both AUCs have the first model's variance
    null_variance = 2 * covariance[0, 0] - 2 * covariance[0, 1]
    alternative = covariance[0, 0] + covariance[1, 1] - 2 * covariance[0, 1]
    num_positive = (labels == 1).sum().astype(auc.dtype)
    num_negative = (labels == 0).sum().astype(auc.dtype)
    # the alternative's variance is a variance of a difference: rounding alone makes it < 0
    return (
        auc[0] - auc[1],
        jnp.sqrt(null_variance),
        jnp.sqrt(jnp.maximum(alternative, 0)),
        num_positive,
        num_negative,
    )


def delong_power(scores: ArrayLike, labels: ArrayLike, *, alpha: float = 0.05) -> Array:
    r"""Power of the paired test of two models' AUCs at the observed difference, as pROC's.

    Matches pROC's ``power.roc.test(roc_a, roc_b, sig.level=)`` with its default DeLong
    method: the power of a two-sided z test at level `alpha` of ``AUC_a = AUC_b``, with the
    observed difference as the alternative and the observed DeLong (co)variances (`delong`),
    at the observed numbers of samples (Obuchowski & McClish 1997).

    .. math::

      1 - \beta = \Phi\!\left(\frac{|A_a - A_b| - z_{1-\alpha/2}\,\sigma_0}{\sigma_1}\right),
      \qquad \sigma_0^2 = 2 V_a - 2 C_{ab}, \quad \sigma_1^2 = V_a + V_b - 2 C_{ab}

    with V the DeLong variances and C the covariance: sigma_1 is the standard error of the
    difference, sigma_0 the one under the null hypothesis, where the first model's variance
    stands for both (pROC's convention, so the order of the models matters).

    sigma_0 is NaN when ``C_ab > V_a``, as in pROC. Equal observed AUCs give
    ``Phi(-z sigma_0 / sigma_1)`` (alpha / 2 when the two standard errors agree); models that
    order every pair alike (sigma_1 = 0) give 0, or NaN when sigma_0 = 0 too. Bad input as
    `delong`.

    Args:
      scores: ``[2, n]`` scores of the two models on the same samples.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      alpha: the level of the two-sided test, in (0, 1).

    Returns:
      The power, a float scalar.

    Examples:
      >>> import jaxmetrics as jm
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0, 1, 0]
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1, 0.75, 0.35],
      ...           [0.8, 0.4, 0.3, 0.5, 0.6, 0.2, 0.7, 0.1, 0.9, 0.65]]
      >>> round(float(jm.delong_power(scores, labels)), 3)
      0.585

    References:
      Obuchowski & McClish (1997), Statistics in Medicine 16:1529-1542. DeLong, DeLong &
      Clarke-Pearson (1988), Biometrics 44:837-845.
    """
    z_alpha = _normal_quantile(1 - _level(alpha, "alpha") / 2)
    difference, null_sd, alternative_sd, _, _ = _two_model_variances(scores, labels)
    return ndtr((jnp.abs(difference) - z_alpha * null_sd) / alternative_sd)


def delong_sample_size(
    scores: ArrayLike, labels: ArrayLike, *, power: float, alpha: float = 0.05
) -> SampleSize:
    r"""Numbers of samples for the paired test of two models' AUCs to reach `power`, as pROC's.

    Matches pROC's ``power.roc.test(roc_a, roc_b, power=, sig.level=)`` with its default DeLong
    method: the `delong_power` equation solved for the number of positives, with the observed
    difference and (co)variances scaled to it, keeping the observed ratio of negatives to
    positives.

    .. math::

      n_+ = n_+^{\mathrm{obs}}\,
          \frac{\left(z_{1-\alpha/2}\,\sigma_0 + z_{1-\beta}\,\sigma_1\right)^2}{(A_a - A_b)^2},
      \qquad n_- = \frac{n_-^{\mathrm{obs}}}{n_+^{\mathrm{obs}}}\, n_+

    with sigma_0 and sigma_1 as in `delong_power` (at the observed numbers of samples).

    As `delong_power`; equal AUCs need infinitely many samples (inf). The counts are not
    rounded up (pROC's neither).

    Args:
      scores: ``[2, n]`` scores of the two models on the same samples.
      labels: ``[n]`` labels in {0, 1} or bool, with at least two of each class.
      power: the power to reach, in (0, 1).
      alpha: the level of the two-sided test, in (0, 1).

    Returns:
      `SampleSize` of float scalars.

    Examples:
      >>> import jaxmetrics as jm
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0, 1, 0]
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1, 0.75, 0.35],
      ...           [0.8, 0.4, 0.3, 0.5, 0.6, 0.2, 0.7, 0.1, 0.9, 0.65]]
      >>> size = jm.delong_sample_size(scores, labels, power=0.8)
      >>> round(float(size.num_positive), 1), round(float(size.num_negative), 1)
      (11.1, 11.1)

    References:
      Obuchowski & McClish (1997), Statistics in Medicine 16:1529-1542.
    """
    z_alpha = _normal_quantile(1 - _level(alpha, "alpha") / 2)
    z_power = _normal_quantile(_level(power, "power"))
    difference, null_sd, alternative_sd, positives, negatives = _two_model_variances(scores, labels)
    needed = positives * (z_alpha * null_sd + z_power * alternative_sd) ** 2 / difference**2
    return SampleSize(needed, needed * negatives / positives)
