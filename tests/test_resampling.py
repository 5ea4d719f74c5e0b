import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats
from sklearn import metrics as skm

import jaxmetrics as jm
from jaxmetrics._src.stats.resampling import resample_weights


def binormal(rng, n=300, prevalence=0.3):
    labels = (rng.random(n) < prevalence).astype(np.int32)
    scores = np.round(rng.normal(size=n) + labels, 1).astype(np.float32)  # ties on purpose
    return scores, labels


def weighted_mean(values, sample_weight):
    return jnp.sum(values * sample_weight, axis=-1) / jnp.sum(sample_weight, axis=-1)


def test_multinomial_weights_are_resamples_and_auc_matches_explicit_resampling(rng):
    scores, labels = binormal(rng)
    key = jax.random.key(3)
    weights = np.asarray(resample_weights(key, jnp.arange(20), scores.size))
    assert (weights.sum(-1) == scores.size).all() and weights.dtype == np.int32
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=20)
    for w, value in zip(weights, np.asarray(result.samples)):
        index = np.repeat(np.arange(scores.size), w)  # the same resample, as rows
        assert value == pytest.approx(skm.roc_auc_score(labels[index], scores[index]), abs=1e-6)


@pytest.mark.parametrize(
    "n, rate",
    [
        (40, None),  # rate 0: every draw added uniformly
        (400, None),  # rate 0.6: Poisson counts topped up
        (400, 1.0),  # the total exceeds n half the time: the rejection loop redraws
    ],
)
def test_multinomial_counts_have_the_multinomial_law(n, rate):
    # oracle: n uniform draws with replacement give counts with Binomial(n, 1/n) marginals,
    # covariance -1/n between two samples, and a total of exactly n
    from jaxmetrics._src.stats import resampling

    seed = resampling.seed_words(jax.random.key(5))
    draw = jax.jit(jax.vmap(lambda r: resampling._multinomial(seed, r, n, rate)))
    weights = np.asarray(draw(jnp.arange(4000)))
    assert (weights.sum(-1) == n).all()
    values, observed = np.unique(weights, return_counts=True)
    expected = stats.binom.pmf(values, n, 1 / n) * weights.size
    keep = expected > 20  # the chi-square test's cells (the rest pooled)
    observed = np.append(observed[keep], observed[~keep].sum())
    expected = np.append(expected[keep], weights.size - expected[keep].sum())
    assert stats.chisquare(observed, expected).pvalue > 1e-3
    covariance = np.cov(weights[:, 0], weights[:, 1])[0, 1]
    assert covariance == pytest.approx(-1 / n, abs=0.04)


def test_poisson_weights_have_poisson_moments():
    weights = np.asarray(
        resample_weights(jax.random.key(0), jnp.arange(50), 4000, sampling="poisson")
    )
    assert weights.mean() == pytest.approx(1.0, abs=0.01)
    assert weights.var() == pytest.approx(1.0, abs=0.02)
    assert (weights == 0).mean() == pytest.approx(np.exp(-1), abs=0.005)


def test_stratified_weights_keep_class_sizes(rng):
    _, labels = binormal(rng)
    weights = np.asarray(
        resample_weights(jax.random.key(1), jnp.arange(30), labels.size, stratify=labels)
    )
    np.testing.assert_array_equal(weights[:, labels == 1].sum(-1), (labels == 1).sum())
    np.testing.assert_array_equal(weights[:, labels == 0].sum(-1), (labels == 0).sum())
    assert len({tuple(row) for row in weights}) == 30


def test_same_key_same_result_and_chunking_does_not_matter(rng):
    scores, labels = binormal(rng)
    key = jax.random.key(7)
    a = jm.bootstrap(jm.average_precision, scores, labels, key=key, num_resamples=50)
    b = jm.bootstrap(jm.average_precision, scores, labels, key=key, num_resamples=50, chunk_size=7)
    np.testing.assert_allclose(a.samples, b.samples, atol=1e-7)
    c = jm.bootstrap(jm.average_precision, scores, labels, key=jax.random.key(8), num_resamples=50)
    assert not np.allclose(a.samples, c.samples)


