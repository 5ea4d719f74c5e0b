"""Multiclass log loss and Brier score against scikit-learn's `log_loss` and `brier_score_loss`.

scikit-learn 1.7+ scores multiclass probabilities in `brier_score_loss` as the sum over classes
(range [0, 2], `scale_by_half=False`, its default for three classes or more).
"""

import warnings

import jax
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm
from jaxmetrics._src.metrics.multiclass_calibration import ROW_SUM_TOLERANCE

METRICS = {"log_loss": jm.multiclass_log_loss, "brier": jm.multiclass_brier_score}


def sklearn_score(name, labels, probs, weights=None):
    classes = range(probs.shape[-1])
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # rows within our tolerance of 1
        if name == "log_loss":
            return skm.log_loss(labels, probs, labels=classes, sample_weight=weights)
        return skm.brier_score_loss(
            labels, probs, labels=classes, sample_weight=weights, scale_by_half=False
        )


def problem(rng, n=60, num_classes=4, dtype=np.float32):
    logits = rng.normal(size=(n, num_classes)) * 2
    probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
    labels = rng.integers(0, num_classes, n).astype(np.int32)
    probs[0] = np.eye(num_classes)[(labels[0] + 1) % num_classes]  # a confident mistake
    probs[1] = np.eye(num_classes)[labels[1]]  # a confident hit
    return probs.astype(dtype), labels


@pytest.mark.parametrize("name", METRICS)
@pytest.mark.parametrize("weighted", [False, True])
def test_matches_sklearn_float32(rng, name, weighted):
    probs, labels = problem(rng)
    weights = rng.random(labels.size) if weighted else None
    got = METRICS[name](probs, labels, sample_weight=weights)
    assert got.dtype == np.float32
    assert float(got) == pytest.approx(sklearn_score(name, labels, probs, weights), rel=1e-5)


@pytest.mark.parametrize("name", METRICS)
def test_float64_eagerly_is_sklearns_float64_result(rng, name):
    probs, labels = problem(rng, dtype=np.float64)
    weights = rng.integers(0, 4, labels.size)
    got = METRICS[name](probs, labels, sample_weight=weights)
    # the confident mistake costs -log(eps) with float64's eps (36.04), not float32's (15.9)
    assert float(got) == pytest.approx(sklearn_score(name, labels, probs, weights), rel=1e-7)


def test_two_classes_agree_with_the_binary_functions(rng):
    probs, labels = problem(rng, num_classes=2)
    assert float(jm.multiclass_log_loss(probs, labels)) == pytest.approx(
        float(jm.log_loss(probs[:, 1], labels)), rel=1e-6
    )
    # the sum over both classes: twice the binary score (scikit-learn's default halves it)
    assert float(jm.multiclass_brier_score(probs, labels)) == pytest.approx(
        2 * float(jm.brier_score(probs[:, 1], labels)), rel=1e-6
    )
    assert float(jm.multiclass_brier_score(probs, labels)) == pytest.approx(
        2 * skm.brier_score_loss(labels, probs), rel=1e-6
    )


@pytest.mark.parametrize("name", METRICS)
def test_eager_jit_vmap_and_batch_axes(rng, name):
    metric = METRICS[name]
    models = np.stack([problem(rng)[0] for _ in range(3)])  # [3, n, C]
    _, labels = problem(rng)
    weights = rng.random((3, labels.size)).astype(np.float32)
    eager = metric(models, labels, sample_weight=weights)
    jitted = jax.jit(metric)(models, labels, sample_weight=weights)
    mapped = jax.vmap(lambda p, w: metric(p, labels, sample_weight=w))(models, weights)
    expected = [sklearn_score(name, labels, p, w) for p, w in zip(models, weights)]
    assert eager.shape == jitted.shape == mapped.shape == (3,)
    np.testing.assert_allclose(eager, expected, rtol=1e-5)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    np.testing.assert_allclose(mapped, eager, rtol=1e-6)
    assert metric(models[:1], labels).shape == (1,)  # a batch axis of size 1 is kept
    assert metric(models[:, None], labels).shape == (3, 1)


@pytest.mark.parametrize("name", METRICS)
def test_integer_weights_count_copies_and_zero_total_is_nan(rng, name):
    probs, labels = problem(rng, n=20)
    weights = rng.integers(0, 3, labels.size)
    repeated = METRICS[name](np.repeat(probs, weights, 0), np.repeat(labels, weights))
    assert float(METRICS[name](probs, labels, sample_weight=weights)) == pytest.approx(
        float(repeated), rel=1e-6
    )
    assert np.isnan(METRICS[name](probs, labels, sample_weight=np.zeros(labels.size)))


