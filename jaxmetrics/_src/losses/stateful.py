"""AUC and AP losses that carry state across batches (SOAP, compositional AUC, multilabel AUC-M),
(`balanced_batches`, the sampler that gives every batch the positives they need, is in
`batches`).

State is explicit: a NamedTuple pytree that goes in and comes out, so a training step stays a
pure function under `jax.jit` and `lax.scan`. Inputs, weights and bad input follow `losses`
(`loss_inputs`); the AUC-M state and objective are `ranking`'s.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count, check_option
from jaxmetrics._src.core.typing import Array, ArrayLike, Surrogate, options_of
from jaxmetrics._src.losses.pair_sums import row_sums
from jaxmetrics._src.losses.ranking import (
    AucMarginState,
    auc_margin_objective,
    check_state_shape,
)
from jaxmetrics._src.losses.soft import check_finite_option, loss_inputs, option_flag

_SURROGATES = options_of(Surrogate)


def _above_term(surrogate: str, margin: float):
    """l(s_i, s_j): `surrogate` of the indicator s_j >= s_i, as in `pairwise_auc_loss`."""
    return {
        "logistic": lambda s_i, s_j: jax.nn.softplus(s_j - s_i),
        "hinge": lambda s_i, s_j: jax.nn.relu(margin - (s_i - s_j)),
        "squared_hinge": lambda s_i, s_j: jax.nn.relu(margin - (s_i - s_j)) ** 2,
        "sigmoid": lambda s_i, s_j: jax.nn.sigmoid(s_j - s_i),
    }[surrogate]


class SoapState(NamedTuple):
    """SOAP's moving averages, one entry per positive of the training set (`soap_loss`).

    Attributes:
      positive_above: ``[num_positives]`` u+, the surrogate count of positives ranked above
        each positive (itself included), as a share of the batch.
      all_above: ``[num_positives]`` u, the same count over all samples.
    """

    positive_above: Array
    all_above: Array


def _check_ids(ids: ArrayLike, labels: Array, weights: Array, num_positives: int) -> Array:
    """`ids` as int32; when the batch is concrete, raise on ids out of range or repeated."""
    ids = coercion.as_real_array(ids, "ids", host=True)
    if not jnp.issubdtype(ids.dtype, jnp.integer):
        raise TypeError(f"`ids` must hold integers; got dtype {ids.dtype}.")
    if ids.shape != labels.shape:
        raise ValueError(f"`ids` must have the shape of `labels` {labels.shape}; got {ids.shape}.")
    host_ids = checks.host_values(ids)
    host_labels, host_weights = checks.host_values(labels), checks.host_values(weights)
    if not any(value is None for value in (host_ids, host_labels, host_weights)):
        member = (host_labels == 1) & (host_weights > 0)
        taken = host_ids[member]
        bad = (taken < 0) | (taken >= num_positives)
        if bad.any():
            raise ValueError(
                f"`ids` of positives must be in [0, num_positives={num_positives}); found "
                f"{taken[bad][0]} at index {np.flatnonzero(member)[np.argmax(bad)]}."
            )
        if np.unique(taken).size < taken.size:
            raise ValueError("`ids` of the positives of a batch must be distinct.")
    return jnp.asarray(ids).astype(jnp.int32)


@functools.partial(kernels.jit, static_argnames="surrogate")
def _soap_step(state, logits, labels, weights, ids, invalid, gamma, margin, *, surrogate):
    """`soap_loss.loss` after its eager checks: (value, new state)."""
    num_positives = state.all_above.shape[0]
    member = (labels == 1) & (weights > 0)  # the rows whose state is read and written
    # traced ids are checked here: each non-member gets its own negative sentinel, so only
    # members can collide
    keys = jnp.sort(jnp.where(member, ids, -1 - jnp.arange(ids.shape[0])))
    out_of_range = member & ((ids < 0) | (ids >= num_positives))
    invalid = invalid | out_of_range.any() | (keys[1:] == keys[:-1]).any()

    term = _above_term(surrogate, margin)
    batch_weight = weights.sum()
    # only the members' rows are read: the others are given the top score, where every
    # surrogate is at most its value at 0 (their own could overflow a squared hinge, and the
    # unused inf would still make NaN in the backward pass)
    rows = jnp.where(member, logits, jax.lax.stop_gradient(logits.max()))
    # each positive counts itself, with the constant term l(0): its derivatives as row and as
    # column cancel only up to rounding, which swamped the gradient of the top positive
    fixed = jax.lax.stop_gradient(rows)
    itself = term(fixed, fixed)
    positive = weights * labels

    def above(column_weight: Array) -> Array:
        pairs = row_sums(rows, logits, column_weight, term, skip_diagonal=True)
        return safe_divide(pairs + column_weight * itself, batch_weight, 0)

    above_positive, above_all = above(positive), above(weights)
    row = jnp.where(member, ids, 0)
    new_positive = (1 - gamma) * state.positive_above[row] + gamma * above_positive
    new_all = (1 - gamma) * state.all_above[row] + gamma * above_all
    u_pos, u_all = jax.lax.stop_gradient((new_positive, new_all))
    # counts past the float range (a squared hinge of logits ~1e19 apart): nothing is written
    overflow = (member & ~(jnp.isfinite(u_pos) & jnp.isfinite(u_all))).any()
    invalid = invalid | overflow

    precision = safe_divide(u_pos, u_all, 1.0)
    # u+ g / u^2 - g+ / u, with u^2 never formed (it overflows at counts of 1e20)
    gradient_form = safe_divide(precision * above_all - above_positive, u_all, 0.0)
    total = positive.sum()
    value = 1 - safe_divide((positive * precision).sum(), total, 1.0)
    linear = safe_divide((positive * gradient_form).sum(), total, 0.0)
    value = value + (linear - jax.lax.stop_gradient(linear))

    written = jnp.where(member & ~invalid, ids, num_positives)  # past the end: dropped
    new_state = SoapState(
        state.positive_above.at[written].set(u_pos, mode="drop"),
        state.all_above.at[written].set(u_all, mode="drop"),
    )
    return jnp.where(invalid, jnp.nan, value), new_state, overflow


class SoapLoss:
    """SOAP (Qi et al. 2021): average precision trained with moving-average state, as
    ``soap_loss.init(num_positives)`` and ``soap_loss.loss(state, logits, labels, ids)``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> state = jl.soap_loss.init(2)
      >>> value, state = jl.soap_loss.loss(state, [2.0, 0.5, 1.0], [1, 1, 0], [0, 1, -1])
      >>> # squared hinges (1 + 0 + 0) / 3 and (6.25 + 1 + 2.25) / 3, times gamma = 0.9
      >>> [round(float(u), 4) for u in state.all_above]
      [0.3, 2.85]
    """

    def init(self, num_positives: int) -> SoapState:
        """A fresh `SoapState` of zeros for a training set with `num_positives` positives."""
        num_positives = check_count(num_positives, "num_positives")
        zeros = jnp.zeros(num_positives, float_dtype())
        return SoapState(zeros, zeros)

    def loss(
        self,
        state: SoapState,
        logits: ArrayLike,
        labels: ArrayLike,
        ids: ArrayLike,
        *,
        gamma: float = 0.9,
        margin: float = 1.0,
        surrogate: Surrogate = "squared_hinge",
        sample_weight: ArrayLike | None = None,
    ) -> tuple[Array, SoapState]:
        r"""One SOAP step on a batch: the loss to differentiate, and the updated state.

        AP is the mean over positives i of the ratio of two counts of the samples ranked
        above i: the positives, and all samples. With l the surrogate of ``s_j >= s_i`` (s the
        logits, j = i included), SOAP keeps a moving average of each count per positive:

        .. math:: u^+_i \leftarrow (1 - \gamma)\, u^+_i + \gamma\, \hat g^+_i, \quad
                  \hat g^+_i = \frac{1}{W} \sum_{j \in B} w_j y_j\, \ell(s_i, s_j)

        and u_i likewise with the sum over all j (without y_j); W is the batch's total
        weight. The returned value is ``1 - mean_i u+_i / u_i`` (the tracked surrogate AP,
        to log), over the batch's positives weighted by w_i, and its gradient is SOAP's
        estimate, with the new u held fixed:

        .. math:: \nabla \mathcal{L} = \frac{1}{W_+} \sum_{i \in B_+} w_i
                  \Big(\frac{u^+_i}{u_i^2} \nabla \hat g_i - \frac{1}{u_i} \nabla \hat g^+_i\Big)

        l is a surrogate of `pairwise_auc_loss` at d = s_i - s_j. LibAUC applies SOAP to
        ``sigmoid(logits)`` with a margin near 1; pass those as `logits` to do the same.

        `ids[i]` is read only where ``labels[i] == 1`` and the weight is > 0: the
        positive's index in ``[0, num_positives)``, distinct within the batch (``np.cumsum(y)
        - 1`` numbers the positives of a training set y); elsewhere any integer, e.g. -1. Only
        those entries of the state change. A batch without positives gives 0 with zero
        gradient. A zero count (a hinge with margin <= 0) reads as precision 1. One batch,
        `logits` ``[n]``: vmap over (state, logits, labels, ids) for independent problems.
        `gamma` outside (0, 1], a non-finite `margin` and an unknown `surrogate` raise
        `ValueError`; so do NaN or infinite logits, labels outside {0, 1}, negative weights,
        bad ids, and logits so large that the counts overflow (a squared hinge of logits 1e19
        apart), eagerly. Under `jax.jit` (where `gamma` and `margin` may be traced, e.g. a
        schedule) such a batch gives NaN and leaves the state unchanged.

        Args:
          state: `SoapState` from `init` or the previous step.
          logits: ``[n]`` real scores of the batch.
          labels: ``[n]`` labels in {0, 1} or bool.
          ids: ``[n]`` integers, the positives' indices into the state.
          gamma: weight of the batch in the moving averages, in (0, 1] (1: no memory).
          margin: m of the hinge surrogates.
          surrogate: "squared_hinge", "hinge", "logistic" or "sigmoid".
          sample_weight: optional ``[n]`` non-negative weights (0 for padding).

        Returns:
          ``(value, new_state)``: a float scalar and the updated `SoapState`.

        Examples:
          >>> import jaxmetrics.losses as jl
          >>> state = jl.soap_loss.init(3)
          >>> logits, labels, ids = [2.0, 0.5, 1.0, -1.0], [1, 1, 0, 0], [2, 0, -1, -1]
          >>> value, state = jl.soap_loss.loss(state, logits, labels, ids)
          >>> round(float(value), 4)  # 1 - (1 + 7.25 / 9.5) / 2: the ratios of a first visit
          0.1184

        References:
          Qi, Luo, Xu, Ji & Yang (2021), "Stochastic optimization of areas under
          precision-recall curves with provable convergence", Proc. NeurIPS 34:1752-1765.
        """
        check_option(surrogate, "surrogate", _SURROGATES)
        gamma_rule = checks.Rule(lambda g: ~((g > 0) & (g <= 1)), "be in (0, 1]")
        bad_option = option_flag(gamma, "gamma", gamma_rule) | check_finite_option(margin, "margin")
        logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
        if logits.ndim != 1:
            raise ValueError(
                f"`logits` must be one batch of shape [n]; got {logits.shape} (jax.vmap over "
                "state, logits, labels and ids for independent problems)."
            )
        state = SoapState(*(jnp.asarray(u, logits.dtype) for u in state))
        shapes = [tuple(u.shape) for u in state]
        if len(shapes[0]) != 1 or shapes[1] != shapes[0]:
            raise ValueError(
                "`state` must hold two arrays of shape [num_positives] (`soap_loss.init`); got "
                f"shapes {shapes[0]} and {shapes[1]}."
            )
        ids = _check_ids(ids, labels, weights, state.all_above.shape[0])
        invalid = invalid | bad_option
        gamma, margin = (jnp.asarray(x, logits.dtype) for x in (gamma, margin))
        arrays = (state, logits, labels, weights, ids, invalid)
        value, new_state, overflow = _soap_step(*arrays, gamma, margin, surrogate=surrogate)
        if checks.is_concrete(overflow) and overflow:
            largest = float(jnp.abs(logits).max())
            raise ValueError(
                f"`logits` must keep SOAP's counts finite in {logits.dtype} with surrogate="
                f"{surrogate!r}; found logits up to {largest:.3g} in absolute value, whose pair "
                "terms overflow. Scale them down (LibAUC passes sigmoid(logits))."
            )
        return value, new_state


soap_loss = SoapLoss()


def compositional_auc_loss(
    logits: ArrayLike,
    labels: ArrayLike,
    state: AucMarginState,
    *,
    inner_learning_rate: float = 1.0,
    margin: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""AUC-M's objective after one cross-entropy step on the logits (Yuan et al. 2022).

    Compositional AUC training minimises the AUC loss at the model reached by a
    cross-entropy step, ``L_AUC(w - eta grad L_CE(w))``. Here the step is taken on the logits:
    each logit moves by the gradient of its own binary cross-entropy, and the result goes
    through the sigmoid into `auc_margin_objective`:

    .. math:: \mathcal{L}(z; a, b, \alpha) = f_{\mathrm{AUC\text{-}M}}\big(
              \sigma(z - \eta\, (\sigma(z) - y));\ a, b, \alpha\big)

    with eta = `inner_learning_rate` (``sigma(z) - y`` is ``d BCE(z, y) / dz``). The
    gradient flows through the step, whose Jacobian is ``1 - eta sigma(z)(1 - sigma(z))``
    per logit (positive for eta < 4). Train as `auc_margin_objective`: descend on the model,
    ``state.a`` and ``state.b``, ascend on ``state.alpha`` and clip it at 0.

    ``inner_learning_rate=0`` is ``auc_margin_objective(sigmoid(logits), ...)``.
    The step ignores the weights (a zero-weight sample takes no part anyway). A class absent
    from the batch contributes 0 to its terms. A negative or non-finite `inner_learning_rate`
    and a non-finite `margin` raise `ValueError`; so does a state field that does not broadcast
    to the batch shape ``[*batch]``. Bad input and traced options: docs/conventions.md.

    Args:
      logits: ``[*batch, n]`` real scores.
      labels: ``[*batch, n]`` labels in {0, 1} or bool.
      state: `AucMarginState` (a, b, alpha), scalars or ``[*batch]``.
      inner_learning_rate: eta >= 0, the size of the cross-entropy step on each logit.
      margin: m of AUC-M, the wanted gap between the class means of the probabilities.
      sample_weight: optional ``[*batch, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> state = jl.AucMarginState(a=0.5, b=0.5, alpha=0.0)
      >>> logits, labels = [2.0, 0.5, -1.0, 1.0, -2.0], [1, 1, 0, 0, 0]
      >>> round(float(jl.compositional_auc_loss(logits, labels, state)), 4)
      0.1776

    References:
      Yuan, Guo, Xu, Ying & Yang (2022), "Compositional training for end-to-end deep AUC
      maximization", Proc. ICLR.
    """
    rate_rule = checks.Rule(lambda rate: ~((rate >= 0) & (rate < np.inf)), "be finite and >= 0")
    bad_option = option_flag(inner_learning_rate, "inner_learning_rate", rate_rule)
    bad_option = bad_option | check_finite_option(margin, "margin")
    logits, labels, weights, invalid = loss_inputs(logits, labels, sample_weight, "logits")
    check_state_shape(state, invalid.shape, "logits")
    objective = _compositional_objective(
        logits, labels, weights, state, inner_learning_rate, margin
    )
    return batching.nan_where(invalid | bad_option, objective)


