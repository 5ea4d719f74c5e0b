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

from jaxmetrics._src import sorting, validation
from jaxmetrics._src.counts import safe_divide
from jaxmetrics._src.losses import check_temperature, loss_inputs
from jaxmetrics._src.ranking_losses import _PAIR_BLOCK, _row_sums, hinge_total
from jaxmetrics._src.typing import Array, ArrayLike, Surrogate, options_of

PartialAucMethod: TypeAlias = Literal["cvar", "kl"]
_SURROGATES = options_of(Surrogate)
_METHODS = options_of(PartialAucMethod)
# `ceil(fraction * total)` forgives this many float epsilons (relative) of rounding in the
# product: max_fpr=0.3 of 10 negatives keeps 3 (0.3 is 0.30000001 in float32), not 4
_ROUNDING_EPSILONS = 2


def _check_rate(value: float, name: str, *, low: float, high: float, closed: str) -> float:
    """A rate option in an interval; `closed` says which end belongs to it ("high" or "low")."""
    try:
        rate = float(value)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a number; got {value!r}.") from None
    inside = low < rate <= high if closed == "high" else low <= rate < high
    if not inside:
        interval = f"({low:g}, {high:g}]" if closed == "high" else f"[{low:g}, {high:g})"
        raise ValueError(f"`{name}` must be in {interval}; got {value!r}.")
    return rate


def _check_options(surrogate: str, method: str, temperature: float) -> None:
    validation.check_option(surrogate, "surrogate", _SURROGATES)
    validation.check_option(method, "method", _METHODS)
    check_temperature(temperature)


def _pair_term(surrogate: str, margin: float) -> Callable[[Array, Array], Array]:
    """l(s_i - s_j) as a function of the positive's and the negative's scores."""
    return {
        "logistic": lambda a, b: jax.nn.softplus(b - a),
        "hinge": lambda a, b: jax.nn.relu(margin - (a - b)),
        "squared_hinge": lambda a, b: jax.nn.relu(margin - (a - b)) ** 2,
        "sigmoid": lambda a, b: jax.nn.sigmoid(b - a),
    }[surrogate]


def _kept_weight(total: Array, fraction: float) -> Array:
    """``min(ceil(fraction * total), total)``: the weight a band keeps, at least one sample."""
    if fraction == 1:  # the whole class, exactly
        return total
    slack = 1 - _ROUNDING_EPSILONS * jnp.finfo(total.dtype).eps
    return jnp.minimum(jnp.ceil(fraction * total * slack), total)


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
    margin: float,
    max_fpr: float,
    min_tpr: float,
) -> Array:
    # one sort serves the selection and the pair sums, which do not depend on the samples' order
    ranked = sorting.rank(scores)
    labels, weights = labels[ranked.order], weights[ranked.order]
    # the selection is piecewise constant in the scores: no gradient flows through it
    fixed = jax.lax.stop_gradient(weights)
    kept_negative = _kept_weight((fixed * (1 - labels)).sum(), max_fpr)
    kept_positive = _kept_weight((fixed * labels).sum(), 1 - min_tpr)
    negative = weights * (1 - labels)
    negative = negative * _shares(ranked, fixed * (1 - labels), kept_negative, top=True)
    positive = weights * labels
    if min_tpr > 0:
        positive = positive * _shares(ranked, fixed * labels, kept_positive, top=False)
    if surrogate in ("hinge", "squared_hinge"):
        total = hinge_total(ranked, positive, negative, margin, 1 if surrogate == "hinge" else 2)
    else:
        total = (positive * _row_sums(ranked.scores, negative, _pair_term(surrogate, margin))).sum()
    return safe_divide(total, kept_positive * kept_negative, 0.0)


def _log_mean_exp(values: Array, weight: Array) -> Array:
    """``log sum_j weight_j exp(values_j)`` over the last axis for weights summing to 1, stable;
    entries of weight 0 take no part, and a row without any gives 0 (with zero gradient)."""
    values = jnp.where(weight > 0, values, -jnp.inf)
    top = jax.lax.stop_gradient(jnp.max(values, axis=-1, keepdims=True))
    top = jnp.where(jnp.isfinite(top), top, 0.0)
    total = (weight * jnp.exp(values - top)).sum(-1)
    present = total > 0
    return jnp.where(present, jnp.log(jnp.where(present, total, 1.0)) + top[..., 0], 0.0)


