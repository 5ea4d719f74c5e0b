import functools
import math

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np
import pytest

from jaxmetrics._src.losses.partial_auc import partial_auc_loss, two_way_partial_auc_loss
from jaxmetrics._src.losses.ranking import pairwise_auc_loss

SURROGATES = ("logistic", "hinge", "squared_hinge", "sigmoid")
# one of each way to sum the pairs: prefix sums (the hinge family), blocks of rows (the others)
PAIR_SUMS = ("squared_hinge", "logistic")
MARGIN = 0.7  # never a difference of the half-integer test scores: no pair on a hinge's kink


def surrogate_term(surrogate, d, margin=MARGIN):
    return {
        "logistic": lambda: jax.nn.softplus(-d),
        "hinge": lambda: jax.nn.relu(margin - d),
        "squared_hinge": lambda: jax.nn.relu(margin - d) ** 2,
        "sigmoid": lambda: jax.nn.sigmoid(-d),
    }[surrogate]()


def problem(rng, n=60, ties=True, integer_weights=True):
    labels = (rng.random(n) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    logits = (rng.normal(size=n) + labels).astype(np.float32)
    if ties:
        logits = np.round(logits * 2) / 2
    if integer_weights:  # exact totals: the reference's cut-off is the kernel's
        weights = rng.integers(0, 4, n).astype(np.float32)
        weights[:2] = 1.0
    else:
        weights = rng.random(n).astype(np.float32)
    return logits, labels, weights


def brute_shares(scores, weight, fraction, *, top):
    """Each sample's part of its weight among the ceil(fraction * total) weight scoring highest
    (top) or lowest, counted sample by sample: what lies strictly ahead, then its tie group."""
    total = float(weight.sum())
    kept = min(math.ceil(fraction * total - 1e-9), total)
    share = np.zeros(scores.size)
    for i, score in enumerate(scores):
        ahead = weight[scores > score if top else scores < score].sum()
        group = weight[scores == score].sum()
        share[i] = np.clip((kept - ahead) / group, 0.0, 1.0) if group > 0 else 0.0
    return share, kept


def cvar_reference(labels, weights, scores, surrogate, max_fpr, min_tpr=0.0):
    """The pair matrix over the explicitly selected negatives (and positives), as a function of
    the logits with the selection held fixed."""
    negative_share, kept_negative = brute_shares(scores, weights * (1 - labels), max_fpr, top=True)
    positive_share, kept_positive = brute_shares(scores, weights * labels, 1 - min_tpr, top=False)
    row = weights * labels * positive_share
    column = weights * (1 - labels) * negative_share

    def loss(logits):
        pairs = surrogate_term(surrogate, logits[:, None] - logits[None, :])
        return (row[:, None] * column[None, :] * pairs).sum() / (kept_positive * kept_negative)

    return loss, negative_share


def kl_reference(labels, weights, surrogate, temperature, two_way):
    row = weights * labels / (weights * labels).sum()
    column = weights * (1 - labels) / (weights * (1 - labels)).sum()

    def loss(logits):
        pairs = surrogate_term(surrogate, logits[:, None] - logits[None, :])
        per_positive = temperature * jax.nn.logsumexp(pairs / temperature, axis=1, b=column)
        if two_way:
            return temperature * jax.nn.logsumexp(per_positive / temperature, b=row)
        return (row * per_positive).sum()

    return loss


TEMPERATURE = 0.5
FUNCTIONS = {
    "one_way": lambda s, y, **kw: partial_auc_loss(s, y, max_fpr=0.3, **kw),
    "two_way": lambda s, y, **kw: two_way_partial_auc_loss(s, y, min_tpr=0.4, max_fpr=0.3, **kw),
}
# every function, method and surrogate, as loss(logits, labels, weights)
LOSSES = {
    (kind, method, surrogate): lambda s, y, w, kind=kind, method=method, surrogate=surrogate: (
        FUNCTIONS[kind](
            s,
            y,
            surrogate=surrogate,
            margin=MARGIN,
            method=method,
            temperature=TEMPERATURE,
            sample_weight=w,
        )
    )
    for kind in FUNCTIONS
    for method in ("cvar", "kl")
    for surrogate in SURROGATES
}


@jax.jit
def every_value_and_grad(logits, labels, weights):
    """One compiled program for every loss, shared by the tests at n = 60 (compiling is the slow
    part of these tests)."""
    return {key: jax.value_and_grad(loss)(logits, labels, weights) for key, loss in LOSSES.items()}


def reference(key, logits, labels, weights):
    kind, method, surrogate = key
    min_tpr = 0.4 if kind == "two_way" else 0.0
    if method == "cvar":
        return cvar_reference(labels, weights, logits, surrogate, max_fpr=0.3, min_tpr=min_tpr)[0]
    return kl_reference(labels, weights, surrogate, TEMPERATURE, two_way=kind == "two_way")


@pytest.mark.parametrize("method", ["cvar", "kl"])
def test_values_and_gradients_equal_the_pair_matrix_references(rng, method):
    logits, labels, weights = problem(rng)
    # the data put a tie group across the cut-off: its members keep a part of their weight
    negative_share, _ = brute_shares(logits, weights * (1 - labels), 0.3, top=True)
    assert ((negative_share > 0) & (negative_share < 1) & (labels == 0)).any()
    keys = [key for key in LOSSES if key[1] == method]
    references = [reference(key, logits, labels, weights) for key in keys]
    expected = jax.jit(lambda s: [jax.value_and_grad(f)(s) for f in references])(logits)
    got = every_value_and_grad(logits, labels, weights)
    for key, (expected_value, expected_grad) in zip(keys, expected, strict=True):
        value, grad = got[key]
        assert float(value) == pytest.approx(float(expected_value), rel=2e-5, abs=1e-6), key
        scale = float(jnp.abs(expected_grad).max())
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-5 * scale, err_msg=key)


