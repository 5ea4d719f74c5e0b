"""Decision curves (Vickers & Elkin 2006): net benefit of a model against treating all or none.

Every quantity is read off the confusion counts of ``probs >= t`` at each threshold
probability t, which `counts.confusion_counts` gives for the whole grid from one sort of the
probabilities; one compiled program then turns the counts into the curves.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import checks, coercion
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics.counts import Counts, confusion_counts


class DecisionCurve(NamedTuple):
    """A decision curve: net benefit of a model, of treating all, and interventions avoided.

    What `decision_curve` returns. Treating none has net benefit 0 at every threshold, so it
    has no field. Every field but `thresholds` has shape ``[*batch, *t]``: `treat_all` depends
    on the labels and weights only, so it repeats along batch axes that only the probabilities
    have (models scored on the same samples).

    Attributes:
      thresholds: ``[*t]`` the threshold probabilities, in the float type of the results.
      net_benefit: the model's net benefit, ``TP/n - FP/n * t / (1 - t)``.
      treat_all: the net benefit of treating everyone, ``prevalence - (1 - prevalence) *
        t / (1 - t)``.
      interventions_avoided: net interventions avoided per patient,
        ``(net_benefit - treat_all) / (t / (1 - t))`` (dcurves' ``net_intervention_avoided``;
        times 100 for the usual "per 100 patients").
      standardized_net_benefit: ``net_benefit / prevalence``, the fraction of the largest
        possible net benefit (NaN without positives).
    """

    thresholds: Array
    net_benefit: Array
    treat_all: Array
    interventions_avoided: Array
    standardized_net_benefit: Array


# t / (1 - t) is 0 at t = 0 and infinite at t = 1, and no other value is a probability
_THRESHOLD = checks.Rule(
    lambda t: ~((t > 0) & (t < 1)),
    "lie strictly between 0 and 1 (threshold probabilities t, weighed by the odds t / (1 - t))",
)


def decision_curve(
    probs: ArrayLike,
    labels: ArrayLike,
    thresholds: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> DecisionCurve:
    r"""Decision curve analysis: net benefit, treat-all, interventions avoided over a grid.

    Matches ``dcurves.dca`` (its ``net_benefit`` of the model and of ``"all"``, and
    ``net_intervention_avoided`` with its default ``nper=1``) for binary outcomes without
    ``harm``; dcurves' row ``"none"`` is 0 everywhere. A patient is treated iff ``p >= t``, as in
    dcurves (which lowers risks of exactly 0 by an epsilon, so that at t = 0 it treats nobody
    with a risk of 0; t = 0 is refused here, and inside (0, 1) nothing changes). With weights
    (dcurves has none), counts and n are sums of weights (n the total weight):

    .. math::

      \mathrm{NB}(t) = \frac{TP(t)}{n} - \frac{FP(t)}{n} \frac{t}{1 - t}, \qquad
      \mathrm{NB}_{all}(t) = \frac{P}{n} - \frac{N}{n} \frac{t}{1 - t}, \qquad
      \mathrm{avoided}(t) = \frac{\mathrm{NB}(t) - \mathrm{NB}_{all}(t)}{t / (1 - t)}
        = \frac{TN(t)}{n} - \frac{FN(t)}{n} \frac{1 - t}{t}

    (the last form is how it is computed, without the cancellation of the first), and the
    standardized net benefit is :math:`\mathrm{NB}(t) \cdot n / P`. A zero total weight gives
    NaN. Thresholds outside (0, 1), NaN included, raise `ValueError` when concrete and give NaN
    at that threshold when traced; bad probabilities, labels and weights as docs/conventions.md
    says (NaN for that batch element under `jax.jit`).

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class (the risk), in [0, 1]; e.g.
        ``[M, n]`` for M models scored on the same samples.
      labels: ``[*batch, n]`` outcomes in {0, 1} or bool, broadcasting against `probs`.
      thresholds: ``[*t]`` threshold probabilities in (0, 1), any shape; one grid for all.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `probs`.

    Returns:
      `DecisionCurve` whose curves have shape ``[*batch, *t]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> curve = jm.decision_curve(probs, labels, [0.2, 0.5])
      >>> curve.net_benefit.tolist(), curve.treat_all.tolist()  # treat none: 0
      ([0.40625, 0.25], [0.375, 0.0])
      >>> curve.interventions_avoided.tolist(), curve.standardized_net_benefit.tolist()
      ([0.125, 0.25], [0.8125, 0.5])

    References:
      Vickers & Elkin (2006), "Decision curve analysis: a novel method for evaluating prediction
      models", Medical Decision Making 26:565-574. Vickers, Cronin, Elkin & Gonen (2008),
      "Extensions to decision curve analysis", BMC Medical Informatics and Decision Making 8:53.
      Kerr, Brown, Zhu & Janes (2016), "Assessing the clinical impact of risk prediction models
      with decision curves", Journal of Clinical Oncology 34:2534-2540.
    """
    return _curve(*_counts_at(probs, labels, thresholds, sample_weight))


def net_benefit(
    probs: ArrayLike,
    labels: ArrayLike,
    thresholds: ArrayLike,
    *,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Net benefit of treating iff ``p >= t``, at each threshold probability t of a grid.

    Matches the model rows of ``dcurves.dca``'s ``net_benefit`` (without ``harm``); the
    formula, weights and undefined values are `decision_curve`'s:

    .. math:: \mathrm{NB}(t) = \frac{TP(t)}{n} - \frac{FP(t)}{n} \frac{t}{1 - t}

    It takes ``sample_weight``, so `bootstrap` gives intervals for every model and threshold
    in one call (the probabilities are sorted once per call, not per resample).

    Args:
      probs: ``[*batch, n]`` probabilities of the positive class, in [0, 1].
      labels: ``[*batch, n]`` outcomes in {0, 1} or bool, broadcasting against `probs`.
      thresholds: ``[*t]`` threshold probabilities in (0, 1), any shape.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `probs`.

    Returns:
      A float array of shape ``[*batch, *t]``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> probs = [[0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1],   # two models,
      ...          [0.3, 0.9, 0.8, 0.2, 0.7, 0.4, 0.6, 0.1]]   # the same patients
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> grid = [0.2, 0.5]
      >>> jm.net_benefit(probs, labels, grid).tolist()  # at 0.5: 3/8 - 1/8, 1/8 - 3/8
      [[0.40625, 0.25], [0.40625, -0.25]]
      >>> result = jm.bootstrap(
      ...     lambda p, y, sample_weight: jm.net_benefit(p, y, grid, sample_weight=sample_weight),
      ...     probs, labels, key=jax.random.key(0), num_resamples=200)
      >>> result.low.shape, bool((result.low <= result.estimate).all())
      ((2, 2), True)
    """
    return _curve(*_counts_at(probs, labels, thresholds, sample_weight)).net_benefit


