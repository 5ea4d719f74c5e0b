import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm


def animals():
    """Cats, dogs and foxes, 42/7/11 true: a rare class (dogs) found 3 times in 7."""
    true = [0] * 42 + [1] * 7 + [2] * 11
    predicted = [0] * 39 + [1] * 1 + [2] * 2 + [0] * 4 + [1] * 3 + [0] * 5 + [1] * 1 + [2] * 5
    return np.array(predicted), np.array(true)


def test_cats_dogs_foxes_macro_micro_and_weighted_averages():
    predicted, true = animals()
    counts = jm.one_vs_rest(jm.confusion_matrix(predicted, true, num_classes=3))
    assert float(jm.precision(counts, average="micro")) == pytest.approx(47 / 60)
    assert float(jm.recall(counts, average="micro")) == pytest.approx(47 / 60)
    assert round(float(jm.precision(counts, average="macro")), 2) == 0.71
    assert round(float(jm.recall(counts, average="macro")), 2) == 0.60
    report = jm.classification_report(predicted, true, num_classes=3)
    assert round(float(report.macro["f1"]), 2) == 0.64
    assert round(float(report.weighted["precision"]), 2) == 0.77
    np.testing.assert_array_equal(report.support, [42, 7, 11])


def test_rare_tumour_class_macro_versus_micro():
    true = np.array([0] * 990 + [1] * 10)
    predicted = np.array([0] * 985 + [1] * 5 + [0] * 4 + [1] * 6)
    counts = jm.one_vs_rest(jm.confusion_matrix(predicted, true, num_classes=2))
    assert round(float(jm.precision(counts, average="macro")), 2) == 0.77
    assert round(float(jm.recall(counts, average="macro")), 2) == 0.80
    assert round(float(jm.precision(counts, average="micro")), 2) == 0.99


@pytest.mark.parametrize("weighted", [False, True])
def test_confusion_matrix_and_averages_match_sklearn(rng, weighted):
    true = rng.integers(0, 4, 300)
    predicted = np.where(rng.random(300) < 0.6, true, rng.integers(0, 4, 300))
    predicted[predicted == 3] = 2  # class 3 is never predicted: its precision is undefined
    weights = rng.random(300).astype(np.float32) if weighted else None
    matrix = jm.confusion_matrix(predicted, true, num_classes=4, sample_weight=weights)
    expected = skm.confusion_matrix(true, predicted, labels=range(4), sample_weight=weights)
    np.testing.assert_allclose(matrix, expected, rtol=1e-5)
    counts = jm.one_vs_rest(matrix)
    for average in ("micro", "weighted", None):
        for ours, theirs in ((jm.recall, skm.recall_score), (jm.f_beta, skm.f1_score)):
            expected = theirs(
                true, predicted, average=average, sample_weight=weights, zero_division=0.0
            )
            got = ours(counts, average=average, zero_division=0.0)
            np.testing.assert_allclose(got, expected, rtol=2e-5)
    # macro with an undefined class: NaN by default, sklearn's value with zero_division=0
    assert math.isnan(float(jm.precision(counts, average="macro")))
    expected = skm.precision_score(
        true, predicted, average="macro", sample_weight=weights, zero_division=0.0
    )
    assert float(jm.precision(counts, average="macro", zero_division=0.0)) == pytest.approx(
        expected, rel=2e-5
    )


def test_absent_class_keeps_its_row_and_column():
    matrix = jm.confusion_matrix([0, 1, 0], [0, 1, 1], num_classes=3)
    assert matrix.shape == (3, 3) and int(matrix[2].sum()) == 0 and int(matrix[:, 2].sum()) == 0


def test_batched_matrices_and_jit(rng):
    true = rng.integers(0, 3, (2, 40))
    predicted = rng.integers(0, 3, (2, 40))
    batched = jax.jit(lambda p, t: jm.confusion_matrix(p, t, num_classes=3))(predicted, true)
    for b in range(2):
        np.testing.assert_array_equal(
            batched[b], skm.confusion_matrix(true[b], predicted[b], labels=range(3))
        )