def test_zero_weight_samples_change_neither_value_nor_gradient(rng):
    logits, labels, weights = problem(rng)
    padding = weights == 0
    assert padding.sum() >= 10
    # other scores and labels where the weight is 0, some tied with weighted samples
    other_logits = np.where(padding, rng.normal(size=logits.size).astype(np.float32) * 3, logits)
    other_logits[np.flatnonzero(padding)[:4]] = logits[~padding][:4]
    other_labels = np.where(padding, 1 - labels, labels)
    got = every_value_and_grad(logits, labels, weights)
    padded = every_value_and_grad(other_logits, other_labels, weights)
    for key, (value, grad) in got.items():
        padded_value, padded_grad = padded[key]
        assert float(padded_value) == pytest.approx(float(value), rel=1e-6), key
        np.testing.assert_allclose(padded_grad[~padding], grad[~padding], rtol=1e-5, atol=1e-7)
        assert (padded_grad[padding] == 0).all() and (grad[padding] == 0).all(), key


def test_extreme_logits_and_one_class_batches_are_finite(rng):
    logits = rng.choice(np.array([1e4, -1e4, 3e3, -2e3, 0.0], np.float32), 60)
    weights = np.ones(60, np.float32)
    for labels in (rng.integers(0, 2, 60), np.ones(60, np.int32), np.zeros(60, np.int32)):
        one_class = labels.min() == labels.max()
        for key, (value, grad) in every_value_and_grad(logits, labels, weights).items():
            assert np.isfinite(float(value)) and np.isfinite(grad).all(), key
            if one_class:  # no pairs: the loss is 0 with zero gradient
                assert float(value) == 0 and (grad == 0).all(), key


