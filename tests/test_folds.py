import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm


def dealt_into_folds(rng, num_folds=4, n=40):
    """A binary problem dealt into folds of unequal sizes: per-fold counts and the whole data."""
    labels = (rng.random(n) < 0.4).astype(np.int32)
    scores = (rng.normal(size=n) + labels).astype(np.float32)
    fold = np.sort(rng.integers(0, num_folds, n))
    fold[:num_folds] = np.arange(num_folds)  # every fold holds a sample
    counts = [
        jm.confusion_counts(scores[fold == k], labels[fold == k], 0.5) for k in range(num_folds)
    ]
    stacked = jm.Counts(*(jnp.stack(field) for field in zip(*counts)))
    return stacked, scores, labels, fold


def test_pooled_versus_averaged_on_a_fold_of_one():
    # a fold of one sample (wrong) and a fold of three (right): pooled 3/4, averaged (0 + 1) / 2
    folds = jm.Counts(jnp.array([0, 2]), jnp.array([1, 0]), jnp.array([0, 0]), jnp.array([0, 1]))
    assert float(jm.over_folds(jm.accuracy, folds)) == pytest.approx(0.75)
    assert float(jm.over_folds(jm.accuracy, folds, pooled=False)) == pytest.approx(0.5)
    assert float(jm.over_folds(jm.accuracy, folds)) == float(jm.accuracy(jm.Counts(2, 1, 0, 1)))
    per_class = jm.Counts(*(jnp.ones((3, 2), jnp.int32) for _ in range(4)))
    assert float(jm.over_folds(jm.precision, per_class, average="macro")) == 0.5


@pytest.mark.parametrize(
    "rate, reference",
    [
        (jm.precision, skm.precision_score),
        (jm.recall, skm.recall_score),
        (jm.f_beta, skm.f1_score),
        (jm.accuracy, skm.accuracy_score),
    ],
)
def test_pooled_is_the_rate_of_the_concatenated_data_and_averaged_the_fold_mean(
    rng, rate, reference
):
    folds, scores, labels, fold = dealt_into_folds(rng)
    predicted = (scores >= 0.5).astype(np.int32)
    assert float(jm.over_folds(rate, folds)) == pytest.approx(reference(labels, predicted))
    per_fold = [
        reference(labels[fold == k], predicted[fold == k], **_zero_division(reference))
        for k in range(folds.tp.shape[0])
    ]
    got = float(jm.over_folds(rate, folds, pooled=False, zero_division=0.0))
    assert got == pytest.approx(np.mean(per_fold))


def _zero_division(reference):
    return {} if reference is skm.accuracy_score else {"zero_division": 0.0}


def test_pooled_does_not_depend_on_the_deal(rng):
    _, scores, labels, _ = dealt_into_folds(rng)
    whole = float(jm.recall(jm.confusion_counts(scores, labels, 0.5)))
    for num_folds in (2, 3, 5, 7):
        fold = rng.permutation(np.arange(scores.size) % num_folds)
        counts = [
            jm.confusion_counts(scores[fold == k], labels[fold == k], 0.5) for k in range(num_folds)
        ]
        folds = jm.Counts(*(jnp.stack(field) for field in zip(*counts)))
        assert float(jm.over_folds(jm.recall, folds)) == pytest.approx(whole)


def test_a_fold_without_positives_adds_nothing_pooled_and_is_undefined_averaged():
    # fold 0: 2 of 3 positives found; fold 1: no positives, one false alarm
    folds = jm.Counts(jnp.array([2, 0]), jnp.array([0, 1]), jnp.array([1, 0]), jnp.array([1, 1]))
    assert float(jm.over_folds(jm.recall, folds)) == pytest.approx(2 / 3)
    assert math.isnan(float(jm.over_folds(jm.recall, folds, pooled=False)))
    assert float(jm.over_folds(jm.recall, folds, pooled=False, zero_division=0.0)) == (
        pytest.approx(1 / 3)
    )


def test_fold_axis_anywhere_with_batch_and_class_axes(rng):
    # counts [batch 2, folds 3, classes 4]: the fold axis in the middle, with and without average
    fields = [jnp.asarray(rng.integers(0, 9, (2, 3, 4)), jnp.int32) for _ in range(4)]
    counts = jm.Counts(*fields)
    for pooled in (True, False):
        for average in ("macro", "micro", None):
            got_positive = jm.over_folds(
                jm.precision, counts, fold_axis=1, pooled=pooled, average=average
            )
            got_negative = jm.over_folds(
                jm.precision, counts, fold_axis=-2, pooled=pooled, average=average
            )
            np.testing.assert_allclose(got_positive, got_negative)
            for b in range(2):
                element = jm.Counts(*(f[b] for f in fields))
                expected = jm.over_folds(jm.precision, element, pooled=pooled, average=average)
                np.testing.assert_allclose(got_positive[b], expected, rtol=1e-6)
    with pytest.raises(ValueError, match="`fold_axis` must not be the class axis"):
        jm.over_folds(jm.precision, counts, fold_axis=-1, average="macro")
    with pytest.raises(ValueError, match="`fold_axis` must be an axis of the counts"):
        jm.over_folds(jm.precision, counts, fold_axis=3)


def test_eager_jit_and_vmap_agree(rng):
    folds, _, _, _ = dealt_into_folds(rng)
    for pooled in (True, False):
        eager = jm.over_folds(jm.f_beta, folds, pooled=pooled, beta=2.0)
        jitted = jax.jit(lambda c, p=pooled: jm.over_folds(jm.f_beta, c, pooled=p, beta=2.0))(folds)
        batch = jm.Counts(*(jnp.stack([f, f[::-1]]) for f in folds))
        mapped = jax.vmap(lambda c, p=pooled: jm.over_folds(jm.f_beta, c, pooled=p, beta=2.0))(
            batch
        )
        np.testing.assert_allclose(jitted, eager, rtol=1e-6)
        np.testing.assert_allclose(mapped, [eager, eager], rtol=1e-6)


def test_a_marked_fold_poisons_pooled_and_averaged():
    predictions = jnp.array([[0, 1, 2, 1], [0, 1, 2, 1]])
    labels = jnp.array([[0, 1, 2, 2], [0, 1, 5, 2]])  # fold 1 holds class 5 of 3
    matrix = jax.jit(lambda p, t: jm.confusion_matrix(p, t, num_classes=3))(predictions, labels)
    folds = jm.one_vs_rest(matrix)  # two folds, three classes
    for pooled in (True, False):
        assert math.isnan(float(jm.over_folds(jm.accuracy, folds, pooled=pooled, average="micro")))
    assert math.isnan(float(jm.over_folds(jm.recall, folds, average="macro")))
    binary = jm.Counts(
        jnp.array([3, -1]), jnp.array([1, -1]), jnp.array([0, -1]), jnp.array([4, -1])
    )
    assert math.isnan(float(jm.over_folds(jm.precision, binary)))
    float_marked = jm.Counts(*(jnp.array([1.5, jnp.nan]) for _ in range(4)))
    assert math.isnan(float(jm.over_folds(jm.precision, float_marked)))


def test_float64_under_x64(rng, x64):
    folds, _, _, _ = dealt_into_folds(rng)
    assert jm.over_folds(jm.precision, folds).dtype == np.float64
    assert jm.over_folds(jm.precision, folds, pooled=False).dtype == np.float64
