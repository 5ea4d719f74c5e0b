"""Multiclass evaluation: the confusion matrix, one-vs-rest counts, kappa, top-k accuracy,
multiclass ROC AUC and a classification report.

The class count is always stated (`num_classes`), never inferred from the data: a class absent
from a fold keeps its row and column, so the matrices of folds, batches and devices can be added.
Counting goes through the ranking engine: the (true, predicted) pair codes are sorted once and
each cell is a difference of prefix sums, exact in int32 without a scatter.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src import counts as counts_lib
from jaxmetrics._src import ranking, sorting, validation
from jaxmetrics._src.counts import Counts, safe_divide
from jaxmetrics._src.typing import (
    Array,
    ArrayLike,
    Kappa,
    MultiClass,
    RocAucAverage,
    options_of,
)

_KAPPA_WEIGHTINGS = options_of(Kappa)
_MULTI_CLASS = options_of(MultiClass)
_ROC_AUC_AVERAGES = options_of(RocAucAverage)


def _class_indices(values: ArrayLike, name: str, num_classes: int) -> tuple[Array, Array]:
    """Class indices as int32 and the per-batch `invalid` flag: integers in [0, num_classes),
    raised on eagerly (checked in numpy on the host) and flagged under jit."""
    values = validation.as_real_array(values, name, host=True)
    if not (jnp.issubdtype(values.dtype, jnp.integer) or jnp.issubdtype(values.dtype, jnp.bool_)):
        raise TypeError(f"`{name}` must hold integer class indices; got dtype {values.dtype}.")
    invalid = validation.check_values(
        values,
        name,
        lambda v: (v < 0) | (v >= num_classes),
        f"be class indices in [0, {num_classes}) (`num_classes`)",
    )
    return jnp.asarray(values).astype(jnp.int32), invalid


def _check_num_classes(num_classes: int) -> int:
    """`num_classes` is stated, never inferred: a Python or numpy int >= 2."""
    return validation.check_count(num_classes, "num_classes", minimum=2)


def _count_weights(weights: ArrayLike | None) -> tuple[Array | None, Array]:
    """Weights ready for counting, and the per-batch `invalid` flag.

    `validation.check_weights` refuses negative and non-finite weights and, for integer weights
    (counted exactly in int32), a total of 2^31 or more per batch element; integer weights are
    then cast to int32 (uint32 values that fit are kept, not wrapped into negatives).
    """
    if weights is None:
        return None, jnp.zeros((), bool)
    weights = validation.as_real_array(weights, "sample_weight", host=True)
    invalid = validation.check_weights(weights)
    if jnp.issubdtype(weights.dtype, jnp.floating):
        return jnp.asarray(weights).astype(validation.float_dtype()), invalid
    return jnp.asarray(weights).astype(jnp.int32), invalid


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

    Conventions: class indices outside [0, C) and negative or non-finite weights raise
    `ValueError` eagerly; under `jax.jit` every cell of that batch element's matrix is -1 (NaN
    with float weights), the marker that every function of a matrix turns into NaN. Counts are
    int32 and exact without weights or with integer weights, whose total per batch element must
    stay below 2^31 (checked eagerly; under `jax.jit` a larger total marks the element); float
    weights give float32 sums (float64 under x64).

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
    predictions, invalid_predictions = _class_indices(predictions, "predictions", num_classes)
    labels, invalid_labels = _class_indices(labels, "labels", num_classes)
    weights, invalid_weights = _count_weights(sample_weight)
    batch_shape = validation.sample_axis_shapes(
        [("predictions", predictions), ("labels", labels), ("sample_weight", weights)]
    )
    invalid = invalid_predictions | invalid_labels | invalid_weights

    def kernel(predictions: Array, labels: Array, weights: Array | None) -> Array:
        code = labels * num_classes + predictions
        ranked = sorting.rank(code.astype(jnp.float32))  # codes < 2^24 are exact in float32
        tallies = sorting.tally(ranked, jnp.zeros_like(code), weights)
        total = tallies.negative  # every sample is a "negative" here: the prefix of all weight
        edges = jnp.arange(cells + 1, dtype=jnp.float32) - 0.5
        cumulative = sorting.at_thresholds(ranked, total, edges, inclusive=False)
        return jnp.diff(cumulative).reshape(num_classes, num_classes)

    matrix = validation.map_batch(kernel, predictions, labels, weights)
    return validation.nan_where(jnp.broadcast_to(invalid, batch_shape), matrix)


def _marked(matrix: Array) -> Array:
    """Per-batch flag of a matrix that carries the -1 count marker of a bad jit input."""
    return jnp.any(matrix < 0, axis=(-2, -1))


def _square(matrix: ArrayLike) -> Array:
    matrix = validation.as_real_array(matrix, "matrix", min_ndim=2)
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

    Conventions: class c is the positive class of its column of counts. A matrix holding a
    negative entry (the -1 marker of a bad input under `jax.jit`) is a result, not an error: its
    batch element's counts are all -1 (NaN for float counts), so every rate of them is NaN. A
    matrix that is not square raises `ValueError`.

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
    matrix = _square(matrix)
    tp = jnp.diagonal(matrix, axis1=-2, axis2=-1)
    fp = matrix.sum(-2) - tp
    fn = matrix.sum(-1) - tp
    tn = matrix.sum((-2, -1))[..., None] - tp - fp - fn
    return validation.nan_where(_marked(matrix), Counts(tp, fp, fn, tn))


def cohen_kappa(matrix: ArrayLike, *, weighting: Kappa = None) -> Array:
    r"""Cohen's kappa of a confusion matrix: agreement beyond what chance would give.

    Matches ``sklearn.metrics.cohen_kappa_score(labels, predictions, weights=weighting)`` on the
    predictions the matrix was counted from (scikit-learn calls the option `weights`; here
    `weights` would read as sample weights, which the matrix already holds). Without a weighting
    it is ``(p_o - p_e) / (1 - p_e)``, p_o the observed and p_e the chance agreement.

    .. math:: \kappa = 1 - \frac{\sum_{ij} c_{ij} O_{ij}}{\sum_{ij} c_{ij} E_{ij}}, \qquad
              E_{ij} = \Big(\sum_k O_{ik}\Big) \Big(\sum_k O_{kj}\Big)

    with O the matrix scaled to proportions and the disagreement cost c_ij = [i != j] (None),
    ``|i - j|`` ("linear") or ``(i - j)^2`` ("quadratic"); the weighted kinds suit ordered
    classes.

    Conventions: the matrix is scaled to proportions before anything is multiplied, so huge
    weights (1e20) cannot overflow. An empty denominator (all the weight in one row and the same
    column, or an empty matrix) gives NaN, as scikit-learn's default. A matrix holding a negative
    entry (the -1 marker of a bad input under `jax.jit`) gives NaN for its batch element; an
    unknown `weighting` or a matrix that is not square raises `ValueError`.

    Args:
      matrix: ``[*batch, C, C]`` confusion matrix (counts or summed weights), rows true classes.
      weighting: None, "linear" or "quadratic": the disagreement cost of cell (i, j).

    Returns:
      A float array of shape ``[*batch]`` (float64 under x64).

    Examples:
      >>> import jaxmetrics as jm
      >>> matrix = jm.confusion_matrix([0, 1, 1, 2, 2, 0], [0, 1, 2, 2, 2, 1], num_classes=3)
      >>> round(float(jm.cohen_kappa(matrix)), 4)
      0.5
      >>> round(float(jm.cohen_kappa(matrix, weighting="quadratic")), 4)
      0.75

    References:
      Cohen (1960), "A coefficient of agreement for nominal scales", Educational and
      Psychological Measurement 20:37-46. Cohen (1968), "Weighted kappa", Psychological
      Bulletin 70:213-220. For the K-class correlation of the same matrix (Gorodkin 2004), see
      `matthews_corrcoef`.
    """
    validation.check_option(weighting, "weighting", _KAPPA_WEIGHTINGS)
    matrix = _square(matrix)
    marked = _marked(matrix)
    dtype = validation.float_dtype()
    shares = safe_divide(matrix, matrix.sum((-2, -1), keepdims=True))
    expected = shares.sum(-1, keepdims=True) * shares.sum(-2, keepdims=True)
    index = np.arange(matrix.shape[-1])
    distance = jnp.asarray(np.abs(index[:, None] - index[None, :]), dtype)
    if weighting is None:
        cost = (distance > 0).astype(dtype)
    else:
        cost = distance if weighting == "linear" else distance**2
    observed_cost = (cost * shares).sum((-2, -1))
    expected_cost = (cost * expected).sum((-2, -1))
    return jnp.where(marked, jnp.nan, 1 - safe_divide(observed_cost, expected_cost, jnp.nan))


def _is_not_finite(values: ArrayLike) -> ArrayLike:
    return ~((values > -np.inf) & (values < np.inf))  # NaN fails both comparisons


def _probability_matrix(probs: ArrayLike, labels: ArrayLike) -> tuple[Array, Array, Array, int]:
    """Class scores ``[*batch, n, C]``, labels int32 ``[*batch, n]``, `invalid` ``[*batch]``
    and C."""
    probs = validation.as_scores(probs, "probs", host=True)
    if probs.ndim < 2:
        raise ValueError(f"`probs` must have shape [*batch, n, C]; got {tuple(probs.shape)}.")
    num_classes = probs.shape[-1]
    labels, invalid_labels = _class_indices(labels, "labels", num_classes)
    if labels.shape[-1] != probs.shape[-2]:
        raise ValueError(
            f"`labels` must have one class per row of `probs`: expected {probs.shape[-2]} samples, "
            f"got shape {tuple(labels.shape)}."
        )
    invalid = validation.check_values(probs, "probs", _is_not_finite, "be finite", sample_axes=2)
    try:
        batch_shape = tuple(np.broadcast_shapes(probs.shape[:-2], labels.shape[:-1]))
    except ValueError:
        raise ValueError(
            f"batch axes must broadcast; got `probs` {tuple(probs.shape)} and `labels` "
            f"{tuple(labels.shape)}."
        ) from None
    invalid = jnp.broadcast_to(invalid | invalid_labels, batch_shape)
    return jnp.asarray(probs), labels, invalid, num_classes


def top_k_accuracy(
    probs: ArrayLike, labels: ArrayLike, *, k: int, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Share of samples whose true class is among their k highest-scored classes.

    Matches ``sklearn.metrics.top_k_accuracy_score(labels, probs, k=k, labels=range(C))``,
    except where the true class ties with others at the k-th place: scikit-learn's sort then
    decides by class index, while here the sample counts the chance that a random tie-break
    keeps its true class in the top k (the rule of `precision_at_k`), so the result never depends
    on the order of the classes. With ``k >= C`` every sample counts 1.

    .. math:: \mathrm{top}_k = \frac{1}{W} \sum_i w_i
              \min\Big(1, \max\Big(0, \frac{k - g_i}{t_i}\Big)\Big)

    with g_i the number of classes scored strictly above sample i's true class, t_i the number
    scored equal to it (itself included), and W the total weight.

    Conventions: NaN or infinite scores, class indices outside [0, C) and negative or
    non-finite weights raise `ValueError` eagerly; under `jax.jit` that batch element is NaN. A
    zero total weight gives NaN. `k` must be a Python or numpy int >= 1 (a bool is refused with
    `TypeError`).

    Args:
      probs: ``[*batch, n, C]`` class scores (probabilities or logits: only their order counts).
      labels: ``[*batch, n]`` true class indices in [0, C).
      k: the number of top places, a positive int (static).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6],
      ...          [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.6, 0.2]]
      >>> labels = [0, 1, 2, 2, 1, 0]
      >>> round(float(jm.top_k_accuracy(probs, labels, k=1)), 4)
      0.6667
      >>> # the last sample's true class ties with another for 2nd place: it counts 1/2
      >>> round(float(jm.top_k_accuracy(probs, labels, k=2)), 4)
      0.9167
    """
    k = validation.check_count(k, "k")
    probs, labels, invalid, _ = _probability_matrix(probs, labels)
    true_score = jnp.take_along_axis(probs, labels[..., None], axis=-1)
    higher = (probs > true_score).sum(-1)
    tied = (probs == true_score).sum(-1)  # includes the true class itself
    hit = jnp.clip((k - higher) / tied, 0.0, 1.0).astype(validation.float_dtype())
    if sample_weight is None:
        value = hit.mean(-1)
    else:
        weights = validation.as_real_array(sample_weight, "sample_weight", host=True)
        validation.sample_axis_shapes([("labels", labels), ("sample_weight", weights)])
        invalid = invalid | validation.check_weights(weights)
        weights = jnp.asarray(weights).astype(hit.dtype)
        value = safe_divide((hit * weights).sum(-1), weights.sum(-1))
    return validation.nan_where(invalid, value)


