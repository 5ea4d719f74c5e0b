# ruff: noqa: E501  (the registry keeps one metric a line)
"""Checks shared by every metric, run over one registry (as scikit-learn's test_common).

Each public metric of samples is listed once in `METRICS` with its properties; every check
below runs over all the metrics that have the property it needs. Adding a metric means adding
one line. Bad-value checks (errors eagerly, NaN under jit and vmap, closed-over constants, x64)
run over the same public functions in test_bad_input.py; what is specific to a metric (its
reference values) stays in the test module of its source module.

Properties:
  kind: the inputs: "binary" (scores, labels), "probs" (probabilities, labels), "classes"
    (predicted and true class indices), "class_probs" (``[n, C]`` scores, class indices);
  weighted: takes `sample_weight`;
  sort_based: depends on the scores only through their order and ties (invariant to any
    increasing transform of them; exact on float64 input when called eagerly);
  per_point: returns a fixed-length curve with a `valid` mask (compared on its valid points);
  score_valued: fields that hold score values (thresholds), which change with the scores.
"""

from __future__ import annotations

import dataclasses
import functools
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm


@dataclasses.dataclass(frozen=True)
class Metric:
    call: Callable[..., Any]
    kind: str = "binary"
    weighted: bool = True
    sort_based: bool = True
    per_point: bool = False
    score_valued: tuple[str, ...] = ()


GRID = np.array([0.2, 0.45, 0.7], np.float32)

# fmt: off
METRICS = {
    "roc_auc": Metric(jm.roc_auc),
    "partial_roc_auc": Metric(functools.partial(jm.roc_auc, max_fpr=0.4)),
    "average_precision": Metric(jm.average_precision),
    "partial_roc_auc[fpr_range]": Metric(functools.partial(jm.partial_roc_auc, fpr_range=(0.1, 0.5))),
    "partial_roc_auc[tpr_range, corrected]": Metric(functools.partial(jm.partial_roc_auc, tpr_range=(0.6, 1.0), correct=True)),
    "roc_curve": Metric(jm.roc_curve, per_point=True, score_valued=("thresholds",)),
    "precision_recall_curve": Metric(jm.precision_recall_curve, per_point=True, score_valued=("thresholds",)),
    "precision_at_k": Metric(functools.partial(jm.precision_at_k, k=5)),
    "confusion_counts": Metric(lambda s, y, **kw: jm.confusion_counts(s, y, GRID, **kw), sort_based=False),
    "max_f_beta": Metric(jm.max_f_beta, score_valued=("threshold",)),
    "recall_at_precision": Metric(functools.partial(jm.recall_at_precision, min_precision=0.6), score_valued=("threshold",)),
    "precision_at_recall": Metric(functools.partial(jm.precision_at_recall, min_recall=0.6), score_valued=("threshold",)),
    "youden_threshold": Metric(jm.youden_threshold, score_valued=("threshold",)),
    "closest_to_corner_threshold": Metric(jm.closest_to_corner_threshold, score_valued=("threshold",)),
    "sensitivity_at_specificity": Metric(functools.partial(jm.sensitivity_at_specificity, min_specificity=0.7), score_valued=("threshold",)),
    "specificity_at_sensitivity": Metric(functools.partial(jm.specificity_at_sensitivity, min_sensitivity=0.7), score_valued=("threshold",)),
    "min_expected_cost": Metric(functools.partial(jm.min_expected_cost, cost_fp=1.0, cost_fn=3.0), score_valued=("threshold",)),
    "brier_score": Metric(jm.brier_score, kind="probs", sort_based=False),
    "log_loss": Metric(jm.log_loss, kind="probs", sort_based=False),
    "expected_calibration_error": Metric(functools.partial(jm.expected_calibration_error, num_bins=4), kind="probs", sort_based=False),
    "reliability_table": Metric(functools.partial(jm.reliability_table, num_bins=4), kind="probs", sort_based=False),
    "calibration_intercept": Metric(jm.calibration_intercept, kind="probs", sort_based=False),
    "calibration_slope": Metric(jm.calibration_slope, kind="probs", sort_based=False),
    "spiegelhalter_test": Metric(jm.spiegelhalter_test, kind="probs", sort_based=False),
    "hosmer_lemeshow_test": Metric(functools.partial(jm.hosmer_lemeshow_test, num_groups=4), kind="probs", sort_based=False),
    "debiased_calibration_error": Metric(functools.partial(jm.debiased_calibration_error, num_bins=4), kind="probs", sort_based=False),
    "net_benefit": Metric(functools.partial(jm.net_benefit, thresholds=GRID), kind="probs", sort_based=False),
    "confusion_matrix": Metric(functools.partial(jm.confusion_matrix, num_classes=3), kind="classes", sort_based=False),
    "top_k_accuracy": Metric(functools.partial(jm.top_k_accuracy, k=2), kind="class_probs", sort_based=False),
    "multiclass_roc_auc": Metric(jm.multiclass_roc_auc, kind="class_probs", weighted=True, sort_based=False),
    "multiclass_average_precision": Metric(jm.multiclass_average_precision, kind="class_probs", sort_based=False),
    # retrieval: a score vector is one query's items; weights there are a 0/1 item mask only
    "reciprocal_rank": Metric(jm.reciprocal_rank, weighted=False),
    "recall_at_k": Metric(functools.partial(jm.recall_at_k, k=5), weighted=False),
    "hit_rate_at_k": Metric(functools.partial(jm.hit_rate_at_k, k=3), weighted=False),
    "average_precision_at_k": Metric(functools.partial(jm.average_precision_at_k, k=5), weighted=False),
    "r_precision": Metric(jm.r_precision, weighted=False),
    "ndcg": Metric(functools.partial(jm.ndcg, k=10), weighted=False),
    # label ranking: a score vector is one sample's label scores ([n, L] with n = 1)
    "label_ranking_average_precision": Metric(lambda s, y: jm.label_ranking_average_precision(s[..., None, :], y[..., None, :])[..., 0], weighted=False),
    "coverage_error": Metric(lambda s, y: jm.coverage_error(s[..., None, :], y[..., None, :])[..., 0], weighted=False),
    "label_ranking_loss": Metric(lambda s, y: jm.label_ranking_loss(s[..., None, :], y[..., None, :])[..., 0], weighted=False),
}
# fmt: on


