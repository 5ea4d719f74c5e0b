"""Model comparisons: Venkatraman's curve tests and the bootstrap tests of a difference.

pROC's published Venkatraman statistic (tests/testthat/helper-bootstrap-expected.R, case
`roctest.venk`: ``roc.test(r.s100b, r.ndka, method = "venkatraman")``) is E = 692. pROC publishes
no unpaired statistic, and its p-values come from R's random stream, so the rest is checked
against brute-force oracles written here from the definitions (pROC's procedure, in numpy).
"""

from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

import jaxmetrics as jm
from jaxmetrics._src.stats import venkatraman as venkatraman_module
from jaxmetrics._src.stats.paired import bootstrap_test, unpaired_difference
from jaxmetrics._src.stats.venkatraman import venkatraman_test, venkatraman_test_unpaired

ASAH = np.genfromtxt(Path(__file__).parent / "data" / "asah.csv", delimiter=",", names=True)
LABELS = ASAH["poor_outcome"].astype(np.int32)
# Permutation counts and sample sizes are static: every new one compiles anew, so the tests share
# one count and aSAH's size (113) wherever they can.
PERMUTATIONS = 200
N = LABELS.size


# ------------------------------------------------------------------------------- oracles
def first_ranks(scores):
    """1-based ranks, ties by sample order (R's rank(ties.method = "first"))."""
    return stats.rankdata(scores, method="ordinal")


def errors(ranks, labels):
    """``[..., n]`` errors of the cut below rank k = 1..n, counted pair by pair."""
    cuts = np.arange(1, labels.size + 1)[:, None]
    ranks = np.asarray(ranks)[..., None, :]
    missed = ((ranks <= cuts) & (labels == 1)).sum(-1)
    false_alarms = ((ranks > cuts) & (labels == 0)).sum(-1)
    return missed + false_alarms


def paired_statistic(ranks_a, ranks_b, labels):
    return np.abs(errors(ranks_b, labels) - errors(ranks_a, labels)).sum(-1)


def paired_null(ranks_a, ranks_b, labels, rng, num_permutations):
    """pROC's permutations: exchange each sample's ranks with probability 1/2, jitter the
    kept ones by U(-1/2, 1/2) to break the ties, rank again."""
    shape = (num_permutations, labels.size)
    exchanged = rng.random(shape) < 0.5
    permuted_a = np.where(exchanged, ranks_b, ranks_a + rng.random(shape) - 0.5)
    permuted_b = np.where(exchanged, ranks_a, ranks_b + rng.random(shape) - 0.5)
    rank = lambda values: values.argsort(-1).argsort(-1) + 1  # noqa: E731
    return paired_statistic(rank(permuted_a), rank(permuted_b), labels)


def unpaired_statistic(ranks_a, labels_a, ranks_b, labels_b):
    """Venkatraman (2000) as pROC integrates it: trapezoids on the merged grid, NaN outside a
    curve's range (R's approxfun) dropped; kappa pooled over both sets."""
    mixing = (labels_a.sum() + labels_b.sum()) / (labels_a.size + labels_b.size)

    def curve(ranks, labels):
        cuts = np.arange(1, labels.size + 1)[:, None]
        f = ((ranks <= cuts) & (labels == 1)).sum(-1) / (labels == 1).sum()
        g = ((ranks <= cuts) & (labels == 0)).sum(-1) / (labels == 0).sum()
        return mixing * f + (1 - mixing) * g, mixing * f + (1 - mixing) * (1 - g)

    def at(x, cdf, error):
        value = np.interp(x, cdf, error)
        return np.where((x < cdf[0]) | (x > cdf[-1]), np.nan, value)

    (cdf_a, error_a), (cdf_b, error_b) = curve(ranks_a, labels_a), curve(ranks_b, labels_b)
    x = np.sort(np.concatenate([cdf_a, cdf_b]))
    y = np.abs(at(x, cdf_a, error_a) - at(x, cdf_b, error_b))
    return np.nansum((y[1:] + y[:-1]) * np.diff(x) / 2)


