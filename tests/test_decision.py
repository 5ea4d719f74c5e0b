"""Decision curves: net benefit, treat-all, interventions avoided (vs dcurves and an oracle)."""

import math
import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm


def oracle(probs, labels, thresholds, weights=None):
    """The definitions, in float64, one threshold and one model at a time."""
    probs = np.atleast_2d(np.asarray(probs, np.float64))
    labels = np.asarray(labels, np.float64)
    weights = np.ones(probs.shape[-1]) if weights is None else np.asarray(weights, np.float64)
    n = weights.sum()
    prevalence = (weights * labels).sum() / n
    nb, all_, avoided, standardized = (np.zeros((len(probs), len(thresholds))) for _ in range(4))
    for m, p in enumerate(probs):
        for j, t in enumerate(thresholds):
            treated = p >= t
            tp = (weights * labels * treated).sum()
            fp = (weights * (1 - labels) * treated).sum()
            odds = t / (1 - t)
            nb[m, j] = tp / n - fp / n * odds
            all_[m, j] = prevalence - (1 - prevalence) * odds
            avoided[m, j] = (nb[m, j] - all_[m, j]) / odds
            standardized[m, j] = nb[m, j] / prevalence
    return nb, all_, avoided, standardized


def dyadic_problem(rng, num_models=3, n=400):
    """Probabilities on the grid k/16, thresholds on it too: every threshold ties with samples,
    and all values are exact in float32 and float64 alike."""
    probs = rng.integers(0, 17, (num_models, n)) / 16
    labels = (rng.random(n) < 0.25 + 0.5 * probs[0]).astype(np.int32)
    thresholds = np.arange(1, 16) / 16
    return probs.astype(np.float32), labels, thresholds.astype(np.float32)


def assert_curve(curve, expected, rtol=1e-5, atol=1e-6):
    for got, want in zip(curve[1:], expected):
        np.testing.assert_allclose(np.asarray(got, np.float64), want, rtol=rtol, atol=atol)


def test_matches_dcurves_on_its_example_data():
    dcurves = pytest.importorskip("dcurves")
    import pandas as pd

    data = pd.read_csv(os.path.join(dcurves.data, "df_binary.csv"))  # 750 patients, 105 cancers
    models = ["cancerpredmarker", "famhistory"]  # a risk in (0, 1), and a 0/1 test
    grid = [i / 100 for i in range(1, 100)]  # dcurves' default grid without its t = 0
    table = dcurves.dca(data=data, outcome="cancer", modelnames=models, thresholds=grid)
    probs = np.stack([data[model].to_numpy(np.float64) for model in models])
    curve = jm.decision_curve(probs, data["cancer"].to_numpy(np.int32), np.asarray(grid))

    def column(model, name):
        return table[table["model"] == model][name].to_numpy(np.float64)

    for m, model in enumerate(models):
        np.testing.assert_allclose(curve.net_benefit[m], column(model, "net_benefit"), atol=1e-6)
        np.testing.assert_allclose(
            curve.interventions_avoided[m], column(model, "net_intervention_avoided"), atol=1e-6
        )
        np.testing.assert_allclose(
            curve.treat_all[m], column("all", "net_benefit"), rtol=1e-6, atol=1e-6
        )
        np.testing.assert_allclose(
            curve.standardized_net_benefit[m],
            column(model, "net_benefit") / column(model, "prevalence"),
            atol=1e-6,
        )
    assert not column("none", "net_benefit").any()  # treat none: 0, as the docstring says
    np.testing.assert_allclose(curve.thresholds, grid, rtol=1e-7)
    # values of dcurves 1.1.7 at a few thresholds, to be read in the report
    at = [4, 9, 19]  # t = 0.05, 0.1, 0.2
    np.testing.assert_allclose(curve.net_benefit[0, at], [0.105544, 0.087407, 0.067333], atol=1e-6)
    np.testing.assert_allclose(curve.treat_all[0, at], [0.094737, 0.044444, -0.075], atol=1e-6)