def _row_log_mean_exp(
    scores: Array, column_weight: Array, term: Callable[[Array, Array], Array], temperature: float
) -> Array:
    """``[log sum_j column_weight_j exp(term(s_i, s_j) / temperature) for each i]`` in blocks of
    rows; each block is recomputed in the backward pass, so memory stays O(block n)."""
    n = scores.shape[0]
    block = min(_PAIR_BLOCK, n)
    padded = -(-n // block) * block
    rows = jnp.pad(scores, (0, padded - n)).reshape(-1, block)

    @jax.checkpoint
    def one_block(r: Array) -> Array:
        return _log_mean_exp(term(r[:, None], scores[None, :]) / temperature, column_weight)

    return jax.lax.map(one_block, rows).reshape(-1)[:n]


def _kl_kernel(
    scores: Array,
    labels: Array,
    weights: Array,
    *,
    surrogate: str,
    margin: float,
    temperature: float,
    two_way: bool,
) -> Array:
    positive, negative = weights * labels, weights * (1 - labels)
    row_weight = safe_divide(positive, positive.sum(), 0.0)
    column_weight = safe_divide(negative, negative.sum(), 0.0)
    term = _pair_term(surrogate, margin)
    # per positive: temperature * log mean_j exp(l_ij / temperature), the KL-DRO over negatives
    per_positive = temperature * _row_log_mean_exp(scores, column_weight, term, temperature)
    if two_way:  # the same DRO over the positives' values
        loss = temperature * _log_mean_exp(per_positive / temperature, row_weight)
    else:
        loss = (row_weight * per_positive).sum()
    # exactly 0 without pairs (the row weights' sum may round off 1)
    return jnp.where((positive.sum() > 0) & (negative.sum() > 0), loss, 0.0)


@functools.partial(
    jax.jit, static_argnames=("surrogate", "method", "max_fpr", "min_tpr", "two_way")
)
def _batched_loss(
    logits: Array,
    labels: Array,
    weights: Array,
    margin: float,
    temperature: float,
    *,
    surrogate: str,
    method: str,
    max_fpr: float,
    min_tpr: float,
    two_way: bool,
) -> Array:
    """The loss of every batch element, compiled once per option set and shape (called eagerly,
    op-by-op dispatch of the batched kernel would compile each of its operations instead)."""
    if method == "cvar":
        kernel = functools.partial(
            _cvar_kernel, surrogate=surrogate, margin=margin, max_fpr=max_fpr, min_tpr=min_tpr
        )
    else:
        kernel = functools.partial(
            _kl_kernel, surrogate=surrogate, margin=margin, temperature=temperature, two_way=two_way
        )
    return validation.map_batch(kernel, logits, labels, weights)


def _loss(logits, labels, sample_weight, margin, temperature, **options) -> Array:
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    loss = _batched_loss(logits, labels, weights, margin, temperature, **options)
    return validation.nan_where(invalid, loss)


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

    Conventions: "cvar" ties at the cut-off share it: a tie group straddling it keeps the same part
    of each member's weight (so the pairs' weights sum to W_+ K); the selection carries no gradient.
    K is rounded in the logits' float type (past 2^22 negatives in float32 it may be one off).
    ``max_fpr=1`` is `pairwise_auc_loss`. "cvar" with the hinge family is exact in O(n log n) from
    sorted prefix sums, with no n+ x n- array; "logistic" and "sigmoid" sum the pair terms in blocks
    of 256 rows (O(n^2) time, O(256 n) memory, as `pairwise_auc_loss`). "kl" sums them so for every
    surrogate, recomputing each block in the backward pass; it does not use `max_fpr` (checked
    only): the temperature sets the focus, from the hardest negative per positive (tau -> 0) to
    `pairwise_auc_loss` (tau -> inf). Without pairs (one class in the batch) the loss is 0, with
    zero gradient. Unknown `surrogate` or `method`, `max_fpr` outside (0, 1] and a non-positive
    `temperature` raise `ValueError`. NaN or infinite logits, labels outside {0, 1} and negative or
    non-finite weights raise `ValueError` eagerly; under `jax.jit` or `jax.grad` that element's loss
    is NaN.

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
    _check_options(surrogate, method, temperature)
    max_fpr = _check_rate(max_fpr, "max_fpr", low=0.0, high=1.0, closed="high")
    return _loss(
        logits,
        labels,
        sample_weight,
        margin,
        temperature,
        surrogate=surrogate,
        method=method,
        max_fpr=max_fpr,
        min_tpr=0.0,
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

    Conventions: as `partial_auc_loss` (ties at each cut-off share it, no gradient through the
    selection, O(n log n) without a pair array for "cvar" with the hinge family, O(n^2) in blocks of
    rows otherwise; 0 with zero gradient without pairs). ``min_tpr=0`` is `partial_auc_loss`. "kl"
    does not use `min_tpr` and `max_fpr` (checked only): the temperature sets the focus, towards the
    hardest pair as tau -> 0 and `pairwise_auc_loss` as tau -> inf. `min_tpr` outside [0, 1),
    `max_fpr` outside (0, 1], an unknown `surrogate` or `method` and a non-positive `temperature`
    raise `ValueError`; bad values as `partial_auc_loss`.

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
    _check_options(surrogate, method, temperature)
    min_tpr = _check_rate(min_tpr, "min_tpr", low=0.0, high=1.0, closed="low")
    max_fpr = _check_rate(max_fpr, "max_fpr", low=0.0, high=1.0, closed="high")
    return _loss(
        logits,
        labels,
        sample_weight,
        margin,
        temperature,
        surrogate=surrogate,
        method=method,
        max_fpr=max_fpr,
        min_tpr=min_tpr,
        two_way=True,
    )
