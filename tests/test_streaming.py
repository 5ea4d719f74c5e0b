import dataclasses
import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

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
    assert float(multi.compute()["macro"]["precision"]) == pytest.approx(
        float(jm.precision(jm.one_vs_rest(matrix), average="macro"))
    )


def test_multiclass_compute_mirrors_classification_report(rng):
    true = rng.integers(0, 3, (3, 20))
    predicted = np.where(rng.random((3, 20)) < 0.5, true, rng.integers(0, 3, (3, 20)))
    state = streaming.ConfusionState.empty(num_classes=3)
    update = jax.jit(lambda st, p, t: st.update(p, t))
    for p, t in zip(predicted, true):
        state = update(state, p, t)
    result = state.compute()
    report = jm.classification_report(predicted.ravel(), true.ravel(), num_classes=3)
    assert set(result) == set(report._fields)
    for name in report._fields:
        expected = getattr(report, name)
        if isinstance(expected, dict):
            assert set(result[name]) == {"precision", "recall", "f1"}
            for key, value in expected.items():
                np.testing.assert_allclose(result[name][key], value, rtol=1e-6)
        else:
            np.testing.assert_allclose(result[name], expected, rtol=1e-6)
    # the accuracy is the multiclass one, trace over total (not the pooled one-vs-rest accuracy)
    assert float(result["accuracy"]) == pytest.approx(float((predicted == true).mean()))
    np.testing.assert_array_equal(result["support"], np.bincount(true.ravel(), minlength=3))


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
    assert len(leaves) == 5  # tp, fp, the two totals and num_bad_batches; the grid is static
    doubled = jax.tree_util.tree_map(lambda x: 2 * x, state)
    assert doubled.thresholds == state.thresholds
    with pytest.raises(ValueError, match="either `thresholds`"):
        streaming.ConfusionState.empty()
    with pytest.raises(ValueError, match="`capacity`"):
        streaming.ExactCurve.empty(0)
    assert jnp.asarray(state.grid).shape == (10,)


def states():
    return {
        "binned": streaming.BinnedCurve.empty(20, low=-3, high=4),
        "binary": streaming.ConfusionState.empty(thresholds=[0.0, 0.5]),
        "exact": streaming.ExactCurve.empty(500),
    }


@pytest.mark.parametrize("name", ["binned", "binary", "exact"])
@pytest.mark.parametrize("bad", ["nan_score", "label_2", "negative_weight"])
def test_a_bad_batch_under_jit_poisons_the_state(rng, name, bad):
    parts = batches(rng, 4, 60)
    weights = np.ones(60, np.float32)
    update = jax.jit(lambda state, s, y, w: state.update(s, y, sample_weight=w))
    state = states()[name]
    for s, y in parts[:3]:
        state = update(state, s, y, weights)
    clean = state.compute()
    scores, labels = parts[3][0].copy(), parts[3][1].copy()
    bad_weights = weights.copy()
    if bad == "nan_score":
        scores[7] = np.nan
    elif bad == "label_2":
        labels[7] = 2
    else:
        bad_weights[7] = -1.0
    poisoned = update(state, scores, labels, bad_weights)
    assert int(poisoned.num_bad_batches) == 1
    result = poisoned.compute()
    for key, value in clean.items():
        if jnp.issubdtype(jnp.asarray(value).dtype, jnp.floating) and key != "thresholds":
            assert np.isfinite(np.asarray(value)).any(), key
            assert np.isnan(np.asarray(result[key])).all(), key
    # the poison survives later good batches and merges, by addition (psum-able)
    later = update(poisoned, *parts[0], weights).merge(update(states()[name], *parts[1], weights))
    assert int(later.num_bad_batches) == 1
    assert all(
        np.isnan(np.asarray(v)).all()
        for k, v in later.compute().items()
        if jnp.issubdtype(jnp.asarray(v).dtype, jnp.floating) and k != "thresholds"
    )
    # eagerly the same batch raises
    with pytest.raises(ValueError, match="index 7"):
        states()[name].update(scores, labels, sample_weight=bad_weights)


