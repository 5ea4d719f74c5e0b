"""Which kernels the ranking engine traces: numpy host kernels on CPU, or XLA's own ops.

On the CPU backend three steps run faster in numpy than as XLA programs: the sort (with its tie
groups), the running sums and maxima, and the bootstrap's bincount. Compiled programs call them
back through `jax.pure_callback` (`host_kernels`). Elsewhere (GPU, TPU) XLA's sort, scan and
scatter run. `xla_kernels` forces the second branch everywhere:

* the accelerator branch can be tested on a CPU-only machine;
* nothing calls back into one process from arrays that span several.

Both branches give the same numbers (the test suite runs its registry under both). The library's
own compiled functions (`jit`, `sample_jit`) take the branch as a static argument, so each
branch has its programs and switching clears nothing.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
from collections.abc import Iterator
from typing import Any

import jax
import numpy as np
from jax.extend import core as jax_core

_host_callbacks = contextvars.ContextVar("jaxmetrics_host_callbacks", default=True)


def host_callbacks() -> bool:
    """Whether code traced now may use the CPU host-callback kernels.

    Never with several processes (``jax.distributed``): a callback into one process cannot
    take an operand that spans others.
    """
    return _host_callbacks.get() and jax.process_count() == 1


@contextlib.contextmanager
def host_callbacks_set(enabled: bool) -> Iterator[None]:
    """Trace with host callbacks on or off, leaving compiled programs alone (for functions whose
    cache key already says which, e.g. those traced for arrays split over a mesh)."""
    token = _host_callbacks.set(enabled)
    try:
        yield
    finally:
        _host_callbacks.reset(token)


_device_cumulative_only = contextvars.ContextVar("device_cumulative_only", default=False)


def host_cumulative() -> bool:
    """Whether running sums traced now may use the host callback (where callbacks are on)."""
    return not _device_cumulative_only.get()


@contextlib.contextmanager
def host_cumulative_set(enabled: bool) -> Iterator[None]:
    """Trace running sums and maxima with the host callback allowed or not."""
    token = _device_cumulative_only.set(not enabled)
    try:
        yield
    finally:
        _device_cumulative_only.reset(token)


def without_host_cumulative() -> contextlib.AbstractContextManager[None]:
    """Trace running sums and maxima with XLA's own ops (for code traced inside `shard_map`)."""
    return host_cumulative_set(False)


def branch(*arguments: Any) -> tuple[bool, bool]:
    """The kernel choices code traced now reads: (host kernels, host running sums).

    No host kernel for `arguments` that span several devices: a callback runs on one device,
    and a program spread over several waited on it forever (seen: 3 runs in 5).
    """
    spread = any(
        isinstance(leaf, jax.Array)
        and not isinstance(leaf, jax.core.Tracer)  # (inside a trace: the caller's choice)
        and len(leaf.sharding.device_set) > 1
        for leaf in jax.tree_util.tree_leaves(arguments)
    )
    return host_callbacks() and not spread, host_cumulative()


@contextlib.contextmanager
def branch_set(choices: tuple[bool, bool]) -> Iterator[None]:
    """Trace under the kernel choices of `branch`."""
    with host_callbacks_set(choices[0]), host_cumulative_set(choices[1]):
        yield


def without_callbacks() -> contextlib.AbstractContextManager[None]:
    """`host_callbacks_set(False)`."""
    return host_callbacks_set(False)


