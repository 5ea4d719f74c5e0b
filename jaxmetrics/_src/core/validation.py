"""The door of the binary metrics: `binary_inputs` checks the (scores, labels, sample_weight)
triple of every binary metric, `ranking_inputs` does so for the metrics of the scores' order and
gives their exact order keys; both warn once when the arguments look swapped. Both refuse a
sample axis of length 1 under batch axes (``[n, 1]`` scores: n one-sample rows) and ``[n, C]``
class scores with labels ``[n]``, naming the multiclass function, at trace time.

The arrays are made by `coercion` (type and shape errors), their values checked by `checks`
(raise eagerly, per shard when split, a flag when traced), and the flags turned into NaN by
`batching.nan_where`.
"""

from __future__ import annotations

import sys
import warnings
from typing import Any

import jax
import numpy as np

from jaxmetrics._src.core import checks, coercion, exact_order
from jaxmetrics._src.core.typing import Array

_ORDER_HINT = (
    "(The scores come first: f(scores, labels), unlike scikit-learn's (y_true, y_score); the "
    "scores here are all 0 or 1.)"
)
_swap_warned = False


def _library_entry() -> tuple[str, int]:
    """The function through which the user's code entered jaxmetrics (the outermost library
    frame on the stack: `roc_auc`, say) and the `stacklevel` of its caller, counted from the
    function that asks."""
    frame, level, name = sys._getframe(1), 1, ""
    while frame is not None and frame.f_globals.get("__name__", "").startswith("jaxmetrics"):
        name, frame, level = frame.f_code.co_name, frame.f_back, level + 1
    return name, level


# The multiclass function of a binary one, named when it is given [n, C] class scores.
_MULTICLASS = {
    "roc_auc": "`jaxmetrics.multiclass_roc_auc(probs, labels)`",
    "average_precision": "`jaxmetrics.multiclass_average_precision(probs, labels)`",
}
_MULTICLASS_ANY = (
    "`jaxmetrics.multiclass_roc_auc` or `multiclass_average_precision` (rankings), "
    "`confusion_matrix(probs.argmax(-1), labels, num_classes=C)` or `classification_report` "
    "(decisions)"
)


def _refuse_class_scores(scores: Any, labels: Any) -> None:
    """Raise for ``[n, C]`` class scores given with labels ``[n]`` (a multiclass problem): say
    the metric is binary and name the multiclass function."""
    scores_shape, labels_shape = np.shape(scores), np.shape(labels)
    if not (
        len(scores_shape) >= 2
        and scores_shape[-1] != labels_shape[-1]
        and scores_shape[-2] == labels_shape[-1]
    ):
        return
    caller, _ = _library_entry()
    public = caller and not caller.startswith("_")
    metric = f"`{caller}`" if public else "this metric"
    raise ValueError(
        f"{coercion.samples_mismatch('labels', labels, 'scores', scores)} `scores` looks like "
        f"[n, C] class scores ({scores_shape[-2]} samples, {scores_shape[-1]} classes), and "
        f"{metric} is binary (one score per sample): for C classes use "
        f"{_MULTICLASS.get(caller, _MULTICLASS_ANY)}; for a binary problem pass the positive "
        "class's column, `scores[..., 1]`."
    )


def _zeros_and_ones(values: np.ndarray | None) -> bool:
    return values is not None and values.size > 0 and bool(np.all((values == 0) | (values == 1)))


def warn_if_swapped(scores: Any, labels: Any) -> None:
    """Warn, once a process, when both arrays are 0/1 integers (or bools), concrete.

    ``jm.roc_auc(y, hard_predictions)`` in scikit-learn's order is then valid input and gives
    another number without an error. Float scores are never suspected (and never scanned).
    """
    global _swap_warned
    if _swap_warned:
        return
    arrays = [np.asarray(a) if isinstance(a, list | tuple) else a for a in (scores, labels)]
    if not all(
        isinstance(a, np.ndarray | jax.Array)
        and (a.dtype == np.bool_ or np.issubdtype(a.dtype, np.integer))
        for a in arrays
    ):
        return
    if all(_zeros_and_ones(checks.host_values(a)) for a in arrays):
        _swap_warned = True
        _, level = _library_entry()  # point at the caller's line, outside jaxmetrics
        warnings.warn(
            "`scores` and `labels` are both 0/1 integers: jaxmetrics takes f(scores, labels), "
            "unlike scikit-learn's (y_true, y_score). If the first array holds the labels, swap "
            "them. (Hard 0/1 predictions as scores are fine; this is said once.)",
            UserWarning,
            stacklevel=level,
        )


def binary_inputs(
    scores: Any,
    labels: Any,
    sample_weight: Any = None,
    *,
    host: bool = False,
    keep_split: bool = False,
) -> tuple[Array, Array, Array | None, Array]:
    """Check the (scores, labels, sample_weight) triple of every binary metric.

    Returns the arrays (scores as float, labels as int32 0/1, weights as given) and `invalid`, a
    boolean array of the batch shape, True where a traced input held a bad value. Shapes are
    checked first, in every regime: `coercion.reject_single_sample_rows`, then ``[n, C]``
    class scores (`_refuse_class_scores`), then the shared sample axis. With
    `host=True`, concrete inputs come back as numpy arrays (see `coercion.as_real_array`).
    """
    split = {"host": host, "keep_split": keep_split}
    warn_if_swapped(scores, labels)
    scores = coercion.as_scores(scores, **split)
    labels = coercion.as_real_array(labels, "labels", **split)
    weights = (
        None
        if sample_weight is None
        else coercion.as_real_array(sample_weight, "sample_weight", **split)
    )
    named = [("scores", scores), ("labels", labels), ("sample_weight", weights)]
    coercion.reject_single_sample_rows(named)
    _refuse_class_scores(scores, labels)
    batch_shape = coercion.sample_axis_shapes(named)
    try:
        invalid = checks.check_finite(scores, "scores") | checks.check_binary_labels(labels)
    except ValueError as error:
        if _zeros_and_ones(checks.host_values(scores)):  # labels passed where the scores go?
            raise ValueError(f"{error} {_ORDER_HINT}") from None
        raise
    if weights is not None:
        invalid = invalid | checks.check_weights(weights)
    invalid = checks.array_namespace(invalid).broadcast_to(invalid, batch_shape)
    return scores, (labels == 1).astype(np.int32), weights, invalid


def ranking_inputs(
    scores: Any, labels: Any, sample_weight: Any = None, *, thresholds: Any = None
) -> tuple[Array, Array, Array | None, Array, exact_order.ScoreCodec]:
    """`binary_inputs` for metrics of the scores' order only, plus the codec of their keys.

    With `thresholds` (compared against the scores), the codec is used only when they are
    concrete too, and then encodes them with the scores.
    """
    warn_if_swapped(scores, labels)
    keys, codec = exact_order.order_keys(scores, thresholds=thresholds)
    scores, labels, weights, invalid = binary_inputs(
        keys, labels, sample_weight, host=True, keep_split=True
    )
    return scores, labels, weights, invalid, codec
