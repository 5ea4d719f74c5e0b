import dataclasses
import functools
import math
import warnings

import jax
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm

SCORES = np.array([0.1, 0.4, 0.35, 0.8], np.float32)
LABELS = np.array([0, 0, 1, 1])


def test_empty_and_scalar_scores():
    with pytest.raises(ValueError, match=r"`scores` is empty"):
        jm.roc_auc(np.zeros(0, np.float32), np.zeros(0, int))
    with pytest.raises(ValueError, match=r"at least 1 dimension"):
        jm.roc_auc(0.5, 1)


def test_max_fpr_out_of_range():
    with pytest.raises(ValueError, match="`max_fpr`"):
        jm.roc_auc(SCORES, LABELS, max_fpr=0.0)


def test_nan_threshold():
    with pytest.raises(ValueError, match="`thresholds`"):
        jm.confusion_counts(SCORES, LABELS, [0.5, np.nan])


# ----------------------------------------------------------------------------- issue 11 cases


def test_a_size_one_batch_axis_is_kept():
    scores, labels = np.ones((1, 3, 8), np.float32), np.r_[np.ones(4), np.zeros(4)]
    assert jm.confusion_counts(scores, labels, 0.5).tp.shape == (1, 3)
    assert jax.jit(jm.roc_curve)(scores[0, :1], labels).fpr.shape == (1, 9)
    assert jm.roc_auc(scores[0, :1], labels).shape == (1,)
    assert jax.vmap(jm.average_precision)(scores[0, :1, None], labels[None, None]).shape == (1, 1)
    # and the NaN mark of a bad row lands on that row, not a squeezed neighbour
    bad = scores.copy()
    bad[0, 1, 3] = np.nan
    counts = jax.jit(jm.confusion_counts)(bad, labels, np.float32(0.5))
    assert np.asarray(counts.tp).tolist() == [[4, -1, 4]]


def test_a_nan_threshold_under_jit_marks_only_its_own_counts():
    scores, labels = np.array([0.1, 0.6, 0.7], np.float32), np.array([0, 1, 1])
    counts = jax.jit(jm.confusion_counts)(scores, labels, np.array([0.5, np.nan], np.float32))
    assert np.asarray(counts.tp).tolist() == [2, -1]
    assert np.isnan(np.asarray(jm.precision(counts))[1])


def test_closed_over_concrete_arrays_inside_jit():
    scores, labels = np.array([0.1, 0.6, 0.7, 0.3]), np.array([0, 1, 1, 0])
    grid = np.linspace(0.0, 1.0, 5)
    counts = jax.jit(lambda s: jm.confusion_counts(s, labels, grid))(scores)
    assert np.asarray(counts.tp).tolist() == [2, 2, 2, 0, 0]
    counts = jax.jit(lambda t: jm.confusion_counts(scores, labels, t))(grid)
    assert np.asarray(counts.tp).tolist() == [2, 2, 2, 0, 0]
    assert float(jax.jit(lambda: jm.roc_auc(scores, labels))()) == 1.0
    curve = jax.jit(lambda: jm.roc_curve(scores, labels))()
    assert float(curve.thresholds[1]) == pytest.approx(0.7)


def test_weight_totals_never_overflow_silently():
    scores, labels = np.array([0.1, 0.6, 0.7, 0.3]), np.array([0, 1, 1, 0])
    huge_int = np.full(4, 2**30, np.int32)  # total 2^32: beyond int32 counts
    with pytest.raises(ValueError, match="`sample_weight` must sum to at most"):
        jm.roc_auc(scores, labels, sample_weight=huge_int)
    assert np.isnan(float(jax.jit(jm.roc_auc)(scores, labels, sample_weight=huge_int)))
    with pytest.raises(ValueError, match="`sample_weight`"):
        jm.confusion_counts(scores, labels, 0.5, sample_weight=np.full(4, 2**32 - 1, np.uint32))
    # float weights of 1e20: every rate is scale-free, so the answer is the unweighted one
    big = np.full(4, 1e20, np.float32)
    assert float(jm.roc_auc(scores, labels, sample_weight=big)) == 1.0
    assert float(jax.jit(jm.roc_auc)(scores, labels, sample_weight=big)) == 1.0
    assert float(jm.average_precision(scores, labels, sample_weight=big)) == 1.0
    with pytest.raises(ValueError, match="float32 sums"):
        jm.roc_auc(scores, labels, sample_weight=np.full(4, 1e38, np.float32))


