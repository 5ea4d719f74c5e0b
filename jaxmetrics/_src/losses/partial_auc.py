"""Partial-AUC training losses: surrogates of the ROC area over a band of false positive rates
(one-way) or over a corner of both rates (two-way), as CVaR or KL-DRO objectives.

Both weight the pairs of `pairwise_auc_loss` towards the hard ones. "cvar" keeps the highest-
scoring negatives (and, two-way, the lowest-scoring positives) and averages the pair surrogate
over them: the exact empirical objective behind Zhu et al.'s pAUC_CVaR. "kl" replaces the hard
selection by a softmax of the pair losses (Zhu et al.'s KL-DRO), smooth in the scores.

Inputs, batch axes, weights and bad input follow `losses` (its module docstring and
`loss_inputs`). Batches without positives or without negatives have no pairs: the losses are
then 0 with zero gradient.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Literal, TypeAlias

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, kernels, sorting
from jaxmetrics._src.core.numerics import products_bound, safe_divide, weight_scale
from jaxmetrics._src.core.options import check_option
from jaxmetrics._src.core.typing import Array, ArrayLike, Surrogate, options_of
from jaxmetrics._src.losses.pair_sums import PAIR_BLOCK, hinge_total, rank_scores, row_sums
from jaxmetrics._src.losses.soft import (
    check_finite_option,
    check_temperature,
    loss_inputs,
    option_flag,
)

PartialAucMethod: TypeAlias = Literal["cvar", "kl"]
_SURROGATES = options_of(Surrogate)
_METHODS = options_of(PartialAucMethod)
# `ceil(fraction * total)` forgives this many float epsilons (relative) of rounding in the
# product: max_fpr=0.3 of 10 negatives keeps 3 (0.3 is 0.30000001 in float32), not 4
_ROUNDING_EPSILONS = 2


_OPEN_BELOW = checks.Rule(lambda r: ~((r > 0) & (r <= 1)), "be in (0, 1]")
_OPEN_ABOVE = checks.Rule(lambda r: ~((r >= 0) & (r < 1)), "be in [0, 1)")


def _check_rate(value: float, name: str, *, closed: str) -> np.ndarray | Array:
    """`option_flag` of a rate in (0, 1] (`closed="high"`) or [0, 1) (`closed="low"`)."""
    if closed == "high":
        return option_flag(value, name, _OPEN_BELOW)
    return option_flag(value, name, _OPEN_ABOVE)


def _check_options(
    surrogate: str, method: str, temperature: float, margin: float
) -> np.ndarray | Array:
    check_option(surrogate, "surrogate", _SURROGATES)
    check_option(method, "method", _METHODS)
    return check_temperature(temperature) | check_finite_option(margin, "margin")


def _pair_term(surrogate: str, margin: float) -> Callable[[Array, Array], Array]:
    """l(s_i - s_j) as a function of the positive's and the negative's scores."""
    return {
        "logistic": lambda a, b: jax.nn.softplus(b - a),
        "hinge": lambda a, b: jax.nn.relu(margin - (a - b)),
        "squared_hinge": lambda a, b: jax.nn.relu(margin - (a - b)) ** 2,
        "sigmoid": lambda a, b: jax.nn.sigmoid(b - a),
    }[surrogate]


def _kept_weight(total: Array, fraction: Array) -> Array:
    """``min(ceil(fraction * total), total)``: the weight a band keeps, at least one sample."""
    slack = 1 - _ROUNDING_EPSILONS * jnp.finfo(total.dtype).eps
    kept = jnp.minimum(jnp.ceil(fraction * total * slack), total)
    return jnp.where(fraction >= 1, total, kept)  # the whole class, exactly


def _shares(ranked: sorting.Ranked, weight: Array, kept: Array, *, top: bool) -> Array:
    """Per ranked position, the part of its `weight` (ranked order) among the `kept` weight
    scoring highest (`top`) or lowest; a tie group straddling the cut-off keeps the same part of
    each of its members."""
    prefix = sorting.count_prefix_sum(weight)
    below, through = prefix[ranked.group_start], prefix[ranked.group_stop]
    ahead = prefix[-1] - through if top else below  # weight selected before the group
    return jnp.clip(safe_divide(kept - ahead, through - below, 0.0), 0.0, 1.0)


def _cvar_kernel(
    scores: Array,
    labels: Array,
    weights: Array,
    *,
    surrogate: str,
    margin: Array,
    max_fpr: Array,
    min_tpr: Array,
) -> Array:
    # one sort serves the selection and the pair sums, which do not depend on the samples' order
    ranked = rank_scores(scores)
    labels, weights = labels[ranked.order], weights[ranked.order]
    # the selection is piecewise constant in the scores: no gradient flows through it
    fixed = jax.lax.stop_gradient(weights)
    kept_negative = _kept_weight((fixed * (1 - labels)).sum(), max_fpr)
    kept_positive = _kept_weight((fixed * labels).sum(), 1 - min_tpr)
    negative = weights * (1 - labels)
    negative = negative * _shares(ranked, fixed * (1 - labels), kept_negative, top=True)
    # (with min_tpr = 0 every share is exactly 1: the whole class is kept)
    positive = weights * labels
    positive = positive * _shares(ranked, fixed * labels, kept_positive, top=False)
    # the selection reads the weights as counts (the ceilings above); the mean over the kept
    # pairs is the same for kept weights divided by a power of two, which they are where their
    # products could overflow (weights of 1e30 gave NaN: the pairs' weight was inf)
    scale = weight_scale(fixed, below=products_bound(fixed.dtype))
    positive, negative = positive / scale, negative / scale
    kept_positive, kept_negative = kept_positive / scale, kept_negative / scale
    if surrogate in ("hinge", "squared_hinge"):
        total = hinge_total(ranked, positive, negative, margin, 1 if surrogate == "hinge" else 2)
    else:
        term = _pair_term(surrogate, margin)
        total = (positive * row_sums(ranked.scores, ranked.scores, negative, term)).sum()
    return safe_divide(total, kept_positive * kept_negative, 0.0)


def _log_mean_exp(values: Array, weight: Array) -> Array:
    """``log(sum_j weight_j exp(values_j) / sum_j weight_j)`` over the last axis, stable at both
    ends; entries of weight 0 take no part, and a row without any gives 0 (zero gradient).

    With ``top = max values`` it is ``top + log(mean exp(values - top))``. When the values are
    nearly equal (a KL loss at a high temperature: ``l / tau`` of 1e-8) that mean is 1 + 1e-8,
    which rounds to 1 (and the weights' normalised sum rounds off 1 by as much): the result
    was the largest value, the tau -> 0 limit, or worse. There it is
    ``top + log1p(mean expm1(values - top))`` instead, from the deviations alone.
    """
    values = jnp.where(weight > 0, values, -jnp.inf)
    top = jax.lax.stop_gradient(jnp.max(values, axis=-1, keepdims=True))
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    total = weight.sum(-1)
    present = total > 0
    share = weight / jnp.expand_dims(jnp.where(present, total, 1.0), -1)
    below = values - top  # <= 0, -inf where the weight is 0
    near = (share * jnp.expm1(below)).sum(-1)  # the mean of exp, less 1: in (-1, 0]
    # far from 1, the mean itself keeps its relative precision (near rounds to -1 when the
    # top's share is below float epsilon); the other branch is fed a safe value
    small = near > -0.5
    mean = (share * jnp.exp(below)).sum(-1)
    log_mean = jnp.where(
        small,
        jnp.log1p(jnp.where(small, near, 0.0)),
        jnp.log(jnp.where(small | (mean <= 0), 1.0, mean)),
    )
    return jnp.where(present, log_mean + top[..., 0], 0.0)


def _row_log_mean_exp(
    rows: Array,
    columns: Array,
    column_weight: Array,
    term: Callable[[Array, Array], Array],
    temperature: Array,
) -> Array:
    """``[log mean_j exp(term(rows_i, columns_j) / temperature) for each i]`` (weighted by
    `column_weight`) in blocks of rows; each block is recomputed in the backward pass, so memory
    stays O(block n). The last block is padded with copies of the last row (see
    `pair_sums.row_sums`)."""
    n = rows.shape[0]
    block = min(PAIR_BLOCK, n)
    padded = -(-n // block) * block
    blocks = jnp.pad(rows, (0, padded - n), mode="edge").reshape(-1, block)

    @jax.checkpoint
    def one_block(r: Array) -> Array:
        return _log_mean_exp(term(r[:, None], columns[None, :]) / temperature, column_weight)

    return jax.lax.map(one_block, blocks).reshape(-1)[:n]


def _kl_kernel(
    scores: Array,
    labels: Array,
    weights: Array,
    *,
    surrogate: str,
    margin: Array,
    temperature: Array,
    two_way: bool,
) -> Array:
    positive, negative = weights * labels, weights * (1 - labels)
    row_weight = safe_divide(positive, positive.sum(), 0.0)
    term = _pair_term(surrogate, margin)
    # Rows other than the positives' are never used: they are given the top score, where every
    # surrogate is at most its value at 0. Their own scores could make terms overflow (a squared
    # hinge at logits of 1e19), and 0 * inf is NaN in the sum or in the backward pass.
    rows = jnp.where(positive > 0, scores, jax.lax.stop_gradient(scores.max()))
    # per positive: temperature * log mean_j exp(l_ij / temperature), the KL-DRO over negatives
    per_positive = temperature * _row_log_mean_exp(rows, scores, negative, term, temperature)
    if two_way:  # the same DRO over the positives' values
        loss = temperature * _log_mean_exp(per_positive / temperature, positive)
    else:
        loss = (row_weight * per_positive).sum()
    # exactly 0 without pairs (the row weights' sum may round off 1)
    return jnp.where((positive.sum() > 0) & (negative.sum() > 0), loss, 0.0)


@functools.partial(kernels.jit, static_argnames=("surrogate", "method", "two_way"))
def _batched_loss(
    logits: Array,
    labels: Array,
    weights: Array,
    options: dict[str, Array],
    *,
    surrogate: str,
    method: str,
    two_way: bool,
) -> Array:
    """The loss of every batch element, compiled once per option set and shape (called eagerly,
    op-by-op dispatch of the batched kernel would compile each of its operations instead). The
    float options are traced: a new value compiles nothing, and a schedule may pass them under
    `jax.jit`."""
    dtype = logits.dtype
    margin, temperature, max_fpr, min_tpr = (
        jnp.asarray(options[name], dtype)
        for name in ("margin", "temperature", "max_fpr", "min_tpr")
    )
    if method == "cvar":
        kernel = functools.partial(
            _cvar_kernel, surrogate=surrogate, margin=margin, max_fpr=max_fpr, min_tpr=min_tpr
        )
    else:
        kernel = functools.partial(
            _kl_kernel, surrogate=surrogate, margin=margin, temperature=temperature, two_way=two_way
        )
    return batching.map_batch(kernel, logits, labels, weights)


def _loss(logits, labels, sample_weight, bad_option, options, **static) -> Array:
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    loss = _batched_loss(logits, labels, weights, options, **static)
    return batching.nan_where(invalid | bad_option, loss)


def partial_auc_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    max_fpr: float,
    surrogate: Surrogate = "squared_hinge",
    margin: float = 1.0,
    method: PartialAucMethod = "cvar",
    temperature: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""One-way partial AUC loss: the pairwise AUC surrogate over the hardest negatives.

    A differentiable stand-in for one minus the ROC area over false positive rates in
    [0, `max_fpr`]. "cvar" (Zhu et al. 2022, pAUC-CVaR, computed exactly for the batch) is the
    mean of the pair surrogate over all positives and the top K negatives by score; "kl" (their
    KL-DRO form, LibAUC's ``pAUC_DRO_Loss``) weights each positive's negatives by a softmax of
    the pair losses instead:

    .. math::

      \mathcal{L}_{\mathrm{cvar}} = \frac{1}{W_+ K} \sum_{i:\, y_i = 1} \sum_{j:\, y_j = 0}
          w_i\, c_j w_j\, \ell(s_i - s_j), \qquad K = \min(\lceil \beta W_- \rceil, W_-),

      \mathcal{L}_{\mathrm{kl}} = \frac{1}{W_+} \sum_{i:\, y_i = 1} w_i\, \tau \log
          \frac{1}{W_-} \sum_{j:\, y_j = 0} w_j\, e^{\ell(s_i - s_j) / \tau}

    with beta = `max_fpr`, tau = `temperature`, W_+ and W_- the total weights of the classes,
    c_j in [0, 1] the part of negative j's weight among the K heaviest-scoring negative weight,
    and the surrogate l of `pairwise_auc_loss`: "logistic" ``softplus(-d)``, "hinge"
    ``max(0, m - d)``, "squared_hinge" ``max(0, m - d)^2``, "sigmoid" ``sigmoid(-d)``.

    "cvar" ties at the cut-off share it: a tie group straddling it keeps the same part
    of each member's weight (so the pairs' weights sum to W_+ K); the selection carries no gradient.
    K is rounded in the logits' float type (past 2^22 negatives in float32 it may be one off).
    ``max_fpr=1`` is `pairwise_auc_loss`. "cvar" with the hinge family is exact in O(n log n) from
    sorted suffix moments, with no n+ x n- array and invariant under a shift of the logits;
    "logistic" and "sigmoid" sum the pair terms in blocks of 256 rows (O(n^2) time, O(256 n)
    memory, as `pairwise_auc_loss`). "kl" sums them so for every surrogate, recomputing each
    block in the backward pass (accurate at high temperatures too: at tau = 1e12 it is the mean
    pair loss); it does not use `max_fpr` (checked only): the temperature sets the focus, from
    the hardest negative per positive (tau -> 0) to `pairwise_auc_loss` (tau -> inf). Without
    pairs (one class in the batch) the loss is 0, with zero gradient. Unknown `surrogate` or
    `method` raise `ValueError`; so do `max_fpr` outside (0, 1], a `temperature` that is not > 0
    and finite and a non-finite `margin`. Bad input and traced options: docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      max_fpr: beta in (0, 1], the top of the band of false positive rates ("cvar").
      surrogate: "logistic", "hinge", "squared_hinge" or "sigmoid".
      margin: m of the hinge surrogates (unused by the others).
      method: "cvar" (hard selection of the top negatives) or "kl" (softmax weights).
      temperature: tau > 0 of "kl" (unused by "cvar").
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> # ceil(0.3 * 3) = 1 negative, the 1.0: squared hinges 0 and 1.5^2 over 2 pairs
      >>> float(jl.partial_auc_loss(logits, labels, max_fpr=0.3))
      1.125
      >>> round(float(jl.partial_auc_loss(logits, labels, max_fpr=0.3, method="kl")), 4)
      0.6713

    References:
      Zhu, Li, Wang, Wu & Yang (2022), "When AUC meets DRO: optimizing partial AUC for deep
      learning with non-convex convergence guarantee", Proc. ICML, PMLR 162:27548-27573.
    """
    bad_option = _check_options(surrogate, method, temperature, margin)
    bad_option = bad_option | _check_rate(max_fpr, "max_fpr", closed="high")
    options = {"margin": margin, "temperature": temperature, "max_fpr": max_fpr, "min_tpr": 0.0}
    return _loss(
        logits,
        labels,
        sample_weight,
        bad_option,
        options,
        surrogate=surrogate,
        method=method,
        two_way=False,
    )


def two_way_partial_auc_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    *,
    min_tpr: float,
    max_fpr: float,
    surrogate: Surrogate = "squared_hinge",
    margin: float = 1.0,
    method: PartialAucMethod = "cvar",
    temperature: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Two-way partial AUC loss: the pairwise AUC surrogate over the hardest of both classes.

    A differentiable stand-in for one minus the ROC area in the corner TPR >= `min_tpr`,
    FPR <= `max_fpr` (Yang et al. 2021). "cvar" is the mean of the pair surrogate over the
    bottom K_+ positives and the top K_- negatives by score (exact for the batch); "kl" is Zhu
    et al.'s two-way KL-DRO (LibAUC's ``tpAUC_KL_Loss``) with both temperatures tau:

    .. math::

      \mathcal{L}_{\mathrm{cvar}} = \frac{1}{K_+ K_-} \sum_{i:\, y_i = 1} \sum_{j:\, y_j = 0}
          c_i w_i\, c_j w_j\, \ell(s_i - s_j), \qquad
          K_+ = \min(\lceil (1 - \alpha) W_+ \rceil, W_+),\
          K_- = \min(\lceil \beta W_- \rceil, W_-),

      \mathcal{L}_{\mathrm{kl}} = \tau \log \frac{1}{W_+} \sum_{i:\, y_i = 1} w_i\,
          e^{v_i / \tau}, \qquad v_i = \tau \log \frac{1}{W_-} \sum_{j:\, y_j = 0} w_j\,
          e^{\ell(s_i - s_j) / \tau}

    with alpha = `min_tpr`, beta = `max_fpr`, c_i the part of positive i's weight among the K_+
    lowest-scoring positive weight, c_j that of negative j among the K_- highest-scoring negative
    weight, and the surrogate l of `partial_auc_loss`. The KL form is a log-mean-exp over the
    positives of the one-way per-positive values v_i (Zhu et al.'s two-way KL with both of its
    temperatures equal to tau; it is then tau log of the weighted mean of ``exp(l / tau)`` over
    all pairs).

    As `partial_auc_loss` (ties at each cut-off share it, no gradient through the
    selection, O(n log n) without a pair array for "cvar" with the hinge family, O(n^2) in blocks of
    rows otherwise; 0 with zero gradient without pairs). ``min_tpr=0`` is `partial_auc_loss`. "kl"
    does not use `min_tpr` and `max_fpr` (checked only): the temperature sets the focus, towards the
    hardest pair as tau -> 0 and `pairwise_auc_loss` as tau -> inf. `min_tpr` outside [0, 1),
    `max_fpr` outside (0, 1], an unknown `surrogate` or `method`, a `temperature` that is not > 0
    and finite and a non-finite `margin` raise `ValueError`. Bad input and traced options:
    docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      min_tpr: alpha in [0, 1), the bottom of the band of true positive rates ("cvar").
      max_fpr: beta in (0, 1], the top of the band of false positive rates ("cvar").
      surrogate: "logistic", "hinge", "squared_hinge" or "sigmoid".
      margin: m of the hinge surrogates (unused by the others).
      method: "cvar" (hard selection) or "kl" (softmax weights on both classes).
      temperature: tau > 0 of "kl" (unused by "cvar").
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> # the bottom positive (0.5) against the top negative (1.0): 1.5^2
      >>> float(jl.two_way_partial_auc_loss(logits, labels, min_tpr=0.5, max_fpr=0.3))
      2.25
      >>> options = {"min_tpr": 0.5, "max_fpr": 0.3, "method": "kl"}
      >>> round(float(jl.two_way_partial_auc_loss(logits, labels, **options)), 4)
      0.8815

    References:
      Yang, Xu, Bao, He, Cao & Huang (2021), "When all we need is a piece of the pie: a generic
      framework for optimizing two-way partial AUC", Proc. ICML, PMLR 139:11820-11829.

      Zhu, Li, Wang, Wu & Yang (2022), "When AUC meets DRO: optimizing partial AUC for deep
      learning with non-convex convergence guarantee", Proc. ICML, PMLR 162:27548-27573.
    """
    bad_option = _check_options(surrogate, method, temperature, margin)
    bad_option = bad_option | _check_rate(min_tpr, "min_tpr", closed="low")
    bad_option = bad_option | _check_rate(max_fpr, "max_fpr", closed="high")
    options = {"margin": margin, "temperature": temperature, "max_fpr": max_fpr, "min_tpr": min_tpr}
    return _loss(
        logits,
        labels,
        sample_weight,
        bad_option,
        options,
        surrogate=surrogate,
        method=method,
        two_way=True,
    )