def test_multiclass_confusion_state_and_mean_are_poisoned_under_jit(rng):
    state = streaming.ConfusionState.empty(num_classes=3)
    update = jax.jit(lambda st, p, t: st.update(p, t))
    for _ in range(3):
        state = update(state, rng.integers(0, 3, 30), rng.integers(0, 3, 30))
    assert np.isfinite(float(state.compute()["micro"]["precision"]))
    labels = rng.integers(0, 3, 30)
    labels[4] = 3
    poisoned = update(state, rng.integers(0, 3, 30), labels)
    assert int(poisoned.num_bad_batches) == 1
    np.testing.assert_array_equal(poisoned.counts, state.counts)  # the batch was not added
    for leaf in jax.tree_util.tree_leaves(poisoned.compute()):
        leaf = np.asarray(leaf)
        if np.issubdtype(leaf.dtype, np.floating):
            assert np.isnan(leaf).all()
        else:  # the support, a count: the -1 marker
            assert (leaf == -1).all()
    mean = streaming.Mean.empty()
    step = jax.jit(lambda m, v, w: m.update(v, sample_weight=w))
    mean = step(mean, jnp.array([1.0, 2.0]), jnp.array([1.0, 1.0]))
    assert float(mean.compute()["mean"]) == 1.5
    assert math.isnan(
        float(step(mean, jnp.array([1.0, 2.0]), jnp.array([1.0, -1.0])).compute()["mean"])
    )
    assert math.isnan(float(step(mean, jnp.array([1.0, jnp.inf]), jnp.ones(2)).compute()["mean"]))
    with pytest.raises(ValueError, match=r"`values` must be finite; found nan at index 1"):
        streaming.Mean.empty().update(np.array([1.0, np.nan]))
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative"):
        streaming.Mean.empty().update(np.array([1.0, 2.0]), sample_weight=np.array([1.0, -2.0]))


def test_float_weights_are_counted_as_floats(rng):
    scores, labels = concatenated(batches(rng, 2, 50))
    weights = rng.random(scores.size).astype(np.float32)
    expected = jm.confusion_counts(scores, labels, [0.0, 0.5], sample_weight=weights)
    # float counts (integer counts take whole weights only: `test_..._keeps_its_leaf_types`)
    state = streaming.ConfusionState.empty(thresholds=[0.0, 0.5], dtype=jnp.float32)
    state = state.update(scores[:50], labels[:50], sample_weight=weights[:50])
    state = state.update(scores[50:], labels[50:], sample_weight=weights[50:])
    for got, want in zip(state.counts, expected):
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, want, rtol=1e-5)
    np.testing.assert_allclose(state.compute()["f1"], jm.f_beta(expected), rtol=1e-5)
    curve = streaming.BinnedCurve.empty(thresholds=scores, dtype=jnp.float32).update(
        scores, labels, sample_weight=weights
    )
    assert float(curve.compute()["roc_auc"]) == pytest.approx(
        float(jm.roc_auc(scores, labels, sample_weight=weights)), abs=1e-5
    )
    multi = streaming.ConfusionState.empty(num_classes=3, dtype=jnp.float32)
    true, predicted = rng.integers(0, 3, 40), rng.integers(0, 3, 40)
    multi = jax.jit(lambda st, p, t, w: st.update(p, t, sample_weight=w))(
        multi, predicted, true, np.full(40, 0.25, np.float32)
    )
    np.testing.assert_allclose(
        multi.counts, 0.25 * np.asarray(jm.confusion_matrix(predicted, true, num_classes=3))
    )


def test_psum_merges_states_as_merge_does(rng):
    parts = batches(rng, 2, 40)
    scores = np.stack([p[0] for p in parts])
    labels = np.stack([p[1] for p in parts])
    scores_bad = scores.copy()
    scores_bad[1, 3] = np.nan
    for empty in (
        streaming.BinnedCurve.empty(20, low=-3, high=4),
        streaming.ConfusionState.empty(thresholds=[0.0, 0.5]),
    ):
        for data in (scores, scores_bad):

            def per_device(s, y, empty=empty):
                return jax.lax.psum(empty.update(s, y), "devices")

            summed = jax.vmap(per_device, axis_name="devices")(data, labels)
            first = jax.tree_util.tree_map(lambda x: x[0], summed)
            merged = jax.jit(lambda a, b, y0, y1, e=empty: e.update(a, y0).merge(e.update(b, y1)))(
                data[0], data[1], labels[0], labels[1]
            )
            for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(merged)):
                np.testing.assert_array_equal(a, b)
            bad = data is scores_bad
            assert int(first.num_bad_batches) == int(bad)
            value = first.compute()["roc_auc" if "roc_auc" in first.compute() else "f1"]
            assert np.isnan(np.asarray(value)).all() == bad


def test_states_compute_float64_under_x64(rng, x64):
    scores, labels = batches(rng, 1, 50)[0]
    for state in states().values():
        result = state.update(scores.astype(np.float64), labels).compute()
        for key, value in result.items():
            if jnp.issubdtype(jnp.asarray(value).dtype, jnp.floating) and key != "thresholds":
                assert value.dtype == np.float64, key
    mean = streaming.Mean.empty().update(scores.astype(np.float64))
    assert mean.compute()["mean"].dtype == np.float64


