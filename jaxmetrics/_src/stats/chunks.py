"""How many bootstrap resamples a step evaluates together: a budget of bytes per backend.

A step of `bootstrap` evaluates ``chunk_size`` resamples under `jax.vmap`, each with its own
integer weight row and its own passes over the sorted samples. On the CPU a small step whose
weights stay in cache is fastest (measured at n = 10^5: 0.7 ms per AUC resample with 2-5 per
step, 1.5 ms with 50), so a step's weights stay near 1 MB. A GPU or TPU needs wide steps to
be busy, and has the memory for them: there a step may take about 4 GiB, at the bytes one
resample adds per sample (measured by benchmarks/memory.py; see docs/how-it-is-fast.md,
"Memory at scale").
"""

from __future__ import annotations

import jax

# The CPU: a step's weights, [chunk_size, size] int32, near 1 MB (in cache).
CPU_STEP_BYTES = 2**20
# A GPU or TPU: the bytes a step's resamples may take beyond the program's own (sorted scores,
# index, prefix sums: about 31 bytes per sample for roc_auc, 3.1 GB at 10^8 samples).
ACCELERATOR_STEP_BYTES = 2**32
# One resample of roc_auc adds 16.8 bytes per sample to a step on XLA's path (its weight row,
# its running sums); counted as 32, room for metrics that hold more per resample (weighted
# AP, curves). A step is then ~134 resamples at n = 10^6 and one at 10^8 (+3.2 GB).
ACCELERATOR_RESAMPLE_BYTES_PER_SAMPLE = 32


def default_chunk_size(platform: str, size: int, num_resamples: int) -> int:
    """The resamples per step `bootstrap` takes when `chunk_size` is not given.

    Args:
      platform: where the step runs: "cpu", or an accelerator ("gpu", "cuda", "rocm", "tpu").
      size: the elements of the first resampled array (scores ``[M, n]``: M * n, since every
        resample then makes M passes over the samples).
      num_resamples: the resamples asked for; a step never takes more.

    Returns:
      An int in ``[1, num_resamples]``: ``CPU_STEP_BYTES // (4 * size)`` on the CPU,
      ``ACCELERATOR_STEP_BYTES // (ACCELERATOR_RESAMPLE_BYTES_PER_SAMPLE * size)`` elsewhere.

    Examples:
      >>> from jaxmetrics._src.stats.chunks import default_chunk_size
      >>> [default_chunk_size(platform, 10**6, 10_000) for platform in ("cpu", "gpu")]
      [1, 134]
      >>> default_chunk_size("gpu", 10**8, 10_000), default_chunk_size("cpu", 10**4, 10_000)
      (1, 26)
    """
    if platform == "cpu":
        budget, per_element = CPU_STEP_BYTES, 4  # the int32 weights alone
    else:
        budget, per_element = ACCELERATOR_STEP_BYTES, ACCELERATOR_RESAMPLE_BYTES_PER_SAMPLE
    return max(1, min(num_resamples, budget // (per_element * max(1, size))))


def platform_of(array: jax.Array, mesh: jax.sharding.Mesh | None = None) -> str:
    """The platform a bootstrap of `array` runs on: the mesh's devices', else the array's
    (when it is a concrete JAX array), else the default backend's (under a trace)."""
    if mesh is not None:
        return mesh.devices.flat[0].platform
    if isinstance(array, jax.Array) and not isinstance(array, jax.core.Tracer):
        return next(iter(array.devices())).platform
    return jax.default_backend()
