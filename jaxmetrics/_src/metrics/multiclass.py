"""Multiclass counting: the confusion matrix, its one-vs-rest counts and a classification report.

The class count is always stated (`num_classes`), never inferred from the data: a class absent
from a fold keeps its row and column, so the matrices of folds, batches and devices can be added.
Counting goes through the ranking engine: the (true, predicted) pair codes are sorted once and
each cell is a difference of prefix sums, exact in int32 without a scatter.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax.numpy as jnp

from jaxmetrics._src.core import batching, checks, coercion, kernels, sorting
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.options import check_count, check_real
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.metrics import rates as rates_lib
from jaxmetrics._src.metrics.counts import Counts


def class_indices(values: ArrayLike, name: str, num_classes: int) -> tuple[Array, Array]:
    """Class indices as int32 and the per-batch `invalid` flag: integers in [0, num_classes),
    raised on eagerly (checked in numpy on the host) and flagged under jit."""
    values = coercion.as_real_array(values, name, host=True)
    if not (jnp.issubdtype(values.dtype, jnp.integer) or jnp.issubdtype(values.dtype, jnp.bool_)):
        raise TypeError(f"`{name}` must hold integer class indices; got dtype {values.dtype}.")
    invalid = checks.check(values, name, checks.class_index(num_classes))
    return coercion.cast(values, jnp.int32), invalid


def _check_num_classes(num_classes: int) -> int:
    """`num_classes` is stated, never inferred: a Python or numpy int >= 2."""
    return check_count(num_classes, "num_classes", minimum=2)


def _count_weights(weights: ArrayLike | None) -> tuple[Array | None, Array]:
    """Weights ready for counting, and the per-batch `invalid` flag.

    `checks.check_weights` refuses negative and non-finite weights and, for integer weights
    (counted exactly in int32), a total of 2^31 or more per batch element; integer weights are
    then cast to int32 (uint32 values that fit are kept, not wrapped into negatives).
    """
    if weights is None:
        return None, jnp.zeros((), bool)
    weights = coercion.as_real_array(weights, "sample_weight", host=True)
    invalid = checks.check_weights(weights)
    if jnp.issubdtype(weights.dtype, jnp.floating):
        return coercion.cast(weights, float_dtype()), invalid
    return coercion.cast(weights, jnp.int32), invalid


def confusion_matrix(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    num_classes: int,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Multiclass confusion matrix: rows are the true classes, columns the predicted ones.

    Matches ``sklearn.metrics.confusion_matrix(labels, predictions, labels=range(num_classes),
    sample_weight=sample_weight)`` (note the argument order: predictions first here, as in every
    jaxmetrics function). The width is stated, never inferred: a class that no sample holds keeps
    its (empty) row and column, so matrices of folds, batches or devices add up.

    .. math:: M_{ij} = \sum_s w_s\, [y_s = i]\, [\hat y_s = j]

    Under `jax.jit` bad input sets every cell of its batch element's matrix to -1 (NaN with
    float weights), the marker that every function of a matrix turns into NaN. Counts are int32
    and exact without weights or with integer weights; float weights give float32 sums (float64
    under x64). Bad input and weight totals: docs/conventions.md.

    Args:
      predictions: ``[*batch, n]`` predicted class indices (ints or bools).
      labels: ``[*batch, n]`` true class indices, broadcasting against `predictions`.
      num_classes: the number of classes C, a Python or numpy int >= 2 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      ``[*batch, C, C]`` counts: int32, or float with float weights.

    Examples:
      >>> import jaxmetrics as jm
      >>> jm.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3).tolist()
      [[1, 0, 0], [0, 1, 0], [0, 1, 1]]
    """
    num_classes = _check_num_classes(num_classes)
    cells = num_classes * num_classes
    if cells >= 2**24:
        raise ValueError(
            f"`num_classes` must be below 4096 (pair codes are exact in float32); "
            f"got {num_classes}."
        )
    predictions, invalid_predictions = class_indices(predictions, "predictions", num_classes)
    labels, invalid_labels = class_indices(labels, "labels", num_classes)
    weights, invalid_weights = _count_weights(sample_weight)
    batch_shape = coercion.sample_axis_shapes(
        [("predictions", predictions), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = invalid_predictions | invalid_labels | invalid_weights
    return _matrix(
        predictions, labels, weights, invalid, num_classes=num_classes, batch_shape=batch_shape
    )


# One compiled program per call (eagerly, the kernel ran operation by operation: its sort,
# tally and search each a program, and the batch's loop in Python); inlined under a trace.
@functools.partial(kernels.sample_jit, static_argnames=("num_classes", "batch_shape"))
def _matrix(predictions, labels, weights, invalid, *, num_classes, batch_shape):
    cells = num_classes * num_classes

    def kernel(predictions: Array, labels: Array, weights: Array | None) -> Array:
        code = labels * num_classes + predictions
        ranked = sorting.rank(code.astype(jnp.float32))  # codes < 2^24 are exact in float32
        tallies = sorting.tally(ranked, jnp.zeros_like(code), weights)
        total = tallies.negative  # every sample is a "negative" here: the prefix of all weight
        edges = jnp.arange(cells + 1, dtype=jnp.float32) - 0.5
        cumulative = sorting.at_thresholds(ranked, total, edges, inclusive=False)
        return jnp.diff(cumulative).reshape(num_classes, num_classes)

    matrix = batching.map_batch(kernel, predictions, labels, weights)
    return batching.nan_where(jnp.broadcast_to(invalid, batch_shape), matrix)


def marked(matrix: Array) -> Array:
    """Per-batch flag of a matrix that carries the -1 count marker of a bad jit input."""
    return jnp.any(matrix < 0, axis=(-2, -1))


def check_square(matrix: ArrayLike) -> Array:
    matrix = coercion.as_real_array(matrix, "matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            f"`matrix` must be square, [*batch, C, C]; got shape {tuple(matrix.shape)}."
        )
    return matrix


def one_vs_rest(matrix: ArrayLike) -> Counts:
    r"""Per-class binary counts of a confusion matrix, one-vs-rest, with the class axis last.

    Matches `sklearn.metrics.multilabel_confusion_matrix` on the predictions the matrix was
    counted from, as `Counts` instead of ``[C, 2, 2]`` blocks (whose ``ravel()`` order is
    ``tn, fp, fn, tp``). Feed the result to any rate with ``average=None | "micro" | "macro" |
    "weighted"``: ``jm.precision(jm.one_vs_rest(matrix), average="macro")``.

    .. math:: TP_c = M_{cc}, \quad FP_c = \sum_i M_{ic} - M_{cc}, \quad
              FN_c = \sum_j M_{cj} - M_{cc}, \quad TN_c = \sum_{ij} M_{ij} - TP_c - FP_c - FN_c

    Class c is the positive class of its column of counts. A matrix holding a negative entry
    (the -1 marker of a bad input under `jax.jit`) is a result, not an error: its batch
    element's counts are all -1 (NaN for float counts), so every rate of them is NaN. A matrix
    that is not square raises `ValueError`.

    Args:
      matrix: ``[*batch, C, C]`` confusion matrix, rows true classes, columns predicted.

    Returns:
      `Counts` whose fields have shape ``[*batch, C]``, in the matrix's dtype.

    Examples:
      >>> import jaxmetrics as jm
      >>> matrix = jm.confusion_matrix([0, 1, 1, 2], [0, 1, 2, 2], num_classes=3)
      >>> counts = jm.one_vs_rest(matrix)
      >>> counts.tp.tolist(), counts.fp.tolist(), counts.fn.tolist()
      ([1, 1, 1], [0, 1, 0], [0, 0, 1])
      >>> round(float(jm.precision(counts, average="macro")), 4)  # (1 + 1/2 + 1) / 3
      0.8333
    """
    return _one_vs_rest(check_square(matrix))


# One compiled program per eager call (each operation was a program of its own); inlined in a
# caller's trace.
@kernels.sample_jit
def _one_vs_rest(matrix: Array) -> Counts:
    tp = jnp.diagonal(matrix, axis1=-2, axis2=-1)
    fp = matrix.sum(-2) - tp
    fn = matrix.sum(-1) - tp
    tn = matrix.sum((-2, -1))[..., None] - tp - fp - fn
    return batching.nan_where(marked(matrix), Counts(tp, fp, fn, tn))


class ClassificationReport(NamedTuple):
    """Per-class precision, recall, F1 and support, the accuracy and the three averages.

    What `classification_report` returns, and what the multiclass
    `jaxmetrics.streaming.ConfusionState` computes (as a dict of the same keys). Each average is a
    dict with the keys "precision", "recall" and "f1", as scikit-learn's "macro avg" and
    "weighted avg" (less "support"). For single-label data the three micro averages all equal
    the accuracy.

    Attributes:
      precision: ``[*batch, C]`` precision of each class, one-vs-rest.
      recall: ``[*batch, C]`` recall of each class.
      f1: ``[*batch, C]`` F1 of each class.
      support: ``[*batch, C]`` true members of each class: int32 counts, or float sums of
        weights (-1 for a batch element whose input was bad under `jax.jit`).
      accuracy: ``[*batch]`` the share of samples classified right (trace over total).
      macro: dict of ``[*batch]`` arrays: the plain mean over the classes.
      weighted: dict of ``[*batch]`` arrays: the mean weighted by support.
      micro: dict of ``[*batch]`` arrays: the rate of the pooled counts.
    """

    precision: Array
    recall: Array
    f1: Array
    support: Array
    accuracy: Array
    macro: dict[str, Array]
    weighted: dict[str, Array]
    micro: dict[str, Array]


def classification_report(
    predictions: ArrayLike,
    labels: ArrayLike,
    *,
    num_classes: int,
    sample_weight: ArrayLike | None = None,
    zero_division: float = math.nan,
) -> ClassificationReport:
    r"""Per-class precision, recall, F1 and support, with the accuracy and the three averages.

    The numbers of ``sklearn.metrics.classification_report(labels, predictions,
    labels=range(num_classes), output_dict=True, zero_division=zero_division)``, as arrays
    rather than text, computed from one `confusion_matrix`; except that a macro average over a
    class whose rate is undefined is NaN (with ``zero_division=nan`` scikit-learn leaves that
    class out), and that the micro averages are always given (scikit-learn names them
    "accuracy" when every class is listed).

    .. math:: P_c = \frac{M_{cc}}{\sum_i M_{ic}}, \quad R_c = \frac{M_{cc}}{\sum_j M_{cj}},
              \quad F1_c = \frac{2 M_{cc}}{\sum_i M_{ic} + \sum_j M_{cj}}, \quad
              \mathrm{accuracy} = \frac{\sum_c M_{cc}}{\sum_{ij} M_{ij}}

    Undefined rates (a class never predicted, a class without members) are `zero_division`, NaN
    by default. Bad input as `confusion_matrix`: eagerly a `ValueError`; under `jax.jit` a bad
    batch element has every rate and the accuracy NaN and its support -1.

    Args:
      predictions: ``[*batch, n]`` predicted class indices.
      labels: ``[*batch, n]`` true class indices.
      num_classes: the number of classes C, a Python or numpy int >= 2 (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.
      zero_division: the value of an undefined rate; NaN by default.

    Returns:
      `ClassificationReport`: per-class fields ``[*batch, C]``, the accuracy and the averages
      ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> report = jm.classification_report(
      ...     [0, 1, 1, 2, 2, 0], [0, 1, 2, 2, 2, 1], num_classes=3)
      >>> [round(x, 4) for x in report.recall.tolist()]
      [1.0, 0.5, 0.6667]
      >>> round(float(report.macro["f1"]), 4), round(float(report.accuracy), 4)
      (0.6556, 0.6667)
    """
    matrix = confusion_matrix(
        predictions, labels, num_classes=num_classes, sample_weight=sample_weight
    )
    return report_of_matrix(matrix, zero_division=zero_division)


def report_of_matrix(matrix: Array, *, zero_division: float = math.nan) -> ClassificationReport:
    """`classification_report` of a ``[*batch, C, C]`` confusion matrix (rows true classes).

    Shared by `classification_report` and the multiclass streaming `ConfusionState`, so that
    both give the same numbers under the same names. A matrix holding the -1 marker gives NaN
    rates and a support of -1 for its batch element. One compiled program per eager call.
    """
    zero_division = check_real(zero_division, "zero_division", traced=True)
    return _report_program(matrix, zero_division)


@kernels.sample_jit
def _report_program(matrix: Array, zero_division) -> ClassificationReport:
    counts = _one_vs_rest(matrix)
    rates = {
        "precision": rates_lib.precision,
        "recall": rates_lib.recall,
        "f1": rates_lib.f_beta,
    }

    def averaged(average: str) -> dict[str, Array]:
        return {
            name: rate(counts, zero_division=zero_division, average=average)
            for name, rate in rates.items()
        }

    per_class = {name: rate(counts, zero_division=zero_division) for name, rate in rates.items()}
    accuracy = safe_divide(
        jnp.trace(matrix, axis1=-2, axis2=-1), matrix.sum((-2, -1)), zero_division
    )
    support, accuracy = batching.nan_where(marked(matrix), (counts.tp + counts.fn, accuracy))
    return ClassificationReport(
        per_class["precision"],
        per_class["recall"],
        per_class["f1"],
        support,
        accuracy,
        averaged("macro"),
        averaged("weighted"),
        averaged("micro"),
    )