def test_class_index_errors():
    with pytest.raises(
        ValueError, match=r"`labels` must be class indices in \[0, 3\).*found 3 at index 2"
    ):
        jm.confusion_matrix([0, 1, 2], [0, 1, 3], num_classes=3)
    with pytest.raises(TypeError, match="`predictions` must hold integer class indices"):
        jm.confusion_matrix([0.0, 1.0], [0, 1], num_classes=2)
    with pytest.raises(TypeError, match="`num_classes` must be an int >= 2"):
        jm.confusion_matrix([0, 1], [0, 1], num_classes=None)
    with pytest.raises(ValueError, match="`num_classes` must be an int >= 2"):
        jm.confusion_matrix([0, 1], [0, 1], num_classes=1)
    assert jm.confusion_matrix([0, 1], [0, 1], num_classes=np.int64(2)).shape == (2, 2)
    matrix = jax.jit(lambda p, t: jm.confusion_matrix(p, t, num_classes=2))(
        jnp.array([0, 1]), jnp.array([0, 5])
    )
    assert math.isnan(float(jm.precision(jm.one_vs_rest(matrix), average="macro")))


@pytest.mark.parametrize("weighting", [None, "linear", "quadratic"])
def test_cohen_kappa_and_mcc_match_sklearn(rng, weighting):
    true = rng.integers(0, 4, 200)
    predicted = np.where(rng.random(200) < 0.5, true, rng.integers(0, 4, 200))
    matrix = jm.confusion_matrix(predicted, true, num_classes=4)
    expected = skm.cohen_kappa_score(true, predicted, weights=weighting)
    assert float(jm.cohen_kappa(matrix, weighting=weighting)) == pytest.approx(expected, rel=1e-5)
    assert float(jm.matthews_corrcoef(matrix)) == pytest.approx(
        skm.matthews_corrcoef(true, predicted), rel=1e-5
    )


@pytest.mark.parametrize("k", [1, 2, 3])
def test_top_k_accuracy_matches_sklearn(rng, k):
    probs = rng.random((100, 5)).astype(np.float32)
    labels = rng.integers(0, 5, 100)
    weights = rng.random(100)
    expected = skm.top_k_accuracy_score(labels, probs, k=k, labels=range(5), sample_weight=weights)
    assert float(jm.top_k_accuracy(probs, labels, k=k, sample_weight=weights)) == pytest.approx(
        expected, rel=1e-5
    )


def test_top_k_tie_rule():
    probs = np.array([[0.4, 0.4, 0.2]], np.float32)  # the true class 1 ties with class 0
    assert float(jm.top_k_accuracy(probs, [1], k=1)) == 0.5
    assert float(jm.top_k_accuracy(probs, [1], k=2)) == 1.0


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
@pytest.mark.parametrize("average", ["macro", "weighted"])
def test_multiclass_roc_auc_matches_sklearn(rng, multi_class, average):
    labels = rng.integers(0, 4, 120)
    logits = rng.normal(size=(120, 4)) + 1.5 * np.eye(4)[labels]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs = np.round(probs, 2)  # ties
    probs = (probs / probs.sum(1, keepdims=True)).astype(np.float32)
    expected = skm.roc_auc_score(labels, probs, multi_class=multi_class, average=average)
    got = jm.multiclass_roc_auc(probs, labels, average=average, multi_class=multi_class)
    assert float(got) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("weighted", [False, True])
def test_multiclass_roc_auc_micro_ovr_matches_sklearn(rng, weighted):
    """scikit-learn pools every (sample, class) pair with multi_class="ovr", average="micro"."""
    labels = rng.integers(0, 4, 120)
    probs = np.round(rng.dirichlet(np.ones(4), 120) + 0.3 * np.eye(4)[labels], 2)  # ties
    probs = (probs / probs.sum(1, keepdims=True)).astype(np.float32)
    weights = rng.uniform(0, 3, 120).astype(np.float32) if weighted else None
    expected = skm.roc_auc_score(
        labels, probs, multi_class="ovr", average="micro", sample_weight=weights
    )
    got = jm.multiclass_roc_auc(probs, labels, average="micro", sample_weight=weights)
    assert float(got) == pytest.approx(expected, abs=1e-6)
    jitted = jax.jit(lambda p: jm.multiclass_roc_auc(p, labels, average="micro"))
    assert float(jitted(probs)) == pytest.approx(
        skm.roc_auc_score(labels, probs, multi_class="ovr", average="micro"), abs=1e-6
    )
    bad = jax.jit(lambda y: jm.multiclass_roc_auc(probs, y, average="micro"))
    assert np.isnan(float(bad(np.where(labels == 0, 9, labels))))


