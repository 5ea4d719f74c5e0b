"""Ranking losses: differentiable surrogates of ROC AUC, average precision and recall at a
precision floor (pairwise AUC loss, AUC-M, Smooth-AP, the recall-at-precision objective).

Inputs, batch axes, weights and bad input follow `losses` (its module docstring and
`loss_inputs`). Batches without positives or without negatives have no pairs: the pairwise
losses are then 0 with zero gradient.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, kernels
from jaxmetrics._src.core.numerics import safe_divide, weight_scale
from jaxmetrics._src.core.options import check_option
from jaxmetrics._src.core.typing import Array, ArrayLike, Surrogate, options_of
from jaxmetrics._src.losses.pair_sums import hinge_pairs, row_sums
from jaxmetrics._src.losses.soft import (
    check_finite_option,
    check_temperature,
    loss_inputs,
    option_flag,
)

_SURROGATES = options_of(Surrogate)


def pairwise_auc_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    surrogate: Surrogate = "logistic",
    margin: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Mean over positive-negative pairs of a surrogate of the mis-ranking indicator.

    A differentiable stand-in for ``1 - roc_auc``: the "sigmoid" surrogate becomes exactly
    ``1 - jaxmetrics.roc_auc(logits, labels)`` as the logits are scaled up.

    .. math:: \mathcal{L} = \frac{1}{W_+ W_-} \sum_{i:\, y_i = 1} \sum_{j:\, y_j = 0}
              w_i w_j\, \ell(s_i - s_j)

    with the surrogate l(d): "logistic" ``softplus(-d)``, "hinge" ``max(0, m - d)``,
    "squared_hinge" ``max(0, m - d)^2``, "sigmoid" ``sigmoid(-d)``; m is `margin`, and W_+,
    W_- the total weights of the two classes.

    The hinge family is computed exactly in O(n log n) from sorted suffix moments,
    with no n+ x n- matrix, and invariant under a shift of the logits (they are centred first);
    "logistic" and "sigmoid" sum the pairs in blocks of rows, in O(n+ n) time and O(256 n)
    memory. Without pairs (one class in the batch) the loss is 0, with zero gradient. An
    unknown `surrogate` or a non-finite `margin` raises `ValueError`.
    Bad input and traced options: docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      surrogate: "logistic", "hinge", "squared_hinge" or "sigmoid".
      margin: m of the hinge surrogates (unused by the others).
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> float(jl.pairwise_auc_loss(logits, labels, surrogate="hinge"))  # 1.5 over 6 pairs
      0.25
      >>> round(float(jl.pairwise_auc_loss(logits, labels)), 4)
      0.2724

    References:
      Yan, Dodier, Mozer & Wolniewicz (2003), "Optimizing classifier performance via an
      approximation to the Wilcoxon-Mann-Whitney statistic", Proc. ICML, 848-855.
    """
    check_option(surrogate, "surrogate", _SURROGATES)
    bad_margin = check_finite_option(margin, "margin")
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    losses = _pairwise_losses(logits, labels, weights, margin, surrogate=surrogate)
    return batching.nan_where(invalid | bad_margin, losses)


@functools.partial(kernels.jit, static_argnames="surrogate")
def _pairwise_losses(
    logits: Array, labels: Array, weights: Array, margin: Array, *, surrogate: str
) -> Array:
    """`pairwise_auc_loss` of every batch element, one compiled program per surrogate and shape
    (called eagerly, op-by-op dispatch would compile each operation of the kernel instead)."""

    def kernel(scores: Array, labels: Array, weights: Array) -> Array:
        # a mean over pairs: weights of 1e20 made the pair weights' total overflow (NaN)
        weights = weights / weight_scale(weights)
        positive, negative = weights * labels, weights * (1 - labels)
        if surrogate in ("hinge", "squared_hinge"):
            total = hinge_pairs(scores, labels, weights, margin, 1 if surrogate == "hinge" else 2)
        else:
            term = (
                (lambda a, b: jax.nn.softplus(b - a))
                if surrogate == "logistic"
                else (lambda a, b: jax.nn.sigmoid(b - a))
            )
            total = (positive * row_sums(scores, scores, negative, term)).sum()
        return safe_divide(total, positive.sum() * negative.sum(), 0.0)

    return batching.map_batch(kernel, logits, labels, weights)


