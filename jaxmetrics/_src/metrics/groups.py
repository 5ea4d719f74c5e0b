"""Every metric by group, as fairlearn's `MetricFrame`: one weight mask per group, one batched call.

A group's value is the metric with the weights of the other groups' rows set to 0, so any metric
that takes `sample_weight` is evaluated for all G groups at once by `jax.vmap` over the G masks,
with the data unbatched: work that depends on the data only (the sort of a sort-based metric)
is done once for all groups, not once per group. The bootstrap of the same values resamples
within each group (`bootstrap(..., stratify=groups)`), so every resample keeps the groups'
sizes, and gives intervals for the gaps too.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp

from jaxmetrics._src.core import batching, checks, coercion, exact_order, kernels
from jaxmetrics._src.core.numerics import safe_divide
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh import recipe
from jaxmetrics._src.stats.bootstrap import BootstrapResult, bootstrap, summary
from jaxmetrics._src.stats.metric_contract import (
    check_weighted,
    estimate_in_loop,
    estimates_in_loop,
    static_metric,
)
from jaxmetrics._src.stats.resampling import check_sample_axis


class ByGroup(NamedTuple):
    """A metric by group, on all rows, and its gaps between groups (what `by_group` returns).

    `by_group_bootstrap` returns the same tuple with a `BootstrapResult` in each field (its
    estimate, interval, standard error and resampled values).

    Attributes:
      values: ``[G, *shape]`` the metric on the rows of each group (``*shape`` is the metric's
        output shape), NaN for a group where it is undefined (no rows, one class...).
      overall: ``[*shape]`` the metric on all rows.
      difference: ``[*shape]`` the largest minus the smallest group value, over the groups
        where the value is defined; NaN when none is.
      ratio: ``[*shape]`` the smallest over the largest group value, likewise (NaN for 0 / 0).
    """

    values: Any
    overall: Any
    difference: Any
    ratio: Any


def _group_index(num_groups: int) -> checks.Rule:
    return checks.Rule(
        lambda values: (values < 0) | (values >= num_groups),
        f"be group indices in [0, {num_groups}) (`num_groups`)",
    )


class GroupInputs(NamedTuple):
    """The checked inputs of a by-group computation (`group_inputs`)."""

    arrays: tuple[Array, ...]  # as the compiled program takes them (order keys, see below)
    groups: Array  # [n] group indices
    weights: Array | None  # [*batch, n] or None
    invalid: Any  # True where a traced input was bad: every group value is then NaN


def group_inputs(
    metric: Callable[..., Any],
    arrays: tuple[ArrayLike, ...],
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None,
    sample_axis: int = -1,
) -> GroupInputs:
    """Check the inputs of `by_group` and its kin (`num_groups` checked by the caller); raise on
    bad ones, or flag them when traced.

    The arrays share the last (sample) axis with `groups` ``[n]`` and `sample_weight`; with
    another `sample_axis`, ``arrays[0]`` holds the samples along it, `groups` and
    `sample_weight` are ``[n]``, and the other arrays' shapes are the metric's to check (as in
    `bootstrap`). Scores of an order-only metric (`roc_auc`, ...) known now are replaced by
    their exact order keys, as `bootstrap` does, so float64 scores are ranked as an eager call
    ranks them.
    """
    check_weighted(metric)
    if not arrays:
        raise ValueError("`by_group` needs at least one array (the metric's data); got none.")
    if recipe.is_order_only(metric):
        arrays = (exact_order.order_keys(arrays[0])[0], *arrays[1:])
    arrays = tuple(coercion.as_real_array(a, f"arrays[{i}]") for i, a in enumerate(arrays))
    sample_axis = check_sample_axis(sample_axis, arrays[0])
    groups = coercion.as_real_array(groups, "groups", host=True)
    if not (jnp.issubdtype(groups.dtype, jnp.integer) or groups.dtype == jnp.bool_):
        raise TypeError(
            f"`groups` must hold integer group indices in [0, {num_groups}); got dtype "
            f"{groups.dtype}."
        )
    if groups.ndim != 1:
        raise ValueError(
            f"`groups` must have shape (n,), one group index per sample; got shape "
            f"{tuple(groups.shape)}."
        )
    weights = None
    if sample_weight is not None:
        weights = coercion.as_real_array(sample_weight, "sample_weight", host=True)
    if sample_axis == -1:
        named = [(f"arrays[{i}]", a) for i, a in enumerate(arrays)]
        coercion.sample_axis_shapes([*named, ("groups", groups), ("sample_weight", weights)])
    else:  # the samples along another axis of arrays[0]: one group and one weight per sample
        num_samples = arrays[0].shape[sample_axis]
        for name, array in (("groups", groups), ("sample_weight", weights)):
            if array is not None and array.shape != (num_samples,):
                raise ValueError(
                    f"`{name}` must have shape ({num_samples},), one value per sample along "
                    f"`sample_axis` {sample_axis} of `arrays[0]` (shape "
                    f"{tuple(arrays[0].shape)}); got {tuple(array.shape)}."
                )
    invalid = checks.check(groups, "groups", _group_index(num_groups))
    if weights is not None:  # a bad weight poisons every group of its batch row (a mask
        invalid = invalid | checks.check_weights(weights)  # could zero it): [*batch] flags
    return GroupInputs(arrays, groups, weights, invalid)


def masked_values(metric, arrays, groups, weights, *, num_groups):
    """``[G, *shape]``: `metric` on each group's rows, `jax.vmap` over the G group masks (as, or
    times, the weights) with the data unbatched, so that work on the data alone is done once."""
    masks = groups == jnp.arange(num_groups)[:, None]  # [G, n]
    if weights is None:
        masked = masks.astype(jnp.int32)  # integer weights: counts stay exact
    else:
        masks = masks.reshape((num_groups,) + (1,) * (weights.ndim - 1) + masks.shape[1:])
        masked = jnp.where(masks, weights, jnp.zeros((), weights.dtype))
    return jax.vmap(lambda mask: jnp.asarray(metric(*arrays, sample_weight=mask)))(masked)


@functools.partial(kernels.jit, static_argnums=(0,), static_argnames="num_groups")
def _by_group_program(metric, arrays, groups, weights, invalid, *, num_groups):
    """(values, difference, ratio) in one compiled program (`metric` static: a function made
    anew at every call, a lambda, compiles anew)."""
    values = masked_values(metric, arrays, groups, weights, num_groups=num_groups)
    values = jax.vmap(lambda group: batching.nan_where(invalid, group))(values)  # [G, *batch]
    return (values, *gaps(values))


def gaps(values: Array) -> tuple[Array, Array]:
    """(difference, ratio) of group values ``[G, *shape]`` over the defined (non-NaN) groups:
    the largest minus the smallest, and the smallest over the largest (NaN for 0 / 0)."""
    largest = jnp.nanmax(values, axis=0)
    smallest = jnp.nanmin(values, axis=0)
    return largest - smallest, safe_divide(smallest, largest)


def by_group(
    metric: Callable[..., Any],
    *arrays: ArrayLike,
    groups: ArrayLike,
    num_groups: int,
    sample_weight: ArrayLike | None = None,
    sample_axis: int = -1,
) -> ByGroup:
    r"""Any weighted metric for every group in one batched call, with its gaps between groups.

    Matches `fairlearn.metrics.MetricFrame` (``by_group``, ``overall``, and ``difference()`` and
    ``ratio()`` with their default ``method="between_groups"``) for a metric with a
    `sample_weight` keyword, computed as `jax.vmap` of ``metric(*arrays, sample_weight=w *
    mask_g)`` over the G group masks with the data unbatched, so a sort-based metric
    (`roc_auc`, `average_precision`) sorts the scores once, not G times.

    .. math::

      v_g = m\big(\ldots;\ w \odot [\text{group} = g]\big), \qquad
      \text{difference} = \max_g v_g - \min_g v_g, \qquad
      \text{ratio} = \min_g v_g / \max_g v_g

    A group with no rows, or one where the metric is undefined (an AUC without positives),
    has the value NaN, and the gaps are taken over the other groups, as MetricFrame's (pandas
    skips NaN; fairlearn reaches it only through a metric that returns NaN, since its groups
    are those present, and scikit-learn raises for an AUC with one class). With no defined
    group the gaps are NaN; ``0 / 0`` in the ratio is NaN. Metrics of confusion counts take
    predictions: ``lambda predictions, labels, sample_weight: jm.recall(jm.confusion_counts(
    predictions, labels, 0.5, sample_weight=sample_weight))`` (0/1 predictions are positive
    iff ``>= 0.5``). Group values are computed as under `jax.jit` (precision rules:
    docs/conventions.md; order-only metrics rank float64 scores exactly, as eagerly);
    `overall` is the metric's own call. Bad groups raise `ValueError` naming the value and its
    index (NaN values under `jax.jit`); the metric's own inputs are checked by its call for
    `overall`.

    Args:
      metric: a function of `*arrays` and a keyword `sample_weight` returning an array (any
        library metric with `sample_weight`, or your own); static: a new lambda at every call
        compiles anew.
      *arrays: the metric's data, ``[*batch, n]`` each, sharing the last (sample) axis (e.g.
        scores and labels).
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, the number of groups, an int >= 1 (static); a group without rows is NaN.
      sample_weight: optional ``[*batch, n]`` non-negative weights, each group's mask
        multiplying them.
      sample_axis: the axis of ``arrays[0]`` that holds the samples (default -1, the last):
        -2 for the rows of ``[n, C]`` class probabilities (`multiclass_roc_auc`); `groups` and
        `sample_weight` are then ``[n]``, and the other arrays' shapes are the metric's to check.

    Returns:
      `ByGroup` with `values` ``[G, *shape]`` and `overall`, `difference`, `ratio` ``[*shape]``,
      ``*shape`` the metric's output shape.

    Examples:
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> groups = [0, 1, 1, 0, 0, 1, 1, 0]
      >>> auc = jm.by_group(jm.roc_auc, scores, labels, groups=groups, num_groups=2)
      >>> auc.values.tolist(), float(auc.overall), float(auc.difference), float(auc.ratio)
      ([1.0, 0.75], 0.8125, 0.25, 0.75)

    References:
      Weerts et al. (2023), "Fairlearn: Assessing and Improving Fairness of AI Systems",
      Journal of Machine Learning Research 24(257):1-8.
    """
    num_groups = check_count(num_groups, "num_groups")
    checked = group_inputs(metric, arrays, groups, num_groups, sample_weight, sample_axis)
    overall = jnp.asarray(metric(*arrays, sample_weight=sample_weight))
    values, difference, ratio = _by_group_program(
        static_metric(metric),
        checked.arrays,
        checked.groups,
        checked.weights,
        checked.invalid,
        num_groups=num_groups,
    )
    return ByGroup(values, overall, difference, ratio)


def by_group_bootstrap(
    metric: Callable[..., Any],
    *arrays: ArrayLike,
    groups: ArrayLike,
    num_groups: int,
    key: Array,
    num_resamples: int = 1000,
    confidence: float = 0.95,
    sample_weight: ArrayLike | None = None,
    sample_axis: int = -1,
) -> ByGroup:
    r"""Percentile bootstrap intervals of `by_group`'s values, overall value and gaps.

    One `bootstrap` call, stratified by group (every resample draws each group's rows from
    that group, so the group sizes stay those of the data), evaluates `by_group` on every
    resample: the values of all groups, the overall value, the difference and the ratio,
    each with its percentile interval. fairlearn's ``MetricFrame(n_boot=...)`` resamples
    without strata and returns quantiles; this returns them with the estimate, standard error
    and resampled values.

    A resample in which a group defined on the data is undefined (an AUC group that drew no
    positive) gives NaN gaps for that resample, which are left out of the interval and counted
    in `num_undefined`, rather than gaps over the other groups only; a group undefined on the
    data (no rows) is left out of the gaps of every resample, as in `by_group`. Eager only
    (as `bootstrap`); bad inputs raise as in `by_group`.

    Args:
      metric: as for `by_group`.
      *arrays: as for `by_group`.
      groups: ``[n]`` integer group index of each row, in ``[0, num_groups)``.
      num_groups: G, an int >= 1 (static).
      key: a JAX PRNG key (``jax.random.key(seed)``); the same key gives the same result.
      num_resamples: the number of resamples, an int >= 2.
      confidence: the coverage of the two-sided interval, in (0, 1).
      sample_weight: optional ``[*batch, n]`` non-negative weights, multiplied by each
        resample's draw counts.
      sample_axis: as for `by_group`.

    Returns:
      `ByGroup` whose fields are `BootstrapResult`: `values` with ``[G, *shape]`` fields
      (``samples`` ``[num_resamples, G, *shape]``), the others with ``[*shape]`` fields.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> groups = [0, 1, 1, 0, 0, 1, 1, 0]
      >>> result = jm.by_group_bootstrap(
      ...     jm.roc_auc, scores, labels, groups=groups, num_groups=2,
      ...     key=jax.random.key(0), num_resamples=200)
      >>> gap = result.difference  # a BootstrapResult
      >>> float(gap.estimate), float(gap.low), float(gap.high), result.values.samples.shape
      (0.25, 0.0, 1.0, (200, 2))
      >>> int(gap.num_undefined)  # resamples where a group drew one class only
      56

    References:
      Efron & Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall.
    """
    num_groups = check_count(num_groups, "num_groups")
    checked = group_inputs(metric, arrays, groups, num_groups, sample_weight, sample_axis)
    if not estimates_in_loop(metric):  # the metric's own checks of its input, as `by_group`'s
        jnp.asarray(metric(*arrays, sample_weight=sample_weight))
    statistic = _GroupsAndOverall(static_metric(metric), len(checked.arrays), num_groups)
    data = (*checked.arrays, checked.groups)
    if checked.weights is not None:
        data = (*data, checked.weights)
    result = bootstrap(
        statistic,
        *data,
        key=key,
        num_resamples=num_resamples,
        confidence=confidence,
        stratify=checked.groups,
        sample_axis=sample_axis,
    )
    return _finish(result, num_groups, (1 - confidence) / 2)


class _GroupsAndOverall(NamedTuple):
    """The statistic `by_group_bootstrap` resamples: each group's value and the overall value,
    ``[G + 1, *shape]``; the gaps follow from the values once the estimate says which groups are
    defined on the data (`_finish`), so no program of the data alone runs before the resamples.
    A tuple, equal for equal fields: a second call with the same metric and shapes reuses the
    bootstrap's compiled loop (a closure made at every call compiled it anew)."""

    metric: Callable[..., Any]
    num_arrays: int
    num_groups: int

    def __call__(self, *data: Array, sample_weight: Array) -> Array:
        count = self.num_arrays
        arrays, groups, given = data[:count], data[count], data[count + 1 :]
        weights = sample_weight if not given else sample_weight * given[0]
        values = masked_values(self.metric, arrays, groups, weights, num_groups=self.num_groups)
        overall = jnp.asarray(self.metric(*arrays, sample_weight=weights))
        return jnp.concatenate([values, overall[None]])