def test_states_refuse_two_dimensional_batches(rng):
    scores, labels = batches(rng, 1, 50)[0]
    for state in states().values():
        with pytest.raises(ValueError, match=r"must be one batch \[n\]; got shape \(1, 50\)"):
            state.update(scores[None], labels[None])


def test_multiclass_confusion_state_is_float64_under_x64(rng, x64):
    state = streaming.ConfusionState.empty(num_classes=3, dtype=jnp.float64)
    weights = rng.random(30)  # float64: float64 sums
    state = state.update(rng.integers(0, 3, 30), rng.integers(0, 3, 30), sample_weight=weights)
    for leaf in jax.tree_util.tree_leaves(state.compute()):
        assert leaf.dtype == np.float64


# ----------------------------------------------------------------------------- precision
# A score and a threshold are compared in one precision, the scores' own (float64 for float64
# scores called eagerly or with x64 on, float32 for float32 scores), the same eagerly and under
# jit, and equal to `confusion_counts` at the thresholds in that precision. The oracle is numpy
# comparing in that precision.

# float64 decimals with ties; float32 moves some down (0.35, 0.7) and some up (0.1, 0.3), but
# keeps every order and tie, so a jitted update (float32 without x64) must count as eagerly
PRECISION_SCORES = np.array([0.1, 0.4, 0.35, 0.8, 0.6, 0.3, 0.7, 0.35, 0.3, 0.55])
PRECISION_LABELS = np.array([0, 0, 1, 1, 0, 1, 1, 0, 0, 1])


@pytest.fixture(params=["x64_off", "x64_on"])
def mode(request):
    if request.param == "x64_on":
        request.getfixturevalue("x64")
    return request.param


def brute_force_counts(scores, labels, thresholds, dtype):
    """[tp, fp, fn, tn], each [..., T]: numpy's ``scores >= threshold`` in `dtype`."""
    flagged = scores.astype(dtype)[..., None, :] >= np.asarray(thresholds, dtype)[:, None]
    positive = (labels == 1)[..., None, :]
    return [
        (flagged & positive).sum(-1),
        (flagged & ~positive).sum(-1),
        (~flagged & positive).sum(-1),
        (~flagged & ~positive).sum(-1),
    ]


def assert_counts(counts, expected):
    for got, want in zip(counts, expected):
        np.testing.assert_array_equal(np.asarray(got), want)


update = jax.jit(lambda state, s, y: state.update(s, y))


def test_float64_scores_are_compared_with_the_thresholds_as_given(mode):
    scores, labels = PRECISION_SCORES, PRECISION_LABELS
    thresholds = np.unique(scores)
    expected = brute_force_counts(scores, labels, thresholds, np.float64)
    # float32 keeps this data's order and ties: jit (float32 without x64) sees the same counts
    assert_counts(expected, brute_force_counts(scores, labels, thresholds, np.float32))
    counts = jax.jit(lambda s, y: jm.confusion_counts(s, y, thresholds))(scores, labels)
    assert_counts(counts, expected)
    assert_counts(jm.confusion_counts(scores, labels, thresholds), expected)
    for state in _curves_equal_to(expected, thresholds, scores, labels):
        np.testing.assert_array_equal(state.fp, expected[1])
        result = state.compute()  # a grid holding every score: exact
        assert float(result["roc_auc"]) == pytest.approx(skm.roc_auc_score(labels, scores))
        assert float(result["average_precision"]) == pytest.approx(
            skm.average_precision_score(labels, scores)
        )
    # a threshold equal to a float64 score flags it (0.3 < float32(0.3))
    one = streaming.ConfusionState.empty(thresholds=[0.3])
    batch = np.array([0.3, 0.2]), np.array([1, 0])
    assert one.update(*batch).counts.tp.tolist() == [1]
    assert update(one, *batch).counts.tp.tolist() == [1]


def _curves_equal_to(expected, thresholds, scores, labels):
    """`ConfusionState` and `BinnedCurve` on `thresholds`, updated eagerly and under jit: their
    counts equal `expected` (tp, fp, fn, tn); returns the curves for further checks."""
    binary = streaming.ConfusionState.empty(thresholds=thresholds)
    curve = streaming.BinnedCurve.empty(thresholds=thresholds)
    for state in (binary.update(scores, labels), update(binary, scores, labels)):
        assert_counts(state.counts, expected)
    curves = [curve.update(scores, labels), update(curve, scores, labels)]
    for state in curves:
        np.testing.assert_array_equal(state.tp, expected[0])
    return curves


