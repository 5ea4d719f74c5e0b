"""Per-query retrieval metrics: NDCG, reciprocal rank, recall@k, hit rate@k, AP@k, R-precision,
and `query_mean`, their weighted average over queries.

Layout: ``scores`` ``[*batch, Q, m]`` holds the m candidate items of each query on its last
axis, the ranked one; queries are batch axes like any other, and a metric returns ``[*batch,
Q]``, one value per query. Queries of different lengths are padded to m with items of
``sample_weight`` 0, which are absent exactly: the result equals that of the truncated query.
One sort per query; the kernels and their tie rules are in `retrieval_ties.py`.
"""

from __future__ import annotations

import sys
from typing import Literal

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, kernels, numerics, options
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe
from jaxmetrics._src.metrics import retrieval_ties


@recipe.order_only
def ndcg(
    scores: ArrayLike,
    relevance: ArrayLike,
    *,
    k: int | None = None,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Normalised discounted cumulative gain of each query, ties averaged (NDCG@k).

    Matches ``sklearn.metrics.ndcg_score(relevance[None], scores[None], k=k)`` query by query
    (its default ``ignore_ties=False``), except for a query whose present items all have
    relevance 0: NDCG is then undefined and NaN (scikit-learn returns 0.0). The gain is the
    relevance itself (linear, not ``2^rel - 1``).

    .. math::

      \mathrm{NDCG@}k = \frac{\mathrm{DCG@}k}{\mathrm{IDCG@}k}, \qquad
      \mathrm{DCG@}k = \sum_{p=1}^{\min(k, N)} \frac{\mathrm{rel}_{(p)}}{\log_2(p + 1)}

    over the N present items in descending score order, IDCG@k the same sum with the items in
    descending relevance order.

    A tie group takes the mean discount of the places it occupies (those inside the cut only,
    when it straddles place k), times its items' relevance, which is the expected DCG when the
    tie is broken at random, so the result never depends on the item order. `k` counts present
    items; with fewer than k, every one counts. Bad input (negative or non-finite relevance
    included), the item mask and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      relevance: ``[*batch, Q, m]`` graded relevance, non-negative reals (0 not relevant),
        broadcasting against `scores`.
      k: optional positive int, the number of top places counted (all when None).
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6], [0.5, 0.5, 0.2, 0.1]]
      >>> relevance = [[3, 0, 2, 1], [0, 2, 1, 0]]  # query 1: places 1 and 2 tie
      >>> [round(float(x), 4) for x in jm.ndcg(scores, relevance)]
      [0.9305, 0.81]
      >>> # query 1 at k=1: the tie's mean gain, (0 + 2) / 2, over the ideal gain 2
      >>> [round(float(x), 4) for x in jm.ndcg(scores, relevance, k=1)]
      [1.0, 0.5]

    References:
      Jarvelin & Kekalainen (2002), "Cumulated gain-based evaluation of IR techniques", ACM
      TOIS 20:422-446. McSherry & Najork (2008), "Computing information retrieval performance
      measures efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    top = None if k is None else options.check_count(k, "k")
    if np.shape(scores)[-1:] == (1,):  # static: raise under jit too
        raise ValueError(
            "`scores` must hold more than one item per query (the last axis) for NDCG, which "
            f"is 1 for any ranking of one item (scikit-learn refuses it too); got shape "
            f"{tuple(np.shape(scores))}. Scores of shape [n, 1] are one item per query: "
            "transpose them to [1, n] for one query of n items."
        )
    return retrieval_ties.run(
        retrieval_ties.ndcg_kernel,
        scores,
        relevance,
        sample_weight,
        k=sys.maxsize if top is None else top,
        graded=True,
        top=top,
    )


