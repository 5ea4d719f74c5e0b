import logging
import math

import jax
import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.model_selection import train_test_split

import jaxmetrics as jm

# each metric with scikit-learn's (targets first there) and the name of its compiled program
REGRESSION = {
    "mean_absolute_error": (jm.mean_absolute_error, skm.mean_absolute_error, "_mae"),
    "root_mean_squared_error": (jm.root_mean_squared_error, skm.root_mean_squared_error, "_rmse"),
    "r2_score": (jm.r2_score, skm.r2_score, "_r2"),
}


def test_regression_errors_of_a_linear_model_on_diabetes():
    X, y = load_diabetes(return_X_y=True)
    Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0)
    predictions = LinearRegression().fit(Xtr, ytr).predict(Xte)
    assert round(float(jm.root_mean_squared_error(predictions, yte)), 2) == 55.65
    assert round(float(jm.mean_absolute_error(predictions, yte)), 2) == 44.62
    assert round(float(jm.r2_score(predictions, yte)), 3) == 0.393
    # one target off by 400: the squared error moves much more than the absolute one
    dirty = yte.copy()
    dirty[0] += 400
    assert round(float(jm.root_mean_squared_error(predictions, dirty)), 2) == 69.20
    assert round(float(jm.mean_absolute_error(predictions, dirty)), 2) == 47.63
    assert float(jm.r2_score(predictions, yte)) == pytest.approx(
        skm.r2_score(yte, predictions), rel=1e-5
    )


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_batched_against_sklearn_eager_jit_and_vmap(rng, name):
    ours, reference, _ = REGRESSION[name]
    targets = rng.normal(size=40).astype(np.float32)
    predictions = (targets + rng.normal(size=(3, 40))).astype(np.float32)
    expected = [reference(targets, p) for p in predictions]
    eager = ours(predictions, targets)
    assert eager.shape == (3,)
    np.testing.assert_allclose(eager, expected, rtol=1e-5)
    np.testing.assert_allclose(jax.jit(ours)(predictions, targets), eager, rtol=1e-6)
    mapped = jax.vmap(ours, in_axes=(0, None))(predictions, targets)
    np.testing.assert_allclose(mapped, eager, rtol=1e-6)
    # targets with their own batch axis broadcast against the predictions'
    both = ours(predictions, np.stack([targets] * 3))
    np.testing.assert_allclose(both, eager, rtol=1e-6)


def test_regression_batched_and_bad_input(rng):
    targets = rng.normal(size=50)
    predictions = targets + rng.normal(size=(3, 50))
    got = jm.mean_absolute_error(predictions, targets)
    np.testing.assert_allclose(
        got, [skm.mean_absolute_error(targets, p) for p in predictions], rtol=1e-5
    )
    with pytest.raises(ValueError, match="`targets` must be finite; found NaN at index 2"):
        jm.root_mean_squared_error(np.ones(3), np.array([1.0, 2.0, np.nan]))
    with pytest.raises(
        ValueError, match=r"`predictions` must be finite; found inf at index \(1, 0\)"
    ):
        jm.mean_absolute_error(np.array([[1.0, 2.0], [np.inf, 0.0]]), np.ones(2))
    with pytest.raises(ValueError, match="`targets` must have the same number of samples"):
        jm.r2_score(np.ones(3), np.ones(4))


def test_rmse_and_r2_of_values_of_1e20_and_more(rng):
    """Errors of 1e20: their squares overflowed float32 (RMSE inf, R² NaN). The same values
    times 2^70 and 2^100 give the RMSE times the factor and the same R², eager and jitted
    (float64 numpy as the reference)."""
    predictions, targets = rng.normal(size=(2, 2, 30))
    rmse = np.sqrt(((predictions - targets) ** 2).mean(-1))
    r2 = [skm.r2_score(t, p) for p, t in zip(predictions, targets, strict=True)]
    for scale in (2.0**70, 2.0**100):
        p, t = (np.float32(scale) * x.astype(np.float32) for x in (predictions, targets))
        for f in (jm.root_mean_squared_error, jax.jit(jm.root_mean_squared_error)):
            np.testing.assert_allclose(f(p, t), rmse * scale, rtol=1e-5)
        for f in (jm.r2_score, jax.jit(jm.r2_score)):
            np.testing.assert_allclose(f(p, t), r2, rtol=1e-5)


def test_r2_of_constant_targets_is_nan():
    # scikit-learn returns 1.0 (perfect predictions) or 0.0 here; R² is undefined
    assert math.isnan(float(jm.r2_score(np.ones(4), np.ones(4))))
    assert math.isnan(float(jm.r2_score(np.arange(4.0), np.ones(4))))
    assert float(jm.r2_score(np.arange(4.0), np.arange(4.0))) == 1.0


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_a_bad_value_under_jit_marks_only_its_row(name):
    ours, _, _ = REGRESSION[name]
    predictions = np.array([[0.5, 1.0, 2.5, 3.0], [0.5, np.nan, 2.5, 3.0]], np.float32)
    targets = np.array([0.0, 1.5, 2.0, 3.5], np.float32)
    got = jax.jit(ours)(predictions, targets)
    assert float(got[0]) == pytest.approx(float(ours(predictions[0], targets)), rel=1e-6)
    assert math.isnan(float(got[1]))


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_float64_end_to_end_under_x64(rng, name, x64):
    ours, reference, _ = REGRESSION[name]
    targets = rng.normal(size=30)
    predictions = targets + rng.normal(size=30)
    got = ours(predictions, targets)
    assert got.dtype == np.float64
    assert float(got) == pytest.approx(reference(targets, predictions), rel=1e-12)


@pytest.mark.parametrize("name", sorted(REGRESSION))
def test_an_eager_call_runs_one_compiled_program(caplog, name):
    ours, _, program = REGRESSION[name]
    predictions = np.linspace(0.0, 1.0, 23, dtype=np.float32)
    targets = predictions[::-1].copy()

    def compiled() -> list[str]:
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            ours(predictions, targets)
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]

    first = compiled()  # one program, unless an earlier test compiled it for this shape
    assert len(first) <= 1 and all(f"jit({program})" in message for message in first)
    assert compiled() == []  # the same shapes again: nothing new
