"""Calibration with intervals and tests: the logistic recalibration fits against statsmodels'
GLM, Spiegelhalter's and Hosmer-Lemeshow's tests and the debiased calibration error against
their formulas written here in numpy (p-values from scipy.stats)."""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import statsmodels.api as sm
from scipy import stats

import jaxmetrics as jm

N = 1200  # one sample size, so that each program compiles once or twice
EPS32 = float(np.finfo(np.float32).eps)


def problem(rng, power=1.0, n=N):
    """Probabilities and labels drawn as Bernoulli(probs**power): calibrated at power 1."""
    probs = rng.beta(2, 3, n)
    labels = (rng.random(n) < probs**power).astype(np.int32)
    return probs, labels


def glm(probs, labels, weights, *, slope):
    """statsmodels' fit of logit P = a + logit(p) (intercept) or a + b logit(p) (slope), with
    the probabilities clipped to [eps, 1 - eps] of float32 as the functions document."""
    p = np.clip(probs.astype(np.float64), EPS32, 1 - EPS32)
    x = np.log(p) - np.log1p(-p)
    ones = np.ones((p.size, 1))
    family = sm.families.Binomial()
    if slope:
        fit = sm.GLM(labels, np.c_[ones, x], family=family, freq_weights=weights).fit()
        return fit.params[1], *fit.conf_int()[1]
    fit = sm.GLM(labels, ones, family=family, offset=x, freq_weights=weights).fit()
    return fit.params[0], *fit.conf_int()[0]


def spiegelhalter_oracle(p, y, w):
    z = np.sum(w * (y - p) * (1 - 2 * p)) / np.sqrt(np.sum(w * (1 - 2 * p) ** 2 * p * (1 - p)))
    return z, 2 * stats.norm.sf(abs(z))


def repeated(weights, *arrays):
    return [np.repeat(a, weights) for a in arrays]


def hosmer_lemeshow_oracle(p, y, groups=10):
    """R's ResourceSelection::hoslem.test: cut at quantile(p, type 7), right-closed, lowest
    included; (obs - exp)^2 / exp summed over the y = 1 and y = 0 cells; df = g - 2."""
    edges = np.quantile(p, np.linspace(0, 1, groups + 1))
    statistic = 0.0
    for g in range(groups):
        inside = (p > edges[g]) & (p <= edges[g + 1])
        if g == 0:
            inside |= p == edges[0]
        for observed, expected in [
            (y[inside].sum(), p[inside].sum()),
            ((1 - y[inside]).sum(), (1 - p[inside]).sum()),
        ]:
            statistic += (observed - expected) ** 2 / expected
    return statistic, stats.chi2.sf(statistic, groups - 2)


def debiased_oracle(p, y, bins=15, squared=False):
    """Kumar, Liang & Ma (2019): per equal-width bin (a, b], the squared gap minus
    ybar (1 - ybar) / (n_b - 1), weighted by n_b / n; bins of one sample add nothing."""
    edges = np.linspace(0, 1, bins + 1)
    total = 0.0
    for b in range(bins):
        inside = (p > edges[b]) & (p <= edges[b + 1]) | ((b == 0) & (p == 0))
        count = inside.sum()
        if count >= 2:
            ybar, pbar = y[inside].mean(), p[inside].mean()
            total += count / p.size * ((ybar - pbar) ** 2 - ybar * (1 - ybar) / (count - 1))
    return total if squared else np.sqrt(max(total, 0.0))


def test_fits_match_statsmodels(rng):
    probs, labels = problem(rng, power=1.4)
    probs[:4] = [0.0, 1.0, 0.0, 1.0]  # clipped to [eps, 1 - eps] of float32
    labels[:4] = [0, 1, 1, 0]
    probs = probs.astype(np.float32)
    weights = rng.integers(0, 4, N).astype(np.float32)
    for w in (None, weights):
        for fit, slope in ((jm.calibration_intercept, False), (jm.calibration_slope, True)):
            got = fit(probs, labels, sample_weight=w)
            np.testing.assert_allclose(got, glm(probs, labels, w, slope=slope), atol=2e-5)


