"""The precision rules: called eagerly, ranking metrics on float64 or large-integer inputs give
scikit-learn's float64 answers; rates are exact where the ratio is representable; with x64 on,
results are float64 end to end. References are scikit-learn's functions on the float64 data."""

import jax
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm


@pytest.fixture
def near_ties(rng):
    """Scores 0.5 + z * 1e-9: distinct in float64, all equal to 0.5 in float32."""
    labels = (rng.random(300) < 0.4).astype(np.int32)
    scores = 0.5 + (rng.normal(size=300) + labels) * 1e-9
    assert np.unique(scores.astype(np.float32)).size == 1
    return scores, labels


def test_auc_and_ap_of_float64_scores_equal_sklearn(near_ties):
    scores, labels = near_ties
    expected = skm.roc_auc_score(labels, scores)
    assert expected > 0.6  # far from the 0.5 a float32 cast would give
    assert float(jm.roc_auc(scores, labels)) == pytest.approx(expected, abs=1e-6)
    assert float(jm.average_precision(scores, labels)) == pytest.approx(
        skm.average_precision_score(labels, scores), abs=1e-6
    )
    assert float(jm.roc_auc(scores, labels, max_fpr=0.3)) == pytest.approx(
        skm.roc_auc_score(labels, scores, max_fpr=0.3), abs=1e-6
    )


def test_curves_of_float64_scores_equal_sklearn_with_thresholds_in_input_values(near_ties):
    scores, labels = near_ties
    curve = jm.roc_curve(scores, labels)
    fpr, tpr, thresholds = skm.roc_curve(labels, scores)
    valid = np.asarray(curve.valid)
    np.testing.assert_allclose(np.asarray(curve.fpr)[valid], fpr, atol=1e-7)
    np.testing.assert_allclose(np.asarray(curve.tpr)[valid], tpr, atol=1e-7)
    assert curve.thresholds.dtype == np.float64
    np.testing.assert_array_equal(np.asarray(curve.thresholds)[valid], thresholds)
    pr = jm.precision_recall_curve(scores, labels)
    precision, recall, pr_thresholds = skm.precision_recall_curve(labels, scores)
    valid = np.asarray(pr.valid)
    np.testing.assert_allclose(np.asarray(pr.precision)[valid], precision, atol=1e-7)
    np.testing.assert_allclose(np.asarray(pr.recall)[valid], recall, atol=1e-7)
    np.testing.assert_array_equal(np.asarray(pr.thresholds)[valid][:-1], pr_thresholds)


def test_confusion_counts_at_float64_thresholds_equal_sklearn(near_ties):
    scores, labels = near_ties
    thresholds = np.quantile(scores, [0.1, 0.5, 0.9]) + 1e-12
    counts = jm.confusion_counts(scores, labels, thresholds)
    for k, threshold in enumerate(thresholds):
        tn, fp, fn, tp = skm.confusion_matrix(labels, scores >= threshold, labels=[0, 1]).ravel()
        assert [int(c[k]) for c in counts] == [tp, fp, fn, tn]
    # float32 scores against a float64 threshold between two float32 values: exact comparison
    scores32 = np.array([0.1, 0.2, 0.3], np.float32)
    threshold = np.nextafter(np.float64(scores32[1]), 1.0)  # just above 0.2f, rounds down to it
    assert np.float32(threshold) == scores32[1]
    counts = jm.confusion_counts(scores32, [0, 1, 1], threshold)
    assert int(counts.tp) + int(counts.fp) == int((scores32 >= threshold).sum()) == 1


def test_threshold_search_of_float64_scores_finds_the_exact_threshold(near_ties):
    scores, labels = near_ties
    best = jm.max_f_beta(scores, labels)
    # brute force over every distinct float64 threshold
    f1 = [skm.f1_score(labels, scores >= t) for t in np.unique(scores)]
    assert float(best.value) == pytest.approx(max(f1), abs=1e-6)
    assert float(best.threshold) == np.unique(scores)[int(np.argmax(f1))]