def _having(prop: str) -> list[str]:
    return sorted(name for name, metric in METRICS.items() if getattr(metric, prop))


def problem(rng: np.random.Generator, kind: str, n: int = 40, batch: tuple = ()) -> tuple:
    """Good inputs of a kind, with ties, and positive weights of the same shape as the first."""
    shape = (*batch, n)
    if kind in ("binary", "probs"):
        labels = (rng.random(shape) < 0.45).astype(np.int32)
        labels[..., :2] = [0, 1]
        if kind == "binary":
            first = (np.round(rng.normal(size=shape) + labels, 1) / 2 + 0.5).astype(np.float32)
        else:
            first = np.round(rng.uniform(0.02, 0.98, shape), 2).astype(np.float32)
    elif kind == "classes":
        labels = rng.integers(0, 3, shape).astype(np.int32)
        first = np.where(rng.random(shape) < 0.6, labels, rng.integers(0, 3, shape))
        first = first.astype(np.int32)
    else:
        labels = rng.integers(0, 3, shape).astype(np.int32)
        labels[..., :3] = [0, 1, 2]
        first = np.round(rng.dirichlet(np.ones(3), shape), 1).astype(np.float32)
    weights = rng.integers(1, 4, shape).astype(np.float32)
    return first, labels, weights


def leaves(result: Any) -> list[np.ndarray]:
    return [np.asarray(leaf) for leaf in jax.tree_util.tree_leaves(result)]


