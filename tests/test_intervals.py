import math
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

import jaxmetrics as jm

ASAH = np.genfromtxt(Path(__file__).parent / "data" / "asah.csv", delimiter=",", names=True)


def asah():
    labels = ASAH["poor_outcome"].astype(np.int32)
    scores = np.stack([ASAH["wfns"], ASAH["s100b"], ASAH["ndka"]]).astype(np.float32)
    return scores, labels


def test_wilson_40_of_50_from_seed_000():
    low, high = jm.wilson_interval(40, 50)
    assert (round(float(low), 3), round(float(high), 3)) == (0.670, 0.888)


def test_binomial_intervals_18_of_20_published():
    # R's binom / statsmodels' test values (shared/data/README.md)
    np.testing.assert_allclose(jm.wilson_interval(18, 20), [0.6989663548, 0.9721335188], atol=1e-6)
    np.testing.assert_allclose(
        jm.clopper_pearson_interval(18, 20), [0.6830172860, 0.9876514728], atol=1e-6
    )
    np.testing.assert_allclose(
        jm.agresti_coull_interval(18, 20), [0.6867561126, 0.9843437610], atol=1e-6
    )


def test_binomial_intervals_batched_against_scipy():
    successes = np.array([0, 1, 7, 19, 20, 55])
    trials = np.array([20, 20, 20, 20, 20, 90])
    for method, ours in (("wilson", jm.wilson_interval), ("exact", jm.clopper_pearson_interval)):
        low, high = jax.jit(lambda k, n, f=ours: f(k, n, confidence=0.9))(successes, trials)
        for i, (k, n) in enumerate(zip(successes, trials)):
            ci = stats.binomtest(int(k), int(n)).proportion_ci(confidence_level=0.9, method=method)
            assert float(low[i]) == pytest.approx(ci.low, abs=2e-6)
            assert float(high[i]) == pytest.approx(ci.high, abs=2e-6)


def test_binomial_bad_counts():
    with pytest.raises(ValueError, match=r"`successes` must lie in \[0, trials\].*index \(1,\)"):
        jm.wilson_interval([3, 9], [5, 8])
    with pytest.raises(ValueError, match="`confidence`"):
        jm.wilson_interval(3, 5, confidence=1.5)


def test_delong_on_asah_matches_proc():
    scores, labels = asah()
    result = jm.delong(scores, labels)
    np.testing.assert_allclose(
        result.auc, [0.823678861788618, 0.731368563685637, 0.611957994579946], rtol=1e-6
    )
    np.testing.assert_allclose(
        result.variance, [0.00146991470882363, 0.00266868245717244, 0.0031908105493913], rtol=1e-5
    )
    assert float(result.covariance[0, 2]) == pytest.approx(-0.000532967856762438, rel=1e-5)
    np.testing.assert_allclose([result.low[1], result.high[1]], [0.6301182, 0.8326189], atol=1e-6)
    np.testing.assert_allclose(
        [result.low[2], result.high[2]], [0.501244999271703, 0.722670989888189], atol=1e-6
    )
    single = jm.delong(scores[1], labels)
    assert single.auc.shape == () and float(single.variance) == pytest.approx(0.002668682, rel=1e-5)


@pytest.mark.parametrize(
    "a, b, statistic, p_value",
    [
        (0, 1, 2.20898359144091, 0.0271757822291882),
        (0, 2, 2.79777591868904, 0.00514557970691098),
        (2, 1, -1.39077002573558, 0.164295175223054),
    ],
)
def test_paired_delong_tests_on_asah_match_proc(a, b, statistic, p_value):
    scores, labels = asah()
    test = jm.delong_test(scores[a], scores[b], labels)
    assert float(test.statistic) == pytest.approx(statistic, rel=1e-5)
    assert float(test.p_value) == pytest.approx(p_value, rel=1e-4)
    if (a, b) == (0, 1):
        assert float(test.low) == pytest.approx(0.0104061769564846, abs=1e-6)
        assert float(test.high) == pytest.approx(0.174214419249478, abs=1e-6)


def structural_components_oracle(scores, labels):
    """DeLong's covariance by counting pairs, O(M n+ n-)."""
    pos, neg = labels == 1, labels == 0
    m, n = pos.sum(), neg.sum()
    v10, v01 = [], []
    for s in scores.astype(np.float64):
        psi = (s[pos][:, None] > s[neg][None, :]) + 0.5 * (s[pos][:, None] == s[neg][None, :])
        v10.append(psi.mean(1))
        v01.append(psi.mean(0))
    v10, v01 = np.array(v10), np.array(v01)
    return v10.mean(1), np.cov(v10) / m + np.cov(v01) / n


def test_delong_against_pair_counting_oracle_with_ties(rng):
    labels = rng.integers(0, 2, 80)
    scores = rng.integers(0, 6, (3, 80)).astype(np.float32) + labels * rng.integers(0, 3, 80)
    auc, covariance = structural_components_oracle(scores, labels)
    result = jm.delong(scores, labels)
    np.testing.assert_allclose(result.auc, auc, atol=1e-6)
    np.testing.assert_allclose(result.covariance, covariance, atol=1e-7)


def test_hanley_mcneil_table_one():
    # Hanley & McNeil (1982) Table I: 58 normal and 51 abnormal cases rated 1-5
    ratings = np.arange(1, 6, dtype=np.float32)
    normal, abnormal = [33, 6, 6, 11, 2], [3, 2, 2, 11, 33]
    scores = np.concatenate([np.repeat(ratings, normal), np.repeat(ratings, abnormal)])
    labels = np.concatenate([np.zeros(58, int), np.ones(51, int)])
    auc = float(jm.roc_auc(scores, labels))
    assert auc == pytest.approx(0.8931711, abs=1e-6)
    assert float(jm.hanley_mcneil_standard_error(auc, 51, 58)) == pytest.approx(0.03249, abs=1e-5)
    assert math.sqrt(float(jm.delong(scores, labels).variance)) == pytest.approx(0.03072, abs=1e-5)


def test_delong_needs_two_of_each_class():
    with pytest.raises(ValueError, match="two positives and two negatives"):
        jm.delong([0.1, 0.5, 0.7], [0, 1, 1])
    with pytest.raises(ValueError, match="`scores_a` and `scores_b`"):
        jm.delong_test([0.1, 0.5, 0.7, 0.2], [0.1, 0.5, 0.7], [0, 1, 1, 0])
