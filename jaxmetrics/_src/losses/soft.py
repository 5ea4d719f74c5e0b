"""Soft confusion counts and the losses read off them (soft F-beta, precision, recall), with the
input check every training loss shares; the ranking losses are in `ranking`, `partial_auc`
and `listwise`.

Every loss takes predictions first (logits or probabilities), then 0/1 labels, with keyword-only
options; samples lie on the last axis and leading axes are batch axes, so a loss returns one value
per leading index (call ``.mean()`` to train on several at once). An optional `sample_weight`
(0 for padding) makes padded batches exact. Batches without positives or without negatives follow
each loss's documented rule.

Bad input as for the metrics: a NaN/inf prediction, a label other than 0/1 or a negative or
non-finite weight raises `ValueError` when the values are concrete, and makes that batch
element's loss NaN under jit/grad (padding therefore needs valid labels, with weight 0). Float
options (`temperature`, `margin`, `beta`, ...) may be traced, e.g. a schedule inside a jitted
step: a bad value raises `ValueError` when concrete and makes the loss NaN when traced.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.options import check_real
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics import rates as rates_lib
from jaxmetrics._src.metrics.counts import Counts


def loss_inputs(
    predictions: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None, name: str
) -> tuple[Array, Array, Array, Array]:
    """(predictions, labels, weights) as float arrays, and `invalid` of the batch shape.

    `name` is the predictions' argument name ("logits" or "probs"), used in every error. A
    sample axis of length 1 under batch axes (``[n, 1]`` logits) raises `ValueError`: every
    loss here compares samples within a batch element (pairs, lists, sets), so it would be 0 or
    constant, with no gradient.
    """
    predictions = coercion.as_scores(predictions, name, host=True)
    labels = coercion.as_real_array(labels, "labels", host=True)
    weights = (
        None
        if sample_weight is None
        else coercion.as_real_array(sample_weight, "sample_weight", host=True)
    )
    named = [(name, predictions), ("labels", labels), ("sample_weight", weights)]
    coercion.reject_single_sample_rows(named)  # [n, 1] logits: n one-sample batches, no signal
    batch_shape = coercion.sample_axis_shapes(named)
    invalid = checks.check(predictions, name, checks.FINITE_VALUE) | checks.check_binary_labels(
        labels
    )
    dtype = predictions.dtype
    if weights is None:
        weights = coercion.full(labels.shape, 1, dtype)
    else:
        invalid = invalid | checks.check_weights(weights)
    invalid = checks.array_namespace(invalid).broadcast_to(invalid, batch_shape)
    predictions, labels, weights = coercion.device_arrays(dtype, predictions, labels, weights)
    return predictions, labels, weights, invalid


def option_flag(value: Any, name: str, rule: checks.Rule) -> np.ndarray | Array:
    """Check a float option (`temperature`, `margin`, ...), which may be traced.

    The option is a number (`options.check_real`: never a bool or a string) or a traced scalar
    (a schedule inside a jitted step), and `checks.check` runs `rule` on it: a known bad value
    raises ``ValueError("`name` must <expected>; got <value>.")``; a traced one gives a scalar
    flag that the caller ORs into `invalid`, so that the loss is NaN.
    """
    value = check_real(value, name, traced=True)
    return checks.check(value, name, rule, sample_axes=0, option=True)


# at an infinite temperature ``l / T`` is 0 and ``T l / T`` is NaN
_TEMPERATURE = checks.Rule(lambda t: ~((t > 0) & (t < np.inf)), "be > 0 and finite")


def check_temperature(temperature: float) -> np.ndarray | Array:
    """`option_flag` of a temperature: finite and > 0."""
    return option_flag(temperature, "temperature", _TEMPERATURE)


def check_finite_option(value: float, name: str) -> np.ndarray | Array:
    """`option_flag` of an option that may be any finite real (`margin`, `threshold`)."""
    return option_flag(value, name, checks.FINITE_VALUE)


def soft_counts(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: ArrayLike | None = None,
) -> Counts:
    r"""Confusion counts with each decision relaxed to ``sigmoid((logit - threshold) / T)``.

    The differentiable counterpart of `jaxmetrics.confusion_counts` at one threshold: as the
    temperature T goes to 0 the counts become the hard counts of ``logit >= threshold``. Feed
    them to any rate: ``jm.precision(soft_counts(...))`` is soft precision.

    .. math:: TP = \sum_i w_i y_i \sigma_i, \quad FP = \sum_i w_i (1 - y_i) \sigma_i, \quad
              FN = \sum_i w_i y_i (1 - \sigma_i), \quad TN = \sum_i w_i (1 - y_i)(1 - \sigma_i)

    with ``sigma_i = sigmoid((s_i - threshold) / T)``.

    A logit exactly at the threshold counts one half, at any temperature. A
    temperature that is not > 0 and finite, or a non-finite threshold, raises `ValueError`.
    Bad input and traced options (NaN counts): docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool, broadcasting against `logits`.
      temperature: T > 0; smaller is closer to the hard counts, with steeper gradients.
      threshold: the decision threshold on the logits.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      `Counts` of float arrays of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> counts = jl.soft_counts([2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0])
      >>> [round(float(c), 4) for c in counts]  # tp, fp, fn, tn
      [1.5033, 1.1192, 0.4967, 1.8808]
    """
    bad_option = check_temperature(temperature) | check_finite_option(threshold, "threshold")
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    return _soft_counts(logits, labels, weights, invalid | bad_option, temperature, threshold)


# One compiled program per eager call (each operation was a program of its own), also under an
# eager `jax.grad`; inlined in a caller's trace. The options are traced.
@kernels.sample_jit
def _soft_counts(logits, labels, weights, invalid, temperature, threshold) -> Counts:
    flagged = jax.nn.sigmoid((logits - threshold) / temperature)
    positive, negative = weights * labels, weights * (1 - labels)
    counts = Counts(
        (positive * flagged).sum(-1),
        (negative * flagged).sum(-1),
        (positive * (1 - flagged)).sum(-1),
        (negative * (1 - flagged)).sum(-1),
    )
    return batching.nan_where(invalid, counts)


def soft_f_beta_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    beta: float = 1.0,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""One minus F-beta of the soft counts: a differentiable F-beta training loss.

    As the temperature goes to 0 it becomes ``1 - f_beta(confusion_counts(logits, labels,
    threshold), beta=beta)``, the hard metric of ``logit >= threshold``.

    .. math:: \mathcal{L} = 1 - \frac{(1+\beta^2)\, TP}{(1+\beta^2)\, TP + \beta^2 FN + FP}

    with the counts of `soft_counts`.

    A batch without positives has TP = FN = 0, so the loss is 1 while any alarm
    is raised, with the gradient pushing the alarms down; it is 0 only in the limit of none
    (the hard metric's 0/0, which scikit-learn sets by `zero_division`). A negative or NaN
    `beta` raises `ValueError`; `temperature` and `threshold` as `soft_counts`. Bad input and
    traced options: docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      beta: the weight of recall against precision, >= 0 (2 favours recall, inf is recall).
      temperature: T > 0 of the sigmoid relaxation.
      threshold: the decision threshold on the logits.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``, in [0, 1].

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> round(float(jl.soft_f_beta_loss([2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0])), 4)
      0.3496

    References:
      Bénédict, Koops, Odijk & de Rijke (2022), "sigmoidF1: a smooth F1 score surrogate loss
      for multilabel classification", Transactions on Machine Learning Research.
    """
    bad_beta = option_flag(beta, "beta", checks.Rule(lambda b: ~(b >= 0), "be >= 0"))
    counts = soft_counts(
        logits, labels, temperature=temperature, threshold=threshold, sample_weight=sample_weight
    )
    return _f_beta_loss(counts, beta, bad_beta)


