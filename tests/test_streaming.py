import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm
from jaxmetrics import streaming


def batches(rng, num_batches=5, size=80):
    out = []
    for _ in range(num_batches):
        labels = (rng.random(size) < 0.3).astype(np.int32)
        scores = np.round(rng.normal(size=size) + labels, 2).astype(np.float32)
        out.append((scores, labels))
    return out


def concatenated(parts):
    return np.concatenate([p[0] for p in parts]), np.concatenate([p[1] for p in parts])


def test_binned_curve_batchwise_equals_one_shot_and_bounds_the_exact_auc(rng):
    parts = batches(rng)
    scores, labels = concatenated(parts)
    update = jax.jit(lambda state, s, y: state.update(s, y))
    for state in (
        streaming.BinnedCurve.empty(50, low=-3.0, high=4.0),
        streaming.BinnedCurve.from_quantiles(parts[0][0], 30),
    ):
        one_shot = state.update(scores, labels)
        for s, y in parts:
            state = update(state, s, y)
        np.testing.assert_array_equal(state.tp, one_shot.tp)
        result = state.compute()
        exact = float(jm.roc_auc(scores, labels))
        assert abs(float(result["roc_auc"]) - exact) <= float(result["roc_auc_max_error"]) + 1e-6
        assert float(result["roc_auc_max_error"]) < 0.05


def test_binned_curve_on_the_data_grid_is_exact(rng):
    scores, labels = concatenated(batches(rng))
    state = streaming.BinnedCurve.empty(thresholds=scores).update(scores, labels)
    result = state.compute()
    assert float(result["roc_auc"]) == pytest.approx(float(jm.roc_auc(scores, labels)), abs=1e-6)
    assert float(result["average_precision"]) == pytest.approx(
        float(jm.average_precision(scores, labels)), abs=1e-6
    )


def test_binned_curve_merge_and_config_checks(rng):
    parts = batches(rng, 2)
    empty = streaming.BinnedCurve.empty(20, low=-2, high=3)
    merged = empty.update(*parts[0]).merge(empty.update(*parts[1]))
    np.testing.assert_array_equal(merged.tp, empty.update(*concatenated(parts)).tp)
    with pytest.raises(ValueError, match="different `thresholds`"):
        merged.merge(streaming.BinnedCurve.empty(21))
    assert math.isnan(float(empty.compute()["roc_auc"]))


def test_exact_curve_is_exact_and_flags_overflow(rng):
    parts = batches(rng, 3, 50)
    scores, labels = concatenated(parts)
    state = streaming.ExactCurve.empty(200)
    update = jax.jit(lambda st, s, y: st.update(s, y))
    for s, y in parts:
        state = update(state, s, y)
    result = state.compute()
    assert float(result["roc_auc"]) == pytest.approx(float(jm.roc_auc(scores, labels)), abs=1e-6)
    assert int(result["count"]) == 150 and not bool(result["overflowed"])
    small = streaming.ExactCurve.empty(120)
    for s, y in parts:
        small = small.update(s, y)
    result = small.compute()
    assert bool(result["overflowed"]) and math.isnan(float(result["roc_auc"]))
    merged = (
        streaming.ExactCurve.empty(200)
        .update(*parts[0])
        .merge(streaming.ExactCurve.empty(200).update(*parts[1]))
    )
    both = concatenated(parts[:2])
    assert float(merged.compute()["average_precision"]) == pytest.approx(
        float(jm.average_precision(*both)), abs=1e-6
    )


def test_confusion_state_binary_and_multiclass(rng):
    parts = batches(rng)
    scores, labels = concatenated(parts)
    state = streaming.ConfusionState.empty(thresholds=[0.0, 0.5])
    for s, y in parts:
        state = state.update(s, y)
    np.testing.assert_allclose(
        state.compute()["f1"], jm.f_beta(jm.confusion_counts(scores, labels, [0.0, 0.5]))
    )
    multi = streaming.ConfusionState.empty(num_classes=3)
    true = rng.integers(0, 3, (4, 30))
    predicted = rng.integers(0, 3, (4, 30))
    for p, t in zip(predicted, true):
        multi = multi.update(p, t)
    matrix = jm.confusion_matrix(predicted.ravel(), true.ravel(), num_classes=3)
    np.testing.assert_array_equal(multi.counts, matrix)
    assert float(multi.compute()["precision_macro"]) == pytest.approx(
        float(jm.precision(jm.one_vs_rest(matrix), average="macro"))
    )


def test_mean_and_collection(rng):
    parts = batches(rng)
    scores, labels = concatenated(parts)
    collection = streaming.Collection(
        {
            "curve": streaming.BinnedCurve.empty(40, low=-3, high=4),
            "at_half": streaming.ConfusionState.empty(thresholds=[0.5]),
            "exact": streaming.ExactCurve.empty(500),
            "loss": streaming.Mean.empty(),
        }
    )
    step = jax.jit(lambda c, s, y: c.update(s, y).update_mean("loss", (s - y) ** 2))
    for s, y in parts:
        collection = step(collection, s, y)
    result = collection.compute()
    alone = streaming.BinnedCurve.empty(40, low=-3, high=4).update(scores, labels)
    assert float(result["curve"]["roc_auc"]) == pytest.approx(float(alone.compute()["roc_auc"]))
    assert float(result["exact"]["roc_auc"]) == pytest.approx(
        float(jm.roc_auc(scores, labels)), abs=1e-6
    )
    assert float(result["loss"]["mean"]) == pytest.approx(
        float(((scores - labels) ** 2).mean()), rel=1e-5
    )
    assert float(result["at_half"]["recall"][0]) == pytest.approx(
        float(jm.recall(jm.confusion_counts(scores, labels, 0.5)))
    )


def test_states_are_pytrees_whose_leaves_are_the_counts():
    state = streaming.BinnedCurve.empty(10)
    leaves = jax.tree_util.tree_leaves(state)
    assert len(leaves) == 4  # tp, fp and the two totals; the grid is static
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, state)
    assert doubled.thresholds == state.thresholds
    with pytest.raises(ValueError, match="either `thresholds`"):
        streaming.ConfusionState.empty()
    with pytest.raises(ValueError, match="`capacity`"):
        streaming.ExactCurve.empty(0)
    assert jnp.asarray(state.grid).shape == (10,)
