"""Bytes per sample of the accelerator code path, from XLA's memory analysis of compiled programs.

    python benchmarks/memory.py                   # n = 2^16 and 2^20, under a minute of CPU
    python benchmarks/memory.py --sizes 14 16     # smaller programs, nearly the same slopes
    python benchmarks/memory.py --device default  # a GPU's own buffers, where one is present

Each path is jitted under ``jm.xla_kernels()`` (XLA's own sort, scans and scatters: the code a
GPU or TPU runs) and compiled for the CPU, never run: ``memory_analysis()`` gives the bytes of
the program's arguments, outputs and temporaries (the buffers XLA assigns). The slope of their
sum between two sizes is the bytes per sample; projected to 10^8 samples it says what fits in
one H200 (141 GB). A GPU's buffer assignment differs somewhat (its fusions, and the scratch
space of CUB's sort: about one more copy of the keys and values); the arrays the program holds
(scores, labels, sorted keys, index, prefix sums, weights) are the same.
docs/how-it-is-fast.md ("Memory at scale") holds the table; tests/test_memory.py checks that
each path stays under its `BOUNDS`.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

import jaxmetrics as jm
from jaxmetrics import streaming
from jaxmetrics._src.stats import chunks

H200_BYTES = 141e9
TARGET_SAMPLES = 10**8
NUM_THRESHOLDS = 10_000  # confusion_counts' grid
NUM_MODELS = 10  # DeLong's [M, n] scores
BIN_THRESHOLDS = 200  # BinnedCurve's default grid

# Upper bounds (bytes per sample) that docs/how-it-is-fast.md states and tests/test_memory.py
# checks: the measured slope with some room, so that a change that doubles a path's memory fails.
BOUNDS = {
    "roc_auc": 32,
    "average_precision": 40,
    "average_precision (weighted)": 56,
    "roc_curve": 72,
    "precision_recall_curve": 72,
    "confusion_counts (10^4 thresholds)": 32,
    "delong (10 models)": 720,
    "BinnedCurve.update (200 thresholds)": 32,
    "bootstrap of roc_auc, per step": 40,
    "bootstrap of roc_auc, per resample": 28,
}


def _float(n: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((n,), jnp.float32)


def _int(n: int) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((n,), jnp.int32)


def _on(device: jax.Device, shape: jax.ShapeDtypeStruct) -> jax.ShapeDtypeStruct:
    sharding = jax.sharding.SingleDeviceSharding(device)
    return jax.ShapeDtypeStruct(shape.shape, shape.dtype, sharding=sharding)


def _bootstrap(chunk_size: int) -> Callable:
    def resampled(scores, labels):
        key = jax.random.key(0)
        result = jm.bootstrap(
            jm.roc_auc, scores, labels, key=key, num_resamples=2 * chunk_size, chunk_size=chunk_size
        )
        return result.samples

    return resampled


# name -> (function, the shapes of its arguments at n samples)
PATHS: dict[str, tuple[Callable, Callable[[int], tuple]]] = {
    "roc_auc": (lambda s, y: jm.roc_auc(s, y), lambda n: (_float(n), _int(n))),
    "average_precision": (lambda s, y: jm.average_precision(s, y), lambda n: (_float(n), _int(n))),
    "average_precision (weighted)": (
        lambda s, y, w: jm.average_precision(s, y, sample_weight=w),
        lambda n: (_float(n), _int(n), _float(n)),
    ),
    "roc_curve": (lambda s, y: jm.roc_curve(s, y), lambda n: (_float(n), _int(n))),
    "precision_recall_curve": (
        lambda s, y: jm.precision_recall_curve(s, y),
        lambda n: (_float(n), _int(n)),
    ),
    "confusion_counts (10^4 thresholds)": (
        lambda s, y, t: jm.confusion_counts(s, y, t),
        lambda n: (_float(n), _int(n), _float(NUM_THRESHOLDS)),
    ),
    "delong (10 models)": (
        lambda s, y: jm.delong(s, y),
        lambda n: (jax.ShapeDtypeStruct((NUM_MODELS, n), jnp.float32), _int(n)),
    ),
    "BinnedCurve.update (200 thresholds)": (
        lambda s, y: streaming.BinnedCurve.empty(BIN_THRESHOLDS).update(s, y),
        lambda n: (_float(n), _int(n)),
    ),
}


class Bytes(NamedTuple):
    """The bytes of a compiled program's buffers (XLA's `memory_analysis`)."""

    argument: int
    output: int
    temp: int

    @property
    def total(self) -> int:
        return self.argument + self.output + self.temp


def program_bytes(
    function: Callable, *shapes: jax.ShapeDtypeStruct, device: jax.Device | None = None
) -> Bytes:
    """The buffers of ``jax.jit(function)`` compiled for `shapes`, traced with XLA's kernels,
    for `device` (default: the first CPU device, whatever the default backend)."""
    device = jax.devices("cpu")[0] if device is None else device
    placed = [_on(device, shape) for shape in shapes]
    with jm.xla_kernels():
        # a fresh function each time: JAX keeps a function's trace, with the branch it read
        compiled = jax.jit(lambda *args: function(*args)).lower(*placed).compile()
    analysis = compiled.memory_analysis()
    return Bytes(
        analysis.argument_size_in_bytes,
        analysis.output_size_in_bytes,
        analysis.temp_size_in_bytes,
    )


class Slope(NamedTuple):
    """Bytes per sample (the slope between two sizes) and the bytes at no sample (intercept)."""

    per_sample: float
    intercept: float

    def at(self, num_samples: float) -> float:
        return self.per_sample * num_samples + self.intercept


def slope(small: int, large: int, small_bytes: float, large_bytes: float) -> Slope:
    per_sample = (large_bytes - small_bytes) / (large - small)
    return Slope(per_sample, small_bytes - per_sample * small)


def path_slope(
    name: str, small: int, large: int, device: jax.Device | None = None
) -> tuple[Slope, Bytes]:
    """The bytes per sample of one of `PATHS`, and its buffers at `large`."""
    function, shapes = PATHS[name]
    at_small, at_large = (
        program_bytes(function, *shapes(n), device=device) for n in (small, large)
    )
    return slope(small, large, at_small.total, at_large.total), at_large


def bootstrap_slopes(
    small: int, large: int, chunk_size: int = 16, device: jax.Device | None = None
) -> tuple[Slope, Slope]:
    """(a step's bytes per sample apart from its resamples, each resample's bytes per sample).

    A step of ``c`` resamples holds ``per_step + c * per_resample`` bytes per sample: measured at
    one resample at two sizes, and at `chunk_size` resamples at the larger size."""
    one_small, one_large, many_large = (
        program_bytes(_bootstrap(chunk), _float(n), _int(n), device=device)
        for n, chunk in ((small, 1), (large, 1), (large, chunk_size))
    )
    per_resample = (many_large.total - one_large.total) / (chunk_size - 1) / large
    with_one = slope(small, large, one_small.total, one_large.total)
    return (
        Slope(with_one.per_sample - per_resample, with_one.intercept),
        Slope(per_resample, 0.0),
    )


def table(small: int, large: int, device: jax.Device | None = None) -> list[dict]:
    """One row per path: bytes per sample (and its arguments', outputs' and temporaries' at
    `large`), and the projected bytes at 10^8 samples."""
    rows = []
    for name in PATHS:
        fitted, buffers = path_slope(name, small, large, device)
        parts = tuple(getattr(buffers, part) / large for part in ("argument", "output", "temp"))
        rows.append(dict(path=name, slope=fitted, parts=parts))
    per_step, per_resample = bootstrap_slopes(small, large, device=device)
    rows.append(dict(path="bootstrap of roc_auc, per step", slope=per_step, parts=None))
    rows.append(dict(path="bootstrap of roc_auc, per resample", slope=per_resample, parts=None))
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sizes",
        type=int,
        nargs=2,
        default=(16, 20),
        metavar="LOG2_N",
        help="the two sizes, as powers of 2 (default: 16 20)",
    )
    parser.add_argument(
        "--device",
        choices=("cpu", "default"),
        default="cpu",
        help="compile for the CPU (default) or for the default backend's first device (a GPU's "
        "own buffer assignment, where one is present)",
    )
    args = parser.parse_args()
    small, large = (2**k for k in args.sizes)
    device = jax.devices("cpu")[0] if args.device == "cpu" else jax.devices()[0]
    print(
        f"compiled for {device.platform} ({device.device_kind}), jax {jax.__version__}, XLA's "
        f"kernels (jm.xla_kernels); slopes between n = 2^{args.sizes[0]} and 2^{args.sizes[1]}"
    )
    header = (
        f"{'path':38} {'B/sample':>8} {'args':>6} {'out':>6} {'temp':>6} {'GB at 1e8':>9}"
        f" {'fits':>4} {'bound':>5}"
    )
    print(header, "-" * len(header), sep="\n")
    rows = table(small, large, device)
    for row in rows:
        parts = " ".join(f"{part:6.1f}" for part in row["parts"]) if row["parts"] else " " * 20
        at_target = row["slope"].at(TARGET_SAMPLES)
        fits = "yes" if at_target < H200_BYTES else "NO"
        print(
            f"{row['path']:38} {row['slope'].per_sample:8.1f} {parts} {at_target / 1e9:9.2f}"
            f" {fits:>4} {BOUNDS[row['path']]:5d}"
        )
    per_step, per_resample = (row["slope"] for row in rows[-2:])
    print("\nbootstrap of roc_auc, a step at the accelerators' default chunk_size:")
    for n in (10**6, 10**7, 10**8):
        chunk = chunks.default_chunk_size("gpu", n, 10_000)
        step_bytes = per_step.at(n) + chunk * per_resample.at(n)
        print(f"  n = {n:.0e}: chunk_size {chunk:4d}, {step_bytes / 1e9:6.2f} GB")


if __name__ == "__main__":
    main()