@pytest.mark.parametrize("average", ["macro", "weighted", None])
def test_weighted_multiclass_roc_auc_matches_sklearn(rng, average):
    labels = rng.integers(0, 4, 120)
    logits = rng.normal(size=(120, 4)) + 1.5 * np.eye(4)[labels]
    probs = np.exp(logits) / np.exp(logits).sum(1, keepdims=True)
    probs = np.round(probs, 2)  # ties
    probs = (probs / probs.sum(1, keepdims=True)).astype(np.float32)
    weights = rng.uniform(0, 3, 120).astype(np.float32)
    weights[:10] = 0  # zero weights drop samples
    expected = skm.roc_auc_score(
        labels, probs, multi_class="ovr", average=average, sample_weight=weights
    )
    got = jm.multiclass_roc_auc(probs, labels, average=average, sample_weight=weights)
    np.testing.assert_allclose(got, expected, atol=1e-6)
    jitted = jax.jit(
        lambda w: jm.multiclass_roc_auc(probs, labels, average=average, sample_weight=w)
    )
    np.testing.assert_allclose(jitted(weights), got, atol=1e-6)
    unit = jm.multiclass_roc_auc(probs, labels, average=average, sample_weight=np.ones(120))
    np.testing.assert_allclose(unit, jm.multiclass_roc_auc(probs, labels, average=average))


def test_multiclass_roc_auc_weights_need_ovr():
    probs = np.array([[0.6, 0.3, 0.1], [0.2, 0.5, 0.3], [0.1, 0.2, 0.7]], np.float32)
    with pytest.raises(ValueError, match="`sample_weight` must be None with multi_class='ovo'"):
        jm.multiclass_roc_auc(probs, [0, 1, 2], multi_class="ovo", sample_weight=[1.0, 2.0, 1.0])
    with pytest.raises(ValueError, match="`sample_weight` must be non-negative"):
        jm.multiclass_roc_auc(probs, [0, 1, 2], sample_weight=[1.0, -2.0, 1.0])
    bad = jax.jit(lambda w: jm.multiclass_roc_auc(probs, jnp.array([0, 1, 2]), sample_weight=w))
    assert math.isnan(float(bad(jnp.array([1.0, -2.0, 1.0]))))


def test_marked_matrices_give_nan_downstream():
    predictions = jnp.array([[0, 1, 2, 1], [0, 1, 2, 1]])
    labels = jnp.array([[0, 1, 2, 2], [0, 1, 5, 2]])  # row 1 holds class 5 of 3
    matrix = jax.jit(lambda p, t: jm.confusion_matrix(p, t, num_classes=3))(predictions, labels)
    assert (np.asarray(matrix[1]) == -1).all()
    good = skm.confusion_matrix(labels[0], predictions[0], labels=range(3))
    np.testing.assert_array_equal(matrix[0], good)
    kappa = jm.cohen_kappa(matrix)
    assert float(kappa[0]) == pytest.approx(skm.cohen_kappa_score(labels[0], predictions[0]))
    assert math.isnan(float(kappa[1]))
    counts = jm.one_vs_rest(matrix)
    assert all((np.asarray(c[1]) == -1).all() for c in counts)
    report = jax.jit(lambda p, t: jm.classification_report(p, t, num_classes=3, zero_division=0.0))(
        predictions, labels
    )
    assert math.isnan(float(report.accuracy[1])) and float(report.accuracy[0]) == 0.75
    assert (np.asarray(report.support[1]) == -1).all()
    for values in (report.precision, report.recall, report.f1):
        assert np.isnan(values[1]).all() and not np.isnan(values[0]).any()
    for average in (report.macro, report.weighted, report.micro):
        assert all(math.isnan(float(v[1])) for v in average.values())
    assert math.isnan(float(jm.matthews_corrcoef(matrix)[1]))