def test_full_band_is_pairwise_auc_loss_and_min_tpr_zero_is_one_way(rng):
    logits, labels, weights = problem(rng, integer_weights=False)
    options = {"margin": MARGIN, "sample_weight": weights}

    def values(s):
        return [
            [
                pairwise_auc_loss(s, labels, surrogate=surrogate, **options),
                partial_auc_loss(s, labels, max_fpr=1.0, surrogate=surrogate, **options),
            ]
            for surrogate in SURROGATES
        ] + [
            two_way_partial_auc_loss(s, labels, min_tpr=0.0, max_fpr=1.0, **options),
            partial_auc_loss(s, labels, max_fpr=0.3, **options),
            two_way_partial_auc_loss(s, labels, min_tpr=0.0, max_fpr=0.3, **options),
        ]

    *full_bands, two_way, one_way_band, two_way_band = jax.jit(values)(logits)
    for surrogate, (pairwise, one_way) in zip(SURROGATES, full_bands, strict=True):
        assert float(one_way) == pytest.approx(float(pairwise), rel=2e-5), surrogate
    assert float(two_way) == pytest.approx(float(full_bands[2][0]), rel=2e-5)  # squared hinge
    assert float(two_way_band) == pytest.approx(float(one_way_band), rel=2e-5)


def test_cvar_is_pairwise_auc_loss_on_the_top_negatives_and_bottom_positives(rng):
    logits, labels, _ = problem(rng, n=80, ties=False)
    labels = np.zeros(80, np.int32)
    labels[rng.permutation(80)[:30]] = 1
    negatives = np.flatnonzero(labels == 0)
    positives = np.flatnonzero(labels == 1)
    # 0.3 * 50 negatives is 15.000001 in float32 (and 15.000000000000002 in float64): keep 15
    top = negatives[np.argsort(-logits[negatives])[:15]]
    bottom = positives[np.argsort(logits[positives])[: math.ceil(0.5 * positives.size)]]
    one_way, two_way = np.concatenate([positives, top]), np.concatenate([bottom, top])

    def values(s):
        return [
            [
                partial_auc_loss(s, labels, max_fpr=0.3, surrogate=surrogate, margin=MARGIN),
                pairwise_auc_loss(s[one_way], labels[one_way], surrogate=surrogate, margin=MARGIN),
                two_way_partial_auc_loss(
                    s, labels, min_tpr=0.5, max_fpr=0.3, surrogate=surrogate, margin=MARGIN
                ),
                pairwise_auc_loss(s[two_way], labels[two_way], surrogate=surrogate, margin=MARGIN),
            ]
            for surrogate in PAIR_SUMS
        ]

    for surrogate, pair in zip(PAIR_SUMS, jax.jit(values)(logits), strict=True):
        one_way_loss, one_way_expected, two_way_loss, two_way_expected = map(float, pair)
        assert one_way_loss == pytest.approx(one_way_expected, rel=2e-5), surrogate
        assert two_way_loss == pytest.approx(two_way_expected, rel=2e-5), surrogate


def test_kl_temperature_limits(rng):
    logits, labels, _ = problem(rng, n=40, ties=False)
    options = {"surrogate": "squared_hinge", "method": "kl", "max_fpr": 0.5}

    def values(s):
        return (
            partial_auc_loss(s, labels, temperature=1e3, **options),
            pairwise_auc_loss(s, labels, surrogate="squared_hinge"),
            partial_auc_loss(s, labels, temperature=1e-4, **options),
            two_way_partial_auc_loss(s, labels, min_tpr=0.5, temperature=1e-4, **options),
        )

    hot, pairwise, cold, cold_two_way = map(float, jax.jit(values)(logits))
    assert hot == pytest.approx(pairwise, rel=1e-2)  # tau -> inf: the mean pair loss
    pairs = np.asarray(surrogate_term("squared_hinge", logits[:, None] - logits[None, :], 1.0))
    pairs = pairs[labels == 1][:, labels == 0]
    assert cold == pytest.approx(pairs.max(axis=1).mean(), rel=1e-3)  # the hardest negative
    assert cold_two_way == pytest.approx(pairs.max(), rel=1e-3)  # the hardest pair


