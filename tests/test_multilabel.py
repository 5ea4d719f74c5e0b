"""Multilabel averages of roc_auc / average_precision and multiclass_average_precision, against
scikit-learn (ties and weights included) on the ``[L, n]`` layout (scikit-learn's transposed)."""

from __future__ import annotations

import functools
import logging

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm
from sklearn.exceptions import UndefinedMetricWarning
from sklearn.preprocessing import label_binarize

import jaxmetrics as jm

AVERAGES = ["macro", "weighted", "micro", "samples"]
OURS = {"roc_auc": jm.roc_auc, "average_precision": jm.average_precision}
THEIRS = {"roc_auc": skm.roc_auc_score, "average_precision": skm.average_precision_score}


def multilabel_problem(seed: int, n: int = 24, num_labels: int = 4):
    """[L, n] scores with ties and labels where every label and every sample has both classes."""
    rng = np.random.default_rng(seed)
    labels = (rng.random((num_labels, n)) < 0.4).astype(np.int32)
    labels[:, :2] = [0, 1]
    labels[0, 2:], labels[1, 2:] = 1, 0  # every sample: a positive (label 0), a negative (1)
    labels[0, :2] = [0, 1]
    labels[1, :2] = [1, 0]
    scores = np.round(rng.random((num_labels, n)), 1)  # ties within and across labels
    weights = rng.integers(1, 4, n).astype(np.float32)
    return scores, labels, weights


@pytest.mark.parametrize("name", sorted(OURS))
@pytest.mark.parametrize("average", AVERAGES)
@pytest.mark.parametrize("weighted", [False, True])
def test_multilabel_averages_equal_sklearn(name, average, weighted):
    scores, labels, weights = multilabel_problem(1)
    w = weights if weighted else None
    ours = OURS[name](scores, labels, sample_weight=w, average=average)
    theirs = THEIRS[name](labels.T, scores.T, sample_weight=w, average=average)
    assert float(ours) == pytest.approx(theirs, rel=1e-5, abs=1e-6)


@pytest.mark.parametrize("name", sorted(OURS))
def test_average_none_is_the_batched_result(name):
    scores, labels, weights = multilabel_problem(2)
    ours = OURS[name](scores, labels, sample_weight=weights)
    theirs = THEIRS[name](labels.T, scores.T, sample_weight=weights, average=None)
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-5)


def test_undefined_label_is_nan_and_weighted_leaves_it_out():
    scores, labels, _ = multilabel_problem(3)
    labels[2] = 0  # label 2 has no positive
    per_label = np.asarray(jm.roc_auc(scores, labels))
    assert np.isnan(per_label[2]) and np.isfinite(per_label[[0, 1, 3]]).all()
    assert np.isnan(float(jm.roc_auc(scores, labels, average="macro")))
    # "weighted": a label without positives has weight 0 and takes no part (scikit-learn too)
    weighted = float(jm.roc_auc(scores, labels, average="weighted"))
    with pytest.warns(UndefinedMetricWarning):
        expected = skm.roc_auc_score(labels.T, scores.T, average="weighted")
    assert weighted == pytest.approx(expected)
    # the documented nan-aware macro average of the defined labels
    defined = float(jnp.nanmean(jm.roc_auc(scores, labels), -1))
    assert defined == pytest.approx(np.mean(per_label[[0, 1, 3]]))
    # no positive anywhere: the weighted average has nothing to weigh
    assert np.isnan(float(jm.roc_auc(scores, np.zeros_like(labels), average="weighted")))


def test_samples_average_leaves_zero_weight_samples_out_and_checks_weight_shape():
    scores, labels, weights = multilabel_problem(4)
    labels[:, 5] = 0  # sample 5 has no positive label: its per-sample AUC is undefined
    assert np.isnan(float(jm.roc_auc(scores, labels, average="samples")))
    weights[5] = 0
    kept = np.arange(scores.shape[1]) != 5
    expected = skm.roc_auc_score(
        labels.T[kept], scores.T[kept], sample_weight=weights[kept], average="samples"
    )
    ours = jm.roc_auc(scores, labels, sample_weight=weights, average="samples")
    assert float(ours) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="one weight per sample"):
        jm.roc_auc(scores, labels, sample_weight=np.ones(scores.shape), average="samples")


def test_average_needs_a_label_axis_and_a_known_name():
    with pytest.raises(ValueError, match="label axis"):
        jm.roc_auc([0.1, 0.9], [0, 1], average="macro")
    with pytest.raises(ValueError, match="`average` must be one of"):
        jm.average_precision([[0.1, 0.9]], [[0, 1]], average="binary")


