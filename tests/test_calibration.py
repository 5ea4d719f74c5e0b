import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

import jaxmetrics as jm


def seed_001_ece(y, p, bins=15):
    """The ECE function of seed 001, verbatim in spirit: equal-width bins, count-weighted."""
    idx = np.minimum((p * bins).astype(int), bins - 1)
    total = 0.0
    for b in range(bins):
        m = idx == b
        if m.any():
            total += m.mean() * abs(y[m].mean() - p[m].mean())
    return total


def calibrated_problem(rng, n=500):
    probs = rng.beta(2, 3, n).astype(np.float32)
    labels = (rng.random(n) < probs**1.3).astype(np.int32)
    return probs, labels


@pytest.mark.parametrize("weighted", [False, True])
def test_brier_and_log_loss_match_sklearn(rng, weighted):
    probs, labels = calibrated_problem(rng)
    probs[:3] = [0.0, 1.0, 1.0]
    labels[:3] = [1, 0, 1]  # confident mistakes: clipping decides the log loss
    weights = rng.random(probs.size) if weighted else None
    assert float(jm.brier_score(probs, labels, sample_weight=weights)) == pytest.approx(
        skm.brier_score_loss(labels, probs, sample_weight=weights), rel=1e-5
    )
    assert float(jm.log_loss(probs, labels, sample_weight=weights)) == pytest.approx(
        skm.log_loss(labels, probs, sample_weight=weights), rel=1e-5
    )


def test_ece_matches_seed_001_definition(rng):
    probs, labels = calibrated_problem(rng, 2000)
    assert float(jm.expected_calibration_error(probs, labels)) == pytest.approx(
        seed_001_ece(labels, probs), abs=1e-6
    )


def test_ece_norms(rng):
    probs, labels = calibrated_problem(rng)
    table = jm.reliability_table(probs, labels, num_bins=15)
    filled = np.asarray(table.count) > 0
    gaps = np.abs(np.asarray(table.fraction_positive) - np.asarray(table.mean_predicted))[filled]
    shares = np.asarray(table.count)[filled] / probs.size
    assert float(jm.expected_calibration_error(probs, labels, norm="max")) == pytest.approx(
        gaps.max(), rel=1e-6
    )
    assert float(jm.expected_calibration_error(probs, labels, norm="l2")) == pytest.approx(
        np.sqrt((shares * gaps**2).sum()), rel=1e-5
    )


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_table_matches_calibration_curve(rng, strategy):
    probs, labels = calibrated_problem(rng)
    probs[:6] = [0.0, 0.2, 0.4, 0.6, 0.8, 1.0]  # values on the bin edges
    table = jm.reliability_table(probs, labels, num_bins=5, strategy=strategy)
    fraction, mean = calibration_curve(labels, probs, n_bins=5, strategy=strategy)
    filled = np.asarray(table.count) > 0
    np.testing.assert_allclose(np.asarray(table.fraction_positive)[filled], fraction, atol=1e-6)
    np.testing.assert_allclose(np.asarray(table.mean_predicted)[filled], mean, atol=1e-6)
    assert int(table.count.sum()) == probs.size


def test_empty_bins_are_kept_and_one_lands_in_the_last_bin():
    frac, mean, count = jm.reliability_table([0.05, 0.1, 1.0], [0, 1, 1], num_bins=4)
    np.testing.assert_array_equal(count, [2, 0, 0, 1])
    table = jm.reliability_bins([0.05, 0.1, 1.0], [0, 1, 1], num_bins=4)
    np.testing.assert_allclose(table.edges, [0, 0.25, 0.5, 0.75, 1.0])
    np.testing.assert_array_equal(table.count, [2, 0, 0, 1])
    assert math.isnan(float(table.fraction_positive[1]))
    assert float(table.low[0]) < 0.5 < float(table.high[0])  # Wilson interval of 1/2


def test_calibration_batched_and_jitted(rng):
    probs = np.stack([calibrated_problem(rng)[0] for _ in range(3)])
    labels = calibrated_problem(rng)[1]
    eager = jm.expected_calibration_error(probs, labels)
    jitted = jax.jit(jm.expected_calibration_error)(probs, labels)
    np.testing.assert_allclose(eager, jitted, atol=1e-7)
    for row, value in zip(probs, np.asarray(eager)):
        assert value == pytest.approx(seed_001_ece(labels, row), abs=1e-6)


