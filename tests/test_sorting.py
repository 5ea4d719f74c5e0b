import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm
from jaxmetrics._src.core import prefix, sorting


def test_host_and_device_ranking_find_the_same_groups(rng):
    # the CPU path (numpy callback) and the GPU/TPU path (XLA sort) must agree on tie groups
    scores = np.concatenate([rng.integers(0, 9, (2, 300)) / 9, rng.normal(size=(2, 300))], axis=-1)
    scores = scores.astype(np.float32)
    scores[0, :5] = [-0.0, 0.0, np.inf, -np.inf, 0.0]
    scores = np.where(scores == 0, np.float32(0), scores)
    host_order, host_start, host_stop = sorting._host_rank(scores)
    dev_order, dev_start, dev_stop = jax.jit(sorting._device_rank)(jnp.asarray(scores))
    np.testing.assert_array_equal(host_stop, dev_stop)
    np.testing.assert_array_equal(host_start, dev_start)
    ordered = np.take_along_axis(scores, host_order, -1)
    np.testing.assert_array_equal(ordered, np.take_along_axis(scores, np.asarray(dev_order), -1))
    assert np.all(np.diff(ordered, axis=-1) >= 0)
    for row, start, stop in zip(ordered, host_start, host_stop):
        for i in range(row.size):
            assert np.all(row[start[i] : stop[i]] == row[i])
            assert start[i] == 0 or row[start[i] - 1] < row[i]
            assert stop[i] == row.size or row[stop[i]] > row[i]


def test_float64_path_of_the_host_sort(rng):
    scores = rng.normal(size=50)
    order, ordered = sorting._host_sort(scores)
    np.testing.assert_array_equal(ordered, np.sort(scores))


def test_float_weights_accumulate_accurately_at_four_million():
    # oracle: per-level sums in float64 (scores take 1,000 levels, so it needs no sort); a plain
    # float32 running sum of ~6e6 total weight is off by far more than the tolerance
    n, levels = 2**22, 1000
    rng = np.random.default_rng(7)
    level = rng.integers(0, levels, n)
    labels = (rng.random(n) < 0.3 + 0.4 * level / levels).astype(np.int32)
    weights = rng.random(n).astype(np.float32) * 3
    pos = np.bincount(level, weights * labels, levels)
    neg = np.bincount(level, weights * (1 - labels), levels)
    below = np.concatenate([[0.0], np.cumsum(neg)[:-1]])
    expected = (pos * (below + neg / 2)).sum() / (pos.sum() * neg.sum())
    got = jax.jit(jm.roc_auc)(level.astype(np.float32), labels, sample_weight=weights)
    assert float(got) == pytest.approx(expected, abs=1e-6)


@pytest.mark.parametrize("op", ["sum", "max"])
def test_host_and_device_cumulative_agree(rng, op):
    values = rng.integers(-5, 9, (3, 257)).astype(np.int32)
    expected = np.cumsum(values, -1) if op == "sum" else np.maximum.accumulate(values, -1)

    def host(v):
        return sorting.cumulative(v, op=op)

    np.testing.assert_array_equal(jax.jit(host)(values), expected)
    np.testing.assert_array_equal(jax.vmap(host)(values), expected)
    device = jax.jit(lambda v: sorting._device_cumulative(v, op=op))  # the GPU/TPU path
    np.testing.assert_array_equal(device(values), expected)


@pytest.mark.parametrize("n", [1, 64, 65, 257, 4000, 100_003])
def test_blocked_running_sums_on_the_cpu_equal_numpys(rng, n):
    """XLA's CPU running sums (`prefix.running_sum`: blocks of 32 by matrix products, the blocks'
    totals likewise, recursively at 100,003) are exact for integers and integer-valued floats,
    under jit and vmap, and as close as XLA's own for other floats."""
    counts = rng.poisson(2.0, (2, 3, n)).astype(np.int32)
    summed = jax.jit(prefix.running_sum)
    for values in (counts, counts.astype(np.float32)):
        expected = np.cumsum(values, -1)
        got = summed(values)
        assert got.dtype == values.dtype
        np.testing.assert_array_equal(got, expected)
        np.testing.assert_array_equal(jax.vmap(prefix.running_sum)(values), expected)
    floats = rng.normal(size=(3, n)).astype(np.float32)
    exact = np.cumsum(floats.astype(np.float64), -1)
    xla_error = np.abs(np.asarray(jax.jit(lambda v: jnp.cumsum(v, -1))(floats)) - exact).max()
    error = np.abs(np.asarray(summed(floats)) - exact).max()
    assert error <= 4 * xla_error + 1e-6 * np.sqrt(n)
    if n > 2 * prefix.BLOCK:  # the CPU's program: matrix products, short windows only
        program = summed.lower(counts).as_text()
        windows = re.findall(r"window_dimensions = array<i64: ([0-9, ]+)>", program)
        assert "dot_general" in program
        assert max(int(w) for found in windows for w in found.split(",")) <= 2 * prefix.BLOCK