@pytest.mark.parametrize("weights", [None, "integer", "float"])
def test_brute_force_oracle_with_ties_and_weights(rng, weights):
    probs, labels, thresholds = dyadic_problem(rng)
    w = None
    if weights == "integer":
        w = rng.integers(0, 4, labels.size).astype(np.int32)
    elif weights == "float":
        w = (rng.random(labels.size) * 3).astype(np.float32)
    curve = jm.decision_curve(probs, labels, thresholds, sample_weight=w)
    expected = oracle(probs, labels, thresholds, w)
    assert_curve(curve, expected)
    np.testing.assert_allclose(
        jm.net_benefit(probs, labels, thresholds, sample_weight=w),
        expected[0],
        rtol=1e-5,
        atol=1e-6,
    )
    assert curve.net_benefit.shape == (3, 15) and curve.treat_all.shape == (3, 15)


def test_eager_jit_and_vmap_agree(rng):
    probs, labels, thresholds = dyadic_problem(rng)
    weights = rng.integers(0, 3, labels.size).astype(np.float32)
    eager = jm.decision_curve(probs, labels, thresholds, sample_weight=weights)
    jitted = jax.jit(jm.decision_curve)(probs, labels, thresholds, sample_weight=weights)
    for got, want in zip(jitted, eager):
        np.testing.assert_allclose(got, want, rtol=1e-6, atol=1e-7)
    per_model = jax.vmap(lambda p: jm.net_benefit(p, labels, thresholds, sample_weight=weights))
    np.testing.assert_allclose(per_model(probs), eager.net_benefit, rtol=1e-6, atol=1e-7)
    # weight vectors as a mapped axis (what the bootstrap does); scaling them changes nothing
    by_weights = jax.vmap(lambda w: jm.net_benefit(probs, labels, thresholds, sample_weight=w))
    mapped = by_weights(np.stack([weights, 2.5 * weights]))
    np.testing.assert_allclose(mapped, np.stack([eager.net_benefit] * 2), rtol=1e-6, atol=1e-7)


def test_bootstrap_intervals_in_one_call(rng):
    probs, labels, thresholds = dyadic_problem(rng, num_models=2, n=300)
    grid = thresholds[::4]  # 1/16, 5/16, 9/16, 13/16
    result = jm.bootstrap(
        lambda p, y, sample_weight: jm.net_benefit(p, y, grid, sample_weight=sample_weight),
        probs,
        labels,
        key=jax.random.key(7),
        num_resamples=64,
    )
    assert result.estimate.shape == result.low.shape == result.high.shape == (2, 4)
    assert result.samples.shape == (64, 2, 4)
    np.testing.assert_allclose(result.estimate, jm.net_benefit(probs, labels, grid), rtol=1e-6)
    assert np.all(np.asarray(result.low) <= np.asarray(result.high))
    assert not np.isnan(np.asarray(result.samples)).any()


@pytest.mark.parametrize("bad", [0.0, 1.0, -0.2, 1.5, math.nan, math.inf])
@pytest.mark.parametrize("function", [jm.net_benefit, jm.decision_curve])
def test_thresholds_outside_the_open_unit_interval_raise(bad, function):
    probs, labels = [0.9, 0.2, 0.6, 0.4], [1, 0, 1, 0]
    with pytest.raises(ValueError, match=r"`thresholds` must lie strictly between 0 and 1") as e:
        function(probs, labels, [0.3, bad, 0.5])
    assert "at index 1" in str(e.value) and repr(bad) in str(e.value)


def test_traced_thresholds_outside_give_nan_at_that_threshold():
    probs, labels = np.array([0.9, 0.2, 0.6, 0.4, 0.7]), np.array([1, 0, 1, 0, 0])
    grid = jnp.array([0.3, 0.0, 1.0, jnp.nan, -0.5, 2.0, 0.5])
    curve = jax.jit(lambda t: jm.decision_curve(probs, labels, t))(grid)
    good = np.array([True, False, False, False, False, False, True])
    for field in curve[1:]:
        assert np.isnan(np.asarray(field)[~good]).all()
    eager = jm.decision_curve(probs, labels, [0.3, 0.5])
    assert_curve(curve._replace(**{k: v[good] for k, v in curve._asdict().items()}), eager[1:])