def test_probabilities_outside_the_unit_interval():
    with pytest.raises(
        ValueError, match=r"`probs` must be probabilities in \[0, 1\]; found 1.5 at index 1"
    ):
        jm.brier_score([0.2, 1.5], [0, 1])
    assert math.isnan(float(jax.jit(jm.log_loss)(np.array([0.2, 1.5]), np.array([0, 1]))))


def test_regression_numbers_from_seed_001():
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    predictions = LinearRegression().fit(Xtr, ytr).predict(Xte)
    assert round(float(jm.root_mean_squared_error(predictions, yte)), 2) == 55.65
    assert round(float(jm.mean_absolute_error(predictions, yte)), 2) == 44.62
    assert round(float(jm.r2_score(predictions, yte)), 3) == 0.393
    dirty = yte.copy()
    dirty[0] += 400
    assert round(float(jm.root_mean_squared_error(predictions, dirty)), 2) == 69.20
    assert round(float(jm.mean_absolute_error(predictions, dirty)), 2) == 47.63
    assert float(jm.r2_score(predictions, yte)) == pytest.approx(
        skm.r2_score(yte, predictions), rel=1e-5
    )


def test_regression_batched_and_bad_input(rng):
    targets = rng.normal(size=50)
    predictions = targets + rng.normal(size=(3, 50))
    got = jm.mean_absolute_error(predictions, targets)
    np.testing.assert_allclose(
        got, [skm.mean_absolute_error(targets, p) for p in predictions], rtol=1e-5
    )
    assert math.isnan(float(jm.r2_score(np.ones(4), np.ones(4))))
    with pytest.raises(ValueError, match="`targets` must be finite; found NaN at index 2"):
        jm.root_mean_squared_error(np.ones(3), np.array([1.0, 2.0, np.nan]))


@pytest.mark.parametrize("weighted", [False, True])
def test_float64_input_matches_sklearns_float64_results(rng, weighted):
    probs = rng.random(400)
    probs[:8] = [0.0, 1.0, 1e-13, 1 - 1e-13, 5e-13, 1 - 5e-13, 1e-300, 0.5]
    labels = rng.integers(0, 2, 400)
    labels[:8] = [1, 0, 1, 0, 0, 1, 1, 0]  # confident mistakes: the float64 eps decides
    weights = rng.random(400) if weighted else None
    assert float(jm.log_loss(probs, labels, sample_weight=weights)) == pytest.approx(
        skm.log_loss(labels, probs, sample_weight=weights), rel=1e-6
    )
    assert float(jm.brier_score(probs, labels, sample_weight=weights)) == pytest.approx(
        skm.brier_score_loss(labels, probs, sample_weight=weights), rel=1e-6
    )
    # sklearn's own example of the float64 clip: log(2.2e-16) for the first sample
    assert float(jm.log_loss(np.array([0.0, 0.5]), np.array([1, 0]))) == pytest.approx(
        skm.log_loss([1, 0], np.array([0.0, 0.5])), rel=1e-6
    )
    assert float(jm.log_loss(np.array([0.0, 0.5]), np.array([1, 0]))) == pytest.approx(
        18.3684, abs=1e-4
    )
    # float32 input is clipped with the float32 eps, as sklearn does for float32
    p32 = probs.astype(np.float32)
    assert float(jm.log_loss(p32, labels)) == pytest.approx(skm.log_loss(labels, p32), rel=1e-5)


def test_float64_batched_input(rng):
    probs = rng.random((2, 50))
    labels = rng.integers(0, 2, 50)
    got = jm.log_loss(probs, labels)
    assert got.shape == (2,)
    np.testing.assert_allclose(got, [skm.log_loss(labels, p) for p in probs], rtol=1e-6)


