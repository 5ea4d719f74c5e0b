import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tied_problem
from sklearn import metrics as skm

import jaxmetrics as jm

SCREENING = jm.Counts(90, 891, 10, 9009)  # 10,000 people screened, prevalence 1%
EXERCISE = jm.Counts(40, 10, 20, 930)  # a worked exercise: 60 positives among 1,000


def test_screening_test_at_one_percent_prevalence():
    assert float(jm.accuracy(SCREENING)) == pytest.approx(0.9099, abs=5e-5)
    assert float(jm.precision(SCREENING)) == pytest.approx(0.0917, abs=5e-5)
    assert float(jm.f_beta(SCREENING)) == pytest.approx(0.1665, abs=5e-5)
    assert float(jm.f_beta(SCREENING, beta=2.0)) == pytest.approx(450 / 1381, rel=1e-6)
    assert float(jm.recall(SCREENING)) == pytest.approx(0.9)
    assert float(jm.false_positive_rate(SCREENING)) == pytest.approx(0.09)


def test_worked_exercise():
    assert float(jm.accuracy(EXERCISE)) == pytest.approx(0.97)
    assert float(jm.precision(EXERCISE)) == pytest.approx(0.8)
    assert float(jm.recall(EXERCISE)) == pytest.approx(0.6667, abs=5e-5)
    assert float(jm.specificity(EXERCISE)) == pytest.approx(0.9894, abs=5e-5)
    assert float(jm.f_beta(EXERCISE)) == pytest.approx(0.7273, abs=5e-5)
    assert float(jm.f_beta(EXERCISE, beta=2.0)) == pytest.approx(0.6897, abs=5e-5)


def brute_force_counts(scores, labels, weights, threshold):
    w = np.ones_like(scores) if weights is None else weights
    flagged = scores >= np.float32(threshold)
    return (
        np.sum(w * (flagged & (labels == 1))),
        np.sum(w * (flagged & (labels == 0))),
        np.sum(w * (~flagged & (labels == 1))),
        np.sum(w * (~flagged & (labels == 0))),
    )


@pytest.mark.parametrize("weighted", [False, True])
def test_confusion_counts_on_a_grid_match_brute_force(rng, weighted):
    scores, labels, weights = tied_problem(rng, weighted=weighted)
    grid = np.array([[-1.0, 0.0, 1 / 7], [3 / 7, 0.5, 2.0]], np.float32)
    counts = jm.confusion_counts(scores, labels, grid, sample_weight=weights)
    assert counts.tp.shape == grid.shape
    for index in np.ndindex(grid.shape):
        expected = brute_force_counts(scores, labels, weights, grid[index])
        np.testing.assert_allclose([c[index] for c in counts], expected, rtol=1e-6)
    if not weighted:
        assert counts.tp.dtype == jnp.int32


def test_confusion_counts_match_sklearn_confusion_matrix(rng):
    scores, labels, weights = tied_problem(rng, weighted=True)
    counts = jm.confusion_counts(scores, labels, 3 / 7, sample_weight=weights)
    tn, fp, fn, tp = skm.confusion_matrix(
        labels, scores >= np.float32(3 / 7), sample_weight=weights
    ).ravel()
    np.testing.assert_allclose([counts.tp, counts.fp, counts.fn, counts.tn], [tp, fp, fn, tn])


def test_counts_are_exact_past_two_to_the_24():
    # float32 cannot hold 2**24 + 1; int32 counts must. Integer weights go through the same
    # accumulation as unit ones (a tiny array: the sum is what is tested, not the length)
    total = 2**24 + 3
    scores = jnp.ones(4, jnp.float32)
    labels = jnp.ones(4, jnp.int32)
    weights = jnp.asarray([2**24, 1, 1, 1], jnp.int32)
    counts = jax.jit(jm.confusion_counts)(scores, labels, 0.5, sample_weight=weights)
    assert int(counts.tp) == total and counts.tp.dtype == jnp.int32
    assert jm.confusion_counts(scores, labels, 0.5).tp.dtype == jnp.int32  # unit weights too