@kernels.sample_jit
def _f_beta_loss(counts: Counts, beta, bad_beta) -> Array:
    # F-beta of `rates.f_beta`, written here for a `beta` that may be traced: divided through
    # by 1 + beta^2, so that beta = inf is recall with no special case
    fp_share = 1 / (1 + jnp.square(jnp.asarray(beta, counts.tp.dtype)))
    f_beta = safe_divide(
        counts.tp, counts.tp + (1 - fp_share) * counts.fn + fp_share * counts.fp, 1.0
    )
    return batching.nan_where(bad_beta, 1 - f_beta)


def soft_precision(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Precision of `soft_counts`: a differentiable precision.

    As the temperature goes to 0 it becomes `jaxmetrics.precision` of ``logit >= threshold``.

    .. math:: \mathrm{precision} = \frac{TP}{TP + FP}

    0/0 (no soft alarm at all, only in the limit) gives NaN. Bad input and
    options as `soft_counts`.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      temperature: T > 0 of the sigmoid relaxation.
      threshold: the decision threshold on the logits.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> round(float(jl.soft_precision([2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0])), 4)
      0.5732
    """
    counts = soft_counts(
        logits, labels, temperature=temperature, threshold=threshold, sample_weight=sample_weight
    )
    return rates_lib.precision(counts)


def soft_recall(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Recall of `soft_counts`: a differentiable recall.

    As the temperature goes to 0 it becomes `jaxmetrics.recall` of ``logit >= threshold``.

    .. math:: \mathrm{recall} = \frac{TP}{TP + FN}

    A batch without positives gives NaN. Bad input and options as `soft_counts`.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      temperature: T > 0 of the sigmoid relaxation.
      threshold: the decision threshold on the logits.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> round(float(jl.soft_recall([2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0])), 4)
      0.7516
    """
    counts = soft_counts(
        logits, labels, temperature=temperature, threshold=threshold, sample_weight=sample_weight
    )
    return rates_lib.recall(counts)
