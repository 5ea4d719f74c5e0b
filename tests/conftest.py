import os

# The suite compiles a few thousand small programs, and LLVM's optimisation of them was about a
# third of their compile time (measured: 6.2 s -> 4.3 s for 11 of the library's programs), and
# XLA's newer CPU fusion emitters another fifth to a third (the older emitters: 1.8 -> 1.5 s for
# eight jitted metrics, 2.1 -> 1.4 s for their eager calls). The tests check values, not speed:
# they run the programs unoptimised by LLVM, with the older emitters (XLA's own HLO passes still
# run); benchmarks/ measures the optimised programs. Subprocesses inherit the flags.
os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "")
    + " --xla_backend_optimization_level=0 --xla_cpu_use_fusion_emitters=false"
    # LLVM's code generation in one piece per program: its default 32 parts, for threads that two
    # busy cores do not have, cost CPU time (5.8 -> 4.6 s for 40 small programs; 3-15% of the
    # compile-bound subprocess scripts)
    + " --xla_cpu_parallel_codegen_split_count=1"
).strip()
# Nor do they need Python tracebacks in the programs' location metadata (for XLA dumps and
# profiles): without them, trace, lowering and compile took 6% less (test_bad_input.py, twice
# each: 67.3 and 68.7 s -> 62.9 and 63.6 s). Subprocesses inherit these too.
os.environ.setdefault("JAX_INCLUDE_FULL_TRACEBACKS_IN_LOCATIONS", "false")
os.environ.setdefault("JAX_TRACEBACK_IN_LOCATIONS_LIMIT", "0")

import jax
import numpy as np
import pytest

# a script run by test_multidevice.py in its own process: importing it (as --doctest-modules
# would) sets four emulated devices for the whole session and runs every check at collection
collect_ignore = [
    "multidevice_checks.py",
    "multidevice_registry_checks.py",
    "multiprocess_checks.py",
]


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def tied_problem(rng, n=200, levels=7, weighted=False, float_weights=False):
    """Random binary problem with heavy ties (scores take few distinct values)."""
    scores = rng.integers(0, levels, n).astype(np.float32) / levels
    labels = rng.integers(0, 2, n).astype(np.int32)
    labels[:2] = [0, 1]
    weights = None
    if weighted:
        weights = rng.integers(0, 4, n).astype(np.float32)
        if float_weights:
            weights = weights * rng.random(n).astype(np.float32)
        weights[:2] = 1.0
    return scores, labels, weights


@pytest.fixture
def x64():
    """x64 on for one test, then restored.

    Set globally rather than with the thread-local `jax.enable_x64` context: host callbacks run
    on XLA's threads, where that context is off, and would receive float64 operands as float32.
    """
    previous = jax.config.jax_enable_x64
    jax.config.update("jax_enable_x64", True)
    yield
    jax.effects_barrier()  # let pending callbacks finish before x64 goes off again
    jax.config.update("jax_enable_x64", previous)


@pytest.fixture(autouse=True, scope="module")
def _release_compiled_programs():
    """Drop JAX's compiled programs after each test module: one process runs the whole suite,
    and the programs of every module kept alive took its peak memory past 5 GB."""
    yield
    jax.clear_caches()


# Modules of a few long tests (processes of their own, simulations), scheduled first: started
# last, one of them kept a worker busy for 40 s after the other had finished.
_LONG_FIRST = (
    "test_multidevice.py",
    "test_examples.py",
    "test_multiprocess.py",
    "test_coverage.py",
)


def pytest_collection_modifyitems(items):
    items.sort(key=lambda item: item.path.name not in _LONG_FIRST)  # stable: order kept within