RATES = {
    "precision": (jm.precision, skm.precision_score),
    "recall": (jm.recall, skm.recall_score),
    "f1": (jm.f_beta, skm.f1_score),
    "accuracy": (
        jm.accuracy,
        lambda y, p, **kw: skm.accuracy_score(y, p, sample_weight=kw.get("sample_weight")),
    ),
    "balanced_accuracy": (
        jm.balanced_accuracy,
        lambda y, p, **kw: skm.balanced_accuracy_score(y, p, sample_weight=kw.get("sample_weight")),
    ),
    "specificity": (jm.specificity, lambda y, p, **kw: skm.recall_score(y, p, pos_label=0, **kw)),
}


@pytest.mark.parametrize("name", sorted(RATES))
@pytest.mark.parametrize("weighted", [False, True])
def test_rates_match_sklearn(rng, name, weighted):
    ours, theirs = RATES[name]
    scores, labels, weights = tied_problem(rng, weighted=weighted, float_weights=True)
    for threshold in (1 / 7, 3 / 7, 6 / 7):
        counts = jm.confusion_counts(scores, labels, threshold, sample_weight=weights)
        predicted = (scores >= np.float32(threshold)).astype(int)
        expected = theirs(labels, predicted, sample_weight=weights)
        assert float(ours(counts)) == pytest.approx(expected, rel=1e-6, abs=1e-7)


def test_f_beta_matches_sklearn_fbeta(rng):
    scores, labels, weights = tied_problem(rng, weighted=True)
    counts = jm.confusion_counts(scores, labels, 3 / 7, sample_weight=weights)
    predicted = (scores >= np.float32(3 / 7)).astype(int)
    for beta in (0.5, 2.0, 3.0):
        expected = skm.fbeta_score(labels, predicted, beta=beta, sample_weight=weights)
        assert float(jm.f_beta(counts, beta=beta)) == pytest.approx(expected, rel=1e-6)


def test_matthews_corrcoef_matches_sklearn(rng):
    scores, labels, weights = tied_problem(rng, weighted=True)
    counts = jm.confusion_counts(scores, labels, 3 / 7, sample_weight=weights)
    predicted = (scores >= np.float32(3 / 7)).astype(int)
    expected = skm.matthews_corrcoef(labels, predicted, sample_weight=weights)
    assert float(jm.matthews_corrcoef(counts)) == pytest.approx(expected, rel=1e-5)


def test_matthews_corrcoef_large_counts_do_not_overflow():
    big = jm.Counts(
        *(jnp.asarray(v, jnp.int32) for v in (40_000_000, 5_000_000, 5_000_000, 50_000_000))
    )
    tp, fp, fn, tn = 4e7, 5e6, 5e6, 5e7
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    assert float(jm.matthews_corrcoef(big)) == pytest.approx(expected, rel=1e-6)


def test_matthews_corrcoef_of_weighted_counts_of_1e20_and_more():
    """Counts of summed weights (floats) past 1e19: tp tn and the products under the square
    roots overflowed float32 and the coefficient was NaN. The same counts times 2^70 and 2^100
    give the same coefficient, as Counts, as a matrix, batched beside small counts and jitted."""
    tp, fp, fn, tn = 30.0, 5.0, 10.0, 40.0
    expected = (tp * tn - fp * fn) / math.sqrt((tp + fp) * (tp + fn) * (tn + fp) * (tn + fn))
    for scale in (2.0**70, 2.0**100):
        counts = jm.Counts(*(np.float32(c * scale) for c in (tp, fp, fn, tn)))
        assert float(jm.matthews_corrcoef(counts)) == pytest.approx(expected, rel=1e-6)
        matrix = np.array([[tn, fp], [fn, tp]], np.float32)
        batch = np.stack([matrix, matrix * np.float32(scale)])
        for got in (jm.matthews_corrcoef(batch), jax.jit(jm.matthews_corrcoef)(batch)):
            np.testing.assert_allclose(got, [expected, expected], rtol=1e-6)


