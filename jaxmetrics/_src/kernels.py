"""Which kernels the ranking engine traces: numpy host callbacks on CPU, or XLA's own ops.

On the CPU backend three steps run faster as host callbacks to numpy than as XLA programs: the
sort (with its tie groups), the running sums and maxima, and the bootstrap's bincount. Elsewhere
(GPU, TPU) XLA's sort, scan and scatter run. `xla_kernels` forces the second branch everywhere:

* programs then hold no host callback, so JAX's persistent compilation cache keeps them (it
  does not keep programs that call back into Python) -- the command line uses it for this;
* the accelerator branch can be tested on a CPU-only machine;
* nothing calls back into one process from arrays that span several.

Both branches give the same numbers (the test suite runs its registry under both).
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

import jax

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


def without_callbacks() -> contextlib.AbstractContextManager[None]:
    """`host_callbacks_set(False)`."""
    return host_callbacks_set(False)


@contextlib.contextmanager
def xla_kernels(enabled: bool = True) -> Iterator[None]:
    """Trace jaxmetrics with XLA's own sort, scans and scatters on every backend.

    Inside the block every function is traced without host callbacks to numpy (the CPU backend's
    fast path), exactly as on a GPU or TPU; results are the same. Use it to let JAX's persistent
    compilation cache keep the programs (``jax.config.update("jax_compilation_cache_dir", ...)``),
    or to run the accelerator code path on a CPU. Compiled programs are cleared on entry and exit
    (``jax.clear_caches()``) when the choice changes, because a cached trace would otherwise keep
    the other branch.

    Args:
      enabled: ``False`` gives the default choice back inside an outer block.

    >>> import jaxmetrics as jm
    >>> with jm.xla_kernels():
    ...     print(float(jm.roc_auc([0.1, 0.4, 0.35, 0.8], [0, 0, 1, 1])))
    0.75
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"xla_kernels: enabled must be True or False, got {enabled!r}")
    changes = host_callbacks() == enabled
    if changes:
        jax.clear_caches()
    token = _host_callbacks.set(not enabled)
    try:
        yield
    finally:
        _host_callbacks.reset(token)
        if changes:
            jax.clear_caches()