def assert_same(first: Any, second: Any, *, skip: tuple[str, ...] = (), atol: float = 1e-6):
    """Equal results; curves compared on their valid points, `skip` fields left out."""
    if hasattr(first, "_fields"):
        valid = getattr(first, "valid", None)
        for field in first._fields:
            if field in skip or field == "valid":
                continue
            a, b = np.asarray(getattr(first, field)), np.asarray(getattr(second, field))
            if valid is not None:
                a, b = a[np.asarray(valid)], b[np.asarray(second.valid)]
            np.testing.assert_allclose(a, b, atol=atol, err_msg=field)
        return
    for a, b in zip(leaves(first), leaves(second), strict=True):
        np.testing.assert_allclose(a, b, atol=atol)


def _call(metric: Metric, inputs: tuple, weighted: bool) -> Any:
    first, labels, weights = inputs
    if weighted and metric.weighted:
        return metric.call(first, labels, sample_weight=weights)
    return metric.call(first, labels)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_eager_jit_and_vmap_agree(rng, name):
    metric = METRICS[name]
    inputs = problem(rng, metric.kind, batch=(2,))
    eager = _call(metric, inputs, weighted=True)
    jitted = jax.jit(lambda *xs: _call(metric, xs, weighted=True))(*inputs)
    mapped = jax.vmap(lambda *xs: _call(metric, xs, weighted=True))(*inputs)
    rows = [_call(metric, tuple(x[i] for x in inputs), weighted=True) for i in range(2)]
    assert_same(eager, jitted)
    assert_same(eager, mapped)
    for i, row in enumerate(rows):
        assert_same(jax.tree_util.tree_map(lambda leaf, i=i: leaf[i], eager), row)


@pytest.mark.parametrize("name", _having("weighted"))
def test_zero_weight_samples_equal_their_removal(rng, name):
    metric = METRICS[name]
    first, labels, weights = problem(rng, metric.kind)
    extra = problem(rng, metric.kind, n=5)
    padded = tuple(np.concatenate([a, b]) for a, b in zip((first, labels, weights), extra))
    padded[2][-5:] = 0
    assert_same(_call(metric, (first, labels, weights), True), _call(metric, padded, True))


@pytest.mark.parametrize("name", sorted(METRICS))
def test_invariant_to_sample_order(rng, name):
    metric = METRICS[name]
    inputs = problem(rng, metric.kind)
    permutation = rng.permutation(inputs[1].shape[-1])
    permuted = tuple(x[permutation] for x in inputs)
    assert_same(_call(metric, inputs, True), _call(metric, permuted, True))


@pytest.mark.parametrize("name", _having("sort_based"))
def test_sort_based_metrics_see_only_the_order(rng, name):
    metric = METRICS[name]
    scores, labels, weights = problem(rng, metric.kind)
    expected = _call(metric, (scores, labels, weights), True)
    # an increasing transform changes every value but no order or tie
    stretched = (np.exp(3 * scores) - 7).astype(np.float32)
    assert_same(
        expected, _call(metric, (stretched, labels, weights), True), skip=metric.score_valued
    )
    # float64 scores that float32 would merge keep their order when called eagerly
    near = 0.25 + scores.astype(np.float64) * 1e-9
    assert_same(expected, _call(metric, (near, labels, weights), True), skip=metric.score_valued)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_a_size_one_batch_axis_is_kept(rng, name):
    metric = METRICS[name]
    inputs = problem(rng, metric.kind, batch=(1,))
    one = _call(metric, inputs, True)
    single = _call(metric, tuple(x[0] for x in inputs), True)
    for a, b in zip(leaves(one), leaves(single), strict=True):
        assert a.shape == (1, *b.shape)