def test_empty_denominators_are_nan_by_default_and_zero_division_reproduces_sklearn():
    nothing_flagged = jm.Counts(0, 0, 5, 5)
    assert math.isnan(float(jm.precision(nothing_flagged)))
    assert float(jm.precision(nothing_flagged, zero_division=0.0)) == 0.0
    assert float(jm.precision(nothing_flagged, zero_division=1.0)) == 1.0
    assert math.isnan(float(jm.f_beta(jm.Counts(0, 0, 0, 5))))
    assert float(jm.f_beta(jm.Counts(0, 0, 0, 5), zero_division=1.0)) == 1.0
    # F-beta's counting form is defined whenever TP + FP + FN > 0
    assert float(jm.f_beta(jm.Counts(0, 0, 3, 5))) == 0.0
    assert math.isnan(float(jm.matthews_corrcoef(jm.Counts(3, 2, 0, 0))))
    assert math.isnan(float(jm.balanced_accuracy(jm.Counts(3, 0, 2, 0))))


def test_averaging_over_a_class_axis():
    counts = jm.Counts(jnp.array([8, 1]), jnp.array([2, 0]), jnp.array([2, 4]), jnp.array([3, 10]))
    per_class = np.array([0.8, 1.0])
    np.testing.assert_allclose(jm.precision(counts), per_class)
    assert float(jm.precision(counts, average="macro")) == pytest.approx(0.9)
    assert float(jm.precision(counts, average="micro")) == pytest.approx(9 / 11)
    support = np.array([10, 5])
    assert float(jm.precision(counts, average="weighted")) == pytest.approx(
        (per_class * support).sum() / support.sum()
    )
    undefined = jm.Counts(
        jnp.array([8, 0]), jnp.array([2, 0]), jnp.array([2, 4]), jnp.array([3, 10])
    )
    assert math.isnan(float(jm.precision(undefined, average="macro")))
    with pytest.raises(ValueError, match="average"):
        jm.precision(counts, average="samples")
    with pytest.raises(ValueError, match="class axis"):
        jm.precision(SCREENING, average="macro")


def test_rates_reject_non_counts():
    with pytest.raises(TypeError, match="`counts`"):
        jm.precision((1, 2, 3, 4))
    with pytest.raises(ValueError, match="`beta`"):
        jm.f_beta(SCREENING, beta=-1.0)


def test_bad_input_under_jit_gives_nan_rates():
    scores = jnp.array([0.1, 0.9, jnp.nan, 0.4])
    labels = jnp.array([0, 1, 1, 0])
    counts = jax.jit(jm.confusion_counts)(scores, labels, 0.5)
    assert int(counts.tp) == -1
    assert math.isnan(float(jm.precision(counts)))
    assert math.isnan(float(jm.f_beta(counts)))
    assert math.isnan(float(jm.matthews_corrcoef(counts)))
    labels_with_a_two = jnp.array([0, 1, 2, 0])
    counts = jax.jit(jm.confusion_counts)(jnp.array([0.1, 0.9, 0.3, 0.4]), labels_with_a_two, 0.5)
    assert math.isnan(float(jm.recall(counts)))


def test_an_empty_threshold_grid_raises_naming_thresholds():
    scores, labels = np.array([0.2, 0.7, 0.4]), np.array([0, 1, 1])
    for empty in ([], np.zeros((2, 0))):
        with pytest.raises(ValueError, match=r"`thresholds` must hold at least one threshold.*"):
            jm.confusion_counts(scores, labels, empty)
    with pytest.raises(ValueError, match=r"got an empty array of shape \(2, 0\)"):
        jm.confusion_counts(scores, labels, np.zeros((2, 0)))


