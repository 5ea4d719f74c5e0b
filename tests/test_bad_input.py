# ruff: noqa: E501  (the tables keep one function a line)
"""Bad input, everywhere: one registry of every public function, the same checks over all.

The spec's rule ("bad input gets a clear error, never a silently wrong number"), checked for each
function of `jaxmetrics.__all__`, `jaxmetrics.losses` and `jaxmetrics.streaming`:

(a) eagerly, a bad value (NaN/inf score, label 2, class index C, negative/NaN weight, ...) raises
    `ValueError` naming the argument in backticks and the index where it was found; a count
    carrying the -1 marker (the output of a bad input under jit) is not an error but gives NaN;
(b) under `jax.jit`, on a batch of two rows (row 0 good, row 1 bad), row 1's results are NaN (or
    -1 counts) and row 0's equal those of an all-good batch;
(c) the same under `jax.vmap`, (d) run with x64 on and float64 inputs: results are float64;
(e) closed-over concrete arrays (float64, x64 off) inside `jax.jit` work, equal the call with
    arguments, and keep a batch axis of size 1.

Each row of `CASES` is one function: how to call it with good inputs (`family`: the positional
arguments and their roles), and which arguments can hold bad values (`bad`, all by default).
Compilations dominate the run time, so each case is compiled three times in all: (b), (c)+(d)
and (e), and (e) reuses (b)'s compilation for its reference (one test runs (b) and (e)).
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import logging
import re
from collections.abc import Callable
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm
import jaxmetrics.losses as jl
from jaxmetrics import streaming

# ------------------------------------------------------------------------------ good inputs
_rng = np.random.default_rng(2026)
N = 12
LABELS = np.array([0, 1, 1, 0, 1, 0, 0, 1, 1, 0, 1, 0], np.int32)
SCORES = (_rng.permutation(N) / 4 + LABELS).astype(np.float32)
TARGETS = _rng.normal(size=N).astype(np.float32)
PROBS = _rng.uniform(0.05, 0.95, N).astype(np.float32)
WEIGHTS = _rng.uniform(0.5, 2.0, N).astype(np.float32)
CLASSES = np.array([0, 1, 2] * 4, np.int32)
PREDICTED = np.array([0, 1, 1, 0, 2, 2, 0, 1, 2, 1, 1, 2], np.int32)
CLASS_PROBS = _rng.dirichlet(np.ones(3), N).astype(np.float32)
COUNTS = jm.Counts(*(np.int32(c) for c in (3, 1, 2, 4)))
FOLDS = jm.Counts(*(np.array(c, np.int32) for c in ([3, 1, 2], [1, 0, 2], [2, 1, 0], [4, 5, 3])))
MATRIX = np.array([[3, 1, 0], [1, 2, 1], [0, 1, 3]], np.int32)
MASK = np.array([1, 1, 1, 1, 0, 1, 1, 1, 0, 1, 1, 1], np.float32)  # an item mask (retrieval)
RELEVANCE = np.array([0, 2, 1, 0, 3, 0, 0, 1, 2, 0, 1, 0], np.float32)
SCORE_MATRIX = SCORES.reshape(4, 3)  # [n, L]: labels ranked within each sample
LABEL_MATRIX = np.array([[1, 0, 0], [0, 1, 1], [1, 1, 0], [0, 0, 1]], np.int32)
MASK_MATRIX = np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1], [1, 1, 1]], np.float32)
MULTI_SCORES = _rng.permutation(4 * N).reshape(4, N).astype(np.float32)  # [L, n]
MULTI_LABELS = np.stack([LABELS, 1 - LABELS, LABELS[::-1], 1 - LABELS[::-1]])
MULTI_PROBS = ((_rng.permutation(4 * N) + 0.5) / (4 * N)).reshape(4, N).astype(np.float32)
POSITIVE_IDS = np.maximum(np.cumsum(LABELS) - 1, 0).astype(np.int32)  # SOAP's ids
KEY = jax.random.key(0)
GROUPS = np.array([0, 1] * 6, np.int32)  # two groups, each with both classes
STATE = jl.AucMarginState(jnp.float32(0.7), jnp.float32(0.3), jnp.float32(0.1))

# A family is the positional arguments of a call: (name, role, good value of one batch element).
FAMILIES = {
    "binary": (("scores", "score", SCORES), ("labels", "label", LABELS), ("sample_weight", "weight", WEIGHTS)),
    "scores_labels": (("scores", "score", SCORES), ("labels", "label", LABELS)),
    "scores": (("scores", "score", SCORES),),
    "logits": (("logits", "score", SCORES), ("labels", "label", LABELS), ("sample_weight", "weight", WEIGHTS)),
    "probs": (("probs", "prob", PROBS), ("labels", "label", LABELS), ("sample_weight", "weight", WEIGHTS)),
    "probs_labels": (("probs", "prob", PROBS), ("labels", "label", LABELS)),
    "regression": (("predictions", "score", SCORES), ("targets", "score", TARGETS)),
    "decisions": (("predictions", "label", LABELS[::-1].copy()), ("labels", "label", LABELS), ("sample_weight", "weight", WEIGHTS)),
    "decisions_only": (("predictions", "label", LABELS[::-1].copy()), ("sample_weight", "weight", WEIGHTS)),
    "classes": (("predictions", "class", PREDICTED), ("labels", "class", CLASSES), ("sample_weight", "weight", WEIGHTS)),
    "class_probs": (("probs", "score", CLASS_PROBS), ("labels", "class", CLASSES), ("sample_weight", "weight", WEIGHTS)),
    "class_probs_labels": (("probs", "score", CLASS_PROBS), ("labels", "class", CLASSES)),
    "counts": (("counts", "count", COUNTS),),
    "folds": (("counts", "count", FOLDS),),
    "matrix": (("matrix", "count", MATRIX),),
    "proportions": (("successes", "successes", np.int32(3)), ("trials", "trials", np.int32(8))),
    "hanley": (("auc", "auc", np.float32(0.8)), ("num_positive", "class_size", np.int32(10)), ("num_negative", "class_size", np.int32(12))),
    "values": (("values", "score", SCORES), ("sample_weight", "weight", WEIGHTS)),
    "multilabel": (("scores", "score", MULTI_SCORES), ("labels", "label", MULTI_LABELS), ("sample_weight", "weight", np.tile(WEIGHTS, (4, 1)))),
    "multilabel_probs": (("probs", "prob", MULTI_PROBS), ("labels", "label", MULTI_LABELS), ("sample_weight", "weight", np.tile(WEIGHTS, (4, 1)))),
    "multilabel_per_sample": (("scores", "score", MULTI_SCORES), ("labels", "label", MULTI_LABELS), ("sample_weight", "weight", WEIGHTS)),
    "query": (("scores", "score", SCORES), ("labels", "label", LABELS), ("sample_weight", "mask", MASK)),
    "graded": (("scores", "score", SCORES), ("relevance", "relevance", RELEVANCE), ("sample_weight", "mask", MASK)),
    "label_matrix": (("scores", "score", SCORE_MATRIX), ("labels", "label", LABEL_MATRIX), ("sample_weight", "mask", MASK_MATRIX)),
    "unpaired": (("scores_a", "score", SCORES), ("labels_a", "label", LABELS), ("scores_b", "score", SCORES[::-1].copy()), ("labels_b", "label", LABELS[::-1].copy())),
    "model_pair": (("scores", "model_score", np.stack([SCORES, SCORES[::-1]])), ("labels", "label", LABELS)),
    "paired": (("scores_a", "score", SCORES), ("scores_b", "score", SCORES[::-1].copy()), ("labels", "label", LABELS)),
}  # fmt: skip

# Bad values by role; "count" is the -1 marker, which must give NaN, not an error.
BAD = {
    "score": (np.nan, np.inf),
    "model_score": (np.nan,),
    "prob": (np.nan, np.inf),
    "label": (2,),
    "class": (3,),
    "weight": (-1.0, np.nan),
    "mask": (0.5, np.nan),
    "relevance": (-1.0, np.nan),
    "count": (-1,),
    "successes": (9,),
    "trials": (0,),
    "auc": (1.5,),
    "class_size": (0,),
}
MARKER_ROLES = ("count",)


def _default_row(result: Any, i: int) -> Any:
    return jax.tree_util.tree_map(lambda x: x[i], result)


@dataclasses.dataclass(frozen=True)
class Case:
    call: Callable[..., Any]  # the function, called with the family's arguments in order
    family: str
    bad: tuple[str, ...] | None = None  # the arguments that can hold bad values (None: all)
    batched: bool = True  # takes leading batch axes (else it is batched by vmap only)
    unbatched: tuple[str, ...] = ()  # arguments that never carry the batch axis
    row: Callable[[Any, int], Any] = _default_row  # the part of a result that is batch row i
    select: Callable[[Any], Any] = lambda result: result  # what a bad value must poison


def _drop(*keys: str) -> Callable[[dict], dict]:
    def select(result: dict) -> dict:
        return {
            k: select(v) if isinstance(v, dict) else v for k, v in result.items() if k not in keys
        }

    return select


def _delong_row(result: jm.DeLong, i: int) -> tuple:
    return result.auc[i], result.variance[i], result.low[i], result.high[i], result.covariance[i, i]


def _bootstrap_row(result: jm.BootstrapResult, i: int) -> tuple:
    return (*(x[i] for x in result[:4]), result.samples[:, i])


def _binned():  # float counts: the good weights of the table are fractional
    return streaming.BinnedCurve.empty(8, low=-1.0, high=4.0, dtype=jnp.float32)


def _collection():
    at_half = streaming.ConfusionState.empty(thresholds=[0.5], dtype=jnp.float32)
    states = {"curve": _binned(), "at_half": at_half}
    return streaming.Collection({**states, "exact": streaming.ExactCurve.empty(32)})


def _bootstrap(s, y):
    return jm.bootstrap(jm.roc_auc, s, y, key=KEY, num_resamples=16)


# fmt: off
CASES = {
    # counts and rates
    "confusion_counts": Case(lambda s, y, w: jm.confusion_counts(s, y, 0.5, sample_weight=w), "binary"),
    "precision": Case(jm.precision, "counts"),
    "recall": Case(jm.recall, "counts"),
    "specificity": Case(jm.specificity, "counts"),
    "false_positive_rate": Case(jm.false_positive_rate, "counts"),
    "accuracy": Case(jm.accuracy, "counts"),
    "balanced_accuracy": Case(jm.balanced_accuracy, "counts"),
    "f_beta": Case(lambda c: jm.f_beta(c, beta=2.0), "counts"),
    "matthews_corrcoef[counts]": Case(jm.matthews_corrcoef, "counts"),
    "matthews_corrcoef[matrix]": Case(jm.matthews_corrcoef, "matrix"),
    # multiclass
    "confusion_matrix": Case(lambda p, y, w: jm.confusion_matrix(p, y, num_classes=3, sample_weight=w), "classes"),
    "one_vs_rest": Case(jm.one_vs_rest, "matrix"),
    "cohen_kappa": Case(lambda m: jm.cohen_kappa(m, weighting="linear"), "matrix"),
    "classification_report": Case(lambda p, y, w: jm.classification_report(p, y, num_classes=3, sample_weight=w), "classes"),
    "over_folds": Case(lambda c: jm.over_folds(jm.accuracy, c, fold_axis=-1), "folds"),
    "top_k_accuracy": Case(lambda p, y, w: jm.top_k_accuracy(p, y, k=2, sample_weight=w), "class_probs"),
    "multiclass_average_precision": Case(lambda p, y, w: jm.multiclass_average_precision(p, y, sample_weight=w), "class_probs"),
    "multiclass_roc_auc": Case(lambda p, y: jm.multiclass_roc_auc(p, y, multi_class="ovo"), "class_probs_labels"),
    "multiclass_log_loss": Case(lambda p, y, w: jm.multiclass_log_loss(p, y, sample_weight=w), "class_probs"),
    "multiclass_brier_score": Case(lambda p, y, w: jm.multiclass_brier_score(p, y, sample_weight=w), "class_probs"),
    # ranking and threshold choice
    "roc_auc": Case(lambda s, y, w: jm.roc_auc(s, y, sample_weight=w), "binary"),
    "average_precision": Case(lambda s, y, w: jm.average_precision(s, y, sample_weight=w), "binary"),
    "roc_curve": Case(lambda s, y, w: jm.roc_curve(s, y, sample_weight=w), "binary"),
    "precision_recall_curve": Case(lambda s, y, w: jm.precision_recall_curve(s, y, sample_weight=w), "binary"),
    "precision_at_k": Case(lambda s, y, w: jm.precision_at_k(s, y, k=4, sample_weight=w), "binary"),
    "max_f_beta": Case(lambda s, y, w: jm.max_f_beta(s, y, sample_weight=w), "binary"),
    "recall_at_precision": Case(lambda s, y, w: jm.recall_at_precision(s, y, min_precision=0.6, sample_weight=w), "binary"),
    "precision_at_recall": Case(lambda s, y, w: jm.precision_at_recall(s, y, min_recall=0.6, sample_weight=w), "binary"),
    "min_expected_cost": Case(lambda s, y, w: jm.min_expected_cost(s, y, cost_fp=1.0, cost_fn=5.0, sample_weight=w), "binary"),
    "roc_auc[macro]": Case(lambda s, y, w: jm.roc_auc(s, y, sample_weight=w, average="macro"), "multilabel"),
    "average_precision[samples]": Case(lambda s, y, w: jm.average_precision(s, y, sample_weight=w[..., None, :], average="samples"), "multilabel_per_sample"),
    # label ranking (one value per sample: the bad value poisons its own sample, index 3)
    "label_ranking_average_precision": Case(lambda s, y, w: jm.label_ranking_average_precision(s, y, sample_weight=w), "label_matrix", select=lambda r: r[..., 3]),
    "coverage_error": Case(lambda s, y, w: jm.coverage_error(s, y, sample_weight=w), "label_matrix", select=lambda r: r[..., 3]),
    "label_ranking_loss": Case(lambda s, y, w: jm.label_ranking_loss(s, y, sample_weight=w), "label_matrix", select=lambda r: r[..., 3]),
    # retrieval (one query per batch element)
    "ndcg": Case(lambda s, r, w: jm.ndcg(s, r, k=5, sample_weight=w), "graded"),
    "reciprocal_rank": Case(lambda s, y, w: jm.reciprocal_rank(s, y, sample_weight=w), "query"),
    "recall_at_k": Case(lambda s, y, w: jm.recall_at_k(s, y, k=4, sample_weight=w), "query"),
    "hit_rate_at_k": Case(lambda s, y, w: jm.hit_rate_at_k(s, y, k=2, sample_weight=w), "query"),
    "average_precision_at_k": Case(lambda s, y, w: jm.average_precision_at_k(s, y, k=4, sample_weight=w), "query"),
    "r_precision": Case(lambda s, y, w: jm.r_precision(s, y, sample_weight=w), "query"),
    "query_mean": Case(lambda v, w: jm.query_mean(v, sample_weight=w), "values", bad=("sample_weight",)),
    "youden_threshold": Case(lambda s, y, w: jm.youden_threshold(s, y, sample_weight=w), "binary"),
    "closest_to_corner_threshold": Case(lambda s, y, w: jm.closest_to_corner_threshold(s, y, sample_weight=w), "binary"),
    "sensitivity_at_specificity": Case(lambda s, y, w: jm.sensitivity_at_specificity(s, y, min_specificity=0.6, sample_weight=w), "binary"),
    "specificity_at_sensitivity": Case(lambda s, y, w: jm.specificity_at_sensitivity(s, y, min_sensitivity=0.6, sample_weight=w), "binary"),
    "roc_band": Case(lambda s, y: jm.roc_band(s, y, specificities=[0.5, 0.8], key=KEY, num_resamples=16), "scores_labels", unbatched=("labels",), row=lambda r, i: r._replace(sensitivity=r.sensitivity[i], low=r.low[i], high=r.high[i]), select=lambda r: r[1:]),
    "budget_threshold": Case(lambda s: jm.budget_threshold(s, k=3), "scores"),
    # calibration and regression
    "brier_score": Case(lambda p, y, w: jm.brier_score(p, y, sample_weight=w), "probs"),
    "log_loss": Case(lambda p, y, w: jm.log_loss(p, y, sample_weight=w), "probs"),
    "expected_calibration_error": Case(lambda p, y, w: jm.expected_calibration_error(p, y, num_bins=4, sample_weight=w), "probs"),
    "reliability_table": Case(lambda p, y, w: jm.reliability_table(p, y, num_bins=4, strategy="quantile", sample_weight=w), "probs"),
    "reliability_bins": Case(lambda p, y: jm.reliability_bins(p, y, num_bins=4, strategy="quantile"), "probs_labels"),
    "calibration_intercept": Case(lambda p, y, w: jm.calibration_intercept(p, y, sample_weight=w), "probs"),
    "calibration_slope": Case(lambda p, y, w: jm.calibration_slope(p, y, sample_weight=w), "probs"),
    "spiegelhalter_test": Case(lambda p, y, w: jm.spiegelhalter_test(p, y, sample_weight=w), "probs"),
    "hosmer_lemeshow_test": Case(lambda p, y, w: jm.hosmer_lemeshow_test(p, y, num_groups=3, sample_weight=w)[:2], "probs"),
    "debiased_calibration_error": Case(lambda p, y, w: jm.debiased_calibration_error(p, y, num_bins=3, sample_weight=w), "probs"),
    "by_group": Case(lambda d, w: jm.by_group(jm.selection_rate, d, groups=GROUPS, num_groups=2, sample_weight=w), "decisions_only", row=lambda r, i: (jnp.moveaxis(r.values, 0, -1)[i], r.overall[i], r.difference[i], r.ratio[i])),
    "selection_rate": Case(lambda d, w: jm.selection_rate(d, sample_weight=w), "decisions_only"),
    "demographic_parity_difference": Case(lambda d, w: jm.demographic_parity_difference(d, groups=GROUPS, num_groups=2, sample_weight=w), "decisions_only"),
    "demographic_parity_ratio": Case(lambda d, w: jm.demographic_parity_ratio(d, groups=GROUPS, num_groups=2, sample_weight=w), "decisions_only"),
    "equalized_odds_difference": Case(lambda d, y, w: jm.equalized_odds_difference(d, y, groups=GROUPS, num_groups=2, sample_weight=w), "decisions"),
    "equalized_odds_ratio": Case(lambda d, y, w: jm.equalized_odds_ratio(d, y, groups=GROUPS, num_groups=2, sample_weight=w), "decisions"),
    "equal_opportunity_difference": Case(lambda d, y, w: jm.equal_opportunity_difference(d, y, groups=GROUPS, num_groups=2, sample_weight=w), "decisions"),
    "equal_opportunity_ratio": Case(lambda d, y, w: jm.equal_opportunity_ratio(d, y, groups=GROUPS, num_groups=2, sample_weight=w), "decisions"),
    "net_benefit": Case(lambda p, y, w: jm.net_benefit(p, y, [0.2, 0.5], sample_weight=w), "probs"),
    "decision_curve": Case(lambda p, y, w: tuple(jm.decision_curve(p, y, [0.2, 0.5], sample_weight=w))[1:], "probs"),
    "mean_absolute_error": Case(jm.mean_absolute_error, "regression"),
    "root_mean_squared_error": Case(jm.root_mean_squared_error, "regression"),
    "r2_score": Case(jm.r2_score, "regression"),
    # uncertainty
    "bootstrap": Case(_bootstrap, "scores_labels", row=_bootstrap_row, select=lambda r: r[:4]),
    "wilson_interval": Case(jm.wilson_interval, "proportions"),
    "clopper_pearson_interval": Case(jm.clopper_pearson_interval, "proportions"),
    "agresti_coull_interval": Case(jm.agresti_coull_interval, "proportions"),
    "hanley_mcneil_standard_error": Case(jm.hanley_mcneil_standard_error, "hanley"),
    "delong": Case(jm.delong, "scores_labels", unbatched=("labels",), row=_delong_row),
    "delong_test": Case(jm.delong_test, "paired", batched=False),
    "delong_test_unpaired": Case(jm.delong_test_unpaired, "unpaired", batched=False),
    "delong_power": Case(jm.delong_power, "model_pair", batched=False),
    "delong_sample_size": Case(lambda s, y: jm.delong_sample_size(s, y, power=0.8), "model_pair", batched=False),
    "venkatraman_test": Case(lambda a, b, y: jm.venkatraman_test(a, b, y, key=KEY, num_permutations=8), "paired", batched=False),
    "venkatraman_test_unpaired": Case(lambda a, ya, b, yb: jm.venkatraman_test_unpaired(a, ya, b, yb, key=KEY, num_permutations=8), "unpaired", batched=False),
    "partial_roc_auc": Case(lambda s, y, w: jm.partial_roc_auc(s, y, fpr_range=(0.0, 0.5), correct=True, sample_weight=w), "binary"),
    # losses
    "soft_counts": Case(lambda s, y, w: jl.soft_counts(s, y, sample_weight=w), "logits"),
    "soft_f_beta_loss": Case(lambda s, y, w: jl.soft_f_beta_loss(s, y, sample_weight=w), "logits"),
    "soft_precision": Case(lambda s, y, w: jl.soft_precision(s, y, sample_weight=w), "logits"),
    "soft_recall": Case(lambda s, y, w: jl.soft_recall(s, y, sample_weight=w), "logits"),
    "pairwise_auc_loss": Case(lambda s, y, w: jl.pairwise_auc_loss(s, y, surrogate="hinge", sample_weight=w), "logits"),
    "partial_auc_loss": Case(lambda s, y, w: jl.partial_auc_loss(s, y, max_fpr=0.5, sample_weight=w), "logits"),
    "two_way_partial_auc_loss": Case(lambda s, y, w: jl.two_way_partial_auc_loss(s, y, min_tpr=0.5, max_fpr=0.5, sample_weight=w), "logits"),
    "approx_ndcg_loss": Case(lambda s, r, w: jl.approx_ndcg_loss(s, r, sample_weight=w), "graded"),
    "listnet_loss": Case(lambda s, r, w: jl.listnet_loss(s, r, sample_weight=w), "graded"),
    "compositional_auc_loss": Case(lambda s, y, w: jl.compositional_auc_loss(s, y, STATE, sample_weight=w), "logits"),
    "multilabel_auc_margin_loss": Case(lambda p, y, w: jl.multilabel_auc_margin_loss(p, y, STATE, sample_weight=w), "multilabel_probs"),
    "soap_loss": Case(lambda s, y, w: jl.soap_loss.loss(jl.soap_loss.init(6), s, y, POSITIVE_IDS, sample_weight=w)[0], "logits", batched=False),
    "smooth_ap_loss": Case(lambda s, y, w: jl.smooth_ap_loss(s, y, temperature=0.5, sample_weight=w), "logits"),
    "recall_at_precision_objective": Case(lambda s, y, w: jl.recall_at_precision_objective(s, y, 0.5, min_precision=0.6, sample_weight=w), "logits"),
    "auc_margin_loss": Case(lambda p, y, w: jl.auc_margin_loss(p, y, sample_weight=w), "probs"),
    "auc_margin_objective": Case(lambda p, y, w: jl.auc_margin_objective(p, y, STATE, sample_weight=w), "probs"),
    # streaming: update one batch, then compute
    "BinnedCurve": Case(lambda s, y, w: _binned().update(s, y, sample_weight=w).compute(), "binary", batched=False, select=_drop("thresholds")),
    "ExactCurve": Case(lambda s, y, w: streaming.ExactCurve.empty(32).update(s, y, sample_weight=w).compute(), "binary", batched=False, select=_drop("count", "overflowed")),
    "ConfusionState[binary]": Case(lambda s, y, w: streaming.ConfusionState.empty(thresholds=[0.0, 0.5], dtype=jnp.float32).update(s, y, sample_weight=w).compute(), "binary", batched=False),
    "ConfusionState[multiclass]": Case(lambda p, y, w: streaming.ConfusionState.empty(num_classes=3, dtype=jnp.float32).update(p, y, sample_weight=w).compute(), "classes", batched=False),
    "Mean": Case(lambda v, w: streaming.Mean.empty().update(v, sample_weight=w).compute(), "values", batched=False),
    "Collection": Case(lambda s, y, w: _collection().update(s, y, sample_weight=w).compute(), "binary", batched=False, select=_drop("thresholds", "count", "overflowed")),
}
# fmt: on

# Public names that take no data values a bad input could hide in, and why.
EXEMPT = {
    "bayes_threshold": "options only (costs), checked as options",
    "safe_divide": "arithmetic on given numbers: NaN in, NaN out",
    "resample_weights": "no data values: a key, resample indices and a size",
    "balanced_batches": "labels to index, checked; no metric value to poison",
    "paired_difference": "takes a BootstrapResult, whose NaN resamples it drops by design",
    "unpaired_difference": "takes two BootstrapResults, whose NaN resamples it drops by design",
    "bootstrap_test": "takes a BootstrapResult, whose NaN resamples it drops by design",
    "auc_power": "options only (an AUC and class sizes), checked as options",
    "auc_sample_size": "options only (an AUC, a power and a ratio), checked as options",
    "xla_kernels": "a switch of kernels, no data; its option is checked in test_common.py",
    "SensitivitiesAt": "a metric object for bootstrap; its checks are sensitivity_at_specificity's",
    "estimate_in_loop": "a decorator that marks a metric; no data",
    "by_group_bootstrap": "bootstrap of by_group (eager only); its checks: test_groups.py",
}


def test_the_table_covers_every_public_function():
    public = {
        name: getattr(module, name)
        for module in (jm, jl, streaming)
        for name in module.__all__
        if not inspect.ismodule(getattr(module, name))
    }
    result_types = {name for name, value in public.items() if hasattr(value, "_fields")}
    functions = set(public) - result_types  # NamedTuple results hold no inputs to check
    covered = {name.split("[")[0] for name in CASES} | set(EXEMPT)
    assert functions - covered == set(), "add these to CASES (or EXEMPT, with the reason)"
    assert covered - functions == set(), "no longer public"


# ------------------------------------------------------------------------------ machinery
def _arguments(case: Case) -> tuple[tuple[str, str, Any], ...]:
    return FAMILIES[case.family]


def _stack(value: Any, size: int) -> Any:
    return jax.tree_util.tree_map(lambda x: np.stack([np.asarray(x)] * size), value)


def _inputs(case: Case, batch: int | None) -> list[Any]:
    """Good inputs: one element (`batch` None) or a batch of `batch` copies of it."""
    return [
        value if batch is None or name in case.unbatched else _stack(value, batch)
        for name, _, value in _arguments(case)
    ]


def _element_position(role: str, value: Any) -> tuple[int, ...]:
    """Where in one batch element the bad value goes."""
    ndim = np.ndim(value[0] if isinstance(value, jm.Counts) else value)
    if role == "count":
        return (1,) * ndim  # one fold / one cell / the whole scalar count
    if role == "model_score":
        return (1, 3)  # the second model's fourth sample
    if ndim == 0:
        return ()
    return (3,) + (1,) * (ndim - 1)


def _inject(value: Any, position: tuple[int, ...], bad: Any) -> Any:
    def put(array):
        array = np.array(array, copy=True)
        array[position] = bad
        return array

    return jax.tree_util.tree_map(put, value)


def _bad_inputs(case: Case, argument: str, bad: Any, batch: int | None):
    """Inputs with `bad` in `argument` (row 1 of a batch), and the index an error must name."""
    inputs = _inputs(case, batch)
    index = [name for name, _, _ in _arguments(case)].index(argument)
    name, role, value = _arguments(case)[index]
    element = _element_position(role, value)
    position = element if batch is None or name in case.unbatched else (1, *element)
    inputs[index] = _inject(inputs[index], position, bad)
    where = f"index {position[0]}" if len(position) == 1 else f"index {position}"
    return inputs, where


def _bad_arguments_of(case_id: str) -> list[tuple[str, str]]:
    """(argument, role) of every argument of a case that can hold bad values."""
    case = CASES[case_id]
    return [
        (name, role) for name, role, _ in _arguments(case) if case.bad is None or name in case.bad
    ]


def _bad_arguments():
    for case_id in CASES:
        for name, role in _bad_arguments_of(case_id):
            yield pytest.param(case_id, name, role, id=f"{case_id}-{name}")


@functools.cache
def _jitted(case_id: str) -> Callable[..., Any]:
    return jax.jit(CASES[case_id].call)


def _numeric_leaves(tree: Any) -> list[np.ndarray]:
    leaves = [np.asarray(x) for x in jax.tree_util.tree_leaves(tree)]
    return [x for x in leaves if x.dtype != bool]


def _assert_poisoned(tree: Any, context: str) -> None:
    for leaf in _numeric_leaves(tree):
        if np.issubdtype(leaf.dtype, np.floating):
            assert np.isnan(leaf).all(), f"{context}: expected NaN, got {leaf}"
        else:
            assert (leaf == -1).all(), f"{context}: expected the -1 count marker, got {leaf}"


def _assert_same(got: Any, expected: Any, context: str) -> None:
    for a, b in zip(_numeric_leaves(got), _numeric_leaves(expected), strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6, equal_nan=True, err_msg=context)


def _check_rows(case: Case, argument: str, result: Any, good: Any, context: str) -> None:
    """Row 1 (bad) is poisoned; row 0 equals the all-good batch's, unless the bad value sits in
    an argument shared by every row."""
    _assert_poisoned(case.select(case.row(result, 1)), context)
    if argument in case.unbatched:
        _assert_poisoned(case.select(case.row(result, 0)), context)
    else:
        _assert_same(case.select(case.row(result, 0)), case.select(case.row(good, 0)), context)


# ------------------------------------------------------------------------------ the checks
@pytest.mark.parametrize("case_id, argument, role", _bad_arguments())
def test_a_bad_value_raises_eagerly_naming_argument_and_index(case_id, argument, role):
    case = CASES[case_id]
    batch = 2 if case.batched else None
    for bad in BAD[role]:
        inputs, where = _bad_inputs(case, argument, bad, batch)
        context = f"{case_id}({argument}={bad!r})"
        if role in MARKER_ROLES:  # a marked count is a result, not an error: NaN
            result = case.call(*inputs)
            _check_rows(case, argument, result, case.call(*_inputs(case, batch)), context)
            continue
        with pytest.raises(ValueError, match=rf"`{argument}`.*{re.escape(where)}"):
            case.call(*inputs)


def _check_closed_over(case_id: str) -> None:
    """(e): the inputs as float64 numpy arrays closed over by a jitted function, a batch of 1."""
    case = CASES[case_id]
    inputs = [_as_float64(x) for x in _inputs(case, 1 if case.batched else None)]
    closed = jax.jit(lambda: case.call(*inputs))()
    if not case.batched:
        _assert_same(closed, _jitted(case_id)(*_inputs(case, None)), case_id)
        return
    good = _jitted(case_id)(*_inputs(case, 2))  # (b)'s compilation: an all-good batch of two
    _assert_same(case.select(case.row(closed, 0)), case.select(case.row(good, 0)), case_id)
    for leaf in jax.tree_util.tree_leaves(case.select(case.row(closed, slice(0, 1)))):
        assert np.shape(leaf)[:1] == (1,), f"{case_id}: the batch axis of size 1 was lost"


# One test per function under jit (with (e), which reuses its compilation) and one under vmap,
# each looping over the bad arguments: the function is compiled once for all of them (tests per
# argument were spread over the workers, which then compiled the same program each).
@pytest.mark.parametrize("case_id", sorted(CASES))
def test_a_bad_value_under_jit_marks_only_its_batch_element_and_closed_over_arrays_work(case_id):
    case = CASES[case_id]
    jitted = _jitted(case_id)
    good = jitted(*_inputs(case, 2)) if case.batched else None
    for argument, role in _bad_arguments_of(case_id):
        for bad in BAD[role]:
            context = f"jit {case_id}({argument}={bad!r})"
            if not case.batched:  # one element: the whole result is marked
                inputs, _ = _bad_inputs(case, argument, bad, None)
                _assert_poisoned(case.select(jitted(*inputs)), context)
                continue
            inputs, _ = _bad_inputs(case, argument, bad, 2)
            _check_rows(case, argument, jitted(*inputs), good, context)
    _check_closed_over(case_id)


def _as_float64(value: Any) -> Any:
    def widen(x):
        x = np.asarray(x)
        return x.astype(np.float64) if np.issubdtype(x.dtype, np.floating) else x

    return jax.tree_util.tree_map(widen, value)


@functools.cache
def _vmapped_in_x64(case_id: str) -> Callable[..., Any]:
    return jax.jit(jax.vmap(CASES[case_id].call))


@pytest.mark.parametrize("case_id", sorted(CASES))
def test_a_bad_value_under_vmap_marks_only_its_batch_element_and_x64_is_float64(case_id, x64):
    case = CASES[case_id]
    plain = dataclasses.replace(case, unbatched=(), row=_default_row)  # vmap maps every input
    batch_everything = dataclasses.replace(case, batched=True, unbatched=())
    mapped = _vmapped_in_x64(case_id)
    good = mapped(*(_as_float64(x) for x in _inputs(batch_everything, 2)))
    for leaf in _numeric_leaves(plain.select(good)):
        if np.issubdtype(leaf.dtype, np.floating):
            assert leaf.dtype == np.float64, f"{case_id}: {leaf.dtype} under x64"
    for argument, role in _bad_arguments_of(case_id):
        for bad in BAD[role]:
            inputs, _ = _bad_inputs(batch_everything, argument, bad, 2)
            result = mapped(*(_as_float64(x) for x in inputs))
            _check_rows(plain, argument, result, good, f"vmap {case_id}({argument}={bad!r})")


# ------------------------------------------------------------------ traced number options
class _Captured(BaseException):
    """Raised by the spy of `_captured_call` with the arguments of the first call: the case's
    call stops there, and the function itself never runs (its eager run, compiled for
    every one of the 105 cases, was about 80% of these two tests' time; the checks below call
    the function themselves, for the 47 float options)."""

    def __init__(self, args: tuple, kwargs: dict):
        super().__init__()
        self.args_kwargs = (args, kwargs)


def _captured_call(case_id: str) -> tuple[Callable[..., Any], tuple, dict] | None:
    """The public function of a case and the arguments its call passes to it (a spy)."""
    name = case_id.split("[")[0]
    module = next(m for m in (jm, jl, streaming) if name in m.__all__)
    real = getattr(module, name)
    if not inspect.isfunction(real):  # classes, and `soap_loss`'s pair of functions
        return None

    def spy(*args, **kwargs):
        raise _Captured(args, kwargs)

    setattr(module, name, spy)
    try:
        CASES[case_id].call(*_inputs(CASES[case_id], None))
    except _Captured as captured:
        return (real, *captured.args_kwargs)
    finally:
        setattr(module, name, real)
    return None


def _number_options(function: Callable[..., Any], kwargs: dict) -> dict[str, float]:
    options = {}
    for parameter in inspect.signature(function).parameters.values():
        value = kwargs.get(parameter.name, parameter.default)
        if parameter.kind is parameter.KEYWORD_ONLY and type(value) is float:
            options[parameter.name] = value
    return options


def _number_option_calls():
    """(case, function, args, kwargs, option, value) for every float option of every case."""
    for case_id in sorted(CASES):
        captured = _captured_call(case_id)
        if captured is not None:
            function, args, kwargs = captured
            for option, value in _number_options(function, kwargs).items():
                yield case_id, function, args, kwargs, option, value


def test_every_number_option_can_be_traced_or_says_it_is_static():
    """A float option passed as a traced value (a schedule inside a jitted step) works and equals
    the eager call, or raises a TypeError saying the option is static: never JAX's
    TracerBoolConversionError or another internal error (issue 25, item 10)."""
    failures = []
    for case_id, function, args, kwargs, option, value in _number_option_calls():

        def call(v, option=option, function=function, args=args, kwargs=kwargs):
            return function(*args, **{**kwargs, option: v})

        try:
            traced = jax.jit(call)(value)
        except TypeError as error:
            if "static option" not in str(error):
                failures.append(f"{case_id}({option}=traced): {type(error).__name__}: {error}")
            continue
        except Exception as error:  # noqa: BLE001 (every other error is the finding)
            failures.append(f"{case_id}({option}=traced): {type(error).__name__}: {error}")
            continue
        try:
            _assert_same(traced, call(value), f"{case_id}({option})")
        except AssertionError as error:
            failures.append(f"{case_id}({option}): traced != eager: {error}")
    assert not failures, "\n".join(failures)


def test_every_number_option_refuses_bools_and_strings():
    """`True` and `"0.5"` passed as a float option raise a TypeError naming the option, for
    every public function (issue 25, item 12: `float()` read them as numbers)."""
    failures = []
    for case_id, function, args, kwargs, option, _ in _number_option_calls():
        for bad in (True, "0.5"):
            try:
                function(*args, **{**kwargs, option: bad})
            except TypeError as error:
                if f"`{option}`" not in str(error):
                    failures.append(f"{case_id}({option}={bad!r}): {error}")
            except Exception as error:  # noqa: BLE001 (any other error is the finding)
                failures.append(f"{case_id}({option}={bad!r}): {type(error).__name__}: {error}")
            else:
                failures.append(f"{case_id}({option}={bad!r}) was accepted")
    assert not failures, "\n".join(failures)


# A first eager call on new shapes compiles at most this many programs: its checks run in numpy,
# its arithmetic in one program, beside a ranking metric's own (or, for the bootstrap, the
# estimate, the loop and its summary). Written operation by operation, a call compiled one
# program per operation (6-28 for some, and as many dispatches on every call).
FIRST_CALL_PROGRAMS = 3


@pytest.mark.parametrize("case_id", sorted(c for c, case in CASES.items() if case.batched))
def test_a_first_eager_call_on_new_shapes_compiles_few_programs(caplog, case_id):
    case = CASES[case_id]
    jax.block_until_ready(case.call(*_inputs(case, 3)))  # what a process compiles once
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        jax.block_until_ready(case.call(*_inputs(case, 5)))  # a batch of a new size
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    assert len(messages) <= FIRST_CALL_PROGRAMS, [m.split(" with ")[0] for m in messages]