@recipe.order_only
def reciprocal_rank(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Reciprocal rank of each query: 1 / the place of its first relevant item (ties: expected).

    Averaged over queries (`query_mean`) it is the mean reciprocal rank (MRR). scikit-learn has
    no equivalent. Without ties it is 1 / p with p the place of the highest-scoring relevant
    item among the present ones.

    .. math::

      \mathrm{RR} = \sum_{t=1}^{g - r + 1} \frac{\binom{g - t}{r - 1}}{\binom{g}{r}}
          \, \frac{1}{A + t}

    for the highest tie group holding a relevant item: A present items above it (none of them
    relevant), g present items in it, r of them relevant; the fraction is the chance that the
    first relevant one lands on the group's t-th place.

    The value is the expected reciprocal rank when ties are broken at random (all orders of a
    tie group equally likely), so it never depends on the item order. A query without a present
    relevant item gives NaN, never 0. Bad input, the item mask and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      labels: ``[*batch, Q, m]`` labels in {0, 1} or bool (1 relevant), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6], [0.9, 0.5, 0.5, 0.5]]
      >>> labels = [[0, 0, 1, 1], [0, 1, 0, 0]]  # query 1: place 2, 3 or 4, each 1/3
      >>> [round(float(x), 4) for x in jm.reciprocal_rank(scores, labels)]  # (1/2 + 1/3 + 1/4) / 3
      [0.3333, 0.3611]

    References:
      Voorhees (1999), "The TREC-8 question answering track report", Proc. TREC-8, 77-82.
      McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    return retrieval_ties.run_binary(scores, labels, sample_weight).reciprocal_rank


@recipe.order_only
def recall_at_k(
    scores: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Recall among the k highest-scoring items of each query (recall@k), ties at the k-th shared.

    scikit-learn has no equivalent. Without a tie at the k-th place it is the share of the
    query's relevant items found in its top k.

    .. math:: \mathrm{R@}k = \frac{1}{R}\left(T + t \, \frac{r}{g}\right)

    with R the query's present relevant items, and for the tie group holding place min(k, N)
    (N present items): T relevant items above it, g present items in it, r of them relevant,
    and t of its places inside the cut.

    A tie group straddling place k contributes its share of relevant items to the places left,
    which is the expected recall when the tie is broken at random, so the result never depends
    on the item order. `k` counts present items; with fewer than k, every one counts (recall 1).
    A query without a present relevant item gives NaN, never 0. Bad input, the item mask and
    precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      labels: ``[*batch, Q, m]`` labels in {0, 1} or bool (1 relevant), broadcasting against
        `scores`.
      k: the number of top places, a positive Python int.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.5], [0.9, 0.5, 0.5, 0.5, 0.1]]
      >>> labels = [[1, 0, 1, 0, 1], [0, 1, 0, 0, 1]]
      >>> [round(float(x), 4) for x in jm.recall_at_k(scores, labels, k=2)]  # 1/3; (1/3) / 2
      [0.3333, 0.1667]

    References:
      McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    k = options.check_count(k, "k")
    return retrieval_ties.run_binary(scores, labels, sample_weight, k=k).recall_at_k


@recipe.order_only
def hit_rate_at_k(
    scores: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Whether a relevant item is among the k highest-scoring of each query (hit rate@k).

    scikit-learn has no equivalent (`sklearn.metrics.top_k_accuracy_score` asks the same of
    one true class per sample, without tie breaking). Without a tie at the k-th place it is 1
    when the top k hold a relevant item, else 0.

    .. math:: \mathrm{HR@}k = 1 - [T = 0] \, \binom{g - r}{t} \Big/ \binom{g}{t}

    with, for the tie group holding place min(k, N) (N present items), T relevant items above
    it, g present items in it, r of them relevant, and t of its places inside the cut.

    With a tie straddling place k, the value is the chance that a random tie break puts a
    relevant item inside the top k, so it never depends on the item order. `k` counts present
    items; with fewer than k, every one counts. A query without a present relevant item gives
    NaN, never 0. Bad input, the item mask and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      labels: ``[*batch, Q, m]`` labels in {0, 1} or bool (1 relevant), broadcasting against
        `scores`.
      k: the number of top places, a positive Python int.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6], [0.9, 0.5, 0.5, 0.5]]
      >>> labels = [[0, 0, 1, 1], [0, 1, 0, 0]]
      >>> [round(float(x), 4) for x in jm.hit_rate_at_k(scores, labels, k=2)]  # 1 of 3 tied in
      [0.0, 0.3333]

    References:
      McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    k = options.check_count(k, "k")
    return retrieval_ties.run_binary(scores, labels, sample_weight, k=k).hit_rate_at_k