def test_f_beta_limits_and_weighted_average_without_support():
    counts = jm.Counts(np.array([3, 0]), np.array([1, 2]), np.array([1, 0]), np.array([3, 5]))
    np.testing.assert_array_equal(jm.f_beta(counts, beta=math.inf), jm.recall(counts))
    assert float(jm.f_beta(jm.Counts(3, 1, 1, 3), beta=1e6)) == pytest.approx(0.75)
    no_support = jm.Counts(np.array([0, 0]), np.array([1, 2]), np.array([0, 0]), np.array([3, 5]))
    expected = skm.precision_score(
        [0, 0, 0], [1, 1, 1], labels=[1], average="weighted", zero_division=0.0
    )
    assert float(jm.precision(no_support, average="weighted", zero_division=0.0)) == expected
    assert np.isnan(float(jm.precision(no_support, average="weighted")))


def test_matthews_corrcoef_of_a_marked_matrix_is_nan():
    assert np.isnan(float(jm.matthews_corrcoef(-np.ones((3, 3), np.int32))))
    assert np.isnan(float(jm.matthews_corrcoef(jm.Counts(-1, -1, -1, -1))))


def test_option_and_count_arguments():
    scores, labels = np.array([0.1, 0.6, 0.7, 0.3]), np.array([0, 1, 1, 0])
    assert float(jm.precision_at_k(scores, labels, k=np.int64(2))) == 1.0
    result = jm.bootstrap(
        jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=np.int64(20)
    )
    assert result.samples.shape == (20,)
    for bad_k in (True, 0, 1.5):
        with pytest.raises((TypeError, ValueError), match="`k`"):
            jm.precision_at_k(scores, labels, k=bad_k)
    with pytest.raises(ValueError, match="`chunk_size`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), chunk_size=0)
    with pytest.raises(ValueError, match="`confidence`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), confidence=1.5)
    with pytest.raises(TypeError, match="`key` must be a JAX PRNG key.*got int 0"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=0)
    with pytest.raises(ValueError, match="`average` must be one of"):
        jm.precision(jm.Counts(1, 1, 1, 1), average="samples")
    with pytest.raises(ValueError, match="`min_precision`"):
        jm.recall_at_precision(scores, labels, min_precision=1.5)
    with pytest.raises(ValueError, match="`cost_fn`"):
        jm.min_expected_cost(scores, labels, cost_fp=1.0, cost_fn=math.nan)


def test_paired_difference_refuses_a_missing_model(rng):
    scores = rng.normal(size=(3, 30))
    labels = (rng.random(30) < 0.5).astype(np.int32)
    labels[:2] = [0, 1]
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=20)
    with pytest.raises(ValueError, match=r"`second` must be a model index in \[0, 3\)"):
        jm.paired_difference(result, second=99)
    with pytest.raises(ValueError, match="`confidence`"):
        jm.paired_difference(result, confidence=1.5)


def test_eager_calls_reuse_one_compilation_per_bucket(rng):
    # zero-weight padding never creates a point: a padded call equals the unpadded one under jit
    from jaxmetrics._src.mesh import recipe

    for n in (5, 33, 100, 1000, 1025):
        assert recipe.bucket_size(n) >= n and recipe.bucket_size(n) <= max(32, 1.25 * n)
    scores = np.round(rng.normal(size=77), 1).astype(np.float32)
    labels = (rng.random(77) < 0.4).astype(np.int32)
    for metric in (jm.roc_auc, jm.average_precision, jm.roc_curve, jm.precision_recall_curve):
        eager, jitted = metric(scores, labels), jax.jit(metric)(scores, labels)
        for a, b in zip(jax.tree_util.tree_leaves(eager), jax.tree_util.tree_leaves(jitted)):
            np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


NUMBER_OPTIONS = {  # (call with the option, its name): each takes a real number
    "beta": lambda v: jm.max_f_beta(SCORES, LABELS, beta=v),
    "f_beta": lambda v: jm.f_beta(jm.confusion_counts(SCORES, LABELS, [0.5]), beta=v),
    "max_fpr": lambda v: jm.roc_auc(SCORES, LABELS, max_fpr=v),
    "zero_division": lambda v: jm.precision(
        jm.confusion_counts(SCORES, LABELS, [0.5]), zero_division=v
    ),
    "confidence": lambda v: jm.wilson_interval(3, 10, confidence=v),
    "delong": lambda v: jm.delong(SCORES, LABELS, confidence=v),
    "cost_fp": lambda v: jm.min_expected_cost(SCORES, LABELS, cost_fp=v, cost_fn=2.0),
    "bayes": lambda v: jm.bayes_threshold(cost_fp=v, cost_fn=2.0),
    "min_precision": lambda v: jm.recall_at_precision(SCORES, LABELS, min_precision=v),
    "min_specificity": lambda v: jm.sensitivity_at_specificity(SCORES, LABELS, min_specificity=v),
}


@pytest.mark.parametrize("name", list(NUMBER_OPTIONS))
def test_number_options_refuse_bools_and_strings(name):
    """`float("0.5")` and `True >= 0` read them as numbers: they were accepted (issue 25, 12)."""
    call = NUMBER_OPTIONS[name]
    for bad in (True, "0.5"):
        with pytest.raises(TypeError, match=rf"must be a (Python )?number; got {bad!r}"):
            call(bad)
    # a concrete scalar array is the number it holds
    first = lambda result: np.ravel(jax.tree.leaves(result)[0])  # noqa: E731
    np.testing.assert_array_equal(first(call(np.float32(0.5))), first(call(0.5)))


def test_a_static_number_option_refuses_a_traced_value():
    with pytest.raises(TypeError, match="`min_specificity` must be a Python number .* traced"):
        jax.jit(lambda v: jm.sensitivity_at_specificity(SCORES, LABELS, min_specificity=v))(0.5)
    # `zero_division` is traced into its program: a traced value works
    counts = jm.confusion_counts(SCORES, LABELS, [0.95])  # nothing flagged: 0 / 0
    assert float(jax.jit(lambda z: jm.precision(counts, zero_division=z))(0.25)[0]) == 0.25


@pytest.mark.parametrize("average", ["micro", "samples", "macro", "weighted"])
def test_multilabel_averages_name_a_wrong_sample_axis(average):
    scores = np.random.default_rng(0).random((3, 8))
    labels = (scores > 0.5).astype(int)
    with pytest.raises(ValueError, match=r"`sample_weight` must have the same number of samples"):
        jm.roc_auc(scores, labels, average=average, sample_weight=np.ones(5))
    with pytest.raises(ValueError, match=r"`labels` must have the same number of samples"):
        jm.average_precision(scores, labels[:, :5], average=average)


def test_empty_class_probabilities_are_named_in_their_own_layout():
    for function in (jm.multiclass_roc_auc, jm.multiclass_average_precision):
        with pytest.raises(ValueError, match=r"`probs` is empty.*got shape \(0, 3\)"):
            function(np.zeros((0, 3)), np.zeros(0, int))
    with pytest.raises(ValueError, match=r"`probs` is empty"):
        jm.top_k_accuracy(np.zeros((0, 3)), np.zeros(0, int), k=1)


def test_labels_first_in_scikit_learns_order_is_warned_once(monkeypatch):
    """`jm.roc_auc(y, hard_predictions)` is valid input in the wrong order: both arrays are 0/1
    integers, and it gave 0.667 for 0.705 without a word (issue 25, item 14)."""
    from jaxmetrics._src.core import validation

    monkeypatch.setattr(validation, "_swap_warned", False)
    labels = np.array([0, 1, 1, 0, 1, 0, 0, 1])
    hard = np.array([0, 1, 0, 0, 1, 1, 0, 1])
    with pytest.warns(UserWarning, match="jaxmetrics takes f\\(scores, labels\\)") as record:
        jm.roc_auc(labels, hard)
    assert record[0].filename == __file__  # points at the caller's line
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        jm.roc_auc(labels, hard)  # once a process
        monkeypatch.setattr(validation, "_swap_warned", False)
        jm.roc_auc(hard.astype(np.float32), labels)  # float scores are never suspected
    with pytest.raises(ValueError, match=r"found 2 at index 0\. \(The scores come first"):
        jm.average_precision(np.array([0.0, 1, 1, 0]), np.array([2, 1, 1, 0]))


def test_the_one_check_raises_eagerly_and_marks_each_batch_element_under_jit():
    """`checks.check` owns the regimes: a known bad value raises naming the argument, the value
    and its index; traced, the same rule gives one flag per batch element."""
    from jaxmetrics._src.core import checks

    labels = np.array([[0, 1, 1], [1, 2, 0]])
    with pytest.raises(
        ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index \(1, 1\)\.$"
    ):
        checks.check(labels, "labels", checks.BINARY)
    flags = jax.jit(lambda v: checks.check(v, "labels", checks.BINARY))(labels)
    assert np.asarray(flags).tolist() == [False, True]
    # a scalar has no index; an option says what it got
    with pytest.raises(ValueError, match=r"`auc` must be in \[0, 1\]; found 1\.5\.$"):
        checks.check(1.5, "auc", checks.UNIT_INTERVAL, sample_axes=0)
    with pytest.raises(ValueError, match=r"`margin` must be finite; got inf\.$"):
        checks.check(math.inf, "margin", checks.FINITE_VALUE, sample_axes=0, option=True)
    # a row whose integer weights overflow int32 counts is named by its row
    weights = np.array([[1, 1], [2**30, 2**30]], np.int32)
    total = r"int32 counts.*found a total of 2\.14748e\+09 at index 1\.$"
    with pytest.raises(ValueError, match=total):
        checks.check_weights(weights)


# ----------------------------------------------------------------------------- issue 28: shapes
# A sample axis of length 1 under batch axes is n one-sample rows, never what was meant: every
# binary metric raises at trace time, naming the shape, the rule and the fix. One wording names
# every shape; [n, C] class scores get the multiclass function's name.

ONE_COLUMN = r"`scores` has shape \(40, 1\); samples lie on the last axis, leading axes are batch"


@pytest.mark.parametrize(
    "metric",
    [
        jm.roc_auc,
        jm.average_precision,
        jm.roc_curve,
        jm.precision_recall_curve,
        lambda s, y: jm.confusion_counts(s, y, [0.5]),
        lambda s, y: jm.precision_at_k(s, y, k=3),
        lambda s, y: jm.max_f_beta(s, y),
    ],
)
def test_one_column_of_scores_raises_eagerly_and_under_jit(metric):
    rng = np.random.default_rng(1)
    scores, labels = rng.random(40).astype(np.float32), (rng.random(40) < 0.5).astype(np.int32)
    for call in (metric, jax.jit(metric)):
        with pytest.raises(
            ValueError, match=ONE_COLUMN + r".*pass `scores\[\.\.\., 0\]`, shape \(40,\)"
        ):
            call(scores[:, None], labels)
        with pytest.raises(ValueError, match=r"`labels` has shape \(40, 1\)"):
            call(scores, labels[:, None])
    assert np.asarray(metric(scores, labels)).size > 0  # one column as [n]: fine


def test_class_scores_given_to_a_binary_metric_name_the_multiclass_function():
    rng = np.random.default_rng(2)
    probs = rng.dirichlet(np.ones(3), 30).astype(np.float32)
    labels = rng.integers(0, 2, 30)
    same = r"`labels` must have the same number of samples \(the last axis\) as `scores`: "
    shapes = r"`labels` has shape \(30,\), `scores` has shape \(30, 3\); samples lie on the last"
    for metric, multiclass in (
        (jm.roc_auc, "multiclass_roc_auc"),
        (jm.average_precision, "multiclass_average_precision"),
        (lambda s, y: jm.confusion_counts(s, y, 0.5), "confusion_matrix"),
    ):
        with pytest.raises(ValueError, match=same + shapes + r".*is binary.*" + multiclass):
            metric(probs, labels)
    with pytest.raises(ValueError, match=r"`roc_auc` is binary.*`scores\[\.\.\., 1\]`"):
        jax.jit(jm.roc_auc)(probs[:, :2], labels)
    # a plain mismatch keeps the plain wording, with both shapes and the rule
    with pytest.raises(ValueError, match=same + r"`labels` has shape \(5,\), `scores` has shape"):
        jm.roc_auc(probs[:, 0], labels[:5])


def test_bootstrap_says_a_metric_must_take_sample_weight():
    key = jax.random.key(0)

    def unweighted(scores, labels):
        return (scores * labels).mean()

    message = (
        r"`metric` must take a keyword argument `sample_weight`; `unweighted\(scores, labels\)` "
        r"does not\. The bootstrap resamples by weights"
    )
    with pytest.raises(TypeError, match=message):
        jm.bootstrap(unweighted, SCORES, LABELS, key=key, num_resamples=10)
    # a `sample_weight` keyword, **options, or a partial of a metric: accepted

    def weighted_mean(scores, labels, **options):
        weights = options["sample_weight"]
        return (scores * labels * weights).sum() / weights.sum()

    result = jm.bootstrap(weighted_mean, SCORES, LABELS, key=key, num_resamples=10)
    assert float(result.estimate) == pytest.approx(float((SCORES * LABELS).mean()))
    partial = functools.partial(jm.roc_auc, max_fpr=0.5)
    result = jm.bootstrap(partial, SCORES, LABELS, key=key, num_resamples=10)
    assert float(result.estimate) == pytest.approx(skm.roc_auc_score(LABELS, SCORES, max_fpr=0.5))


@dataclasses.dataclass
class _Unhashable:  # eq=True without frozen=True: Python sets __hash__ to None
    max_fpr: float = 0.5

    def __call__(self, scores, labels, sample_weight=None):
        return jm.roc_auc(scores, labels, max_fpr=self.max_fpr, sample_weight=sample_weight)


@dataclasses.dataclass(frozen=True)
class _Frozen:
    max_fpr: float = 0.5

    def __call__(self, scores, labels, sample_weight=None):
        return jm.roc_auc(scores, labels, max_fpr=self.max_fpr, sample_weight=sample_weight)


def test_a_metric_need_not_hash_but_must_be_callable():
    # was: `bootstrap` and `by_group` failed on a metric that does not hash (JAX's
    # "Non-hashable static arguments are not supported", from inside the loop), and on a number
    # with "'int' object is not callable", naming no argument; `by_group_bootstrap` already
    # compiled an unhashable metric per call
    key, groups = jax.random.key(0), np.arange(SCORES.size) % 2
    calls = {
        "bootstrap": lambda m: jm.bootstrap(m, SCORES, LABELS, key=key, num_resamples=10),
        "by_group": lambda m: jm.by_group(m, SCORES, LABELS, groups=groups, num_groups=2),
        "by_group_bootstrap": lambda m: jm.by_group_bootstrap(
            m, SCORES, LABELS, groups=groups, num_groups=2, key=key, num_resamples=10
        ),
    }
    for name, call in calls.items():
        with pytest.raises(TypeError, match=r"`metric` must be a function .*got 42 of type int"):
            call(42)
        unhashable, frozen = _Unhashable(), _Frozen()
        expected = jax.tree.leaves(call(frozen))
        for got in (call(unhashable), call(unhashable)):  # compiled per call, the same numbers
            for a, b in zip(jax.tree.leaves(got), expected, strict=True):
                np.testing.assert_array_equal(a, b, err_msg=name)
        unhashable.max_fpr = 1.0  # changed in place: its next call is not served the old program
        changed = jax.tree.leaves(call(unhashable))
        full = jax.tree.leaves(call(_Frozen(max_fpr=1.0)))
        for a, b in zip(changed, full, strict=True):
            np.testing.assert_array_equal(a, b, err_msg=name)
    result = calls["bootstrap"](_Frozen())
    assert float(result.estimate) == pytest.approx(skm.roc_auc_score(LABELS, SCORES, max_fpr=0.5))