def test_float32_scores_are_compared_in_their_precision_eagerly_and_under_jit(mode):
    scores, labels = PRECISION_SCORES.astype(np.float32), PRECISION_LABELS
    thresholds = [0.35, 0.5, 0.7]  # 0.35 and 0.7 are not float32 numbers
    precision = np.float64 if mode == "x64_on" else np.float32
    expected = brute_force_counts(scores, labels, thresholds, precision)
    if mode == "x64_off":  # float32(0.7) < 0.7: flagged in float32, not in float64
        assert expected[0][2] > brute_force_counts(scores, labels, thresholds, np.float64)[0][2]
    _curves_equal_to(expected, thresholds, scores, labels)
    as_compared = np.asarray(thresholds, precision)
    assert_counts(jm.confusion_counts(scores, labels, as_compared), expected)


def test_a_collection_compares_as_its_members_do(mode):
    thresholds = np.unique(PRECISION_SCORES)
    members = {
        "curve": streaming.BinnedCurve.empty(thresholds=thresholds),
        "at": streaming.ConfusionState.empty(thresholds=[0.3, 0.7]),
        "exact": streaming.ExactCurve.empty(16),
    }
    collection = streaming.Collection(members)
    for scores in (PRECISION_SCORES, PRECISION_SCORES.astype(np.float32)):
        precision = np.float32 if scores.dtype == np.float32 and mode == "x64_off" else np.float64
        curve = brute_force_counts(scores, PRECISION_LABELS, thresholds, precision)
        at = brute_force_counts(scores, PRECISION_LABELS, [0.3, 0.7], precision)
        for updated in (
            collection.update(scores, PRECISION_LABELS),
            update(collection, scores, PRECISION_LABELS),
        ):
            states = updated.states
            np.testing.assert_array_equal(states["curve"].tp, curve[0])
            np.testing.assert_array_equal(states["curve"].fp, curve[1])
            assert_counts(states["at"].counts, at)
            assert float(states["exact"].compute()["roc_auc"]) == pytest.approx(
                skm.roc_auc_score(PRECISION_LABELS, scores)
            )


