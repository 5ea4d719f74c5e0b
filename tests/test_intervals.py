import logging
import math
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import special, stats

import jaxmetrics as jm

ASAH = np.genfromtxt(Path(__file__).parent / "data" / "asah.csv", delimiter=",", names=True)


def asah():
    labels = ASAH["poor_outcome"].astype(np.int32)
    scores = np.stack([ASAH["wfns"], ASAH["s100b"], ASAH["ndka"]]).astype(np.float32)
    return scores, labels


def test_wilson_interval_of_a_recall_of_40_of_50():
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


def test_clopper_pearson_of_large_trial_counts_within_1e5_of_the_beta_quantiles():
    """10^5-10^10 trials: float32's lgamma in `jax.scipy.special.betainc` put the bounds of
    1 of 10^6 at (5.8e-8, 3.6e-6) for (2.53e-8, 5.57e-6), and 500 of 10^6's lower bound above
    the exact one (anti-conservative). Each bound is checked by its definition, with scipy's
    float64 regularised incomplete beta: the bound lies within a relative 1e-5 of the point
    where I_x(k, n - k + 1) = alpha / 2 (the lower) or I_x(k + 1, n - k) = 1 - alpha / 2 (the
    upper). (scipy's inverse, and statsmodels through it, misses some of these: 999 of 10^10.)"""
    cases = [(0, 1e6), (1, 1e6), (5, 1e5), (500, 1e6), (3e5, 1e6), (999, 1e10), (2, 1e10)]
    cases += [(1000, 1e8), (1e4, 1e6), (7, 7), (1, 2), (3e6, 1e7), (5e5, 1e6)]
    successes, trials = (np.array(c, np.float32) for c in zip(*cases))
    alpha = 0.05 / 2
    for interval in (jm.clopper_pearson_interval, jax.jit(jm.clopper_pearson_interval)):
        low, high = (np.asarray(b, np.float64) for b in interval(successes, trials))
        for k, n, lo, hi in zip(successes.astype(float), trials.astype(float), low, high):
            if k == 0:
                assert lo == 0.0
            else:
                cdf = [special.betainc(k, n - k + 1, lo * f) for f in (1 - 1e-5, 1 + 1e-5)]
                assert cdf[0] < alpha < cdf[1], (k, n, lo)
            if k == n:
                assert hi == 1.0
            else:
                cdf = [special.betainc(k + 1, n - k, hi * f) for f in (1 - 1e-5, 1 + 1e-5)]
                assert cdf[0] < 1 - alpha < cdf[1], (k, n, hi)


def test_clopper_pearson_under_x64_bisects_float64(x64):
    for k, n in ((1, 10**6), (500, 10**6), (999, 10**10), (18, 20)):
        low, high = jm.clopper_pearson_interval(k, n)
        assert low.dtype == np.float64
        for bound, a, b, q in ((low, k, n - k + 1, 0.025), (high, k + 1, n - k, 0.975)):
            cdf = [special.betainc(a, b, float(bound) * f) for f in (1 - 1e-9, 1 + 1e-9)]
            assert cdf[0] < q < cdf[1], (k, n, float(bound))


INTERVALS = [jm.wilson_interval, jm.agresti_coull_interval, jm.clopper_pearson_interval]


@pytest.mark.parametrize("interval", INTERVALS)
def test_binomial_bad_counts(interval):
    with pytest.raises(
        ValueError, match=r"`successes` must lie in \[0, trials\]; found 9 at index 1"
    ):
        interval([3, 9], [5, 8])
    with pytest.raises(ValueError, match=r"`trials` must be positive counts; found 0 at index 0"):
        interval([0, 1], [0, 8])
    with pytest.raises(ValueError, match=r"`successes`.*found nan at index 1"):
        interval(np.array([1.0, np.nan]), 5)
    for confidence in (1.5, 0.0, 1.0):
        with pytest.raises(ValueError, match=r"`confidence` must be in \(0, 1\)"):
            interval(3, 5, confidence=confidence)
    # under jit only the bad element is NaN
    low, high = jax.jit(interval)(np.array([3, 9, 2]), np.array([5, 8, 4]))
    expected_low, expected_high = interval(np.array([3, 2]), np.array([5, 4]))
    np.testing.assert_allclose(low[::2], expected_low, rtol=1e-6)
    np.testing.assert_allclose(high[::2], expected_high, rtol=1e-6)
    assert np.isnan(low[1]) and np.isnan(high[1])


