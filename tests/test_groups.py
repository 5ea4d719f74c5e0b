"""Metrics by group and fairness metrics, against fairlearn's `MetricFrame` and its functions.

The decisions, labels and weights below are those of fairlearn's own metric tests
(`test/unit/metrics/data_for_test.py`: 71 rows, groups in runs of 2, 3, 4 and 5 rows), ported as
data; scores for the AUC are drawn here.
"""

import math
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from fairlearn import metrics as flm
from sklearn import metrics as skm

import jaxmetrics as jm
from jaxmetrics._src.metrics.groups import masked_values

# fairlearn's test data (y_t, y_p, s_w)
LABELS = np.array(
    [1, 0, 1, 1, 1, 0, 1, 1, 0, 0, 0, 1, 1, 1, 0, 1, 1, 0, 0, 1, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]
    + [1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0]
    + [1, 1, 0, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    np.int32,
)
DECISIONS = np.array(
    [0, 1, 1, 1, 0, 0, 0, 1, 1, 1, 1, 0, 0, 1, 1, 1, 0, 1, 1, 0, 1, 1, 0, 0, 0, 0, 1, 1, 1, 1]
    + [1, 1, 0, 1, 0, 1, 0, 0, 1, 0, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 1, 1, 1, 1, 0, 0, 0]
    + [0, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1],
    np.int32,
)
WEIGHTS = np.array(
    [1, 2, 3, 1, 2, 1, 2, 3, 1, 1, 1, 2, 3, 3, 1, 2, 1, 1, 1, 2, 3, 2, 2, 1, 2, 1, 3, 1, 3, 1]
    + [4, 1, 2, 1, 3, 2, 3, 3, 4, 1, 4, 1, 3, 1, 1, 1, 2, 3, 3, 1, 2, 1, 1, 1, 2, 3, 1, 1, 2]
    + [3, 2, 1, 2, 2, 3, 2, 3, 2, 3, 4, 1],
    np.int32,
)
N = LABELS.size


def runs(run_length, num_groups=2):
    """fairlearn's `array_gen`: groups 0, 0, 1, 1, 0, 0, ... in runs of `run_length` rows."""
    return ((np.arange(N) // run_length) % num_groups).astype(np.int32)


SCORES = (np.random.default_rng(29).normal(size=N) + LABELS).astype(np.float32)
# decisions as float scores of `confusion_counts` (0/1 integers there warn of swapped arguments)
HARD_SCORES = DECISIONS.astype(np.float32)


# metrics of decisions (module-level: jm.by_group compiles once per metric and shape)
def accuracy_of(predictions, labels, *, sample_weight=None):
    counts = jm.confusion_counts(predictions, labels, 0.5, sample_weight=sample_weight)
    return jm.accuracy(counts)


def recall_of(predictions, labels, *, sample_weight=None):
    counts = jm.confusion_counts(predictions, labels, 0.5, sample_weight=sample_weight)
    return jm.recall(counts)


METRICS = {  # ours, its data, MetricFrame's metric and its (y_true, y_pred)
    "roc_auc": (jm.roc_auc, (SCORES, LABELS), skm.roc_auc_score, (LABELS, SCORES)),
    "accuracy": (accuracy_of, (HARD_SCORES, LABELS), skm.accuracy_score, (LABELS, DECISIONS)),
    "recall": (recall_of, (HARD_SCORES, LABELS), skm.recall_score, (LABELS, DECISIONS)),
    "jm.selection_rate": (jm.selection_rate, (DECISIONS,), flm.selection_rate, (LABELS, DECISIONS)),
}


def assert_frame(got, frame, rel=1e-6):
    np.testing.assert_allclose(got.values, frame.by_group.to_numpy(), rtol=rel)
    assert float(got.overall) == pytest.approx(frame.overall, rel=rel)
    assert float(got.difference) == pytest.approx(frame.difference(), rel=rel, abs=1e-7)
    assert float(got.ratio) == pytest.approx(frame.ratio(), rel=rel)


@pytest.mark.parametrize("name", METRICS)
@pytest.mark.parametrize("weighted", [False, True])
def test_by_group_equals_metricframe(name, weighted):
    metric, arrays, reference, (y_true, y_pred) = METRICS[name]
    groups = runs(3, num_groups=3)
    weights = WEIGHTS if weighted else None
    got = jm.by_group(metric, *arrays, groups=groups, num_groups=3, sample_weight=weights)
    frame = flm.MetricFrame(
        metrics=reference,
        y_true=y_true,
        y_pred=y_pred,
        sensitive_features=groups,
        sample_params={"sample_weight": weights} if weighted else None,
    )
    assert got.values.shape == (3,)
    assert_frame(got, frame)


def test_float_weights_and_zero_weight_rows_are_absent_rows(rng):
    groups = runs(4, num_groups=3)
    weights = rng.random(N).astype(np.float32)
    weights[::7] = 0.0
    got = jm.by_group(
        jm.roc_auc, SCORES, LABELS, groups=groups, num_groups=3, sample_weight=weights
    )
    kept = weights > 0
    for g in range(3):
        rows = kept & (groups == g)
        expected = skm.roc_auc_score(LABELS[rows], SCORES[rows], sample_weight=weights[rows])
        assert float(got.values[g]) == pytest.approx(expected, rel=1e-6)


def test_one_sort_for_all_groups():
    # a GPU program: the grouped values hold one sort; jm.by_group's (with `overall`) one after
    # XLA's optimisation, which merges the overall metric's sort with the groups'
    n = 64
    f32, i32 = jax.ShapeDtypeStruct((n,), jnp.float32), jax.ShapeDtypeStruct((n,), jnp.int32)

    def values(scores, labels, groups):
        return masked_values(jm.roc_auc, (scores, labels), groups, None, num_groups=5)

    with jm.xla_kernels():
        text = jax.export.export(jax.jit(values), platforms=["cuda"])(f32, i32, i32).mlir_module()
        assert text.count('"stablehlo.sort"') == 1
        whole = jax.jit(lambda s, y, g: jm.by_group(jm.roc_auc, s, y, groups=g, num_groups=5))
        zeros = np.zeros(n, np.int32)
        compiled = whole.lower(zeros.astype(np.float32), zeros, zeros).compile().as_text()
        assert len(re.findall(r" sort\(", compiled)) == 1


# ----------------------------------------------------------------------------- fairness


FAIRNESS = [  # ours, fairlearn's, takes labels
    (jm.demographic_parity_difference, flm.demographic_parity_difference, False),
    (jm.demographic_parity_ratio, flm.demographic_parity_ratio, False),
    (jm.equalized_odds_difference, flm.equalized_odds_difference, True),
    (jm.equalized_odds_ratio, flm.equalized_odds_ratio, True),
    (jm.equal_opportunity_difference, flm.equal_opportunity_difference, True),
    (jm.equal_opportunity_ratio, flm.equal_opportunity_ratio, True),
]


def fairness_call(ours, with_labels, predictions, labels, **options):
    arrays = (predictions, labels) if with_labels else (predictions,)
    return ours(*arrays, **options)


@pytest.mark.parametrize("ours, reference, with_labels", FAIRNESS)
@pytest.mark.parametrize("run_length", [2, 3, 4, 5])
def test_fairness_metrics_equal_fairlearns(ours, reference, with_labels, run_length):
    groups = runs(run_length)
    for weights in (None, WEIGHTS):
        got = fairness_call(
            ours, with_labels, DECISIONS, LABELS, groups=groups, num_groups=2, sample_weight=weights
        )
        expected = reference(LABELS, DECISIONS, sensitive_features=groups, sample_weight=weights)
        assert float(got) == pytest.approx(expected, rel=1e-6, abs=1e-7)


def test_equalized_odds_is_the_worse_of_the_two_rate_gaps():
    groups = runs(3, num_groups=3)
    frame = flm.MetricFrame(
        metrics={"tpr": flm.true_positive_rate, "fpr": flm.false_positive_rate},
        y_true=LABELS,
        y_pred=DECISIONS,
        sensitive_features=groups,
    )
    options = dict(groups=groups, num_groups=3)
    eo = float(jm.equalized_odds_difference(DECISIONS, LABELS, **options))
    assert eo == pytest.approx(frame.difference().max(), rel=1e-6)
    assert float(jm.equal_opportunity_difference(DECISIONS, LABELS, **options)) == pytest.approx(
        frame.difference()["tpr"], rel=1e-6
    )
    assert float(jm.equalized_odds_ratio(DECISIONS, LABELS, **options)) == pytest.approx(
        frame.ratio().min(), rel=1e-6
    )


def test_a_group_without_positives_nan_by_default_fairlearns_zero_on_request():
    groups = runs(5, num_groups=3)
    labels = LABELS.copy()
    labels[groups == 2] = 0  # group 2 has no positives: no true positive rate
    options = dict(groups=groups, num_groups=3)
    expected = flm.equal_opportunity_difference(labels, DECISIONS, sensitive_features=groups)
    got = jm.equal_opportunity_difference(DECISIONS, labels, zero_division=0.0, **options)
    assert float(got) == pytest.approx(expected, rel=1e-6)
    two_groups = groups != 2
    expected = flm.equal_opportunity_difference(
        labels[two_groups], DECISIONS[two_groups], sensitive_features=groups[two_groups]
    )  # by default the group is left out of the gap
    assert float(jm.equal_opportunity_difference(DECISIONS, labels, **options)) == pytest.approx(
        expected, rel=1e-6
    )
    expected = flm.equalized_odds_difference(labels, DECISIONS, sensitive_features=groups)
    got = jm.equalized_odds_difference(DECISIONS, labels, zero_division=0.0, **options)
    assert float(got) == pytest.approx(expected, rel=1e-6)


def test_a_group_without_rows_is_left_out():
    groups = runs(2)  # group 2 of 3 has no rows
    for ours, reference, with_labels in FAIRNESS[:3]:
        got = fairness_call(ours, with_labels, DECISIONS, LABELS, groups=groups, num_groups=3)
        expected = reference(LABELS, DECISIONS, sensitive_features=groups)
        assert float(got) == pytest.approx(expected, rel=1e-6)


def test_nobody_selected_gives_a_nan_ratio_as_fairlearn():
    nobody = np.zeros(N, np.int32)
    groups = runs(2)
    assert float(jm.demographic_parity_difference(nobody, groups=groups, num_groups=2)) == 0.0
    assert math.isnan(float(jm.demographic_parity_ratio(nobody, groups=groups, num_groups=2)))
    assert math.isnan(flm.demographic_parity_ratio(LABELS, nobody, sensitive_features=groups))


# ----------------------------------------------------------------------------- jit, vmap, batch


def test_eager_jit_and_vmap_agree():
    groups = runs(4, num_groups=3)
    scores = np.stack([SCORES, -SCORES, SCORES**3])  # [M = 3, n]: a model axis

    def call(s, g):
        return jm.by_group(jm.roc_auc, s, LABELS, groups=g, num_groups=3, sample_weight=WEIGHTS)

    eager = call(scores, groups)
    assert eager.values.shape == (3, 3) and eager.difference.shape == (3,)
    jitted = jax.jit(call)(scores, groups)
    mapped = jax.jit(jax.vmap(call, in_axes=(0, None)))(scores, groups)
    for field in range(4):
        np.testing.assert_allclose(jitted[field], eager[field], rtol=1e-6)
        np.testing.assert_allclose(np.moveaxis(mapped[field], 0, -1), eager[field], rtol=1e-6)
    for g in range(3):
        rows = groups == g
        expected = skm.roc_auc_score(LABELS[rows], scores[1, rows], sample_weight=WEIGHTS[rows])
        assert float(eager.values[g, 1]) == pytest.approx(expected, rel=1e-6)

    predictions = np.stack([DECISIONS, 1 - DECISIONS])
    mapped = jax.jit(
        jax.vmap(lambda p: jm.equalized_odds_difference(p, LABELS, groups=groups, num_groups=3))
    )(predictions)
    batched = jm.equalized_odds_difference(predictions, LABELS, groups=groups, num_groups=3)
    for row, p in enumerate(predictions):
        expected = flm.equalized_odds_difference(LABELS, p, sensitive_features=groups)
        assert float(mapped[row]) == pytest.approx(expected, rel=1e-6)
        assert float(batched[row]) == pytest.approx(expected, rel=1e-6)


def test_size_one_axes_and_one_group():
    one = jm.by_group(jm.roc_auc, SCORES[None], LABELS, groups=runs(3), num_groups=2)
    assert one.values.shape == (2, 1) and one.ratio.shape == (1,)
    single = jm.by_group(jm.roc_auc, SCORES, LABELS, groups=np.zeros(N, np.int32), num_groups=1)
    frame = flm.MetricFrame(
        metrics=skm.roc_auc_score, y_true=LABELS, y_pred=SCORES, sensitive_features=np.zeros(N)
    )
    assert_frame(single, frame)
    assert float(single.difference) == 0.0 and float(single.ratio) == 1.0


def test_float64_scores_are_ranked_exactly_by_group():
    close = 0.5 + 1e-9 * np.arange(12.0)  # float32 makes them all 0.5
    labels = np.array([0, 1, 0, 1, 1, 0, 0, 1, 1, 0, 1, 1], np.int32)
    groups = np.arange(12, dtype=np.int32) % 2
    got = jm.by_group(jm.roc_auc, close, labels, groups=groups, num_groups=2)
    for g in range(2):
        expected = skm.roc_auc_score(labels[groups == g], close[groups == g])
        assert float(got.values[g]) == pytest.approx(expected, rel=1e-6)


# ----------------------------------------------------------------------------- undefined, bad


def test_empty_group_and_group_without_positives_are_nan_and_left_out_of_the_gaps():
    groups = runs(3, num_groups=3)  # group 3 of 4 has no rows
    labels = LABELS.copy()
    labels[groups == 1] = 1  # group 1: no negatives, no AUC
    got = jm.by_group(jm.roc_auc, SCORES, labels, groups=groups, num_groups=4)
    values = np.asarray(got.values)
    assert np.isnan(values[[1, 3]]).all()
    kept = groups != 1  # MetricFrame on the defined groups (sklearn raises for group 1)
    frame = flm.MetricFrame(
        metrics=skm.roc_auc_score, y_true=labels[kept], y_pred=SCORES[kept],
        sensitive_features=groups[kept],
    )  # fmt: skip
    np.testing.assert_allclose(values[[0, 2]], frame.by_group.to_numpy(), rtol=1e-6)
    assert float(got.difference) == pytest.approx(frame.difference(), rel=1e-6)
    assert float(got.ratio) == pytest.approx(frame.ratio(), rel=1e-6)
    nowhere = jm.by_group(jm.roc_auc, SCORES, np.ones(N, np.int32), groups=groups, num_groups=3)
    assert np.isnan([nowhere.difference, nowhere.ratio]).all()  # no group defined


def test_bad_groups_and_options_raise_naming_the_value():
    groups = runs(2, num_groups=3)
    groups[7] = 5
    expected = r"`groups` must be group indices in \[0, 3\) \(`num_groups`\); found 5 at index 7"
    with pytest.raises(ValueError, match=expected):
        jm.by_group(jm.roc_auc, SCORES, LABELS, groups=groups, num_groups=3)
    groups[7] = -1
    with pytest.raises(ValueError, match=r"found -1 at index 7"):
        jm.demographic_parity_difference(DECISIONS, groups=groups, num_groups=3)
    for num_groups in (0, -2):
        with pytest.raises(ValueError, match=r"`num_groups` must be an int >= 1"):
            jm.by_group(jm.roc_auc, SCORES, LABELS, groups=runs(2), num_groups=num_groups)
    with pytest.raises(TypeError, match=r"`num_groups` must be an int >= 1; got 2.0"):
        jm.equalized_odds_difference(DECISIONS, LABELS, groups=runs(2), num_groups=2.0)
    with pytest.raises(TypeError, match=r"`groups` must hold integer group indices"):
        jm.by_group(jm.roc_auc, SCORES, LABELS, groups=runs(2).astype(float), num_groups=2)
    with pytest.raises(ValueError, match=r"`groups` .*same number of samples"):
        jm.by_group(jm.roc_auc, SCORES, LABELS, groups=runs(2)[:-1], num_groups=2)
    with pytest.raises(TypeError, match=r"must take a keyword argument `sample_weight`"):
        jm.by_group(lambda s, y: s.mean(), SCORES, LABELS, groups=runs(2), num_groups=2)


def test_bad_decisions_labels_and_weights_raise_eagerly_and_give_nan_under_jit():
    predictions = DECISIONS.astype(np.float32) * 0.9  # scores, not decisions
    groups = runs(2)
    expected = r"`predictions` must be 0/1 decisions .*; found 0.89.* at index 1"
    with pytest.raises(ValueError, match=expected):
        jm.demographic_parity_difference(predictions, groups=groups, num_groups=2)
    labels = LABELS.copy()
    labels[4] = 2
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 4"):
        jm.equalized_odds_ratio(DECISIONS, labels, groups=groups, num_groups=2)
    weights = WEIGHTS.astype(np.float32)
    weights[9] = -1.0
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative.*index 9"):
        jm.by_group(jm.roc_auc, SCORES, LABELS, groups=groups, num_groups=2, sample_weight=weights)

    def jitted(p, y, g, w):
        return jm.equalized_odds_difference(p, y, groups=g, num_groups=2, sample_weight=w)

    jitted = jax.jit(jitted)
    good = float(jitted(DECISIONS, LABELS, groups, WEIGHTS.astype(np.float32)))
    assert good == pytest.approx(
        flm.equalized_odds_difference(
            LABELS, DECISIONS, sensitive_features=groups, sample_weight=WEIGHTS
        ),
        rel=1e-6,
        abs=1e-7,  # a difference of float32 rates
    )
    out_of_range = groups.copy()
    out_of_range[3] = 2
    for bad in [
        (predictions, LABELS, groups, WEIGHTS.astype(np.float32)),
        (DECISIONS, labels, groups, WEIGHTS.astype(np.float32)),
        (DECISIONS, LABELS, out_of_range, WEIGHTS.astype(np.float32)),
        (DECISIONS, LABELS, groups, weights),
    ]:
        assert math.isnan(float(jitted(*bad)))
    values = jax.jit(lambda g: jm.by_group(jm.roc_auc, SCORES, LABELS, groups=g, num_groups=2))
    assert np.isnan(values(out_of_range).values).all()


# ----------------------------------------------------------------------------- bootstrap


def pair_count_auc(scores, labels, weights):
    """The AUC by counting weighted positive-negative pairs, a tie 1/2; NaN with one class."""
    positive, negative = weights * (labels == 1), weights * (labels == 0)
    if positive.sum() == 0 or negative.sum() == 0:
        return np.nan
    above = (scores[:, None] > scores[None, :]) + 0.5 * (scores[:, None] == scores[None, :])
    return positive @ above @ negative / (positive.sum() * negative.sum())


def test_bootstrap_is_the_stratified_bootstrap_of_each_group_and_gap():
    groups = runs(3, num_groups=3)
    key, num_resamples = jax.random.key(7), 200
    result = jm.by_group_bootstrap(
        jm.roc_auc, SCORES, LABELS, groups=groups, num_groups=3, key=key,
        num_resamples=num_resamples, sample_weight=WEIGHTS,
    )  # fmt: skip
    point = jm.by_group(
        jm.roc_auc, SCORES, LABELS, groups=groups, num_groups=3, sample_weight=WEIGHTS
    )
    for field in range(4):
        np.testing.assert_allclose(result[field].estimate, point[field], rtol=1e-6)
    # the oracle: the same resamples (drawn within each group), each scored by counting pairs
    draw = jax.jit(lambda r: jm.resample_weights(key, r, N, stratify=groups))
    draws = np.asarray(draw(jnp.arange(num_resamples)))
    masks = [groups == g for g in range(3)]
    for mask in masks:  # each group keeps its size
        assert (draws[:, mask].sum(axis=1) == mask.sum()).all()
    expected = np.array(
        [[pair_count_auc(SCORES, LABELS, w * WEIGHTS * m) for m in masks] for w in draws]
    )
    assert pair_count_auc(SCORES, LABELS, masks[0]) == pytest.approx(
        skm.roc_auc_score(LABELS[masks[0]], SCORES[masks[0]])
    )
    np.testing.assert_allclose(result.values.samples, expected, rtol=1e-5, atol=1e-6)
    difference = np.max(expected, axis=1) - np.min(expected, axis=1)  # NaN if a group is
    np.testing.assert_allclose(result.difference.samples, difference, rtol=1e-5, atol=1e-6)
    for got, samples in [(result.values, expected), (result.difference, difference)]:
        low, high = np.nanquantile(samples, [0.025, 0.975], axis=0)
        np.testing.assert_allclose(got.low, low, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got.high, high, rtol=1e-5, atol=1e-6)
    assert result.overall.samples.shape == (num_resamples,)
    assert int(result.difference.num_undefined) == int(np.isnan(difference).sum())


def test_a_second_bootstrap_of_the_same_metric_and_shapes_is_not_traced_again():
    """The resampled statistic is a value equal for the same metric and sizes, so the
    bootstrap's compiled loop is reused (a closure made at every call compiled it anew); a
    metric that cannot be hashed still works, compiled per call."""
    traced = []

    def counted_auc(scores, labels, *, sample_weight=None):
        if isinstance(scores, jax.core.Tracer):  # traced for a compiled program, not eager
            traced.append(1)
        return jm.roc_auc(scores, labels, sample_weight=sample_weight)

    groups = runs(3)
    options = dict(groups=groups, num_groups=2, num_resamples=20)
    first = jm.by_group_bootstrap(counted_auc, SCORES, LABELS, key=jax.random.key(0), **options)
    traces = len(traced)
    second = jm.by_group_bootstrap(counted_auc, SCORES, LABELS, key=jax.random.key(1), **options)
    assert traces > 0 and len(traced) == traces
    assert not np.array_equal(first.values.samples, second.values.samples)  # other resamples

    class Unhashable:
        __hash__ = None

        def __call__(self, scores, labels, *, sample_weight=None):
            return jm.roc_auc(scores, labels, sample_weight=sample_weight)

    again = jm.by_group_bootstrap(Unhashable(), SCORES, LABELS, key=jax.random.key(1), **options)
    np.testing.assert_array_equal(again.values.samples, second.values.samples)


def test_calibration_by_group_equals_each_group_fitted_alone():
    """Issue 29's "AUC/calibration by group": a calibration metric through `by_group` (its
    `.value`, a weighted metric) equals the fit on each group's rows alone."""
    rng = np.random.default_rng(29)
    probs = rng.beta(2, 3, 600)
    labels = (rng.random(600) < probs).astype(np.int32)
    groups = rng.integers(0, 3, 600)

    def slope(p, y, sample_weight):
        return jm.calibration_slope(p, y, sample_weight=sample_weight).value

    got = jm.by_group(slope, probs, labels, groups=groups, num_groups=3)
    alone = [float(slope(probs[groups == g], labels[groups == g], None)) for g in range(3)]
    np.testing.assert_allclose(got.values, alone, rtol=1e-4)
    np.testing.assert_allclose(got.difference, max(alone) - min(alone), rtol=1e-3)


def _class_probabilities(n=240, classes=3, seed=26):
    rng = np.random.default_rng(seed)
    labels = rng.integers(0, classes, n)
    logits = rng.normal(size=(n, classes))
    logits[np.arange(n), labels] += 1.0
    probs = np.exp(logits) / np.exp(logits).sum(axis=1, keepdims=True)
    return probs.astype(np.float32), labels, rng.integers(0, 3, n), rng.random(n)


def test_rows_of_class_probabilities_by_group_with_a_sample_axis():
    # `[n, C]` probabilities hold their samples along axis -2 (was refused: the arrays had to
    # share their last axis); each group's value is scikit-learn's on that group's rows
    probs, labels, groups, weights = _class_probabilities()
    oracle = [
        skm.roc_auc_score(labels[groups == g], probs[groups == g], multi_class="ovr")
        for g in range(3)
    ]
    for axis in (-2, 0):
        got = jm.by_group(
            jm.multiclass_roc_auc, probs, labels, groups=groups, num_groups=3, sample_axis=axis
        )
        np.testing.assert_allclose(got.values, oracle, rtol=1e-5)
        overall = skm.roc_auc_score(labels, probs, multi_class="ovr")
        assert float(got.overall) == pytest.approx(overall, rel=1e-5)
        assert float(got.difference) == pytest.approx(max(oracle) - min(oracle), abs=1e-5)
    weighted = jm.by_group(
        jm.multiclass_roc_auc,
        probs,
        labels,
        groups=groups,
        num_groups=3,
        sample_weight=weights,
        sample_axis=-2,
    )
    oracle = [
        skm.roc_auc_score(
            labels[groups == g],
            probs[groups == g],
            multi_class="ovr",
            sample_weight=weights[groups == g],
        )
        for g in range(3)
    ]
    np.testing.assert_allclose(weighted.values, oracle, rtol=1e-5)
    # under jit (the axis static, closed over), the same values
    jitted = jax.jit(
        lambda p, y, g: (
            jm.by_group(jm.multiclass_roc_auc, p, y, groups=g, num_groups=3, sample_axis=-2).values
        )
    )
    np.testing.assert_allclose(jitted(probs, labels, groups), got.values, rtol=1e-6)
    # the bootstrap resamples rows within each group: its estimate is by_group's
    result = jm.by_group_bootstrap(
        jm.multiclass_roc_auc,
        probs,
        labels,
        groups=groups,
        num_groups=3,
        sample_axis=-2,
        key=jax.random.key(0),
        num_resamples=40,
    )
    np.testing.assert_allclose(result.values.estimate, got.values, rtol=1e-6)
    assert result.values.samples.shape == (40, 3)
    assert np.all(result.values.low <= result.values.high)


def test_a_sample_axis_needs_one_group_and_weight_per_sample():
    probs, labels, groups, weights = _class_probabilities(n=40)

    def attempt(function=jm.by_group, **changes):
        options = {"groups": groups, "num_groups": 3, "sample_axis": -2, **changes}
        function(jm.multiclass_roc_auc, probs, labels, **options)

    with pytest.raises(ValueError, match=r"`groups` must have shape \(40,\).*got \(39,\)"):
        attempt(groups=groups[:-1])
    with pytest.raises(ValueError, match=r"`sample_weight` must have shape \(40,\).*\(2, 40\)"):
        attempt(sample_weight=np.stack([weights, weights]))
    with pytest.raises(ValueError, match=r"`sample_axis` must be an axis of `arrays\[0\]`"):
        attempt(sample_axis=2)
    with pytest.raises(TypeError, match=r"`sample_axis` must be an int; got 1.0"):
        attempt(jm.by_group_bootstrap, sample_axis=1.0, key=jax.random.key(0))
    # the last axis by default: [n, C] is refused as before, naming the arrays
    with pytest.raises(ValueError, match=r"arrays\[1\]"):
        jm.by_group(jm.multiclass_roc_auc, probs, labels, groups=groups, num_groups=3)