def _counts_at(probs, labels, thresholds, sample_weight):
    """(counts at the grid, the grid, its odds, flags of bad probabilities and thresholds).

    Shapes are checked here first so that errors name `probs`; `confusion_counts` checks the
    labels and weights. The probabilities go to it as given, so that eager float64 input is
    compared with the thresholds exactly. The odds t / (1 - t) of concrete thresholds are
    computed on the host in their own precision: in float32, 1 - t loses t's last digits near
    1 (the odds of float32(0.99) are 1e-6 off 99), and treat-all's net benefit there is -85.
    """
    given = coercion.as_real_array(probs, "probs", host=True, keep_split=True)
    arrays = [
        ("probs", given),
        ("labels", coercion.as_real_array(labels, "labels", host=True, keep_split=True)),
    ]
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", host=True, keep_split=True)
        arrays.append(("sample_weight", weights))
    coercion.reject_single_sample_rows(arrays)
    coercion.sample_axis_shapes(arrays)
    grid = coercion.as_real_array(thresholds, "thresholds", min_ndim=0, host=True)
    bad_thresholds = checks.check(grid, "thresholds", _THRESHOLD, sample_axes=0)
    bad_probs = checks.check(given, "probs", checks.PROBABILITY)
    if not jnp.issubdtype(given.dtype, jnp.floating):
        # a 0/1 test (a risk of 0 or 1) is valid input: no warning that the arguments look
        # swapped, which `confusion_counts` gives 0/1 integer scores
        given = given.astype(float_dtype())
    counts = confusion_counts(given, labels, grid, sample_weight=sample_weight)
    odds = grid / (1 - grid)  # numpy when the thresholds are concrete (and then in (0, 1))
    return counts, grid, odds, bad_probs, bad_thresholds


@jax.jit
def _curve(counts: Counts, thresholds, odds, bad_probs, bad_thresholds) -> DecisionCurve:
    dtype = float_dtype()
    marked = (counts.tp < 0) | (counts.fp < 0) | (counts.fn < 0) | (counts.tn < 0)
    tp, fp, fn, tn = (c.astype(dtype) for c in counts)
    odds = odds.astype(dtype)
    total = tp + fp + fn + tn
    model = tp - fp * odds
    curves = (
        safe_divide(model, total),  # net benefit
        safe_divide((tp + fn) - (fp + tn) * odds, total),  # treat all
        safe_divide(tn - fn / odds, total),  # interventions avoided
        safe_divide(model, tp + fn),  # standardized net benefit
    )
    # a batch element with a bad probability (traced) is NaN at every threshold
    bad = marked | bad_probs.reshape(bad_probs.shape + (1,) * odds.ndim) | bad_thresholds
    thresholds = thresholds.astype(dtype)
    return DecisionCurve(thresholds, *(jnp.where(bad, jnp.nan, curve) for curve in curves))
