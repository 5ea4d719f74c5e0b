"""Clinical operating points: the Youden and closest-to-corner thresholds, sensitivity at a
specificity floor and back, a bootstrap band of the ROC curve (pROC's ``coords``, ``ci.se``).

Each search sorts the scores once and scores every tie group from the ranking engine's counts, as
`thresholds.py` does, plus one extra candidate above every score: "flag nothing" (threshold
``+inf``, sensitivity 0, specificity 1). Each returns an `OperatingPoint`, whose threshold follows
the rule "predicted positive iff score >= threshold" and is one of the input's own values (decoded
as in `thresholds.py`). pROC reports the midpoint between two neighbouring scores instead: same
operating point, another number. Objectives compare integer-valued keys (``tp N - fp P`` for
Youden's J): ties are exact ties for integer weights, with their rule stated per function. The
criterion is traced, not static: one compiled program serves the four searches.
"""

from __future__ import annotations

import dataclasses
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks, coercion, exact_order, sorting
from jaxmetrics._src.core.floors import check_level, meets_floor, split_level
from jaxmetrics._src.core.numerics import float_dtype, safe_divide, scaled_for_products
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe
from jaxmetrics._src.stats.bootstrap import bootstrap


class OperatingPoint(NamedTuple):
    """A chosen operating point of a ranking: its criterion value, threshold and rates.

    What `youden_threshold`, `closest_to_corner_threshold`, `sensitivity_at_specificity` and
    `specificity_at_sensitivity` return. All fields are NaN where the point is undefined (one
    class absent, or all its weight zero) and, under `jax.jit`, where the batch element's input
    held a bad value. To bootstrap one field, hand `bootstrap` a function returning that field
    (``lambda s, y, sample_weight: f(s, y, sample_weight=sample_weight).value``).

    Attributes:
      value: ``[*batch]`` the criterion: Youden's J, the distance to the corner, the sensitivity
        or the specificity.
      threshold: ``[*batch]`` "positive iff ``score >= threshold``": one of the input's own score
        values (a float64 numpy array for eager float64 input while x64 is off), or ``+inf``
        (flag nothing).
      sensitivity: ``[*batch]`` TP / P at the threshold.
      specificity: ``[*batch]`` TN / N at the threshold.
    """

    value: Array
    threshold: Array
    sensitivity: Array
    specificity: Array


class RocBand(NamedTuple):
    """Bootstrap intervals of the sensitivity at a grid of specificities (what `roc_band` returns).

    Attributes:
      specificity: ``[S]`` the specificity floors, as given (float64 numpy).
      sensitivity: ``[*batch, S]`` the sensitivity at each floor on the full data.
      low: ``[*batch, S]`` the lower ends of the percentile intervals.
      high: ``[*batch, S]`` the upper ends.
    """

    specificity: Array
    sensitivity: Array
    low: Array
    high: Array


def _points(groups: sorting.Groups) -> tuple[Array, Array, Array, Array]:
    """(tp, fp) of every position with "flag nothing" appended last, and (P, N), in floats,
    scaled where the criteria's products would overflow (`scaled_for_products`)."""
    dtype = float_dtype()
    nothing = jnp.zeros(1, groups.tp.dtype)
    tp = jnp.concatenate([groups.tp, nothing]).astype(dtype)
    fp = jnp.concatenate([groups.fp, nothing]).astype(dtype)
    p, n = groups.total_positive.astype(dtype), groups.total_negative.astype(dtype)
    return scaled_for_products((tp, fp, p, n), jnp.maximum(p, n))


_CRITERIA = ("youden", "corner", "sensitivity", "specificity")