def test_an_estimate_from_a_padding_slot_equals_the_eager_estimate(rng, monkeypatch):
    """A metric marked `estimate_in_loop` (the report's panel) gets its estimate from a padding
    slot of the last compiled call (a resample of unit weights) instead of an eager call: the
    same estimate, the same resamples and interval; without padding it calls the metric."""

    scores, labels = binormal(rng, n=120)
    scores = np.round(scores, 1)  # ties
    groups = np.arange(120) // 3
    eager_calls = []

    def auc_and_ap(s, y, *, sample_weight=None):
        if not isinstance(s, jax.core.Tracer):
            eager_calls.append(1)
        total = jnp.sum(sample_weight) if sample_weight is not None else jnp.size(y)
        return jnp.stack(
            [
                jm.roc_auc(s, y, sample_weight=sample_weight),
                jm.average_precision(s, y, sample_weight=sample_weight),
                jnp.asarray(total, jnp.float32),  # unit weights: n
            ]
        )

    @jm.estimate_in_loop
    def slotted(s, y, *, sample_weight=None):
        return auc_and_ap(s, y, sample_weight=sample_weight)

    for num_resamples, chunk_size, padded in ((30, 4, True), (32, 4, False)):
        for design in ({}, {"groups": groups}, {"sampling": "poisson"}):
            options = dict(key=jax.random.key(5), num_resamples=num_resamples, **design)
            eager_calls.clear()
            public = jm.bootstrap(auc_and_ap, scores, labels, chunk_size=chunk_size, **options)
            assert eager_calls == [1]
            eager_calls.clear()
            slot = jm.bootstrap(slotted, scores, labels, chunk_size=chunk_size, **options)
            assert eager_calls == ([] if padded else [1]), (num_resamples, design)
            for field in jm.BootstrapResult._fields:
                np.testing.assert_allclose(
                    np.asarray(getattr(slot, field)),
                    np.asarray(getattr(public, field)),
                    atol=1e-6,
                    err_msg=f"{field} {num_resamples} {design}",
                )
    expected = [skm.roc_auc_score(labels, scores), skm.average_precision_score(labels, scores), 120]
    np.testing.assert_allclose(np.asarray(slot.estimate), expected, atol=1e-6)


def test_resamples_through_xla_kernels_equal_those_through_host_kernels(rng, monkeypatch):
    """Under `xla_kernels` (the GPU/TPU path: XLA's own sort, scans and scatter) the bootstrap
    draws the same resamples and gets the same values as through the CPU's numpy kernels, for
    plain, stratified and Poisson resampling."""
    from jaxmetrics._src.core import sorting

    scores, labels = binormal(rng, n=300)
    scores = np.round(scores, 1)  # ties
    key = jax.random.key(3)
    runs = {}
    for forced in (False, True):
        host_calls = []

        def counted(values, calls=host_calls, host_rank=sorting._host_rank):
            calls.append(1)
            return host_rank(values)

        monkeypatch.setattr(sorting, "_host_rank", counted)
        with jm.xla_kernels(forced):
            designs = (("multinomial", None), ("multinomial", labels), ("poisson", None))
            for sampling, stratify in designs:
                for metric in (jm.roc_auc, jm.average_precision):
                    result = jm.bootstrap(
                        metric, scores, labels, key=key, num_resamples=40, sampling=sampling,
                        stratify=stratify,
                    )  # fmt: skip
                    runs[forced, sampling, stratify is None, metric] = np.asarray(result.samples)
        # six bootstraps, each with an eager estimate and a resampling loop whose sort is
        # hoisted out of the loop (once per compiled call); none under xla_kernels
        assert len(host_calls) == (0 if forced else 12), (forced, len(host_calls))
        monkeypatch.undo()
    for (forced, *case), samples in runs.items():
        if forced:
            np.testing.assert_allclose(samples, runs[(False, *case)], atol=1e-6, err_msg=str(case))


def test_auc_interval_agrees_with_an_sklearn_resampling_loop(rng):
    scores, labels = binormal(rng, n=400)
    ours = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=1000)
    loop = []
    for _ in range(1000):
        index = rng.integers(0, scores.size, scores.size)
        loop.append(skm.roc_auc_score(labels[index], scores[index]))
    low, high = np.percentile(loop, [2.5, 97.5])
    se = np.std(loop)
    assert float(ours.estimate) == pytest.approx(skm.roc_auc_score(labels, scores), abs=1e-6)
    estimate, low, high, standard_error, samples = ours  # the spec's five fields
    assert samples.shape == (1000,)
    # two independent sets of 1,000 resamples: endpoints agree to a fraction of the SE
    assert float(ours.low) == pytest.approx(low, abs=0.3 * se)
    assert float(ours.high) == pytest.approx(high, abs=0.3 * se)
    assert float(ours.standard_error) == pytest.approx(se, rel=0.1)


