"""Bootstrap resamples as integer weight vectors, from a counter-based hash.

A resample of n samples is a vector of n integer weights (how often each sample is drawn), which
any metric taking `sample_weight` accepts; `bootstrap` evaluates thousands of them. Weights come
from a counter-based hash of (key, resample index, sample index): resample r is the
same whichever chunk, device or batch computes it, and generating it needs no communication and
no sequential random state. The hash is a SplitMix/murmur-style integer mixer: statistically ample
for resampling, not cryptographic. The jackknife's leave-one-out values are here too, and the
loop of compiled calls that evaluates blocks of resamples (`in_calls`).
"""

from __future__ import annotations

import functools
import math
import numbers
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks, coercion, host_kernels, kernels
from jaxmetrics._src.core.options import check_option
from jaxmetrics._src.core.typing import Array, ArrayLike, Sampling, options_of
from jaxmetrics._src.mesh.sample_sort import ascending_order

_SAMPLINGS = options_of(Sampling)


def _mix(x: Array) -> Array:
    """A 32-bit integer finaliser (lowbias32): every input bit affects every output bit."""
    x = x ^ (x >> 16)
    x = x * jnp.uint32(0x7FEB352D)
    x = x ^ (x >> 15)
    x = x * jnp.uint32(0x846CA68B)
    return x ^ (x >> 16)


def random_bits(seed: Array, resample: Array, sample: Array) -> Array:
    """Uniform uint32 bits for every (resample, sample) pair: a hash of the pair and the seed."""
    x = _mix(resample.astype(jnp.uint32) ^ seed[0])
    x = _mix(x ^ (sample.astype(jnp.uint32) * jnp.uint32(0x9E3779B9)) ^ seed[1])
    return _mix(x + seed[0])


def check_key(key: Any) -> None:
    """Refuse anything but a PRNG key (typed, or legacy uint32 data), before any tracing."""
    typed = isinstance(key, jax.Array) and jnp.issubdtype(key.dtype, jax.dtypes.prng_key)
    legacy = isinstance(key, jax.Array | np.ndarray) and key.dtype == np.uint32
    if not (typed or legacy):
        described = f"{type(key).__name__} {key!r}" if np.ndim(key) == 0 else type(key).__name__
        raise TypeError(f"`key` must be a JAX PRNG key (jax.random.key(seed)); got {described}.")


def seed_words(key: Array) -> Array:
    if not jnp.issubdtype(key.dtype, jax.dtypes.prng_key):
        key = jax.random.wrap_key_data(key)
    return jax.random.bits(key, (2,), jnp.uint32)


def _poisson_thresholds(rate: float) -> np.ndarray:
    """Poisson(rate) CDF as uint32 thresholds: a weight is the number of thresholds its bits
    reach. Stops where the tail falls below 2^-32, the resolution of the bits."""
    thresholds, cdf, term, k = [], 0.0, math.exp(-rate), 0
    while True:
        cdf += term
        thresholds.append(min(2**32 - 1, math.floor(2**32 * cdf)))
        if 2**32 * (1.0 - cdf) < 1.0 or k > 40:
            return np.array(thresholds, dtype=np.uint32)
        k += 1
        term *= rate / k


# Poisson(1): P(weight > 13) < 2^-32
_POISSON_THRESHOLDS = _poisson_thresholds(1.0)


def _poisson_counts(bits: Array, thresholds: np.ndarray) -> Array:
    """Poisson weights from uniform bits: how many of the CDF `thresholds` each reaches."""
    return (bits[..., None] >= jnp.asarray(thresholds)).sum(-1, dtype=jnp.int32)


def _bincount_host(indices: np.ndarray, length: int, out: np.ndarray | None = None) -> np.ndarray:
    rows = np.asarray(indices).reshape(-1, indices.shape[-1])
    if out is None:
        out = np.empty(indices.shape[:-1] + (length,), np.int32)
    counts = out.reshape(rows.shape[0], length)  # a view: out is contiguous
    # one row at a time into a preallocated int32 array: a stacked int64 result and its cast
    # took five times as long as the counting itself (fresh pages for every step)
    for row, target in zip(rows, counts):
        target[:] = np.bincount(row, minlength=length)
    return out