def _search_kernel(
    scores: Array, labels: Array, weights: Array | None, parameters: Array
) -> tuple[Array, Array, Array, Array]:
    """The best point of criterion ``_CRITERIA[parameters[0]]`` with floor ``parameters[1]``."""
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    tp, fp, p, n = _points(groups)
    sensitivity, specificity = safe_divide(tp, p), safe_divide(n - fp, n)
    criterion, floor = parameters[0].astype(jnp.int32), (parameters[1], parameters[2])
    # keys to maximise, integers for integer weights (exact below 2^24 in float32: ties are
    # ties): J P N = tp N - fp P, -d^2 P^2 N^2 = -(fn N)^2 - (fp P)^2, TP, TN - N
    keys = jnp.stack([tp * n - fp * p, -(((p - tp) * n) ** 2 + (fp * p) ** 2), tp, -fp])
    always = jnp.ones_like(tp, bool)
    # floors compared exactly (`meets_floor`): a float32 floor rounds to the rate it excludes
    feasible = [always, always, meets_floor(n - fp, n, floor), meets_floor(tp, p, floor)]
    feasible = jnp.stack([jnp.broadcast_to(f, tp.shape) for f in feasible])
    # flagging nothing (last) ties with flagging everything for J and the distance: left out
    candidate = jnp.concatenate([groups.is_point, (criterion >= 2)[None]]) & feasible[criterion]
    key = jnp.where(candidate, keys[criterion], -jnp.inf)
    # ties go to the highest threshold (most specific), for `specificity_at_sensitivity` lowest
    highest = key.shape[0] - 1 - jnp.argmax(key[::-1])
    best = jnp.where(criterion == 3, jnp.argmax(key), highest)
    sensitivity, specificity = sensitivity[best], specificity[best]
    values = [sensitivity + specificity - 1, jnp.hypot(1 - sensitivity, 1 - specificity)]
    value = jnp.stack([*values, sensitivity, specificity])[criterion]
    threshold = jnp.concatenate([ranked.scores, jnp.full(1, jnp.inf, ranked.scores.dtype)])[best]
    defined = (p > 0) & (n > 0) & candidate.any()
    return tuple(
        jnp.where(defined, x, jnp.nan) for x in (value, threshold, sensitivity, specificity)
    )


def _search(scores, labels, sample_weight, criterion: str, level: float = 0.0) -> OperatingPoint:
    parameters = [_CRITERIA.index(criterion), *split_level(level)]
    parameters = np.asarray(parameters, float_dtype())
    result, codec = recipe.sorted_metric(_search_kernel, scores, labels, sample_weight, parameters)
    value, threshold, sensitivity, specificity = result
    return OperatingPoint(value, codec.decode(threshold), sensitivity, specificity)