def test_ece_of_nan_probabilities_under_jit_and_kappa_of_huge_weights():
    true = np.array([0, 1, 2, 2, 1, 0])
    predicted = np.array([0, 2, 2, 1, 1, 0])
    weights = np.full(6, 1e20)
    matrix = jm.confusion_matrix(predicted, true, num_classes=3, sample_weight=weights)
    assert np.isfinite(np.asarray(matrix)).all()
    assert float(jm.cohen_kappa(matrix)) == pytest.approx(
        skm.cohen_kappa_score(true, predicted), rel=1e-5
    )
    report = jm.classification_report(predicted, true, num_classes=3, sample_weight=weights)
    assert float(report.accuracy) == pytest.approx(4 / 6)


def test_integer_weights_never_overflow_into_the_marker():
    big = np.array([2**32 - 1, 2**32 - 2], np.uint32)
    with pytest.raises(ValueError, match=r"`sample_weight` must sum to at most.*int32"):
        jm.confusion_matrix(np.array([0, 1]), np.array([0, 1]), num_classes=2, sample_weight=big)
    fits = np.array([2**30, 2**29 + 3], np.uint32)
    matrix = jm.confusion_matrix(
        np.array([0, 1]), np.array([0, 1]), num_classes=2, sample_weight=fits
    )
    np.testing.assert_array_equal(matrix, [[2**30, 0], [0, 2**29 + 3]])
    assert matrix.dtype == np.int32
    # under jit the total is not known in advance: the batch element is marked instead
    jitted = jax.jit(
        lambda w: jm.confusion_matrix(
            jnp.array([0, 1]), jnp.array([0, 1]), num_classes=2, sample_weight=w
        )
    )
    assert (np.asarray(jitted(big)) == -1).all()
    np.testing.assert_array_equal(jitted(fits), matrix)
    # float weights count in float, and the rates follow
    floats = np.array([0.5, 1e20])
    np.testing.assert_allclose(
        jm.confusion_matrix(
            np.array([0, 1]), np.array([0, 1]), num_classes=2, sample_weight=floats
        ),
        [[0.5, 0], [0, 1e20]],
    )


def test_top_k_accuracy_checks_k_and_weights():
    probs = np.array([[0.5, 0.3, 0.2], [0.1, 0.6, 0.3], [0.2, 0.2, 0.6]], np.float32)
    labels = np.array([0, 2, 2])
    with pytest.raises(TypeError, match="`k` must be an int"):
        jm.top_k_accuracy(probs, labels, k=True)
    with pytest.raises(ValueError, match="`k` must be an int >= 1"):
        jm.top_k_accuracy(probs, labels, k=0)
    assert float(jm.top_k_accuracy(probs, labels, k=np.int64(2))) == pytest.approx(
        skm.top_k_accuracy_score(labels, probs, k=2, labels=range(3))
    )
    with pytest.raises(
        ValueError, match=r"`sample_weight` must be non-negative; found -1.0 at index 1"
    ):
        jm.top_k_accuracy(probs, labels, k=1, sample_weight=[1.0, -1.0, 1.0])
    with pytest.raises(ValueError, match=r"`sample_weight` must be finite; found NaN at index 2"):
        jm.top_k_accuracy(probs, labels, k=1, sample_weight=[1.0, 1.0, np.nan])
    with pytest.raises(ValueError, match=r"`probs` must be finite; found nan at index \(1, 2\)"):
        jm.top_k_accuracy(_with_nan(probs), labels, k=1)
    with pytest.raises(ValueError, match="`sample_weight` must have the same number of samples"):
        jm.top_k_accuracy(probs, labels, k=1, sample_weight=[1.0, 1.0])
    weights = jnp.array([[1.0, 1.0, 1.0], [1.0, -1.0, 1.0]])
    got = jax.jit(lambda w: jm.top_k_accuracy(probs, labels, k=1, sample_weight=w))(weights)
    assert float(got[0]) == pytest.approx(2 / 3) and math.isnan(float(got[1]))


def _with_nan(probs):
    probs = probs.copy()
    probs[1, 2] = np.nan
    return probs


