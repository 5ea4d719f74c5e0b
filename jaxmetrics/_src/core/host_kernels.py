"""numpy kernels called from compiled CPU programs, through `jax.pure_callback`.

On the CPU backend three steps run several times faster in numpy than as XLA programs: the sort
with its tie groups, the running sums and maxima, and the bootstrap's bincount (`kernels` says
where each is used, and `jm.xla_kernels()` turns them off). A kernel is registered here under a
name and called from a traced program with `call`, which hands it numpy arrays. The numpy steps
the ranking engine's kernels are built of are here too (`sort_carrying`, `fill_tie_groups`).

Every array that crosses between XLA and numpy is copied (JAX copies a callback's operands into
arrays of its own and its results into the program's buffers): an int32 array of 10^7 samples
took 20-60 ms each way (measured; mostly page faults on the fresh buffers). So a kernel takes
and returns as few arrays as its callers need, in the narrowest type, and does all its numpy
steps in one call.

`jax.pure_callback` is JAX's public, supported way to run Python inside a program. Its cost is
that JAX's persistent compilation cache never keeps a program holding a callback (the callback
is a reference valid in one process only), so such programs are compiled again in every
process. That is the price of staying on supported APIs: an earlier version called the kernels
as XLA FFI custom calls through a `ctypes` handler written against a hand-copied C ABI, which
saved about 0.6 s of a warm `jaxmetrics report --demo` and could crash or swallow a Ctrl-C.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Sequence
from typing import Any

import jax
import numpy as np

# name -> a function returning the kernel, looked up on every call (a test may replace it)
_KERNELS: dict[str, Callable[[], Callable[..., None]]] = {}


def register(name: str, lookup: Callable[[], Callable[..., None]]) -> None:
    """Register the kernel ``lookup()`` under `name`.

    The kernel is called as ``kernel(*operands, out=results)`` with numpy arrays of the operands
    and freshly allocated numpy arrays of the results, which it must fill. `lookup` is called on
    every call, so a kernel replaced in its module (a test's monkeypatch) is the one that runs.
    """
    _KERNELS[name] = lookup


def call(name: str, results: Sequence[jax.ShapeDtypeStruct], *operands: Any) -> tuple[Any, ...]:
    """Call the registered kernel `name` from a traced CPU program; batched along new leading
    axes under `vmap` (the kernels work on the last axis)."""
    results = tuple(results)
    kernel = _KERNELS[name]
    ranks = [np.ndim(operand) for operand in operands]

    def on_host(*arrays):
        arrays = [np.asarray(a) for a in arrays]
        # under vmap the operands arrive with leading batch axes (size 1 where not batched)
        batch = np.broadcast_shapes(*(a.shape[: a.ndim - r] for a, r in zip(arrays, ranks)))
        out = [np.empty(batch + tuple(r.shape), r.dtype) for r in results]
        try:
            kernel()(*arrays, out=out)
        except Exception as error:  # JAX re-raises it as a JaxRuntimeError: say whose it is
            raise RuntimeError(f"jaxmetrics host kernel {name!r} failed: {error}") from error
        return tuple(out)

    return tuple(jax.pure_callback(on_host, results, *operands, vmap_method="expand_dims"))


# ------------------------------------------------------------- steps of the ranking kernels


def float32_keys(scores: np.ndarray, *, out: np.ndarray) -> None:
    """Write into the uint32 array `out` words whose unsigned order is the order of the float32
    `scores` (broadcast to it), equal where the scores are equal; both zeros and every subnormal
    take +0's word (the engine's flush)."""
    bits = np.ascontiguousarray(scores).view(np.uint32)
    # flip negatives entirely and set the sign bit of positives: unsigned order == float order.
    # One xor with a mask made from the sign (np.where over the two cases took 15 ms at 10^6,
    # more than half the sort's time; this takes 0.5 ms)
    sign = (bits.view(np.int32) >> 31).view(np.uint32)
    sign |= np.uint32(0x80000000)
    np.bitwise_xor(bits, sign, out=out)
    np.copyto(out, np.uint32(0x80000000), where=(bits & np.uint32(0x7F800000)) == 0)


# the 32-bit halves of a uint64 word, as indices of its two uint32 words in memory
_LOW, _HIGH = (0, 1) if sys.byteorder == "little" else (1, 0)


def sort_carrying(
    scores: np.ndarray, shape: tuple[int, ...], payload: Callable[[np.ndarray], None]
) -> tuple[np.ndarray, np.ndarray]:
    """Sort float32 `scores`, broadcast to `shape`, along the last axis, carrying a uint32
    payload along: ``payload(words)`` writes it into the uint32 array it is handed. Returns
    (payload, keys) in ascending order of the scores (`float32_keys`), as strided views.

    Each score and its payload are one uint64 word, key << 32 | payload: numpy's vectorised sort
    of plain integers is about twice as fast as its argsort at 10^7, and both halves come out of
    the sorted words without a gather.
    """
    words = np.empty((*shape, 2), np.uint32)
    float32_keys(scores, out=words[..., _HIGH])
    payload(words[..., _LOW])
    words.view(np.uint64)[..., 0].sort(axis=-1)
    return words[..., _LOW], words[..., _HIGH]


def fill_tie_groups(ordered: np.ndarray, group_start: np.ndarray, group_stop: np.ndarray) -> None:
    """Write the tie groups of the sorted keys `ordered` (..., n) into the int32 arrays
    `group_start` and `group_stop` of its shape: position i's group is ``[start[i], stop[i])``.

    Every position starts as its own group ``[i, i + 1)``; when few neighbours tie only the tied
    runs are rewritten, a few passes over the few tied pairs instead of running minima and
    maxima over every position (those took 40% of the rank of 20 x 10^5 continuous scores).
    """
    n = ordered.shape[-1]
    position = np.arange(n, dtype=np.int32)
    group_start[...] = position
    np.add(position, np.int32(1), out=group_stop)
    if n < 2:
        return
    tied = ordered[..., 1:] == ordered[..., :-1]  # sorted positions j and j + 1 hold equal scores
    pairs = np.flatnonzero(tied)  # flat pair index p = r * (n - 1) + j
    if pairs.size == 0:
        return
    if pairs.size * 4 > tied.size:
        is_end = np.ones(group_stop.shape, bool)
        np.logical_not(tied, out=is_end[..., :-1])
        stop = np.where(is_end, group_stop, np.int32(n))
        group_stop[...] = np.flip(np.minimum.accumulate(np.flip(stop, -1), axis=-1), -1)
        is_start = np.ones(group_start.shape, bool)
        is_start[..., 1:] = is_end[..., :-1]
        np.maximum.accumulate(np.where(is_start, position, np.int32(0)), axis=-1, out=group_start)
        return
    row, j = np.divmod(pairs, n - 1)
    flat = row * n + j  # flat position of the pair's first element
    starts_run = np.ones(flat.size, bool)
    starts_run[1:] = flat[1:] != flat[:-1] + 1
    run = np.cumsum(starts_run) - 1
    offset = row * n
    first = flat[starts_run][run] - offset  # where each pair's tied run begins, in its row
    last = flat[np.append(starts_run[1:], True)][run] + 2 - offset  # one past where it ends
    for members in (flat, flat + 1):  # both elements of every tied pair
        np.put(group_start, members, first)
        np.put(group_stop, members, last)