def test_integer_weights_are_counted_in_int64_under_x64(x64):
    # uint32 weights of 2^32 - 1: the total is past int32, well inside int64
    scores = np.array([0.1, 0.4, 0.35, 0.8, 0.6])
    labels = np.array([0, 0, 1, 1, 0])
    grid = np.array([0.0, 0.35, 0.5, 0.9])
    weights = np.array([2**32 - 1, 2**32 - 1, 2**32 - 2, 2**32 - 1, 7], np.uint32)
    # the oracle: exact Python-int sums of the weights on each side of each threshold
    expected = [
        [
            sum(int(w) for s, y, w in zip(scores, labels, weights) if (s >= t) == flag and y == y1)
            for t in grid
        ]
        for flag, y1 in ((True, 1), (True, 0), (False, 1), (False, 0))
    ]
    eager = jm.confusion_counts(scores, labels, grid, sample_weight=weights)
    jitted = jax.jit(jm.confusion_counts)(scores, labels, grid, sample_weight=weights)
    for counts in (eager, jitted):
        assert [c.dtype for c in counts] == [np.int64] * 4
        assert [np.asarray(c).tolist() for c in counts] == expected
    # int64 weights too, and a row total past int64 raises eagerly, marks -1 under jit
    counts = jm.confusion_counts(scores, labels, 0.5, sample_weight=weights.astype(np.int64) << 20)
    assert int(counts.tp) == (2**32 - 1) << 20
    huge = np.full(5, 2**61, np.int64)
    with pytest.raises(ValueError, match=r"`sample_weight` must sum to at most 2\^63 - 1"):
        jm.confusion_counts(scores, labels, 0.5, sample_weight=huge)
    marked = jax.jit(jm.confusion_counts)(scores, labels, 0.5, sample_weight=huge)
    assert [int(c) for c in marked] == [-1] * 4
    # float weights still give float64 sums, unit weights int32 counts of samples
    assert jm.confusion_counts(scores, labels, 0.5, sample_weight=np.ones(5)).tp.dtype == np.float64
    assert jm.confusion_counts(scores, labels, 0.5).tp.dtype == np.int32


@pytest.mark.parametrize("weights", ["none", "int", "float"])
def test_a_few_thresholds_are_compared_as_the_sorted_path_searches(rng, weights):
    """Up to `DIRECT_THRESHOLDS` thresholds every score is compared with each (no sort); the
    counts equal those the sort-and-search path gives the same thresholds in a longer grid:
    ties on the thresholds, -0.0 and +0.0, subnormals, float64 scores 1e-12 apart (exact keys),
    a batch axis, eagerly and under jit."""
    from jaxmetrics._src.metrics.counts import DIRECT_THRESHOLDS

    n = 300
    tiny = np.finfo(np.float32).tiny
    levels = np.array([-0.0, 0.0, tiny / 4, -tiny / 4, tiny, 0.25, 0.5, 0.5 + 1e-12, 0.75, 1.0])
    scores = rng.choice(levels, size=(2, n))
    labels = rng.integers(0, 2, (2, n))
    sample_weight = {
        "none": None,
        "int": rng.integers(0, 5, (2, n)),
        "float": rng.random((2, n)).astype(np.float32),
    }[weights]
    few = np.array([-0.0, tiny / 4, 0.5, 0.5 + 1e-12, 1.0])
    assert few.size <= DIRECT_THRESHOLDS
    grid = np.concatenate([few, np.linspace(0.1, 0.9, DIRECT_THRESHOLDS)])  # the sorted path
    for call in (jm.confusion_counts, jax.jit(jm.confusion_counts)):
        got = call(scores, labels, few, sample_weight=sample_weight)
        searched = call(scores, labels, grid, sample_weight=sample_weight)
        for a, b in zip(got, searched, strict=True):
            expected = np.asarray(b)[..., : few.size]
            if weights == "float":  # sums in another order (the search's: differences of totals)
                total = float(np.sum(sample_weight))
                np.testing.assert_allclose(np.asarray(a), expected, rtol=0, atol=1e-6 * total)
            else:
                np.testing.assert_array_equal(np.asarray(a), expected)
                assert a.dtype == b.dtype
    # and a brute force in float64 (scores compared as given: 0.5 + 1e-12 is not 0.5)
    w = np.ones((2, n)) if sample_weight is None else sample_weight.astype(np.float64)
    got = jm.confusion_counts(scores, labels, 0.5, sample_weight=sample_weight)
    flagged = scores >= 0.5
    np.testing.assert_allclose(
        np.asarray(got.tp), np.sum(w * (flagged & (labels == 1)), -1), rtol=1e-6
    )
    np.testing.assert_allclose(
        np.asarray(got.tn), np.sum(w * (~flagged & (labels == 0)), -1), rtol=1e-6
    )