@pytest.mark.parametrize("interval", INTERVALS)
def test_binomial_bounds_lie_in_the_unit_interval(interval):
    # the Wilson formula's lower bound at k = 0 is 0 only up to rounding (-1.5e-8 in float32)
    successes = np.array([0, 0, 1, 5, 20, 19])
    trials = np.array([5, 1, 1, 5, 20, 20])
    low, high = interval(successes, trials)
    assert (np.asarray(low) >= 0).all() and (np.asarray(high) <= 1).all()
    assert float(low[0]) == 0.0 and float(high[3]) == 1.0
    ci = stats.binomtest(0, 5).proportion_ci(method="wilson")
    assert float(jm.wilson_interval(0, 5)[1]) == pytest.approx(ci.high, abs=2e-6)


def test_hanley_mcneil_bad_input():
    with pytest.raises(ValueError, match=r"`auc` must be in \[0, 1\]; found 1.5 at index 1"):
        jm.hanley_mcneil_standard_error([0.7, 1.5], 10, 10)
    with pytest.raises(ValueError, match=r"`num_negative` must be a class size >= 1; found 0"):
        jm.hanley_mcneil_standard_error(0.7, 10, 0)
    got = jax.jit(jm.hanley_mcneil_standard_error)(np.array([0.7, 1.5]), 10, 10)
    assert float(got[0]) == pytest.approx(float(jm.hanley_mcneil_standard_error(0.7, 10, 10)))
    assert np.isnan(got[1])
    assert np.isnan(float(jm.hanley_mcneil_standard_error(np.nan, 10, 10)))  # undefined AUC


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


def test_delong_marks_a_bad_model_under_jit():
    scores, labels = asah()
    bad = scores.copy()
    bad[1, 4] = np.nan
    result = jax.jit(jm.delong)(bad, labels)
    good = jm.delong(scores[[0, 2]], labels)
    for field in ("auc", "variance", "low", "high"):
        values = np.asarray(getattr(result, field))
        assert np.isnan(values[1]), field
        np.testing.assert_allclose(values[[0, 2]], getattr(good, field), rtol=1e-6)
    covariance = np.asarray(result.covariance)
    assert np.isnan(covariance[1]).all() and np.isnan(covariance[:, 1]).all()
    np.testing.assert_allclose(covariance[np.ix_([0, 2], [0, 2])], good.covariance, rtol=1e-6)
    # a label outside {0, 1} poisons every model; a single NaN score the whole paired test
    bad_labels = labels.copy()
    bad_labels[3] = 2
    assert np.isnan(np.asarray(jax.jit(jm.delong)(scores, bad_labels).covariance)).all()
    test = jax.jit(jm.delong_test)(scores[0], bad[1], labels)
    assert all(np.isnan(float(x)) for x in test)
    with pytest.raises(ValueError, match=r"`scores_b` must be finite; found NaN at index 4"):
        jm.delong_test(scores[0], bad[1], labels)
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 3"):
        jm.delong(scores, bad_labels)
    with pytest.raises(ValueError, match="`confidence`"):
        jm.delong(scores, labels, confidence=1.5)


def test_delong_test_of_models_that_order_every_pair_alike(rng):
    labels = rng.integers(0, 2, 60)
    scores_a = rng.permutation(60).astype(np.float32) / 8  # distinct, exact under 2 s + 1
    test = jm.delong_test(scores_a, 2 * scores_a + 1, labels)
    # pROC: roc.test gives Z = 0, p = 1 for two ROC curves with the same ordering
    assert float(test.statistic) == 0.0 and float(test.p_value) == 1.0
    assert float(test.low) == 0.0 and float(test.high) == 0.0
    jitted = jax.jit(jm.delong_test)(scores_a, 2 * scores_a + 1, labels)
    assert float(jitted.statistic) == 0.0 and float(jitted.p_value) == 1.0


