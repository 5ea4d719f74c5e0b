"""The bootstrap: intervals of any weighted metric from thousands of resamples, in bounded memory.

Each resample is a weight vector from `resample_weights`, evaluated by `jax.vmap` in a compiled
loop, so work that depends on the data only (the sort of the scores) is hoisted out of it by XLA
and runs once per call of about 128 resamples. `paired.paired_difference` compares
two models on the samples it returns.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import coercion, exact_order, kernels, layouts
from jaxmetrics._src.core.options import check_count, check_option, check_probability_level
from jaxmetrics._src.core.typing import Array, ArrayLike, BootstrapMethod, Sampling, options_of
from jaxmetrics._src.mesh import recipe
from jaxmetrics._src.stats.chunks import default_chunk_size, platform_of
from jaxmetrics._src.stats.intervals import bca_levels, nan_quantile, warn_bca_fallbacks
from jaxmetrics._src.stats.metric_contract import check_weighted, estimates_in_loop, static_metric
from jaxmetrics._src.stats.resampling import (
    branched,
    check_key,
    check_sample_axis,
    draw_weights,
    group_units,
    in_calls,
    kernel_branch,
    left_out_values,
    on_host,
    resample_weights,
    weighted_value,
)

_METHODS = options_of(BootstrapMethod)
_SAMPLINGS = options_of(Sampling)
# Steps run inside one compiled loop (`lax.map`), so XLA hoists the work that does not depend on
# the weights (the sort) out of it; a call covers about this many resamples, then reports progress.
_RESAMPLES_PER_CALL = 128


class BootstrapResult(NamedTuple):
    """Bootstrap estimate, confidence interval, standard error and resampled values of a metric.

    What `bootstrap` returns; `paired_difference` reads its `samples`. Resamples in which the
    metric was undefined (NaN, e.g. a resample that drew one class only) are left out of the
    interval and the standard error, never averaged in as zeros; `num_undefined` counts them
    (a property, so the tuple keeps its five fields).

    Attributes:
      estimate: ``[*shape]`` (the metric's output shape) the metric on the full data.
      low: ``[*shape]`` the lower end of the confidence interval.
      high: ``[*shape]`` the upper end of the confidence interval.
      standard_error: ``[*shape]`` the standard deviation (``ddof=1``) of the defined resampled
        values.
      samples: ``[num_resamples, *shape]`` the metric on every resample, NaN where undefined.
      num_undefined: ``[*shape]`` int, the number of resamples where the metric is NaN.
    """

    estimate: Array
    low: Array
    high: Array
    standard_error: Array
    samples: Array

    @property
    def num_undefined(self) -> Array:
        """``[*shape]`` int: how many resamples gave NaN (left out of the interval)."""
        return jnp.isnan(self.samples).sum(axis=0)


def _calls(total: int, chunk_size: int) -> tuple[int, int]:
    """(chunks per compiled call, resamples per call) for `total` evaluations."""
    chunks = max(1, min(-(-total // chunk_size), _RESAMPLES_PER_CALL // chunk_size))
    return chunks, chunks * chunk_size


def _resampled_body(
    metric,
    data,
    design,
    key,
    first,
    unit_slot,
    *,
    sampling,
    chunks,
    size,
    sample_axis,
    num_units,
    on_mesh=False,
):
    """Metric values of resamples ``first + range(chunks * size)``, `size` per vmapped step.

    The loop over steps is compiled (`lax.map`): XLA hoists work that does not depend on the
    weights (the sort) out of it; data and key are arguments, so a second call with the same
    metric and shapes reuses the compilation. The resample `unit_slot` (a padding slot past the
    last; None: none) gets every weight 1: its value is the estimate."""
    num_samples = data[0].shape[sample_axis]
    blocks = first + jnp.arange(chunks * size, dtype=jnp.int32).reshape(chunks, size)

    def step(resamples: Array) -> Array:
        stratify, units = design  # units: the group of each sample (cluster bootstrap)
        if units is None:
            weights = resample_weights(
                key,
                resamples,
                num_samples,
                sampling=sampling,
                stratify=stratify,
                host_callback=not on_mesh,
            )
        else:
            weights = draw_weights(
                key, resamples, num_units, sampling=sampling, host_callback=not on_mesh
            )[:, units]
        if unit_slot is not None:
            weights = jnp.where((resamples == unit_slot)[:, None], 1, weights)
        return jax.vmap(lambda w: weighted_value(metric, data, w))(weights)

    values = jax.lax.map(step, blocks)
    return values.reshape((chunks * size,) + values.shape[2:])


_resampled_values = jax.jit(
    branched(_resampled_body),
    static_argnums=(0,),
    static_argnames=("sampling", "chunks", "size", "sample_axis", "num_units", "branch"),
)


@functools.partial(
    jax.jit,
    static_argnums=(0, 1),
    static_argnames=("sampling", "chunks", "size", "sample_axis", "num_units", "branch"),
)
@branched
def _sharded_values(
    metric, mesh, data, design, key, first, *, sampling, chunks, size, sample_axis, num_units
):
    """`_resampled_body` on every device of a 1-D mesh, device d taking the d-th block.

    Each resample's weights depend only on (key, resample index), so the devices need no
    communication and the result equals the single-device one, resample for resample.
    """
    axis = mesh.axis_names[0]
    replicated = jax.sharding.PartitionSpec()

    static = dict(sampling=sampling, chunks=chunks, size=size, sample_axis=sample_axis)

    def on_device(data, design, key, first):
        mine = first + jax.lax.axis_index(axis) * chunks * size
        with kernels.without_host_cumulative():  # no unit-weight slot: the estimate is eager
            return _resampled_body(
                metric, data, design, key, mine, None, num_units=num_units, on_mesh=True, **static
            )

    return jax.shard_map(
        on_device,
        mesh=mesh,
        in_specs=(replicated,) * 4,
        out_specs=jax.sharding.PartitionSpec(axis),
        # the CPU's numpy kernels (the sort, the bincount: custom calls) carry no varying-axis types
        check_vma=False,
    )(data, design, key, first)


def bootstrap(
    metric: Callable[..., Any],
    *arrays: ArrayLike,
    key: Array,
    num_resamples: int = 1000,
    confidence: float = 0.95,
    method: BootstrapMethod = "percentile",
    sampling: Sampling = "multinomial",
    stratify: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    sample_axis: int = -1,
    mesh: jax.sharding.Mesh | None = None,
    chunk_size: int | None = None,
    progress: Callable[[int, int], None] | None = None,
) -> BootstrapResult:
    r"""Bootstrap estimate, confidence interval and standard error of ``metric(*arrays)``.

    A resample is an integer weight vector w (how often each sample is drawn, see
    `resample_weights`), evaluated as ``metric(*arrays, sample_weight=w)``, so any metric that
    takes `sample_weight` can be bootstrapped, thousands of resamples at a time. scikit-learn
    has no equivalent; the three intervals are those of ``scipy.stats.bootstrap(...,
    paired=True)`` (the same linear quantile interpolation and the same BCa rule for ties),
    with weight vectors in place of resampled indices. Resamples are evaluated `chunk_size` at
    a time under `jax.vmap`, in a compiled loop, so memory stays bounded at any `num_resamples`,
    and XLA hoists the work that depends only on `arrays` (the sort of a sort-based metric) out
    of the loop: it runs once per call of about 128 resamples, not once per resample. A metric
    with a model axis (scores ``[M, n]``) gives samples ``[num_resamples, M]`` drawn with shared
    weights: see `paired_difference`.

    With :math:`\hat\theta` the estimate, :math:`q_u` the u-quantile of the B defined resampled
    values :math:`\theta^*_b` and :math:`\alpha = (1 - \mathrm{confidence}) / 2`:

    .. math::

      \text{percentile: } [q_\alpha,\ q_{1-\alpha}], \qquad
      \text{basic: } [2\hat\theta - q_{1-\alpha},\ 2\hat\theta - q_\alpha], \qquad
      \text{BCa: } [q_{\beta(\alpha)},\ q_{\beta(1-\alpha)}],

      \beta(u) = \Phi\left(z_0 + \frac{z_0 + \Phi^{-1}(u)}{1 - a\,(z_0 + \Phi^{-1}(u))}\right),
      \qquad z_0 = \Phi^{-1}\left(\frac{\#\{\theta^*_b < \hat\theta\}
      + \tfrac12 \#\{\theta^*_b = \hat\theta\}}{B}\right),

      a = \frac{\sum_i d_i^3}{6 \left(\sum_i d_i^2\right)^{3/2}}, \qquad
      d_i = \bar\theta_{(\cdot)} - \hat\theta_{(i)}

    with :math:`\hat\theta_{(i)}` the metric with sample i left out (weight 0) and
    :math:`\bar\theta_{(\cdot)}` their mean: BCa costs n more evaluations of the metric.

    The estimate is the metric on the full data (every weight 1). Resamples where
    the metric is NaN (e.g. one class drawn) are counted in `num_undefined` and left out of
    `low`, `high` and `standard_error`. The same key gives the same resamples, whatever
    `chunk_size` or `mesh`. A metric that is not callable or has no `sample_weight` keyword,
    bad options, a `key` that is not a PRNG key, empty arrays, arrays that do not share their
    last axis (with the default `sample_axis`), `stratify` with Poisson sampling or of the wrong
    shape, and missing (None, NaN) `groups` labels raise `ValueError` or `TypeError` before any
    resampling. A metric that cannot be hashed is compiled at every call (an equal, hashable
    one reuses its compiled loop). BCa where its formula is undefined: an acceleration that is
    0/0 or not finite (jackknife values that do not vary, e.g. a perfect AUC) is taken as 0; an
    output whose defined resamples all lie on one side of the estimate (z0 infinite: a biased
    metric such as the ECE near 0) or whose estimate is NaN gets the percentile interval, and
    one with no defined resample stays NaN (as with "percentile"), each with a `RuntimeWarning`
    naming the cause (eagerly; under `jax.jit` silently). Order-only ranking metrics
    (`roc_auc`, `average_precision`, `precision_at_k`, the retrieval metrics, also behind
    `functools.partial`) rank float64 and large-integer scores (the first array) exactly, as
    eagerly; other metrics see the arrays as JAX makes them. Precision rules: docs/conventions.md.

    Args:
      metric: a function of `*arrays` and a keyword `sample_weight`, returning an array.
      *arrays: the data, ``[*batch, n]`` each, sharing the last (sample) axis (e.g. scores and
        labels), or as `sample_axis` says.
      key: a JAX PRNG key (``jax.random.key(seed)``); the same key gives the same resamples
        and result.
      num_resamples: the number of resamples, an int >= 2 (static).
      confidence: the coverage of the two-sided interval, in (0, 1).
      method: "percentile", "basic" or "bca".
      sampling: "multinomial" (n draws with replacement) or "poisson" (Poisson(1) weights).
      stratify: optional ``[n]`` stratum labels (e.g. the class labels): each stratum keeps its
        size in every resample (pROC's default for AUC). Multinomial sampling only.
      groups: optional ``[n]`` group labels (concrete): the cluster bootstrap, which draws
        whole groups (a patient's images, a user's sessions) with replacement, every row
        taking its group's weight; BCa's jackknife then leaves out one group at a time. Rows
        of one group are not independent, and resampling them one by one understates the
        spread (by a factor near the square root of the group size for duplicated rows). Not
        with `stratify`.
      sample_axis: the axis of ``arrays[0]`` that holds the samples resampled (default -1,
        the last). The weights passed to `metric` are ``[n]`` along it: -2 resamples the rows
        of ``[n, C]`` class probabilities (`multiclass_roc_auc`) or the queries of ``[Q, m]``
        retrieval scores, whose metric takes per-query weights (see `query_mean`). With
        another axis than -1, the arrays' shapes are the metric's to check.
      mesh: optional 1-D `jax.sharding.Mesh` (``jax.make_mesh``'s Explicit axes or a classic
        ``Mesh(devices, names)``'s Auto axes, over one process or several): the resamples are
        split over its devices (each computes its own block of resample indices, with no
        communication) and the result equals the single-device one for the same key.
      chunk_size: the number of resamples evaluated together per vmapped step. By default, on
        the CPU their weights take about 1 MB, which keeps the step in cache; on a GPU or TPU
        (the mesh's devices, else the arrays') a step takes about 4 GiB, at 32 bytes per
        element of ``arrays[0]`` per resample: ~134 resamples at 10^6 samples, one at 10^8
        (bytes per path: docs/how-it-is-fast.md, "Memory at scale").
      progress: optional ``progress(done, total)``, called after each compiled call (about 128
        resamples).

    Returns:
      `BootstrapResult` whose fields have the metric's output shape ``[*shape]``, except
      `samples`, ``[num_resamples, *shape]``.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> key = jax.random.key(0)
      >>> result = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=200)
      >>> float(result.estimate), result.samples.shape
      (0.8125, (200,))

    References:
      Efron (1987), "Better bootstrap confidence intervals", Journal of the American
      Statistical Association 82:171-185. Efron & Tibshirani (1993), An Introduction to the
      Bootstrap, Chapman & Hall. Robin et al. (2011), "pROC: an open-source package for R and
      S+ to analyze and compare ROC curves", BMC Bioinformatics 12:77 (stratified resampling).
    """
    check_option(method, "method", _METHODS)
    check_option(sampling, "sampling", _SAMPLINGS)
    num_resamples = check_count(num_resamples, "num_resamples", minimum=2)
    confidence = check_probability_level(confidence)
    if chunk_size is not None:
        chunk_size = check_count(chunk_size, "chunk_size")
    check_key(key)
    check_weighted(metric)
    if not arrays:
        raise ValueError("`bootstrap` needs at least one array to resample.")
    if recipe.is_order_only(metric):
        # ranking metrics see exact order keys of float64 / large-int scores, as eager calls do
        arrays = (exact_order.order_keys(arrays[0])[0], *arrays[1:])
    arrays = tuple(
        layouts.on_one_device(coercion.as_real_array(a, f"arrays[{i}]"))
        for i, a in enumerate(arrays)
    )
    sample_axis = check_sample_axis(sample_axis, arrays[0])
    if sample_axis == -1:
        coercion.sample_axis_shapes([(f"arrays[{i}]", a) for i, a in enumerate(arrays)])
    num_samples = arrays[0].shape[sample_axis]
    if num_samples == 0:
        raise ValueError(
            "`arrays[0]` is empty: at least one sample is needed; got shape "
            f"{tuple(arrays[0].shape)}."
        )
    if groups is not None and stratify is not None:
        raise ValueError("`groups` and `stratify` cannot be combined; give one of them.")
    if stratify is not None:
        if sampling != "multinomial":
            raise ValueError(
                "`stratify` needs `sampling='multinomial'` (Poisson weights do not "
                "keep stratum sizes fixed)."
            )
        stratify = layouts.on_one_device(coercion.as_real_array(stratify, "stratify"))
        if stratify.shape != (num_samples,):
            raise ValueError(
                f"`stratify` must have shape ({num_samples},), one stratum per sample; "
                f"got {stratify.shape}."
            )
    if chunk_size is None:  # a budget of bytes per step, by platform (`chunks`)
        platform = platform_of(arrays[0], mesh)
        chunk_size = default_chunk_size(platform, arrays[0].size, num_resamples)

    units, num_units = (None, 0) if groups is None else group_units(groups, num_samples)
    design = (stratify, None if units is None else jnp.asarray(units))
    unit_weights = np.ones(num_samples, np.int32)
    in_program: list[Array] = []  # the estimate, when a compiled call computed it
    estimate_in_program = estimates_in_loop(metric)
    metric = static_metric(metric)  # the loop's static argument (an unhashable one: per call)
    if not estimate_in_program:  # the metric's eager call: its own checks of the input run first
        in_program.append(weighted_value(metric, arrays, unit_weights))
    options = dict(sampling=sampling, size=chunk_size, sample_axis=sample_axis, num_units=num_units)
    options["branch"] = kernel_branch()
    if mesh is None:
        chunks, per_call = _calls(num_resamples, chunk_size)
        # the last call's padding (computed, then dropped) has room for the estimate
        padded = -(-num_resamples // per_call) * per_call > num_resamples
        unit_slot = num_resamples if estimate_in_program and padded else -1
        slot = np.int32(unit_slot) if unit_slot >= 0 else None

        def compute(first: Array) -> Array:
            # on the host where it can be: indexing a device array compiles a program
            values = _resampled_values(
                metric, arrays, design, key, first, slot, chunks=chunks, **options
            )
            values = on_host(values)
            if unit_slot >= 0 and 0 <= unit_slot - int(first) < per_call:
                in_program.append(coercion.to_device(values[unit_slot - first]))
            return values

    else:
        if len(mesh.axis_names) != 1:
            raise ValueError(f"`mesh` must be 1-D; got axes {mesh.axis_names}.")
        devices = mesh.devices.size
        chunks, per_device = _calls(-(-num_resamples // devices), chunk_size)
        per_call = per_device * devices

        def compute(first: Array) -> Array:
            values = _sharded_values(
                metric, mesh, arrays, design, key, first, chunks=chunks, **options
            )
            # the devices' blocks in order, readable in every process (a mesh may span several)
            return jnp.asarray(np.asarray(layouts.replicate(values)))

    samples = in_calls(compute, num_resamples, per_call, progress)
    estimate = in_program[0] if in_program else weighted_value(metric, arrays, unit_weights)
    alpha = (1 - confidence) / 2
    if method == "bca":
        # the jackknife leaves out one resampled unit at a time: a sample, or a whole group
        num_left_out = num_samples if units is None else num_units
        chunks, per_call = _calls(num_left_out, chunk_size)
        static = dict(chunks=chunks, size=chunk_size, sample_axis=sample_axis)
        left_out = functools.partial(left_out_values, metric, arrays, design[1])
        jackknife = in_calls(
            lambda first: left_out(first, branch=options["branch"], **static),
            num_left_out,
            per_call,
        )
    else:
        jackknife = None  # (percentile and basic)
    result, fallbacks = summary(samples, estimate, jackknife, alpha, method=method)
    if fallbacks is not None:
        warn_bca_fallbacks(fallbacks)
    return result


@functools.partial(kernels.sample_jit, static_argnames=("method",))
def summary(samples, estimate, jackknife, alpha, *, method):
    """Interval and standard error from the resampled values, in one compiled program; and
    where BCa fell back (`bca_levels`), None for the other methods."""
    fallbacks = None
    if method == "bca":
        levels, fallbacks = bca_levels(samples, estimate, jackknife, alpha)
    else:
        levels = jnp.broadcast_to(jnp.stack([alpha, 1 - alpha]), estimate.shape + (2,))
        levels = jnp.moveaxis(levels, -1, 0)
    low = nan_quantile(samples, levels[0])
    high = nan_quantile(samples, levels[1])
    if method == "basic":
        low, high = 2 * estimate - high, 2 * estimate - low
    standard_error = jnp.nanstd(samples, axis=0, ddof=1)
    return BootstrapResult(estimate, low, high, standard_error, samples), fallbacks
