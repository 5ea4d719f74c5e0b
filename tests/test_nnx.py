"""`jaxmetrics.nnx.StreamingMetric`: streaming states as flax `nnx.Metric`s (issue 28).

References are scikit-learn's on the samples the masks keep; flax is in the test extra.
"""

import re
import runpy
import subprocess
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from flax import nnx
from sklearn import metrics as skm

from jaxmetrics import streaming
from jaxmetrics.nnx import StreamingMetric

EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "flax_nnx.py"


def batches(rng, num_batches=3, size=40):
    scores = rng.normal(size=(num_batches, size)).astype(np.float32)
    labels = (rng.random((num_batches, size)) < 0.4).astype(np.int32)
    labels[:, :2] = [0, 1]
    mask = rng.random((num_batches, size)) < 0.8
    return scores, labels, mask


def multi_metric():
    return nnx.MultiMetric(
        loss=nnx.metrics.Average("loss"),
        exact=StreamingMetric(streaming.ExactCurve.empty(160), scores="logits"),
        binned=StreamingMetric(streaming.BinnedCurve.empty(13, low=-3, high=3), scores="logits"),
        at_zero=StreamingMetric(streaming.ConfusionState.empty(thresholds=[0.0]), scores="logits"),
    )


@pytest.mark.parametrize("mask_dtype", [np.float32, np.int32, np.bool_])
def test_a_multi_metric_under_nnx_jit_traces_once_and_matches_sklearn(rng, mask_dtype):
    scores, labels, mask = batches(rng)
    metrics = multi_metric()
    traces = []

    @nnx.jit
    def eval_step(metrics, logits, labels, mask):
        traces.append(1)
        loss = jnp.abs(logits)
        metrics.update(logits=logits, labels=labels, loss=loss, mask=mask, ignored=logits)

    before = [leaf.dtype for leaf in jax.tree_util.tree_leaves(nnx.state(metrics))]
    for s, y, m in zip(scores, labels, mask.astype(mask_dtype)):
        eval_step(metrics, s, y, m)
    assert len(traces) == 1  # the states kept their leaf types: no second trace
    after = [leaf.dtype for leaf in jax.tree_util.tree_leaves(nnx.state(metrics))]
    assert before == after
    result = metrics.compute()
    kept = mask.ravel()
    s, y = scores.ravel()[kept], labels.ravel()[kept]
    assert float(result["exact"]["roc_auc"]) == pytest.approx(skm.roc_auc_score(y, s), abs=1e-6)
    assert float(result["exact"]["average_precision"]) == pytest.approx(
        skm.average_precision_score(y, s), abs=1e-6
    )
    assert float(result["at_zero"]["recall"][0]) == pytest.approx(
        skm.recall_score(y, s >= 0), abs=1e-6
    )
    assert float(result["loss"]) == pytest.approx(np.abs(s).mean(), rel=1e-5)
    binned = streaming.BinnedCurve.empty(13, low=-3, high=3).update(s, y).compute()
    np.testing.assert_allclose(result["binned"]["tpr"], binned["tpr"])
    # reset: the empty state again
    metrics.reset()
    assert np.isnan(float(metrics.compute()["exact"]["roc_auc"]))
    empty = streaming.ExactCurve.empty(160)
    for a, b in zip(
        jax.tree_util.tree_leaves(metrics.exact.state.value), jax.tree_util.tree_leaves(empty)
    ):
        np.testing.assert_array_equal(a, b)