def test_delong_is_float64_end_to_end_under_x64(rng, x64):
    labels = rng.integers(0, 2, 50)
    scores = rng.normal(size=(2, 50)) + labels
    result = jm.delong(scores, labels)
    test = jm.delong_test(scores[0], scores[1], labels)
    interval = jm.wilson_interval(np.array([3]), np.array([7]))
    hanley = jm.hanley_mcneil_standard_error(0.8, 10, 12)
    for value in (*result, *test, *interval, hanley):
        assert value.dtype == np.float64
    auc, covariance = structural_components_oracle(scores, labels)
    np.testing.assert_allclose(result.auc, auc, rtol=1e-12)
    np.testing.assert_allclose(result.covariance, covariance, rtol=1e-10)


def test_delong_of_huge_weights_agrees_with_float64(rng):
    """Weights of about 1e30 (integers times 2^100): XLA folded the covariance's two divisions
    (by total - 1, then by the class total) into one by their product, which overflowed
    float32: a variance of 0 and a test statistic of inf. float64 (x64) gives the reference."""
    labels = rng.integers(0, 2, 40)
    labels[:4] = [0, 1, 0, 1]
    scores = (np.round(rng.normal(size=(2, 40)) * 4) / 4 + labels).astype(np.float32)
    weights = rng.integers(1, 4, 40) * 2.0**100

    def numbers(single):
        dtype = np.float32 if single else np.float64
        result = jm.delong(scores, labels, sample_weight=weights.astype(dtype))
        test = jax.jit(jm.delong_test)(
            scores[0], scores[1], labels, sample_weight=weights.astype(dtype)
        )
        return [np.asarray(x, np.float64) for x in (result.variance, result.covariance, *test)]

    single = numbers(True)
    jax.config.update("jax_enable_x64", True)
    try:
        double = numbers(False)
    finally:
        jax.config.update("jax_enable_x64", False)
    assert (double[0] > 0).all() and (double[0] < 1e-30).all()
    for got, expected in zip(single, double, strict=True):
        np.testing.assert_allclose(got, expected, rtol=2e-5)


def test_delong_keeps_a_model_axis_of_one():
    scores, labels = asah()
    result = jm.delong(scores[:1], labels)
    assert result.auc.shape == (1,) and result.covariance.shape == (1, 1)


@pytest.mark.parametrize("interval", INTERVALS)
def test_binomial_intervals_broadcast_eager_jit_and_vmap(interval):
    successes = np.array([[0, 3, 7], [2, 5, 10]])
    trials = np.array([10, 10, 10])
    eager = interval(successes, trials, confidence=0.9)
    assert eager[0].shape == (2, 3)
    jitted = jax.jit(lambda k, n: interval(k, n, confidence=0.9))(successes, trials)
    mapped = jax.vmap(lambda k: interval(k, trials, confidence=0.9))(successes)
    for side in (0, 1):  # atol: Wilson's lower bound at k = 0 is 0 up to rounding (~1e-8)
        np.testing.assert_allclose(jitted[side], eager[side], rtol=1e-6, atol=1e-7)
        np.testing.assert_allclose(mapped[side], eager[side], rtol=1e-6, atol=1e-7)
    for i, j in np.ndindex(2, 3):  # each element is its own proportion
        one = interval(int(successes[i, j]), int(trials[j]), confidence=0.9)
        for side in (0, 1):
            assert float(eager[side][i, j]) == pytest.approx(float(one[side]), rel=1e-6, abs=1e-7)


