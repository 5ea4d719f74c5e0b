"""Bootstrap comparisons of two models: the interval and p-value of a difference.

Paired: both models are evaluated on the same resampled rows by `bootstrap` (a metric with a
model axis), so the noise common to both cancels in their difference (`paired_difference`,
`bootstrap_test`). Unpaired: two `bootstrap` calls on independent data sets, whose resamples of
the same index are paired as independent draws (`unpaired_difference`). The normal-theory tests
are pROC's bootstrap test, D = difference / sd(resampled differences).
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from jaxmetrics._src.core import kernels
from jaxmetrics._src.core.options import check_probability_level
from jaxmetrics._src.core.typing import Array
from jaxmetrics._src.stats.bootstrap import BootstrapResult
from jaxmetrics._src.stats.delong import z_statistic


class PairedDifference(NamedTuple):
    """Bootstrap comparison of two models evaluated on the same resamples.

    What `paired_difference` returns. Fields have the metric's output shape less its model
    axis, ``[*rest]`` (a scalar for a metric of scores ``[M, n]``).

    Attributes:
      estimate: ``[*rest]`` ``metric(first) - metric(second)`` on the full data.
      low: ``[*rest]`` the lower end of the percentile interval of the paired differences.
      high: ``[*rest]`` the upper end of that interval.
      p_value: ``[*rest]`` the two-sided bootstrap p-value of "no difference",
        ``min(1, 2 * min(share of differences <= 0, share >= 0))``.
    """

    estimate: Array  # metric(first) - metric(second) on the full data
    low: Array  # percentile interval of the paired differences
    high: Array
    p_value: Array  # two-sided: 2 * min(share of differences <= 0, share >= 0), capped at 1


def paired_difference(
    result: BootstrapResult, *, first: int = 0, second: int = 1, confidence: float = 0.95
) -> PairedDifference:
    r"""Percentile interval and bootstrap p-value of ``metric[first] - metric[second]``.

    `result` must come from `bootstrap` of a metric whose output has a model axis first (scores
    ``[M, n]`` give samples ``[num_resamples, M]``), so that both models were evaluated on the
    same resampled rows: the pairing is what makes the interval of the difference much
    narrower than the two separate intervals, as the resampling noise common to both models
    cancels. scikit-learn has no equivalent; for ROC AUC, `delong_test` is the analytic
    alternative.

    .. math:: d_b = \theta^*_{b,\mathrm{first}} - \theta^*_{b,\mathrm{second}}, \qquad
              [q_\alpha(d),\ q_{1-\alpha}(d)], \qquad
              p = \min\left(1,\ \frac{2}{B} \min\left(\#\{d_b \le 0\},\ \#\{d_b \ge 0\}\right)
              \right)

    with :math:`\alpha = (1 - \mathrm{confidence}) / 2` and B the number of resamples where
    both values are defined.

    Resamples where either value is undefined (NaN) are dropped. The interval is the percentile
    one whatever `method` made `result`, at this function's `confidence`. Negative model indices
    count from the end. A `result` that is not a `BootstrapResult` (a plain tuple) raises
    `TypeError`, one without a model axis `ValueError`; a model index that is not an int raises
    `TypeError`, and one out of range `ValueError`.

    Args:
      result: a `BootstrapResult` whose samples have shape ``[num_resamples, M, *rest]``.
      first: the index of the first model on the model axis.
      second: the index of the second model, subtracted from the first.
      confidence: the coverage of the two-sided interval, in (0, 1).

    Returns:
      `PairedDifference` whose fields have shape ``[*rest]``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1],  # model A: AUC 0.8125
      ...           [0.9, 0.1, 0.7, 0.6, 0.4, 0.3, 0.2, 0.8]]  # model B: AUC 0.4375
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> key = jax.random.key(0)
      >>> result = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=200)
      >>> round(float(jm.paired_difference(result).estimate), 4)  # AUC A - AUC B
      0.375

    References:
      Efron & Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall, ch. 16.
    """
    differences = _model_differences(result, first, second)
    confidence = check_probability_level(confidence)
    estimate = result.estimate[first] - result.estimate[second]
    return _paired_summary(differences, estimate, (1 - confidence) / 2)


@kernels.sample_jit
def _paired_summary(differences: Array, estimate: Array, alpha: Array) -> PairedDifference:
    """`PairedDifference` from the resampled differences, in one compiled program (eager jnp
    operations compiled ten small programs, about 0.3 s of a report's first run)."""
    defined = ~jnp.isnan(differences)
    count = defined.sum(0)
    low = jnp.nanquantile(differences, alpha, axis=0)
    high = jnp.nanquantile(differences, 1 - alpha, axis=0)
    at_most_zero = jnp.where(defined & (differences <= 0), 1, 0).sum(0) / count
    at_least_zero = jnp.where(defined & (differences >= 0), 1, 0).sum(0) / count
    p_value = jnp.minimum(1.0, 2 * jnp.minimum(at_most_zero, at_least_zero))
    return PairedDifference(estimate, low, high, p_value)


def _model_differences(result: BootstrapResult, first: int, second: int) -> Array:
    """``samples[:, first] - samples[:, second]``, after checking the model axis and indices."""
    _check_result(result, "result")
    if result.samples.ndim < 2:
        raise ValueError(
            "`result` has no model axis: bootstrap a metric of scores shaped [M, n] "
            f"(its samples have shape {result.samples.shape})."
        )
    num_models = result.samples.shape[1]
    for name, model in (("first", first), ("second", second)):
        if isinstance(model, bool) or not isinstance(model, int | np.integer):
            raise TypeError(f"`{name}` must be a model index (int); got {model!r}.")
        if not -num_models <= model < num_models:
            raise ValueError(
                f"`{name}` must be a model index in [0, {num_models}) (the samples hold "
                f"{num_models} models); got {model}."
            )
    return result.samples[:, first] - result.samples[:, second]


def _check_result(result: object, name: str) -> None:
    # a plain tuple has lost the field names (`tuple(result)`, a JSON round trip)
    if not isinstance(result, BootstrapResult):
        raise TypeError(
            f"`{name}` must be a BootstrapResult (what `bootstrap` returns); got "
            f"{type(result).__name__}."
        )


def _normal_test(estimate: Array, differences: Array) -> tuple[Array, Array, Array]:
    """(standard error, pROC's D, its two-sided normal p-value) from resampled differences."""
    standard_error = jnp.nanstd(differences, axis=0, ddof=1)
    statistic = z_statistic(estimate, standard_error)
    return standard_error, statistic, 2 * ndtr(-jnp.abs(statistic))


class BootstrapTest(NamedTuple):
    """pROC's bootstrap test of two models on the same resamples (what `bootstrap_test`
    returns). Fields have the metric's output shape less its model axis, ``[*rest]``.

    Attributes:
      estimate: ``[*rest]`` ``metric(first) - metric(second)`` on the full data.
      standard_error: ``[*rest]`` the standard deviation (``ddof=1``) of the paired
        differences over the resamples where both are defined.
      statistic: ``[*rest]`` pROC's D, ``estimate / standard_error``.
      p_value: ``[*rest]`` the two-sided normal p-value ``2 Phi(-|D|)``.
    """

    estimate: Array
    standard_error: Array
    statistic: Array
    p_value: Array


def bootstrap_test(result: BootstrapResult, *, first: int = 0, second: int = 1) -> BootstrapTest:
    r"""pROC's bootstrap test of ``metric[first] - metric[second]`` on the same resamples.

    Matches pROC's `roc.test(roc_a, roc_b, method="bootstrap", paired=TRUE)` (for AUC: a
    `bootstrap` of `roc_auc` with ``stratify=labels`` is pROC's default stratified resampling):
    the difference on the full data divided by the standard deviation of the paired
    differences, referred to the normal distribution. `paired_difference` reads the same
    samples for a percentile interval and a percentile p-value instead.

    .. math:: D = \frac{\hat\theta_\mathrm{first} - \hat\theta_\mathrm{second}}
              {\mathrm{sd}(d)}, \qquad
              d_b = \theta^*_{b,\mathrm{first}} - \theta^*_{b,\mathrm{second}}, \qquad
              p = 2\,\Phi(-|D|)

    Resamples where either value is undefined (NaN) are dropped. A zero standard deviation gives
    D = 0 and p = 1 when the estimate is 0 too (pROC's special case), else D = ±inf and p = 0.
    `result` and the model indices are checked as in `paired_difference`.

    Args:
      result: a `BootstrapResult` whose samples have shape ``[num_resamples, M, *rest]``.
      first: the index of the first model on the model axis.
      second: the index of the second model, subtracted from the first.

    Returns:
      `BootstrapTest` whose fields have shape ``[*rest]``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1],  # model A: AUC 0.8125
      ...           [0.9, 0.1, 0.7, 0.6, 0.4, 0.3, 0.2, 0.8]]  # model B: AUC 0.4375
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0),
      ...                       num_resamples=200, stratify=labels)
      >>> test = jm.bootstrap_test(result)
      >>> float(test.estimate), bool(test.statistic > 0)
      (0.375, True)

    References:
      Robin et al. (2011), "pROC: an open-source package for R and S+ to analyze and compare
      ROC curves", BMC Bioinformatics 12:77. Efron & Tibshirani (1993), An Introduction to the
      Bootstrap, Chapman & Hall.
    """
    differences = _model_differences(result, first, second)
    estimate = result.estimate[first] - result.estimate[second]
    return BootstrapTest(estimate, *_normal_test(estimate, differences))


class UnpairedDifference(NamedTuple):
    """Bootstrap comparison of a metric on two independent data sets (what
    `unpaired_difference` returns). Fields have the metric's output shape ``[*shape]``.

    Attributes:
      estimate: ``[*shape]`` ``metric(data a) - metric(data b)`` on the full data.
      low: ``[*shape]`` the lower end of the percentile interval of the differences of
        resamples of the same index.
      high: ``[*shape]`` the upper end of that interval.
      statistic: ``[*shape]`` pROC's D, ``estimate / sd(differences)``.
      p_value: ``[*shape]`` the two-sided normal p-value ``2 Phi(-|D|)``.
    """

    estimate: Array
    low: Array
    high: Array
    statistic: Array
    p_value: Array


def unpaired_difference(
    result_a: BootstrapResult, result_b: BootstrapResult, *, confidence: float = 0.95
) -> UnpairedDifference:
    r"""Percentile interval and pROC's bootstrap test of a metric's difference on two data sets.

    `result_a` and `result_b` come from two `bootstrap` calls on independent data (two
    cohorts, two test sets), each resampled within itself; resample b of the one is paired
    with resample b of the other, which are independent draws, so their difference is a draw
    of the bootstrap distribution of the difference. The test is pROC's
    `roc.test(roc_a, roc_b, method="bootstrap", paired=FALSE)`: the difference on the full
    data divided by the standard deviation of the resampled differences, referred to the
    normal distribution (not the percentile p-value of `paired_difference`).

    .. math:: d_b = \theta^{a*}_b - \theta^{b*}_b, \qquad
              [q_\alpha(d),\ q_{1-\alpha}(d)], \qquad
              D = \frac{\hat\theta^a - \hat\theta^b}{\mathrm{sd}(d)}, \qquad
              p = 2\,\Phi(-|D|)

    with :math:`\alpha = (1 - \mathrm{confidence}) / 2`.

    The two bootstraps must use different keys (e.g. from `jax.random.split`): two data sets of
    the same size bootstrapped with one key get the same weight vectors, which ties their
    resamples together. Resamples where either value is undefined (NaN) are dropped. A zero
    standard deviation gives D = 0 and p = 1 when the estimate is 0 too, else D = ±inf and
    p = 0. Results of different numbers of resamples or metric shapes raise `ValueError`.

    Args:
      result_a: the `BootstrapResult` of the metric on the first data set, samples
        ``[num_resamples, *shape]``.
      result_b: that of the same metric on the second data set, of the same shapes.
      confidence: the coverage of the two-sided interval, in (0, 1).

    Returns:
      `UnpairedDifference` whose fields have shape ``[*shape]``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> key_a, key_b = jax.random.split(jax.random.key(0))
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> cohort_a = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # AUC 0.8125
      >>> cohort_b = [0.9, 0.1, 0.7, 0.6, 0.4, 0.3, 0.2, 0.8]  # AUC 0.4375
      >>> a = jm.bootstrap(jm.roc_auc, cohort_a, labels, key=key_a, num_resamples=200)
      >>> b = jm.bootstrap(jm.roc_auc, cohort_b, labels, key=key_b, num_resamples=200)
      >>> difference = jm.unpaired_difference(a, b)
      >>> float(difference.estimate), bool(difference.low < 0.375 < difference.high)
      (0.375, True)

    References:
      Robin et al. (2011), BMC Bioinformatics 12:77. Efron & Tibshirani (1993), An
      Introduction to the Bootstrap, Chapman & Hall, ch. 16.
    """
    confidence = check_probability_level(confidence)
    _check_result(result_a, "result_a")
    _check_result(result_b, "result_b")
    if result_a.samples.shape != result_b.samples.shape:
        raise ValueError(
            "`result_b` must hold as many resamples of a metric of the same shape as "
            f"`result_a`: expected samples of shape {tuple(result_a.samples.shape)}, got "
            f"{tuple(result_b.samples.shape)}."
        )
    differences = result_a.samples - result_b.samples
    alpha = (1 - confidence) / 2
    low = jnp.nanquantile(differences, alpha, axis=0)
    high = jnp.nanquantile(differences, 1 - alpha, axis=0)
    estimate = result_a.estimate - result_b.estimate
    _, statistic, p_value = _normal_test(estimate, differences)
    return UnpairedDifference(estimate, low, high, statistic, p_value)