@pytest.mark.parametrize("method", ["percentile", "basic", "bca"])
def test_intervals_agree_with_scipy_bootstrap(rng, method):
    values = rng.exponential(size=120).astype(np.float32)  # skewed: BCa differs from percentile
    ours = jm.bootstrap(
        weighted_mean, values, key=jax.random.key(2), num_resamples=4000, method=method
    )
    theirs = stats.bootstrap(
        (values,), np.mean, n_resamples=4000, method=method, random_state=np.random.default_rng(0)
    )
    width = float(theirs.confidence_interval.high - theirs.confidence_interval.low)
    assert float(ours.low) == pytest.approx(theirs.confidence_interval.low, abs=0.06 * width)
    assert float(ours.high) == pytest.approx(theirs.confidence_interval.high, abs=0.06 * width)
    assert float(ours.standard_error) == pytest.approx(theirs.standard_error, rel=0.06)


def test_one_class_resamples_are_dropped_and_counted():
    scores = np.array([0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], np.float32)
    labels = np.array([1, 0, 0, 0, 0, 0, 0])
    result = jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=200)
    undefined = int(result.num_undefined)
    # P(the single positive is never drawn) = (6/7)^7 = 0.34
    assert 40 < undefined < 100
    assert np.isnan(np.asarray(result.samples)).sum() == undefined
    assert np.isfinite(float(result.low)) and np.isfinite(float(result.standard_error))


def test_stratified_bootstrap_never_loses_a_class():
    scores = np.array([0.9, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6], np.float32)
    labels = np.array([1, 0, 0, 0, 0, 0, 0])
    result = jm.bootstrap(
        jm.roc_auc, scores, labels, key=jax.random.key(0), num_resamples=100, stratify=labels
    )
    assert int(result.num_undefined) == 0


def test_model_axis_gives_paired_samples_and_difference(rng):
    scores, labels = binormal(rng, n=500)
    better = (scores + 1.5 * labels).astype(np.float32)
    both = np.stack([better, scores])
    result = jm.bootstrap(jm.roc_auc, both, labels, key=jax.random.key(4), num_resamples=300)
    assert result.samples.shape == (300, 2) and result.low.shape == (2,)
    difference = jm.paired_difference(result)
    aucs = [skm.roc_auc_score(labels, s) for s in both]
    assert float(difference.estimate) == pytest.approx(aucs[0] - aucs[1], abs=1e-6)
    assert 0 < float(difference.low) < float(difference.estimate) < float(difference.high)
    assert float(difference.p_value) < 0.01
    same = jm.bootstrap(
        jm.roc_auc, np.stack([scores, scores]), labels, key=jax.random.key(4), num_resamples=100
    )
    assert float(jm.paired_difference(same).p_value) == 1.0
    with pytest.raises(ValueError, match="no model axis"):
        jm.paired_difference(
            jm.bootstrap(jm.roc_auc, scores, labels, key=jax.random.key(4), num_resamples=10)
        )