def youden_threshold(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> OperatingPoint:
    r"""The threshold of largest Youden's J = sensitivity + specificity - 1 (pROC's "youden").

    Matches pROC's ``coords(roc, "best", best.method="youden")`` (whose "youden" column is
    J + 1), found exactly from one sort: every distinct score is tried.

    .. math:: J = \max_t \left(\frac{TP(t)}{P} + \frac{TN(t)}{N} - 1\right)

    Ties in J go to the highest threshold (the most specific of the equally good rules; pROC
    lists them all). Flagging nothing is not a candidate (its J is 0, which flagging everything
    attains too). Choose the threshold on validation data, never on the test set. Threshold
    rule, bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`; integer weights count as repeated rows.

    Returns:
      `OperatingPoint` ``(value, threshold, sensitivity, specificity)`` with value J, each of
      shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> point = jm.youden_threshold(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> float(point.value), float(point.threshold)  # J = 0.5 at 0.8, 0.6 and 0.3: the highest
      (0.5, 0.8)

    References:
      Youden (1950), "Index for rating diagnostic tests", Cancer 3:32-35. Robin et al. (2011),
      "pROC: an open-source package for R and S+ to analyze and compare ROC curves", BMC
      Bioinformatics 12:77.
    """
    return _search(scores, labels, sample_weight, "youden")


def closest_to_corner_threshold(
    scores: ArrayLike, labels: ArrayLike, *, sample_weight: ArrayLike | None = None
) -> OperatingPoint:
    r"""The threshold closest to the ROC plot's corner (0, 1) (pROC's "closest.topleft").

    Matches pROC's ``coords(roc, "best", best.method="closest.topleft")``, whose
    "closest.topleft" column is the squared distance; `.value` is the distance itself.

    .. math:: d = \min_t \sqrt{\left(1 - \frac{TP(t)}{P}\right)^2
              + \left(1 - \frac{TN(t)}{N}\right)^2}

    Ties in distance go to the highest threshold. Flagging nothing is not a candidate (its
    distance is 1, as flagging everything). Choose the threshold on validation data, never on
    the test set. Threshold rule, bad input and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`; integer weights count as repeated rows.

    Returns:
      `OperatingPoint` ``(value, threshold, sensitivity, specificity)`` with value the distance,
      each of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> point = jm.closest_to_corner_threshold(scores, [1, 1, 0, 1, 0, 1, 0, 0])
      >>> round(float(point.value), 4), float(point.threshold)  # sens = spec = 3/4
      (0.3536, 0.6)

    References:
      Perkins & Schisterman (2006), "The inconsistency of 'optimal' cutpoints obtained using
      two criteria based on the receiver operating characteristic curve", American Journal of
      Epidemiology 163:670-675. Robin et al. (2011), BMC Bioinformatics 12:77 (pROC).
    """
    return _search(scores, labels, sample_weight, "corner")


def sensitivity_at_specificity(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    min_specificity: float,
    sample_weight: ArrayLike | None = None,
) -> OperatingPoint:
    r"""The largest sensitivity among thresholds whose specificity is at least `min_specificity`.

    The attainable operating point where the specificity first reaches the floor, coming down
    from the top. pROC's ``coords(roc, x, input="specificity")`` (and so ``ci.se``) instead
    interpolates linearly between the two ROC points around a floor that no threshold attains
    exactly, a sensitivity no threshold delivers; here the point is a real rule, so the value
    is at most pROC's and equal where the floor is attained (e.g. specificity 1).

    .. math:: \max_t \frac{TP(t)}{P} \quad \text{subject to} \quad \frac{TN(t)}{N} \ge s_{\min}

    Ties in sensitivity go to the highest threshold (the same cases found with the fewest false
    alarms); flagging nothing (threshold ``+inf``, sensitivity 0, specificity 1) is a candidate,
    so the result is defined at every floor. `min_specificity` outside [0, 1] raises
    `ValueError`. To bootstrap it (pROC's ``ci.se``), pass `bootstrap` ``lambda s, y,
    sample_weight: sensitivity_at_specificity(s, y, min_specificity=0.9,
    sample_weight=sample_weight).value`` with ``stratify=labels``; `roc_band` does a grid.
    Choose the threshold on validation data, never on the test set. Threshold rule, bad input
    and precision: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      min_specificity: the specificity floor, a number in [0, 1].
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`; integer weights count as repeated rows.

    Returns:
      `OperatingPoint` ``(value, threshold, sensitivity, specificity)`` with value the
      sensitivity, each of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> point = jm.sensitivity_at_specificity(scores, labels, min_specificity=0.75)
      >>> float(point.value), float(point.threshold)  # 3 of 4 cases, 1 of 4 controls flagged
      (0.75, 0.6)

    References:
      Robin et al. (2011), BMC Bioinformatics 12:77 (pROC).
    """
    level = check_level(min_specificity, "min_specificity")
    return _search(scores, labels, sample_weight, "sensitivity", level)


def specificity_at_sensitivity(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    min_sensitivity: float,
    sample_weight: ArrayLike | None = None,
) -> OperatingPoint:
    r"""The largest specificity among thresholds whose sensitivity is at least `min_sensitivity`.

    The screening rule "find at least 95% of cases with as few false alarms as possible". Like
    `sensitivity_at_specificity`, a real operating point: pROC's ``coords(roc, x,
    input="sensitivity")`` (``ci.sp``) interpolates between points where none attains the floor.

    .. math:: \max_t \frac{TN(t)}{N} \quad \text{subject to} \quad \frac{TP(t)}{P} \ge s_{\min}

    Ties in specificity go to the lowest threshold (more cases found with the same false
    alarms); flagging nothing (threshold ``+inf``) is a candidate, which only a floor of 0 lets
    through. `min_sensitivity` outside [0, 1] raises `ValueError`. Choose the threshold on
    validation data, never on the test set. Threshold rule, bad input and precision:
    docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive.
      labels: ``[*batch, n]`` labels in {0, 1} or bool (1 positive), broadcasting against
        `scores`.
      min_sensitivity: the sensitivity floor, a number in [0, 1].
      sample_weight: optional ``[*batch, n]`` non-negative weights, broadcasting against
        `scores`; integer weights count as repeated rows.

    Returns:
      `OperatingPoint` ``(value, threshold, sensitivity, specificity)`` with value the
      specificity, each of shape ``[*batch]``.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> point = jm.specificity_at_sensitivity(scores, labels, min_sensitivity=1.0)
      >>> float(point.value), float(point.threshold)  # every case found: 2 of 4 controls flagged
      (0.5, 0.3)

    References:
      Robin et al. (2011), BMC Bioinformatics 12:77 (pROC).
    """
    level = check_level(min_sensitivity, "min_sensitivity")
    return _search(scores, labels, sample_weight, "specificity", level)


def _band_kernel(scores: Array, labels: Array, weights: Array | None, levels: Array) -> Array:
    ranked, _, groups = sorting.rank_and_tally(scores, labels, weights)
    tp, fp, p, n = _points(groups)
    # specificity rises with the threshold: the first point reaching a floor is the most
    # sensitive one meeting it (`sensitivity_at_specificity`'s value), found for all S floors
    # by a binary search of each position's true negatives, its tie group's (a gather by the
    # ranking; a running maximum over the points was half of a bootstrap with XLA's kernels):
    # a group without weight has the (tp, fp) of the next one with some, the same sensitivity
    starts = jnp.concatenate([ranked.group_start, jnp.full(1, tp.shape[0] - 1, jnp.int32)])
    first = _first_meeting((n - fp)[starts], n, levels)
    sensitivity = safe_divide(tp[jnp.minimum(first, tp.shape[0] - 1)], p)
    return jnp.where((p > 0) & (n > 0), sensitivity, jnp.nan)


def _first_meeting(true_negatives: Array, n: Array, levels: Array) -> Array:
    """For each of the S floors, the number of positions whose specificity misses it (compared
    exactly, `meets_floor`): the true negatives rise, so the misses are a prefix and a binary
    search finds its end in log2(m) steps, S gathers each (not S * m comparisons); a compiled
    loop (13 unrolled steps at m = 4001 were 2.1 s of the report's bootstrap compilation)."""

    def halve(_, bounds: tuple[Array, Array]) -> tuple[Array, Array]:
        low, high = bounds  # the answer lies in [low, high]; the gap halves each step
        middle = (low + high) // 2
        meets = meets_floor(true_negatives[middle], n, (levels[:, 0], levels[:, 1])) & (low < high)
        return jnp.where(meets | (low >= high), low, middle + 1), jnp.where(meets, middle, high)

    m = true_negatives.shape[0]
    start = jnp.zeros(levels.shape[0], jnp.int32), jnp.full(levels.shape[0], m, jnp.int32)
    return jax.lax.fori_loop(0, m.bit_length(), halve, start)[0]


@dataclasses.dataclass(frozen=True)
class SensitivitiesAt:
    """The sensitivity at each of several specificity floors, from one sort: a metric for
    `bootstrap` (what `roc_band` resamples).

    ``SensitivitiesAt(levels)(scores, labels, sample_weight=w)`` gives, for each floor,
    `sensitivity_at_specificity`'s value (the most sensitive operating point whose specificity
    meets the floor, compared exactly; no interpolation). Hashable by value, so a second
    bootstrap with the same floors reuses the compiled resampling loop. An optional third
    positional array multiplies `sample_weight` (the user's weights times a resample's counts).

    Attributes:
      levels: the specificity floors, a tuple of numbers in [0, 1].

    Returns (when called):
      ``[*batch, S]`` the sensitivity at each floor, NaN where a class is absent.

    Examples:
      >>> import numpy as np
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> at = jm.SensitivitiesAt((0.5, 0.75, 1.0))
      >>> np.asarray(at(scores, labels, sample_weight=np.ones(8))).tolist()
      [1.0, 0.75, 0.5]
    """

    levels: tuple[float, ...]

    def __call__(self, scores, labels, *weights, sample_weight):
        if weights:  # the user's weights times the resample's counts
            sample_weight = weights[0] * sample_weight
        levels = np.asarray([split_level(level) for level in self.levels])
        levels = levels.astype(float_dtype())
        result, _ = recipe.sorted_metric(_band_kernel, scores, labels, sample_weight, levels)
        return result


def roc_band(
    scores: ArrayLike,
    labels: ArrayLike,
    *,
    specificities: ArrayLike,
    key: Array,
    num_resamples: int = 2000,
    confidence: float = 0.95,
    sample_weight: ArrayLike | None = None,
) -> RocBand:
    r"""Bootstrap confidence band of the ROC curve: sensitivity intervals at given specificities.

    pROC's ``ci.se(roc, specificities=...)`` with its defaults (2000 resamples, stratified by
    class, percentile intervals), in one `bootstrap` call: each resample sorts once and reads the
    sensitivity at every floor with `sensitivity_at_specificity`'s rule (no interpolation:
    see there), so ``low[i]`` and ``high[i]`` equal a separate bootstrap of that function at
    floor i with the same key.

    .. math:: \mathrm{Se}^*_b(s) = \max_t \left\{\frac{TP^*_b(t)}{P} :
              \frac{TN^*_b(t)}{N} \ge s\right\}, \qquad
              [q_\alpha, q_{1-\alpha}] \text{ of } \{\mathrm{Se}^*_b(s)\}_{b=1}^B

    Resamples keep the class sizes (``stratify=labels``), so every resample has both classes.
    Eager only (`bootstrap` is); the same key gives the same band. Bad input (specificities
    outside [0, 1] included) and precision, exact in every resample: docs/conventions.md.

    Args:
      scores: ``[*batch, n]`` real scores, larger meaning more positive (``[M, n]``: M models
        on shared resamples).
      labels: ``[n]`` labels in {0, 1} or bool (1 positive); they stratify the resamples.
      specificities: ``[S]`` specificity floors in [0, 1], e.g. ``np.linspace(0, 1, 11)``.
      key: a JAX PRNG key (``jax.random.key(seed)``).
      num_resamples: the number of resamples, an int >= 2.
      confidence: the coverage of each two-sided interval, in (0, 1).
      sample_weight: optional ``[n]`` non-negative weights, multiplying the resample counts.

    Returns:
      `RocBand` ``(specificity [S], sensitivity, low, high [*batch, S])``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> band = jm.roc_band(scores, labels, specificities=[0.5, 0.75], key=jax.random.key(0),
      ...                 num_resamples=200)
      >>> band.sensitivity.tolist(), bool((band.low <= band.sensitivity).all())
      ([1.0, 0.75], True)

    References:
      Robin et al. (2011), BMC Bioinformatics 12:77 (pROC's ``ci.se``). Efron & Tibshirani
      (1993), An Introduction to the Bootstrap, Chapman & Hall.
    """
    levels = coercion.as_real_array(specificities, "specificities", min_ndim=0, host=True)
    if levels.ndim != 1 or levels.size == 0:
        raise ValueError(f"`specificities` must be a non-empty 1-D array; got {levels.shape}.")
    levels = levels.astype(np.float64)
    checks.check(levels, "specificities", checks.UNIT_INTERVAL)
    labels = coercion.as_real_array(labels, "labels", host=True)
    if labels.ndim != 1:
        raise ValueError(f"`labels` must have shape (n,) (they stratify); got {labels.shape}.")
    keys, _ = exact_order.order_keys(scores)
    weights = () if sample_weight is None else (sample_weight,)
    result = bootstrap(
        SensitivitiesAt(tuple(levels.tolist())),
        keys,
        labels,
        *weights,
        key=key,
        num_resamples=num_resamples,
        confidence=confidence,
        stratify=labels,
    )
    return RocBand(levels, result.estimate, result.low, result.high)