def _bincount_into(indices: np.ndarray, *, out: list[np.ndarray]) -> None:
    _bincount_host(indices, out[0].shape[-1], out[0])


# looked up on every call (`host_kernels.register`): a test may replace `_bincount_host`
host_kernels.register("bincount", lambda: _bincount_into)


def _bincount(indices: Array, length: int, *, host_callback: bool = True) -> Array:
    """How often each of `length` values occurs in each row of `indices` (int32, last axis).

    A scatter-add is slow on the CPU backend, numpy's bincount is not: a host kernel there,
    except inside `shard_map` over emulated CPU devices, where per-step callbacks from several
    devices starve XLA's thread pool (seen to hang), so the scatter is used.
    """

    def on_cpu(indices: Array) -> Array:
        result = jax.ShapeDtypeStruct(indices.shape[:-1] + (length,), jnp.int32)
        return host_kernels.call("bincount", (result,), indices)[0]

    def elsewhere(indices: Array) -> Array:
        rows = indices.reshape(-1, indices.shape[-1])
        counts = jax.vmap(lambda r: jnp.zeros(length, jnp.int32).at[r].add(1))(rows)
        return counts.reshape(indices.shape[:-1] + (length,))

    if not (host_callback and kernels.host_callbacks()):
        return elsewhere(indices)
    return jax.lax.platform_dependent(indices, cpu=on_cpu, default=elsewhere)


class _Strata(NamedTuple):
    """Samples grouped by stratum: `members[offset[j] : offset[j] + size[j]]` is j's stratum."""

    members: Array  # (n,) sample indices sorted by stratum
    offset: Array  # (n,) start of the stratum of the j-th draw in `members`
    size: Array  # (n,) size of that stratum


def _strata(stratify: Array) -> _Strata:
    members = _stratum_order(stratify)
    grouped = stratify[members]
    offset = jnp.searchsorted(grouped, grouped, side="left").astype(jnp.int32)
    stop = jnp.searchsorted(grouped, grouped, side="right").astype(jnp.int32)
    return _Strata(members, offset, stop - offset)


def _stratum_order(stratify: Array) -> Array:
    """``jnp.argsort(stratify, stable=True)`` (int32) of 1-D labels, by one unsigned key carrying
    an int32 index: a single unsigned compare, which XLA's GPU sort rewriter hands to CUB (a
    signed or float key would keep it on XLA's comparison sort). Floats: -0.0 with +0.0, NaN
    last (`ascending_order`)."""
    dtype = stratify.dtype
    if jnp.issubdtype(dtype, jnp.floating):
        return ascending_order(stratify)
    unsigned = jnp.uint64 if dtype.itemsize == 8 else jnp.uint32
    if dtype == jnp.bool_ or jnp.issubdtype(dtype, jnp.unsignedinteger):
        keys = stratify.astype(unsigned)
    else:  # two's complement with the sign bit flipped: the unsigned order is the signed one
        signed = jnp.int64 if dtype.itemsize == 8 else jnp.int32
        bits = jax.lax.bitcast_convert_type(stratify.astype(signed), unsigned)
        keys = bits ^ jnp.array(1 << (8 * jnp.dtype(unsigned).itemsize - 1), unsigned)
    index = jnp.arange(stratify.shape[0], dtype=jnp.int32)
    return jax.lax.sort((keys, index), num_keys=1, is_stable=True)[1]