def array_sizes(jaxpr):
    """Sizes of every array a jaxpr makes, its sub-jaxprs included."""
    for eqn in jaxpr.eqns:
        for var in eqn.outvars:
            yield int(np.prod(var.aval.shape))
        for param in eqn.params.values():
            for sub in param if isinstance(param, tuple | list) else (param,):
                if isinstance(sub, jax.extend.core.ClosedJaxpr):
                    yield from array_sizes(sub.jaxpr)
                elif isinstance(sub, jax.extend.core.Jaxpr):
                    yield from array_sizes(sub)


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_hinge_cvar_builds_no_pair_array(rng, surrogate):
    logits, labels, weights = problem(rng, n=400)

    def loss(s):
        return two_way_partial_auc_loss(
            s, labels, min_tpr=0.2, max_fpr=0.3, surrogate=surrogate, sample_weight=weights
        )

    jaxpr = jax.make_jaxpr(jax.value_and_grad(loss))(jnp.asarray(logits)).jaxpr
    # the largest arrays are the residuals of the suffix moments' doubling scan, at most 3 x n
    # for each of its ceil(log2 n) levels: far below the n+ x n- pairs
    n, levels = logits.size, (logits.size - 1).bit_length()
    assert (
        max(array_sizes(jaxpr)) <= 3 * (n + 1) * levels < (labels == 1).sum() * (labels == 0).sum()
    )


# one of each function and method, with each way to sum the pairs
REPRESENTATIVES = [
    LOSSES["one_way", "cvar", "logistic"],
    LOSSES["two_way", "cvar", "squared_hinge"],
    LOSSES["one_way", "kl", "squared_hinge"],
    LOSSES["two_way", "kl", "logistic"],
]


def test_jit_vmap_batch_axes_and_bad_rows(rng):
    logits, labels, weights = problem(rng)
    bad = logits.copy()
    bad[5] = np.nan
    batch = np.stack([logits, logits[::-1] * 2, bad])

    def values(s):
        return jnp.stack([loss(s, labels, weights) for loss in REPRESENTATIVES])

    jitted = jax.jit(values)(batch)
    np.testing.assert_allclose(jax.jit(jax.vmap(values, out_axes=1))(batch), jitted, rtol=1e-5)
    assert jax.eval_shape(values, batch[None]).shape == (4, 1, 3)
    assert np.isfinite(jitted[:, :2]).all() and np.isnan(jitted[:, 2]).all()  # the bad row
    expected = every_value_and_grad(logits, labels, weights)
    assert float(jitted[0, 0]) == pytest.approx(float(expected["one_way", "cvar", "logistic"][0]))
    with pytest.raises(ValueError, match=r"`logits` must be finite; found nan at index \(2, 5\)"):
        REPRESENTATIVES[0](batch, labels, weights)
    eager = REPRESENTATIVES[0](batch[:2], labels, weights)
    np.testing.assert_allclose(eager, jitted[0, :2], rtol=1e-6)


def test_float64_under_x64(rng, x64):
    logits, labels, weights = problem(rng, n=20)
    got = jax.jit(lambda s: [loss(s, labels, weights) for loss in REPRESENTATIVES])(logits)
    assert all(value.dtype == np.float64 for value in got)