def test_subnormal_scores_are_consistent_under_jit_and_exact_eagerly():
    scores, labels = [0.0, 1e-45, 1e-42, 1e-39], np.array([0, 1, 0, 1])
    # eagerly the order keys keep every subnormal distinct: the exact AUC (pairs counted by hand)
    assert float(jm.roc_auc(scores, labels)) == 0.75
    # under jit XLA's CPU flushes them to zero; the engine flushes them too, so every comparison
    # agrees with its groups: one tie group, AUC 1/2, and `>=` counts all four at threshold 0
    as_float32 = np.asarray(scores, np.float32)
    assert float(jax.jit(jm.roc_auc)(as_float32, labels)) == 0.5
    counts = jax.jit(jm.confusion_counts)(as_float32, labels, np.float32(0))
    assert [int(c) for c in counts] == [2, 2, 0, 0]


@pytest.mark.parametrize("levels", [3, 50, 10**6])  # dense ties, some, almost none
def test_host_tie_groups_equal_a_direct_oracle(levels):
    rng = np.random.default_rng(levels)
    for shape in [(1,), (2,), (37,), (3, 41), (2, 2, 19)]:
        scores = (rng.integers(0, levels, shape) / 7).astype(np.float32)
        order, start, stop = sorting._host_rank(scores)
        ordered = np.take_along_axis(scores, order, -1)
        assert (np.diff(ordered, axis=-1) >= 0).all()
        for index in np.ndindex(shape[:-1]):
            row = ordered[index]
            expected_start = [int(np.argmax(row == value)) for value in row]
            expected_stop = [len(row) - int(np.argmax(row[::-1] == value)) for value in row]
            np.testing.assert_array_equal(start[index], expected_start)
            np.testing.assert_array_equal(stop[index], expected_stop)


def test_small_eager_programs_are_compiled_for_a_fast_compile_with_the_same_results(monkeypatch):
    """`kernels.sample_jit`: small samples eagerly on the CPU take the fast-compile program, large
    ones and calls inside a caller's trace the optimised one; the results are the same."""
    from jaxmetrics._src.core import kernels

    def running_sum_of_sorted(x):
        return jnp.cumsum(jnp.sort(x), axis=-1)

    def fresh():  # a new function each time: JAX's caches of compiled programs are per function
        return kernels.sample_jit(lambda x: running_sum_of_sorted(x))

    rng = np.random.default_rng(0)
    for size, expect_fast in ((100, True), (kernels.FAST_COMPILE_SAMPLES + 1, False)):
        function = fresh()
        x = rng.normal(size=(2, size)).astype(np.float32)
        expected = np.cumsum(np.sort(x, axis=-1), axis=-1, dtype=np.float64)
        np.testing.assert_allclose(function(x), expected, rtol=1e-4, atol=1e-3)
        assert function.fast.jitted._cache_size() == int(expect_fast), size
        assert function.optimised.jitted._cache_size() == int(not expect_fast), size
    # concrete arrays inside a caller's jit: inlined into its program (options would be refused)
    function = fresh()
    small = rng.normal(size=50).astype(np.float32)
    inside = jax.jit(lambda: function(small))()
    np.testing.assert_allclose(inside, np.cumsum(np.sort(small)), rtol=1e-5, atol=1e-5)
    assert function.fast.jitted._cache_size() == 0
    # a jaxlib without the options: the optimised program, the same result
    monkeypatch.setattr(kernels, "_FAST_COMPILE", {"xla_no_such_option": 1})
    kernels._fast_compile_available.cache_clear()
    try:
        function = fresh()
        np.testing.assert_allclose(function(small), np.cumsum(np.sort(small)), rtol=1e-5, atol=1e-5)
        assert function.fast.jitted._cache_size() == 0
        assert function.optimised.jitted._cache_size() == 1
    finally:
        monkeypatch.undo()
        kernels._fast_compile_available.cache_clear()


