"""Differentiable surrogates of the evaluation metrics, usable as optax-style training losses.

Every loss takes predictions first (logits or probabilities), then 0/1 labels, with keyword-only
options; samples lie on the last axis and leading axes are batch axes, so a loss returns one value
per leading index (call ``.mean()`` to train on several at once). An optional `sample_weight`
(0 for padding) makes padded batches exact. Batches without positives or without negatives have
no pairs: the pairwise losses are then 0 with zero gradient, and the documented per-loss rule
applies elsewhere.

Bad input as for the metrics: a NaN/inf prediction, a label other than 0/1 or a negative or
non-finite weight raises `ValueError` when the values are concrete, and makes that batch
element's loss NaN under jit/grad (padding therefore needs valid labels, with weight 0).
"""

from __future__ import annotations

from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import counts as counts_lib
from jaxmetrics._src import sorting, validation
from jaxmetrics._src.counts import Counts, safe_divide

Array = jax.Array

_SURROGATES = ("logistic", "hinge", "squared_hinge", "sigmoid")
# positives per block in the O(n+ n) pair sums: the block's pair matrix is this many rows of n
_PAIR_BLOCK = 256


def _is_not_finite(values: Any) -> Any:
    return ~((values > -np.inf) & (values < np.inf))  # NaN fails both comparisons


