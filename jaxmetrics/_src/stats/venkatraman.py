"""Venkatraman's permutation tests that two ROC curves are equal everywhere, not only in area.

Both tests work on each model's ranks. The observed statistic breaks ties by sample order, as
pROC does; a permutation exchanges ranks (between the two models of a sample, or among the
samples of a class) and breaks the ties that creates at random. Permutation j draws its random
bits from a counter-based hash of (key, j, sample), so it is the same whatever the chunking, and
the permutations run `jax.vmap`-ed in a compiled loop.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import batching, checks, coercion, exact_order, kernels, sorting
from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_count
from jaxmetrics._src.core.typing import Array, ArrayLike
from jaxmetrics._src.mesh.sample_sort import ascending_order, two_key_order
from jaxmetrics._src.stats.resampling import check_key, random_bits, seed_words

# Permutations evaluated together per vmapped step: their random bits and sorted copies stay
# near 1 MB, as the bootstrap's weight vectors do.
_STEP_BYTES = 2**20


class VenkatramanTest(NamedTuple):
    """Venkatraman's test that two ROC curves are equal (what `venkatraman_test` and
    `venkatraman_test_unpaired` return).

    Attributes:
      statistic: pROC's E, the distance between the two curves (see the functions), a scalar.
      p_value: the share of permutations whose statistic reaches E, a scalar.
    """

    statistic: Array
    p_value: Array


def _evaluated(statistic_of, num_permutations: int, num_samples: int) -> tuple[Array, Array]:
    """(observed statistic, ``[B]`` permuted ones) from ``statistic_of(j)``, j = -1 the data.

    The observed statistic is index -1 of the same vmapped loop, so the statistic is compiled
    once; indices past B fill the last step and are dropped.
    """
    size = max(1, min(num_permutations + 1, _STEP_BYTES // (16 * num_samples)))
    chunks = -(-(num_permutations + 1) // size)
    blocks = jnp.arange(-1, chunks * size - 1, dtype=jnp.int32).reshape(chunks, size)
    values = jax.lax.map(jax.vmap(statistic_of), blocks).reshape(-1)
    return values[0], values[1 : num_permutations + 1]


# Every sort here is one unsigned key carrying an int32 index, sorted stably: a single unsigned
# compare, which XLA's GPU sort rewriter hands to CUB's radix sort (signed, float or several
# keys would keep it on XLA's comparison sort). A sort by two keys is two such passes, the
# minor key first; the other fields follow by gathers. On the CPU the sorts of the permutation
# loop stay one XLA sort of both keys (or of the float key), the same stable order: the passes
# made the loop 1.3-1.6 times slower there (measured, n = 2,000 and 20,000).


def _cpu_or_cub(on_cpu, cub, *operands: Array) -> Array:
    """`on_cpu` on the CPU where host kernels are on, else (and under `xla_kernels`) `cub`."""
    if not kernels.host_callbacks():
        return cub(*operands)
    return jax.lax.platform_dependent(*operands, cpu=on_cpu, default=cub)


def _stable_order(keys: Array, index: Array | None = None) -> Array:
    """`index` (default 0..n-1) in the stable ascending order of the unsigned `keys`."""
    if index is None:
        index = jnp.arange(keys.shape[0], dtype=jnp.int32)
    return jax.lax.sort((keys, index), num_keys=1, is_stable=True)[1]


def _by_two_keys(major: Array, minor: Array) -> Array:
    """The stable ascending order of samples by (`major`, `minor`), both unsigned."""

    def at_once(major: Array, minor: Array) -> Array:
        index = jnp.arange(major.shape[0], dtype=jnp.int32)
        return jax.lax.sort((major, minor, index), num_keys=2, is_stable=True)[2]

    return _cpu_or_cub(at_once, two_key_order, major, minor)


def _float_order(values: Array) -> Array:
    """The stable ascending order of float `values` (-0.0 with +0.0, NaN last)."""

    def by_float(values: Array) -> Array:
        index = jnp.arange(values.shape[0], dtype=jnp.int32)
        return jax.lax.sort((values, index), num_keys=1, is_stable=True)[1]

    return _cpu_or_cub(by_float, ascending_order, values)


def _first_ranks(scores: Array) -> Array:
    """0-based ranks, ties broken by sample order (R's ``rank(ties.method = "first")``)."""
    return _inverse(ascending_order(scores))  # stable: ties keep the sample order


def _inverse(permutation: Array) -> Array:
    """The inverse of a permutation of 0..n-1 (by a sort: it compiles faster than a scatter)."""
    return _stable_order(permutation.astype(jnp.uint32))


def _labels_in_order(ranks: Array, ties: Array, labels: Array) -> Array:
    """`labels` sorted by rank (0..n-1), tied ranks ordered by the random `ties` (uint32)."""
    return labels[_by_two_keys(ranks.astype(jnp.uint32), ties)]


def _errors_gap(ordered_a: Array, ordered_b: Array) -> Array:
    """Sum over k of |errors_b(k) - errors_a(k)| for the labels of each model in rank order.

    The errors of the cut below rank k, ``#{positives ranked <= k} + #{negatives ranked > k}``,
    are ``n_- + walk(k)`` with walk the running sum of +1 per positive and -1 per negative:
    the difference of two models is that of their walks. Each term is at most n, so the sum
    is an exact int32 while 2 n^2 < 2^31 (compared exactly with the permuted ones), a float
    beyond.
    """
    gap = jnp.abs(sorting.cumulative(2 * ordered_b - 1) - sorting.cumulative(2 * ordered_a - 1))
    n = gap.shape[0]
    return gap.sum(dtype=jnp.int32 if 2 * n * n < 2**31 else float_dtype())


@functools.partial(kernels.jit, static_argnames=("num_permutations",))
def _paired_fields(scores_a, scores_b, labels, invalid, key, *, num_permutations):
    n = labels.shape[0]
    seed = seed_words(key)
    rank_a, rank_b = _first_ranks(scores_a), _first_ranks(scores_b)

    def statistic_of(permutation: Array) -> Array:
        # three streams of bits: the exchange of each sample, the ties of each permuted model
        bits = random_bits(seed, permutation, jnp.arange(3 * n, dtype=jnp.uint32))
        permuted = permutation >= 0  # -1: the data as they are
        swap, ties_a, ties_b = jnp.where(permuted, bits, 0).reshape(3, n)
        exchanged = (swap >> 31) == 1
        ranks_a = jnp.where(exchanged, rank_b, rank_a)
        ranks_b = jnp.where(exchanged, rank_a, rank_b)
        return _errors_gap(
            _labels_in_order(ranks_a, ties_a, labels), _labels_in_order(ranks_b, ties_b, labels)
        )

    statistic, null = _evaluated(statistic_of, num_permutations, n)
    dtype = float_dtype()
    p_value = jnp.mean((null >= statistic).astype(dtype))
    return VenkatramanTest(*batching.nan_where(invalid, (statistic.astype(dtype), p_value)))


def _curve(ordered: Array, mixing: Array) -> tuple[Array, Array]:
    """(mixture CDF, expected error) of a model after each of its samples in rank order."""
    dtype = float_dtype()
    caught = sorting.cumulative(ordered).astype(dtype)  # positives among the k lowest ranked
    below = jnp.arange(1, ordered.shape[0] + 1, dtype=dtype)
    positive_rate = caught / caught[-1]
    negative_rate = (below - caught) / (below[-1] - caught[-1])
    return (
        mixing * positive_rate + (1 - mixing) * negative_rate,
        mixing * positive_rate + (1 - mixing) * (1 - negative_rate),
    )


def _on_grid(grid: Array, knots_below: Array, cdf: Array, error: Array) -> Array:
    """A curve (linear between its knots) at the grid points, given how many of its knots lie
    at or below each grid point; beyond the last knot, on the line through the last two."""
    right = jnp.clip(knots_below, 1, cdf.shape[0] - 1)
    knots = jnp.stack([cdf, error], axis=-1)
    (cdf_left, error_left), (cdf_right, error_right) = knots[right - 1].T, knots[right].T
    # cdf_right > cdf_left: every knot adds a sample of positive weight
    return error_left + (grid - cdf_left) * (error_right - error_left) / (cdf_right - cdf_left)


def _area_between(curve_a: tuple[Array, Array], curve_b: tuple[Array, Array]) -> Array:
    """Trapezoid integral of |e_a - e_b| over the merged grid of both curves' knots.

    Each curve is linear between its knots; outside a curve's range its value is undefined
    and the segments touching it are left out (pROC's `approxfun` and ``na.rm``). One sort of
    the knots serves as the grid and as both curves' search for their neighbouring knots.
    """
    (cdf_a, error_a), (cdf_b, error_b) = curve_a, curve_b
    from_a = jnp.concatenate([jnp.ones_like(cdf_a, jnp.int32), jnp.zeros_like(cdf_b, jnp.int32)])
    grid = jnp.concatenate([cdf_a, cdf_b])
    order = _float_order(grid)  # stable: a knot of a before an equal one of b
    grid, from_a = grid[order], from_a[order]
    below_a = sorting.cumulative(from_a)
    below_b = jnp.arange(1, grid.shape[0] + 1, dtype=jnp.int32) - below_a
    gap = jnp.abs(_on_grid(grid, below_a, cdf_a, error_a) - _on_grid(grid, below_b, cdf_b, error_b))
    inside = (grid >= jnp.maximum(cdf_a[0], cdf_b[0])) & (grid <= jnp.minimum(cdf_a[-1], cdf_b[-1]))
    segment = inside[1:] & inside[:-1]
    areas = (gap[1:] + gap[:-1]) * (grid[1:] - grid[:-1]) / 2
    return jnp.where(segment, areas, 0).sum()


@functools.partial(kernels.jit, static_argnames=("num_permutations",))
def _unpaired_fields(scores_a, labels_a, scores_b, labels_b, invalid, key, *, num_permutations):
    size_a, size = labels_a.shape[0], labels_a.shape[0] + labels_b.shape[0]
    dtype = float_dtype()
    seed = seed_words(key)
    labels = jnp.concatenate([labels_a, labels_b])
    ranks = jnp.concatenate([_first_ranks(scores_a), _first_ranks(scores_b)])
    mixing = labels.sum().astype(dtype) / size  # the pooled prevalence, kappa
    classes = labels.astype(jnp.uint32)  # the sort key of the labels
    # sample i sits at slot[i] of the samples grouped by class in sample order; a permutation
    # fills the slots with the same classes' ranks, grouped by class in a random order
    by_class = _stable_order(classes)
    slot = _inverse(by_class)

    def statistic_of(permutation: Array) -> Array:
        bits = random_bits(seed, permutation, jnp.arange(2 * size, dtype=jnp.uint32))
        permuted = permutation >= 0  # -1: the data as they are
        shuffle, ties = jnp.where(permuted, bits, 0).reshape(2, size)
        shuffled = _by_two_keys(classes, shuffle)
        dealt = ranks[jnp.where(permuted, shuffled, by_class)][slot]
        ordered_a = _labels_in_order(dealt[:size_a], ties[:size_a], labels_a)
        ordered_b = _labels_in_order(dealt[size_a:], ties[size_a:], labels_b)
        return _area_between(_curve(ordered_a, mixing), _curve(ordered_b, mixing))

    statistic, null = _evaluated(statistic_of, num_permutations, size)
    # a permuted area equal to E up to float rounding counts as reaching it
    reached = null >= statistic * (1 - 64 * jnp.finfo(dtype).eps)
    p_value = jnp.mean(reached.astype(dtype))
    return VenkatramanTest(*batching.nan_where(invalid, (statistic, p_value)))


def _model_inputs(named_scores, labels, labels_name):
    """Checked ``[n]`` scores (exact order keys when concrete), 0/1 int32 labels and the
    bad-value flag (a bool, or a traced scalar under jit)."""
    scores = []
    for name, value in named_scores:
        value = coercion.as_scores(exact_order.order_keys(value, name)[0], name, host=True)
        if value.ndim != 1:
            raise ValueError(f"`{name}` must have shape [n]; got {tuple(value.shape)}.")
        scores.append(value)
    labels = coercion.as_real_array(labels, labels_name, host=True)
    if labels.ndim != 1:
        raise ValueError(f"`{labels_name}` must have shape [n]; got {tuple(labels.shape)}.")
    coercion.sample_axis_shapes(
        [(name, s) for (name, _), s in zip(named_scores, scores)] + [(labels_name, labels)]
    )
    invalid = checks.check_binary_labels(labels, labels_name)
    for (name, _), value in zip(named_scores, scores):
        invalid = invalid | checks.check_finite(value, name)
    size = labels.shape[0]
    both_classes = checks.Rule(
        lambda positives: (positives == 0) | (positives == size),
        "hold both classes (a ROC curve needs positives and negatives)",
        lambda positives: f"{positives} positives and {size - positives} negatives",
    )
    positives = (labels == 1).sum()
    invalid = invalid | checks.check(positives, labels_name, both_classes, sample_axes=0)
    return scores, (labels == 1).astype(np.int32), invalid


def venkatraman_test(
    scores_a: ArrayLike,
    scores_b: ArrayLike,
    labels: ArrayLike,
    *,
    key: Array,
    num_permutations: int = 2000,
) -> VenkatramanTest:
    r"""Venkatraman & Begg's permutation test that two paired ROC curves are equal.

    Matches pROC's `roc.test(roc_a, roc_b, method="venkatraman", paired=TRUE)`: the same
    statistic E, and a p-value from the same permutations (drawn from another random stream, so
    equal to pROC's up to Monte Carlo error). Where `delong_test` compares the areas, this test
    compares the whole curves: two models whose curves cross with equal AUC differ here.

    With :math:`r^a_i, r^b_i` the ranks of sample i under the two models (1 to n),

    .. math::

      E = \sum_{k=1}^{n} \left| e_b(k) - e_a(k) \right|, \qquad
      e_m(k) = \#\{i : y_i = 1,\ r^m_i \le k\} + \#\{i : y_i = 0,\ r^m_i > k\},

    the errors of model m when its k lowest-ranked samples are called negative. A permutation
    exchanges :math:`r^a_i` and :math:`r^b_i` of each sample with probability 1/2 and ranks each
    model again; :math:`p = \#\{b : E^*_b \ge E\} / B` over the B permutations.

    Larger scores mean more positive for both models. Ties in a model's scores are broken by
    sample order (pROC's ``ties.method = "first"``), so with tied scores E depends on the order
    of the samples; ties that an exchange creates are broken at random. Identical models give
    E = 0 and p = 1. The p-value is pROC's, at least 1/B unless no permutation reaches E (then
    0). The same key gives the same permutations, whatever `num_permutations` is split into
    internally. E is counted exactly in int32 while ``2 n^2 < 2^31`` and returned as a float
    (exact in float32 below 2^24). A missing class and samples that differ in number are bad
    input too. Bad input: docs/conventions.md.

    Args:
      scores_a: ``[n]`` scores of the first model.
      scores_b: ``[n]`` scores of the second model, on the same samples.
      labels: ``[n]`` labels in {0, 1} or bool, with both classes present.
      key: a JAX PRNG key (``jax.random.key(seed)``) for the permutations.
      num_permutations: B, an int >= 1 (static; pROC's ``boot.n``).

    Returns:
      `VenkatramanTest` of scalars.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> labels = [1, 1, 0, 1, 0, 1, 0, 0]
      >>> scores_a = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1]
      >>> scores_b = [0.8, 0.9, 0.3, 0.5, 0.6, 0.2, 0.4, 0.1]
      >>> test = jm.venkatraman_test(scores_a, scores_b, labels, key=jax.random.key(0),
      ...                         num_permutations=200)
      >>> float(test.statistic), round(float(test.p_value), 3)
      (2.0, 0.9)

    References:
      Venkatraman & Begg (1996), "A distribution-free procedure for comparing receiver
      operating characteristic curves from a paired experiment", Biometrika 83:835-848.
      Robin et al. (2011), "pROC: an open-source package for R and S+ to analyze and compare
      ROC curves", BMC Bioinformatics 12:77.
    """
    check_key(key)
    num_permutations = check_count(num_permutations, "num_permutations")
    (a, b), labels, invalid = _model_inputs(
        [("scores_a", scores_a), ("scores_b", scores_b)], labels, "labels"
    )
    return _paired_fields(a, b, labels, invalid, key, num_permutations=num_permutations)


def venkatraman_test_unpaired(
    scores_a: ArrayLike,
    labels_a: ArrayLike,
    scores_b: ArrayLike,
    labels_b: ArrayLike,
    *,
    key: Array,
    num_permutations: int = 2000,
) -> VenkatramanTest:
    r"""Venkatraman's permutation test that two ROC curves from different samples are equal.

    Matches pROC's `roc.test(roc_a, roc_b, method="venkatraman", paired=FALSE)`: the same
    statistic E when the two samples have the same size, and a p-value from the same
    permutations (from another random stream: equal up to Monte Carlo error). For two models
    or cohorts evaluated on different data, e.g. two hospitals.

    Each model's samples are ranked within their own set. With F and G the empirical CDFs of
    the ranks of the positives and the negatives of a model, :math:`\kappa` the prevalence of
    the two sets pooled, the model's curve joins the points, one per rank k,

    .. math::

      p(k) = \kappa F(k) + (1 - \kappa) G(k), \qquad
      e(k) = \kappa F(k) + (1 - \kappa) (1 - G(k)),

    the share of samples below the cut and the expected error there, linearly between them, and

    .. math:: E = \int \left| e_a(p) - e_b(p) \right| dp

    by the trapezoid rule on the merged grid of both curves' p values, over the range where
    both are defined (where they cross, the rule overstates the area a little, as pROC's
    does). A permutation pools the ranks of the positives of both sets (each set's ranks
    running from 1 to its size, pooled as they are) and deals them back at random, the
    negatives likewise; :math:`p = \#\{b : E^*_b \ge E\} / B`.

    Ties as in `venkatraman_test` (by sample order for E, at random in the permutations).
    :math:`\kappa` is the pooled positives over the pooled size; pROC divides by twice the size
    of the first set instead, which differs only when the sizes differ. A permuted E within 64
    float epsilons (relative) of the observed one counts as reaching it. Two identical sets give
    E = 0 and p = 1. Bad input as in `venkatraman_test`, each set needing both classes.

    Args:
      scores_a: ``[n_a]`` scores of the first model on its samples.
      labels_a: ``[n_a]`` labels in {0, 1} or bool of those samples.
      scores_b: ``[n_b]`` scores of the second model on its own samples.
      labels_b: ``[n_b]`` labels of those samples.
      key: a JAX PRNG key (``jax.random.key(seed)``) for the permutations.
      num_permutations: B, an int >= 1 (static; pROC's ``boot.n``).

    Returns:
      `VenkatramanTest` of scalars.

    Examples:
      >>> import jax
      >>> import jaxmetrics as jm
      >>> scores, labels = [0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], [1, 1, 0, 1, 0, 1, 0, 0]
      >>> same = jm.venkatraman_test_unpaired(scores, labels, scores, labels,
      ...                                  key=jax.random.key(0), num_permutations=100)
      >>> float(same.statistic), float(same.p_value)
      (0.0, 1.0)

    References:
      Venkatraman (2000), "A permutation test to compare receiver operating characteristic
      curves", Biometrics 56:1134-1138. Robin et al. (2011), BMC Bioinformatics 12:77.
    """
    check_key(key)
    num_permutations = check_count(num_permutations, "num_permutations")
    (a,), labels_a, invalid_a = _model_inputs([("scores_a", scores_a)], labels_a, "labels_a")
    (b,), labels_b, invalid_b = _model_inputs([("scores_b", scores_b)], labels_b, "labels_b")
    return _unpaired_fields(
        a, labels_a, b, labels_b, invalid_a | invalid_b, key, num_permutations=num_permutations
    )
