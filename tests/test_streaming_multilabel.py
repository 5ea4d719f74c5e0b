"""Multilabel streaming states: ``num_labels=L``, batches ``[L, n]``, one state per label.

The references are the library's batched metrics on the concatenated data (`jm.roc_auc`,
`jm.average_precision` and `jm.confusion_counts` on ``[L, n]`` give one value per label row).
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm
from jaxmetrics import streaming

NUM_LABELS, SIZE = 3, 40


def batches(rng, num_batches=3):
    """``[L, n]`` batches with ties within and across labels, every label with both classes."""
    out = []
    for _ in range(num_batches):
        labels = (rng.random((NUM_LABELS, SIZE)) < 0.35).astype(np.int32)
        labels[:, :2] = [0, 1]
        scores = np.round(rng.random((NUM_LABELS, SIZE)) + 0.5 * labels, 1).astype(np.float32)
        weights = rng.integers(1, 4, SIZE).astype(np.float32)  # one weight per sample
        out.append((scores, labels, weights))
    return out


def concatenated(parts):
    return tuple(np.concatenate(arrays, axis=-1) for arrays in zip(*parts))


def states():
    return {
        # thresholds 0.0, 0.1, ..., 1.5: every score of `batches`, so the binned curve is exact
        "binned": streaming.BinnedCurve.empty(
            16, low=0.0, high=1.5, num_labels=NUM_LABELS, dtype=jnp.float32
        ),
        "binary": streaming.ConfusionState.empty(
            thresholds=[0.5, 1.0], num_labels=NUM_LABELS, dtype=jnp.float32
        ),
        "exact": streaming.ExactCurve.empty(4 * SIZE, num_labels=NUM_LABELS),
    }


# one compilation per kind of state, shared by the tests (float counts: the weights are float);
# `compute` is also called eagerly, in the bad-batch and shape tests
update = jax.jit(lambda state, s, y, w: state.update(s, y, sample_weight=w))
compute = jax.jit(lambda state: state.compute())


def stream(state, parts):
    for scores, labels, weights in parts:
        state = update(state, scores, labels, weights)
    return state


def leaves_equal(first, second):
    assert jax.tree_util.tree_structure(first) == jax.tree_util.tree_structure(second)
    for a, b in zip(jax.tree_util.tree_leaves(first), jax.tree_util.tree_leaves(second)):
        np.testing.assert_array_equal(a, b)


def test_empty_states_have_a_leading_label_axis_and_single_label_ones_are_unchanged():
    multi, single = states(), streaming.BinnedCurve.empty(16, low=0.0, high=1.5)
    assert single.num_labels is None and single.tp.shape == (16,)
    assert multi["binned"].tp.shape == (NUM_LABELS, 16)
    assert multi["binned"].total_positive.shape == (NUM_LABELS,)
    assert multi["binary"].counts.fn.shape == (NUM_LABELS, 2)
    assert multi["exact"].scores.shape == (NUM_LABELS, 4 * SIZE)
    for state in multi.values():
        assert state.num_labels == NUM_LABELS
        assert state.num_bad_batches.shape == (NUM_LABELS,)
    # the same leaves as a single-label state, each with one more axis; num_labels is static
    assert len(jax.tree_util.tree_leaves(multi["binned"])) == len(jax.tree_util.tree_leaves(single))


def test_exact_curve_equals_the_batched_metrics_per_label_and_macro(rng):
    parts = batches(rng)
    scores, labels, weights = concatenated(parts)
    result = compute(stream(states()["exact"], parts))
    expected_auc = jm.roc_auc(scores, labels, sample_weight=weights)
    assert result["roc_auc"].shape == (NUM_LABELS,)
    np.testing.assert_allclose(result["roc_auc"], expected_auc, atol=1e-6)
    np.testing.assert_allclose(
        result["average_precision"],
        jm.average_precision(scores, labels, sample_weight=weights),
        atol=1e-6,
    )
    for metric, name in ((jm.roc_auc, "roc_auc"), (jm.average_precision, "average_precision")):
        macro = metric(scores, labels, sample_weight=weights, average="macro")
        assert float(result[name].mean()) == pytest.approx(float(macro), abs=1e-6)
    np.testing.assert_array_equal(result["count"], [3 * SIZE] * NUM_LABELS)
    assert not np.asarray(result["overflowed"]).any()


def test_binned_curve_on_a_grid_holding_every_score_is_exact_per_label(rng):
    parts = batches(rng)
    scores, labels, weights = concatenated(parts)
    state = stream(states()["binned"], parts)
    assert np.isin(scores, state.grid).all()
    result = compute(state)
    for metric, name in ((jm.roc_auc, "roc_auc"), (jm.average_precision, "average_precision")):
        expected = metric(scores, labels, sample_weight=weights)
        np.testing.assert_allclose(result[name], expected, atol=1e-6)
    assert result["fpr"].shape == result["precision"].shape == (NUM_LABELS, 16 + 2)
    assert result["thresholds"].shape == (16 + 2,)  # the grid, shared by the labels


def test_confusion_state_counts_equal_confusion_counts_per_label(rng):
    parts = [(s, y, w * (1 + y)) for s, y, w in batches(rng)]  # weights [L, n], label by label
    scores, labels, weights = concatenated(parts)
    state = stream(states()["binary"], parts)
    expected = jm.confusion_counts(scores, labels, [0.5, 1.0], sample_weight=weights)
    for got, want in zip(state.counts, expected):
        assert got.shape == (NUM_LABELS, 2)
        np.testing.assert_allclose(got, want)
    np.testing.assert_allclose(compute(state)["f1"], jm.f_beta(expected), rtol=1e-6)


@pytest.mark.parametrize("name", ["binned", "binary", "exact"])
def test_merge_of_two_halves_equals_one_state(rng, name):
    first, second = batches(rng, 2)
    empty = states()[name]
    merged = stream(empty, [first]).merge(stream(empty, [second]))
    leaves_equal(merged, stream(empty, [first, second]))


def test_psum_over_a_vmap_axis_equals_merge_and_keeps_bad_labels_apart(rng):
    parts = batches(rng, 2)
    parts[1][0][1, 3] = np.nan  # device 1's batch is bad for label 1 only
    scores, labels, weights = (np.stack(arrays) for arrays in zip(*parts))  # [devices, ...]
    for name in ("binned", "binary"):
        empty = states()[name]

        def per_device(s, y, w, empty=empty):
            return jax.lax.psum(empty.update(s, y, sample_weight=w), "devices")

        summed = jax.jit(jax.vmap(per_device, axis_name="devices"))(scores, labels, weights)
        first = jax.tree_util.tree_map(lambda x: x[0], summed)
        leaves_equal(first, stream(empty, parts[:1]).merge(stream(empty, parts[1:])))
        np.testing.assert_array_equal(first.num_bad_batches, [0, 1, 0])


def poison(batch, bad):
    scores, labels, weights = (a.copy() for a in batch)
    if bad == "nan_score":
        scores[1, 7] = np.nan
    elif bad == "label_2":
        labels[1, 7] = 2
    else:
        weights[7] = -1.0  # one weight per sample: every label's batch holds it
    return scores, labels, weights


def floating_items(result):
    return {
        key: np.asarray(value)
        for key, value in result.items()
        if np.issubdtype(np.asarray(value).dtype, np.floating) and key != "thresholds"
    }


@pytest.mark.parametrize("name", ["binned", "binary", "exact"])
@pytest.mark.parametrize("bad", ["nan_score", "label_2", "negative_weight"])
def test_a_bad_batch_under_jit_poisons_its_labels_only(rng, name, bad):
    first, last = batches(rng, 2)
    state = update(states()[name], *first)
    clean = floating_items(update(state, *last).compute())
    poisoned_state = update(state, *poison(last, bad))
    poisoned = floating_items(poisoned_state.compute())
    bad_labels = [1] if bad != "negative_weight" else [0, 1, 2]
    expected_bad = np.isin(np.arange(NUM_LABELS), bad_labels).astype(np.int32)
    np.testing.assert_array_equal(poisoned_state.num_bad_batches, expected_bad)
    for key, value in poisoned.items():
        for label in range(NUM_LABELS):
            if label in bad_labels:
                assert np.isnan(value[label]).all(), (key, label)
            else:  # the other labels took the batch, as if it were theirs alone
                np.testing.assert_array_equal(value[label], clean[key][label], err_msg=key)
        assert np.isnan(value.mean(0)).all(), key  # so the macro average is NaN
    # the poison survives a later good batch and a merge
    later = update(poisoned_state, *first).merge(update(states()[name], *last))
    np.testing.assert_array_equal(later.num_bad_batches, expected_bad)
    for value in floating_items(later.compute()).values():
        assert np.isnan(value[1]).all()
    index = "index 7" if bad == "negative_weight" else r"index \(1, 7\)"
    with pytest.raises(ValueError, match=index):
        states()[name].update(*poison(last, bad)[:2], sample_weight=poison(last, bad)[2])


def test_wrong_shapes_and_configurations_raise_naming_the_argument(rng):
    scores, labels, weights = batches(rng, 1)[0]
    for name, state in states().items():
        argument = "predictions" if name == "binary" else "scores"  # ConfusionState's name
        with pytest.raises(ValueError, match=rf"`{argument}` must be one multilabel batch"):
            state.update(scores[:2], labels)
    binned = states()["binned"]
    with pytest.raises(ValueError, match=r"`scores` .* L = `num_labels` = 3; got shape \(2, 40\)"):
        binned.update(scores[:2], labels)
    with pytest.raises(ValueError, match=r"`labels` must be one multilabel batch .*\(40,\)"):
        binned.update(scores, labels[0])
    with pytest.raises(ValueError, match=r"`sample_weight` .* \[n\] or \[L, n\] .*\(2, 40\)"):
        binned.update(scores, labels, sample_weight=np.ones((2, SIZE)))
    with pytest.raises(ValueError, match=r"`labels` must be one batch \[n\]; got shape \(3, 40\)"):
        streaming.BinnedCurve.empty(12).update(scores[0], labels)
    with pytest.raises(ValueError, match="different `num_labels`"):
        binned.merge(streaming.BinnedCurve.empty(16, low=0.0, high=1.5))
    with pytest.raises(ValueError, match="different `num_labels`"):
        states()["exact"].merge(streaming.ExactCurve.empty(4 * SIZE, num_labels=2))
    with pytest.raises(ValueError, match="`num_labels` is for binary states"):
        streaming.ConfusionState.empty(num_classes=3, num_labels=2)
    with pytest.raises(ValueError, match="`num_labels` must be an int >= 1"):
        streaming.ExactCurve.empty(8, num_labels=0)


def test_a_collection_of_multilabel_states_shares_one_sort(rng):
    parts = batches(rng, 2)
    collection = streaming.Collection({**states(), "loss": streaming.Mean.empty()})
    step = jax.jit(
        lambda c, s, y, w: c.update(s, y, sample_weight=w).update_mean("loss", (s - y) ** 2)
    )
    for s, y, w in parts:
        collection = step(collection, s, y, w)
    result = collection.compute()
    scores, labels, _ = concatenated(parts)
    for name, state in states().items():
        for key, value in compute(stream(state, parts)).items():
            np.testing.assert_allclose(result[name][key], value, rtol=1e-6)
    assert float(result["loss"]["mean"]) == pytest.approx(float(((scores - labels) ** 2).mean()))
    mixed = streaming.Collection({"one": streaming.BinnedCurve.empty(16), **states()})
    with pytest.raises(ValueError, match="must share `num_labels`"):
        mixed.update(*parts[0][:2])
    assert jnp.shape(result["binned"]["roc_auc"]) == (NUM_LABELS,)


# ----------------------------------------------------------------------------- precision
# Multilabel states compare a score and a threshold as single-label ones do: in the scores'
# precision (float64 for float64 scores called eagerly or with x64 on), the same eagerly and
# under jit. The oracle is numpy comparing each label's row in float64.

# float64 decimals with ties in and across rows; float32 moves some of them down (0.35, 0.7)
# and some up (0.1, 0.3) but keeps every order and tie, so jit without x64 counts the same
PRECISION_SCORES = np.array(
    [
        [0.1, 0.4, 0.35, 0.8, 0.6, 0.3, 0.7, 0.35],
        [0.7, 0.3, 0.3, 0.1, 0.35, 0.9, 0.6, 0.4],
        [0.35, 0.35, 0.7, 0.7, 0.1, 0.2, 0.8, 0.3],
    ]
)
PRECISION_LABELS = np.array(
    [[0, 0, 1, 1, 0, 1, 1, 0], [1, 0, 1, 0, 1, 1, 0, 0], [0, 1, 1, 0, 0, 1, 1, 0]]
)


@pytest.fixture(params=["x64_off", "x64_on"])
def mode(request):
    if request.param == "x64_on":
        request.getfixturevalue("x64")
    return request.param


def float64_counts(scores, labels, thresholds):
    """[tp, fp, fn, tn], each [L, T]: numpy's ``scores >= threshold`` in float64, row by row."""
    flagged = scores[:, None, :] >= np.asarray(thresholds, np.float64)[:, None]
    positive = (labels == 1)[:, None, :]
    return [
        (flagged & positive).sum(-1),
        (flagged & ~positive).sum(-1),
        (~flagged & positive).sum(-1),
        (~flagged & ~positive).sum(-1),
    ]