def test_update_reads_its_keywords_and_weights(rng):
    scores, labels, mask = batches(rng, 1)
    weights = rng.integers(0, 3, scores.shape[1])
    metric = StreamingMetric(
        streaming.ConfusionState.empty(thresholds=[0.0, 0.5]),
        scores="probs",
        labels="targets",
        sample_weight="weights",
    )
    metric.update(probs=scores[0], targets=labels[0], weights=weights, mask=mask[0], other=1)
    used = weights * mask[0]
    for threshold, recall in zip([0.0, 0.5], metric.compute()["recall"]):
        expected = skm.recall_score(labels[0], scores[0] >= threshold, sample_weight=used)
        assert float(recall) == pytest.approx(expected, abs=1e-6)
    with pytest.raises(TypeError, match=r"needs the keyword argument\(s\) \['weights'\]"):
        metric.update(probs=scores[0], targets=labels[0])
    with pytest.raises(TypeError, match="`state` must be a streaming state"):
        StreamingMetric(np.zeros(3))
    with pytest.raises(TypeError, match="`labels` must be a keyword name"):
        StreamingMetric(streaming.BinnedCurve.empty(5), labels=1)
    # a Mean has no labels
    mean = StreamingMetric(streaming.Mean.empty(), scores="loss", labels=None)
    mean.update(loss=jnp.array([1.0, 2.0, 6.0]), mask=jnp.array([1, 1, 0]))
    assert float(mean.compute()["mean"]) == 1.5
    # [n, 1] logits: the shape named (as the state's argument), with the fix
    message = r"`predictions` has shape \(40, 1\); samples lie on the last axis.*\[\.\.\., 0\]`"
    with pytest.raises(ValueError, match=message):
        metric.update(probs=scores[0][:, None], targets=labels[0], weights=weights)


def test_merge_from_model_output_and_psum_merge_as_the_states_do(rng):
    scores, labels, _ = batches(rng, 2)
    whole = StreamingMetric(streaming.BinnedCurve.empty(9, low=-2, high=2))
    for s, y in zip(scores, labels):
        whole.update(scores=s, labels=y)
    first = whole.from_model_output(scores=scores[0], labels=labels[0])
    first.merge(whole.from_model_output(scores=scores[1], labels=labels[1]))
    graphdef, state = nnx.split(StreamingMetric(streaming.BinnedCurve.empty(9, low=-2, high=2)))

    def per_device(state, s, y):
        metric = nnx.merge(graphdef, state)
        metric.update(scores=s, labels=y)
        return jax.lax.psum(metric.state.value, "devices")

    summed = jax.vmap(per_device, in_axes=(None, 0, 0), axis_name="devices")(state, scores, labels)
    summed = jax.tree_util.tree_map(lambda leaf: leaf[0], summed)
    for merged in (first.state.value, summed):
        for a, b in zip(
            jax.tree_util.tree_leaves(merged), jax.tree_util.tree_leaves(whole.state.value)
        ):
            np.testing.assert_array_equal(a, b)
    expected = skm.roc_auc_score(labels.ravel(), scores.ravel())
    assert abs(float(whole.compute()["roc_auc"]) - expected) <= float(
        whole.compute()["roc_auc_max_error"]
    )


def test_nnx_scan_over_eval_batches(rng):
    scores, labels, mask = batches(rng, 4)
    metrics = multi_metric()

    @nnx.scan(in_axes=(nnx.Carry, 0, 0, 0), out_axes=nnx.Carry)
    def run(metrics, logits, labels, mask):
        metrics.update(logits=logits, labels=labels, loss=logits, mask=mask)
        return metrics

    run(metrics, scores, labels, mask.astype(np.float32))
    kept = mask.ravel()
    expected = skm.roc_auc_score(labels.ravel()[kept], scores.ravel()[kept])
    assert float(metrics.compute()["exact"]["roc_auc"]) == pytest.approx(expected, abs=1e-6)


def test_import_jaxmetrics_does_not_import_flax_and_nnx_names_the_extra():
    code = (
        "import sys\n"
        "import jaxmetrics, jaxmetrics.losses, jaxmetrics.streaming\n"
        "jaxmetrics.roc_auc\n"
        "assert 'flax' not in sys.modules, 'flax imported'\n"
        "sys.modules['flax'] = None\n"  # flax missing
        "try:\n"
        "    import jaxmetrics.nnx\n"
        "except ImportError as error:\n"
        "    print(error)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    assert "pip install 'jaxmetrics[flax]'" in result.stdout


def test_the_flax_example_runs(capsys):
    example = runpy.run_path(str(EXAMPLE), run_name="example")
    example["main"](["--steps", "60", "--every", "30", "--resamples", "200"])
    out = capsys.readouterr().out
    assert "eval step traced 1 time(s) in all" in out  # two models, every evaluation
    for part in ("bce loss", "pairwise AUC loss", "surrogate", "first evaluation", "total time"):
        assert part in out, part
    aucs = [float(auc) for auc in re.findall(r"^test AUC \(.*\): ([0-9.]+),", out, re.M)]
    assert len(aucs) == 2 and all(0.6 < auc < 1 for auc in aucs), out