def test_agresti_coull_against_its_formula():
    successes, trials = np.array([0, 4, 17, 30]), np.array([12, 12, 40, 30])
    z = stats.norm.ppf(0.975)
    n_tilde = trials + z**2
    p_tilde = (successes + z**2 / 2) / n_tilde
    half = z * np.sqrt(p_tilde * (1 - p_tilde) / n_tilde)
    low, high = jm.agresti_coull_interval(successes, trials)
    np.testing.assert_allclose(low, np.clip(p_tilde - half, 0, 1), atol=1e-6)
    np.testing.assert_allclose(high, np.clip(p_tilde + half, 0, 1), atol=1e-6)


def test_hanley_mcneil_broadcasts_and_agrees_under_jit_and_vmap():
    auc = np.array([[0.6, 0.75], [0.9, 0.5]])
    eager = jm.hanley_mcneil_standard_error(auc, np.array([20, 40]), 30)
    assert eager.shape == (2, 2)
    np.testing.assert_allclose(
        jax.jit(jm.hanley_mcneil_standard_error)(auc, np.array([20, 40]), 30), eager, rtol=1e-6
    )
    mapped = jax.vmap(jm.hanley_mcneil_standard_error, in_axes=(0, None, None))(
        auc, np.array([20, 40]), 30
    )
    np.testing.assert_allclose(mapped, eager, rtol=1e-6)
    assert float(eager[0, 1]) == pytest.approx(
        float(jm.hanley_mcneil_standard_error(0.75, 40, 30)), rel=1e-6
    )


# each public function, called on good arguments, with the name of its compiled program
PROGRAMS = {
    "wilson_interval": (lambda: jm.wilson_interval(np.array([3, 5, 7]), 9), "_wilson"),
    "agresti_coull_interval": (
        lambda: jm.agresti_coull_interval(np.array([3, 5, 7]), 9),
        "_agresti_coull",
    ),
    "clopper_pearson_interval": (
        lambda: jm.clopper_pearson_interval(np.array([3, 5, 7]), 9),
        "_clopper_pearson",
    ),
    "hanley_mcneil_standard_error": (
        lambda: jm.hanley_mcneil_standard_error(np.array([0.7, 0.8, 0.9]), 9, 11),
        "_hanley_mcneil",
    ),
    "delong": (
        lambda: jm.delong(np.arange(9.0) % 4, np.arange(9) % 2),
        "_delong_fields",
    ),
    "delong_test": (
        lambda: jm.delong_test(np.arange(9.0) % 4, np.arange(9.0) % 3, np.arange(9) % 2),
        "_delong_test_fields",
    ),
}


def other_shapes():
    jm.wilson_interval(np.array([3.0, 5.0]), 7)


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_eager_call_runs_one_compiled_program(caplog, name):
    call, program = PROGRAMS[name]

    def compiled() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            call()
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]

    # its own program, and at most one for the shared check's all-False flags (per shape); none
    # when an earlier test compiled them for these shapes. A first call on other shapes compiles
    # what a process compiles once (the probe of the fast-compile options): the count holds
    # whatever ran before (alone, it once counted 4 for delong, in the suite 2)
    other_shapes()
    first = compiled()
    assert len(first) <= 2 and len([m for m in first if f"jit({program})" in m]) <= 1
    assert compiled() == []


