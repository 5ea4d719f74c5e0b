"""The CPU's numpy kernels as XLA FFI custom calls (`host_kernels`): right values, errors that
surface, programs JAX's persistent cache keeps, and an interpreter that exits while one runs."""

import json
import os
import subprocess
import sys
import textwrap

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sklearn.metrics as skm

import jaxmetrics as jm
from jaxmetrics._src import host_kernels

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU kernels")


def _copy_plus_one(values, *, out):
    out[0][...] = values + 1
    out[1][...] = values.shape[-1]


def _broken(values, *, out):
    raise ValueError("a kernel that fails")


host_kernels.register("test_copy_plus_one", lambda: _copy_plus_one)
host_kernels.register("test_broken", lambda: _broken)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.int64, np.float16])
def test_a_kernel_sees_its_operands_and_fills_its_results(dtype):
    values = np.arange(12).reshape(3, 4).astype(dtype)
    results = (
        jax.ShapeDtypeStruct(values.shape, values.dtype),
        jax.ShapeDtypeStruct(values.shape, jnp.int32),
    )
    plus_one, length = jax.jit(lambda v: host_kernels.call("test_copy_plus_one", results, v))(
        values
    )
    np.testing.assert_array_equal(np.asarray(plus_one), values + 1)
    np.testing.assert_array_equal(np.asarray(length), np.full(values.shape, 4))
    # under vmap the kernel gets the batch as a leading axis
    batched = jax.vmap(lambda v: host_kernels.call("test_copy_plus_one", results[:1] * 2, v))
    plus_one, length = jax.jit(batched)(values[:, None, :])
    np.testing.assert_array_equal(np.asarray(plus_one)[:, 0], values + 1)


def test_a_failing_kernel_raises_instead_of_leaving_its_result_unwritten():
    result = (jax.ShapeDtypeStruct((5,), jnp.float32),)
    with pytest.raises(Exception, match="a kernel that fails") as caught:
        jax.block_until_ready(
            jax.jit(lambda v: host_kernels.call("test_broken", result, v))(np.zeros(5, "f4"))
        )
    assert "test_broken" in str(caught.value)


def test_the_programs_name_their_kernels_instead_of_calling_back():
    text = jax.jit(jm.roc_auc).lower(np.zeros(8, np.float32), np.zeros(8, np.int32)).as_text()
    assert "jaxmetrics_rank" in text
    assert "callback" not in text


def test_without_the_ffi_the_same_kernels_run_as_python_callbacks(rng, monkeypatch):
    scores = np.round(rng.normal(size=300), 1)
    labels = (rng.random(300) < 0.4).astype(int)
    expected = (skm.roc_auc_score(labels, scores), skm.average_precision_score(labels, scores))
    expected_samples = _bootstrap_samples(scores, labels)  # through the FFI kernels
    monkeypatch.setattr(host_kernels, "_HANDLERS", {})
    jax.clear_caches()
    try:
        text = jax.jit(jm.roc_auc).lower(scores.astype("f4"), labels).as_text()
        got = (float(jm.roc_auc(scores, labels)), float(jm.average_precision(scores, labels)))
        samples = _bootstrap_samples(scores, labels)
    finally:
        jax.clear_caches()
    assert "callback" in text and "jaxmetrics_rank" not in text
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    np.testing.assert_array_equal(samples, expected_samples)


def _bootstrap_samples(scores, labels):
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=30)
    return np.asarray(result.samples)


_CACHED_RUN = """
import json, sys
import jax, jax.monitoring, numpy as np
import jaxmetrics as jm
events = []
jax.monitoring.register_event_listener(lambda event, **kw: events.append(event))
jax.config.update("jax_compilation_cache_dir", sys.argv[1])
jax.config.update("jax_persistent_cache_min_compile_time_secs", 0)
jax.config.update("jax_persistent_cache_min_entry_size_bytes", 0)
rng = np.random.default_rng(0)
scores, labels = np.round(rng.normal(size=500), 1), rng.random(500) < 0.3
values = [float(jm.roc_auc(scores, labels)), float(jm.average_precision(scores, labels))]
boot = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(1), num_resamples=50)
values += np.asarray(boot.samples).tolist()
print(json.dumps({"values": values, "hits": events.count("/jax/compilation_cache/cache_hits"),
                  "misses": events.count("/jax/compilation_cache/cache_misses")}))
"""


def test_jax_persistent_cache_keeps_programs_with_host_kernels(tmp_path):
    """A second process finds every program in JAX's cache (none is left out for holding a
    callback), and the kernels it registers run them to the same values."""
    runs = []
    for _ in range(2):
        result = subprocess.run(
            [sys.executable, "-c", _CACHED_RUN, str(tmp_path / "cache")],
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
        assert result.returncode == 0, result.stderr
        runs.append(json.loads(result.stdout.strip().splitlines()[-1]))
    first, second = runs
    assert first["misses"] > 0 and first["hits"] == 0
    assert second["misses"] == 0 and second["hits"] == first["misses"]
    assert second["values"] == first["values"]
    rng = np.random.default_rng(0)
    scores, labels = np.round(rng.normal(size=500), 1), rng.random(500) < 0.3
    np.testing.assert_allclose(first["values"][0], skm.roc_auc_score(labels, scores), rtol=1e-6)


_EXIT_WHILE_RUNNING = """
import jax, jax.numpy as jnp, numpy as np
from jaxmetrics._src import sorting
x = np.random.default_rng(0).random(1 << 15).astype(np.float32)
f = jax.jit(lambda x: jax.lax.map(lambda k: sorting.rank(x + k).order[0], jnp.arange(3000.0)))
f(x[:8]).block_until_ready()
running = f(x)  # dispatched, never waited for: still running when the interpreter exits
print("exiting", flush=True)
"""


def test_the_interpreter_exits_while_a_program_calls_kernels():
    """Python's exit destroys JAX's CPU client, which waits for XLA's threads; a kernel on one
    of them waiting for the GIL held it up forever (seen before `host_kernels._drain`)."""
    result = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(_EXIT_WHILE_RUNNING)],
        capture_output=True, text=True, timeout=120, env={**os.environ},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "exiting"


_IMPORT_ONLY = """
import atexit
import jax  # registers JAX's exit handler, which clears the backends: it will run last
from jax._src.xla_bridge import backends_are_initialized
def report():  # runs after jaxmetrics' exit handler, before JAX's
    print("initialized" if backends_are_initialized() else "not initialized", flush=True)
atexit.register(report)
import jaxmetrics as jm
jm.roc_auc  # loads the library, which registers its kernels and their exit handler
"""


def test_the_exit_handler_starts_no_backend_when_nothing_ran():
    """The exit handler waits for running programs; with none ever run it must not start a
    backend to ask (0.1 s on the CPU, a GPU's start on an accelerator)."""
    result = subprocess.run(
        [sys.executable, "-c", _IMPORT_ONLY], capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "not initialized"
