import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tied_problem
from sklearn import metrics as skm

import jaxmetrics as jm

EIGHT_SCORES = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]  # eight scored examples
EIGHT_LABELS = [1, 1, 0, 1, 0, 1, 0, 0]


def pair_count_auc(scores, labels, weights=None):
    """Brute-force oracle: the share of positive-negative pairs ranked right, ties one half."""
    w = np.ones_like(scores, dtype=np.float64) if weights is None else weights.astype(np.float64)
    pos, neg = labels == 1, labels == 0
    sp, sn = scores[pos][:, None], scores[neg][None, :]
    pair_weight = w[pos][:, None] * w[neg][None, :]
    wins = (sp > sn) + 0.5 * (sp == sn)
    return (pair_weight * wins).sum() / pair_weight.sum()


def test_eight_scored_examples():
    assert float(jm.roc_auc(EIGHT_SCORES, EIGHT_LABELS)) == 13 / 16
    assert float(jm.average_precision(EIGHT_SCORES, EIGHT_LABELS)) == pytest.approx(
        0.8542, abs=5e-5
    )
    # positives at ranks 1, 2, 4 and 6: precision@4 = 3/4, precision@6 = 4/6
    assert float(jm.precision_at_k(EIGHT_SCORES, EIGHT_LABELS, k=4)) == pytest.approx(0.75)
    assert float(jm.precision_at_k(EIGHT_SCORES, EIGHT_LABELS, k=6)) == pytest.approx(4 / 6)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("levels", [3, 20, 1000])
def test_auc_and_ap_match_sklearn_and_pair_oracle(rng, weighted, levels):
    scores, labels, weights = tied_problem(
        rng, levels=levels, weighted=weighted, float_weights=True
    )
    expected_auc = skm.roc_auc_score(labels, scores, sample_weight=weights)
    assert float(jm.roc_auc(scores, labels, sample_weight=weights)) == pytest.approx(
        expected_auc, abs=1e-6
    )
    assert expected_auc == pytest.approx(pair_count_auc(scores, labels, weights), abs=1e-12)
    expected_ap = skm.average_precision_score(labels, scores, sample_weight=weights)
    assert float(jm.average_precision(scores, labels, sample_weight=weights)) == pytest.approx(
        expected_ap, abs=1e-6
    )


@pytest.mark.parametrize("max_fpr", [0.05, 0.3, 0.5, 1.0])
@pytest.mark.parametrize("weighted", [False, True])
def test_partial_auc_matches_sklearn(rng, max_fpr, weighted):
    scores, labels, weights = tied_problem(rng, levels=15, weighted=weighted)
    expected = skm.roc_auc_score(labels, scores, sample_weight=weights, max_fpr=max_fpr)
    got = jm.roc_auc(scores, labels, sample_weight=weights, max_fpr=max_fpr)
    assert float(got) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("drop_intermediate", [False, True])
@pytest.mark.parametrize("levels", [4, 1000])
def test_curves_return_sklearns_points(rng, weighted, drop_intermediate, levels):
    scores, labels, weights = tied_problem(rng, levels=levels, weighted=weighted)
    roc = jm.roc_curve(scores, labels, sample_weight=weights, drop_intermediate=drop_intermediate)
    fpr, tpr, thresholds = skm.roc_curve(
        labels, scores, sample_weight=weights, drop_intermediate=drop_intermediate
    )
    valid = np.asarray(roc.valid)
    assert roc.fpr.shape == (scores.size + 1,)
    np.testing.assert_allclose(np.asarray(roc.fpr)[valid], fpr, atol=1e-6)
    np.testing.assert_allclose(np.asarray(roc.tpr)[valid], tpr, atol=1e-6)
    np.testing.assert_allclose(np.asarray(roc.thresholds)[valid], thresholds, rtol=1e-6)
    assert valid[: valid.sum()].all()  # real points first
    pr = jm.precision_recall_curve(
        scores, labels, sample_weight=weights, drop_intermediate=drop_intermediate
    )
    precision, recall, thresholds = skm.precision_recall_curve(
        labels, scores, sample_weight=weights, drop_intermediate=drop_intermediate
    )
    valid = np.asarray(pr.valid)
    np.testing.assert_allclose(np.asarray(pr.precision)[valid], precision, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pr.recall)[valid], recall, atol=1e-6)
    np.testing.assert_allclose(np.asarray(pr.thresholds)[valid][:-1], thresholds, rtol=1e-6)


def test_padding_repeats_the_last_point(rng):
    scores, labels, _ = tied_problem(rng, levels=3)
    roc = jm.roc_curve(scores, labels)
    last = int(np.asarray(roc.valid).sum()) - 1
    assert np.all(np.asarray(roc.fpr)[last:] == np.asarray(roc.fpr)[last])
    assert float(jnp.trapezoid(roc.tpr, roc.fpr)) == pytest.approx(
        float(jm.roc_auc(scores, labels)), abs=1e-6
    )


def test_zero_weight_samples_create_no_points(rng):
    scores, labels, _ = tied_problem(rng, levels=1000)
    weights = np.ones_like(scores)
    weights[::3] = 0
    roc = jm.roc_curve(scores, labels, sample_weight=weights, drop_intermediate=False)
    kept = weights > 0
    reference = jm.roc_curve(scores[kept], labels[kept], drop_intermediate=False)
    assert int(roc.valid.sum()) == int(reference.valid.sum())
    np.testing.assert_allclose(roc.fpr[roc.valid], reference.fpr[reference.valid], atol=1e-6)