def test_multilabel_under_jit_vmap_and_batch_axes():
    scores, labels, weights = multilabel_problem(5)
    expected = [
        float(jm.roc_auc(scores, labels, sample_weight=weights, average=a)) for a in AVERAGES
    ]
    for i, average in enumerate(AVERAGES):
        fn = jax.jit(functools.partial(jm.roc_auc, average=average))
        assert float(fn(scores, labels, sample_weight=weights)) == pytest.approx(
            expected[i], rel=1e-5
        )
    stacked = np.stack([scores, scores[:, ::-1]])  # batch axis in front of the labels
    batched = jm.average_precision(stacked, labels, average="micro")
    one = [float(jm.average_precision(s, labels, average="micro")) for s in stacked]
    np.testing.assert_allclose(np.asarray(batched), one, rtol=1e-6)
    mapped = jax.vmap(functools.partial(jm.average_precision, average="macro"), (0, None))
    np.testing.assert_allclose(
        np.asarray(mapped(stacked, labels)),
        [float(jm.average_precision(s, labels, average="macro")) for s in stacked],
        rtol=1e-6,
    )


def test_bad_input_under_jit_is_nan_for_every_average():
    scores, labels, weights = multilabel_problem(6)
    scores = scores.copy()
    scores[1, 3] = np.nan
    for average in AVERAGES:
        with pytest.raises(ValueError, match="`scores` must be finite"):
            jm.roc_auc(scores, labels, average=average)
        fn = jax.jit(functools.partial(jm.average_precision, average=average))
        assert np.isnan(float(fn(scores, labels))), average
    bad_weights = weights.copy()
    bad_weights[4] = -1.0
    for average in AVERAGES:
        fn = jax.jit(functools.partial(jm.roc_auc, average=average))
        assert np.isnan(float(fn(np.nan_to_num(scores), labels, sample_weight=bad_weights)))


def test_weighted_average_under_jit_sees_a_bad_label_row_without_positives():
    """A label row whose only non-zero label is bad (2) has no positives, so "weighted" leaves it
    out: its mark must not go with it (issue 25: 0.75 for NaN)."""
    scores = np.array([[0.1, 0.4, 0.35, 0.8], [0.3, 0.2, 0.9, 0.5], [0.5, 0.6, 0.1, 0.2]])
    labels = np.array([[0, 1, 1, 0], [1, 0, 1, 0], [0, 0, 2, 0]])
    fn = jax.jit(functools.partial(jm.roc_auc, average="weighted"))
    assert np.isnan(float(fn(scores, labels)))
    nan_score = scores.copy()
    nan_score[2, 0] = np.nan
    assert np.isnan(float(fn(nan_score, np.minimum(labels, 1))))
    good = np.minimum(labels, 1)
    good[2, 2] = 0  # the last row has no positives: left out, the others weighted by support
    expected = skm.roc_auc_score(good[:2].T, scores[:2].T, average="weighted")
    assert float(fn(scores, good)) == pytest.approx(expected, abs=1e-6)
    negative = np.ones(4)
    negative[1] = -1.0
    assert np.isnan(float(fn(scores, good, sample_weight=negative)))


def test_micro_average_of_float64_scores_is_exact():
    scores, labels, _ = multilabel_problem(7)
    close = 0.5 + scores * 1e-9  # float32 would tie them all
    ours = float(jm.roc_auc(close, labels, average="micro"))
    assert ours == pytest.approx(skm.roc_auc_score(labels.T, close.T, average="micro"))


# ----------------------------------------------------------------------------- multiclass AP


def multiclass_problem(seed: int, n: int = 30, num_classes: int = 4):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, num_classes, n)
    labels[:num_classes] = np.arange(num_classes)
    probs = np.round(rng.random((n, num_classes)), 1)
    weights = rng.integers(1, 4, n).astype(np.float32)
    return probs, labels, weights


@pytest.mark.parametrize("average", [None, "macro", "weighted", "micro"])
@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_average_precision_equals_sklearn_on_binarized_labels(average, weighted):
    probs, labels, weights = multiclass_problem(8)
    w = weights if weighted else None
    ours = jm.multiclass_average_precision(probs, labels, average=average, sample_weight=w)
    onehot = label_binarize(labels, classes=range(probs.shape[1]))
    theirs = skm.average_precision_score(onehot, probs, average=average, sample_weight=w)
    np.testing.assert_allclose(np.asarray(ours), theirs, rtol=1e-5)


