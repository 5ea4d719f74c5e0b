"""The term functions of the ranking metrics (`core/terms.py`), fed tie groups built by hand in
numpy, against brute-force pair counts and scikit-learn on tiny tied sets."""

import numpy as np
import pytest
from sklearn.metrics import average_precision_score, precision_recall_curve, roc_curve

from jaxmetrics._src.core import terms


def tie_groups(scores, labels, weights):
    """(distinct scores ascending, `terms.TieGroups`) of a sample, built by hand."""
    values = np.unique(scores)
    positive = np.array([weights[(scores == v) & (labels == 1)].sum() for v in values])
    negative = np.array([weights[(scores == v) & (labels == 0)].sum() for v in values])
    below = lambda w: np.concatenate([[0], np.cumsum(w)[:-1]])  # noqa: E731
    groups = terms.TieGroups(
        positive, negative, below(positive), below(negative), positive.sum(), negative.sum()
    )
    return values, groups


def sample(seed, n=12):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, 2, n)
    labels[:2] = (0, 1)  # both classes
    scores = rng.integers(0, 4, n).astype(np.float64)  # heavy ties
    return scores, labels, rng.integers(1, 4, n).astype(np.float64)


def pair_auc(scores, labels, weights):
    """Brute force: the weight of every positive-negative pair ranked right, ties one half."""
    pos, neg = labels == 1, labels == 0
    right = (scores[pos][:, None] > scores[neg][None, :]) + 0.5 * (
        scores[pos][:, None] == scores[neg][None, :]
    )
    pairs = weights[pos][:, None] * weights[neg][None, :]
    return (right * pairs).sum() / pairs.sum()


@pytest.mark.parametrize("seed", range(3))
def test_auc_of_the_terms_of_tie_groups_is_the_pair_count(seed):
    scores, labels, weights = sample(seed)
    _, groups = tie_groups(scores, labels, weights)
    scale = terms.auc_scale(groups.total_negative, np.float32)
    wins = terms.auc_wins(
        groups.positive, groups.negative_below, groups.negative, scale, np.float32
    )
    auc = terms.auc_of_wins(
        wins.sum(), groups.total_positive, groups.total_negative, scale, np.float32
    )
    assert float(auc) == pytest.approx(pair_auc(scores, labels, weights), abs=1e-6)


def test_auc_terms_are_linear_in_the_positive_weight():
    """One entry per positive sample, with its group's negatives, sums to the group's terms."""
    scores, labels, weights = sample(7)
    values, groups = tie_groups(scores, labels, weights)
    scale = terms.auc_scale(groups.total_negative, np.float32)
    group = np.searchsorted(values, scores)
    positive = np.where(labels == 1, weights, 0)
    per_sample = terms.auc_wins(
        positive, groups.negative_below[group], groups.negative[group], scale, np.float32
    )
    per_group = terms.auc_wins(
        groups.positive, groups.negative_below, groups.negative, scale, np.float32
    )
    assert float(per_sample.sum()) == pytest.approx(float(per_group.sum()), rel=1e-6)


@pytest.mark.parametrize("seed", range(3))
def test_ap_of_the_terms_of_tie_groups_equals_sklearn(seed):
    scores, labels, weights = sample(seed)
    _, groups = tie_groups(scores, labels, weights)
    steps, imperfect = terms.ap_steps(groups, np.float32)
    ap = terms.ap_of_steps(
        steps.sum(), imperfect.any(), groups.total_positive, groups.total_negative, np.float32
    )
    expected = average_precision_score(labels, scores, sample_weight=weights)
    assert float(ap) == pytest.approx(expected, abs=1e-6)


def test_separated_sets_are_exactly_one_and_zero_and_huge_weights_do_not_overflow():
    labels = np.array([0] * 5 + [1] * 7)
    scores = np.arange(12.0)
    for weights in (np.full(12, 1e20), np.random.default_rng(0).uniform(0.1, 3.0, 12)):
        for direction, expected in ((1, 1.0), (-1, 0.0)):
            _, groups = tie_groups(direction * scores, labels, weights)
            scale = terms.auc_scale(groups.total_negative, np.float32)
            wins = terms.auc_wins(
                groups.positive, groups.negative_below, groups.negative, scale, np.float32
            )
            auc = terms.auc_of_wins(
                wins.sum(), groups.total_positive, groups.total_negative, scale, np.float32
            )
            assert float(auc) == expected, (weights[0], direction, float(auc))
        _, groups = tie_groups(scores, labels, weights)
        steps, imperfect = terms.ap_steps(groups, np.float32)
        ap = terms.ap_of_steps(
            steps.sum(), imperfect.any(), groups.total_positive, groups.total_negative, np.float32
        )
        assert float(ap) == 1.0 and np.isfinite(np.asarray(steps)).all()


def test_one_class_is_nan():
    _, groups = tie_groups(np.arange(4.0), np.ones(4, int), np.ones(4))
    steps, imperfect = terms.ap_steps(groups, np.float32)
    ap = terms.ap_of_steps(steps.sum(), imperfect.any(), 4.0, 0.0, np.float32)
    scale = terms.auc_scale(0.0, np.float32)
    auc = terms.auc_of_wins(0.0, 4.0, 0.0, scale, np.float32)
    assert np.isnan(float(ap)) and np.isnan(float(auc))