def every_proportion(max_trials=30):
    """Every k of every n up to `max_trials`, and the ends and a middle of some large n."""
    pairs = [(k, n) for n in range(1, max_trials + 1) for k in range(n + 1)]
    for n in (1000, 123457):
        pairs += [(k, n) for k in (0, 1, n // 3, n - 1, n)]
    return np.array(pairs).T


@pytest.mark.parametrize("interval", INTERVALS)
def test_binomial_intervals_contain_the_proportion_and_are_exact_at_the_ends(interval):
    # oracle: k / n itself. Each interval holds it in exact arithmetic, with low = 0 exactly at
    # k = 0 and high = 1 exactly at k = n; Wilson's float32 rounding missed both (issue 25).
    # A confidence of 0.01 makes the intervals narrow, where rounding could drop k / n
    successes, trials = every_proportion()
    proportion = successes.astype(np.float32) / trials.astype(np.float32)  # as float32 holds it
    runs = [(c, interval(successes, trials, confidence=c)) for c in (0.01, 0.95)]
    runs.append(("jit", jax.jit(interval)(successes, trials)))
    for run, (low, high) in runs:
        low, high = np.asarray(low), np.asarray(high)
        pairs = np.stack([successes, trials], -1)
        assert (low <= proportion).all(), (run, pairs[low > proportion])
        assert (high >= proportion).all(), (run, pairs[high < proportion])
        assert (low[successes == 0] == 0).all() and (high[successes == trials] == 1).all(), run
        assert (low >= 0).all() and (high <= 1).all(), run


def test_wilson_interval_ends_of_issue_25():
    assert float(jm.wilson_interval(23, 23)[1]) == 1.0  # was 0.99999994
    assert float(jm.wilson_interval(0, 21)[0]) == 0.0  # was 4.3e-10
    # the other ends still follow the formula (float64 here)
    z = stats.norm.ppf(0.975)
    low = (23 + z**2 / 2) / (23 + z**2) - z / (23 + z**2) * np.sqrt(z**2 / 4)
    assert float(jm.wilson_interval(23, 23)[0]) == pytest.approx(low, abs=1e-6)


def test_wilson_and_hanley_mcneil_of_counts_past_1e19():
    """Weighted counts past 1e19: Wilson's k (n - k) and Hanley-McNeil's n+ n- overflowed
    float32, giving the interval [0, 1] and a standard error of 0. The formulas in float64."""
    z = stats.norm.ppf(0.975)
    for k, n in ((3e20, 1e21), (3e30, 1e31)):
        center = (k + z**2 / 2) / (n + z**2)
        half = z / (n + z**2) * np.sqrt(k * (n - k) / n + z**2 / 4)
        for interval in (jm.wilson_interval, jax.jit(jm.wilson_interval)):
            low, high = interval(np.float32(k), np.float32(n))
            assert float(low) == pytest.approx(center - half, rel=1e-6)
            assert float(high) == pytest.approx(center + half, rel=1e-6)
    # the reliability bins' intervals are Wilson's of the summed weights
    probs = np.array([0.1, 0.3, 0.6, 0.8], np.float32)
    bins = jm.reliability_bins(
        probs, [0, 1, 1, 0], num_bins=2, sample_weight=np.full(4, 2.0**100, np.float32)
    )
    np.testing.assert_allclose([bins.low, bins.high], np.full((2, 2), 0.5), atol=1e-6)
    auc, size = 0.8, 1e20
    q1, q2 = auc / (2 - auc), 2 * auc**2 / (1 + auc)
    variance = auc * (1 - auc) + (size - 1) * (q1 - auc**2 + q2 - auc**2)
    expected = math.sqrt(variance / size / size)
    got = jm.hanley_mcneil_standard_error(auc, np.float32(size), np.float32(size))
    assert float(got) == pytest.approx(expected, rel=1e-5)


def test_auc_power_of_shapes_that_do_not_broadcast_names_the_argument():
    with pytest.raises(
        ValueError,
        match=r"`num_positive` must broadcast against `auc`.*compatible with \(2,\), got \(3,\)",
    ):
        jm.auc_power(np.array([0.7, 0.8]), num_positive=np.array([10, 20, 30]), num_negative=5)
    with pytest.raises(ValueError, match=r"`num_negative` must broadcast.*got \(2, 3\)"):
        jm.auc_power(0.7, num_positive=np.array([10, 20]), num_negative=np.ones((2, 3)))
    with pytest.raises(ValueError, match="`num_positive` must broadcast"):  # at trace time
        jax.jit(lambda n: jm.auc_power(np.array([0.7, 0.8]), num_positive=n, num_negative=5))(
            np.array([10, 20, 30])
        )
    # shapes that broadcast still do: [2, 1] x [3] -> [2, 3]
    power = jm.auc_power(
        np.array([[0.7], [0.8]]), num_positive=np.array([10, 20, 30]), num_negative=5
    )
    assert power.shape == (2, 3)
