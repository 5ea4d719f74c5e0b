"""Proper scores of ``[*batch, n, C]`` class probabilities: multiclass log loss and Brier score.

Both read every class's probability, so, unlike the multiclass ranking metrics, they need rows
that are probability vectors: entries in [0, 1] whose sum is 1 within `ROW_SUM_TOLERANCE`.
Each public function checks its inputs (numpy, on the host, when they are concrete), then runs
one compiled program; an eager call on float64 probabilities while x64 is off is scored on the
host in float64, as scikit-learn scores it.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike

# A row of class probabilities may miss a sum of 1 by this much (absolute): what rounding to two
# or three decimals in a text file, or computing in bfloat16, leaves; logits, one-vs-rest scores
# or a missing class miss it by far more.
ROW_SUM_TOLERANCE = 0.01

ROW_SUMS = checks.Rule(
    lambda total: ~(abs(total - 1) <= ROW_SUM_TOLERANCE),
    f"have rows that sum to 1 (within {ROW_SUM_TOLERANCE}: class probabilities)",
    lambda total: f"a row summing to {total:.6g}",
)


def _class_index(num_classes: int) -> checks.Rule:
    return checks.Rule(
        lambda values: (values < 0) | (values >= num_classes),
        f"be class indices in [0, {num_classes}) (C, the last axis of `probs`)",
    )


def _inputs(probs: ArrayLike, labels: ArrayLike, sample_weight: ArrayLike | None) -> tuple:
    """(probs, labels, weights, invalid, host): shapes checked, values raised on or flagged.

    `probs` in the float type of the results, `labels` int32, `invalid` the per-batch flag of
    every check; `host` is (probs, labels, weights) as numpy when the call is eager and the
    probabilities are float64 while x64 is off (JAX would round them to float32), else None.
    """
    given = coercion.as_real_array(probs, "probs", min_ndim=2, host=True)
    if given.shape[-2] == 0:
        raise ValueError(
            f"`probs` is empty: at least one sample (a row of [*batch, n, C]) is needed; got "
            f"shape {tuple(given.shape)}."
        )
    num_classes = given.shape[-1]
    if num_classes < 2:
        raise ValueError(
            f"`probs` must have at least 2 classes on its last axis ([*batch, n, C]); got shape "
            f"{tuple(given.shape)}."
        )
    labels_given = coercion.as_real_array(labels, "labels", host=True)
    if not any(jnp.issubdtype(labels_given.dtype, kind) for kind in (jnp.integer, jnp.bool_)):
        raise TypeError(
            f"`labels` must hold integer class indices; got dtype {labels_given.dtype}."
        )
    invalid_labels = checks.check(labels_given, "labels", _class_index(num_classes))
    weights = None
    invalid_weights = np.zeros((), bool)
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
        coercion.sample_axis_shapes([("labels", labels_given), ("sample_weight", weights)])
        invalid_weights = checks.check_weights(weights)
    if labels_given.shape[-1] != given.shape[-2]:
        raise ValueError(
            f"`labels` must have one class per row of `probs`: expected {given.shape[-2]} "
            f"samples, got shape {tuple(labels_given.shape)}."
        )
    batches = [given.shape[:-2], labels_given.shape[:-1]]
    batches += [] if weights is None else [weights.shape[:-1]]
    try:
        batch_shape = tuple(np.broadcast_shapes(*batches))
    except ValueError:
        shapes = f"`probs` {tuple(given.shape)}, `labels` {tuple(labels_given.shape)}"
        shapes += "" if weights is None else f", `sample_weight` {tuple(weights.shape)}"
        raise ValueError(f"batch axes must broadcast; got {shapes}.") from None
    invalid_probs = checks.check(given, "probs", checks.PROBABILITY, sample_axes=2)
    if isinstance(given, np.ndarray):  # known: summed exactly enough in float64
        totals = given.sum(axis=-1, dtype=np.float64)
    else:
        totals = given.astype(float_dtype()).sum(axis=-1)
    invalid_rows = checks.check(totals, "probs", ROW_SUMS)
    invalid = invalid_probs | invalid_rows | invalid_labels | invalid_weights
    invalid = (np if isinstance(invalid, np.ndarray) else jnp).broadcast_to(invalid, batch_shape)
    host_labels = checks.host_values(labels_given)
    host_weights = None if weights is None else checks.host_values(weights)
    if (
        isinstance(given, np.ndarray)
        and given.dtype == np.float64
        and not jax.config.jax_enable_x64
        and host_labels is not None
        and (weights is None or host_weights is not None)
    ):
        return None, None, None, invalid, (given, host_labels, host_weights)
    probs = coercion.to_device(given).astype(float_dtype())
    labels = coercion.to_device(labels_given).astype(jnp.int32)
    if weights is not None:
        weights = coercion.to_device(weights)
    return probs, labels, weights, invalid, None


def _terms(probs, labels, xp, kind: str):
    """Each sample's loss: `kind` "log_loss" or "brier", in the array namespace `xp`."""
    truth = labels[..., None] == xp.arange(probs.shape[-1])  # [*batch, n, C] one-hot
    if kind == "brier":
        return ((probs - truth.astype(probs.dtype)) ** 2).sum(-1)
    eps = xp.finfo(probs.dtype).eps  # scikit-learn's clip: the machine epsilon of the input
    of_truth = xp.where(truth, probs, 0).sum(-1)  # exact: every other term is 0
    return -xp.log(xp.clip(of_truth, eps, 1 - eps))