def test_bootstrap_bad_arguments(rng):
    scores, labels = binormal(rng, n=20)
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="`method`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, method="studentized")
    with pytest.raises(ValueError, match="`sampling`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, sampling="bayesian")
    with pytest.raises(ValueError, match="`stratify` needs"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, sampling="poisson", stratify=labels)
    with pytest.raises(ValueError, match="`stratify` must have shape"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, stratify=labels[:5])
    with pytest.raises(ValueError, match="`num_resamples`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=1)
    with pytest.raises(TypeError, match="`key`"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=0)
    with pytest.raises(ValueError, match="same number of samples"):
        jm.bootstrap(jm.roc_auc, scores, labels[:10], key=key)


def test_cluster_bootstrap_of_duplicated_rows_equals_the_unduplicated_bootstrap():
    # every row copied k times within its own group: drawing groups is drawing the original
    # rows, so the clustered standard error equals the unduplicated one exactly, while the
    # naive row bootstrap of the copies understates it by about sqrt(k)
    rng = np.random.default_rng(31)
    n, k = 60, 4
    labels = (rng.random(n) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    scores = np.round(rng.normal(size=n) + labels, 1).astype(np.float32)
    copies = np.repeat(scores, k), np.repeat(labels, k)
    patients = np.repeat(np.arange(n) * 7 + 3, k)  # any labels: numbered in sorted order
    key = jax.random.key(8)
    options = dict(key=key, num_resamples=300)
    original = jm.bootstrap(jm.roc_auc, scores, labels, **options)
    clustered = jm.bootstrap(jm.roc_auc, *copies, groups=patients, **options)
    naive = jm.bootstrap(jm.roc_auc, *copies, **options)
    np.testing.assert_allclose(
        np.asarray(clustered.samples), np.asarray(original.samples), rtol=1e-6
    )
    assert float(clustered.standard_error) == pytest.approx(
        float(original.standard_error), rel=1e-5
    )
    ratio = float(original.standard_error) / float(naive.standard_error)
    assert 1.6 < ratio < 2.5  # about sqrt(4) = 2
    # BCa's jackknife leaves out whole groups: the same interval as the unduplicated data's
    bca = dict(options, method="bca", num_resamples=100)
    np.testing.assert_allclose(
        [float(jm.bootstrap(jm.roc_auc, *copies, groups=patients, **bca).low)],
        [float(jm.bootstrap(jm.roc_auc, scores, labels, **bca).low)],
        rtol=1e-5,
    )


def test_groups_are_checked():
    scores, labels = np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="`groups` must have shape"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, groups=[0, 1])
    with pytest.raises(ValueError, match="cannot be combined"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, groups=[0, 0, 1, 1], stratify=labels)
    with pytest.raises(TypeError, match="`groups` must be concrete"):
        jax.jit(lambda g: jm.resample_weights(key, jnp.arange(2), 4, groups=g))(jnp.arange(4))


def calibrated_bins():
    """400 probabilities on four levels, each level's share of positives equal to it: an
    expected calibration error of 0, which every resample exceeds (the ECE is biased up)."""
    probs = np.repeat(np.float32([0.1, 0.3, 0.7, 0.9]), 100)
    labels = np.concatenate([np.arange(100) < 100 * p for p in (0.1, 0.3, 0.7, 0.9)])
    return probs, labels.astype(np.int32)


def bca_oracle(samples, estimate, jackknife, confidence=0.95):
    """BCa from its definition (Efron 1987), numpy and scipy, with linear quantiles."""
    samples = samples[~np.isnan(samples)]
    bias = stats.norm.ppf(
        ((samples < estimate).sum() + (samples == estimate).sum() / 2) / samples.size
    )
    deviations = jackknife.mean() - jackknife
    spread = (deviations**2).sum()  # 0: the acceleration is 0/0, taken as 0 (the documented rule)
    acceleration = (deviations**3).sum() / (6 * spread**1.5) if spread > 0 else 0.0
    z = stats.norm.ppf([(1 - confidence) / 2, (1 + confidence) / 2])
    levels = stats.norm.cdf(bias + (bias + z) / (1 - acceleration * (bias + z)))
    return np.quantile(samples, levels)


def test_bca_on_one_side_of_the_estimate_falls_back_to_percentile_with_a_warning():
    # issue 25: `bootstrap(expected_calibration_error, ..., method="bca")` at n = 400 gave NaN
    probs, labels = calibrated_bins()
    options = dict(key=jax.random.key(0), num_resamples=200, method="bca")
    with pytest.warns(RuntimeWarning, match="every defined resample lies on one side"):
        result = jm.bootstrap(jm.expected_calibration_error, probs, labels, **options)
    samples = np.asarray(result.samples)
    assert (samples > float(result.estimate)).all()  # the case: z0 = Phi^-1(0) = -inf
    np.testing.assert_allclose(
        [result.low, result.high], np.quantile(samples, [0.025, 0.975]), rtol=1e-6
    )
    # per output: a second, miscalibrated model keeps its BCa interval
    shifted = np.stack([probs, np.clip(probs + 0.05, 0, 1)])
    with pytest.warns(RuntimeWarning, match=r"for 1 of 2 outputs \(the first at index \(0,\)\)"):
        both = jm.bootstrap(jm.expected_calibration_error, shifted, labels, **options)
    samples = np.asarray(both.samples)
    np.testing.assert_allclose(
        [both.low[0], both.high[0]], np.quantile(samples[:, 0], [0.025, 0.975]), rtol=1e-6
    )
    left_out = np.ones((400, 400), bool) ^ np.eye(400, dtype=bool)
    jackknife = np.array(
        [float(jm.expected_calibration_error(shifted[1][keep], labels[keep])) for keep in left_out]
    )
    expected = bca_oracle(samples[:, 1], float(both.estimate[1]), jackknife)
    np.testing.assert_allclose([both.low[1], both.high[1]], expected, rtol=1e-4)


def test_bca_with_a_jackknife_that_does_not_vary_takes_acceleration_zero():
    # a perfect AUC: every resample and every left-out value is 1, acceleration 0/0 (was NaN)
    perfect = jm.bootstrap(
        jm.roc_auc, np.float32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6]), np.array([0, 0, 0, 1, 1, 1]),
        key=jax.random.key(0), num_resamples=50, method="bca",
    )  # fmt: skip
    assert (float(perfect.low), float(perfect.high)) == (1.0, 1.0)
    # the largest of values whose maximum appears twice: leaving one out never moves it,
    # resamples that draw neither copy do; BCa with a = 0 against its formula
    values = np.float32([0.5, 3.0, 1.0, 3.0, 2.0, 0.0, 1.5, 2.5])

    def largest(x, *, sample_weight):
        return jnp.max(jnp.where(sample_weight > 0, x, -jnp.inf))

    result = jm.bootstrap(largest, values, key=jax.random.key(1), num_resamples=400, method="bca")
    samples = np.asarray(result.samples)
    assert 0 < (samples < 3.0).mean() < 1  # z0 finite
    expected = bca_oracle(samples, 3.0, np.full(values.size, 3.0))
    np.testing.assert_allclose([result.low, result.high], expected, rtol=1e-6)