def test_multiclass_average_precision_batches_and_marks_bad_input():
    probs, labels, _ = multiclass_problem(9)
    stacked = np.stack([probs, probs[::-1]])
    batched = jm.multiclass_average_precision(stacked, np.stack([labels, labels[::-1]]))
    assert float(batched[0]) == pytest.approx(float(batched[1]))  # a permutation of the rows
    with pytest.raises(ValueError, match="class indices"):
        jm.multiclass_average_precision(probs, np.where(labels == 0, 7, labels))
    traced = jax.jit(jm.multiclass_average_precision)(probs, np.where(labels == 0, 7, labels))
    assert np.isnan(float(traced))


def test_multiclass_metrics_rank_float64_scores_exactly():
    probs, labels, _ = multiclass_problem(10)
    close = 0.5 + probs * 1e-9
    ours = np.asarray(jm.multiclass_average_precision(close, labels, average=None))
    onehot = label_binarize(labels, classes=range(probs.shape[1]))
    np.testing.assert_allclose(ours, skm.average_precision_score(onehot, close, average=None))
    auc = float(jm.multiclass_roc_auc(close, labels))
    expected = np.mean([skm.roc_auc_score(onehot[:, c], close[:, c]) for c in range(4)])
    assert auc == pytest.approx(expected)
    distinct = 0.5 + np.random.default_rng(11).random(probs.shape) * 1e-9  # no tied classes
    assert float(jm.top_k_accuracy(distinct, labels, k=1)) == pytest.approx(
        skm.top_k_accuracy_score(labels, distinct, k=1)
    )


# ----------------------------------------------------------------------------- bootstrap


def test_bootstrap_of_a_multilabel_macro_auc_resamples_samples_across_all_labels():
    rng = np.random.default_rng(12)
    labels = (rng.random((3, 40)) < 0.5).astype(np.int32)  # both classes in every resample
    scores = np.round(rng.random((3, 40)) + 0.3 * labels, 1)
    key = jax.random.key(3)
    macro = functools.partial(jm.roc_auc, average="macro")
    result = jm.bootstrap(macro, scores, labels, key=key, num_resamples=40)
    assert float(result.estimate) == pytest.approx(
        skm.roc_auc_score(labels.T, scores.T, average="macro")
    )
    # each resample: scikit-learn's macro AUC of the rows drawn (one weight per sample, shared
    # by every label)
    weights = np.asarray(jm.resample_weights(key, jnp.arange(5), scores.shape[1]))
    assert not np.isnan(np.asarray(result.samples)).any()
    for b in range(5):
        drawn = np.repeat(np.arange(scores.shape[1]), weights[b])
        expected = skm.roc_auc_score(labels.T[drawn], scores.T[drawn], average="macro")
        assert float(result.samples[b]) == pytest.approx(expected, rel=1e-5)
    assert float(result.low) <= float(result.estimate) <= float(result.high)


def test_bootstrap_over_rows_of_class_probabilities():
    probs, labels, _ = multiclass_problem(13)
    key = jax.random.key(4)
    result = jm.bootstrap(
        jm.multiclass_average_precision, probs, labels, key=key, num_resamples=20, sample_axis=-2
    )
    weights = np.asarray(jm.resample_weights(key, jnp.arange(3), probs.shape[0]))
    onehot = label_binarize(labels, classes=range(probs.shape[1]))
    for b in range(3):
        drawn = np.repeat(np.arange(probs.shape[0]), weights[b])
        expected = skm.average_precision_score(onehot[drawn], probs[drawn])
        assert float(result.samples[b]) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="`sample_axis` must be an axis"):
        jm.bootstrap(jm.multiclass_average_precision, probs, labels, key=key, sample_axis=2)
    with pytest.raises(TypeError, match="`sample_axis` must be an int"):
        jm.bootstrap(jm.multiclass_average_precision, probs, labels, key=key, sample_axis=1.0)


@pytest.mark.parametrize("average", ["weighted", "samples"])
def test_an_eager_weighted_or_samples_average_compiles_the_metric_and_one_program(caplog, average):
    # the average around the metric ran operation by operation (5-6 programs for a first call on
    # new shapes)
    rng = np.random.default_rng(11)
    scores = rng.random((4, 9)).astype(np.float32)  # [L, n]
    labels = (rng.random((4, 9)) < 0.5).astype(np.int32)
    for j in range(9):  # every label (row) and every sample (column) of both classes
        labels[j % 4, j], labels[(j + 1) % 4, j] = 1, 0
    weights = rng.uniform(0.5, 2.0, 9).astype(np.float32)
    jm.average_precision(scores[:, :5], labels[:, :5], sample_weight=weights[:5], average=average)
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        value = jm.average_precision(scores, labels, sample_weight=weights, average=average)
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert 1 <= len(messages) <= 2, messages
    expected = skm.average_precision_score(
        labels.T, scores.T, sample_weight=weights, average=average
    )
    np.testing.assert_allclose(value, expected, rtol=1e-5)