def _check_rank_and_count(scores, labels, out):
    """The kernel's four results against direct oracles, row by row (ties in any order)."""
    order, start, stop, positive = out
    flushed = np.where(np.abs(scores) < np.finfo(np.float32).tiny, np.float32(0), scores)
    for index in np.ndindex(order.shape[:-1]):
        row = np.broadcast_to(flushed, order.shape)[index]
        row_labels = np.broadcast_to(labels, order.shape)[index]
        ordered = row[order[index]]
        np.testing.assert_array_equal(np.sort(order[index]), np.arange(row.size))
        assert (np.diff(ordered) >= 0).all()
        # a tie group is the run of equal sorted scores around the position
        np.testing.assert_array_equal(start[index], np.searchsorted(ordered, ordered, "left"))
        np.testing.assert_array_equal(stop[index], np.searchsorted(ordered, ordered, "right"))
        # positive[j]: positives among the first j of this order; at a group start, the
        # positives scoring below the group's score, counted directly
        running = np.cumsum(row_labels[order[index]])
        np.testing.assert_array_equal(positive[index], np.concatenate([[0], running]))
        below = np.searchsorted(np.sort(row[row_labels == 1]), ordered, "left")
        np.testing.assert_array_equal(positive[index][start[index]], below)


@pytest.mark.parametrize("carried", [True, False])
def test_rank_and_count_kernel_equals_direct_oracles(carried, monkeypatch):
    # carried: the labels ride through the sort (large samples); else `_host_rank` and a gather
    monkeypatch.setattr(sorting, "CARRY_LABELS_SAMPLES", 0 if carried else 1 << 30)
    rng = np.random.default_rng(11)
    shapes = [
        ((1,), (1,)),
        ((57,), (57,)),
        ((3, 40), (3, 40)),
        ((1, 40), (4, 40)),
        ((3, 40), (1, 40)),
    ]
    for scores_shape, labels_shape in shapes:
        scores = (rng.integers(-4, 5, scores_shape) / 3).astype(np.float32)
        scores.flat[:3] = [-0.0, 1e-42, -1e-40][: scores.size]  # zeros and subnormals tie with 0
        labels = (rng.random(labels_shape) < 0.4).astype(np.uint8)
        shape = np.broadcast_shapes(scores_shape, labels_shape)
        out = [np.empty(shape, np.int32) for _ in range(3)]
        out.append(np.empty(shape[:-1] + (shape[-1] + 1,), np.int32))
        sorting._rank_and_count_into(scores, labels, out=out)
        _check_rank_and_count(scores, labels, out)


def test_rank_and_count_kernel_carries_labels_from_its_threshold():
    rng = np.random.default_rng(12)
    n = sorting.CARRY_LABELS_SAMPLES
    scores = rng.normal(size=n).astype(np.float32)  # ~2^19 normal float32s: some ties
    labels = (rng.random(n) < 0.1).astype(np.uint8)
    out = [np.empty(n, np.int32) for _ in range(3)] + [np.empty(n + 1, np.int32)]
    sorting._rank_and_count_into(scores, labels, out=out)
    order, start, stop, positive = out
    ordered = scores[order]
    assert (np.diff(ordered) >= 0).all()
    np.testing.assert_array_equal(start, np.searchsorted(ordered, ordered, "left"))
    np.testing.assert_array_equal(stop, np.searchsorted(ordered, ordered, "right"))
    np.testing.assert_array_equal(positive, np.concatenate([[0], np.cumsum(labels[order])]))


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_key_sort_orders_as_a_stable_float_sort(rng, dtype, request):
    # oracle: numpy's stable argsort of the float64 values, -0.0 and +0.0 equal
    if dtype == "float64":
        request.getfixturevalue("x64")
    values = np.concatenate([rng.integers(-4, 5, 40) / 4, rng.normal(size=40) * 1e3])
    values[:6] = [-0.0, 0.0, np.inf, -np.inf, -0.0, 0.0]
    scores = jnp.asarray(values, dtype)
    widened = np.asarray(scores.astype(jnp.float32 if dtype != "float64" else jnp.float64))
    keys, order = jax.jit(sorting.key_sort)(scores)
    assert keys.dtype == (jnp.uint64 if dtype == "float64" else jnp.uint32)
    assert order.dtype == jnp.int32
    np.testing.assert_array_equal(order, np.argsort(widened, kind="stable"))
    ordered = widened[np.asarray(order)]
    np.testing.assert_array_equal(keys[1:] == keys[:-1], ordered[1:] == ordered[:-1])