@pytest.fixture
def near_ties(rng):
    """Scores 0.5 + z * 1e-9: distinct in float64, all equal to 0.5 in float32."""
    labels = (rng.random(40) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    scores = 0.5 + (rng.normal(size=40) + labels) * 1e-9
    assert np.unique(scores.astype(np.float32)).size == 1
    return scores, labels


def test_exact_curve_stores_eager_float64_scores_exactly(near_ties):
    scores, labels = near_ties
    state = streaming.ExactCurve.empty(64).update(scores[:25], labels[:25])
    state = state.update(scores[25:], labels[25:])
    result = state.compute()
    expected = skm.roc_auc_score(labels, scores)
    assert expected > 0.6  # far from the 0.5 of the float32 values
    assert float(result["roc_auc"]) == pytest.approx(expected, abs=1e-6)
    assert float(result["roc_auc"]) == pytest.approx(float(jm.roc_auc(scores, labels)), abs=1e-6)
    assert float(result["average_precision"]) == pytest.approx(
        skm.average_precision_score(labels, scores), abs=1e-6
    )
    # the stored values come back in the results' float type: here numpy's float32 rounding
    np.testing.assert_array_equal(np.asarray(state.scores)[:40], scores.astype(np.float32))


def test_exact_curve_stores_the_same_keys_eagerly_and_under_jit(rng, mode):
    # float32 scores (or any, with x64 on) reach a jitted update unchanged: the same buffer
    values = [0.0, -0.0, 1.5, -1.5, 1e-30, -3e38, 3e38, 0.1, 2.0**-126, 7.0]
    dtype = np.float64 if mode == "x64_on" else np.float32
    scores = np.asarray(values + list(rng.normal(size=6)), dtype)
    labels = np.arange(scores.size) % 2
    empty = streaming.ExactCurve.empty(20)
    eager, jitted = empty.update(scores, labels), update(empty, scores, labels)
    for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(np.asarray(eager.scores)[: scores.size], scores)
    for result in (eager.compute(), jax.jit(lambda state: state.compute())(jitted)):
        assert float(result["roc_auc"]) == pytest.approx(skm.roc_auc_score(labels, scores))


def test_the_stored_scores_come_back_rounded_to_the_nearest_float32(rng):
    # the float32 of a float64, from its bits: numpy's own cast is the oracle (ties to even,
    # past the largest float32 to infinity; subnormals are zero, as XLA's CPU has them)
    halfway = np.float64(np.float32(1.0)) + 2.0**-24  # exactly between two float32 numbers
    values = np.concatenate(
        [
            rng.normal(size=20) * 10.0 ** rng.integers(-30, 30, 20),
            [halfway, -halfway, 1 + 3 * 2.0**-24, 3.5e38, -1e300, 1e-300, 2.0**-126, 0.0],
        ]
    )
    with np.errstate(over="ignore"):  # (the shared input check casts to float32 on the way)
        state = streaming.ExactCurve.empty(values.size).update(values, np.arange(values.size) % 2)
        expected = values.astype(np.float32)
    expected[np.abs(expected) < np.finfo(np.float32).tiny] = 0.0
    np.testing.assert_array_equal(np.asarray(state.scores), expected)


def test_thresholds_must_be_a_non_empty_set_without_nan():
    for empty in (
        lambda t: streaming.ConfusionState.empty(thresholds=t),
        lambda t: streaming.BinnedCurve.empty(thresholds=t),
    ):
        with pytest.raises(ValueError, match=r"`thresholds` must hold at least one threshold"):
            empty([])
        with pytest.raises(ValueError, match=r"`thresholds` must .*; found nan at index 1"):
            empty([0.5, np.nan])


@pytest.mark.parametrize("integer_weights", [False, True])
def test_a_scan_over_batches_keeps_every_leaf_type(rng, mode, integer_weights):
    # an eval loop compiles once: no update may change a state's leaf types (SPEC). With x64 on,
    # integer weights are counted in int64, the type the states' counts then start in
    scores = rng.random((3, 12))
    labels = (rng.random((3, 12)) < 0.5).astype(np.int32)
    weights = rng.integers(1, 4, (3, 12)) if integer_weights else None
    states = streaming.Collection(
        {
            "curve": streaming.BinnedCurve.empty(8),
            "at": streaming.ConfusionState.empty(thresholds=[0.5]),
            "exact": streaming.ExactCurve.empty(36),
        }
    )

    def step(state, batch):
        s, y, w = batch
        return state.update(s, y, sample_weight=w), None

    final, _ = jax.lax.scan(step, states, (scores, labels, weights))
    for before, after in zip(jax.tree_util.tree_leaves(states), jax.tree_util.tree_leaves(final)):
        assert before.dtype == after.dtype
    flat_weights = None if weights is None else weights.ravel()
    counts = jm.confusion_counts(scores.ravel(), labels.ravel(), 0.5, sample_weight=flat_weights)
    assert int(final.states["at"].counts.tp[0]) == int(counts.tp)


# ----------------------------------------------------------------------------- in a training loop
# (issue 28) a state's leaf types never change on update, whatever the mask or weights, so an
# eval step compiles once and `lax.scan` runs over batches; `compute` is one compiled program.


def every_state():
    """One state of each kind and layout, in a dict: a pytree, so one scan carries them all."""
    return {
        "binned": streaming.BinnedCurve.empty(9, low=-2.0, high=3.0),
        "binary": streaming.ConfusionState.empty(thresholds=[0.0, 1.0]),
        "multiclass": streaming.ConfusionState.empty(num_classes=3),
        "exact": streaming.ExactCurve.empty(120),
        "mean": streaming.Mean.empty(),
        "multilabel": streaming.BinnedCurve.empty(9, low=-2.0, high=3.0, num_labels=2),
        "collection": streaming.Collection(
            {
                "curve": streaming.BinnedCurve.empty(5, low=-1.0, high=2.0),
                "at": streaming.ConfusionState.empty(thresholds=[0.5]),
            }
        ),
    }


def update_every_state(states, scores, labels, classes, mask):
    updated = {}
    for name, state in states.items():
        if name == "multiclass":  # classes: [2, n], the predicted and the true classes
            updated[name] = state.update(classes[0], classes[1], sample_weight=mask)
        elif name == "mean":
            updated[name] = state.update(scores, sample_weight=mask)
        elif name == "multilabel":
            pair = (jnp.stack([scores, -scores]), jnp.stack([labels, labels]))
            updated[name] = state.update(*pair, sample_weight=mask)
        else:
            updated[name] = state.update(scores, labels, sample_weight=mask)
    return updated


def positives_above(scores, labels, thresholds):
    """Brute force: the positives and the negatives scoring >= each threshold (float32)."""
    flagged = scores[None, :] >= np.asarray(thresholds, np.float32)[:, None]
    return (flagged & (labels == 1)).sum(1), (flagged & (labels == 0)).sum(1)


@pytest.mark.parametrize("mask_dtype", [np.int32, np.float32, np.bool_])
def test_a_scan_over_masked_batches_works_for_every_state(rng, mask_dtype):
    scores = rng.normal(size=(3, 40)).astype(np.float32)
    labels = (rng.random((3, 40)) < 0.4).astype(np.int32)
    labels[:, :2] = [0, 1]
    classes = rng.integers(0, 3, (3, 2, 40))
    mask = rng.random((3, 40)) < 0.75
    mask[:, :2] = True
    batches_in = (scores, labels, classes, mask.astype(mask_dtype))
    states = every_state()

    def step(states, batch):
        return update_every_state(states, *batch), None

    final, _ = jax.lax.scan(step, states, batches_in)
    for before, after in zip(jax.tree_util.tree_leaves(states), jax.tree_util.tree_leaves(final)):
        assert before.dtype == after.dtype
    # the masked samples left out, exactly: scikit-learn and brute force on the samples kept
    kept = mask.ravel()
    s, y = scores.ravel()[kept], labels.ravel()[kept]
    predicted, true = (classes[:, i].ravel()[kept] for i in (0, 1))
    result = {name: state.compute() for name, state in final.items()}
    assert float(result["exact"]["roc_auc"]) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-6)
    for name, state in (
        ("binned", final["binned"]),
        ("curve", final["collection"].states["curve"]),
    ):
        tp, fp = positives_above(s, y, state.thresholds)
        np.testing.assert_array_equal(state.tp, tp, err_msg=name)
        np.testing.assert_array_equal(state.fp, fp, err_msg=name)
    tp, fp = positives_above(-s, y, final["multilabel"].thresholds)
    np.testing.assert_array_equal(final["multilabel"].tp[1], tp)
    for state, grid in ((final["binary"], [0.0, 1.0]), (final["collection"].states["at"], [0.5])):
        np.testing.assert_array_equal(state.counts.tp, positives_above(s, y, grid)[0])
    np.testing.assert_array_equal(
        final["multiclass"].counts, skm.confusion_matrix(true, predicted, labels=[0, 1, 2])
    )
    assert float(result["mean"]["mean"]) == pytest.approx(float(s.mean()), rel=1e-5)
    if mask_dtype is np.float32:  # a float padding mask: a jitted eval step traces once
        traces = []

        def traced(states, *batch):
            traces.append(1)
            return update_every_state(states, *batch)

        eval_step, states = jax.jit(traced), every_state()
        for batch in zip(*batches_in):
            states = eval_step(states, *batch)
        assert len(traces) == 1
        for a, b in zip(jax.tree_util.tree_leaves(states), jax.tree_util.tree_leaves(final)):
            np.testing.assert_array_equal(a, b)