@pytest.mark.parametrize("multi_class", ["ovr", "ovo"])
def test_multiclass_roc_auc_is_batched(rng, multi_class):
    labels = rng.integers(0, 3, (2, 60))
    probs = rng.dirichlet(np.ones(3), (2, 60)).astype(np.float32)
    got = jm.multiclass_roc_auc(probs, labels, multi_class=multi_class)
    expected = [skm.roc_auc_score(labels[i], probs[i], multi_class=multi_class) for i in range(2)]
    np.testing.assert_allclose(got, expected, atol=1e-6)
    assert jm.multiclass_roc_auc(probs[:1], labels[:1], multi_class=multi_class).shape == (1,)
    bad = probs.copy()
    bad[1, 5, 0] = np.nan
    jitted = jax.jit(lambda p: jm.multiclass_roc_auc(p, labels, multi_class=multi_class))(bad)
    assert float(jitted[0]) == pytest.approx(expected[0], abs=1e-6) and math.isnan(float(jitted[1]))


def test_multiclass_functions_keep_batch_axes_of_one(rng):
    true = rng.integers(0, 3, (1, 30))
    predicted = rng.integers(0, 3, (1, 30))
    matrix = jm.confusion_matrix(predicted, true, num_classes=3)
    assert matrix.shape == (1, 3, 3)
    assert jm.cohen_kappa(matrix).shape == (1,)
    report = jm.classification_report(predicted, true, num_classes=3)
    assert report.accuracy.shape == (1,) and report.precision.shape == (1, 3)
    probs = rng.random((1, 30, 3))
    assert jm.top_k_accuracy(probs, true, k=2).shape == (1,)


def test_multiclass_functions_are_float64_under_x64(rng, x64):
    true = rng.integers(0, 3, (1, 30))
    predicted = rng.integers(0, 3, (1, 30))
    matrix = jm.confusion_matrix(predicted, true, num_classes=3)
    probs = rng.random((1, 30, 3))
    assert jm.cohen_kappa(matrix).dtype == np.float64
    assert jm.top_k_accuracy(probs, true, k=2).dtype == np.float64
    assert jm.multiclass_roc_auc(probs, true).dtype == np.float64
    weighted = jm.confusion_matrix(
        predicted, true, num_classes=3, sample_weight=rng.random((1, 30))
    )
    assert weighted.dtype == np.float64


def test_cohen_kappa_weighting_option():
    matrix = jm.confusion_matrix([0, 1, 1, 2, 2, 0], [0, 1, 2, 2, 2, 1], num_classes=3)
    with pytest.raises(
        ValueError, match=r"`weighting` must be one of \('linear', 'quadratic', None\); got 'cubic'"
    ):
        jm.cohen_kappa(matrix, weighting="cubic")
    with pytest.raises(
        TypeError, match="weights"
    ):  # renamed in 0.2: `weights` reads as sample weights
        jm.cohen_kappa(matrix, weights="linear")
    with pytest.raises(ValueError, match=r"`matrix` must be square"):
        jm.cohen_kappa(np.ones((2, 3)))
    # undefined: everything in one cell, and an empty matrix
    assert math.isnan(float(jm.cohen_kappa(np.array([[5, 0], [0, 0]]))))
    assert math.isnan(float(jm.cohen_kappa(np.zeros((3, 3)))))
    for weighting in (None, "linear", "quadratic"):
        jitted = jax.jit(lambda m, w=weighting: jm.cohen_kappa(m, weighting=w))(matrix)
        assert float(jitted) == pytest.approx(float(jm.cohen_kappa(matrix, weighting=weighting)))


def test_multiclass_roc_auc_options():
    probs = np.full((4, 3), 1 / 3, np.float32)
    labels = np.array([0, 1, 2, 0])
    with pytest.raises(ValueError, match=r"`multi_class` must be one of \('ovr', 'ovo'\)"):
        jm.multiclass_roc_auc(probs, labels, multi_class="ova")
    with pytest.raises(ValueError, match=r"`average` must be one of \('micro', 'macro'"):
        jm.multiclass_roc_auc(probs, labels, average="samples")
    with pytest.raises(ValueError, match="with multi_class='ovo'; got 'micro'"):
        jm.multiclass_roc_auc(probs, labels, average="micro", multi_class="ovo")
    with pytest.raises(
        ValueError, match="`average` must be 'macro' or 'weighted' with multi_class='ovo'"
    ):
        jm.multiclass_roc_auc(probs, labels, average=None, multi_class="ovo")
    # a class without samples: its AUC is NaN, and so is the macro average
    absent = jm.multiclass_roc_auc(probs, np.array([0, 1, 1, 0]), average=None)
    assert math.isnan(float(absent[2])) and not np.isnan(absent[:2]).any()