def auc_margin_loss(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    margin: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""AUC-M, the AUC margin loss of Yuan et al. (2021), in closed form for a batch.

    The value of the paper's min-max objective (`auc_margin_objective`) at its optimal a, b
    (the class means) and alpha (the clipped margin violation): the spread of each class's
    scores plus the squared shortfall of the gap between the class means from the margin.

    .. math:: \mathcal{L} = \mathrm{Var}_+(h) + \mathrm{Var}_-(h)
              + \max\big(0,\ m - (\bar h_+ - \bar h_-)\big)^2

    with h the scores, the means and (population) variances taken over each class with the
    sample weights, and m the margin.

    Use scores in [0, 1] (the paper's sigmoid outputs; margin 1.0 by default),
    which are not checked. A batch with one class present has no margin term: the loss is the
    variance of the class that is there. A non-finite `margin` raises `ValueError`.
    Bad input and traced options: docs/conventions.md.

    Args:
      probs: ``[*batch, n]`` scores, e.g. ``jax.nn.sigmoid(logits)``.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      margin: m, the wanted gap between the class means.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> round(float(jl.auc_margin_loss([0.9, 0.6, 0.3, 0.7, 0.1], [1, 1, 0, 0, 0])), 4)
      0.465

    References:
      Yuan, Yan, Sonka & Yang (2021), "Large-scale robust deep AUC maximization: a new
      surrogate loss and empirical studies on medical image classification", Proc. ICCV,
      3040-3049.
    """
    bad_margin = check_finite_option(margin, "margin")
    probs, labels, weights, invalid = loss_inputs(probs, labels, sample_weight, "probs")
    return _auc_margin_loss(probs, labels, weights, invalid | bad_margin, margin)


# Each loss of this module is one compiled program per eager call (each operation was a program
# of its own), also under an eager `jax.grad`; inlined in a caller's trace. Options are traced.
@kernels.sample_jit
def _auc_margin_loss(probs, labels, weights, invalid, margin) -> Array:
    positive, negative = weights * labels, weights * (1 - labels)
    count_pos, count_neg = positive.sum(-1), negative.sum(-1)
    mean_pos = safe_divide((positive * probs).sum(-1), count_pos, 0.0)
    mean_neg = safe_divide((negative * probs).sum(-1), count_neg, 0.0)
    var_pos = safe_divide((positive * (probs - mean_pos[..., None]) ** 2).sum(-1), count_pos, 0.0)
    var_neg = safe_divide((negative * (probs - mean_neg[..., None]) ** 2).sum(-1), count_neg, 0.0)
    both = (count_pos > 0) & (count_neg > 0)
    violation = jnp.where(both, jax.nn.relu(margin - (mean_pos - mean_neg)), 0.0)
    return batching.nan_where(invalid, var_pos + var_neg + violation**2)


class AucMarginState(NamedTuple):
    """Auxiliary and dual variables of the AUC-M min-max problem (`auc_margin_objective`).

    Minimise the objective over the model, `a` and `b`; maximise it over `alpha`, kept >= 0.
    At the saddle point a and b are the class means of the scores and alpha is the clipped
    margin violation, where the objective equals `auc_margin_loss`. A pytree, so it passes
    through `jax.grad` and optax.

    Attributes:
      a: tracks the positives' mean score (scalar, or ``[*batch]``).
      b: tracks the negatives' mean score.
      alpha: the dual variable, kept >= 0.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> state = jl.AucMarginState(a=0.75, b=1.1 / 3, alpha=1 - (0.75 - 1.1 / 3))
      >>> probs, labels = [0.9, 0.6, 0.3, 0.7, 0.1], [1, 1, 0, 0, 0]
      >>> round(float(jl.auc_margin_objective(probs, labels, state)), 4)  # the saddle point
      0.465

    References:
      Yuan, Yan, Sonka & Yang (2021), "Large-scale robust deep AUC maximization: a new
      surrogate loss and empirical studies on medical image classification", Proc. ICCV,
      3040-3049.
    """

    a: Array
    b: Array
    alpha: Array


def check_state_shape(state: AucMarginState, batch_shape: tuple[int, ...], name: str) -> None:
    """Each field of an AUC-M `state` must be a scalar or broadcast to `batch_shape` (the batch
    axes of `name`), never widen it; raise `ValueError` naming the field otherwise."""
    for field, value in zip(state._fields, state):
        shape = tuple(np.shape(value))
        if len(shape) > len(batch_shape) or any(
            size not in (1, axis) for size, axis in zip(shape[::-1], batch_shape[::-1])
        ):
            raise ValueError(
                f"`state.{field}` must be a scalar or broadcast to the batch shape "
                f"{batch_shape} of `{name}`; got shape {shape}."
            )


def auc_margin_objective(
    probs: ArrayLike,
    labels: ArrayLike,
    state: AucMarginState,
    *,
    margin: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""AUC-M's min-max objective, with its auxiliary and dual variables as explicit state.

    The objective that Yuan et al. (2021) train with PESG: minimised over the model and
    ``state.a``, ``state.b``, maximised over ``state.alpha``. At a = mean+, b = mean-,
    alpha = max(0, m - (mean+ - mean-)) it equals `auc_margin_loss`.

    .. math:: f = E_+[(h - a)^2] + E_-[(h - b)^2] + 2\alpha\,(m - E_+[h] + E_-[h]) - \alpha^2

    with E_+ and E_- the weighted means over the positives and the negatives.

    Training (PESG-style): take gradients with respect to the model, `state.a` and `state.b`
    and descend; take the gradient with respect to `state.alpha` and *ascend*, then clip alpha
    at 0::

        grads = jax.grad(objective, argnums=(0, 1))(params, state)
        params = optax.apply_updates(params, optimizer.update(grads[0], ...)[0])
        state = AucMarginState(state.a - lr * grads[1].a, state.b - lr * grads[1].b,
                               jnp.maximum(0.0, state.alpha + lr * grads[1].alpha))

    A class absent from the batch contributes 0 to its mean terms. A state field
    that does not broadcast to the batch shape ``[*batch]`` raises `ValueError`. `margin` as
    `auc_margin_loss`. Bad input and traced options: docs/conventions.md.

    Args:
      probs: ``[*batch, n]`` scores in [0, 1], e.g. ``jax.nn.sigmoid(logits)``.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      state: `AucMarginState` (a, b, alpha), scalars or ``[*batch]``.
      margin: m, the wanted gap between the class means.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> probs, labels = [0.9, 0.6, 0.3, 0.7, 0.1], [1, 1, 0, 0, 0]
      >>> start = jl.AucMarginState(a=0.5, b=0.5, alpha=0.0)
      >>> # alpha = 0: the spreads only, (0.16 + 0.01) / 2 + (0.04 + 0.04 + 0.16) / 3
      >>> round(float(jl.auc_margin_objective(probs, labels, start)), 4)
      0.165

    References:
      Yuan, Yan, Sonka & Yang (2021), "Large-scale robust deep AUC maximization: a new
      surrogate loss and empirical studies on medical image classification", Proc. ICCV,
      3040-3049.
    """
    bad_margin = check_finite_option(margin, "margin")
    probs, labels, weights, invalid = loss_inputs(probs, labels, sample_weight, "probs")
    check_state_shape(state, invalid.shape, "probs")
    return _auc_margin_objective(probs, labels, weights, invalid | bad_margin, state, margin)


@kernels.sample_jit
def _auc_margin_objective(probs, labels, weights, invalid, state, margin) -> Array:
    positive, negative = weights * labels, weights * (1 - labels)
    count_pos, count_neg = positive.sum(-1), negative.sum(-1)

    def mean(values: Array, of: Array, count: Array) -> Array:
        return safe_divide((of * values).sum(-1), count, 0.0)

    a, b, alpha = (jnp.asarray(x, probs.dtype) for x in state)
    spread = mean((probs - a[..., None]) ** 2, positive, count_pos) + mean(
        (probs - b[..., None]) ** 2, negative, count_neg
    )
    gap = margin - mean(probs, positive, count_pos) + mean(probs, negative, count_neg)
    return batching.nan_where(invalid, spread + 2 * alpha * gap - alpha**2)


def smooth_ap_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    temperature: float = 0.01,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""One minus Smooth-AP (Brown et al. 2020), binary form: O(n^2) time, O(n) memory.

    (The row sums are formed for every sample, in blocks of rows, since the number of positives
    is not static under `jit`; only the positives' rows enter the loss.)

    Each positive's rank among all samples and among the positives is relaxed with a sigmoid of
    the score differences. As the temperature goes to 0 it becomes
    ``1 - jaxmetrics.average_precision(logits, labels)`` for distinct scores.

    .. math:: \mathcal{L} = 1 - \frac{1}{W_+} \sum_{i:\, y_i = 1} w_i\,
              \frac{1 + \sum_{j \ne i,\, y_j = 1} w_j\, \sigma((s_j - s_i) / \tau)}
                   {1 + \sum_{j \ne i} w_j\, \sigma((s_j - s_i) / \tau)}

    with tau the temperature and W_+ the total weight of the positives.

    Tied scores count each other one half, at any temperature. A batch without
    positives gives 0. Pairs are summed in blocks of rows (bounded memory). A temperature that
    is not > 0 and finite raises `ValueError`. Bad input and traced options:
    docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      temperature: tau > 0; smaller is closer to 1 - AP, with steeper gradients.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> round(float(jl.smooth_ap_loss(logits, labels)), 4)  # 1 - AP = 1 - (1 + 2/3) / 2
      0.1667
      >>> round(float(jl.smooth_ap_loss(logits, labels, temperature=1.0)), 4)
      0.2734

    References:
      Brown, Xie, Kalogeiton & Zisserman (2020), "Smooth-AP: smoothing the path towards
      large-scale image retrieval", Proc. ECCV, LNCS 12354:677-694.
    """
    bad_temperature = check_temperature(temperature)
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    return _smooth_ap_loss(logits, labels, weights, invalid | bad_temperature, temperature)


# compiled optimised, as the other pair losses: its O(n^2) loop over blocks of rows ran 18%
# slower at 8,192 samples compiled for a fast compile
@kernels.jit
def _smooth_ap_loss(logits, labels, weights, invalid, temperature) -> Array:
    def kernel(scores: Array, labels: Array, weights: Array) -> Array:
        positive = weights * labels

        def above(s_i: Array, s_j: Array) -> Array:
            return jax.nn.sigmoid((s_j - s_i) / temperature)

        def ranks(column_weight: Array) -> Array:
            return row_sums(scores, scores, column_weight, above, skip_diagonal=True)

        rank_all = 1 + ranks(weights)
        rank_positive = 1 + ranks(positive)
        total = positive.sum()
        # the ratio of ranks first, by `safe_divide` (its gradient divides by the rank, never by
        # its square): positive * rank overflowed at weights of 2^64, gradients were wrong from 2^40
        ratio = safe_divide(rank_positive, rank_all)
        return safe_divide((positive * ratio).sum(), total, 1.0)

    loss = 1 - batching.map_batch(kernel, logits, labels, weights)
    return batching.nan_where(invalid, loss)


def recall_at_precision_objective(
    logits: ArrayLike,
    labels: ArrayLike,
    multiplier: ArrayLike,
    *,
    min_precision: float,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Lagrangian of "maximise recall subject to precision >= alpha" (Eban et al. 2017).

    The training counterpart of `jaxmetrics.recall_at_precision`. With hinge bounds on the
    counts, ``TP >= W_+ - L_+`` and ``FP <= L_-``, where ``L_+ = sum_P w max(0, 1 - s)`` and
    ``L_- = sum_N w max(0, 1 + s)`` (s the logit minus the decision threshold, which the model
    learns as its bias), the constrained problem becomes a min-max one, here divided by W_+ for
    scale:

    .. math:: \min_f \max_{\lambda \ge 0}\ \frac{1}{W_+}\Big((1 + \lambda) L_+
              + \lambda \frac{\alpha}{1 - \alpha} L_- - \lambda W_+\Big)

    with alpha = `min_precision` and lambda = `multiplier`, explicit state: descend on the
    model, ascend on lambda (its gradient is the constraint violation) and clip it at 0.

    A batch without positives gives 0. `min_precision` outside (0, 1) raises
    `ValueError`. Bad input and traced options: docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores, the decision threshold at 0.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      multiplier: lambda >= 0, a scalar or ``[*batch]`` (the dual variable).
      min_precision: alpha in (0, 1), the precision the constraint asks for.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> # L+ = 0.5, L- = 2: (1.5 * 0.5 + 0.5 * 4 * 2 - 0.5 * 2) / 2
      >>> float(jl.recall_at_precision_objective(logits, labels, 0.5, min_precision=0.8))
      1.875

    References:
      Eban, Schain, Mackey, Gordon, Saurous & Elidan (2017), "Scalable learning of
      non-decomposable objectives", Proc. AISTATS, PMLR 54:832-840.
    """
    bad_level = option_flag(
        min_precision, "min_precision", checks.Rule(lambda p: ~((p > 0) & (p < 1)), "be in (0, 1)")
    )
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    # the ratio before the program: of a Python number in float64 (4, not float32's 4.0000005)
    ratio = min_precision / (1 - min_precision)
    return _recall_at_precision(logits, labels, weights, invalid | bad_level, multiplier, ratio)


@kernels.sample_jit
def _recall_at_precision(logits, labels, weights, invalid, multiplier, ratio) -> Array:
    positive, negative = weights * labels, weights * (1 - labels)
    loss_pos = (positive * jax.nn.relu(1 - logits)).sum(-1)
    loss_neg = (negative * jax.nn.relu(1 + logits)).sum(-1)
    count_pos = positive.sum(-1)
    lagrangian = (
        (1 + multiplier) * loss_pos + multiplier * ratio * loss_neg - multiplier * count_pos
    )
    return batching.nan_where(invalid, safe_divide(lagrangian, count_pos, 0.0))
