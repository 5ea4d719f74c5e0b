"""numpy kernels called from compiled CPU programs, through `jax.pure_callback`.

On the CPU backend three steps run several times faster in numpy than as XLA programs: the sort
with its tie groups, the running sums and maxima, and the bootstrap's bincount (`kernels` says
where each is used, and `jm.xla_kernels()` turns them off). A kernel is registered here under a
name and called from a traced program with `call`, which hands it numpy arrays.

`jax.pure_callback` is JAX's public, supported way to run Python inside a program. Its cost is
that JAX's persistent compilation cache never keeps a program holding a callback (the callback
is a reference valid in one process only), so such programs are compiled again in every
process. That is the price of staying on supported APIs: an earlier version called the kernels
as XLA FFI custom calls through a `ctypes` handler written against a hand-copied C ABI, which
saved about 0.6 s of a warm `jaxmetrics report --demo` and could crash or swallow a Ctrl-C.
"""

from __future__ import annotations

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