def test_top_k_accuracy_refuses_bool_and_float_k():
    probs = np.array([[0.5, 0.3, 0.2]], np.float32)
    for k in (True, False, np.bool_(True), 1.0):
        with pytest.raises(TypeError, match="`k` must be an int >= 1"):
            jm.top_k_accuracy(probs, [0], k=k)


@pytest.mark.parametrize("weighted", [False, True])
def test_classification_report_matches_sklearn(rng, weighted):
    true = rng.integers(0, 3, 120)
    predicted = np.where(rng.random(120) < 0.6, true, rng.integers(0, 3, 120))
    weights = rng.random(120).astype(np.float32) if weighted else None
    report = jm.classification_report(predicted, true, num_classes=3, sample_weight=weights)
    expected = skm.classification_report(
        true, predicted, labels=range(3), sample_weight=weights, output_dict=True
    )
    for c in range(3):
        for ours, theirs in (
            ("precision", "precision"),
            ("recall", "recall"),
            ("f1", "f1-score"),
            ("support", "support"),
        ):
            assert float(getattr(report, ours)[c]) == pytest.approx(
                expected[str(c)][theirs], rel=1e-5
            )
    for ours, theirs in ((report.macro, "macro avg"), (report.weighted, "weighted avg")):
        for name, key in (("precision", "precision"), ("recall", "recall"), ("f1", "f1-score")):
            assert float(ours[name]) == pytest.approx(expected[theirs][key], rel=1e-5)
    assert float(report.accuracy) == pytest.approx(expected["accuracy"], rel=1e-5)
    for name in ("precision", "recall", "f1"):  # single-label data: micro is the accuracy
        assert float(report.micro[name]) == pytest.approx(expected["accuracy"], rel=1e-5)


def _binary_counts(matrix):
    m = np.asarray(matrix, np.int32)
    return jm.Counts(m[..., 0, 0], m[..., 0, 1], m[..., 1, 0], m[..., 1, 1])


# name: (the argument made from a [*batch, 2, 2] matrix, the call, its program's name)
MATRIX_CALLS = {
    "matthews_corrcoef[matrix]": (np.asarray, jm.matthews_corrcoef, "_mcc_of_matrix"),
    "one_vs_rest": (np.asarray, jm.one_vs_rest, "_one_vs_rest"),
    "matthews_corrcoef[counts]": (_binary_counts, jm.matthews_corrcoef, "_mcc_of_counts"),
    "cohen_kappa": (np.asarray, lambda m: jm.cohen_kappa(m, weighting="linear"), "_kappa"),
}


@pytest.mark.parametrize("name", sorted(MATRIX_CALLS))
def test_an_eager_call_of_a_matrix_compiles_one_program(caplog, name):
    # each operation was a program of its own (9-17 to compile per new shape)
    make, call, program = MATRIX_CALLS[name]
    call(make(np.array([[[5, 1], [2, 7]]] * 3)))  # other shapes first: what a process compiles once

    def compiled(matrix) -> list[str]:
        argument = make(matrix)
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            call(argument)
        return [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]

    matrix = np.array([[[4, 1], [2, 9]], [[3, 3], [1, 8]]])
    first = compiled(matrix)
    assert len(first) == 1 and f"jit({program})" in first[0], first
    assert compiled(matrix + 1) == []


def test_an_eager_confusion_matrix_compiles_one_program_for_its_counts(caplog):
    # its kernel ran operation by operation (the sort, the tally, the search: 49 programs for a
    # multiclass streaming update's first batch of a new size)
    labels = np.array([0, 1, 2, 1, 0, 2, 2])
    predictions = np.array([0, 2, 2, 1, 1, 2, 0])
    jm.confusion_matrix(predictions[:5], labels[:5], num_classes=3)  # other shapes first
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        matrix = jm.confusion_matrix(predictions, labels, num_classes=3)
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert [m for m in messages if "jit(_matrix)" in m] != [] and len(messages) <= 2, messages
    np.testing.assert_array_equal(matrix, skm.confusion_matrix(labels, predictions))