def test_bca_says_why_it_is_nan_or_why_it_fell_back_for_an_undefined_estimate():
    scores = np.float32([0.1, 0.2, 0.3, 0.4, 0.5, 0.6])
    options = dict(key=jax.random.key(0), num_resamples=50, method="bca")
    with pytest.warns(RuntimeWarning, match="NaN on every resample"):
        one_class = jm.bootstrap(jm.roc_auc, scores, np.zeros(6, np.int32), **options)
    assert np.isnan(float(one_class.low)) and int(one_class.num_undefined) == 50

    def undefined_on_the_full_data(x, *, sample_weight):
        return jnp.where((sample_weight == 1).all(), jnp.nan, weighted_mean(x, sample_weight))

    with pytest.warns(RuntimeWarning, match="the estimate is NaN"):
        result = jm.bootstrap(undefined_on_the_full_data, scores, **options)
    samples = np.asarray(result.samples)
    np.testing.assert_allclose(
        [result.low, result.high], np.nanquantile(samples, [0.025, 0.975]), rtol=1e-6
    )


def test_bootstrap_of_empty_arrays_says_they_are_empty():
    # issue 25: a ZeroDivisionError before
    with pytest.raises(ValueError, match=r"`arrays\[0\]` is empty: at least one sample.*\(0,\)"):
        jm.bootstrap(jm.roc_auc, np.zeros(0), np.zeros(0, int), key=jax.random.key(0))


def test_missing_group_labels_raise_naming_the_index():
    scores, labels = np.array([0.1, 0.4, 0.35, 0.8]), np.array([0, 0, 1, 1])
    key = jax.random.key(0)
    with pytest.raises(TypeError, match=r"`groups` must hold a group label.*found None at index 0"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, groups=[None] * 4)
    with pytest.raises(TypeError, match=r"found None at index 2"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, groups=["a", "b", None, "a"])
    with pytest.raises(ValueError, match=r"`groups` must hold a group label.*found nan at index 1"):
        jm.bootstrap(jm.roc_auc, scores, labels, key=key, groups=[0.0, np.nan, 1.0, 1.0])
    with pytest.raises(TypeError, match=r"all of one kind; found int, str"):
        jm.resample_weights(key, jnp.arange(2), 4, groups=np.array([1, "a", 2, "b"], object))
