"""Partial ROC AUC over a band of false positive rates or of true positive rates, as pROC's.

Read off the ranking engine like every sort-based metric (`sorting.rank_and_tally`): one sort,
then each tie group's segment of the empirical ROC curve, from the point just above its score to
its own point (tied scores move together: a diagonal segment). The band cuts the segments that
cross its edges by linear interpolation, so the area is exact on that piecewise linear curve.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import sorting, terms
from jaxmetrics._src.core.numerics import float_dtype, safe_divide
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe

# A partial area below the diagonal's by more than this many float epsilons (of the band width)
# has no McClish correction: rounding alone must not turn a curve on the diagonal into NaN.
_ROUNDING_EPSILONS = 64


@recipe.order_only
def partial_roc_auc(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    fpr_range: tuple[float, float] | None = None,
    tpr_range: tuple[float, float] | None = None,
    correct: bool = False,
    sample_weight: ArrayLike | None = None,
) -> Array:
    r"""Partial area under the ROC curve over a band of FPR or of TPR, pROC's partial AUC.

    Matches pROC's ``auc(roc, partial.auc=..., partial.auc.focus=..., partial.auc.correct=...)``:
    ``fpr_range=(a, b)`` is ``partial.auc=c(1 - a, 1 - b)`` with the focus on specificity (the
    area under the curve between the false positive rates a and b); ``tpr_range=(a, b)`` is
    ``partial.auc=c(b, a)`` with the focus on sensitivity (pROC's area between the curve and
    the right edge of the plot, i.e. under the specificity as a function of the sensitivity,
    between the true positive rates a and b). scikit-learn's `roc_auc_score(max_fpr=m)` is the
    corrected ``fpr_range=(0, m)`` (`roc_auc`'s `max_fpr`), except below the diagonal.

    .. math::

      A_{\mathrm{FPR}}(a, b) = \int_a^b \mathrm{TPR}\, d\,\mathrm{FPR}, \qquad
      A_{\mathrm{TPR}}(a, b) = \int_a^b (1 - \mathrm{FPR})\, d\,\mathrm{TPR}, \qquad
      A_{\mathrm{corrected}} = \frac12\left(1 + \frac{A - A_{\min}}{A_{\max} - A_{\min}}\right)

    over the empirical ROC curve, with McClish's bounds ``A_max = b - a`` (a perfect curve) and
    A_min the area of the diagonal over the band: ``(b^2 - a^2) / 2`` for `fpr_range`,
    ``(b - a) - (b^2 - a^2) / 2`` for `tpr_range` (pROC's one formula for both foci). The full
    band (0, 1) gives the AUC, corrected or not.

    The ROC curve is the empirical one, its points those of `roc_curve`, tied scores joined by
    a straight (diagonal) segment, and a band edge inside a segment cuts it by linear
    interpolation (as pROC). The bounds may come in either order. With one class present (or
    all the weight on one class) the curve and the area are undefined: NaN. The corrected area
    is NaN where the curve lies below the diagonal over the band (pROC: NA, "correction not
    defined for ROC curves below the diagonal"), up to rounding: an area below A_min by less
    than 64 float epsilons of the band width is corrected (to about 1/2). Bad input, weights
    and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      fpr_range: ``(a, b)``, the band of false positive rates (1 - specificity) in [0, 1], in
        either order; exactly one of `fpr_range` and `tpr_range` is given.
      tpr_range: ``(a, b)``, the band of true positive rates (sensitivity) in [0, 1].
      correct: McClish's standardisation (pROC's ``partial.auc.correct=TRUE``): 1/2 for the
        diagonal, 1 for a perfect curve; needs a band of positive width.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`.

    Returns:
      A float array of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> float(jm.partial_roc_auc(scores, labels, fpr_range=(0, 0.5)))  # 0.25 x 1/2 + 0.25 x 3/4
      0.3125
      >>> float(jm.partial_roc_auc(scores, labels, fpr_range=(0, 0.5), correct=True))
      0.75
      >>> float(jm.partial_roc_auc(scores, labels, tpr_range=(0.5, 1)))  # specificity over tpr
      0.3125

    References:
      McClish (1989), "Analyzing a portion of the ROC curve", Medical Decision Making
      9:190-195. Robin et al. (2011), "pROC: an open-source package for R and S+ to analyze
      and compare ROC curves", BMC Bioinformatics 12:77.
    """
    if (fpr_range is None) == (tpr_range is None):
        raise ValueError(
            "exactly one of `fpr_range` and `tpr_range` must be given; got "
            f"fpr_range={fpr_range!r}, tpr_range={tpr_range!r}."
        )
    if not isinstance(correct, (bool, np.bool_)):
        raise TypeError(f"`correct` must be True or False; got {correct!r}.")
    focus, band = ("fpr", fpr_range) if fpr_range is not None else ("tpr", tpr_range)
    low, high = _check_band(band, f"{focus}_range")
    if correct and low == high:  # before rounding
        raise ValueError(
            f"`{focus}_range` must have two different bounds with `correct=True` (McClish's "
            f"standardisation divides by the band's width); got {band!r}."
        )
    # the bounds travel as a traced array: a new band needs no new compilation
    dtype = float_dtype()
    low, high = (float(np.asarray(bound, dtype)) for bound in (low, high))
    if correct and low == high:
        raise ValueError(
            f"`{focus}_range` is narrower than {np.dtype(dtype).name} can resolve near {low}; "
            f"`correct=True` divides by the band's width. Got {band!r}."
        )
    # McClish's A_max - A_min, in float64 on the bounds as the kernel sees them: the two areas
    # are close near an edge of the plot (both ~1e-4 over (0.9999, 1), their difference 5e-9),
    # and `(b^2 - a^2) / 2` cancels in float32
    if focus == "fpr":
        span = (high - low) * (2 - low - high) / 2
    else:
        span = (high - low) * (low + high) / 2
    bounds = np.array([low, high, span], dtype)
    area, _ = recipe.sorted_metric(
        _partial_auc_kernel,
        scores,
        labels,
        sample_weight,
        bounds,
        focus=focus,
        correct=bool(correct),
    )
    return area


def _check_band(band: Any, name: str) -> tuple[float, float]:
    """A pair of bounds in [0, 1] (either order), as sorted Python floats (static options)."""
    try:
        if any(isinstance(bound, (bool, np.bool_, str)) for bound in band):
            raise TypeError
        low, high = (float(bound) for bound in band)
    except (TypeError, ValueError):
        raise TypeError(f"`{name}` must be a pair of numbers (low, high); got {band!r}.") from None
    if not (0 <= low <= 1 and 0 <= high <= 1):  # NaN fails too
        raise ValueError(f"`{name}` must hold two bounds within [0, 1]; got {band!r}.")
    return min(low, high), max(low, high)


def _band_area(u0: Array, u1: Array, v0: Array, v1: Array, low: Array, high: Array) -> Array:
    """Integral of v du over ``low <= u <= high`` along each segment (u0, v0) -> (u1, v1).

    Segments run with u non-decreasing; one parallel to the v axis (u0 == u1) has no area.
    """
    left, right = jnp.clip(u0, low, high), jnp.clip(u1, low, high)
    slope = safe_divide(v1 - v0, u1 - u0, 0.0)

    def at(u: Array) -> Array:
        # from the nearer end: a segment inside the band keeps its exact end values, and a band
        # edge near one end does not subtract two large numbers
        return jnp.where(u - u0 <= u1 - u, v0 + slope * (u - u0), v1 - slope * (u1 - u))

    return (right - left) * (at(left) + at(right)) / 2


def _partial_auc_kernel(
    scores: Array,
    labels: Array,
    weights: Array | None,
    bounds: Array,
    *,
    focus: str,
    correct: bool,
) -> Array:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    dtype = float_dtype()
    low, high, span = bounds[0], bounds[1], bounds[2]
    fpr_above, fpr, tpr_above, tpr = terms.roc_segments(groups, dtype)
    u_above, u = (fpr_above, fpr) if focus == "fpr" else (tpr_above, tpr)
    if focus == "fpr":  # the sensitivity over the false positive rate
        pieces = _band_area(fpr_above, fpr, tpr_above, tpr, low, high)
    else:  # the specificity over the true positive rate
        pieces = _band_area(tpr_above, tpr, 1 - fpr_above, 1 - fpr, low, high)
    area = jnp.where(ranked.is_group_start, pieces, 0).sum()
    one_class = (groups.total_positive == 0) | (groups.total_negative == 0)
    area = jnp.where(one_class, jnp.nan, area)
    if not correct:
        return area
    # A - A_min, integrated directly: the height above the diagonal is tpr - fpr for both foci,
    # so nothing cancels however close the band is to an edge
    above = _band_area(u_above, u, tpr_above - fpr_above, tpr - fpr, low, high)
    excess = jnp.where(one_class, jnp.nan, jnp.where(ranked.is_group_start, above, 0).sum())
    corrected = (1 + excess / span) / 2
    rounding = _ROUNDING_EPSILONS * jnp.finfo(dtype).eps * (high - low)
    return jnp.where(excess < -rounding, jnp.nan, corrected)