def test_float64_fits_match_statsmodels(rng, x64):
    probs, labels = problem(rng, power=0.8, n=300)
    weights = rng.random(300) * 3  # fractional frequency weights, as statsmodels takes them
    got = jm.calibration_slope(probs, labels, sample_weight=weights, confidence=0.9)
    fit = sm.GLM(
        labels,
        np.c_[np.ones(300), np.log(probs / (1 - probs))],
        family=sm.families.Binomial(),
        freq_weights=weights,
    ).fit(tol=1e-14)  # its standard error is the information at its last-but-one iterate
    assert got.value.dtype == jnp.float64
    np.testing.assert_allclose(got, [fit.params[1], *fit.conf_int(0.1)[1]], rtol=1e-9)


def test_tests_and_debiased_error_match_their_formulas(rng):
    probs, labels = problem(rng, power=1.2)
    weights = np.ones(N)
    z, p = spiegelhalter_oracle(probs, labels, weights)
    np.testing.assert_allclose(jm.spiegelhalter_test(probs, labels), [z, p], rtol=1e-4)
    statistic, p = hosmer_lemeshow_oracle(probs, labels)
    test = jm.hosmer_lemeshow_test(probs, labels)
    np.testing.assert_allclose(test[:2], [statistic, p], rtol=1e-4)
    assert int(test.degrees_of_freedom) == 8
    error = float(jm.debiased_calibration_error(probs, labels))
    assert error == pytest.approx(debiased_oracle(probs, labels), rel=1e-4)
    squared = jm.debiased_calibration_error(probs, labels, num_bins=5, squared=True)
    assert float(squared) == pytest.approx(debiased_oracle(probs, labels, 5, True), rel=1e-4)
    # the authors' package, uncertainty-calibration 0.1.4, on these data (not a dependency):
    # calibration.utils._get_ce(probs, labels, 2, True, 15, get_equal_prob_bins), and
    # unbiased_square_ce of its 5 equal-width bins
    assert error == pytest.approx(0.0653261021241506, rel=1e-5)
    assert float(squared) == pytest.approx(0.003979108725164457, rel=1e-4)


FUNCTIONS = [
    jm.calibration_intercept,
    jm.calibration_slope,
    jm.spiegelhalter_test,
    jm.hosmer_lemeshow_test,
    jm.debiased_calibration_error,
]


def every(probs, labels, sample_weight=None):
    """The five functions' results, flattened: one program for all of them under jit."""
    return [
        leaf
        for metric in FUNCTIONS
        for leaf in jax.tree_util.tree_leaves(metric(probs, labels, sample_weight=sample_weight))
    ]


def test_jit_over_a_batch_axis_catches_squared_probabilities(rng):
    probs, labels = problem(rng)
    batch = np.stack([probs, probs**2, probs])  # the same outcomes: calibrated, too low, bad
    batch[2, 7] = 1.5  # under jit a bad probability makes its row NaN (HL's df -1)
    got = jax.jit(every)(batch, labels)
    intercept, slope = jm.Estimate(*got[:3]), jm.Estimate(*got[3:6])
    spiegelhalter, hosmer_lemeshow, error = got[7], got[9], got[11]
    assert intercept.low[0] < 0 < intercept.high[0] and slope.low[0] < 1 < slope.high[0]
    assert spiegelhalter[0] > 0.05 and hosmer_lemeshow[0] > 0.05
    assert intercept.low[1] > 0.5  # events much more frequent than predicted
    assert spiegelhalter[1] < 1e-6 and hosmer_lemeshow[1] < 1e-6
    assert error[1] > 0.1 > error[0]
    for row in range(2):  # each row is the row on its own, eagerly
        np.testing.assert_allclose([x[row] for x in got], every(batch[row], labels), rtol=2e-5)
    assert all(np.isnan(x[2]) or x[2] == -1 for x in got)