@recipe.order_only
def average_precision_at_k(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    k: int,
    sample_weight: ArrayLike | None = None,
    normalizer: Literal["min_k_relevant", "relevant_retrieved"] = "min_k_relevant",
) -> Array:
    r"""Average precision over the top k places of each query (AP@k), ties expected.

    scikit-learn's `average_precision_score` is the untruncated, tie-grouped AP of one
    ranking (`jaxmetrics.average_precision`); this is the retrieval AP@k, whose mean over
    queries (`query_mean`) is MAP@k. Without ties:

    .. math::

      \mathrm{AP@}k = \frac{1}{\min(k, R)} \sum_{p=1}^{\min(k, N)} \mathrm{P@}p \;
          \mathrm{rel}_p, \qquad
      \mathbb{E}[\mathrm{rel}_p \, \mathrm{P@}p] = \frac{r}{g} \, \frac{T + 1 +
          (t - 1)(r - 1) / (g - 1)}{p}

    with R the query's present relevant items and N its present items; with ties, each term
    is its expected value, on the right, for place p = A + t of a tie group with A present
    items above it, T of them relevant, g present items in it and r of them relevant (the
    fraction with g - 1 read as 0 when g = 1).

    The normaliser: min(k, R) by default (the usual AP@k, e.g. of Kaggle's and RecBole's
    MAP@k), so a query with more relevant items than places is scored on filling the k places;
    ``normalizer="relevant_retrieved"`` divides by the relevant items found in the top k
    instead, torchmetrics' `RetrievalMAP(top_k=k)`, which gives 0 when none is found (and
    rewards finding one relevant item first among k = 10 with 1.0 however many exist).

    The value is exactly the expected AP@k when ties are broken at random (all orders of a tie
    group equally likely; the expectation of each term is exact because the normaliser
    min(k, R) does not depend on the order), so it never depends on the item order. With
    "relevant_retrieved" and a tie group cut by place k it is the expected sum over the
    expected number found (torchmetrics breaks such ties by its sort's order). `k` counts
    present items; with fewer than k, every one counts. A query without a present relevant
    item gives NaN, never 0. Bad input, the item mask and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      labels: ``[*batch, Q, m]`` labels in {0, 1} or bool (1 relevant), broadcasting against
        `scores`.
      k: the number of top places, a positive Python int.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.
      normalizer: "min_k_relevant" (min(k, R)) or "relevant_retrieved" (torchmetrics').

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6, 0.5], [0.9, 0.5, 0.5, 0.2, 0.1]]
      >>> labels = [[1, 0, 1, 0, 1], [1, 1, 0, 0, 0]]
      >>> # query 0: (1/1 + 2/3) / 3; query 1: (1 + (2/2 + 2/3) / 2) / 2, the tie in half
      >>> [round(float(x), 4) for x in jm.average_precision_at_k(scores, labels, k=3)]
      [0.5556, 0.9167]

    References:
      McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    k = options.check_count(k, "k")
    options.check_option(normalizer, "normalizer", ("min_k_relevant", "relevant_retrieved"))
    values = retrieval_ties.run_binary(scores, labels, sample_weight, k=k)
    if normalizer == "relevant_retrieved":
        return values.average_precision_retrieved
    return values.average_precision_at_k


@recipe.order_only
def r_precision(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Precision among the R highest-scoring items of each query, R its relevant count.

    scikit-learn has no equivalent. R-precision equals recall@R, and is 1 exactly when the
    relevant items are ranked above every other one.

    .. math:: \mathrm{RP} = \frac{1}{R}\left(T + t \, \frac{r}{g}\right)

    with R the query's present relevant items, and for the tie group holding place R: T
    relevant items above it, g present items in it, r of them relevant, and t of its places
    inside the top R.

    A tie group straddling place R contributes its share of relevant items to the places left,
    which is the expected R-precision when the tie is broken at random, so the result never
    depends on the item order. A query without a present relevant item gives NaN, never 0.
    Bad input, the item mask and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, Q, m]`` real scores of the m items of each query, larger ranked first.
      labels: ``[*batch, Q, m]`` labels in {0, 1} or bool (1 relevant), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, Q, m]`` item mask of 0 and 1, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch, Q]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [[0.9, 0.8, 0.7, 0.6], [0.9, 0.5, 0.5, 0.1]]
      >>> labels = [[1, 0, 1, 0], [1, 0, 1, 0]]  # R = 2 for both
      >>> [round(float(x), 4) for x in jm.r_precision(scores, labels)]  # 1 of 2; 1 + 1/2 of 2
      [0.5, 0.75]

    References:
      Buckley & Voorhees (2000), "Evaluating evaluation measure stability", Proc. SIGIR,
      33-40. McSherry & Najork (2008), "Computing information retrieval performance measures
      efficiently in the presence of tied scores", Proc. ECIR, LNCS 4956:414-421.
    """
    return retrieval_ties.run_binary(scores, labels, sample_weight).r_precision