def resample_weights(
    key: Array,
    resamples: Array,
    num_samples: int,
    *,
    sampling: Sampling = "multinomial",
    stratify: ArrayLike | None = None,
    groups: ArrayLike | None = None,
    host_callback: bool = True,
) -> Array:
    r"""Integer weights ``[len(resamples), num_samples]`` of the given bootstrap resamples.

    The weights `bootstrap` passes as ``metric(..., sample_weight=w)``: weight i of resample r
    is how often sample i is drawn. They come from a counter-based hash of (key, r, i), so the
    weights of resample r depend only on the key and r: any chunk, device or batch that
    computes resample r gets the same vector, with no communication and no sequential random
    state. The hash is a 32-bit integer mixer, statistically ample for resampling but not
    cryptographic. scikit-learn has no equivalent (`sklearn.utils.resample` draws indices).

    .. math:: w_{r,i} = \#\{j : d_{r,j} = i\} \ \text{(multinomial)}, \qquad
              w_{r,i} \sim \mathrm{Poisson}(1) \ \text{(poisson)}

    with d_{r,1}, ..., d_{r,n} the n draws of resample r.

    "multinomial" makes num_samples draws with replacement, so the weights sum to num_samples
    (the classic bootstrap); with `stratify`, each stratum is drawn within itself, so its total
    weight stays its size; with `groups`, the groups are drawn instead of the samples (group j
    of G, numbered in the sorted order of the labels, is drawn as sample j of a G-sample
    resample would be). Without `stratify`, the multinomial counts are made without counting n
    draws: Poisson counts of a rate just under 1 (whose law, given their total t, is that of t
    uniform draws) plus the n - t missing draws, an exact multinomial (and as fast as Poisson
    weights). Draws are 32-bit hashes taken modulo the number of samples: a bias below
    ``num_samples / 2**32``. "poisson" makes independent Poisson(1) weights, whose total varies
    around num_samples; they need no counting of draws and suit streaming and sharded data, and
    `stratify` is ignored (`bootstrap` refuses the pair).

    Args:
      key: a JAX PRNG key (``jax.random.key(seed)``, or legacy uint32 key data).
      resamples: ``[R]`` integer resample indices (a JAX or numpy array), e.g.
        ``jnp.arange(R)``.
      num_samples: n, the number of samples (static).
      sampling: "multinomial" or "poisson".
      stratify: optional ``[num_samples]`` stratum labels (e.g. the class labels), for
        multinomial sampling.
      groups: optional ``[num_samples]`` group labels (any values; concrete, not traced): the
        cluster bootstrap. The G distinct groups are drawn (G draws with replacement, or
        Poisson(1) each) and every sample takes its group's weight, so the rows of a patient
        or a user stay together. Not with `stratify`.
      host_callback: count stratified multinomial draws with numpy's bincount through a host
        callback on the CPU (True, fast) or with a scatter-add (False, the same result; for use
        inside `jax.shard_map` over emulated CPU devices).

    Returns:
      An int32 array of shape ``[R, num_samples]``.

    Examples:
      >>> import jax, jax.numpy as jnp
      >>> import jaxmetrics as jm
      >>> key = jax.random.key(0)
      >>> weights = jm.resample_weights(key, jnp.arange(3), 5)
      >>> weights.shape, weights.sum(axis=-1).tolist()  # 5 draws in each resample
      ((3, 5), [5, 5, 5])
      >>> # resample 2 alone, as another chunk or device would compute it
      >>> bool((jm.resample_weights(key, jnp.array([2]), 5)[0] == weights[2]).all())
      True

    References:
      Efron & Tibshirani (1993), An Introduction to the Bootstrap, Chapman & Hall. Hanley &
      MacGibbon (2006), "Creating non-parametric bootstrap samples using Poisson frequencies",
      Computer Methods and Programs in Biomedicine 83:57-62.
    """
    check_option(sampling, "sampling", _SAMPLINGS)
    if groups is not None:
        if stratify is not None:
            raise ValueError("`groups` and `stratify` cannot be combined; give one of them.")
        units, num_units = group_units(groups, num_samples)
        unit_weights = draw_weights(
            key, resamples, num_units, sampling=sampling, host_callback=host_callback
        )
        return unit_weights[:, units]
    return draw_weights(
        key,
        resamples,
        num_samples,
        sampling=sampling,
        stratify=stratify,
        host_callback=host_callback,
    )


def group_units(groups: ArrayLike, num_samples: int) -> tuple[np.ndarray, int]:
    """(index of each sample's group in [0, G), G) from concrete group labels ``[n]``."""
    host = checks.known_values(groups, "groups", "the number of groups fixes the resamples' shape")
    if host.shape != (num_samples,):
        raise ValueError(
            f"`groups` must have shape ({num_samples},), one group label per sample; got "
            f"{host.shape}."
        )
    _check_group_labels(host)
    _, units = np.unique(host, return_inverse=True)
    return units.astype(np.int32).reshape(-1), int(units.max()) + 1 if units.size else 0