def test_vmap_over_weights_as_bootstrap_resamples(rng):
    probs, labels = problem(rng)
    # as many 0s as 2s: the repeated sample keeps N rows, the shape of the unweighted call
    counts = rng.permutation(np.repeat([0.0, 1.0, 2.0], [N // 4, N - N // 2, N // 4]))
    weights = np.stack([np.ones(N), counts, np.r_[-1.0, np.ones(N - 1)]])  # a bad weight last
    got = jax.jit(jax.vmap(every, in_axes=(None, None, 0)))(probs, labels, weights)
    np.testing.assert_allclose([x[0] for x in got], every(probs, labels), rtol=2e-5)
    rows = repeated(counts.astype(int), probs, labels)
    np.testing.assert_allclose([x[1] for x in got], every(*rows), rtol=2e-5, atol=1e-6)
    assert all(np.isnan(x[2]) or x[2] == -1 for x in got)


def test_bootstrap(rng):
    probs, labels = problem(rng, n=200)

    def slope(p, y, sample_weight):
        return jm.calibration_slope(p, y, sample_weight=sample_weight).value

    result = jm.bootstrap(slope, probs, labels, key=jax.random.key(0), num_resamples=32)
    assert np.isfinite(result.samples).all() and result.low < result.high
    assert float(result.estimate) == pytest.approx(float(slope(probs, labels, None)), rel=1e-6)


def test_undefined_values_are_nan(rng):
    probs, labels = problem(rng)
    ones = np.ones_like(labels)
    zero_weight = np.zeros(N)
    for fit in (jm.calibration_intercept, jm.calibration_slope):
        assert np.isnan(fit(probs, ones)).all()  # one class: no finite maximum
        assert np.isnan(fit(probs, labels, sample_weight=zero_weight)).all()
    # separated by logit(p): the slope is infinite, the intercept is not
    separated = (probs > np.median(probs)).astype(np.int32)
    assert np.isnan(jm.calibration_slope(probs, separated)).all()
    assert np.isfinite(jm.calibration_intercept(probs, separated)).all()
    # the tests need no second class; a zero total weight leaves nothing to test
    assert np.isfinite(jm.spiegelhalter_test(probs, ones)).all()
    assert np.isfinite(jm.hosmer_lemeshow_test(probs, ones).statistic)
    assert np.isnan(jm.spiegelhalter_test(probs, labels, sample_weight=zero_weight)).all()
    assert np.isnan(jm.hosmer_lemeshow_test(probs, labels, sample_weight=zero_weight)[:2]).all()
    assert np.isnan(jm.debiased_calibration_error(probs, labels, sample_weight=zero_weight))


def test_size_one_axes(rng):
    # one sample: one class, so no fit, and no bin of two samples
    one = ([0.3], [1])
    assert np.isnan(jm.calibration_slope(*one)).all()
    assert np.isnan(jm.debiased_calibration_error(*one))
    z = 0.7 * 0.4 / np.sqrt(0.16 * 0.21)
    assert float(jm.spiegelhalter_test(*one).statistic) == pytest.approx(z)
    # a batch axis of size 1 is kept
    probs, labels = problem(rng)
    assert jm.calibration_intercept(probs[None], labels).value.shape == (1,)
    assert jm.hosmer_lemeshow_test(probs[None], labels).degrees_of_freedom.shape == (1,)
    # a sample axis of size 1 under a batch axis is n rows of one sample: refused
    for metric in FUNCTIONS:
        with pytest.raises(ValueError, match=r"shape \(6, 1\)"):
            metric(np.full((6, 1), 0.5), np.ones((6, 1)))


@pytest.mark.parametrize("metric", FUNCTIONS, ids=lambda f: f.__name__)
@pytest.mark.parametrize(
    "change, message",
    [
        (lambda p, y, w: (np.r_[p[:3], 1.5, p[4:]], y, w), r"`probs` must be .*1\.5 at index 3"),
        (lambda p, y, w: (np.r_[p[:2], np.nan, p[3:]], y, w), r"`probs` must be .*at index 2"),
        (lambda p, y, w: (p, np.r_[y[:5], 2, y[6:]], w), r"`labels` must .*2 at index 5"),
        (lambda p, y, w: (p, y, np.r_[w[:1], -1.0, w[2:]]), r"`sample_weight` must be non-neg"),
    ],
)
def test_bad_input_raises(metric, change, message):
    probs, labels, weights = change(np.linspace(0.05, 0.95, 8), np.array([0, 1] * 4), np.ones(8))
    with pytest.raises(ValueError, match=message):
        metric(probs, labels, sample_weight=weights)


def test_bad_options_raise():
    probs, labels = [0.2, 0.7, 0.4, 0.9], [0, 1, 1, 1]
    with pytest.raises(ValueError, match="`confidence` must be in"):
        jm.calibration_slope(probs, labels, confidence=1.5)
    with pytest.raises(ValueError, match="`num_groups` must be an int >= 3"):
        jm.hosmer_lemeshow_test(probs, labels, num_groups=2)
    with pytest.raises(TypeError, match="`squared` must be a bool"):
        jm.debiased_calibration_error(probs, labels, squared="yes")
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        jm.debiased_calibration_error(probs, labels, strategy="equal")


@pytest.mark.parametrize("fit", [jm.calibration_slope, jm.calibration_intercept])
def test_huge_weights_give_the_same_fit_and_a_narrower_interval(rng, fit):
    """Frequency weights times 2^100 (exact in float32): the same estimate, and a Wald interval
    2^50 times narrower. The 2 x 2 information's determinant overflowed: the slope came back as
    its start, 1, with an interval [1, 1]."""
    probs, labels = problem(rng)
    weights = rng.integers(1, 4, N).astype(np.float32)
    base = fit(probs, labels, sample_weight=weights)
    huge = jax.jit(fit)(probs, labels, sample_weight=weights * np.float32(2.0**100))
    assert float(huge.value) == pytest.approx(float(base.value), rel=1e-5, abs=1e-6)
    half = (float(base.high) - float(base.low)) / 2
    assert float(huge.high) - float(huge.value) == pytest.approx(half / 2.0**50, rel=1e-3)


def test_hosmer_lemeshow_of_huge_weights_agrees_with_float64(rng):
    """Frequency weights of about 1e30 (integers times 2^100): (O - E)^2 and E (n - E) of a
    group overflowed float32, and the statistic was inf / inf = NaN. float64 (x64), where they
    do not overflow, gives the reference; the probabilities are multiples of 1/64, the same
    values, so the same groups, in both."""
    probs = rng.integers(1, 64, N) / 64
    labels = (rng.random(N) < probs**1.3).astype(np.int32)
    weights = rng.integers(1, 4, N) * 2.0**100
    single = jm.hosmer_lemeshow_test(
        probs.astype(np.float32), labels, sample_weight=weights.astype(np.float32)
    )
    jitted = jax.jit(jm.hosmer_lemeshow_test)(
        probs.astype(np.float32), labels, sample_weight=weights.astype(np.float32)
    )
    jax.config.update("jax_enable_x64", True)
    try:
        double = jm.hosmer_lemeshow_test(probs, labels, sample_weight=weights)
        assert double.statistic.dtype == jnp.float64
        double = [float(double.statistic), float(double.p_value), int(double.degrees_of_freedom)]
    finally:
        jax.config.update("jax_enable_x64", False)
    assert math.isfinite(double[0]) and double[0] > 1e30
    for got in (single, jitted):
        assert float(got.statistic) == pytest.approx(double[0], rel=1e-5)
        assert float(got.p_value) == double[1] and int(got.degrees_of_freedom) == double[2]
