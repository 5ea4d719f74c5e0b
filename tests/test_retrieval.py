"""Per-query retrieval metrics: scikit-learn's ndcg_score, brute force over every tie order,
padding == truncation, the NaN rules, bad input in both regimes, exact float64 ranking.
Compilation dominates the run time, so shapes are reused on purpose: batches are ``[4, 5, m]``
(4 x 5 queries) and single queries 1-D, eager calls pad the items to 32 and k is traced, and
the jit/vmap checks trace all six metrics in one program.
"""

import itertools
import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

from jaxmetrics._src.metrics.retrieval import (
    average_precision_at_k,
    hit_rate_at_k,
    ndcg,
    query_mean,
    r_precision,
    recall_at_k,
    reciprocal_rank,
)

BATCH, NUM_ITEMS = (4, 5), 7
K_VALUES = (1, 2, 3, 5, 9)  # 9 > NUM_ITEMS
WITHOUT_K = ("reciprocal_rank", "r_precision")
# every metric of the module as f(scores, targets, k, sample_weight); targets are the graded
# relevance for NDCG, the 0/1 labels for the others
METRICS = {
    "ndcg": lambda s, y, k, w: ndcg(s, y, k=k, sample_weight=w),
    "reciprocal_rank": lambda s, y, k, w: reciprocal_rank(s, y, sample_weight=w),
    "recall_at_k": lambda s, y, k, w: recall_at_k(s, y, k=k, sample_weight=w),
    "hit_rate_at_k": lambda s, y, k, w: hit_rate_at_k(s, y, k=k, sample_weight=w),
    "average_precision_at_k": lambda s, y, k, w: average_precision_at_k(s, y, k=k, sample_weight=w),
    "r_precision": lambda s, y, k, w: r_precision(s, y, sample_weight=w),
}


def all_metrics(scores, labels, relevance, mask, k=3):
    return {
        name: metric(scores, relevance if name == "ndcg" else labels, k, mask)
        for name, metric in METRICS.items()
    }


jitted_all = jax.jit(all_metrics)
vmapped_all = jax.jit(jax.vmap(all_metrics))  # over the first batch axis


@pytest.fixture(scope="module")
def problem():
    """4 x 5 queries of 7 items, scores on 3 levels (heavy ties), a fifth of the items absent.

    Query [0, 0] has no relevant item, query [0, 1] only absent ones (both NaN); `relevance` is
    graded, relevant exactly where `labels` is 1.
    """
    rng = np.random.default_rng(20261130)
    shape = (*BATCH, NUM_ITEMS)
    scores = rng.integers(0, 3, shape).astype(np.float32)
    labels = (rng.random(shape) < 0.4).astype(np.int32)
    mask = (rng.random(shape) > 0.2).astype(np.int32)
    labels[0, 0] = 0
    labels[0, 1], mask[0, 1] = [1, 1, 0, 0, 0, 0, 0], [0, 0, 1, 1, 1, 1, 1]
    relevance = labels * rng.integers(1, 4, shape) * rng.choice([1.0, 0.5], shape)
    return scores, labels, relevance.astype(np.float32), mask


def targets_of(name, problem):
    scores, labels, relevance, mask = problem
    return scores, relevance if name == "ndcg" else labels, mask


# ----------------------------------------------------------------------------- oracles
# Each metric of one fixed ranking (the items' labels or gains, highest score first), as loops.


def fixed_reciprocal_rank(ranked, k):
    for place, label in enumerate(ranked, start=1):
        if label:
            return 1 / place
    return math.nan


def fixed_recall(ranked, k):
    return ranked[:k].sum() / ranked.sum()


def fixed_hit_rate(ranked, k):
    return float(ranked[:k].any())


def fixed_average_precision(ranked, k):
    hits, total = 0, 0.0
    for place, label in enumerate(ranked[:k], start=1):
        if label:
            hits += 1
            total += hits / place
    return total / min(k, ranked.sum())


def fixed_r_precision(ranked, k):
    relevant = int(ranked.sum())
    return ranked[:relevant].sum() / relevant


def fixed_ndcg(ranked, k):
    def dcg(gains):
        return sum(g / math.log2(p + 1) for p, g in enumerate(gains[:k], start=1))

    return dcg(ranked) / dcg(np.sort(ranked)[::-1])


FIXED = {
    "ndcg": fixed_ndcg,
    "reciprocal_rank": fixed_reciprocal_rank,
    "recall_at_k": fixed_recall,
    "hit_rate_at_k": fixed_hit_rate,
    "average_precision_at_k": fixed_average_precision,
    "r_precision": fixed_r_precision,
}