def _check_group_labels(host: np.ndarray) -> None:
    """Group labels must be numbers or strings, none missing (None, NaN), sortable together."""
    expected = "a group label (a number or a string) for every sample"
    if host.dtype == object:
        for index, label in enumerate(host):
            if not isinstance(label, str | bytes | numbers.Real):
                raise TypeError(f"`groups` must hold {expected}; found {label!r} at index {index}.")
        try:
            sorted(host)
        except TypeError:
            kinds = sorted({type(label).__name__ for label in host})
            raise TypeError(
                f"`groups` must hold {expected}, all of one kind; found {', '.join(kinds)}."
            ) from None
    missing = np.flatnonzero(host != host) if host.dtype.kind in "fcO" else []  # NaN != NaN
    if len(missing):
        raise ValueError(f"`groups` must hold {expected}; found nan at index {missing[0]}.")


def draw_weights(
    key: Array,
    resamples: Array,
    num_samples: int,
    *,
    sampling: Sampling,
    stratify: ArrayLike | None = None,
    host_callback: bool = True,
) -> Array:
    """`resample_weights` of independent units (samples, or the groups of a cluster bootstrap)."""
    seed = seed_words(key)
    if sampling == "multinomial" and stratify is None:
        return jax.vmap(lambda r: _multinomial(seed, r, num_samples))(resamples)
    sample = jnp.arange(num_samples, dtype=jnp.uint32)
    bits = random_bits(seed, resamples[:, None], sample[None, :])
    if sampling == "poisson":
        return _poisson_counts(bits, _POISSON_THRESHOLDS)
    # modulo: the bias is below num_samples / 2^32 (2e-5 at 10^5 samples)
    strata = _strata(jnp.asarray(stratify))
    within = (bits % strata.size.astype(jnp.uint32)).astype(jnp.int32)
    draws = strata.members[strata.offset + within]
    return _bincount(draws, num_samples, host_callback=host_callback)


def _multinomial(
    seed: Array, resample: Array, num_samples: int, rate: float | None = None
) -> Array:
    """The counts of `num_samples` uniform draws with replacement (one resample), exactly, with
    no counting of n draws (a scatter, or a host bincount: most of a multinomial bootstrap's
    time at 10^5 samples, measured).

    Poisson counts conditioned on their total t are multinomial: t uniform draws. So draw
    Poisson(rate) counts (elementwise, like the Poisson bootstrap) with a rate just under 1, so
    that t <= n but for a chance below 10^-15 (then draw them again, a rejection that keeps the
    law), and add the n - t missing draws (about 8 sqrt(n)) uniformly: t uniform draws and
    n - t more are n uniform draws. Exact, up to the hash's 2^-32 resolution and the modulo's
    bias below n / 2^32, as before. (`rate` is for the tests: any rate gives the same law.)
    """
    n = num_samples
    if rate is None:
        rate = max(0.0, 1.0 - 8.0 / math.sqrt(n)) if n else 0.0
    thresholds = _poisson_thresholds(rate)
    extra = max(1, min(n, math.ceil(16 * math.sqrt(n))))  # missing draws added per round
    sample = jnp.arange(n, dtype=jnp.uint32)

    def poisson(attempt):
        round_seed = seed ^ (attempt.astype(jnp.uint32) * jnp.uint32(0x632BE5AB))
        return _poisson_counts(random_bits(round_seed, resample, sample), thresholds)

    def redraw(state):
        attempt, _ = state
        return attempt + 1, poisson(attempt + 1)

    first = jnp.zeros((), jnp.int32)
    _, counts = jax.lax.while_loop(
        lambda state: state[1].sum() > n, redraw, (first, poisson(first))
    )
    fill_seed = seed ^ jnp.asarray([0x5BD1E995, 0x1B873593], jnp.uint32)
    slots = jnp.arange(extra, dtype=jnp.uint32)

    def add(state):
        counts, total = state
        bits = random_bits(fill_seed, resample, total.astype(jnp.uint32) + slots)
        draws = (bits % jnp.uint32(max(n, 1))).astype(jnp.int32)
        wanted = slots < (n - total).astype(jnp.uint32)
        counts = counts.at[jnp.where(wanted, draws, n)].add(1, mode="drop")
        return counts, jnp.minimum(total + extra, n)

    counts, _ = jax.lax.while_loop(lambda state: state[1] < n, add, (counts, counts.sum()))
    return counts