def unpaired_null(ranks_a, labels_a, ranks_b, labels_b, rng, num_permutations):
    """pROC's permutations: jitter the ranks, deal each class's pooled ranks back at random."""
    size_a = labels_a.size
    labels = np.concatenate([labels_a, labels_b])
    null = []
    for _ in range(num_permutations):
        values = np.concatenate([ranks_a, ranks_b]) + rng.random(labels.size) - 0.5
        for label in (0, 1):
            members = np.flatnonzero(labels == label)
            values[members] = rng.permutation(values[members])
        null.append(
            unpaired_statistic(
                first_ranks(values[:size_a]), labels_a, first_ranks(values[size_a:]), labels_b
            )
        )
    return np.array(null)


def binormal(rng, n, shift=1.0):
    labels = (rng.random(n) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    return (rng.normal(size=n) + shift * labels).astype(np.float32), labels


# ----------------------------------------------------------------------- Venkatraman, pROC
def test_paired_statistic_on_asah_matches_proc_and_the_oracle():
    key = jax.random.key(0)
    test = venkatraman_test(
        ASAH["s100b"], ASAH["ndka"], LABELS, key=key, num_permutations=PERMUTATIONS
    )
    assert float(test.statistic) == 692.0  # pROC, roctest.venk
    # wfns is an ordinal score (5 values): ties broken by sample order, as pROC does
    for a, b in (("wfns", "s100b"), ("wfns", "ndka"), ("ndka", "wfns")):
        expected = paired_statistic(first_ranks(ASAH[a]), first_ranks(ASAH[b]), LABELS)
        ours = venkatraman_test(ASAH[a], ASAH[b], LABELS, key=key, num_permutations=PERMUTATIONS)
        assert float(ours.statistic) == expected


def test_asah_p_values_agree_with_procs_permutations_in_numpy():
    """The one run at pROC's default 2,000 permutations: two Monte Carlo estimates of the same
    p-value, ours and pROC's procedure in numpy, within 0.05 (about 4 standard errors)."""
    rng = np.random.default_rng(11)
    ranks_a, ranks_b = first_ranks(ASAH["s100b"]), first_ranks(ASAH["ndka"])
    key = jax.random.key(1)
    paired = venkatraman_test(ASAH["s100b"], ASAH["ndka"], LABELS, key=key)
    expected = np.mean(paired_null(ranks_a, ranks_b, LABELS, rng, 2000) >= 692)
    assert float(paired.p_value) == pytest.approx(expected, abs=0.05)
    unpaired = venkatraman_test_unpaired(ASAH["s100b"], LABELS, ASAH["ndka"], LABELS, key=key)
    statistic = unpaired_statistic(ranks_a, LABELS, ranks_b, LABELS)
    assert float(unpaired.statistic) == pytest.approx(statistic, rel=1e-5)
    null = unpaired_null(ranks_a, LABELS, ranks_b, LABELS, rng, 2000)
    assert float(unpaired.p_value) == pytest.approx(np.mean(null >= statistic), abs=0.05)


def test_unpaired_statistic_against_the_oracle_also_for_different_sizes():
    key = jax.random.key(2)
    pairs = [("wfns", "s100b", 113), ("s100b", "wfns", 113), ("ndka", "s100b", 70)]
    for a, b, size_a in pairs:
        scores_a, labels_a = ASAH[a][:size_a], LABELS[:size_a]
        ours = venkatraman_test_unpaired(
            scores_a, labels_a, ASAH[b], LABELS, key=key, num_permutations=PERMUTATIONS
        )
        expected = unpaired_statistic(first_ranks(scores_a), labels_a, first_ranks(ASAH[b]), LABELS)
        assert float(ours.statistic) == pytest.approx(expected, rel=1e-5)


# ------------------------------------------------------------------- Venkatraman, general
def test_identical_models_give_statistic_zero_and_p_value_one(rng):
    scores, labels = binormal(rng, N)
    key = jax.random.key(3)
    for other in (scores, 2 * scores + 1):  # the same ranks
        test = venkatraman_test(scores, other, labels, key=key, num_permutations=PERMUTATIONS)
        assert (float(test.statistic), float(test.p_value)) == (0.0, 1.0)
    same = venkatraman_test_unpaired(
        scores, labels, scores, labels, key=key, num_permutations=PERMUTATIONS
    )
    assert (float(same.statistic), float(same.p_value)) == (0.0, 1.0)


def test_p_values_under_the_null_are_roughly_uniform(rng):
    """80 data sets where both models (paired) or both samples (unpaired) come from one
    distribution: few p-values below 0.05, and their mean near 1/2.

    Over 300 such data sets the rates below 0.05 were 4.3% (paired) and 7% (unpaired: pROC's
    permutation of within-set ranks is approximate); 15% of 80 is beyond 3 standard errors
    of either."""
    paired, unpaired = [], []
    for trial in range(80):
        key = jax.random.fold_in(jax.random.key(4), trial)
        signal, labels = binormal(rng, N)
        scores_a = signal + rng.normal(size=N).astype(np.float32)
        scores_b = signal + rng.normal(size=N).astype(np.float32)
        test = venkatraman_test(scores_a, scores_b, labels, key=key, num_permutations=PERMUTATIONS)
        paired.append(float(test.p_value))
        signal, other_labels = binormal(rng, N)  # a second sample of the same model
        test = venkatraman_test_unpaired(
            scores_a,
            labels,
            signal + rng.normal(size=N).astype(np.float32),
            other_labels,
            key=key,
            num_permutations=PERMUTATIONS,
        )
        unpaired.append(float(test.p_value))
    for p_values in (np.array(paired), np.array(unpaired)):
        assert np.mean(p_values < 0.05) < 0.15
        assert 0.3 < p_values.mean() < 0.7


def test_different_curves_are_detected(rng):
    signal, labels = binormal(rng, N)
    good = signal + 0.3 * rng.normal(size=N).astype(np.float32)
    poor = 0.2 * signal + rng.normal(size=N).astype(np.float32)
    key = jax.random.key(5)
    paired = venkatraman_test(good, poor, labels, key=key, num_permutations=PERMUTATIONS)
    assert float(paired.p_value) < 0.01
    unpaired = venkatraman_test_unpaired(
        good, labels, poor, labels, key=key, num_permutations=PERMUTATIONS
    )
    assert float(unpaired.p_value) < 0.01


def test_statistic_ignores_sample_order_without_ties(rng):
    scores_a, labels = binormal(rng, N)
    scores_b = scores_a + rng.normal(size=N).astype(np.float32)
    order = rng.permutation(N)
    key = jax.random.key(6)
    test = venkatraman_test(scores_a, scores_b, labels, key=key, num_permutations=PERMUTATIONS)
    shuffled = venkatraman_test(
        scores_a[order], scores_b[order], labels[order], key=key, num_permutations=PERMUTATIONS
    )
    assert float(shuffled.statistic) == float(test.statistic)


def test_same_key_same_result_and_the_step_size_does_not_matter(rng, monkeypatch):
    scores_a, labels = binormal(rng, N)
    scores_b = scores_a + rng.normal(size=N).astype(np.float32)
    key = jax.random.key(7)
    first = venkatraman_test(scores_a, scores_b, labels, key=key, num_permutations=PERMUTATIONS)
    again = venkatraman_test(scores_a, scores_b, labels, key=key, num_permutations=PERMUTATIONS)
    assert tuple(map(float, first)) == tuple(map(float, again))
    # a fresh trace with 7 permutations per step (the last step padded) gives the same result
    monkeypatch.setattr(venkatraman_module, "_STEP_BYTES", 16 * N * 7)
    fields = jax.jit(
        venkatraman_module._paired_fields.__wrapped__, static_argnames=("num_permutations",)
    )
    small_steps = fields(
        np.float32(scores_a),
        np.float32(scores_b),
        labels,
        np.bool_(False),
        key,
        num_permutations=PERMUTATIONS,
    )
    assert tuple(map(float, small_steps)) == tuple(map(float, first))
    other = venkatraman_test(
        scores_a, scores_b, labels, key=jax.random.key(8), num_permutations=PERMUTATIONS
    )
    assert float(other.statistic) == float(first.statistic)


def test_jit_matches_eager_and_marks_bad_labels(rng):
    scores_a, labels = binormal(rng, N)
    scores_b = scores_a + rng.normal(size=N).astype(np.float32)
    key = jax.random.key(9)

    def paired(a, b, y, key):
        return venkatraman_test(a, b, y, key=key, num_permutations=PERMUTATIONS)

    def unpaired(a, y, b, z, key):
        return venkatraman_test_unpaired(a, y, b, z, key=key, num_permutations=PERMUTATIONS)

    eager = paired(scores_a, scores_b, labels, key)
    jitted = jax.jit(paired)(np.float32(scores_a), np.float32(scores_b), labels, key)
    np.testing.assert_allclose(tuple(jitted), tuple(eager))
    eager = unpaired(scores_a, labels, scores_b, labels, key)
    jitted = jax.jit(unpaired)(np.float32(scores_a), labels, np.float32(scores_b), labels, key)
    np.testing.assert_allclose(tuple(jitted), tuple(eager), rtol=1e-6)
    bad = labels.copy()
    bad[5] = 2
    assert np.isnan(tuple(jax.jit(paired)(scores_a, scores_b, bad, key))).all()
    assert np.isnan(tuple(jax.jit(unpaired)(scores_a, labels, scores_b, bad, key))).all()
    one_class = np.ones_like(labels)
    assert np.isnan(tuple(jax.jit(paired)(scores_a, scores_b, one_class, key))).all()


def test_bad_input_raises_naming_the_argument():
    scores, labels, key = np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1]), jax.random.key(0)
    with pytest.raises(ValueError, match="`scores_b` must be finite; found NaN at index 2"):
        venkatraman_test(scores, np.array([0.1, 0.2, np.nan, 0.4]), labels, key=key)
    with pytest.raises(ValueError, match="`labels` must contain only 0 and 1.*found 2"):
        venkatraman_test(scores, scores, np.array([0, 2, 1, 1]), key=key)
    with pytest.raises(ValueError, match="`labels` must have the same number of samples"):
        venkatraman_test(scores, scores, labels[:3], key=key)
    with pytest.raises(ValueError, match="`scores_b` must have the same number of samples"):
        venkatraman_test(scores, scores[:3], labels, key=key)
    with pytest.raises(ValueError, match="`labels` must hold both classes.*0 positives"):
        venkatraman_test(scores, scores, np.zeros(4), key=key)
    with pytest.raises(ValueError, match="`labels_b` must contain only 0 and 1"):
        venkatraman_test_unpaired(scores, labels, scores, np.array([0, 1, 1, 3]), key=key)
    with pytest.raises(ValueError, match="`labels_a` must have the same number of samples"):
        venkatraman_test_unpaired(scores, labels[:3], scores, labels, key=key)
    with pytest.raises(ValueError, match="`scores_a` must have shape \\[n\\]"):
        venkatraman_test(np.stack([scores, scores]), scores, labels, key=key)
    with pytest.raises(ValueError, match="`num_permutations` must be an int >= 1"):
        venkatraman_test(scores, scores, labels, key=key, num_permutations=0)
    with pytest.raises(TypeError, match="`key` must be a JAX PRNG key"):
        venkatraman_test(scores, scores, labels, key=0)


