"""Agreement of predictions with labels beyond chance: Matthews correlation and Cohen's kappa.

Both read a ``[*batch, C, C]`` confusion matrix (Matthews also binary `Counts`) and correct the
raw agreement for what chance would give, so a constant or random prediction scores about 0.
"""

from __future__ import annotations

import functools
import math

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import coercion, kernels
from jaxmetrics._src.core.numerics import float_dtype, safe_divide, scaled_for_products
from jaxmetrics._src.core.options import check_option
from jaxmetrics._src.core.typing import Array, ArrayLike, Kappa, options_of
from jaxmetrics._src.metrics.counts import Counts
from jaxmetrics._src.metrics.multiclass import check_square, marked

_KAPPA_WEIGHTINGS = options_of(Kappa)


def _float(x: Array) -> Array:
    return x.astype(float_dtype())


def matthews_corrcoef(
    counts_or_matrix: Counts | ArrayLike, *, zero_division: float = math.nan
) -> Array:
    r"""Matthews correlation coefficient of binary `Counts` or of a ``[*batch, C, C]`` matrix.

    Matches `sklearn.metrics.matthews_corrcoef` on the predictions the counts or the matrix were
    taken from, except that an empty denominator (a constant prediction, or a single class
    present) gives `zero_division`, NaN by default, where scikit-learn returns 0.0. It is the
    correlation of the predicted and the true labels, in [-1, 1]; for a C x C confusion matrix
    it is Gorodkin's R_K statistic, as in scikit-learn.

    .. math:: \mathrm{MCC} = \frac{TP \cdot TN - FP \cdot FN}
              {\sqrt{(TP+FP)(TP+FN)(TN+FP)(TN+FN)}}, \qquad
              R_K = \frac{c\, s - \sum_k p_k t_k}
              {\sqrt{\left(s^2 - \sum_k p_k^2\right)\left(s^2 - \sum_k t_k^2\right)}}

    with c the trace of the matrix, s its total, p_k the samples predicted as class k and t_k
    the samples of true class k.

    Products are formed in float, so large integer counts cannot overflow; a matrix that is not
    square raises `ValueError`. Bad input (counts or cells of -1): docs/conventions.md.

    Args:
      counts_or_matrix: `Counts` whose fields share a shape ``[*batch]``, or a ``[*batch, C, C]``
        confusion matrix with rows the true and columns the predicted class (as
        `confusion_matrix` and `sklearn.metrics.confusion_matrix` return it).
      zero_division: the value where the denominator is 0; NaN by default.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> screening = jm.Counts(tp=90, fp=891, fn=10, tn=9009)  # 1% prevalence, 10,000 tested
      >>> round(float(jm.matthews_corrcoef(screening)), 4)
      0.2709
      >>> round(float(jm.matthews_corrcoef([[3, 1], [1, 3]])), 4)  # a 2 x 2 confusion matrix
      0.5

    References:
      Matthews (1975), "Comparison of the predicted and observed secondary structure of T4 phage
      lysozyme", Biochimica et Biophysica Acta 405:442-451. Gorodkin (2004), "Comparing two
      K-category assignments by a K-category correlation coefficient", Computational Biology
      and Chemistry 28:367-374.
    """
    if isinstance(counts_or_matrix, Counts):
        return _mcc_of_counts(Counts(*map(coercion.as_given, counts_or_matrix)), zero_division)
    matrix = coercion.as_real_array(counts_or_matrix, "counts_or_matrix", min_ndim=2)
    if matrix.shape[-1] != matrix.shape[-2]:
        raise ValueError(
            f"`counts_or_matrix` must be Counts or a square [*batch, C, C] matrix; "
            f"got shape {matrix.shape}."
        )
    return _mcc_of_matrix(matrix, zero_division)


# One compiled program per call (eagerly, each operation was a program of its own: 10-11 to
# compile for each new shape, and as many dispatches per call); inlined in a caller's trace.
@kernels.sample_jit
def _mcc_of_counts(c: Counts, zero_division) -> Array:
    c = Counts(*(_float(x) for x in c))
    invalid = (c.tp < 0) | (c.fp < 0) | (c.fn < 0) | (c.tn < 0)
    c = Counts(*scaled_for_products(c, sum(c)))  # counts of 1e20: tp tn would overflow
    numerator = c.tp * c.tn - c.fp * c.fn
    denominator = jnp.sqrt((c.tp + c.fp) * (c.tp + c.fn)) * jnp.sqrt((c.tn + c.fp) * (c.tn + c.fn))
    return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))


@kernels.sample_jit
def _mcc_of_matrix(matrix: Array, zero_division) -> Array:
    # a matrix marked bad under jit (-1 cells) has no correlation: NaN
    invalid = marked(matrix)
    matrix = _float(matrix)
    (matrix,) = scaled_for_products((matrix,), matrix.sum((-2, -1), keepdims=True))
    true_per_class = matrix.sum(axis=-1)
    predicted_per_class = matrix.sum(axis=-2)
    correct = jnp.trace(matrix, axis1=-2, axis2=-1)
    total = matrix.sum(axis=(-2, -1))
    numerator = correct * total - (predicted_per_class * true_per_class).sum(-1)
    denominator = jnp.sqrt(total**2 - (predicted_per_class**2).sum(-1)) * jnp.sqrt(
        total**2 - (true_per_class**2).sum(-1)
    )
    return jnp.where(invalid, jnp.nan, safe_divide(numerator, denominator, zero_division))


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

    The matrix is scaled to proportions before anything is multiplied, so huge weights (1e20)
    cannot overflow. An empty denominator (all the weight in one row and the same column, or an
    empty matrix) gives NaN, as scikit-learn's default; a negative entry (the -1 marker of bad
    input, docs/conventions.md) gives NaN for its batch element; an unknown `weighting` or a
    matrix that is not square raises `ValueError`.

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
    check_option(weighting, "weighting", _KAPPA_WEIGHTINGS)
    return _kappa(check_square(matrix), weighting=weighting)


@functools.partial(kernels.sample_jit, static_argnames=("weighting",))
def _kappa(matrix: Array, *, weighting: Kappa) -> Array:
    """`cohen_kappa` of a checked square matrix, in one compiled program."""
    invalid = marked(matrix)
    dtype = float_dtype()
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
    return jnp.where(invalid, jnp.nan, 1 - safe_divide(observed_cost, expected_cost, jnp.nan))