def test_weights_batched_against_one_score_vector(rng):
    scores, labels, _ = tied_problem(rng, levels=12)
    weights = rng.integers(0, 3, (4, scores.size)).astype(np.int32)
    weights[:, :2] = 1
    got = jm.roc_auc(scores, labels, sample_weight=weights)
    for row, w in zip(np.asarray(got), weights):
        assert row == pytest.approx(skm.roc_auc_score(labels, scores, sample_weight=w), abs=1e-6)


def test_integer_weights_equal_explicit_resampling(rng):
    scores, labels, _ = tied_problem(rng, levels=12)
    index = rng.integers(0, scores.size, scores.size)
    weights = np.bincount(index, minlength=scores.size)
    for metric in (jm.roc_auc, jm.average_precision):
        by_weights = float(metric(scores, labels, sample_weight=weights))
        resampled = float(metric(scores[index], labels[index]))
        assert by_weights == pytest.approx(resampled, abs=1e-6)


def test_one_class_gives_nan():
    scores = np.array([0.1, 0.4, 0.8], np.float32)
    for labels in ([1, 1, 1], [0, 0, 0]):
        assert math.isnan(float(jm.roc_auc(scores, labels)))
        assert math.isnan(float(jm.roc_auc(scores, labels, max_fpr=0.5)))
        assert math.isnan(float(jm.average_precision(scores, labels)))
    assert np.isnan(np.asarray(jm.roc_curve(scores, [1, 1, 1]).fpr)).all()
    assert np.isnan(np.asarray(jm.precision_recall_curve(scores, [0, 0, 0]).recall)).any()


def test_all_weight_on_one_class_gives_nan():
    scores = np.array([0.1, 0.4, 0.8], np.float32)
    assert math.isnan(float(jm.roc_auc(scores, [0, 1, 1], sample_weight=[0, 1, 1])))


def test_precision_at_k_tie_rule_is_expected_precision_under_random_tie_break():
    # top score 0.9 (positive), then three samples tied at 0.5: one positive, two negatives
    scores = [0.9, 0.5, 0.5, 0.5, 0.1]
    labels = [1, 1, 0, 0, 1]
    # k = 2: the positive at 0.9 and one of the three tied; that one is positive with chance 1/3
    assert float(jm.precision_at_k(scores, labels, k=2)) == pytest.approx((1 + 1 / 3) / 2)
    assert float(jm.precision_at_k(scores, labels, k=4)) == pytest.approx(2 / 4)
    assert float(jm.precision_at_k(scores, labels, k=50)) == pytest.approx(3 / 5)
    with pytest.raises(ValueError, match="`k`"):
        jm.precision_at_k(scores, labels, k=0)


def test_logits_are_fine_no_binning():
    # metrax bins AUC on [0, 1]; exact ranking does not care about the score range
    rng = np.random.default_rng(3)
    labels = rng.integers(0, 2, 500)
    logits = (rng.normal(size=500) * 4 + 3 * labels).astype(np.float32)
    assert float(jm.roc_auc(logits, labels)) == pytest.approx(
        skm.roc_auc_score(labels, logits), abs=1e-6
    )


def test_half_precision_scores_are_accepted(rng):
    scores, labels, _ = tied_problem(rng, levels=50)
    for dtype in (jnp.bfloat16, jnp.float16):
        low = jnp.asarray(scores, dtype)
        expected = skm.roc_auc_score(labels, np.asarray(low.astype(jnp.float32)))
        assert float(jm.roc_auc(low, labels)) == pytest.approx(expected, abs=1e-6)


def test_signed_zeros_are_one_tie_group():
    scores = np.array([-0.0, 0.0, 0.0, -0.0], np.float32)
    assert float(jm.roc_auc(scores, [0, 1, 0, 1])) == 0.5


def test_precision_at_k_of_a_query_without_relevant_items_is_nan():
    values = jm.precision_at_k([[0.9, 0.5, 0.1], [0.3, 0.2, 0.1]], [[0, 0, 0], [1, 0, 0]], k=2)
    assert np.isnan(float(values[0])) and float(values[1]) == pytest.approx(0.5)


@pytest.mark.parametrize("weighted", [False, True])
def test_separated_and_reversed_rankings_are_exactly_one_and_zero(rng, weighted):
    """P terms of 1/P do not sum to 1 in floats, and XLA divides by a broadcast total through
    its reciprocal: a separated set gave 0.99999976 eagerly (issue 25, item 8)."""
    scores = np.sort(rng.random(134))  # 134 samples: padded eagerly to a bucket of 160
    labels = (np.arange(134) >= 55).astype(np.int32)  # the top 79 are positives
    weights = rng.integers(1, 4, 134) if weighted else None
    for s in (scores, scores.astype(np.float32)):
        for auc in (jm.roc_auc, jax.jit(jm.roc_auc)):
            assert float(auc(s, labels, sample_weight=weights)) == 1.0
            assert float(auc(-s, labels, sample_weight=weights)) == 0.0
        for ap in (jm.average_precision, jax.jit(jm.average_precision)):
            assert float(ap(s, labels, sample_weight=weights)) == 1.0
    classes = rng.integers(0, 3, 200)
    probs = rng.dirichlet(np.ones(3), 200) * 0.1 + np.eye(3)[classes]
    for multi_class in ("ovr", "ovo"):
        for average in ("macro", "weighted"):
            got = jm.multiclass_roc_auc(probs, classes, multi_class=multi_class, average=average)
            assert float(got) == 1.0, (multi_class, average)


@pytest.mark.usefixtures("x64")
def test_separated_ranking_is_exactly_one_under_x64(rng):
    scores = rng.random(300)
    labels = (scores > 0.5).astype(np.int32)
    assert float(jm.average_precision(scores, labels)) == 1.0
    assert float(jm.roc_auc(scores, labels, sample_weight=np.ones(300))) == 1.0
    assert float(jm.multiclass_roc_auc(np.stack([1 - scores, scores], -1), labels)) == 1.0
