"""The CPU's numpy kernels (`host_kernels`, through `jax.pure_callback`): right values, errors
that surface, and programs that hold only public JAX operations."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import sklearn.metrics as skm

import jaxmetrics as jm
from jaxmetrics._src.core import host_kernels, sorting

pytestmark = pytest.mark.skipif(jax.default_backend() != "cpu", reason="CPU kernels")


def _copy_plus_one(values, *, out):
    out[0][...] = values + 1
    out[1][...] = values.shape[-1]


def _broken(values, *, out):
    raise ValueError("a kernel that fails")


host_kernels.register("test_copy_plus_one", lambda: _copy_plus_one)
host_kernels.register("test_broken", lambda: _broken)


@pytest.mark.parametrize("dtype", [np.float32, np.int32, np.uint8, np.float16])
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


def test_the_programs_call_the_kernels_back_through_public_jax():
    """`pure_callback`, not a custom call of a hand-registered FFI target (issue 26)."""
    text = jax.jit(jm.roc_auc).lower(np.zeros(8, np.float32), np.zeros(8, np.int32)).as_text()
    assert "callback" in text
    assert "jaxmetrics_rank" not in text


def test_host_and_xla_kernels_give_the_same_values_and_resamples(rng):
    scores = np.round(rng.normal(size=300), 1)
    labels = (rng.random(300) < 0.4).astype(int)
    expected = (skm.roc_auc_score(labels, scores), skm.average_precision_score(labels, scores))
    got = (float(jm.roc_auc(scores, labels)), float(jm.average_precision(scores, labels)))
    np.testing.assert_allclose(got, expected, rtol=1e-6)
    samples = _bootstrap_samples(scores, labels)
    with jm.xla_kernels():
        np.testing.assert_allclose(_bootstrap_samples(scores, labels), samples, rtol=1e-6)


def _bootstrap_samples(scores, labels):
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=30)
    return np.asarray(result.samples)


def test_unweighted_ranking_metrics_call_back_once():
    """AUC and AP without weights: one callback (sort, tie groups and the labels' running sum),
    not a sort followed by running sums."""
    scores, labels = np.zeros(16, np.float32), np.zeros(16, np.int32)
    for metric in (jm.roc_auc, jm.average_precision):
        text = jax.jit(metric).lower(scores, labels).as_text()
        assert text.count("xla_ffi_python_cpu_callback") == 1, metric.__name__


def test_metrics_through_the_carrying_kernel_match_sklearn(rng, monkeypatch):
    """The labels ride through the sort (`sorting.CARRY_LABELS_SAMPLES`, lowered here to reach
    it with small samples), with one score vector per label vector and with one for all."""
    monkeypatch.setattr(sorting, "CARRY_LABELS_SAMPLES", 0)  # read when the kernel runs
    scores = np.round(rng.normal(size=(3, 300)), 1).astype(np.float32)
    labels = (rng.random((3, 300)) < 0.3).astype(np.int32)
    both = jax.jit(lambda s, y: (jm.roc_auc(s, y), jm.average_precision(s, y)))
    for s, y in ((scores, labels), (scores[0], labels)):
        auc, ap = both(s, y)
        s = np.broadcast_to(s, y.shape)
        np.testing.assert_allclose(auc, [skm.roc_auc_score(*pair) for pair in zip(y, s)], atol=1e-6)
        ap_expected = [skm.average_precision_score(*pair) for pair in zip(y, s)]
        np.testing.assert_allclose(ap, ap_expected, atol=1e-6)
