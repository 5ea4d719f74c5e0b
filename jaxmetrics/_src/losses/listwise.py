"""Listwise ranking losses: ApproxNDCG and ListNet, differentiable stand-ins for `ndcg`.

Layout as in `retrieval`: ``scores`` ``[*batch, Q, m]`` holds the m candidate items of each
query on its last axis, the ranked one, and a loss returns ``[*batch, Q]``, one value per query,
like the metric it stands in for (and like every loss of `losses`, which reduces the last axis
only). Train on their mean, ``loss.mean()``, or on a weighted mean over queries. Queries of
different lengths are padded to m with items of ``sample_weight`` 0, an item mask: absent items
take no part, exactly. A query without a present relevant item (NDCG undefined) has loss 0 and
zero gradient, so it never poisons a batch (it still counts in ``loss.mean()``: divide by the
number of queries with a relevant item to leave it out).

Bad input as for `ndcg`: NaN or infinite scores, negative or non-finite relevance and mask
entries other than 0 and 1 raise `ValueError` when the values are concrete, and make that
query's loss NaN under jit/grad. So does a `temperature` that is not > 0 and finite (it may be
traced, e.g. a schedule inside a jitted step).
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import batching, checks, coercion, kernels
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.losses.pair_sums import row_sums
from jaxmetrics._src.losses.soft import check_temperature
from jaxmetrics._src.mesh.sample_sort import ascending_order


def _query_inputs(
    scores: ArrayLike, relevance: ArrayLike, sample_weight: ArrayLike | None
) -> tuple[Array, Array, Array, Array]:
    """(scores, relevance, mask) as float arrays, and `invalid` of the batch shape [*batch, Q]."""
    scores = coercion.as_scores(scores, "scores", host=True)
    relevance = coercion.as_real_array(relevance, "relevance", host=True)
    mask = None
    if sample_weight is not None:
        mask = coercion.as_real_array(sample_weight, "sample_weight", host=True)
    named = [("scores", scores), ("relevance", relevance), ("sample_weight", mask)]
    coercion.reject_single_sample_rows(named)  # queries of one item: nothing to rank
    batch_shape = coercion.sample_axis_shapes(named)
    invalid = checks.check(scores, "scores", checks.FINITE_VALUE) | checks.check(
        relevance, "relevance", checks.GRADE
    )
    dtype = scores.dtype
    if mask is None:
        mask = coercion.full(relevance.shape, 1, dtype)
    else:
        invalid = invalid | checks.check(mask, "sample_weight", checks.ITEM_MASK)
    invalid = checks.array_namespace(invalid).broadcast_to(invalid, batch_shape)
    return (*coercion.device_arrays(dtype, scores, relevance, mask), invalid)


# The kernels are jitted so that an eager call runs one compiled program per shape, whatever the
# temperature (inlined under the caller's jit); they take one query, and `map_batch` lifts them
# over the batch axes.


def _approx_ndcg_kernel(scores: Array, relevance: Array, mask: Array, temperature: Array) -> Array:
    def above(s_i: Array, s_j: Array) -> Array:
        return jax.nn.sigmoid((s_j - s_i) / temperature)

    rank = 1 + row_sums(scores, scores, mask, above, skip_diagonal=True)
    gains = mask * relevance
    dcg = (gains / jnp.log2(1 + rank)).sum()
    # (by an unsigned key and an index, the sort CUB takes on a GPU; a float sort's NaN-aware
    # comparator is not one compare)
    ideal = gains[ascending_order(gains)][::-1]
    places = jnp.arange(1, ideal.shape[0] + 1, dtype=ideal.dtype)
    return 1 - safe_divide(dcg, (ideal / jnp.log2(1 + places)).sum(), 1.0)


def _listnet_kernel(scores: Array, relevance: Array, mask: Array, temperature: Array) -> Array:
    present = mask > 0
    gains = mask * relevance
    target = safe_divide(gains, gains.sum(), 0.0)
    logits = scores / temperature
    # the log-softmax over present items only: absent logits never reach an exp, and a query
    # with no present item gives finite (unused) values rather than -inf - -inf
    shift = jax.lax.stop_gradient(jnp.where(present, logits, -jnp.inf).max())
    shift = jnp.where(jnp.isfinite(shift), shift, 0)
    shifted = jnp.where(present, logits - shift, 0)
    total = jnp.where(present, jnp.exp(shifted), 0).sum()
    log_softmax = shifted - jnp.log(jnp.where(total > 0, total, 1))
    return -jnp.where(target > 0, target * log_softmax, 0).sum()


def _lifted(kernel):
    @kernels.jit
    def losses(scores: Array, relevance: Array, mask: Array, temperature: Array) -> Array:
        return batching.map_batch(
            lambda s, r, w: kernel(s, r, w, temperature), scores, relevance, mask
        )

    return losses


_approx_ndcg_losses = _lifted(_approx_ndcg_kernel)
_listnet_losses = _lifted(_listnet_kernel)


def approx_ndcg_loss(
    scores: ArrayLike,
    relevance: ArrayLike,
    *,
    temperature: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""One minus ApproxNDCG (Qin, Liu & Li 2010): NDCG with each rank relaxed by sigmoids.

    The training counterpart of `jaxmetrics.ndcg`, with its gains (the relevance itself,
    linear) and discounts (``1 / log2(1 + place)``): as the temperature goes to 0 it becomes
    ``1 - jaxmetrics.ndcg(scores, relevance)`` for distinct scores.

    .. math:: \mathcal{L} = 1 - \frac{1}{\mathrm{IDCG}} \sum_i
              \frac{\mathrm{rel}_i}{\log_2(1 + \hat\pi_i)}, \qquad
              \hat\pi_i = 1 + \sum_{j \ne i} \sigma\big((s_j - s_i) / \tau\big)

    over the present items of the query, with tau the temperature and IDCG the exact ideal
    DCG, ``sum_p rel_(p) / log2(1 + p)`` over the relevance sorted in descending order.

    No cut-off `k`. The relaxed rank has no smooth counterpart of "place <= k"
    that stays faithful to NDCG@k (a sigmoid of the relaxed rank adds a second temperature and
    vanishing gradients below the cut), so the loss uses the whole list; evaluate with
    ``jm.ndcg(..., k=k)``. Tied scores count each other one half, at any temperature. A query
    whose present items all have relevance 0 (IDCG = 0, NDCG undefined) has loss 0 with zero
    gradient. Pairs are summed in blocks of rows (bounded memory). A temperature that is not
    > 0 and finite raises `ValueError`. Bad input and traced options: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      relevance: ``[*batch, Q, m]`` graded relevance, non-negative reals (0 not relevant),
        broadcasting against `scores`.
      temperature: tau > 0; smaller is closer to 1 - NDCG, with steeper gradients.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1 (0 for padding).

    Returns:
      A float array of shape ``[*batch, Q]``, one loss per query.

    Examples:
      >>> import jaxmetrics.losses as jl
      >>> scores = [[0.9, 0.8, 0.7, 0.6], [0.5, 0.4, 0.2, 0.1]]
      >>> relevance = [[3, 0, 2, 1], [0, 2, 1, 0]]
      >>> # a small temperature: 1 - jm.ndcg(scores, relevance)
      >>> [round(float(x), 4) for x in jl.approx_ndcg_loss(scores, relevance, temperature=1e-3)]
      [0.0695, 0.3303]
      >>> [round(float(x), 4) for x in jl.approx_ndcg_loss(scores, relevance)]  # tau = 1
      [0.2966, 0.3638]

    References:
      Qin, Liu & Li (2010), "A general approximation framework for direct optimization of
      information retrieval measures", Information Retrieval 13:375-397.
    """
    bad_temperature = check_temperature(temperature)
    scores, relevance, mask, invalid = _query_inputs(scores, relevance, sample_weight)
    losses = _approx_ndcg_losses(scores, relevance, mask, jnp.asarray(temperature, scores.dtype))
    return batching.nan_where(invalid | bad_temperature, losses)