def test_options_are_checked(rng):
    logits, labels, _ = problem(rng, n=10)
    for call, message in (
        (lambda: partial_auc_loss(logits, labels, max_fpr=0.0), r"`max_fpr` must be in \(0, 1\]"),
        (lambda: partial_auc_loss(logits, labels, max_fpr=1.5), "`max_fpr`"),
        (lambda: partial_auc_loss(logits, labels, max_fpr=float("nan")), "`max_fpr`"),
        (lambda: partial_auc_loss(logits, labels, max_fpr=0.5, method="dro"), "`method`"),
        (lambda: partial_auc_loss(logits, labels, max_fpr=0.5, surrogate="exp"), "`surrogate`"),
        (lambda: partial_auc_loss(logits, labels, max_fpr=0.5, temperature=0.0), "`temperature`"),
        (
            lambda: two_way_partial_auc_loss(logits, labels, min_tpr=1.0, max_fpr=0.5),
            r"`min_tpr` must be in \[0, 1\)",
        ),
        (lambda: two_way_partial_auc_loss(logits, labels, min_tpr=-0.1, max_fpr=0.5), "`min_tpr`"),
        (lambda: two_way_partial_auc_loss(logits, labels, min_tpr=0.5, max_fpr=2), "`max_fpr`"),
    ):
        with pytest.raises(ValueError, match=message):
            call()
    with pytest.raises(TypeError, match="`max_fpr` must be a number"):
        partial_auc_loss(logits, labels, max_fpr="small")


def hinge_cvar_loop(logits, labels, weights, power, max_fpr, min_tpr=0.0):
    """Value and gradient of the "cvar" hinge loss, pair by pair in float64 over the explicitly
    selected samples (the selection held fixed)."""
    negative_share, kept_negative = brute_shares(logits, weights * (1 - labels), max_fpr, top=True)
    positive_share, kept_positive = brute_shares(logits, weights * labels, 1 - min_tpr, top=False)
    row, column = weights * labels * positive_share, weights * (1 - labels) * negative_share
    s = logits.astype(np.float64)
    total, grad = 0.0, np.zeros(s.size)
    for i in np.flatnonzero(row > 0):
        for j in np.flatnonzero(column > 0):
            excess = MARGIN - (s[i] - s[j])
            if excess > 0:
                total += row[i] * column[j] * excess**power
                slope = row[i] * column[j] * power * excess ** (power - 1)
                grad[i] -= slope
                grad[j] += slope
    scale = kept_positive * kept_negative
    return total / scale, grad / scale


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_hinge_cvar_is_shift_invariant_and_equals_the_pair_loop(rng, surrogate):
    # the prefix sums of s and s^2 cancelled catastrophically: at logits + 1e4 the squared
    # hinge loss of 2.30 came out 32.6
    logits, labels, weights = problem(rng)
    shifted = logits + np.float32(1e4)
    assert (shifted - np.float32(1e4) == logits).all()  # the same problem, exactly
    power = 1 if surrogate == "hinge" else 2
    one_way = functools.partial(LOSSES["one_way", "cvar", surrogate], y=labels, w=weights)
    two_way = functools.partial(LOSSES["two_way", "cvar", surrogate], y=labels, w=weights)
    got = jax.jit(jax.vmap(lambda s: [jax.value_and_grad(f)(s) for f in (one_way, two_way)]))(
        np.stack([logits, shifted])
    )
    for (values, grads), min_tpr in zip(got, (0.0, 0.4), strict=True):
        expected, expected_grad = hinge_cvar_loop(logits, labels, weights, power, 0.3, min_tpr)
        for value, grad in zip(values, grads, strict=True):
            assert float(value) == pytest.approx(expected, rel=2e-5), min_tpr
            scale = np.abs(expected_grad).max()
            np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-6 * scale)


def test_every_loss_at_huge_ordered_logits_is_zero_with_zero_gradient(rng):
    # every pair ordered far beyond the margin: no loss, no gradient; the squared hinges gave
    # NaN or non-zero gradients at 1e18-1e20 (a KL form also a loss of 1e-7)
    _, labels, weights = problem(rng)
    spread = 1 + 2 * rng.random(labels.size)  # negatives 2e20 apart: their own pairs overflow
    for scale in (1e18, 1e19, 1e20):
        logits = (np.where(labels == 1, spread, -spread) * scale).astype(np.float32)
        for key, (value, grad) in every_value_and_grad(logits, labels, weights).items():
            assert float(value) == 0 and (np.asarray(grad) == 0).all(), (key, scale)
    # past 256 samples the pair sums run in blocks, the last one padded
    n = 260
    labels = (np.arange(n) % 3 == 0).astype(np.int32)
    logits = np.where(labels == 1, 1e20, 2e19) * (1 + rng.random(n))
    value, grad = jax.jit(jax.value_and_grad(LOSSES["one_way", "kl", "squared_hinge"]))(
        logits.astype(np.float32), labels, np.ones(n, np.float32)
    )
    assert float(value) == 0 and (np.asarray(grad) == 0).all()


