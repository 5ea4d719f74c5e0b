import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm

SCORES = np.array([0.1, 0.4, 0.35, 0.8], np.float32)
LABELS = np.array([0, 0, 1, 1])

BINARY = [
    jm.roc_auc,
    jm.average_precision,
    lambda s, y, **kw: jm.roc_curve(s, y, **kw).tpr,
    lambda s, y, **kw: jm.precision_recall_curve(s, y, **kw).precision,
    lambda s, y, **kw: jm.precision_at_k(s, y, k=2, **kw),
    lambda s, y, **kw: jm.confusion_counts(s, y, 0.5, **kw).tp,
]


@pytest.mark.parametrize("metric", BINARY)
def test_nan_score_names_argument_and_index(metric):
    scores = SCORES.copy()
    scores[2] = np.nan
    with pytest.raises(ValueError, match=r"`scores` must be finite; found NaN at index 2"):
        metric(scores, LABELS)


@pytest.mark.parametrize("metric", BINARY)
def test_inf_score_in_a_batch_names_the_position(metric):
    scores = np.stack([SCORES, SCORES])
    scores[1, 3] = np.inf
    with pytest.raises(ValueError, match=r"found inf at index \(1, 3\)"):
        metric(scores, LABELS)


@pytest.mark.parametrize("metric", BINARY)
def test_label_outside_binary(metric):
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 1"):
        metric(SCORES, [0, 2, 1, 1])


@pytest.mark.parametrize("metric", BINARY)
def test_negative_weight(metric):
    with pytest.raises(
        ValueError, match=r"`sample_weight` must be non-negative; found -1.0 at index 3"
    ):
        metric(SCORES, LABELS, sample_weight=np.array([1.0, 1.0, 1.0, -1.0]))


@pytest.mark.parametrize("metric", BINARY)
def test_shape_mismatch_raises_even_under_jit(metric):
    with pytest.raises(ValueError, match=r"`labels` must have the same number of samples"):
        jax.jit(metric)(SCORES, np.array([0, 1, 1]))
    with pytest.raises(ValueError, match=r"batch axes"):
        metric(np.ones((2, 4), np.float32), np.ones((3, 4), np.int32))


@pytest.mark.parametrize("metric", BINARY)
def test_wrong_dtype_raises(metric):
    with pytest.raises(TypeError, match=r"`scores` must hold real numbers"):
        metric(np.array(["a", "b", "c", "d"]), LABELS)
    with pytest.raises(TypeError, match=r"`labels` must hold real numbers"):
        jax.jit(metric)(SCORES, jnp.array([1j, 0, 1, 0]))


def test_empty_and_scalar_scores():
    with pytest.raises(ValueError, match=r"`scores` is empty"):
        jm.roc_auc(np.zeros(0, np.float32), np.zeros(0, int))
    with pytest.raises(ValueError, match=r"at least 1 dimension"):
        jm.roc_auc(0.5, 1)


@pytest.mark.parametrize("metric", BINARY[:5])
def test_bad_values_under_jit_give_nan(metric):
    scores = jnp.asarray(SCORES).at[1].set(jnp.nan)
    assert np.isnan(np.asarray(jax.jit(metric)(scores, LABELS))).all()
    assert np.isnan(np.asarray(jax.jit(metric)(SCORES, jnp.array([0, 3, 1, 1])))).all()
    weights = jnp.array([1.0, -2.0, 1.0, 1.0])
    assert np.isnan(np.asarray(jax.jit(metric)(SCORES, LABELS, sample_weight=weights))).all()


def test_only_the_bad_batch_element_is_nan():
    scores = jnp.stack([jnp.asarray(SCORES), jnp.asarray(SCORES).at[0].set(jnp.nan)])
    result = jax.jit(jm.roc_auc)(scores, LABELS)
    assert not math.isnan(float(result[0])) and math.isnan(float(result[1]))


def test_max_fpr_out_of_range():
    with pytest.raises(ValueError, match="`max_fpr`"):
        jm.roc_auc(SCORES, LABELS, max_fpr=0.0)


def test_nan_threshold():
    with pytest.raises(ValueError, match="`thresholds`"):
        jm.confusion_counts(SCORES, LABELS, [0.5, np.nan])