def test_multilabel_states_compare_float64_scores_with_the_thresholds_as_given(mode):
    scores, labels = PRECISION_SCORES, PRECISION_LABELS
    thresholds = np.unique(scores)
    expected = float64_counts(scores, labels, thresholds)
    # this data keeps its order and ties in float32 (scores and thresholds), so jit agrees
    as_float32 = float64_counts(
        scores.astype(np.float32).astype(np.float64), labels, thresholds.astype(np.float32)
    )
    for got, want in zip(as_float32, expected):
        np.testing.assert_array_equal(got, want)
    for counts in (
        jm.confusion_counts(scores, labels, thresholds),
        jax.jit(lambda s, y: jm.confusion_counts(s, y, thresholds))(scores, labels),
    ):
        for got, want in zip(counts, expected):
            np.testing.assert_array_equal(got, want)
    members = {
        "binned": streaming.BinnedCurve.empty(thresholds=thresholds, num_labels=NUM_LABELS),
        "binary": streaming.ConfusionState.empty(thresholds=thresholds, num_labels=NUM_LABELS),
    }
    step = jax.jit(lambda state, s, y: state.update(s, y))
    collection = streaming.Collection(members)
    for state in (
        *(member.update(scores, labels) for member in members.values()),
        *(step(member, scores, labels) for member in members.values()),
        *collection.update(scores, labels).states.values(),
        *step(collection, scores, labels).states.values(),
    ):
        if isinstance(state, streaming.BinnedCurve):
            np.testing.assert_array_equal(state.tp, expected[0])
            np.testing.assert_array_equal(state.fp, expected[1])
            auc = [skm.roc_auc_score(y, s) for s, y in zip(scores, labels)]
            np.testing.assert_allclose(state.compute()["roc_auc"], auc, rtol=1e-6)
        else:
            for got, want in zip(state.counts, expected):
                np.testing.assert_array_equal(got, want)


def test_a_multilabel_exact_curve_stores_eager_float64_scores_exactly(rng):
    # 0.5 + z * 1e-9: distinct in float64, one value in float32
    labels = (rng.random((NUM_LABELS, SIZE)) < 0.4).astype(np.int32)
    labels[:, :2] = [0, 1]
    scores = 0.5 + (rng.normal(size=(NUM_LABELS, SIZE)) + labels) * 1e-9
    assert np.unique(scores.astype(np.float32)).size == 1
    state = states()["exact"].update(scores[:, :30], labels[:, :30])
    result = state.update(scores[:, 30:], labels[:, 30:]).compute()
    expected = [skm.roc_auc_score(y, s) for s, y in zip(scores, labels)]
    assert min(expected) > 0.6  # far from the 0.5 of the float32 values
    np.testing.assert_allclose(result["roc_auc"], expected, atol=1e-6)
    np.testing.assert_allclose(result["roc_auc"], jm.roc_auc(scores, labels), atol=1e-6)
    np.testing.assert_allclose(
        result["average_precision"],
        [skm.average_precision_score(y, s) for s, y in zip(scores, labels)],
        atol=1e-6,
    )