def check_sample_axis(sample_axis: Any, first: Array) -> int:
    """The resampled axis of the first array, as a negative index (static, an int)."""
    if isinstance(sample_axis, bool) or not isinstance(sample_axis, int | np.integer):
        raise TypeError(f"`sample_axis` must be an int; got {sample_axis!r}.")
    if not -first.ndim <= sample_axis < first.ndim:
        raise ValueError(
            f"`sample_axis` must be an axis of `arrays[0]` (shape {tuple(first.shape)}); "
            f"got {sample_axis}."
        )
    return int(sample_axis) - first.ndim if sample_axis >= 0 else int(sample_axis)


def in_calls(compute: Callable[[Array], Array], total: int, per_call: int, progress=None):
    """Concatenate ``compute(first)`` for first = 0, per_call, ...; drop the padding past total.

    On the CPU the pieces are sliced and joined in numpy: slicing and joining device arrays
    compiles a small program for every shape."""
    pieces = []
    for first in range(0, total, per_call):
        pieces.append(on_host(compute(np.int32(first)))[: total - first])
        if progress is not None:
            progress(min(first + per_call, total), total)
    if all(isinstance(piece, np.ndarray) for piece in pieces):
        return coercion.to_device(np.concatenate(pieces, axis=0))
    return jnp.concatenate(pieces, axis=0)


def on_host(values: Array) -> Array | np.ndarray:
    """Concrete values on the CPU as numpy (for slicing without compiling), else unchanged."""
    if jax.default_backend() == "cpu" and checks.is_concrete(values):
        return np.asarray(values)
    return values


def kernel_branch(*arguments: Any) -> tuple[bool, bool]:
    """The kernel choices that code traced now reads (`kernels.branch`)."""
    return kernels.branch(*arguments)


def branched(fun: Callable[..., Any]) -> Callable[..., Any]:
    """`fun` with a keyword `branch` (`kernel_branch()` at the call) that it is traced under.

    Jitted with `branch` static, a program traced with the host kernels never serves a call
    under `xla_kernels` (which clears no cache), nor the reverse.
    """

    @functools.wraps(fun)
    def traced(*args: Any, branch: tuple[bool, bool], **kwargs: Any) -> Any:
        with kernels.branch_set(branch):
            return fun(*args, **kwargs)

    del traced.__wrapped__  # (its signature, with `branch`, is the one `jax.jit` must read)
    return traced


def weighted_value(metric: Callable[..., Any], data: tuple[Array, ...], weights: Array) -> Array:
    """``metric(*data, sample_weight=weights)`` as an array."""
    return jnp.asarray(metric(*data, sample_weight=weights))


@functools.partial(
    jax.jit, static_argnums=(0,), static_argnames=("chunks", "size", "sample_axis", "branch")
)
@branched
def left_out_values(metric, data, units, first, *, chunks, size, sample_axis):
    """The jackknife: metric values with unit ``i`` (a sample, or a group of them: `units`
    numbers each sample's) left out (weight 0), for ``i`` in a block of indices."""
    num_samples = data[0].shape[sample_axis]
    if units is None:
        units = jnp.arange(num_samples)
    blocks = first + jnp.arange(chunks * size, dtype=jnp.int32).reshape(chunks, size)

    def step(left_out: Array) -> Array:
        weights = units[None, :] != left_out[:, None]
        return jax.vmap(lambda w: weighted_value(metric, data, w))(weights.astype(jnp.int32))

    values = jax.lax.map(step, blocks)
    return values.reshape((chunks * size,) + values.shape[2:])
