"""The report's order numbers (`report.order`): one program over every model's order keys gives
what the library's eager calls give on the float64 scores, model by model: the same curves and
thresholds (decoded into the input's own values and precision), the same counts at the same
chosen thresholds, and DeLong's numbers within float32 rounding."""

import numpy as np
import pytest

import jaxmetrics as jm
from jaxmetrics.report.order import Order, evaluate_order, order_keys
from jaxmetrics.report.result import Data, Metadata, numbers


def _metadata(threshold=0.5, cost_fp=None, cost_fn=None):
    return Metadata(
        None, None, (), None, threshold, cost_fp, cost_fn, 20, 0, None, 10, jm.__version__
    )


def _data(labels):
    n, positives = labels.size, int(labels.sum())
    prevalence = positives / n
    return Data(n, positives, n - positives, prevalence, max(prevalence, 1 - prevalence))


@pytest.fixture
def models():
    """Scores float32 would change (1e-12 apart), float32-exact quarters with ties, logits."""
    rng = np.random.default_rng(7)
    labels = (rng.random(300) < 0.3).astype(np.int32)
    close = 0.5 + labels * 0.1 + rng.normal(0, 0.2, 300) * 1e-12 + rng.normal(0, 0.1, 300)
    close = np.clip(close, 0, 1)
    close[:40] = 0.5 + np.arange(40) * 1e-12  # merged by float32
    quarters = rng.integers(0, 5, 300) / 4.0 * (0.5 + 0.5 * labels)
    logits = rng.normal(labels, 1.5)
    return np.stack([close, quarters, logits]).astype(np.float64), labels


def _eager_points(scores, labels, metadata, probability):
    """The rules' thresholds and the counts at them, by eager calls on the float64 scores."""
    chosen = [metadata.threshold]
    chosen.append(float(jm.youden_threshold(scores, labels).threshold))
    chosen.append(float(jm.max_f_beta(scores, labels).threshold))
    chosen.append(float(jm.max_f_beta(scores, labels, beta=2.0).threshold))
    costs = dict(cost_fp=metadata.cost_fp, cost_fn=metadata.cost_fn)
    if metadata.cost_fp is not None:
        chosen.append(float(jm.min_expected_cost(scores, labels, **costs).threshold))
        if probability:
            chosen.append(float(jm.bayes_threshold(**costs)))
    counts = jm.confusion_counts(scores, labels, np.array(chosen, np.float64))
    return chosen, [np.asarray(c) for c in counts]


@pytest.mark.parametrize("costs", [(None, None), (1.0, 4.0)])
def test_order_numbers_are_the_eager_calls(models, costs):
    scores, labels = models
    metadata = _metadata(0.3, *costs)
    probability = (0, 1)
    result = evaluate_order(Order.of(scores), labels, _data(labels), metadata, probability, False)
    for m in range(scores.shape[0]):
        roc = jm.roc_curve(scores[m], labels)
        valid = np.asarray(roc.valid)
        expected = [np.asarray(a)[valid] for a in (roc.fpr, roc.tpr, roc.thresholds)]
        assert len(result.roc[m].fpr) == valid.sum()  # fewer than MAX_CURVE_POINTS: all kept
        for got, want in zip(result.roc[m], expected, strict=True):
            assert got == numbers(want)  # as the report stores a float32 or float64 array
        pr = jm.precision_recall_curve(scores[m], labels)
        valid = np.asarray(pr.valid)
        expected = [np.asarray(a)[valid] for a in (pr.recall, pr.precision, pr.thresholds)]
        for got, want in zip(result.pr[m], expected, strict=True):
            assert got == numbers(want)
        chosen, counts = _eager_points(scores[m], labels, metadata, m in probability)
        points = result.thresholds[m]
        assert [p.threshold for p in points] == pytest.approx(chosen, rel=0, abs=0)
        for k, field in enumerate(("tp", "fp", "fn", "tn")):
            assert [getattr(p, field) for p in points] == counts[k].tolist()
    delong = jm.delong(scores, labels)
    np.testing.assert_allclose(result.delong_low, np.asarray(delong.low), rtol=1e-6)
    np.testing.assert_allclose(result.delong_high, np.asarray(delong.high), rtol=1e-6)
    for (i, j), test in result.tests.items():
        want = [float(v) for v in jm.delong_test(scores[i], scores[j], labels)]
        np.testing.assert_allclose(test, want, rtol=1e-6, atol=1e-12)


def test_thresholds_keep_the_precision_of_their_scores(models):
    """float32-exact scores give float32 thresholds (printed shortest), others float64."""
    scores, labels = models
    order = Order.of(scores)
    assert order.float32.tolist() == [False, True, False]
    merged = np.unique(scores[0].astype(np.float32)).size
    assert np.unique(order_keys(scores)[0]).size == np.unique(scores[0]).size > merged
    key = order.encode(np.array([scores[0][3]]))
    assert order.decode(key, 0).dtype == np.float64 and order.decode(key, 0)[0] == scores[0][3]
    assert order.decode(order.encode(np.array([0.25])), 1).dtype == np.float32
    assert np.isposinf(order.decode(np.array([np.inf], np.float32), 0)[0])


def test_encoded_thresholds_compare_as_the_scores_do(models):
    scores, _ = models
    order = Order.of(scores)
    thresholds = np.concatenate([scores[0][:50], [-1.0, 0.5 + 5e-13, 2.0, 1e300]])
    keys = order.encode(thresholds)
    for t, key in zip(thresholds, keys, strict=True):
        np.testing.assert_array_equal(order.keys >= key, scores >= t)


def test_delong_is_nan_with_clusters_or_too_few_of_a_class(models):
    scores, labels = models
    order = Order.of(scores)
    clustered = evaluate_order(order, labels, _data(labels), _metadata(), (), True)
    assert np.isnan(clustered.delong_low).all() and np.isnan(clustered.delong_high).all()
    assert all(np.isnan(test).all() for test in clustered.tests.values())
    one = np.zeros_like(labels)
    one[0] = 1
    few = evaluate_order(order, one, _data(one), _metadata(), (), False)
    assert np.isnan(few.delong_low).all()
    assert few.thresholds[0][0].tp + few.thresholds[0][0].fn == 1