@pytest.mark.parametrize("name", sorted(METRICS))
def test_shape_and_dtype_errors_raise_even_under_jit(rng, name):
    metric = METRICS[name]
    first, labels, weights = problem(rng, metric.kind)
    with pytest.raises(ValueError, match=r"`(labels|relevance)` must (have|hold) "):
        jax.jit(lambda a, b: _call(metric, (a, b, weights), False))(first, labels[:-1])
    with pytest.raises(TypeError, match=r"`(labels|relevance)` must hold"):
        jax.jit(lambda a, b: _call(metric, (a, b, weights), False))(first, labels * 1j)
    if metric.kind in ("binary", "probs"):
        with pytest.raises(ValueError, match=r"batch axes"):
            _call(metric, (np.stack([first] * 2), np.stack([labels] * 3), weights), False)


def test_every_public_metric_of_samples_is_registered():
    # functions of samples: first argument scores/probs/predictions and a `labels` argument
    import inspect

    registered = {
        getattr(m.call, "func", m.call) for m in METRICS.values() if not _is_lambda(m.call)
    }
    registered |= {jm.confusion_counts}
    exempt = {
        jm.delong,  # [M, n] with labels [n] and no weights: its own tests (test_intervals.py)
        jm.delong_test,
        jm.delong_test_unpaired,  # two data sets: test_proc_statistics.py
        jm.delong_power,  # [2, n] model pairs: test_proc_statistics.py
        jm.delong_sample_size,
        jm.venkatraman_test,  # permutation tests of two models: test_comparisons.py
        jm.venkatraman_test_unpaired,
        jm.reliability_bins,  # reliability_table plus intervals: test_calibration.py
        jm.decision_curve,  # net_benefit and its references (treat-all): test_decision.py
        jm.equalized_odds_difference,  # 0/1 decisions and groups, not scores: test_groups.py
        jm.equalized_odds_ratio,
        jm.equal_opportunity_difference,
        jm.equal_opportunity_ratio,
        jm.multiclass_log_loss,  # rows of probabilities summing to 1, not class scores:
        jm.multiclass_brier_score,  # test_multiclass_calibration.py
        jm.budget_threshold,  # takes no labels
        jm.roc_band,  # a bootstrap of sensitivity_at_specificity: test_operating_points.py
        jm.mean_absolute_error,  # regression: predictions and targets, test_regression.py
        jm.root_mean_squared_error,
        jm.r2_score,
        jm.classification_report,  # built from confusion_matrix and the rates
        jm.label_ranking_average_precision,  # registered through a one-sample wrapper above
        jm.coverage_error,
        jm.label_ranking_loss,
    }
    for name in jm.__all__:
        function = getattr(jm, name)
        if not inspect.isfunction(function) or function in exempt:
            continue
        parameters = list(inspect.signature(function).parameters)
        if len(parameters) >= 2 and parameters[1] == "labels":
            assert function in registered, f"register {name} in METRICS"


def _is_lambda(call: Callable) -> bool:
    return getattr(call, "__name__", "") == "<lambda>"


def test_padding_to_a_bucket_is_invisible(rng):
    # eager calls pad the samples with zero weights to a bucket size (one compilation per
    # bucket): the result equals the jitted call on the unpadded arrays (to rounding: the
    # unweighted AUC uses midranks, the padded one weighted prefix sums)
    scores, labels, _ = problem(rng, "binary", n=77)
    for name in ("roc_auc", "average_precision", "roc_curve", "max_f_beta"):
        eager = METRICS[name].call(scores, labels)
        jitted = jax.jit(METRICS[name].call)(jnp.asarray(scores), jnp.asarray(labels))
        assert_same(eager, jitted)