def _inputs(predictions: Any, labels: Any, sample_weight: Any, name: str = "logits"):
    """(predictions, labels, weights) as float arrays, and `invalid` of the batch shape."""
    predictions = validation.as_scores(predictions, name, host=True)
    labels = validation.as_real_array(labels, "labels", host=True)
    weights = (
        None
        if sample_weight is None
        else validation.as_real_array(sample_weight, "sample_weight", host=True)
    )
    batch_shape = validation.sample_axis_shapes(
        [(name, predictions), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = validation.check_values(
        predictions, name, _is_not_finite, "be finite"
    ) | validation.check_binary_labels(labels)
    dtype = predictions.dtype
    if weights is None:
        weights = jnp.ones(labels.shape, dtype)
    else:
        invalid = invalid | validation.check_weights(weights)
        weights = jnp.asarray(weights).astype(dtype)
    invalid = jnp.broadcast_to(invalid, batch_shape)
    return jnp.asarray(predictions), jnp.asarray(labels).astype(dtype), weights, invalid


def soft_counts(
    logits: Any,
    labels: Any,
    *,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: Any = None,
) -> Counts:
    r"""Confusion counts with each decision relaxed to ``sigmoid((logit - threshold) / T)``.

    .. math:: TP = \sum_i w_i y_i \sigma_i,\ FP = \sum_i w_i (1 - y_i) \sigma_i,\
              FN = \sum_i w_i y_i (1 - \sigma_i),\ TN = \sum_i w_i (1 - y_i)(1 - \sigma_i)

    As ``temperature -> 0`` the counts become the hard counts of ``logit >= threshold`` (a logit
    exactly at the threshold counts one half), T being `temperature`. Feed them to any rate:
    ``precision(soft_counts(...))`` is soft precision. Returns float `Counts` of shape ``[*batch]``.
    """
    _check_temperature(temperature)
    logits, labels, weights, invalid = _inputs(logits, labels, sample_weight)
    flagged = jax.nn.sigmoid((logits - threshold) / temperature)
    positive, negative = weights * labels, weights * (1 - labels)
    counts = Counts(
        (positive * flagged).sum(-1),
        (negative * flagged).sum(-1),
        (positive * (1 - flagged)).sum(-1),
        (negative * (1 - flagged)).sum(-1),
    )
    return validation.nan_where(invalid, counts)


def _check_temperature(temperature: float) -> None:
    if not temperature > 0:
        raise ValueError(f"`temperature` must be > 0; got {temperature}.")


def soft_f_beta_loss(
    logits: Any,
    labels: Any,
    *,
    beta: float = 1.0,
    temperature: float = 1.0,
    threshold: float = 0.0,
    sample_weight: Any = None,
) -> Array:
    r"""One minus F-beta of the soft counts: a differentiable F-beta training loss.

    .. math:: 1 - \frac{(1+\beta^2) TP}{(1+\beta^2) TP + \beta^2 FN + FP}

    with `soft_counts`. A batch without positives has TP = FN = 0, so the loss is 1 while any
    alarm is raised, with the gradient pushing the alarms down; it is 0 only in the limit of
    none (the hard metric's 0/0, which scikit-learn sets by `zero_division`).

    >>> import jaxmetrics.losses as jl
    >>> round(float(jl.soft_f_beta_loss([4.0, -4.0, 3.0, -5.0], [1, 0, 1, 0])), 4)
    0.0228
    """
    counts = soft_counts(
        logits, labels, temperature=temperature, threshold=threshold, sample_weight=sample_weight
    )
    return 1 - counts_lib.f_beta(counts, beta=beta, zero_division=1.0)


def soft_precision(logits: Any, labels: Any, **options) -> Array:
    """Precision of `soft_counts` (options as there); 0/0 gives NaN."""
    return counts_lib.precision(soft_counts(logits, labels, **options))


def soft_recall(logits: Any, labels: Any, **options) -> Array:
    """Recall of `soft_counts` (options as there); no positives gives NaN."""
    return counts_lib.recall(soft_counts(logits, labels, **options))


def _hinge_pairs(scores: Array, labels: Array, weights: Array, margin: float, power: int):
    """Sum over positive-negative pairs of w_i w_j max(0, margin - (s_i - s_j))^power, power 1/2.

    A pair is active when s_j > s_i - margin. One sort of the scores; for each positive, the
    active negatives are a suffix of the ascending order, whose weight, weighted sum and weighted
    sum of squares are prefix-sum differences: O(n log n), no pair matrix.
    """
    ranked = sorting.rank(scores)
    negative_weight = (weights * (1 - labels))[ranked.order]
    s = ranked.scores

    def suffix(values: Array, cut: Array) -> Array:
        prefix = sorting.prefix_sum(values)
        return prefix[-1] - sorting.at_thresholds(ranked, prefix, cut, inclusive=True)

    cut = scores - margin  # negatives scoring above the cut are active for this positive
    count = suffix(negative_weight, cut)
    first = suffix(negative_weight * s, cut)
    gap = margin - scores  # the pair term is gap_i + s_j
    if power == 1:
        per_positive = count * gap + first
    else:
        second = suffix(negative_weight * s * s, cut)
        per_positive = count * gap * gap + 2 * gap * first + second
    return (weights * labels * per_positive).sum()


def _row_sums(scores: Array, column_weight: Array, term) -> Array:
    """``[sum_j column_weight_j term(s_i, s_j) for each i]``, in blocks of rows (bounded memory)."""
    n = scores.shape[0]
    block = min(_PAIR_BLOCK, n)
    padded = -(-n // block) * block
    rows = jnp.pad(scores, (0, padded - n)).reshape(-1, block)
    sums = jax.lax.map(lambda r: (term(r[:, None], scores[None, :]) * column_weight).sum(-1), rows)
    return sums.reshape(-1)[:n]


def pairwise_auc_loss(
    logits: Any,
    labels: Any,
    *,
    surrogate: str = "logistic",
    margin: float = 1.0,
    sample_weight: Any = None,
) -> Array:
    r"""Mean over positive-negative pairs of a surrogate of the mis-ranking indicator.

    .. math:: \frac{1}{W_+ W_-} \sum_{i \in P} \sum_{j \in N} w_i w_j\, \ell(s_i - s_j)

    with ``logistic`` softplus(-d), ``hinge`` max(0, m - d), ``squared_hinge`` max(0, m - d)^2,
    ``sigmoid`` sigmoid(-d) (the smooth 1 - AUC). The hinge family is computed exactly in
    O(n log n) from sorted prefix sums, with no n+ x n- matrix; logistic and sigmoid sum the pairs
    in blocks of rows, in O(n+ n) time and O(256 n) memory. Without pairs (one class in the batch)
    the loss is 0.

    >>> import jaxmetrics.losses as jl
    >>> float(jl.pairwise_auc_loss([2.0, 0.5, 1.0], [1, 1, 0], surrogate="hinge"))
    0.75
    """
    validation.check_option(surrogate, "surrogate", _SURROGATES)
    logits, labels, weights, invalid = _inputs(logits, labels, sample_weight)

    def kernel(scores: Array, labels: Array, weights: Array) -> Array:
        positive, negative = weights * labels, weights * (1 - labels)
        if surrogate in ("hinge", "squared_hinge"):
            total = _hinge_pairs(scores, labels, weights, margin, 1 if surrogate == "hinge" else 2)
        else:
            term = (
                (lambda a, b: jax.nn.softplus(b - a))
                if surrogate == "logistic"
                else (lambda a, b: jax.nn.sigmoid(b - a))
            )
            total = (positive * _row_sums(scores, negative, term)).sum()
        return safe_divide(total, positive.sum() * negative.sum(), 0.0)

    return validation.nan_where(invalid, validation.map_batch(kernel, logits, labels, weights))


def auc_margin_loss(
    probs: Any, labels: Any, *, margin: float = 1.0, sample_weight: Any = None
) -> Array:
    r"""AUC-M, the AUC margin loss of Yuan et al. (2021), in closed form for a batch.

    .. math:: \mathrm{Var}_+(h) + \mathrm{Var}_-(h) + \max(0,\ m - (\bar h_+ - \bar h_-))^2

    This is the value of the paper's min-max objective (`auc_margin_objective`) at its optimal
    a, b (the class means) and alpha (the clipped margin violation). Use scores in [0, 1] (the
    paper's sigmoid outputs; margin 1.0 by default). A batch with one class present has no
    margin term: the loss is the variance of the class that is there.
    """
    probs, labels, weights, invalid = _inputs(probs, labels, sample_weight, "probs")
    positive, negative = weights * labels, weights * (1 - labels)
    count_pos, count_neg = positive.sum(-1), negative.sum(-1)
    mean_pos = safe_divide((positive * probs).sum(-1), count_pos, 0.0)
    mean_neg = safe_divide((negative * probs).sum(-1), count_neg, 0.0)
    var_pos = safe_divide((positive * (probs - mean_pos[..., None]) ** 2).sum(-1), count_pos, 0.0)
    var_neg = safe_divide((negative * (probs - mean_neg[..., None]) ** 2).sum(-1), count_neg, 0.0)
    both = (count_pos > 0) & (count_neg > 0)
    violation = jnp.where(both, jax.nn.relu(margin - (mean_pos - mean_neg)), 0.0)
    return validation.nan_where(invalid, var_pos + var_neg + violation**2)


class AucMarginState(NamedTuple):
    """Auxiliary variables of the AUC-M min-max problem: minimise over a, b; maximise over alpha."""

    a: Array  # tracks the positives' mean score
    b: Array  # tracks the negatives' mean score
    alpha: Array  # dual variable, kept >= 0


def auc_margin_objective(
    probs: Any,
    labels: Any,
    state: AucMarginState,
    *,
    margin: float = 1.0,
    sample_weight: Any = None,
) -> Array:
    r"""AUC-M's min-max objective with its auxiliary and dual variables as explicit state.

    .. math:: E_+[(h - a)^2] + E_-[(h - b)^2] + 2\alpha (m - E_+[h] + E_-[h]) - \alpha^2

    Training (PESG-style): take gradients with respect to the model, `state.a` and `state.b` and
    descend; take the gradient with respect to `state.alpha` and *ascend*, then clip alpha at 0::

        grads = jax.grad(objective, argnums=(0, 1))(params, state)
        params = optax.apply_updates(params, optimizer.update(grads[0], ...)[0])
        state = AucMarginState(state.a - lr * grads[1].a, state.b - lr * grads[1].b,
                               jnp.maximum(0.0, state.alpha + lr * grads[1].alpha))

    At a = mean+, b = mean-, alpha = max(0, m - (mean+ - mean-)) it equals `auc_margin_loss`.
    """
    probs, labels, weights, invalid = _inputs(probs, labels, sample_weight, "probs")
    positive, negative = weights * labels, weights * (1 - labels)
    count_pos, count_neg = positive.sum(-1), negative.sum(-1)

    def mean(values: Array, of: Array, count: Array) -> Array:
        return safe_divide((of * values).sum(-1), count, 0.0)

    a, b, alpha = (jnp.asarray(x, probs.dtype) for x in state)
    spread = mean((probs - a[..., None]) ** 2, positive, count_pos) + mean(
        (probs - b[..., None]) ** 2, negative, count_neg
    )
    gap = margin - mean(probs, positive, count_pos) + mean(probs, negative, count_neg)
    return validation.nan_where(invalid, spread + 2 * alpha * gap - alpha**2)


def smooth_ap_loss(
    logits: Any, labels: Any, *, temperature: float = 0.01, sample_weight: Any = None
) -> Array:
    r"""One minus Smooth-AP (Brown et al. 2020), binary form, in O(n+ n).

    Each positive's rank among all samples and among the positives is relaxed with a sigmoid of
    the score differences:

    .. math:: 1 - \frac{1}{W_+}\sum_{i \in P} w_i \frac{1 + \sum_{j \in P, j \ne i} w_j
              \sigma((s_j - s_i)/\tau)}{1 + \sum_{j \ne i} w_j \sigma((s_j - s_i)/\tau)}

    As ``temperature -> 0`` this is 1 - AP for distinct scores. Pairs are summed in blocks of
    rows (bounded memory). A batch without positives gives 0.
    """
    _check_temperature(temperature)
    logits, labels, weights, invalid = _inputs(logits, labels, sample_weight)

    def kernel(scores: Array, labels: Array, weights: Array) -> Array:
        positive = weights * labels

        def above(s_i: Array, s_j: Array) -> Array:
            return jax.nn.sigmoid((s_j - s_i) / temperature)

        def ranks(column_weight: Array) -> Array:
            # drop the j = i term, sigma(0) = 1/2
            return _row_sums(scores, column_weight, above) - 0.5 * column_weight

        rank_all = 1 + ranks(weights)
        rank_positive = 1 + ranks(positive)
        total = positive.sum()
        return safe_divide((positive * rank_positive / rank_all).sum(), total, 1.0)

    loss = 1 - validation.map_batch(kernel, logits, labels, weights)
    return validation.nan_where(invalid, loss)


def recall_at_precision_objective(
    logits: Any,
    labels: Any,
    multiplier: Any,
    *,
    min_precision: float,
    sample_weight: Any = None,
) -> Array:
    r"""Lagrangian of "maximise recall subject to precision >= alpha" (Eban et al. 2017).

    With hinge bounds on the counts, ``TP >= W_+ - L_+`` and ``FP <= L_-`` where
    ``L_+ = sum_P w max(0, 1 - s)`` and ``L_- = sum_N w max(0, 1 + s)`` (s the logit minus the
    decision threshold, which the model learns as its bias), the problem becomes

    .. math:: \min_{f} \max_{\lambda \ge 0}\ (1 + \lambda) L_+ + \lambda \frac{\alpha}{1-\alpha} L_-
              - \lambda W_+

    here divided by W_+ for scale. `multiplier` is lambda, explicit state: descend on the model,
    ascend on lambda (gradient = the constraint violation) and clip it at 0.
    """
    validation.check_probability_level(min_precision, "min_precision")
    logits, labels, weights, invalid = _inputs(logits, labels, sample_weight)
    positive, negative = weights * labels, weights * (1 - labels)
    loss_pos = (positive * jax.nn.relu(1 - logits)).sum(-1)
    loss_neg = (negative * jax.nn.relu(1 + logits)).sum(-1)
    count_pos = positive.sum(-1)
    ratio = min_precision / (1 - min_precision)
    lagrangian = (
        (1 + multiplier) * loss_pos + multiplier * ratio * loss_neg - multiplier * count_pos
    )
    return validation.nan_where(invalid, safe_divide(lagrangian, count_pos, 0.0))