@contextlib.contextmanager
def xla_kernels(enabled: bool = True) -> Iterator[None]:
    """Trace jaxmetrics with XLA's own sort, scans and scatters on every backend.

    Inside the block every function is traced without the numpy kernels (the CPU backend's fast
    path), exactly as on a GPU or TPU; results are the same. Use it to run the accelerator code
    path on a CPU. jaxmetrics' own compiled programs are kept per branch, so entering and
    leaving the block clears nothing. A function you compiled yourself keeps the branch it was
    first traced with: JAX keys its traces by the Python function, so even a second
    ``jax.jit(jm.roc_auc)`` inside the block reuses the first trace; jit a new function there
    (``jax.jit(lambda s, y: jm.roc_auc(s, y))``) to get XLA's kernels.

    Args:
      enabled: ``False`` gives the default choice back inside an outer block.

    >>> import jaxmetrics as jm
    >>> with jm.xla_kernels():
    ...     print(float(jm.roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])))
    0.75
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"xla_kernels: enabled must be True or False, got {enabled!r}")
    token = _host_callbacks.set(not enabled)
    try:
        yield
    finally:
        _host_callbacks.reset(token)


with jax.core.eval_context():  # even where this module is imported inside a jit trace
    _EAGER = type(jax_core.find_top_trace(()))  # the trace of code outside any transformation


def trace_state_clean() -> bool:
    """Whether no transformation (jit, vmap, grad) is tracing the caller now."""
    return type(jax_core.find_top_trace(())) is _EAGER


_BRANCH = "_jaxmetrics_host_kernels"


def jit(fun, **jit_options):
    """`jax.jit(fun, **jit_options)` with the kernel branch (`host_callbacks`) as a static
    argument: a trace made with the host kernels never serves a call under `xla_kernels`."""
    static_argnames = jit_options.pop("static_argnames", ())
    if isinstance(static_argnames, str):
        static_argnames = (static_argnames,)

    def traced(*args, **kwargs):
        with branch_set(kwargs.pop(_BRANCH)):
            return fun(*args, **kwargs)

    # the program's name in logs, profiles and dumps: the function's, not "traced" (only the
    # name: `functools.wraps` would give jax.jit the signature without the branch argument)
    traced.__name__ = traced.__qualname__ = getattr(fun, "__name__", "traced")
    jitted = jax.jit(traced, static_argnames=(*static_argnames, _BRANCH), **jit_options)

    @functools.wraps(fun)
    def call(*args, **kwargs):
        return jitted(*args, **kwargs, **{_BRANCH: branch(args, kwargs)})

    def lower(*args, **kwargs):
        return jitted.lower(*args, **kwargs, **{_BRANCH: branch(args, kwargs)})

    call.lower, call.jitted = lower, jitted  # (the program for given arguments; for tests)
    return call


# Eager programs on at most this many samples are compiled for a fast compile rather than fast
# code, on the CPU: without LLVM's optimisation and with XLA's older fusion emitters. Measured on
# 4,000 samples: roc_auc's first call 0.26 -> 0.15 s, roc_curve's 0.55 -> 0.33 s,
# youden_threshold's 0.57 -> 0.26 s, each later call 0.3-1.5 ms slower. At 30,000 samples the
# later calls were up to twice as slow (roc_curve 10 -> 17 ms), and a bootstrap (thousands of
# evaluations in one program) 2-4 times slower at any size, so it is never compiled this way.
FAST_COMPILE_SAMPLES = 1 << 13
_FAST_COMPILE = {"xla_backend_optimization_level": 0, "xla_cpu_use_fusion_emitters": False}


@functools.cache
def _fast_compile_available() -> bool:
    """Whether this jaxlib knows the options (XLA may rename them), tried on a tiny program."""
    try:
        jax.jit(lambda x: x + 1, compiler_options=_FAST_COMPILE).lower(np.float32(0)).compile()
    except Exception:  # JaxRuntimeError "No such compile option" on a jaxlib without them
        return False
    return True


def with_xla_kernels(fun):
    """`fun` traced with XLA's own kernels (no host kernel, as on a GPU or TPU)."""

    @functools.wraps(fun)
    def traced(*args, **kwargs):
        with without_callbacks():
            return fun(*args, **kwargs)

    return traced


def sample_size(*args, **kwargs) -> int:
    """The longest last axis of the array arguments (0 without one)."""
    leaves = jax.tree_util.tree_leaves((args, kwargs))
    return max((np.shape(x)[-1] for x in leaves if np.ndim(x) > 0), default=0)


def sample_jit(fun, **jit_options):
    """`jax.jit(fun)`, compiled for a fast compile when called eagerly on small samples on the CPU.

    The size is the longest last axis of the array arguments; `FAST_COMPILE_SAMPLES` says
    where the choice changes. Inside a caller's trace the function is inlined and the choice
    means nothing. For programs that run once per call, never for a loop of many evaluations.
    """
    optimised = jit(fun, **jit_options)
    fast = jit(fun, compiler_options=_FAST_COMPILE, **jit_options)

    def call(*args, **kwargs):
        if not trace_state_clean():  # inside a caller's trace: inlined (options are refused)
            return optimised(*args, **kwargs)
        small = sample_size(*args, **kwargs) <= FAST_COMPILE_SAMPLES
        if small and jax.default_backend() == "cpu" and _fast_compile_available():
            return fast(*args, **kwargs)
        return optimised(*args, **kwargs)

    call.fast, call.optimised = fast, optimised  # (for tests)
    return call