def test_the_xla_kernels_give_the_same_results(rng, monkeypatch):
    # `jm.xla_kernels()` forces the GPU/TPU branch (XLA's sort, scans and scatter) on this CPU:
    # every registered metric, DeLong and a bootstrap equal the default (host-callback) branch
    from jaxmetrics._src.core import sorting
    from jaxmetrics._src.stats import resampling

    cases = {name: problem(rng, metric.kind, batch=(2,)) for name, metric in METRICS.items()}
    scores, labels, _ = problem(rng, "binary", n=60)
    models = np.stack([scores, np.round(scores + rng.normal(0, 0.2, 60), 1)])

    def registry(cases):
        return {name: _call(metric, cases[name], weighted=True) for name, metric in METRICS.items()}

    def everything():
        # one program for the whole registry: one compilation per branch. A function the user
        # jitted keeps the branch it was traced with (xla_kernels clears no cache, and JAX keys
        # traces by the Python function), so each call jits a new one; jaxmetrics' own
        # programs are keyed by the branch
        results = jax.jit(lambda c: registry(c))(cases)
        results["delong"] = jm.delong(models, labels)
        results["bootstrap"] = jm.bootstrap(
            jm.roc_auc, scores, labels, key=jax.random.key(3), num_resamples=20
        )
        return results

    expected = everything()

    def no_callback(*args, **kwargs):
        raise AssertionError("a host callback ran under xla_kernels")

    with jm.xla_kernels():
        monkeypatch.setattr(sorting, "_host_rank", no_callback)
        monkeypatch.setattr(sorting, "_host_cumulative", no_callback)
        monkeypatch.setattr(resampling, "_bincount_host", no_callback)
        forced = everything()
        lowered = jax.jit(jm.roc_auc).lower(scores, labels).as_text()
    assert "callback" not in lowered
    for name in expected:
        assert_same(expected[name], forced[name], atol=1e-5)


def test_dir_lists_the_public_names_alone():
    """`dir(jaxmetrics)` (tab completion) lists the public API, its version and the public
    submodules imported so far; it listed `importlib`, `TYPE_CHECKING` and the loader too."""
    extra = set(dir(jm)) - set(jm.__all__)
    assert extra <= {"__version__", "losses", "streaming", "nnx", "report"}, extra


def test_the_package_loads_its_names_on_first_use():
    """`import jaxmetrics` leaves JAX unloaded; the first public name loads them all."""
    script = """
import sys
import jaxmetrics
assert "jax" not in sys.modules, "import jaxmetrics imported JAX"
print(jaxmetrics.__version__)
from jaxmetrics import *
assert "jax" in sys.modules and float(roc_auc([0.2, 0.8], [0, 1])) == 1.0
assert jaxmetrics.losses.__name__ == "jaxmetrics.losses" and "bootstrap" in dir(jaxmetrics)
import jaxmetrics._api as api
assert set(api.__all__) <= set(dir(jaxmetrics)) and jaxmetrics.__all__ == api.__all__
try:
    jaxmetrics.no_such_metric
except AttributeError as error:
    assert "no_such_metric" in str(error)
else:
    raise AssertionError("no AttributeError")
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == jm.__version__


def test_a_first_use_inside_jit_leaves_eager_calls_eager():
    """The library's modules load on the first use of a public name: when that use was inside
    a `jax.jit` trace, the kernels took that trace for "not tracing", and every later rate
    under jit failed ("`compiler_options` can only be passed to top-level `jax.jit`"), while
    eager calls were compiled as if traced."""
    script = """
import jax, numpy as np
import jaxmetrics as jm
c = np.array([3, 1], np.int32)
rate = jax.jit(lambda c: jm.accuracy(jm.Counts(c, c, c, c)))
print(rate(c).tolist(), jm.accuracy(jm.Counts(c, c, c, c)).tolist(), rate(c + 1).tolist())
from jaxmetrics._src.core import kernels
print(kernels.trace_state_clean(), jax.jit(lambda x: x * kernels.trace_state_clean())(1.0))
"""
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[0.5, 0.5] [0.5, 0.5] [0.5, 0.5]", "True 0.0"]


def test_xla_kernels_refuses_a_non_boolean():
    with pytest.raises(TypeError, match="enabled must be True or False, got 'yes'"):
        with jm.xla_kernels("yes"):
            pass