@pytest.mark.parametrize("seed", range(3))
def test_placement_values_of_tie_groups_are_delongs(seed):
    """V10 of a positive: the weight of negatives it beats (ties one half) over N; V01 of a
    negative: the weight of positives beating it over P (DeLong et al. 1988)."""
    scores, labels, weights = sample(seed)
    values, groups = tie_groups(scores, labels, weights)
    v10, v01 = (np.asarray(v) for v in terms.placement_values(groups, np.float32))
    group = np.searchsorted(values, scores)
    pos, neg = labels == 1, labels == 0
    for i in np.flatnonzero(pos):
        beaten = (scores[i] > scores[neg]) + 0.5 * (scores[i] == scores[neg])
        expected = (beaten * weights[neg]).sum() / weights[neg].sum()
        assert v10[group[i]] == pytest.approx(expected, abs=1e-6)
    for j in np.flatnonzero(neg):
        beating = (scores[pos] > scores[j]) + 0.5 * (scores[pos] == scores[j])
        expected = (beating * weights[pos]).sum() / weights[pos].sum()
        assert v01[group[j]] == pytest.approx(expected, abs=1e-6)


# (positives, negatives) of eleven tie groups, ascending: equal neighbours are points that
# drop_intermediate drops; (1, 2) beside (1, 3) holds the same positives, not the same negatives
LAYOUT = [(0, 3), (3, 0), (0, 3), (0, 3), (1, 2), (1, 3), (1, 2), (0, 2), (0, 3), (3, 0), (3, 0)]


def curve_sample(seed):
    """The samples of `LAYOUT` (reversed for odd seeds) at random distinct scores, in a
    random order."""
    rng = np.random.default_rng(seed)
    layout = LAYOUT[::-1] if seed % 2 else LAYOUT
    values = np.sort(rng.choice(100, len(layout), replace=False)).astype(np.float64)
    scores = np.repeat(values, [p + n for p, n in layout])
    labels = np.concatenate([[1] * p + [0] * n for p, n in layout])
    order = rng.permutation(scores.size)
    return scores[order], labels[order], np.ones(scores.size)


def kept(bends):
    """The points `drop_intermediate` keeps: the bends and the two ends (ascending groups)."""
    index = np.arange(bends.size)
    return np.asarray(bends) | (index == 0) | (index == bends.size - 1)


@pytest.mark.parametrize("seed", range(4))
def test_roc_points_of_tie_groups_equal_sklearn(seed):
    """Every group's ROC point, and those `roc_bends` keeps, are scikit-learn's roc_curve
    without and with drop_intermediate (after its (0, 0) point)."""
    scores, labels, weights = curve_sample(seed)
    values, groups = tie_groups(scores, labels, weights)
    rates = terms.roc_rates(groups.tp, groups.fp, groups.total_positive, groups.total_negative)
    fpr, tpr = (np.asarray(r)[::-1] for r in rates)  # highest threshold first
    # the next group below holding weight (every group holds some here)
    positive_next = np.concatenate([[0], groups.positive[:-1]])
    negative_next = np.concatenate([[0], groups.negative[:-1]])
    bends = terms.roc_bends(groups.positive, groups.negative, positive_next, negative_next)
    for drop, keep in ((False, np.ones(values.size, bool)), (True, kept(bends)[::-1])):
        expected_fpr, expected_tpr, thresholds = roc_curve(
            labels, scores, sample_weight=weights, drop_intermediate=drop
        )
        np.testing.assert_allclose(fpr[keep], expected_fpr[1:], atol=1e-6)
        np.testing.assert_allclose(tpr[keep], expected_tpr[1:], atol=1e-6)
        np.testing.assert_array_equal(values[::-1][keep], thresholds[1:])
    assert not kept(bends).all()  # (points were dropped: the test tells the rules apart)


@pytest.mark.parametrize("seed", range(4))
def test_precision_recall_points_of_tie_groups_equal_sklearn(seed):
    """Every group's point, and those `pr_bends` keeps, are scikit-learn's
    precision_recall_curve without and with drop_intermediate (before its closing point)."""
    scores, labels, weights = curve_sample(seed)
    values, groups = tie_groups(scores, labels, weights)
    closing = np.zeros(values.size, bool)
    precision, recall = (
        np.asarray(r) for r in terms.pr_rates(groups.tp, groups.fp, groups.total_positive, closing)
    )
    positive_next = np.concatenate([[0], groups.positive[:-1]])
    bends = terms.pr_bends(groups.positive, positive_next)
    for drop, keep in ((False, np.ones(values.size, bool)), (True, kept(bends))):
        expected_precision, expected_recall, thresholds = precision_recall_curve(
            labels, scores, sample_weight=weights, drop_intermediate=drop
        )
        np.testing.assert_allclose(precision[keep], expected_precision[:-1], atol=1e-6)
        np.testing.assert_allclose(recall[keep], expected_recall[:-1], atol=1e-6)
        np.testing.assert_array_equal(values[keep], thresholds)
    assert not kept(bends).all()
    closing_point = terms.pr_rates(0, 0, groups.total_positive, True)
    assert (float(closing_point[0]), float(closing_point[1])) == (1.0, 0.0)