@jax.jit
def _compositional_objective(logits, labels, weights, state, inner_learning_rate, margin):
    stepped = logits - inner_learning_rate * (jax.nn.sigmoid(logits) - labels)
    probs = jax.nn.sigmoid(stepped)
    return auc_margin_objective(probs, labels, state, margin=margin, sample_weight=weights)


def multilabel_auc_margin_loss(
    probs: ArrayLike,
    labels: ArrayLike,
    state: AucMarginState,
    *,
    margin: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Mean over labels of AUC-M's objective, each label with its own a, b and alpha.

    The multilabel (and one-vs-rest multiclass) AUC-M of LibAUC: `auc_margin_objective` of
    each label's column, averaged over the L labels.

    .. math:: \mathcal{L} = \frac{1}{L} \sum_{l=1}^{L}
              f_{\mathrm{AUC\text{-}M}}(h_l, y_l;\ a_l, b_l, \alpha_l)

    Train as `auc_margin_objective`: descend on the model, ``state.a`` and ``state.b``,
    ascend on ``state.alpha`` and clip it at 0, all per label. For a multiclass problem with
    one-hot labels ``Y [n, L]`` and ``P = softmax(logits) [n, L]``, pass ``P.T`` and ``Y.T``.

    Labels on the second-to-last axis, samples on the last (transpose a model's
    ``[n, L]`` output). Every label counts equally; a label with one class in the batch
    contributes the terms of the class that is there. `margin` as `auc_margin_objective`; a
    state whose fields do not broadcast to ``[*batch, L]`` raises `ValueError`. Bad input and
    traced options: docs/conventions.md.

    Args:
      probs: ``[*batch, L, n]`` scores in [0, 1], e.g. ``jax.nn.sigmoid(logits)``.
      labels: ``[*batch, L, n]`` labels in {0, 1} or bool.
      state: `AucMarginState` whose a, b and alpha have shape ``[L]`` (or ``[*batch, L]``).
      margin: m, the wanted gap between the class means of each label.
      sample_weight: optional ``[*batch, L, n]`` non-negative weights (0 for padding).

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jax.numpy as jnp
      >>> import jaxmetrics.losses as jl
      >>> probs = [[0.9, 0.6, 0.3, 0.7], [0.2, 0.8, 0.6, 0.1]]
      >>> labels = [[1, 1, 0, 0], [0, 1, 1, 0]]
      >>> state = jl.AucMarginState(jnp.full(2, 0.5), jnp.full(2, 0.5), jnp.zeros(2))
      >>> # alpha = 0: the spreads about 0.5, (0.125 + 0.175) / 2
      >>> round(float(jl.multilabel_auc_margin_loss(probs, labels, state)), 4)
      0.15

    References:
      Yuan, Yan, Sonka & Yang (2021), "Large-scale robust deep AUC maximization: a new
      surrogate loss and empirical studies on medical image classification", Proc. ICCV,
      3040-3049.
    """
    axes = tuple(np.shape(probs)[:-1])  # [*batch, L]
    if not axes:
        raise ValueError(f"`probs` must have shape [*batch, L, n]; got shape {np.shape(probs)}.")
    for name, field in zip(state._fields, state):
        field_shape = np.shape(field)
        if len(field_shape) > len(axes) or any(
            size not in (1, axis) for size, axis in zip(field_shape[::-1], axes[::-1])
        ):
            raise ValueError(
                f"`state.{name}` must have shape [L]=({axes[-1]},) or broadcast to the batch "
                f"and label axes {axes}; got {field_shape}."
            )
    bad_margin = check_finite_option(margin, "margin")
    probs, labels, weights, invalid = loss_inputs(probs, labels, sample_weight, "probs")
    objective = _label_mean(probs, labels, weights, state, margin)
    return batching.nan_where(invalid.any(-1) | bad_margin, objective)


@jax.jit
def _label_mean(probs, labels, weights, state, margin):
    return auc_margin_objective(probs, labels, state, margin=margin, sample_weight=weights).mean(-1)