# --------------------------------------------------------------------- bootstrap tests
def normal_test_oracle(estimate, differences):
    differences = differences[~np.isnan(differences)]
    statistic = estimate / np.std(differences, ddof=1)
    return statistic, 2 * stats.norm.sf(abs(statistic))


def auc_bootstrap(scores, labels, key, num_resamples=300, **options):
    return jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=num_resamples, **options)


def test_unpaired_difference_against_a_numpy_oracle(rng):
    key_a, key_b = jax.random.split(jax.random.key(10))
    scores_a, labels_a = binormal(rng, 80, shift=1.5)
    scores_b, labels_b = binormal(rng, 80, shift=0.8)
    a, b = auc_bootstrap(scores_a, labels_a, key_a), auc_bootstrap(scores_b, labels_b, key_b)
    result = unpaired_difference(a, b, confidence=0.9)
    differences = np.asarray(a.samples) - np.asarray(b.samples)
    estimate = float(a.estimate) - float(b.estimate)
    assert float(result.estimate) == pytest.approx(estimate, abs=1e-6)
    np.testing.assert_allclose(
        [result.low, result.high], np.percentile(differences, [5, 95]), atol=1e-6
    )
    statistic, p_value = normal_test_oracle(estimate, differences)
    assert float(result.statistic) == pytest.approx(statistic, rel=1e-5)
    assert float(result.p_value) == pytest.approx(p_value, rel=1e-4, abs=1e-7)