def test_every_loss_is_the_same_for_huge_weights(rng):
    """Weights times 2^100: the CVaR forms' pair weight (kept positives times kept negatives)
    overflowed float32 and the loss was NaN. The kept shares of a class are whole numbers here
    (0.3 of 30 negatives, 0.6 of 10 positives), so scaling the weights keeps the same samples
    and every loss and gradient is the same."""
    labels = np.repeat([1, 0], [20, 40]).astype(np.int32)
    weights = np.concatenate([np.repeat([1, 0], 10), np.repeat([1, 0], [30, 10])])
    order = rng.permutation(60)
    labels, weights = labels[order], weights[order].astype(np.float32)
    logits = (np.round(rng.normal(size=60) * 2) / 2 + labels).astype(np.float32)
    got = every_value_and_grad(logits, labels, weights)
    huge = every_value_and_grad(logits, labels, weights * np.float32(2.0**100))
    for key, (value, grad) in got.items():
        assert float(huge[key][0]) == pytest.approx(float(value), rel=1e-5), key
        np.testing.assert_allclose(huge[key][1], grad, rtol=1e-4, atol=1e-7, err_msg=str(key))


def kl_loop(logits, labels, temperature, two_way):
    """The squared-hinge KL loss in float64, as tau log mean exp(l / tau) written with log1p and
    expm1 (at tau = 1e12 the values l / tau are 1e-12, below float64's relative precision in
    a plain mean of exponentials), over the pair matrix of explicit loops."""
    s = logits.astype(np.float64)
    pairs = np.array(
        [
            [max(0.0, 1.0 - (s[i] - s[j])) ** 2 for j in np.flatnonzero(labels == 0)]
            for i in np.flatnonzero(labels == 1)
        ]
    )

    def tau_log_mean_exp(values):
        top = values.max()
        return top + temperature * np.log1p(np.mean(np.expm1((values - top) / temperature)))

    per_positive = np.array([tau_log_mean_exp(row) for row in pairs])
    return tau_log_mean_exp(per_positive) if two_way else per_positive.mean()


def test_kl_losses_at_high_temperatures_and_an_infinite_one():
    # at tau = 1e8 the one-way loss was 1.125 (the tau -> 0 value, the hardest negatives) for
    # 0.375 (the mean pair loss): log(mean exp(l / tau)) rounded to the largest l / tau
    logits = np.array([2.0, 0.5, -1.0, 1.0, -2.0, 0.25, -0.5], np.float32)
    labels = np.array([1, 1, 0, 0, 0, 1, 0])
    options = {"surrogate": "squared_hinge", "method": "kl", "max_fpr": 0.5}

    @jax.jit
    def values(temperature):
        return (
            partial_auc_loss(logits, labels, temperature=temperature, **options),
            two_way_partial_auc_loss(
                logits, labels, min_tpr=0.5, temperature=temperature, **options
            ),
        )

    for temperature in (1e4, 1e8, 1e12):
        one_way, two_way = map(float, values(temperature))
        assert one_way == pytest.approx(kl_loop(logits, labels, temperature, False), rel=1e-5)
        assert two_way == pytest.approx(kl_loop(logits, labels, temperature, True), rel=1e-5)
    assert all(math.isnan(float(value)) for value in values(np.inf))
    with pytest.raises(ValueError, match=r"`temperature` must be > 0 and finite; got inf"):
        partial_auc_loss(logits, labels, temperature=np.inf, **options)