def multiclass_roc_auc(
    probs: ArrayLike,
    labels: ArrayLike,
    *,
    average: RocAucAverage = "macro",
    multi_class: MultiClass = "ovr",
) -> Array:
    r"""Multiclass ROC AUC, one-vs-rest or one-vs-one (Hand & Till's M).

    Matches ``sklearn.metrics.roc_auc_score(labels, probs, multi_class=multi_class,
    average=average)``, except that the rows of `probs` need not sum to 1 (scikit-learn refuses
    them; only the order of each class's scores counts) and that a class without samples makes
    its AUCs NaN (scikit-learn raises). "ovr": class c's scores against membership of class c;
    "macro" averages the C AUCs, "weighted" weighs them by prevalence, None returns them. "ovo":
    for each pair of classes, the mean of the two one-against-the-other AUCs over the samples of
    the pair; "macro" averages the pairs, "weighted" weighs a pair by its number of samples.

    .. math:: \mathrm{OvR}_c = \mathrm{AUC}\big(p_{\cdot c},\ [y = c]\big), \qquad
              M = \frac{2}{C (C - 1)} \sum_{a < b} \frac{A(a \mid b) + A(b \mid a)}{2}

    with A(a | b) the AUC of class a's scores separating the samples of a from those of b.

    Conventions: ties between scores count 1/2, as in `roc_auc`. An average over a NaN AUC is
    NaN. NaN or infinite scores and class indices outside [0, C) raise `ValueError`
    eagerly; under `jax.jit` that batch element is NaN. An unknown `average` or `multi_class`,
    and ``average=None`` with "ovo", raise `ValueError`.

    Args:
      probs: ``[*batch, n, C]`` class scores.
      labels: ``[*batch, n]`` true class indices in [0, C).
      average: "macro", "weighted", or None for the per-class AUCs ("ovr" only).
      multi_class: "ovr" (one-vs-rest) or "ovo" (one-vs-one).

    Returns:
      A float array of shape ``[*batch]``; ``[*batch, C]`` with ``average=None``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6],
      ...          [0.3, 0.3, 0.4], [0.5, 0.4, 0.1], [0.2, 0.6, 0.2]]
      >>> labels = [0, 1, 2, 2, 1, 0]
      >>> round(float(jm.multiclass_roc_auc(probs, labels)), 4)
      0.8125
      >>> round(float(jm.multiclass_roc_auc(probs, labels, multi_class="ovo")), 4)
      0.8125

    References:
      Hand & Till (2001), "A simple generalisation of the area under the ROC curve for multiple
      class classification problems", Machine Learning 45:171-186.
    """
    validation.check_option(multi_class, "multi_class", _MULTI_CLASS)
    validation.check_option(average, "average", _ROC_AUC_AVERAGES)
    if multi_class == "ovo" and average is None:
        raise ValueError(
            "`average` must be 'macro' or 'weighted' with multi_class='ovo'; got None."
        )
    probs, labels, invalid, num_classes = _probability_matrix(probs, labels)
    by_class = jnp.swapaxes(probs, -1, -2)  # [*batch, C, n]: the samples on the last axis
    classes = jnp.arange(num_classes)[:, None]
    members = (labels[..., None, :] == classes).astype(jnp.int32)  # [*batch, C, n]
    prevalence = members.sum(-1).astype(validation.float_dtype())
    if multi_class == "ovr":
        aucs = ranking.roc_auc(by_class, members)
        weight = prevalence
    else:
        first, second = np.triu_indices(num_classes, k=1)
        in_pair = members[..., first, :] + members[..., second, :]  # sample weights 0/1
        forward = ranking.roc_auc(
            by_class[..., first, :], members[..., first, :], sample_weight=in_pair
        )
        backward = ranking.roc_auc(
            by_class[..., second, :], members[..., second, :], sample_weight=in_pair
        )
        aucs = (forward + backward) / 2
        weight = prevalence[..., first] + prevalence[..., second]
    aucs = validation.nan_where(invalid, aucs)
    if average is None:
        return aucs
    if average == "macro":
        return aucs.mean(-1)
    return (aucs * weight).sum(-1) / weight.sum(-1)


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

    Conventions: undefined rates (a class never predicted, a class without members) are
    `zero_division`, NaN by default. Bad input as `confusion_matrix`: eagerly a `ValueError`;
    under `jax.jit` a bad batch element has every rate and the accuracy NaN and its support -1.

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
    rates and a support of -1 for its batch element.
    """
    counts = one_vs_rest(matrix)
    rates = {
        "precision": counts_lib.precision,
        "recall": counts_lib.recall,
        "f1": counts_lib.f_beta,
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
    support, accuracy = validation.nan_where(_marked(matrix), (counts.tp + counts.fn, accuracy))
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
