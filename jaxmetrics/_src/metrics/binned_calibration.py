"""Calibration read off bins: the Hosmer-Lemeshow test and the debiased calibration error.

Both take their bins from `reliability_table` (which checks the inputs, bins concrete
probabilities on the host as `expected_calibration_error` does, and marks a bad batch element
under `jax.jit` with count -1 or NaN), then run one small compiled program on the table. The
logistic recalibration and Spiegelhalter's test are in `recalibration`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax.scipy.special import gammaincc

from jaxmetrics._src.core import batching, coercion
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike, BinningStrategy
from jaxmetrics._src.metrics.reliability import ReliabilityTable, reliability_table


class HosmerLemeshowTest(NamedTuple):
    """The Hosmer-Lemeshow goodness-of-fit test (what `hosmer_lemeshow_test` returns).

    Attributes:
      statistic: ``[*batch]`` the chi-squared statistic over the non-empty groups.
      p_value: ``[*batch]`` its upper tail under chi-squared with `degrees_of_freedom`.
      degrees_of_freedom: ``[*batch]`` int32, the number of non-empty groups minus 2 (-1 for a
        batch element whose input was bad under `jax.jit`).
    """

    statistic: Array
    p_value: Array
    degrees_of_freedom: Array


def _bad_rows(table: ReliabilityTable) -> Array:
    """Batch elements `reliability_table` marked bad: a count of -1 (integer) or NaN (float)."""
    return jnp.any(~(table.count >= 0), axis=-1)


@jax.jit
def _hosmer_lemeshow(table: ReliabilityTable) -> HosmerLemeshowTest:
    dtype = float_dtype()
    count = table.count.astype(dtype)
    filled = count > 0
    observed = jnp.where(filled, table.fraction_positive, 0)
    expected = jnp.where(filled, table.mean_predicted, 0)
    # (O - E)^2 / E + (O - E)^2 / (n - E), the positives' and the negatives' cells together,
    # = n (o - e)^2 / (e (1 - e)) of the group's rates o = O / n and e = E / n: of the rates, so
    # that weights of 1e30 do not overflow (O - E)^2 and E (n - E) (the statistic was inf / inf)
    spread = expected * (1 - expected)
    terms = jnp.where(
        spread > 0,
        count * safe_divide((observed - expected) ** 2, spread),
        jnp.where(observed == expected, 0, jnp.inf),  # a group whose probabilities are all 0 or 1
    )
    statistic = jnp.where(filled, terms, 0).sum(-1)
    degrees = filled.sum(-1).astype(jnp.int32) - 2
    statistic = jnp.where(degrees >= 1, statistic, jnp.nan)
    p_value = gammaincc(jnp.maximum(degrees, 1).astype(dtype) / 2, statistic / 2)
    result = HosmerLemeshowTest(statistic, p_value, degrees)
    return batching.nan_where(_bad_rows(table), result)


def hosmer_lemeshow_test(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_groups: int = 10,
    sample_weight: ArrayLike | None = None,
) -> HosmerLemeshowTest:
    r"""Hosmer-Lemeshow test of calibration over groups of risk ("deciles of risk").

    The samples are cut into `num_groups` groups at the quantiles of `probs` (the bins of
    ``reliability_table(strategy="quantile")``: right-closed, tied probabilities in one group),
    as R's ``ResourceSelection::hoslem.test`` cuts them; in each non-empty group g the observed
    positives :math:`O_g` are compared with the expected :math:`E_g = \sum_{i \in g} w_i p_i`:

    .. math::

      H = \sum_g \frac{(O_g - E_g)^2}{E_g (1 - E_g / n_g)}, \qquad
      p = P(\chi^2_{G - 2} \ge H)

    with :math:`n_g` the group's weight and G the number of non-empty groups.

    Caveats (why `spiegelhalter_test`, `calibration_intercept`, `calibration_slope` and a
    reliability diagram say more): the answer depends on the grouping (the number of groups
    and how ties are split change H and p; different packages give different p-values on the
    same data, Hosmer et al. 1997); the power is low at small n (a miscalibrated model often
    passes); at large n it rejects for miscalibration too small to matter (Kramer & Zimmerman
    2007; Paul, Pennell & Lemeshow 2013 scale the groups with n). G - 2 degrees of freedom is
    the rule for a model fitted on these data; for probabilities from elsewhere (external
    validation) G is often argued instead (take ``chi2.sf(statistic, df + 2)``).

    Ties that leave groups empty lower G. Defined with one class only. NaN (statistic and
    p-value) with fewer than three non-empty groups, a zero total weight, and under `jax.jit`
    for a bad batch element (whose degrees of freedom are then -1); a group whose probabilities
    are all 0 (or all 1) with a positive (negative) in it gives an infinite statistic. Bad input
    and precision as `reliability_table`; a sample axis of length 1 under batch axes raises.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_groups: the number of groups, an int >= 3.
      sample_weight: optional ``[*batch, n]`` non-negative frequency weights: an integer
        weight w counts the sample w times, in the quantiles too, so it can be bootstrapped.

    Returns:
      `HosmerLemeshowTest` of arrays of shape ``[*batch]``.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> rng = np.random.default_rng(0)
      >>> probs = rng.uniform(0.05, 0.95, 1000)
      >>> labels = rng.random(1000) < probs**2   # miscalibrated
      >>> test = jm.hosmer_lemeshow_test(probs, labels)
      >>> round(float(test.statistic), 1), float(test.p_value) < 1e-6, int(test.degrees_of_freedom)
      (159.4, True, 8)

    References:
      Hosmer & Lemeshow (1980), "Goodness of fit tests for the multiple logistic regression
      model", Communications in Statistics A 9:1043-1069. Hosmer, Hosmer, le Cessie & Lemeshow
      (1997), Statistics in Medicine 16:965-980. Kramer & Zimmerman (2007), Critical Care
      Medicine 35:2052-2056. Paul, Pennell & Lemeshow (2013), Statistics in Medicine
      32:67-80.
    """
    num_groups = check_count(num_groups, "num_groups", minimum=3)
    coercion.reject_single_sample_rows([("probs", probs)])
    table = reliability_table(
        probs, labels, num_bins=num_groups, strategy="quantile", sample_weight=sample_weight
    )
    return _hosmer_lemeshow(table)


@functools.partial(jax.jit, static_argnames="squared")
def _debiased(table: ReliabilityTable, *, squared: bool) -> Array:
    dtype = float_dtype()
    count = table.count.astype(dtype)
    share = safe_divide(count, count.sum(-1, keepdims=True))
    fraction = table.fraction_positive
    # a bin of one sample (weight <= 1) has no variance estimate: it adds nothing, as in the
    # authors' code; with no bin of more, nothing is estimated
    estimable = count > 1
    variance = safe_divide(fraction * (1 - fraction), count - 1)
    terms = (fraction - table.mean_predicted) ** 2 - variance
    value = jnp.where(estimable, share * terms, 0).sum(-1)
    value = jnp.where(estimable.any(-1), value, jnp.nan)
    if not squared:
        value = jnp.sqrt(jnp.maximum(value, 0))
    return batching.nan_where(_bad_rows(table), value)


def debiased_calibration_error(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    num_bins: int = 15,
    strategy: BinningStrategy = "uniform",
    squared: bool = False,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Debiased L2 calibration error over bins (Kumar, Liang & Ma 2019).

    The binned L2 calibration error (``expected_calibration_error(norm="l2")``) is biased
    upwards: even calibrated probabilities show a gap in every bin, whose expected square is
    the variance of the bin's fraction of positives. This estimator subtracts that variance,
    estimated without bias, in every bin. Equal to the authors' ``uncertainty-calibration``
    package on the same bins (its ``unbiased_l2_ce``; ``calibration.utils._get_ce(probs,
    labels, 2, True, num_bins, get_equal_prob_bins)`` for the default equal-width bins):

    .. math::

      \widehat{E^2} = \sum_{b:\, n_b > 1} \frac{n_b}{n}
        \left[(\bar y_b - \bar p_b)^2 - \frac{\bar y_b (1 - \bar y_b)}{n_b - 1}\right],
      \qquad \widehat{E} = \sqrt{\max(0, \widehat{E^2})}

    with the bins, :math:`n_b`, :math:`\bar y_b` and :math:`\bar p_b` of `reliability_table`
    (the bins of `expected_calibration_error`: 15 equal-width bins by default). A bin with
    :math:`n_b \le 1` adds nothing (its variance has no estimate); with no bin of more, and
    for a zero total weight, the value is NaN. With `squared`, :math:`\widehat{E^2}` itself is
    returned: unbiased for the binned squared error, and negative when the gaps are smaller
    than chance, which suits an average over folds or a bootstrap interval better than the
    clipped root (biased at 0, as the ECE is). Defined with one class only.

    Bins, bad input and precision as `reliability_table`; a sample axis of length 1 under
    batch axes raises.

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `probs`.
      num_bins: the number of bins, an int >= 1.
      strategy: "uniform" (equal-width bins) or "quantile" (equal-count bins, edges at the
        quantiles of `probs`; the authors' equal-mass bins put them between order statistics).
      squared: return :math:`\widehat{E^2}`, unclipped, instead of its clipped root.
      sample_weight: optional ``[*batch, n]`` non-negative frequency weights: :math:`n_b` is
        the bin's total weight (an integer weight w counts the sample w times), so it can be
        bootstrapped.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> rng = np.random.default_rng(0)
      >>> probs = rng.uniform(0, 1, 1000)
      >>> labels = rng.random(1000) < probs  # calibrated: the binned L2 error is all noise
      >>> l2 = jm.expected_calibration_error(probs, labels, norm="l2")
      >>> round(float(l2), 3), round(float(jm.debiased_calibration_error(probs, labels)), 3)
      (0.044, 0.0)
      >>> l2 = jm.expected_calibration_error(probs**2, labels, norm="l2")  # miscalibrated
      >>> round(float(l2), 3), round(float(jm.debiased_calibration_error(probs**2, labels)), 3)
      (0.194, 0.188)

    References:
      Kumar, Liang & Ma (2019), "Verified uncertainty calibration", Advances in Neural
      Information Processing Systems 32, section 5.
    """
    if not isinstance(squared, bool):
        raise TypeError(f"`squared` must be a bool; got {squared!r}.")
    coercion.reject_single_sample_rows([("probs", probs)])
    table = reliability_table(
        probs, labels, num_bins=num_bins, strategy=strategy, sample_weight=sample_weight
    )
    return _debiased(table, squared=squared)