def test_integer_counts_take_whole_weights_and_refuse_fractional_ones(rng):
    scores, labels = batches(rng, 1, 30)[0]
    half = np.full(30, 0.5, np.float32)
    message = (
        r"`sample_weight` must be whole numbers .* `dtype=jnp.float32`.*; found 0.5 at index 0"
    )
    for state in (
        streaming.BinnedCurve.empty(5),
        streaming.ConfusionState.empty(thresholds=[0.5]),
        streaming.Collection({"at": streaming.ConfusionState.empty(thresholds=[0.5])}),
    ):
        with pytest.raises(ValueError, match=message):
            state.update(scores, labels, sample_weight=half)
    with pytest.raises(ValueError, match=message):
        streaming.ConfusionState.empty(num_classes=2).update(labels, labels, sample_weight=half)
    # NaN and negative weights keep their own errors
    with pytest.raises(ValueError, match=r"`sample_weight` must be finite"):
        streaming.BinnedCurve.empty(5).update(scores, labels, sample_weight=half * np.nan)
    # under jit: the batch is refused and counted, the results NaN, the types kept
    update = jax.jit(lambda state, w: state.update(scores, labels, sample_weight=w))
    refused = update(streaming.BinnedCurve.empty(5), half)
    assert int(refused.num_bad_batches) == 1 and int(refused.tp.sum()) == 0
    assert refused.tp.dtype == streaming.BinnedCurve.empty(5).tp.dtype
    assert np.isnan(float(refused.compute()["roc_auc"]))
    # whole float weights are counted exactly in the integer counts, eagerly and under jit
    unweighted = streaming.BinnedCurve.empty(5).update(scores, labels)
    for doubled in (
        streaming.BinnedCurve.empty(5).update(scores, labels, sample_weight=2 * half + 1),
        update(streaming.BinnedCurve.empty(5), 2 * half + 1),
    ):
        assert doubled.tp.dtype == unweighted.tp.dtype
        np.testing.assert_array_equal(doubled.tp, 2 * np.asarray(unweighted.tp))


def test_the_first_compute_of_a_state_compiles_one_program(rng, caplog):
    scores, labels = batches(rng, 1, 30)[0]
    states = {  # configurations of their own: no program compiled by another test
        "binned": streaming.BinnedCurve.empty(17, low=-1.5, high=2.5).update(scores, labels),
        "binary": streaming.ConfusionState.empty(thresholds=[0.25, 0.75]).update(scores, labels),
        "multiclass": streaming.ConfusionState.empty(num_classes=4).update(labels, labels),
        "exact": streaming.ExactCurve.empty(33).update(scores, labels),
        "collection": streaming.Collection(
            {
                "curve": streaming.BinnedCurve.empty(19),
                "at": streaming.ConfusionState.empty(thresholds=[0.3]),
            }
        ).update(scores, labels),
    }

    def compiled(state):
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            jax.block_until_ready(state.compute())
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]

    for name, state in states.items():
        first = compiled(state)
        assert len(first) <= 3 and any("jit(compute)" in m for m in first), (name, first)
        assert compiled(state) == [], name