def test_an_eager_classification_report_compiles_its_matrix_and_report_programs(caplog):
    # its numbers ran operation by operation (28 programs for a first call on new shapes), and
    # its integer inputs were copied by a program of their own per shape ("stage")
    labels = np.array([0, 1, 2, 1, 0, 2, 2, 1])
    predictions = np.array([0, 2, 2, 1, 1, 2, 0, 1])
    weights = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 2.0, 1.5])
    jm.classification_report(predictions[:5], labels[:5], num_classes=3, sample_weight=weights[:5])
    batch = [np.stack([x, x[::-1]]) for x in (predictions, labels, weights)]  # new shapes
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        report = jm.classification_report(
            batch[0], batch[1], num_classes=3, sample_weight=batch[2], zero_division=0.0
        )
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert len(messages) == 2, messages
    assert [m for m in messages if "jit(_matrix)" in m] and [
        m for m in messages if "jit(_report_program)" in m
    ], messages
    for row in range(2):
        expected = skm.classification_report(
            batch[1][row],
            batch[0][row],
            sample_weight=batch[2][row],
            output_dict=True,
            zero_division=0.0,
        )
        for c in range(3):
            for ours, theirs in (
                ("precision", "precision"),
                ("recall", "recall"),
                ("f1", "f1-score"),
            ):
                np.testing.assert_allclose(
                    getattr(report, ours)[row, c], expected[str(c)][theirs], rtol=1e-6
                )
        np.testing.assert_allclose(
            report.macro["f1"][row], expected["macro avg"]["f1-score"], rtol=1e-6
        )
        np.testing.assert_allclose(report.accuracy[row], expected["accuracy"], rtol=1e-6)


# no ties within a row (scikit-learn's top-k breaks those by class index)
_PROBS = np.array(
    [
        [0.7, 0.2, 0.1],
        [0.2, 0.5, 0.3],
        [0.1, 0.3, 0.6],
        [0.3, 0.25, 0.45],
        [0.5, 0.4, 0.1],
        [0.25, 0.6, 0.15],
        [0.1, 0.15, 0.75],
        [0.4, 0.35, 0.25],
        [0.3, 0.5, 0.2],
    ],
    np.float32,
)  # fmt: skip
_CLASSES = np.array([0, 1, 2, 2, 1, 0, 2, 0, 1])
_WEIGHTS = np.array([1.0, 2.0, 0.5, 1.0, 3.0, 1.0, 2.0, 1.5, 1.0], np.float32)

# name: (our call, scikit-learn's, at most this many programs for a first call on new shapes:
# the ranking metric's own and one for the classes' numbers)
MULTICLASS_RANKING_CALLS = {
    "top_k_accuracy": (
        lambda p, y, w: jm.top_k_accuracy(p, y, k=2, sample_weight=w),
        lambda p, y, w: skm.top_k_accuracy_score(y, p, k=2, sample_weight=w, labels=range(3)),
        1,
    ),
    "multiclass_roc_auc[ovr, weighted]": (
        lambda p, y, w: jm.multiclass_roc_auc(p, y, average="weighted", sample_weight=w),
        lambda p, y, w: skm.roc_auc_score(
            y, p / p.sum(-1, keepdims=True), multi_class="ovr", average="weighted", sample_weight=w
        ),
        2,
    ),
    "multiclass_roc_auc[ovo]": (
        lambda p, y, w: jm.multiclass_roc_auc(p, y, multi_class="ovo"),
        lambda p, y, w: skm.roc_auc_score(y, p / p.sum(-1, keepdims=True), multi_class="ovo"),
        2,
    ),
}


@pytest.mark.parametrize("name", sorted(MULTICLASS_RANKING_CALLS))
def test_an_eager_multiclass_ranking_call_compiles_its_metric_and_one_program(caplog, name):
    # the numbers around the ranking ran operation by operation (7-9 programs for a first call
    # on new shapes: the one-hot classes, the averages, the marking of bad rows)
    ours, theirs, most = MULTICLASS_RANKING_CALLS[name]
    ours(_PROBS[:6], _CLASSES[:6], _WEIGHTS[:6])  # other shapes first: what a process compiles once
    batch = [np.stack([x, x[::-1]]) for x in (_PROBS, _CLASSES, _WEIGHTS)]
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        values = ours(*batch)
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert 1 <= len(messages) <= most, messages
    for row in range(2):
        expected = theirs(*(x[row] for x in batch))
        np.testing.assert_allclose(values[row], expected, rtol=1e-6)