def tie_orders(scores):
    """Every order of the items, highest score first, that a tie break can give (each tie
    group permuted every way): all equally likely under a random tie break."""
    groups = [np.flatnonzero(scores == level) for level in np.unique(scores)[::-1]]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield np.concatenate(parts)


def brute_force(name, scores, targets, mask, k):
    """The metric of each query averaged over every tie order, absent items dropped."""
    values = []
    for s, y, w in zip(*(a.reshape(-1, a.shape[-1]) for a in (scores, targets, mask))):
        s, y = s[w == 1], y[w == 1]
        if not (y > 0).any():
            values.append(math.nan)
            continue
        values.append(np.mean([FIXED[name](y[order], k) for order in tie_orders(s)]))
    return np.array(values).reshape(scores.shape[:-1])


# ----------------------------------------------------------------------------- tests


def test_ndcg_matches_sklearn_with_ties_and_k():
    rng = np.random.default_rng(7)
    shape = (*BATCH, 10)
    scores = rng.integers(0, 4, shape).astype(np.float32)
    relevance = rng.integers(0, 4, shape) * rng.random(shape)
    relevance[..., 0] = 1.5  # every query has a relevant item (sklearn would give 0 otherwise)
    # k = 3 and 4 fall inside tie groups of most queries; 12 is past the 10 items
    for k in (None, 1, 3, 4, 12):
        got = np.asarray(ndcg(scores, relevance, k=k)).reshape(-1)
        expected = [
            skm.ndcg_score(r[None], s[None], k=k)
            for s, r in zip(scores.reshape(-1, 10), relevance.reshape(-1, 10))
        ]
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=f"k={k}")


def test_ndcg_of_one_item_per_query_raises_as_sklearn():
    with pytest.raises(ValueError, match="more than 1 document"):
        skm.ndcg_score([[1.0]], [[0.5]])
    for shape in ((1,), (5, 1)):
        with pytest.raises(ValueError, match=r"more than one item per query.*\[n, 1\]"):
            ndcg(np.ones(shape), np.ones(shape))
        with pytest.raises(ValueError, match="more than one item per query"):
            jax.jit(ndcg)(np.ones(shape), np.ones(shape))


def torchmetrics_ap_at_k(scores, labels, k):
    """torchmetrics' `retrieval_average_precision(preds, target, top_k=k)` (no ties): the mean
    of precision@p over the relevant items found in the top k, 0 when none is found."""
    top = labels[np.argsort(-scores, kind="stable")][:k]
    places = np.flatnonzero(top) + 1
    return 0.0 if places.size == 0 else float(np.mean(np.arange(1, places.size + 1) / places))


def test_average_precision_at_k_with_torchmetrics_normaliser():
    rng = np.random.default_rng(11)
    scores = rng.permutation(40).reshape(4, 10).astype(np.float32)  # no ties
    labels = (rng.random((4, 10)) < 0.4).astype(np.int32)
    labels[0] = 0
    labels[1, :] = 0
    labels[1, np.argsort(-scores[1])[-1]] = 1  # query 1's one relevant item ranked last
    for k in (1, 3, 10):
        got = average_precision_at_k(scores, labels, k=k, normalizer="relevant_retrieved")
        assert np.isnan(got[0])  # no relevant item at all: undefined, as for min(k, R)
        expected = [torchmetrics_ap_at_k(s, y, k) for s, y in zip(scores[1:], labels[1:])]
        np.testing.assert_allclose(got[1:], expected, rtol=1e-6, err_msg=f"k={k}")
        default = average_precision_at_k(scores, labels, k=k)
        hits = np.array([(y[np.argsort(-s)][:k]).sum() for s, y in zip(scores, labels)])
        relevant = labels.sum(-1)
        found = hits[1:] > 0
        np.testing.assert_allclose(  # the two normalisers differ by hits / min(k, R)
            default[1:][found],
            (got[1:] * hits[1:] / np.minimum(k, relevant[1:]))[found],
            rtol=1e-6,
        )
    with pytest.raises(ValueError, match="`normalizer` must be one of"):
        average_precision_at_k(scores, labels, k=3, normalizer="torchmetrics")


@pytest.mark.parametrize("name", list(METRICS))
def test_every_metric_is_its_expectation_over_random_tie_breaks(problem, name):
    scores, targets, mask = targets_of(name, problem)
    for k in (NUM_ITEMS,) if name in WITHOUT_K else K_VALUES:
        got = np.asarray(METRICS[name](scores, targets, k, mask))
        expected = brute_force(name, scores, targets, mask, k)
        np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=f"k={k}")
    assert np.isnan(got[0, :2]).all()  # no relevant item, or only absent ones