def test_float64_end_to_end_under_x64(rng, x64):
    probs = rng.random((2, 50))
    labels = rng.integers(0, 2, 50)
    for metric in (jm.log_loss, jm.brier_score, jm.expected_calibration_error):
        eager = metric(probs, labels)
        jitted = jax.jit(metric)(probs, labels)
        assert eager.dtype == jitted.dtype == np.float64
        np.testing.assert_allclose(eager, jitted, rtol=1e-12)
    np.testing.assert_allclose(
        jax.jit(jm.log_loss)(probs, labels),
        [skm.log_loss(labels, p) for p in probs],
        rtol=1e-12,
    )


CALIBRATION = {
    "brier_score": jm.brier_score,
    "log_loss": jm.log_loss,
    "expected_calibration_error": jm.expected_calibration_error,
    "reliability_table": jm.reliability_table,
    "reliability_bins": jm.reliability_bins,
}


@pytest.mark.parametrize("name", sorted(CALIBRATION))
def test_closed_over_arrays_inside_jit_and_batch_axes_of_one(name):
    metric = CALIBRATION[name]
    probs = np.array([0.1, 0.7, 0.4, 0.9, 0.35])
    labels = np.array([0, 1, 0, 1, 1])
    eager = metric(probs, labels)
    closed = jax.jit(lambda: metric(probs, labels))()
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(closed)):
        np.testing.assert_allclose(a, b, rtol=1e-6)
    one = metric(probs[None], labels[None])
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(one)):
        assert b.shape == (1, *np.shape(a))
    # a bad constant is known at trace time, so it is raised on there
    with pytest.raises(ValueError, match=r"`probs` must be probabilities in \[0, 1\]"):
        jax.jit(lambda: metric(np.array([0.1, 1.5]), np.array([0, 1])))()


@pytest.mark.parametrize("norm", ["l1", "l2", "max"])
def test_ece_of_a_marked_batch_element_is_nan(norm):
    probs = jnp.array([[0.1, 0.7, 0.4, 0.9], [0.1, jnp.nan, 0.4, 0.9]])
    labels = jnp.array([0, 1, 0, 1])
    got = jax.jit(lambda p, y: jm.expected_calibration_error(p, y, norm=norm))(probs, labels)
    assert float(got[0]) == pytest.approx(
        float(jm.expected_calibration_error(probs[0], labels, norm=norm))
    )
    assert math.isnan(float(got[1]))
    table = jax.jit(jm.reliability_table)(probs, labels)
    assert (np.asarray(table.count[1]) == -1).all() and np.isnan(table.fraction_positive[1]).all()
    assert (np.asarray(table.count[0]) >= 0).all()


def test_calibration_bad_values_name_the_argument():
    with pytest.raises(
        ValueError, match=r"`probs` must be probabilities in \[0, 1\]; found nan at index 1"
    ):
        jm.log_loss(np.array([0.2, np.nan]), [0, 1])
    with pytest.raises(ValueError, match=r"`probs`.*found inf at index \(1, 0\)"):
        jm.brier_score(np.array([[0.2, 0.3], [np.inf, 0.1]]), [0, 1])
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 1"):
        jm.expected_calibration_error([0.2, 0.3], [0, 2])
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative; found -1.0"):
        jm.log_loss([0.2, 0.3], [0, 1], sample_weight=[1.0, -1.0])
    with pytest.raises(ValueError, match=r"`sample_weight` must be finite; found NaN"):
        jm.brier_score([0.2, 0.3], [0, 1], sample_weight=[1.0, np.nan])
    # a float64 value just above 1 is refused, not rounded into range by float32
    with pytest.raises(ValueError, match="`probs`"):
        jm.log_loss(np.array([0.2, 1 + 1e-12]), [0, 1])
    with pytest.raises(TypeError, match="`num_bins` must be an int"):
        jm.reliability_table([0.2, 0.3], [0, 1], num_bins=True)
    with pytest.raises(ValueError, match="`strategy` must be one of"):
        jm.reliability_table([0.2, 0.3], [0, 1], strategy="kmeans")
    with pytest.raises(ValueError, match="`norm` must be one of"):
        jm.expected_calibration_error([0.2, 0.3], [0, 1], norm="l3")
    with pytest.raises(ValueError, match="`confidence`"):
        jm.reliability_bins([0.2, 0.3], [0, 1], confidence=1.5)
    table = jm.reliability_table([0.2, 0.3], [0, 1], num_bins=np.int64(2))
    assert table.count.shape == (2,)