@pytest.mark.parametrize("bad", [1.5, -0.1, math.nan])
def test_probabilities_outside_zero_one(bad):
    probs = np.array([[0.9, 0.2, 0.6, 0.4], [0.8, 0.3, 0.7, 0.1]], np.float32)
    labels = np.array([1, 0, 1, 0])
    probs[1, 2] = bad
    with pytest.raises(ValueError, match=r"`probs` must be probabilities in \[0, 1\]") as error:
        jm.net_benefit(probs, labels, [0.25, 0.5])
    assert "(1, 2)" in str(error.value)
    # under jit, the model whose probabilities are bad is NaN, the other is untouched
    traced = jax.jit(lambda p: jm.decision_curve(p, labels, [0.25, 0.5]))(probs)
    for field in traced[1:]:
        assert np.isnan(np.asarray(field)[1]).all() and np.isfinite(np.asarray(field)[0]).all()
    np.testing.assert_allclose(traced.net_benefit[0], jm.net_benefit(probs[0], labels, [0.25, 0.5]))


def test_bad_labels_weights_and_shapes_raise():
    probs = [0.9, 0.2, 0.6, 0.4]
    with pytest.raises(ValueError, match="`labels` must contain only 0 and 1"):
        jm.net_benefit(probs, [1, 0, 2, 0], [0.5])
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        jm.net_benefit(probs, [1, 0, 1, 0], [0.5], sample_weight=[1.0, -1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match=r"`labels` must have the same number of samples"):
        jm.net_benefit(probs, [1, 0, 1], [0.5])
    with pytest.raises(ValueError, match=r"`probs` has shape \(4, 1\)"):
        jm.net_benefit(np.array(probs)[:, None], np.array([1, 0, 1, 0])[:, None], [0.5])
    with pytest.raises(ValueError, match="`thresholds` must hold at least one threshold"):
        jm.net_benefit(probs, [1, 0, 1, 0], [])


def test_size_one_axes():
    probs, labels = np.array([[0.9, 0.2, 0.6, 0.4]]), np.array([1, 0, 1, 0])
    assert jm.net_benefit(probs, labels, [0.5]).shape == (1, 1)  # a batch axis of 1 is kept
    assert jm.net_benefit(probs[0], labels, 0.5).shape == ()  # a scalar threshold
    assert jm.decision_curve(probs, labels, [[0.3], [0.5]]).treat_all.shape == (1, 2, 1)
    one = jm.decision_curve([0.7], [1], [0.5, 0.8])  # one sample
    assert_curve(one, [row[0] for row in oracle([0.7], [1], [0.5, 0.8])])


def test_a_binary_test_as_probabilities():
    labels = np.array([1, 0, 1, 0, 0, 1])
    test = np.array([1, 0, 0, 1, 0, 1])  # 0/1 integers: no warning that they look like labels
    assert_curve(
        jm.decision_curve(test, labels, [0.5]), [row[0] for row in oracle(test, labels, [0.5])]
    )


def test_undefined_values():
    curve = jm.decision_curve([0.9, 0.2], [0, 0], [0.5])  # no positives
    assert float(curve.net_benefit[0]) == -0.5 and np.isnan(curve.standardized_net_benefit[0])
    empty = jm.decision_curve([0.9, 0.2], [1, 0], [0.5], sample_weight=[0.0, 0.0])
    assert all(np.isnan(np.asarray(field)).all() for field in empty[1:])


def test_eager_float64_probabilities_are_compared_exactly():
    probs = np.array([0.3, 0.3 - 1e-12, 0.3 + 1e-12, 0.9])  # float32 would merge the first three
    labels = np.array([0, 1, 0, 1])
    got = jm.net_benefit(probs, labels, np.array([0.3]))
    np.testing.assert_allclose(got, oracle(probs, labels, [0.3])[0][0], rtol=1e-6)


def test_float64_end_to_end_under_x64(rng, x64):
    probs, labels, thresholds = dyadic_problem(rng, num_models=2, n=200)
    probs, thresholds = probs.astype(np.float64), np.asarray([0.01, 0.5, 0.99])
    weights = rng.random(labels.size)
    curve = jm.decision_curve(probs, labels, thresholds, sample_weight=weights)
    assert all(field.dtype == jnp.float64 for field in curve)
    assert_curve(curve, oracle(probs, labels, thresholds, weights), rtol=1e-12, atol=1e-12)