def test_a_state_given_one_column_of_logits_names_the_shape(rng):
    scores, labels = batches(rng, 1, 30)[0]
    message = r"`scores` has shape \(30, 1\); samples lie on the last axis.*`scores\[\.\.\., 0\]`"
    for update in (
        streaming.BinnedCurve.empty(5).update,
        jax.jit(streaming.ExactCurve.empty(40).update),
        streaming.Collection({"at": streaming.ConfusionState.empty(thresholds=[0.5])}).update,
    ):
        with pytest.raises(ValueError, match=message):
            update(scores[:, None], labels)


def _near_the_int32_limit(state):
    """`state` (int32 counts) as if it had counted 2^31 - 10 positives: 9 more still fit."""
    near = jnp.int32(2**31 - 10)
    if isinstance(state, streaming.BinnedCurve):
        return dataclasses.replace(
            state, tp=state.tp + near, total_positive=state.total_positive + near
        )
    return dataclasses.replace(state, counts=state.counts._replace(tp=state.counts.tp + near))


@pytest.mark.parametrize("kind", ["BinnedCurve", "ConfusionState"])
def test_int32_counts_that_would_wrap_around_raise_eagerly_and_poison_under_jit(kind):
    # they wrapped to -2147483638 positives, and a BinnedCurve's AUC came out 0.75, without a word
    state = _near_the_int32_limit(getattr(streaming, kind).empty(thresholds=[0.5]))
    assert state.num_bad_batches == 0
    scores, labels = jnp.full(20, 0.9), jnp.ones(20, jnp.int32)
    with pytest.raises(OverflowError, match=rf"{kind}.update: .* 2147483647, the largest int32"):
        state.update(scores, labels)
    update = jax.jit(lambda s, x, y: s.update(x, y))
    wrapped = update(state, scores, labels)
    assert int(wrapped.num_bad_batches) == 1
    computed = {k: v for k, v in wrapped.compute().items() if k != "thresholds"}  # (the grid)
    assert all(np.isnan(np.asarray(v)).all() for v in jax.tree_util.tree_leaves(computed))
    # what still fits is counted: 9 more positives reach the limit exactly
    full = update(state, scores[:9], labels[:9])
    assert int(full.num_bad_batches) == 0
    leaf = full.total_positive if kind == "BinnedCurve" else full.counts.tp[0]
    assert int(leaf) == 2**31 - 1
    # a merge that would wrap around: the same
    with pytest.raises(OverflowError, match=rf"{kind}.merge"):
        state.merge(state)
    merged = jax.jit(lambda a, b: a.merge(b))(state, state)
    assert int(merged.num_bad_batches) == 1
    # under vmap over states, only the state that would wrap around is marked
    empty = getattr(streaming, kind).empty(thresholds=[0.5])
    stacked = jax.tree_util.tree_map(lambda a, b: jnp.stack([a, b]), state, empty)
    both = jax.vmap(lambda s: s.update(scores, labels))(stacked)
    np.testing.assert_array_equal(both.num_bad_batches, [1, 0])


def test_multilabel_and_multiclass_counts_that_would_wrap_around():
    near = jnp.int32(2**31 - 10)
    labels = jnp.ones((2, 20), jnp.int32)
    state = streaming.BinnedCurve.empty(thresholds=[0.5], num_labels=2)
    state = dataclasses.replace(
        state, tp=state.tp.at[1].add(near), total_positive=state.total_positive.at[1].add(near)
    )
    updated = jax.jit(lambda s, x, y: s.update(x, y))(state, jnp.full((2, 20), 0.9), labels)
    np.testing.assert_array_equal(updated.num_bad_batches, [0, 1])  # label 1 alone
    roc_auc = np.asarray(updated.compute()["roc_auc"])
    assert np.isnan(roc_auc[1]) and not np.isnan(updated.compute()["tpr"][0]).any()
    matrix = streaming.ConfusionState.empty(num_classes=3)
    matrix = dataclasses.replace(matrix, counts=matrix.counts.at[0, 0].add(near))
    with pytest.raises(OverflowError, match="ConfusionState.update"):
        matrix.update(jnp.zeros(20, jnp.int32), jnp.zeros(20, jnp.int32))
    jitted = jax.jit(lambda s, p, y: s.update(p, y))(
        matrix, jnp.zeros(20, jnp.int32), jnp.zeros(20, jnp.int32)
    )
    assert int(jitted.num_bad_batches) == 1 and np.isnan(jitted.compute()["accuracy"])


