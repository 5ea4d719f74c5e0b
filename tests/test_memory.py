"""Memory at scale (issue 27): the bytes per sample of each accelerator path stay under the bounds
docs/how-it-is-fast.md states, and the bootstrap's default step fits at 10^8 samples.

Programs are compiled under ``jm.xla_kernels()`` for the CPU backend and never run: XLA's memory
analysis of their buffers is deterministic. A change that doubles a path's memory fails here.
"""

import importlib.util
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxmetrics as jm
from jaxmetrics._src.stats import bootstrap as bootstrap_module
from jaxmetrics._src.stats import chunks

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("memory", ROOT / "benchmarks" / "memory.py")
memory = importlib.util.module_from_spec(spec)
spec.loader.exec_module(memory)

SMALL, LARGE = 2**14, 2**16


@pytest.mark.parametrize("name", list(memory.PATHS))
def test_bytes_per_sample_stay_under_the_documented_bound(name):
    fitted, _ = memory.path_slope(name, SMALL, LARGE)
    # at least the arguments (float32 scores and int32 labels); at most the bound
    assert 8 <= fitted.per_sample <= memory.BOUNDS[name], fitted


def test_bootstrap_step_and_resample_bytes_stay_under_their_bounds():
    per_step, per_resample = memory.bootstrap_slopes(SMALL, LARGE, chunk_size=8)
    assert 8 <= per_step.per_sample <= memory.BOUNDS["bootstrap of roc_auc, per step"]
    # a resample holds at least its int32 weight row
    assert 4 <= per_resample.per_sample <= memory.BOUNDS["bootstrap of roc_auc, per resample"]


def test_every_bound_is_in_the_docs():
    text = (ROOT / "docs" / "how-it-is-fast.md").read_text()
    section = text[text.index("## Memory at scale") :]
    for name, bound in memory.BOUNDS.items():
        lines = [line.replace("`", "") for line in section.splitlines()]
        row = next((line for line in lines if f"| {name} |" in line), None)
        assert row is not None, name
        assert f"| {bound} |" in row, (name, row)


@pytest.mark.parametrize(
    "platform, size, num_resamples, expected",
    [
        ("cpu", 10**4, 1000, 26),  # 1 MB of int32 weights
        ("cpu", 10**6, 1000, 1),
        ("cpu", 100, 10, 10),  # never more than asked for
        ("gpu", 10**6, 10_000, 134),  # 4 GiB at 32 bytes per sample per resample
        ("cuda", 10**6, 10_000, 134),
        ("tpu", 10**6, 10_000, 134),
        ("gpu", 10 * 10**6, 10_000, 13),  # scores [10, n]: ten passes per resample
        ("gpu", 10**5, 1000, 1000),
        ("gpu", 10**8, 10_000, 1),
        ("gpu", 10**10, 10_000, 1),  # at least one
    ],
)
def test_default_chunk_size(platform, size, num_resamples, expected):
    assert chunks.default_chunk_size(platform, size, num_resamples) == expected


def test_an_accelerator_step_is_wide_at_a_million_and_fits_at_a_hundred_million():
    assert chunks.default_chunk_size("gpu", 10**6, 10_000) >= 32
    step = memory.BOUNDS["bootstrap of roc_auc, per step"]
    resample = memory.BOUNDS["bootstrap of roc_auc, per resample"]
    for n in (10**6, 10**7, 10**8):
        chunk = chunks.default_chunk_size("gpu", n, 10_000)
        # the program's own arrays, the step's resamples: well under half an H200
        assert (step + chunk * resample) * n < memory.H200_BYTES / 2, (n, chunk)


def test_platform_of_reads_the_mesh_the_array_or_the_backend():
    assert chunks.platform_of(jax.numpy.zeros(3)) == "cpu"
    mesh = jax.sharding.Mesh(np.array(jax.devices()[:1]), ("resamples",))
    assert chunks.platform_of(np.zeros(3), mesh) == "cpu"
    seen = []
    jax.jit(lambda x: seen.append(chunks.platform_of(x)) or x)(np.zeros(3))
    assert seen == [jax.default_backend()]


def test_bootstrap_takes_its_default_step_from_the_platform(monkeypatch):
    calls = []

    def spy(platform, size, num_resamples):
        calls.append((platform, size, num_resamples))
        return 2

    monkeypatch.setattr(bootstrap_module, "default_chunk_size", spy)
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.4, 0.3, 0.2, 0.1], np.float32)
    labels = np.array([1, 1, 0, 1, 0, 1, 0, 0])
    key = jax.random.key(0)
    default = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=6)
    assert calls == [("cpu", 8, 6)]
    given = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=6, chunk_size=2)
    assert len(calls) == 1  # a given chunk_size is kept
    np.testing.assert_array_equal(default.samples, given.samples)