@functools.partial(jax.jit, static_argnames="kind")
def _score(probs, labels, weights, invalid, *, kind: str) -> Array:
    terms = _terms(probs, labels, jnp, kind)
    if weights is None:
        value = terms.mean(-1)
    else:
        weights = weights.astype(terms.dtype)
        value = safe_divide((terms * weights).sum(-1), weights.sum(-1))
    return batching.nan_where(jnp.broadcast_to(invalid, value.shape), value)


def _score_on_host(probs, labels, weights, kind: str) -> Array:
    """The float64 score on the host (an eager float64 call while x64 is off), as float32."""
    terms = _terms(probs, labels, np, kind)
    if weights is None:
        value = terms.mean(-1)
    else:
        terms, weights = np.broadcast_arrays(terms, weights.astype(np.float64))
        total = weights.sum(-1)
        with np.errstate(invalid="ignore", divide="ignore"):
            value = np.where(total > 0, (terms * weights).sum(-1) / total, np.nan)
    # transferred without a program: `jnp.asarray` compiles one per shape
    return jax.device_put(np.asarray(value, float_dtype()))


def _evaluate(probs, labels, sample_weight, kind: str) -> Array:
    probs, labels, weights, invalid, host = _inputs(probs, labels, sample_weight)
    if host is not None:
        return _score_on_host(*host, kind)
    return _score(probs, labels, weights, invalid, kind=kind)


def multiclass_log_loss(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Multiclass cross-entropy: minus the mean log probability given to the true class.

    Matches ``sklearn.metrics.log_loss(labels, probs, labels=range(C),
    sample_weight=sample_weight)``: the probability of the true class is clipped to
    ``[eps, 1 - eps]`` with ``eps`` the machine epsilon of the input's dtype (float32:
    1.19e-7, so a confident mistake costs about 15.9; float64: about 36.0), and the rows are not
    renormalised. With C = 2 it equals `log_loss` of the second column.

    .. math:: \mathrm{LL} = -\frac{\sum_i w_i \log p_{i, y_i}}{\sum_i w_i}

    Each row of `probs` must hold probabilities in [0, 1] summing to 1 within
    `ROW_SUM_TOLERANCE` (0.01, absolute; scikit-learn only warns, past ``sqrt(eps)``): scores
    that are not probabilities raise ``ValueError`` naming the row, or give NaN under
    `jax.jit`. A zero total weight gives NaN. Called eagerly on float64 input, it is computed
    in float64 on the host (scikit-learn's result) and returned as float32 while x64 is off.
    Bad input and precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n, C]`` class probabilities, one row per sample.
      labels: ``[*batch, n]`` true class indices in [0, C).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]]
      >>> round(float(jm.multiclass_log_loss(probs, [0, 1, 2, 1])), 4)
      0.6912

    References:
      Good (1952), "Rational decisions", Journal of the Royal Statistical Society B 14:107-114.
    """
    return _evaluate(probs, labels, sample_weight, "log_loss")


def multiclass_brier_score(
    probs: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> Array:
    r"""Multiclass Brier score: the mean over samples of the squared distance between the row of
    class probabilities and the one-hot true class, summed over the classes (0 to 2).

    Matches ``sklearn.metrics.brier_score_loss(labels, probs, labels=range(C),
    sample_weight=sample_weight, scale_by_half=False)``, which is scikit-learn's default for
    C >= 3. Brier's original definition; with C = 2 it is twice the binary `brier_score` of the
    second column (scikit-learn's default then halves it).

    .. math:: \mathrm{BS} = \frac{\sum_i w_i \sum_c (p_{ic} - [y_i = c])^2}{\sum_i w_i}

    Each row of `probs` must hold probabilities in [0, 1] summing to 1 within
    `ROW_SUM_TOLERANCE` (0.01, absolute), as in `multiclass_log_loss`; a zero total weight
    gives NaN; float64 input is scored in float64 when called eagerly. Bad input and
    precision: docs/conventions.md.

    Args:
      probs: ``[*batch, n, C]`` class probabilities, one row per sample.
      labels: ``[*batch, n]`` true class indices in [0, C).
      sample_weight: optional ``[*batch, n]`` non-negative weights.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> probs = [[0.7, 0.2, 0.1], [0.2, 0.5, 0.3], [0.1, 0.3, 0.6], [0.3, 0.3, 0.4]]
      >>> round(float(jm.multiclass_brier_score(probs, [0, 1, 2, 1])), 4)
      0.38

    References:
      Brier (1950), "Verification of forecasts expressed in terms of probability", Monthly
      Weather Review 78:1-3.
    """
    return _evaluate(probs, labels, sample_weight, "brier")