def test_hand_computed_tie_rules():
    # place 1 is irrelevant, places 2-4 tie with one relevant item among three
    scores, labels = [0.9, 0.5, 0.5, 0.5], [0, 1, 0, 0]
    assert float(reciprocal_rank(scores, labels)) == pytest.approx((1 / 2 + 1 / 3 + 1 / 4) / 3)
    assert float(hit_rate_at_k(scores, labels, k=2)) == pytest.approx(1 / 3)
    assert float(hit_rate_at_k(scores, labels, k=3)) == pytest.approx(2 / 3)
    assert float(recall_at_k(scores, labels, k=3)) == pytest.approx(2 / 3)
    # two relevant among three tied at the top: the first relevant one is at place 1 with
    # chance 2/3, else at place 2
    assert float(reciprocal_rank([1.0, 1.0, 1.0], [1, 1, 0])) == pytest.approx(2 / 3 + 1 / 6)
    # AP@2 over the 3! orders of [1, 1, 0]: orders starting 1,1 give 1; 1,0 give 1/2; 0,1 1/4
    assert float(average_precision_at_k([1.0, 1.0, 1.0], [1, 1, 0], k=2)) == pytest.approx(
        (2 * 1 + 2 * 0.5 + 2 * 0.25) / 6
    )
    # scikit-learn's own tie example: the top two tie, gains 10 and 5 over an ideal of 10
    assert float(ndcg([1, 0, 0, 0, 1], [10, 0, 0, 1, 5], k=1)) == pytest.approx(0.75)


def test_padding_equals_truncation(problem):
    scores, labels, relevance, _ = problem
    lengths = np.random.default_rng(3).integers(2, NUM_ITEMS + 1, BATCH)
    mask = (np.arange(NUM_ITEMS) < lengths[..., None]).astype(np.int32)
    # the padding holds the highest scores and relevant items: absent, they must not count
    padded_scores = np.where(mask == 1, scores, 5.0).astype(np.float32)
    padded_labels = np.where(mask == 1, labels, 1)
    padded_relevance = np.where(mask == 1, relevance, 3.0)
    for name, metric in METRICS.items():
        targets, padding = (
            (relevance, padded_relevance) if name == "ndcg" else (labels, padded_labels)
        )
        padded = np.asarray(metric(padded_scores, padding, 3, mask))
        for n in np.unique(lengths):  # the queries of n items, cut to their n items
            truncated = np.asarray(metric(scores[..., :n], targets[..., :n], 3, None))
            np.testing.assert_allclose(
                padded[lengths == n], truncated[lengths == n], rtol=1e-6, atol=1e-7, err_msg=name
            )


def test_item_order_and_monotone_score_transforms_change_nothing(problem):
    scores, labels, relevance, mask = problem
    order = np.random.default_rng(5).permutation(NUM_ITEMS)
    transformed = (np.exp(scores) - 4).astype(np.float32)[..., order]
    for name, metric in METRICS.items():
        targets = relevance if name == "ndcg" else labels
        before = np.asarray(metric(scores, targets, 3, mask))
        after = np.asarray(metric(transformed, targets[..., order], 3, mask[..., order]))
        np.testing.assert_allclose(after, before, rtol=1e-6, err_msg=name)


def test_undefined_queries_are_nan_never_zero():
    scores = np.array([0.3, 0.2, 0.1], np.float32)
    for name, metric in METRICS.items():
        assert np.isnan(float(metric(scores, np.array([0, 0, 0]), 2, None))), name
        # the only relevant item is absent
        assert np.isnan(float(metric(scores, np.array([0, 1, 0]), 2, [1, 0, 1]))), name
    # NDCG with all-zero relevance: NaN here, 0.0 in scikit-learn
    assert np.isnan(float(ndcg(scores, [0.0, 0.0, 0.0])))


# each bad value sits in its own query; NDCG has no labels and the others no relevance
BAD_INPUTS = {
    "scores": ((0, 3), lambda s, y, r, w: (s.at[0, 3, 2].set(jnp.nan), y, r, w)),
    "labels": ((1, 2), lambda s, y, r, w: (s, y.at[1, 2, 2].set(2), r, w)),
    "sample_weight": ((2, 4), lambda s, y, r, w: (s, y, r, w.at[2, 4, 2].set(0.5))),
    "relevance": ((3, 1), lambda s, y, r, w: (s, y, r.at[3, 1, 2].set(-1.0), w)),
}


def corrupted(problem, argument):
    scores, labels, relevance, mask = (jnp.asarray(a) for a in problem)
    return BAD_INPUTS[argument][1](scores, labels, relevance, mask.astype(jnp.float32))