def test_bootstrap_of_float64_scores_uses_their_exact_order(near_ties):
    scores, labels = near_ties
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=50)
    assert float(result.estimate) == pytest.approx(skm.roc_auc_score(labels, scores), abs=1e-6)
    assert float(result.low) > 0.55


def test_breast_cancer_naive_bayes_probabilities_equal_sklearn():
    # GaussianNB's probabilities crowd near 0 and 1, where float32 merges many of them
    from sklearn.datasets import load_breast_cancer
    from sklearn.naive_bayes import GaussianNB

    features, labels = load_breast_cancer(return_X_y=True)
    probs = GaussianNB().fit(features[::2], labels[::2]).predict_proba(features[1::2])[:, 1]
    labels = labels[1::2]
    assert np.unique(probs.astype(np.float32)).size < np.unique(probs).size
    assert float(jm.roc_auc(probs, labels)) == pytest.approx(
        skm.roc_auc_score(labels, probs), abs=1e-6
    )
    assert float(jm.average_precision(probs, labels)) == pytest.approx(
        skm.average_precision_score(labels, probs), abs=1e-6
    )


def test_large_integer_scores_keep_their_order(rng):
    assert float(jm.roc_auc([2**24, 2**24 + 1], [0, 1])) == 1.0
    scores = rng.integers(2**40, 2**40 + 50, 200)  # int64, far beyond float32's 2^24
    labels = (rng.random(200) < 0.5).astype(np.int32)
    assert float(jm.roc_auc(scores, labels)) == pytest.approx(
        skm.roc_auc_score(labels, scores), abs=1e-6
    )
    choice = jm.budget_threshold(scores, k=5)
    assert int(choice.threshold) == np.sort(scores)[-5]


def test_under_jit_float64_input_is_what_jax_made_it(near_ties):
    # documented: inside jit the input is already float32 (x64 off), so the near-ties merge
    scores, labels = near_ties
    assert float(jax.jit(jm.roc_auc)(scores, labels)) == 0.5


@pytest.mark.parametrize("size", [41, 47, 49, 97])
def test_rates_are_exact_where_the_ratio_is_representable(size):
    labels = np.r_[np.ones(size, np.int32), np.zeros(size, np.int32)]
    scores = np.arange(2 * size, dtype=np.float32)
    curve = jm.roc_curve(scores, labels)
    valid = np.asarray(curve.valid)
    assert np.asarray(curve.fpr)[valid][-1] == 1.0 and np.asarray(curve.tpr)[valid][-1] == 1.0
    assert float(jax.jit(jm.precision_recall_curve)(scores, labels).recall[0]) == 1.0
    assert float(jm.recall(jm.Counts(size, 0, 0, size))) == 1.0


def test_x64_results_are_float64_end_to_end(rng, x64):
    scores = 0.5 + rng.normal(size=40) * 1e-12  # distinct in float64 only
    labels = (rng.random(40) < 0.5).astype(np.int32)
    labels[:2] = [0, 1]
    counts = jm.confusion_counts(scores, labels, 0.0)
    assert jm.roc_auc(scores, labels).dtype == np.float64
    assert jm.average_precision(scores, labels).dtype == np.float64
    assert jm.precision(counts).dtype == np.float64
    assert jm.f_beta(counts).dtype == np.float64
    assert jm.matthews_corrcoef(counts).dtype == np.float64
    curve = jm.roc_curve(scores, labels)
    assert curve.fpr.dtype == curve.thresholds.dtype == np.float64
    assert jm.max_f_beta(scores, labels).value.dtype == np.float64
    assert float(jm.roc_auc(scores, labels)) == pytest.approx(
        skm.roc_auc_score(labels, scores), abs=1e-12
    )


def test_delong_of_float64_scores_uses_their_exact_order(near_ties):
    scores, labels = near_ties
    result = jm.delong(scores, labels)
    assert float(result.auc) == pytest.approx(skm.roc_auc_score(labels, scores), abs=1e-6)
    assert float(result.variance) > 0
    test = jm.delong_test(scores, 0.5 + (scores - 0.5) * 3, labels)  # the same order
    assert float(test.statistic) == 0.0 and float(test.p_value) == 1.0