def query_mean(values: ArrayLike, *, sample_weight: ArrayLike | None = None) -> Array:
    r"""Weighted mean of per-query values over the last axis, undefined (NaN) queries left out.

    The average over queries of any metric of this module (MRR, MAP@k, mean NDCG@k): with
    `sample_weight` given per query it equals ``sklearn.metrics.ndcg_score(..., sample_weight=
    w)`` when every query has a relevant item. To bootstrap over queries, resample the query
    weights: ``lambda s, r, sample_weight: query_mean(ndcg(s, r, k=10),
    sample_weight=sample_weight)`` with weights ``[Q]``.

    .. math:: \bar v = \frac{\sum_{q:\, v_q \ne \mathrm{NaN}} w_q v_q}
              {\sum_{q:\, v_q \ne \mathrm{NaN}} w_q}

    A NaN value (a query without a relevant item) takes no part, rather than counting as 0;
    with no defined value, or zero weight on all of them, the mean is NaN. An integer weight w
    stands for w copies of the query. Bad input: docs/conventions.md.

    Args:
      values: ``[*batch, Q]`` per-query values, NaN where undefined.
      sample_weight: optional ``[*batch, Q]`` non-negative query weights, broadcasting
        against `values`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> float(jm.query_mean([1.0, 0.5, np.nan, 0.0]))  # the third query has no relevant item
      0.5
      >>> float(jm.query_mean([1.0, 0.5, np.nan, 0.0], sample_weight=[2, 0, 5, 2]))
      0.5
    """
    values = coercion.as_real_array(values, "values", host=True)
    weights, invalid = None, np.zeros((), bool)
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
        coercion.sample_axis_shapes([("values", values), ("sample_weight", weights)])
        invalid = checks.check_weights(weights)
    return _query_mean(values, weights, invalid)


# One compiled program per eager call (each operation was a program of its own: 12 to compile
# for new shapes); inlined in a caller's trace.
@kernels.sample_jit
def _query_mean(values: Array, weights: Array | None, invalid: Array) -> Array:
    values = values.astype(numerics.float_dtype())
    weights = jnp.ones((), values.dtype) if weights is None else weights.astype(values.dtype)
    defined = ~jnp.isnan(values)
    weights = jnp.where(defined, weights, 0)
    total = (weights * jnp.where(defined, values, 0)).sum(-1)
    return batching.nan_where(invalid, safe_divide(total, weights.sum(-1), jnp.nan))