def affected(name, argument):
    """Whether a bad value of `argument` concerns metric `name`."""
    if argument == "labels":
        return name != "ndcg"
    return name == "ndcg" if argument == "relevance" else True


@pytest.mark.parametrize("argument", list(BAD_INPUTS))
def test_bad_input_raises_eagerly_naming_the_argument(problem, argument):
    scores, labels, relevance, mask = (np.asarray(a) for a in corrupted(problem, argument))
    for name, metric in METRICS.items():
        if affected(name, argument):
            with pytest.raises(ValueError, match=f"`{argument}` must"):
                metric(scores, relevance if name == "ndcg" else labels, 2, mask)


def test_bad_k_raises():
    for name in METRICS:
        if name not in WITHOUT_K:
            with pytest.raises(ValueError, match="`k` must be an int >= 1; got 0"):
                METRICS[name]([0.2, 0.1], [1, 0], 0, None)
    with pytest.raises(TypeError, match="`k` must"):
        recall_at_k([0.2, 0.1], [1, 0], k=1.5)


def test_bad_input_is_nan_for_that_query_only_under_jit_and_vmap(problem):
    clean = all_metrics(*problem)
    bad = jnp.asarray(problem[0]), jnp.asarray(problem[1]), jnp.asarray(problem[2])
    bad = (*bad, jnp.asarray(problem[3], jnp.float32))
    for _, corrupt in BAD_INPUTS.values():  # all four bad values at once, in four queries
        bad = corrupt(*bad)
    for run in (jitted_all, vmapped_all):
        got = run(*bad)
        for name in METRICS:
            expected = np.array(clean[name])
            for argument, (query, _) in BAD_INPUTS.items():
                if affected(name, argument):
                    expected[query] = np.nan
            np.testing.assert_allclose(got[name], expected, rtol=1e-6, err_msg=name)


def test_leading_batch_axes_eager_jit_vmap_agree(problem):
    traced = (*problem[:3], problem[3].astype(np.float32))  # the mask of the other jit test
    eager, jitted, mapped = all_metrics(*problem), jitted_all(*traced), vmapped_all(*traced)
    for name in METRICS:
        scores, targets, mask = targets_of(name, problem)
        expected = brute_force(name, scores, targets, mask, NUM_ITEMS if name in WITHOUT_K else 3)
        for got in (eager[name], jitted[name], mapped[name]):
            assert got.shape == BATCH and got.dtype == jnp.float32
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6, err_msg=name)


def test_float64_scores_one_part_in_10_to_12_apart_are_ranked_exactly():
    # float32 would merge the five scores into one tie group
    scores = 0.5 + np.array([0.0, 1e-12, 2e-12, 3e-12, 4e-12])
    labels = np.array([0, 0, 0, 1, 0])  # the 2nd highest score is the relevant one
    assert float(reciprocal_rank(scores, labels)) == 0.5
    assert float(hit_rate_at_k(scores, labels, k=1)) == 0.0
    assert float(recall_at_k(scores, labels, k=2)) == 1.0
    assert float(average_precision_at_k(scores, labels, k=2)) == 0.5
    assert float(r_precision(scores, labels)) == 0.0
    assert float(ndcg(scores, labels * 2.0)) == pytest.approx(1 / math.log2(3))
    # under jit float32 merges them: the tie rule then averages over the 5 places
    tied = float(jax.jit(reciprocal_rank)(scores, labels))
    assert tied == pytest.approx((1 + 1 / 2 + 1 / 3 + 1 / 4 + 1 / 5) / 5)


def test_x64_eager_and_jit_match_the_brute_force(problem, x64):
    scores, labels, relevance, mask = problem
    scores = scores.astype(np.float64) + 1e-12 * (scores == 2)  # distinct in float64 only
    relevance = relevance.astype(np.float64)
    x64_problem = scores, labels, relevance, mask
    eager, jitted = all_metrics(*x64_problem), jitted_all(*x64_problem)
    for name in METRICS:
        _, targets, _ = targets_of(name, x64_problem)
        expected = brute_force(name, scores, targets, mask, NUM_ITEMS if name in WITHOUT_K else 3)
        for got in (eager[name], jitted[name]):
            assert got.dtype == jnp.float64
            np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-14, err_msg=name)