def test_an_eager_mean_update_compiles_one_program(caplog):
    # its update ran operation by operation (3-6 programs for each new batch shape)
    rng = np.random.default_rng(8)
    streaming.Mean.empty().update(rng.random(5), sample_weight=rng.random(5))  # other shapes first
    values, weights = rng.random((2, 7)), rng.uniform(0.5, 2.0, (2, 7))
    state = streaming.Mean.empty()
    for sample_weight in (weights, None):
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            state = state.update(values, sample_weight=sample_weight)
        messages = [
            r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")
        ]
        assert len(messages) == 1 and "jit(_mean_update)" in messages[0], messages
    expected = np.average(
        np.concatenate([values, values]), weights=np.concatenate([weights, 0 * weights + 1])
    )
    np.testing.assert_allclose(state.compute()["mean"], expected, rtol=1e-6)


def test_an_eager_update_of_a_new_state_compiles_at_most_two_programs(caplog):
    # the sums of an update ran operation by operation: 8 (BinnedCurve) and 21 (ExactCurve)
    # programs for a state of a new size, each dispatched again on every update
    rng = np.random.default_rng(12)
    scores = rng.random(12).astype(np.float32)
    labels, weights = np.arange(12) % 2, rng.integers(0, 3, 12).astype(np.float32)
    for state in (streaming.BinnedCurve.empty(5), streaming.ExactCurve.empty(20)):
        state.update(scores, labels, sample_weight=weights)  # other sizes first
    binned, exact = streaming.BinnedCurve.empty(13), streaming.ExactCurve.empty(37)
    for name in ("binned", "exact"):
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            for _ in range(2):
                if name == "binned":
                    binned = binned.update(scores, labels, sample_weight=weights)
                else:
                    exact = exact.update(scores, labels, sample_weight=weights)
        messages = [
            r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")
        ]
        assert 1 <= len(messages) <= 2, (name, messages)
    # the counts: twice the batch's weighted positives and negatives at or above each threshold
    at = np.asarray(binned.grid)[:, None] <= scores
    np.testing.assert_array_equal(binned.tp, 2 * (at * weights * labels).sum(-1))
    np.testing.assert_array_equal(binned.fp, 2 * (at * weights * (1 - labels)).sum(-1))
    expected = skm.roc_auc_score(
        np.tile(labels, 2), np.tile(scores, 2), sample_weight=np.tile(weights, 2)
    )
    np.testing.assert_allclose(exact.compute()["roc_auc"], expected, rtol=1e-6)


def test_an_eager_collection_update_compiles_its_counts_and_one_program_per_member(caplog):
    # each member's columns were four eager gathers (and a copy program) per update: a new
    # collection's update compiled about a dozen programs
    rng = np.random.default_rng(13)
    scores = rng.random(12).astype(np.float32)
    labels, weights = np.arange(12) % 2, rng.integers(0, 3, 12)
    members = {
        "curve": streaming.BinnedCurve.empty(17),
        "at": streaming.ConfusionState.empty(thresholds=[0.25, 0.65, 0.85]),
    }
    # other sizes first: what a process compiles once (its probe of the compiler's options)
    streaming.Collection({"c": streaming.BinnedCurve.empty(5)}).update(scores[:7], labels[:7])
    collection = streaming.Collection(members)
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        collection = collection.update(scores, labels, sample_weight=weights)
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert len(messages) <= 3, messages  # the counts at the union grid, one sum per member
    for name, member in members.items():  # as each member updated alone
        alone = member.update(scores, labels, sample_weight=weights)
        for ours, theirs in zip(jax.tree.leaves(collection.states[name]), jax.tree.leaves(alone)):
            np.testing.assert_array_equal(ours, theirs)


def test_creating_states_of_new_sizes_compiles_nothing(caplog):
    # each `jnp.zeros` of a new shape was a program of its own (4-8 on a state's first use)
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        states = [
            streaming.BinnedCurve.empty(23, num_labels=3),
            streaming.ConfusionState.empty(thresholds=[0.1, 0.2, 0.3, 0.4, 0.6], num_labels=2),
            streaming.ConfusionState.empty(num_classes=7),
            streaming.ExactCurve.empty(43),
            streaming.Mean.empty(),
        ]
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert messages == []
    for state in states:  # empty, as before: every count zero, no bad batch
        for leaf in jax.tree.leaves(state):
            assert not np.asarray(leaf).any() or leaf.dtype == np.uint32  # (ExactCurve's keys)