@pytest.mark.parametrize("name", METRICS)
def test_weights_with_batch_axes_broadcast_against_shared_probabilities(rng, name):
    probs, labels = problem(rng, n=30, dtype=np.float64)
    weights = rng.integers(0, 3, (2, labels.size))
    expected = [sklearn_score(name, labels, probs, w) for w in weights]
    eager = METRICS[name](probs, labels, sample_weight=weights)  # float64: on the host
    np.testing.assert_allclose(eager, expected, rtol=1e-7)
    # under jit the input is float32, and so is the clip of a confident mistake
    probs = probs.astype(np.float32)
    jitted = jax.jit(METRICS[name])(probs, labels, sample_weight=weights)
    expected = [sklearn_score(name, labels, probs, w) for w in weights]
    np.testing.assert_allclose(jitted, expected, rtol=1e-5)


def test_rows_within_the_tolerance_are_scored_as_given(rng):
    probs, labels = problem(rng, n=20, num_classes=3, dtype=np.float64)
    probs = probs.round(2)  # rows off by up to 0.015 before the fix below
    largest = probs.argmax(-1)
    probs[np.arange(20), largest] += 1 - probs.sum(-1) - ROW_SUM_TOLERANCE / 2  # rows 0.995
    assert np.all(probs >= 0) and np.allclose(probs.sum(-1), 0.995)
    for name, metric in METRICS.items():  # not renormalised: scikit-learn's numbers
        assert float(metric(probs, labels)) == pytest.approx(
            sklearn_score(name, labels, probs), rel=1e-7
        )


def test_float64_end_to_end_under_x64(rng, x64):
    probs, labels = problem(rng, dtype=np.float64)
    for name, metric in METRICS.items():
        eager, jitted = metric(probs, labels), jax.jit(metric)(probs, labels)
        assert eager.dtype == jitted.dtype == np.float64
        np.testing.assert_allclose(jitted, sklearn_score(name, labels, probs), rtol=1e-12)


GOOD = np.array([[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6]])
BAD_INPUTS = {
    "row sum": (
        [[0.7, 0.2, 0.1], [0.2, 0.5, 0.2], [0.1, 0.3, 0.6]],
        [0, 1, 2],
        None,
        ValueError,
        "`probs` must have rows that sum to 1 (within 0.01: class probabilities); found a row "
        "summing to 0.9 at index 1.",
    ),
    "negative": (
        [[0.7, 0.2, 0.1], [0.2, 0.9, -0.1], [0.1, 0.3, 0.6]],
        [0, 1, 2],
        None,
        ValueError,
        "`probs` must be probabilities in [0, 1]; found -0.1 at index (1, 2).",
    ),
    "nan": (
        [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, np.nan, 0.6]],
        [0, 1, 2],
        None,
        ValueError,
        "`probs` must be probabilities in [0, 1]; found nan at index (2, 1).",
    ),
    "label": (
        GOOD,
        [0, 3, 2],
        None,
        ValueError,
        "`labels` must be class indices in [0, 3) (C, the last axis of `probs`); found 3 at "
        "index 1.",
    ),
    "weight": (GOOD, [0, 1, 2], [1.0, -1.0, 1.0], ValueError, "`sample_weight` must be non-"),
    "float labels": (GOOD, [0.0, 1.0, 2.0], None, TypeError, "integer class indices"),
    "samples": (GOOD, [0, 1], None, ValueError, "one class per row of `probs`"),
    "one class": ([[1.0], [1.0]], [0, 0], None, ValueError, "at least 2 classes"),
    "no rows": (np.zeros((0, 3)), np.zeros(0, int), None, ValueError, "is empty"),
}


@pytest.mark.parametrize("case", BAD_INPUTS)
@pytest.mark.parametrize("name", METRICS)
def test_bad_input_raises_naming_argument_value_and_index(name, case):
    probs, labels, weights, error, message = BAD_INPUTS[case]
    with pytest.raises(error, match=None) as raised:
        METRICS[name](np.asarray(probs), np.asarray(labels), sample_weight=weights)
    assert message in str(raised.value)


@pytest.mark.parametrize("name", METRICS)
def test_bad_values_under_jit_and_vmap_make_only_their_batch_element_nan(name):
    metric = METRICS[name]
    bad = GOOD.copy()
    bad[1] = [0.2, 0.5, 0.2]  # a row summing to 0.9
    negative = GOOD.copy()
    negative[2] = [0.1, 1.0, -0.1]  # sums to 1, an entry outside [0, 1]
    batch = np.stack([GOOD, bad, negative, GOOD]).astype(np.float32)
    labels = np.array([0, 1, 2])
    good = float(metric(GOOD.astype(np.float32), labels))
    for got in (jax.jit(metric)(batch, labels), jax.vmap(metric, (0, None))(batch, labels)):
        np.testing.assert_allclose(got, [good, np.nan, np.nan, good], rtol=1e-6)
    out_of_range = jax.jit(metric)(batch[:1], np.array([[0, 1, 3]]))
    weights = jax.jit(lambda w: metric(GOOD, labels, sample_weight=w))(np.array([1.0, -1, 1]))
    assert np.isnan(out_of_range).all() and np.isnan(weights)