def test_query_mean_leaves_undefined_queries_out():
    values = np.array([1.0, 0.5, np.nan, 0.0])
    assert float(query_mean(values)) == 0.5
    assert float(query_mean(values, sample_weight=[1, 3, 9, 0])) == pytest.approx(0.625)
    assert np.isnan(float(query_mean(np.full(4, np.nan))))
    assert np.isnan(float(query_mean(values, sample_weight=[0, 0, 1, 0])))
    np.testing.assert_allclose(query_mean(np.stack([values, values[::-1]])), [0.5, 0.5])


def test_query_mean_with_integer_weights_is_the_mean_over_repeated_queries(problem):
    scores, labels, _, mask = problem
    per_query = reciprocal_rank(scores, labels, sample_weight=mask).reshape(-1)
    counts = np.random.default_rng(11).integers(0, 4, per_query.shape)
    expected = np.nanmean(np.repeat(np.asarray(per_query), counts))
    assert float(query_mean(per_query, sample_weight=counts)) == pytest.approx(expected)


def test_query_mean_of_ndcg_matches_sklearn_with_query_weights():
    rng = np.random.default_rng(13)
    shape = (*BATCH, 10)
    scores = rng.integers(0, 4, shape).astype(np.float32)
    relevance = rng.integers(0, 4, shape).astype(np.float32)
    relevance[..., 0] = 2.0
    weights = rng.random(BATCH)
    for k in (None, 3):
        expected = skm.ndcg_score(
            relevance.reshape(-1, 10), scores.reshape(-1, 10), k=k, sample_weight=weights.ravel()
        )
        got = query_mean(ndcg(scores, relevance, k=k).reshape(-1), sample_weight=weights.ravel())
        assert float(got) == pytest.approx(expected, rel=1e-6)


def test_query_mean_bootstraps_over_query_weights(problem):
    scores, _, relevance, mask = problem

    def metric(s, r, sample_weight):
        return query_mean(ndcg(s, r, k=3, sample_weight=mask), sample_weight=sample_weight)

    resamples = np.random.default_rng(17).integers(0, 3, (6, BATCH[1]))  # query weights
    got = jax.jit(jax.vmap(lambda w: metric(scores, relevance, w)))(resamples)
    values = np.asarray(ndcg(scores, relevance, k=3, sample_weight=mask))
    defined = ~np.isnan(values)  # the first two queries have no relevant item
    for w, row in zip(resamples, np.asarray(got)):
        expected = [np.average(v[d], weights=w[d]) for v, d in zip(values, defined)]
        np.testing.assert_allclose(row, expected, rtol=1e-6)


def test_query_mean_checks_its_weights():
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        query_mean([0.5, 1.0], sample_weight=[1, -1])
    got = jax.jit(query_mean)(jnp.ones((2, 3)), sample_weight=jnp.array([[1, 1, 1], [1, -1, 1]]))
    assert float(got[0]) == 1.0 and np.isnan(float(got[1]))


def test_bootstrap_of_a_mean_ndcg_resamples_queries():
    import jaxmetrics as jm

    rng = np.random.default_rng(21)
    scores = np.round(rng.random((15, 8)), 1)
    relevance = rng.integers(0, 3, (15, 8)).astype(np.float32)
    relevance[:, 0] = 1  # every query has a relevant item

    def mean_ndcg(s, r, sample_weight):
        return query_mean(jm.ndcg(s, r, k=5), sample_weight=sample_weight)

    key = jax.random.key(5)
    result = jm.bootstrap(mean_ndcg, scores, relevance, key=key, num_resamples=30, sample_axis=-2)
    assert float(result.estimate) == pytest.approx(skm.ndcg_score(relevance, scores, k=5), rel=1e-5)
    weights = np.asarray(jm.resample_weights(key, jnp.arange(4), scores.shape[0]))
    for b in range(4):
        drawn = np.repeat(np.arange(scores.shape[0]), weights[b])
        expected = skm.ndcg_score(relevance[drawn], scores[drawn], k=5)
        assert float(result.samples[b]) == pytest.approx(expected, rel=1e-5)


def test_an_eager_query_mean_compiles_one_program(caplog):
    # it ran operation by operation: 12 programs to compile for a first call on new shapes
    rng = np.random.default_rng(9)
    query_mean(rng.random(5), sample_weight=rng.random(5))  # other shapes first
    values = rng.random((2, 8))
    values[:, 3] = np.nan  # queries without a relevant item
    weights = rng.integers(0, 4, (2, 8)).astype(np.float32)
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        mean = query_mean(values, sample_weight=weights)
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert len(messages) == 1 and "jit(_query_mean)" in messages[0], messages
    defined = ~np.isnan(values)
    expected = [np.average(v[d], weights=w[d]) for v, w, d in zip(values, weights, defined)]
    np.testing.assert_allclose(mean, expected, rtol=1e-6)
