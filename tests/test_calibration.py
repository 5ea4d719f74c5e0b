import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.calibration import calibration_curve

import jaxmetrics as jm


def floor_binned_ece(y, p, bins=15):
    """The textbook ECE loop: equal-width bins indexed by floor(p * bins), count-weighted.

    Its bins are left-closed; away from the edges they are the right-closed bins of
    `reliability_table`."""
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


def test_ece_matches_a_plain_numpy_loop(rng):
    probs, labels = calibrated_problem(rng, 2000)
    assert float(jm.expected_calibration_error(probs, labels)) == pytest.approx(
        floor_binned_ece(labels, probs), abs=1e-6
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
        assert value == pytest.approx(floor_binned_ece(labels, row), abs=1e-6)


def test_probabilities_outside_the_unit_interval():
    with pytest.raises(
        ValueError, match=r"`probs` must be probabilities in \[0, 1\]; found 1.5 at index 1"
    ):
        jm.brier_score([0.2, 1.5], [0, 1])
    assert math.isnan(float(jax.jit(jm.log_loss)(np.array([0.2, 1.5]), np.array([0, 1]))))


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


@pytest.mark.parametrize("strategy, num_bins", [("uniform", 10), ("uniform", 5), ("quantile", 4)])
def test_float64_probabilities_on_bin_edges_match_calibration_curve(rng, strategy, num_bins):
    # float32(0.3) > 0.3 and float32(0.7) > 0.7: cast to float32 first, they would move up a bin
    on_edges = np.repeat([0.1, 0.3, 0.5, 0.7], 3)
    probs = np.concatenate([on_edges, rng.random(28)])
    labels = rng.integers(0, 2, probs.size)
    labels[:12] = [0, 1, 1, 1, 0, 0, 1, 1, 0, 0, 0, 1]
    table = jm.reliability_table(probs, labels, num_bins=num_bins, strategy=strategy)
    fraction, mean = calibration_curve(labels, probs, n_bins=num_bins, strategy=strategy)
    filled = np.asarray(table.count) > 0
    np.testing.assert_allclose(np.asarray(table.fraction_positive)[filled], fraction, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(table.mean_predicted)[filled], mean, rtol=1e-6)
    assert int(table.count.sum()) == probs.size
    ece = jm.expected_calibration_error(probs, labels, num_bins=num_bins, strategy=strategy)
    share = np.asarray(table.count)[filled] / probs.size
    assert float(ece) == pytest.approx((share * np.abs(fraction - mean)).sum(), rel=1e-5)


def test_a_float64_edge_value_stays_in_the_bin_it_closes():
    # (0.2, 0.3] holds 0.3, as in scikit-learn; float32(0.3) is above 0.3, in (0.3, 0.4]
    assert int(jm.reliability_table(np.array([0.3]), np.array([1])).count[2]) == 1
    assert int(jm.reliability_table(np.array([0.3], np.float32), np.array([1])).count[3]) == 1
    # under jit the input is what JAX made it: float32, unless x64 is on
    assert int(jax.jit(jm.reliability_table)(np.array([0.3]), np.array([1])).count[3]) == 1


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_bins_extend_the_table_and_ece_reads_the_same_bins(rng, strategy):
    probs, labels = calibrated_problem(rng, 200)
    bins = jm.reliability_bins(probs, labels, num_bins=8, strategy=strategy, confidence=0.9)
    table = jm.reliability_table(probs, labels, num_bins=8, strategy=strategy)
    for field in table._fields:
        np.testing.assert_array_equal(getattr(bins, field), getattr(table, field))
    count = np.asarray(table.count)
    filled = count > 0
    positives = np.round(np.asarray(table.fraction_positive)[filled] * count[filled])
    low, high = jm.wilson_interval(positives, count[filled], confidence=0.9)
    np.testing.assert_allclose(np.asarray(bins.low)[filled], low, rtol=1e-6)
    np.testing.assert_allclose(np.asarray(bins.high)[filled], high, rtol=1e-6)
    assert np.isnan(np.asarray(bins.low)[~filled]).all()
    if strategy == "uniform":
        expected_edges = np.linspace(0.0, 1.0, 9)
    else:
        expected_edges = np.percentile(probs, np.linspace(0.0, 100.0, 9))
    np.testing.assert_allclose(bins.edges, expected_edges, rtol=1e-6)
    gaps = np.abs(np.asarray(table.fraction_positive) - np.asarray(table.mean_predicted))[filled]
    ece = jm.expected_calibration_error(probs, labels, num_bins=8, strategy=strategy)
    assert float(ece) == pytest.approx((count[filled] / probs.size * gaps).sum(), rel=1e-5)


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_reliability_bins_eager_jit_and_vmap_agree(rng, strategy):
    probs = np.stack([calibrated_problem(rng, 60)[0] for _ in range(3)])
    labels = calibrated_problem(rng, 60)[1]

    def bins(p, y):
        return jm.reliability_bins(p, y, num_bins=6, strategy=strategy)

    eager = bins(probs, labels)
    assert eager.count.shape == (3, 6) and eager.edges.shape == (3, 7)
    jitted = jax.jit(bins)(probs, labels)
    mapped = jax.vmap(bins, in_axes=(0, None))(probs, labels)
    rows = [bins(p, labels) for p in probs]
    for field, value in zip(eager._fields, eager):
        for other in (getattr(jitted, field), getattr(mapped, field)):
            np.testing.assert_allclose(other, value, rtol=1e-6, equal_nan=True, err_msg=field)
        for row, expected in zip(value, (getattr(r, field) for r in rows)):
            np.testing.assert_allclose(row, expected, rtol=1e-6, equal_nan=True, err_msg=field)


# each public function with the name of its compiled program
PROGRAMS = {
    "brier_score": (jm.brier_score, "_brier"),
    "log_loss": (jm.log_loss, "_log_loss"),
    "expected_calibration_error": (jm.expected_calibration_error, "_ece"),
    "reliability_table": (jm.reliability_table, "_table"),
    "reliability_bins": (jm.reliability_bins, "_bins"),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_an_eager_call_runs_one_compiled_program(caplog, name):
    metric, program = PROGRAMS[name]
    probs = np.linspace(0.05, 0.95, 27, dtype=np.float32)
    labels = (np.arange(27) % 3 == 0).astype(np.int32)

    def compiled() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            metric(probs, labels)
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]

    # its own program, and at most one for the shared check's all-False flags (per batch shape);
    # none when an earlier test compiled them for these shapes
    first = compiled()
    assert len(first) <= 2 and len([m for m in first if f"jit({program})" in m]) <= 1
    assert compiled() == []


@pytest.mark.parametrize("strategy", ["uniform", "quantile"])
def test_weighted_binning_equals_repeated_rows(strategy):
    rng = np.random.default_rng(41)
    # multiples of 1/64, exact in float32, so eager (float64) and jit (float32) bin alike
    probs = np.round(rng.random((2, 40)) * 64) / 64
    labels = (rng.random((2, 40)) < probs).astype(np.int32)
    weights = rng.integers(0, 4, (2, 40))
    weights[:, :3] = 1
    options = dict(num_bins=5, strategy=strategy)
    eager = jm.reliability_bins(probs, labels, sample_weight=weights, **options)
    jitted = jax.jit(lambda p, y, w: jm.reliability_bins(p, y, sample_weight=w, **options))(
        probs, labels, weights
    )
    for row in range(2):
        repeated = [np.repeat(a[row], weights[row]) for a in (probs, labels)]
        expected = jm.reliability_bins(*repeated, **options)
        for field in expected._fields:
            for got in (eager, jitted):
                np.testing.assert_allclose(
                    np.asarray(getattr(got, field))[row],
                    np.asarray(getattr(expected, field)),
                    rtol=1e-5,
                    err_msg=field,
                )
        ece = jm.expected_calibration_error(
            probs[row], labels[row], sample_weight=weights[row], **options
        )
        assert float(ece) == pytest.approx(
            float(jm.expected_calibration_error(*repeated, **options)), rel=1e-5
        )
    table = jm.reliability_table(probs, labels, sample_weight=weights.astype(np.float32), **options)
    assert np.asarray(table.count).dtype == np.float32  # float weights give float counts
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        jm.expected_calibration_error(probs, labels, sample_weight=-weights)


def test_quantile_bins_of_total_weights_past_2_to_the_24():
    """Equal weights repeat every sample as often: the quantile bins are those of unit weights.
    Eagerly the positions are counted in float64 on the host: weights of 2^25 (float32 counts
    past 2^24, where (W - 1) q rounded onto a boundary) moved the median edge from 0.25 to 0.3
    and the ECE from 0.35 to 0.6. (Traced, float32 keeps that rounding: docs/conventions.md.)"""
    probs = np.array([0.1, 0.2, 0.3, 0.4], np.float32)
    labels = np.array([0, 1, 0, 1])
    options = dict(num_bins=2, strategy="quantile")
    base = jm.reliability_bins(probs, labels, **options)
    for weight in (2.0**25, 2.0**40):
        weights = np.full(4, weight, np.float32)
        got = jm.reliability_bins(probs, labels, sample_weight=weights, **options)
        np.testing.assert_allclose(got.edges, base.edges)
        np.testing.assert_allclose(got.fraction_positive, base.fraction_positive)
        ece = jm.expected_calibration_error(probs, labels, sample_weight=weights, **options)
        assert float(ece) == pytest.approx(
            float(jm.expected_calibration_error(probs, labels, **options))
        )
