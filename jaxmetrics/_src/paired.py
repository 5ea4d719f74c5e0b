"""Paired comparison of two models from one bootstrap: the interval and p-value of a difference.

Both models are evaluated on the same resampled rows by `bootstrap` (a metric with a model axis),
so the noise common to both cancels in their difference.
"""

from __future__ import annotations

from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import validation
from jaxmetrics._src.bootstrap import BootstrapResult
from jaxmetrics._src.typing import Array


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

    Conventions: resamples where either value is undefined (NaN) are dropped. The interval is
    the percentile one whatever `method` made `result`, at this function's `confidence`.
    Negative model indices count from the end. A `result` without a model axis raises
    `ValueError`; a model index that is not an int raises `TypeError`, and one out of range
    `ValueError`.

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
    if result.samples.ndim < 2:
        raise ValueError(
            "`result` has no model axis: bootstrap a metric of scores shaped [M, n] "
            f"(its samples have shape {result.samples.shape})."
        )
    confidence = validation.check_probability_level(confidence)
    num_models = result.samples.shape[1]
    for name, model in (("first", first), ("second", second)):
        if isinstance(model, bool) or not isinstance(model, int | np.integer):
            raise TypeError(f"`{name}` must be a model index (int); got {model!r}.")
        if not -num_models <= model < num_models:
            raise ValueError(
                f"`{name}` must be a model index in [0, {num_models}) (the samples hold "
                f"{num_models} models); got {model}."
            )
    differences = result.samples[:, first] - result.samples[:, second]
    defined = ~jnp.isnan(differences)
    count = defined.sum(0)
    alpha = (1 - confidence) / 2
    low = jnp.nanquantile(differences, alpha, axis=0)
    high = jnp.nanquantile(differences, 1 - alpha, axis=0)
    at_most_zero = jnp.where(defined & (differences <= 0), 1, 0).sum(0) / count
    at_least_zero = jnp.where(defined & (differences >= 0), 1, 0).sum(0) / count
    p_value = jnp.minimum(1.0, 2 * jnp.minimum(at_most_zero, at_least_zero))
    estimate = result.estimate[first] - result.estimate[second]
    return PairedDifference(estimate, low, high, p_value)