estimate_in_loop(_GroupsAndOverall)  # by_group_bootstrap checks the inputs first


@functools.partial(kernels.sample_jit, static_argnums=1)
def _finish(result: BootstrapResult, num_groups: int, alpha: Array) -> ByGroup:
    """The bootstrap of the stacked ``[G + 1, ...]`` (values, overall) as a `ByGroup` of
    `BootstrapResult`s, the gaps' with their percentile intervals: of each resample, the gaps
    over the groups defined on the data (whose estimate is not NaN), NaN where one of those is
    undefined in that resample. One program (eagerly, each slice of a device array was a program
    of its own, to trace or load from the cache on every call)."""
    g = num_groups
    estimate, low, high, standard_error, samples = result
    defined = ~jnp.isnan(estimate[:g])

    def part(index: slice | int) -> BootstrapResult:
        return BootstrapResult(
            estimate[index], low[index], high[index], standard_error[index], samples[:, index]
        )

    def gaps_of(values: Array) -> tuple[Array, Array]:
        lost = jnp.any(defined & jnp.isnan(values), axis=0)
        difference, ratio = gaps(jnp.where(defined, values, jnp.nan))
        return jnp.where(lost, jnp.nan, difference), jnp.where(lost, jnp.nan, ratio)

    estimates, resampled = gaps_of(estimate[:g]), jax.vmap(gaps_of)(samples[:, :g])
    difference, ratio = (
        summary(resampled[k], estimates[k], None, alpha, method="percentile")[0] for k in (0, 1)
    )
    return ByGroup(part(slice(0, g)), part(g), difference, ratio)