def listnet_loss(
    scores: ArrayLike,
    relevance: ArrayLike,
    *,
    temperature: float = 1.0,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""ListNet's top-one cross-entropy (Cao et al. 2007), with the relevance normalised.

    The cross-entropy between the query's relevance, normalised to sum to 1, and the softmax
    of its scores over the present items:

    .. math:: \mathcal{L} = -\sum_i \frac{\mathrm{rel}_i}{\sum_k \mathrm{rel}_k}
              \log \frac{\exp(s_i / \tau)}{\sum_k \exp(s_k / \tau)}

    with tau the temperature. The target is the normalised relevance, not Cao et al.'s
    ``softmax(relevance)``: it is TF-Ranking's softmax loss, which bounds the NDCG and MRR of
    binary relevance (Bruch et al. 2019), gives the target 0 to irrelevant items, leaves a
    query without a relevant item undefined (as NDCG is) and does not depend on the scale of
    the grades. Its minimum is the entropy of the target (0 with one relevant item), reached
    as the scores' softmax approaches it.

    A query whose present items all have relevance 0 has loss 0 with zero
    gradient. Absent items (mask 0) are out of both the softmax and the target. A temperature
    that is not > 0 and finite raises `ValueError`. Bad input and traced options:
    docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      relevance: ``[*batch, Q, m]`` graded relevance, non-negative reals (0 not relevant),
        broadcasting against `scores`.
      temperature: tau > 0, dividing the scores before the softmax.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1 (0 for padding).

    Returns:
      A float array of shape ``[*batch, Q]``, one loss per query.

    Examples:
      >>> import math
      >>> import jaxmetrics.losses as jl
      >>> # targets (1/2, 1/2, 0), softmax (1/2, 1/4, 1/4): -(log(1/2) + log(1/4)) / 2
      >>> scores = [math.log(2.0), 0.0, 0.0]
      >>> round(float(jl.listnet_loss(scores, [1, 1, 0])), 4), round(1.5 * math.log(2), 4)
      (1.0397, 1.0397)

    References:
      Cao, Qin, Liu, Tsai & Li (2007), "Learning to rank: from pairwise approach to listwise
      approach", Proc. ICML, 129-136. Bruch, Wang, Bendersky & Najork (2019), "An analysis of
      the softmax cross entropy loss for learning-to-rank with binary relevance", Proc. ICTIR,
      75-78.
    """
    bad_temperature = check_temperature(temperature)
    scores, relevance, mask, invalid = _query_inputs(scores, relevance, sample_weight)
    losses = _listnet_losses(scores, relevance, mask, jnp.asarray(temperature, scores.dtype))
    return batching.nan_where(invalid | bad_temperature, losses)