def test_unpaired_difference_drops_undefined_resamples_and_checks_shapes(rng):
    key_a, key_b = jax.random.split(jax.random.key(11))
    labels = np.zeros(80, np.int32)
    labels[:2] = 1  # about 1 resample in 6 draws no positive: NaN AUC
    a = auc_bootstrap(rng.normal(size=80) + labels, labels, key_a)
    b = auc_bootstrap(rng.normal(size=80), labels, key_b)
    assert int(a.num_undefined) > 0 and int(b.num_undefined) > 0
    result = unpaired_difference(a, b)
    differences = np.asarray(a.samples) - np.asarray(b.samples)
    np.testing.assert_allclose(
        [result.low, result.high], np.nanpercentile(differences, [2.5, 97.5]), atol=1e-6
    )
    statistic, _ = normal_test_oracle(float(a.estimate) - float(b.estimate), differences)
    assert float(result.statistic) == pytest.approx(statistic, rel=1e-5)
    shorter = a._replace(samples=a.samples[:200])
    with pytest.raises(ValueError, match="`result_b` must hold as many resamples"):
        unpaired_difference(a, shorter)
    with pytest.raises(TypeError, match="`result_b` must be a BootstrapResult"):
        unpaired_difference(a, (1, 2))


def test_bootstrap_test_against_a_numpy_oracle_and_identical_models(rng):
    scores, labels = binormal(rng, 80)
    models = np.stack([scores, scores + rng.normal(size=80)])
    result = auc_bootstrap(models, labels, jax.random.key(12), stratify=labels)
    test = bootstrap_test(result, first=1, second=0)
    differences = np.asarray(result.samples[:, 1] - result.samples[:, 0])
    estimate = float(result.estimate[1] - result.estimate[0])
    statistic, p_value = normal_test_oracle(estimate, differences)
    assert float(test.estimate) == pytest.approx(estimate, abs=1e-6)
    assert float(test.standard_error) == pytest.approx(np.std(differences, ddof=1), rel=1e-5)
    assert float(test.statistic) == pytest.approx(statistic, rel=1e-5)
    assert float(test.p_value) == pytest.approx(p_value, rel=1e-4, abs=1e-7)
    # pROC's special case: no difference anywhere gives D = 0, p = 1
    same = auc_bootstrap(np.stack([scores, scores]), labels, jax.random.key(12), stratify=labels)
    same_test = bootstrap_test(same)
    assert (float(same_test.statistic), float(same_test.p_value)) == (0.0, 1.0)
    with pytest.raises(ValueError, match="`second` must be a model index"):
        bootstrap_test(result, second=5)


def test_a_result_that_is_not_a_bootstrap_result_is_refused_naming_the_argument(rng):
    # issue 25: `bootstrap_test(tuple(result))` raised AttributeError: 'tuple' object has no
    # attribute 'samples'
    scores, labels = binormal(rng, 80)  # the shapes of the test above: its programs serve
    result = auc_bootstrap(
        np.stack([scores, scores[::-1]]), labels, jax.random.key(0), stratify=labels
    )
    message = r"`result` must be a BootstrapResult \(what `bootstrap` returns\); got tuple"
    for compare in (bootstrap_test, jm.paired_difference):
        with pytest.raises(TypeError, match=message):
            compare(tuple(result))
        compare(result)  # the same fields as a BootstrapResult: accepted
