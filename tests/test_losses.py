import inspect
import logging
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxmetrics as jm
import jaxmetrics.losses as jl
from jaxmetrics._src.losses import pair_sums

SURROGATE_TERMS = {
    "logistic": lambda d, m: np.logaddexp(0.0, -d),
    "hinge": lambda d, m: np.maximum(0.0, m - d),
    "squared_hinge": lambda d, m: np.maximum(0.0, m - d) ** 2,
    "sigmoid": lambda d, m: 1 / (1 + np.exp(d)),
}


def first_order_gradients(f, x, tolerance):
    """Reverse-mode gradients of `f` at `x` against finite differences."""
    check_grads(f, (x,), order=1, modes=["rev"], eps=1e-3, atol=tolerance, rtol=tolerance)


def pair_matrix_loss(logits, labels, weights, surrogate, margin):
    """Reference: the n+ x n- pair matrix, in float64."""
    s = logits.astype(np.float64)
    w = np.ones_like(s) if weights is None else weights.astype(np.float64)
    pos, neg = labels == 1, labels == 0
    d = s[pos][:, None] - s[neg][None, :]
    pair_weight = w[pos][:, None] * w[neg][None, :]
    return (pair_weight * SURROGATE_TERMS[surrogate](d, margin)).sum() / pair_weight.sum()


def problem(rng, n=60, ties=False):
    labels = (rng.random(n) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    logits = (rng.normal(size=n) + labels).astype(np.float32)
    if ties:
        logits = np.round(logits * 2) / 2
    return logits, labels


@pytest.mark.parametrize("surrogate", sorted(SURROGATE_TERMS))
@pytest.mark.parametrize("ties", [False, True])
@pytest.mark.parametrize("weighted", [False, True])
def test_pairwise_auc_loss_equals_the_pair_matrix(rng, surrogate, ties, weighted):
    logits, labels = problem(rng, ties=ties)
    weights = rng.random(logits.size).astype(np.float32) if weighted else None
    expected = pair_matrix_loss(logits, labels, weights, surrogate, 0.7)
    got = jl.pairwise_auc_loss(
        logits, labels, surrogate=surrogate, margin=0.7, sample_weight=weights
    )
    assert float(got) == pytest.approx(expected, rel=2e-5)


@pytest.mark.parametrize("surrogate", sorted(SURROGATE_TERMS))
def test_pairwise_auc_loss_gradients(rng, surrogate):
    logits, labels = problem(rng, n=20)
    f = lambda s: jl.pairwise_auc_loss(s, labels, surrogate=surrogate)  # noqa: E731
    first_order_gradients(f, jnp.asarray(logits, jnp.float32), tolerance=2e-2)

    # the O(n log n) hinge gradient equals the pair-matrix gradient (autodiff of the matrix form)
    def matrix_form(s):
        d = s[:, None] - s[None, :]
        pair = (labels[:, None] == 1) & (labels[None, :] == 0)
        term = {
            "logistic": jax.nn.softplus(-d),
            "hinge": jax.nn.relu(1 - d),
            "squared_hinge": jax.nn.relu(1 - d) ** 2,
            "sigmoid": jax.nn.sigmoid(-d),
        }[surrogate]
        return (term * pair).sum() / pair.sum()

    np.testing.assert_allclose(
        jax.grad(f)(jnp.asarray(logits)), jax.grad(matrix_form)(jnp.asarray(logits)), atol=1e-6
    )


def test_sigmoid_pairwise_loss_is_one_minus_auc_in_the_limit(rng):
    logits, labels = problem(rng, n=80)
    sharp = jl.pairwise_auc_loss(logits * 1e7, labels, surrogate="sigmoid")
    assert float(sharp) == pytest.approx(1 - float(jm.roc_auc(logits, labels)), abs=1e-6)


def test_soft_counts_and_f_beta_reach_the_hard_metric(rng):
    logits, labels = problem(rng, n=80)
    hard = jm.confusion_counts(logits, labels, 0.3)
    soft = jl.soft_counts(logits, labels, temperature=1e-5, threshold=0.3)
    np.testing.assert_allclose([float(c) for c in soft], [int(c) for c in hard], atol=1e-3)
    assert float(
        jl.soft_f_beta_loss(logits, labels, beta=2.0, temperature=1e-5, threshold=0.3)
    ) == pytest.approx(1 - float(jm.f_beta(hard, beta=2.0)), abs=1e-5)
    assert float(jl.soft_precision(logits, labels, temperature=1e-5, threshold=0.3)) == (
        pytest.approx(float(jm.precision(hard)), abs=1e-5)
    )
    assert float(jl.soft_recall(logits, labels, temperature=1e-5, threshold=0.3)) == (
        pytest.approx(float(jm.recall(hard)), abs=1e-5)
    )


def test_soft_f_beta_gradients(rng):
    logits, labels = problem(rng, n=30)
    first_order_gradients(
        lambda s: jl.soft_f_beta_loss(s, labels, beta=2.0), jnp.asarray(logits), tolerance=1e-2
    )


def auc_m_reference(p, y, margin):
    pos, neg = p[y == 1], p[y == 0]
    return pos.var() + neg.var() + max(0.0, margin - (pos.mean() - neg.mean())) ** 2


def test_auc_margin_loss_closed_form_and_min_max_objective(rng):
    logits, labels = problem(rng, n=50)
    probs = jax.nn.sigmoid(logits)
    expected = auc_m_reference(np.asarray(probs, np.float64), labels, 1.0)
    assert float(jl.auc_margin_loss(probs, labels)) == pytest.approx(expected, rel=1e-5)
    # the min-max objective at its saddle point equals the closed form
    p = np.asarray(probs, np.float64)
    a, b = p[labels == 1].mean(), p[labels == 0].mean()
    alpha = max(0.0, 1.0 - (a - b))
    state = jl.AucMarginState(jnp.float32(a), jnp.float32(b), jnp.float32(alpha))
    assert float(jl.auc_margin_objective(probs, labels, state)) == pytest.approx(expected, rel=1e-5)
    # and alpha maximises it: its gradient in alpha vanishes there
    grad_alpha = jax.grad(lambda s: jl.auc_margin_objective(probs, labels, s))(state).alpha
    assert abs(float(grad_alpha)) < 1e-5
    first_order_gradients(lambda q: jl.auc_margin_loss(q, labels), probs, tolerance=1e-2)


def smooth_ap_reference(s, y, tau):
    s = s.astype(np.float64)
    total = 0.0
    for i in np.flatnonzero(y == 1):
        sig = 1 / (1 + np.exp(-(s - s[i]) / tau))
        sig[i] = 0.0
        total += (1 + (sig * (y == 1)).sum()) / (1 + sig.sum())
    return 1 - total / (y == 1).sum()


def test_smooth_ap_against_reference_and_its_limit(rng):
    logits, labels = problem(rng, n=40)
    expected = smooth_ap_reference(logits, labels, 0.5)
    assert float(jl.smooth_ap_loss(logits, labels, temperature=0.5)) == pytest.approx(
        expected, rel=1e-5
    )
    sharp = jl.smooth_ap_loss(logits, labels, temperature=1e-6)
    assert float(sharp) == pytest.approx(1 - float(jm.average_precision(logits, labels)), abs=1e-5)
    first_order_gradients(
        lambda s: jl.smooth_ap_loss(s, labels, temperature=0.5), jnp.asarray(logits), tolerance=1e-2
    )


def test_recall_at_precision_objective(rng):
    logits, labels = problem(rng, n=40)
    lam = 0.7
    s = logits.astype(np.float64)
    pos, neg = labels == 1, labels == 0
    l_pos = np.maximum(0, 1 - s[pos]).sum()
    l_neg = np.maximum(0, 1 + s[neg]).sum()
    expected = ((1 + lam) * l_pos + lam * 0.8 / 0.2 * l_neg - lam * pos.sum()) / pos.sum()
    got = jl.recall_at_precision_objective(logits, labels, lam, min_precision=0.8)
    assert float(got) == pytest.approx(expected, rel=1e-5)
    with pytest.raises(ValueError, match="`min_precision`"):
        jl.recall_at_precision_objective(logits, labels, lam, min_precision=1.0)


LOSSES = {
    "soft_f1": lambda s, y, **kw: jl.soft_f_beta_loss(s, y, **kw),
    "pairwise_logistic": lambda s, y, **kw: jl.pairwise_auc_loss(s, y, **kw),
    "pairwise_squared_hinge": lambda s, y, **kw: jl.pairwise_auc_loss(
        s, y, surrogate="squared_hinge", **kw
    ),
    "auc_m": lambda s, y, **kw: jl.auc_margin_loss(jax.nn.sigmoid(s), y, **kw),
    "smooth_ap": lambda s, y, **kw: jl.smooth_ap_loss(s, y, temperature=0.1, **kw),
    "recall_at_precision": lambda s, y, **kw: jl.recall_at_precision_objective(
        s, y, 0.5, min_precision=0.6, **kw
    ),
}


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_finite_gradients_at_extreme_logits_and_one_class_batches(name):
    loss = LOSSES[name]
    logits = jnp.array([1e4, -1e4, 3e3, -2e3, 0.0], jnp.float32)
    for labels in ([1, 0, 0, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]):
        labels = jnp.array(labels)
        value, grad = jax.value_and_grad(loss)(logits, labels)
        assert np.isfinite(float(value)), (name, labels)
        assert np.isfinite(np.asarray(grad)).all(), (name, labels)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_padding_by_zero_weights_is_exact_and_jit_vmap_agree(rng, name):
    loss = LOSSES[name]
    logits, labels = problem(rng, n=30)
    padded_logits = np.concatenate([logits, rng.normal(size=10).astype(np.float32)])
    padded_labels = np.concatenate([labels, rng.integers(0, 2, 10)])
    mask = np.concatenate([np.ones(30), np.zeros(10)]).astype(np.float32)
    expected = float(loss(logits, labels))
    assert float(loss(padded_logits, padded_labels, sample_weight=mask)) == pytest.approx(
        expected, rel=1e-5, abs=1e-6
    )
    batch = np.stack([logits, logits[::-1]])
    mapped = jax.vmap(lambda s: loss(s, labels))(batch)
    jitted = jax.jit(lambda s: loss(s, labels))(batch)
    assert float(mapped[0]) == pytest.approx(expected, rel=1e-5, abs=1e-6)
    np.testing.assert_allclose(mapped, jitted, rtol=1e-5, atol=1e-6)


def test_loss_option_errors(rng):
    logits, labels = problem(rng)
    with pytest.raises(ValueError, match="`surrogate`"):
        jl.pairwise_auc_loss(logits, labels, surrogate="exponential")
    with pytest.raises(ValueError, match="`temperature`"):
        jl.soft_counts(logits, labels, temperature=0.0)
    assert not math.isnan(float(jl.pairwise_auc_loss(logits, np.zeros_like(labels))))


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_bad_values_raise_eagerly_and_mark_their_row_under_jit(rng, name):
    loss = LOSSES[name]
    logits, labels = problem(rng, n=20)
    argument = "probs" if name == "auc_m" else "logits"
    bad_logits = logits.copy()
    bad_logits[5] = np.nan
    with pytest.raises(ValueError, match=rf"`{argument}` must be finite; found nan at index 5"):
        loss(bad_logits, labels)
    bad_labels = labels.copy()
    bad_labels[3] = 2
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*index 3"):
        loss(logits, bad_labels)
    weights = np.ones(20, np.float32)
    weights[4] = -1.0
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative.*index 4"):
        loss(logits, labels, sample_weight=weights)
    both = np.stack([logits, bad_logits])
    jitted = jax.jit(lambda s: loss(s, labels))(both)
    assert float(jitted[0]) == pytest.approx(float(loss(logits, labels)), rel=1e-5, abs=1e-6)
    assert math.isnan(float(jitted[1]))
    mapped = jax.vmap(lambda y: loss(logits, y))(np.stack([labels, bad_labels]))
    assert float(mapped[0]) == pytest.approx(float(loss(logits, labels)), rel=1e-5, abs=1e-6)
    assert math.isnan(float(mapped[1]))


def test_soft_counts_of_a_bad_row_are_nan_and_options_are_checked(rng):
    logits, labels = problem(rng, n=20)
    bad = logits.copy()
    bad[2] = np.inf
    counts = jax.jit(jl.soft_counts)(np.stack([logits, bad]), labels)
    assert all(np.isfinite(float(c[0])) and np.isnan(float(c[1])) for c in counts)
    assert jl.soft_counts(logits[None], labels).tp.shape == (1,)
    with pytest.raises(ValueError, match="`temperature`"):
        jl.smooth_ap_loss(logits, labels, temperature=float("nan"))
    with pytest.raises(ValueError, match="`min_precision` must be in"):
        jl.recall_at_precision_objective(logits, labels, 0.5, min_precision=1.5)


def test_losses_are_float64_under_x64(rng, x64):
    logits, labels = problem(rng, n=20)
    for name, loss in LOSSES.items():
        assert loss(logits.astype(np.float64), labels).dtype == np.float64, name


@pytest.mark.parametrize("loss", ["auc_margin_loss", "auc_margin_objective"])
def test_auc_margin_errors_name_probs(loss):
    state = jl.AucMarginState(jnp.float32(0.5), jnp.float32(0.5), jnp.float32(0.0))
    call = {
        "auc_margin_loss": lambda p, y: jl.auc_margin_loss(p, y),
        "auc_margin_objective": lambda p, y: jl.auc_margin_objective(p, y, state),
    }[loss]
    labels = np.array([1, 0, 1])
    three_rows = np.stack([labels] * 3)
    for probs, labels_given, message in (
        ([0.9, np.nan, 0.2], labels, r"`probs` must be finite; found nan at index 1"),
        ([0.9, 0.1], labels, r"`labels` must have the same number of samples .* as `probs`"),
        (np.zeros((2, 2, 3)), three_rows, r"batch axes .* `probs` \(2, 2, 3\)"),
        (0.5, labels, r"`probs` must have at least 1 dimension"),
        (np.zeros(0), np.zeros(0, np.int32), r"`probs` is empty"),
    ):
        with pytest.raises(ValueError, match=message) as raised:
            call(np.asarray(probs), labels_given)
        assert "logits" not in str(raised.value)
    with pytest.raises(TypeError, match=r"`probs` must hold real numbers"):
        call(np.array(["a", "b", "c"]), labels)


def test_soft_rates_take_the_options_of_soft_counts(rng):
    logits, labels = problem(rng, n=20)
    weights = rng.random(20).astype(np.float32)
    options = {"temperature": 0.5, "threshold": 0.2, "sample_weight": weights}
    counts = jl.soft_counts(logits, labels, **options)
    assert float(jl.soft_precision(logits, labels, **options)) == pytest.approx(
        float(jm.precision(counts))
    )
    assert float(jl.soft_recall(logits, labels, **options)) == pytest.approx(
        float(jm.recall(counts))
    )
    with pytest.raises(TypeError, match="beta"):
        jl.soft_precision(logits, labels, beta=2.0)


def test_surrogate_option_lists_the_choices(rng):
    logits, labels = problem(rng, n=10)
    with pytest.raises(
        ValueError,
        match=r"`surrogate` must be one of \('logistic', 'hinge', 'squared_hinge', 'sigmoid'\); "
        r"got 'exponential'",
    ):
        jl.pairwise_auc_loss(logits, labels, surrogate="exponential")


def hinge_pair_loop(logits, labels, weights, margin, power):
    """Value and gradient of the weighted mean pair hinge, pair by pair in float64."""
    s, w = logits.astype(np.float64), weights.astype(np.float64)
    total = pair_weight = 0.0
    grad = np.zeros(s.size)
    for i in np.flatnonzero(labels == 1):
        for j in np.flatnonzero(labels == 0):
            weight, excess = w[i] * w[j], margin - (s[i] - s[j])
            pair_weight += weight
            if excess > 0:
                total += weight * excess**power
                slope = weight * power * excess ** (power - 1)
                grad[i] -= slope
                grad[j] += slope
    return total / pair_weight, grad / pair_weight


def dyadic_problem(rng, n=40):
    """Logits on a grid of 1/64 with ties, exact in float32 after adding 1e4."""
    labels = (rng.random(n) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    logits = (np.round((rng.normal(size=n) + labels) * 8) / 8).astype(np.float32)
    weights = rng.integers(1, 4, n).astype(np.float32)
    return logits, labels, weights


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_hinge_pair_losses_are_shift_invariant_and_equal_the_pair_loop(rng, surrogate):
    # the prefix sums of s and s^2 cancelled catastrophically: at logits + 1e4 the squared
    # hinge came out 10 times too large, or negative
    logits, labels, weights = dyadic_problem(rng)
    shifted = logits + np.float32(1e4)
    assert (shifted - np.float32(1e4) == logits).all()  # the same problem, exactly
    expected, expected_grad = hinge_pair_loop(
        logits, labels, weights, 0.7, 1 if surrogate == "hinge" else 2
    )
    value_and_grad = jax.jit(
        jax.vmap(
            jax.value_and_grad(
                lambda s: jl.pairwise_auc_loss(
                    s, labels, surrogate=surrogate, margin=0.7, sample_weight=weights
                )
            )
        )
    )
    values, grads = value_and_grad(np.stack([logits, shifted]))
    np.testing.assert_allclose(values, [expected, expected], rtol=1e-5)
    # (the logits at exactly 0 had no gradient: see `test_hinge_pair_losses_at_huge_logits`)
    np.testing.assert_allclose(grads, [expected_grad, expected_grad], rtol=1e-4, atol=1e-7)


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_hinge_pair_losses_of_large_samples_are_summed_in_blocks_exactly(rng, surrogate):
    # from `BLOCKED_MOMENTS_SAMPLES` scores on, the negatives' suffix moments are formed in blocks
    # (a length that is no multiple of the block: the last one is padded), with zero weights
    n = pair_sums.BLOCKED_MOMENTS_SAMPLES + 917
    assert n % pair_sums.MOMENT_BLOCK
    logits, labels, weights = dyadic_problem(rng, n)
    weights[rng.random(n) < 0.1] = 0
    shifted = logits + np.float32(1e4)
    assert (shifted - np.float32(1e4) == logits).all()
    power, margin = (1 if surrogate == "hinge" else 2), 0.7
    # the float64 pair matrix: value and gradient
    s, w = logits.astype(np.float64), weights.astype(np.float64)
    pos, neg = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    pair_weight = w[pos][:, None] * w[neg][None, :]
    excess = np.maximum(margin - (s[pos][:, None] - s[neg][None, :]), 0)
    slope = pair_weight * power * excess ** (power - 1) * (excess > 0)
    expected = (pair_weight * excess**power).sum() / pair_weight.sum()
    expected_grad = np.zeros(n)
    expected_grad[pos] = -slope.sum(1) / pair_weight.sum()
    expected_grad[neg] = slope.sum(0) / pair_weight.sum()
    value_and_grad = jax.jit(
        jax.vmap(
            jax.value_and_grad(
                lambda s: jl.pairwise_auc_loss(
                    s, labels, surrogate=surrogate, margin=margin, sample_weight=weights
                )
            )
        )
    )
    values, grads = value_and_grad(np.stack([logits, shifted]))
    np.testing.assert_allclose(values, [expected, expected], rtol=1e-5)
    scale = np.abs(expected_grad).max()
    np.testing.assert_allclose(grads, [expected_grad, expected_grad], rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("surrogate", sorted(SURROGATE_TERMS))
@pytest.mark.parametrize("n", [60, pair_sums.BLOCKED_MOMENTS_SAMPLES + 917])
def test_pairwise_auc_loss_is_the_same_for_huge_weights(rng, surrogate, n):
    # a mean over pairs, the same for weights times any constant: weights of 1e20 made the pair
    # weights' total overflow float32 (NaN); x 2^100 is exact, so the loss must be equal
    logits, labels, weights = dyadic_problem(rng, n)
    huge = weights * np.float32(2.0**100)
    value_and_grad = jax.jit(
        jax.value_and_grad(
            lambda s, w: jl.pairwise_auc_loss(s, labels, surrogate=surrogate, sample_weight=w)
        )
    )
    (value, grad), (huge_value, huge_grad) = (
        value_and_grad(logits, weights),
        value_and_grad(logits, huge),
    )
    assert np.isfinite(float(value)) and float(huge_value) == float(value)
    np.testing.assert_array_equal(huge_grad, grad)
    eager = jl.pairwise_auc_loss(logits, labels, surrogate=surrogate, sample_weight=huge)
    assert float(eager) == pytest.approx(float(value), rel=1e-6)


def test_smooth_ap_loss_is_the_same_for_weights_of_2_to_the_20_and_2_to_the_64(rng):
    """Past weights of about 2^20 the ranks' "1 +" no longer shows in float32, so the loss and
    its gradient are the same for larger weights: at 2^40 the gradient lost its terms and at
    2^64 positive * rank overflowed (a loss of -inf, a NaN gradient)."""
    logits = rng.normal(size=40).astype(np.float32)
    labels = (rng.random(40) < 0.4).astype(np.int32)
    weights = rng.integers(1, 4, 40).astype(np.float32)

    def value_and_grad(scale):
        loss = lambda x: jl.smooth_ap_loss(  # noqa: E731
            x, labels, temperature=0.1, sample_weight=weights * np.float32(scale)
        )
        return jax.jit(jax.value_and_grad(loss))(logits)

    value, grad = value_and_grad(2.0**20)
    for scale in (2.0**40, 2.0**64):
        huge_value, huge_grad = value_and_grad(scale)
        assert float(huge_value) == pytest.approx(float(value), rel=1e-6)
        np.testing.assert_allclose(huge_grad, grad, rtol=1e-4, atol=1e-7)


def test_soft_count_losses_have_the_same_gradient_for_huge_weights(rng):
    """Weights times 2^62: the soft counts pass 1.8e19, and JAX's rule for a/b divides by b^2,
    which overflowed float32, dropping the denominator's part of the gradient (soft precision
    then had no gradient on the negatives). `safe_divide` has its own rule now."""
    logits = rng.normal(size=40).astype(np.float32)
    labels = (rng.random(40) < 0.4).astype(np.int32)
    weights = rng.integers(1, 4, 40).astype(np.float32)
    losses = (
        lambda x, w: jl.soft_precision(x, labels, sample_weight=w),
        lambda x, w: jl.soft_f_beta_loss(x, labels, sample_weight=w),
    )
    for loss in losses:
        base = jax.grad(loss)(logits, weights)
        for scale in (2.0**62, 2.0**100):
            huge = jax.jit(jax.grad(loss))(logits, weights * np.float32(scale))
            np.testing.assert_allclose(huge, base, rtol=1e-5, atol=1e-7)
    numerator = np.float32(1e19)
    grad = jax.grad(lambda t: jm.safe_divide(t, t + numerator))(numerator)
    assert float(grad) == pytest.approx(0.25 / float(numerator), rel=1e-6)


@pytest.mark.parametrize("surrogate", ["hinge", "squared_hinge"])
def test_hinge_pair_losses_at_huge_logits(surrogate):
    power = 1 if surrogate == "hinge" else 2
    value_and_grad = jax.jit(
        jax.value_and_grad(lambda s, y: jl.pairwise_auc_loss(s, y, surrogate=surrogate))
    )
    labels = np.array([1, 0, 1, 0, 0, 1, 0, 1])
    # and at logits of exactly 0 (a model initialised at zero), whose gradient `sorting.rank`'s
    # flush of subnormals to 0 (a `where`) dropped: such a model never moved
    zeros = np.zeros(8, np.float32)
    expected, expected_grad = hinge_pair_loop(zeros, labels, np.ones(8), 1.0, power)
    value, grad = value_and_grad(zeros, labels)
    assert float(value) == pytest.approx(expected, rel=1e-6)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-6)
    spread = np.array([1.0, 1.5, 2.0, 2.5, 3.0, 1.25, 1.75, 2.75], np.float32)
    for scale in (1e18, 1e19, 1e20):
        # every pair ordered far beyond the margin: the loss and its gradient are exactly 0
        ordered = np.where(labels == 1, spread, -spread) * np.float32(scale)
        value, grad = value_and_grad(ordered, labels)
        assert float(value) == 0.0 and (np.asarray(grad) == 0).all(), scale
        # a negative tied with the lowest positive: that pair costs margin^power (s - 1 rounds
        # to s there, which dropped the tie)
        tied = ordered.copy()
        tied[1] = tied[0]
        expected, expected_grad = hinge_pair_loop(tied, labels, np.ones(8), 1.0, power)
        assert expected > 0
        value, grad = value_and_grad(tied, labels)
        assert float(value) == pytest.approx(expected, rel=1e-6), scale
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-6, atol=0)


# every loss of `jaxmetrics.losses`, as a call of its float options, with a good and a bad value
# of each: (call, {option: (good, bad)})
_OPTION_LOGITS = np.array([2.0, 0.5, -1.0, 1.0, -2.0, 0.25, -0.5, 1.5], np.float32)
_OPTION_LABELS = np.array([1, 1, 0, 0, 0, 1, 0, 1])
_OPTION_QUERIES = _OPTION_LOGITS.reshape(2, 4)
_OPTION_RELEVANCE = np.array([[3, 0, 2, 1], [0, 2, 1, 0]], np.float32)
_OPTION_STATE = jl.AucMarginState(jnp.float32(0.6), jnp.float32(0.3), jnp.float32(0.2))
_TEMPERATURE = {"temperature": (0.5, math.inf)}
_SOFT = {**_TEMPERATURE, "threshold": (0.3, math.nan)}
_MARGIN = {"margin": (0.7, math.inf)}


def _soap(**options):
    state = jl.soap_loss.init(4)
    ids = np.where(_OPTION_LABELS == 1, np.cumsum(_OPTION_LABELS) - 1, -1)
    return jl.soap_loss.loss(state, _OPTION_LOGITS, _OPTION_LABELS, ids, **options)


OPTION_CASES = {
    "soft_counts": (lambda **o: jl.soft_counts(_OPTION_LOGITS, _OPTION_LABELS, **o), _SOFT),
    "soft_f_beta_loss": (
        lambda **o: jl.soft_f_beta_loss(_OPTION_LOGITS, _OPTION_LABELS, **o),
        {"beta": (2.0, -1.0), **_SOFT},
    ),
    "soft_precision": (lambda **o: jl.soft_precision(_OPTION_LOGITS, _OPTION_LABELS, **o), _SOFT),
    "soft_recall": (lambda **o: jl.soft_recall(_OPTION_LOGITS, _OPTION_LABELS, **o), _SOFT),
    "pairwise_auc_loss": (
        lambda **o: jl.pairwise_auc_loss(
            _OPTION_LOGITS, _OPTION_LABELS, surrogate="squared_hinge", **o
        ),
        _MARGIN,
    ),
    "auc_margin_loss": (
        lambda **o: jl.auc_margin_loss(jax.nn.sigmoid(_OPTION_LOGITS), _OPTION_LABELS, **o),
        _MARGIN,
    ),
    "auc_margin_objective": (
        lambda **o: jl.auc_margin_objective(
            jax.nn.sigmoid(_OPTION_LOGITS), _OPTION_LABELS, _OPTION_STATE, **o
        ),
        _MARGIN,
    ),
    "smooth_ap_loss": (
        lambda **o: jl.smooth_ap_loss(_OPTION_LOGITS, _OPTION_LABELS, **o),
        {"temperature": (0.5, 0.0)},
    ),
    "recall_at_precision_objective": (
        lambda **o: jl.recall_at_precision_objective(_OPTION_LOGITS, _OPTION_LABELS, 0.5, **o),
        {"min_precision": (0.7, 1.0)},
    ),
    # "kl" uses the temperature and the margin, "cvar" the rates
    "partial_auc_loss": (
        lambda **o: jl.partial_auc_loss(
            _OPTION_LOGITS,
            _OPTION_LABELS,
            **{"max_fpr": 0.5, "method": "cvar" if "max_fpr" in o else "kl", **o},
        ),
        {"max_fpr": (0.3, 0.0), **_MARGIN, "temperature": (0.5, -1.0)},
    ),
    "two_way_partial_auc_loss": (
        lambda **o: jl.two_way_partial_auc_loss(
            _OPTION_LOGITS,
            _OPTION_LABELS,
            **{
                "min_tpr": 0.4,
                "max_fpr": 0.5,
                "method": "kl" if {"margin", "temperature"} & set(o) else "cvar",
                **o,
            },
        ),
        {"min_tpr": (0.3, 1.0), "max_fpr": (0.7, 1.5), **_MARGIN, **_TEMPERATURE},
    ),
    "soap_loss": (_soap, {"gamma": (0.7, 0.0), **_MARGIN}),
    "compositional_auc_loss": (
        lambda **o: jl.compositional_auc_loss(_OPTION_LOGITS, _OPTION_LABELS, _OPTION_STATE, **o),
        {"inner_learning_rate": (0.5, -1.0), **_MARGIN},
    ),
    "multilabel_auc_margin_loss": (
        lambda **o: jl.multilabel_auc_margin_loss(
            jax.nn.sigmoid(_OPTION_QUERIES),
            _OPTION_LABELS.reshape(2, 4),
            jl.AucMarginState(jnp.zeros(2), jnp.full(2, 0.5), jnp.full(2, 0.1)),
            **o,
        ),
        _MARGIN,
    ),
    "approx_ndcg_loss": (
        lambda **o: jl.approx_ndcg_loss(_OPTION_QUERIES, _OPTION_RELEVANCE, **o),
        _TEMPERATURE,
    ),
    "listnet_loss": (
        lambda **o: jl.listnet_loss(_OPTION_QUERIES, _OPTION_RELEVANCE, **o),
        {"temperature": (0.5, -0.5)},
    ),
}
# not losses with float options: two state types, and a sampler whose `positive_fraction` sets
# the shape of its result (static by nature)
NO_FLOAT_OPTIONS = {"AucMarginState", "SoapState", "balanced_batches"}


def float_options(function):
    return {
        p.name
        for p in inspect.signature(function).parameters.values()
        if p.kind is p.KEYWORD_ONLY and p.annotation == "float"
    }


def test_every_float_option_of_every_loss_may_be_traced():
    # a schedule inside a jitted step: `jax.jit(lambda t: loss(..., temperature=t))(0.5)`;
    # `temperature`, `gamma`, `beta`, `min_precision`, the rates and `inner_learning_rate`
    # raised TracerBoolConversionError (or ConcretizationTypeError) there
    assert set(OPTION_CASES) | NO_FLOAT_OPTIONS == set(jl.__all__)
    for name in NO_FLOAT_OPTIONS - {"balanced_batches"}:
        assert isinstance(getattr(jl, name), type)
    for name, (_, options) in OPTION_CASES.items():
        function = jl.soap_loss.loss if name == "soap_loss" else getattr(jl, name)
        assert float_options(function) == set(options), name
    cases = [(name, option) for name, (_, options) in OPTION_CASES.items() for option in options]

    @jax.jit
    def every_loss(values):
        return [
            OPTION_CASES[name][0](**{option: value})
            for (name, option), value in zip(cases, values, strict=True)
        ]

    good = [jnp.float32(OPTION_CASES[name][1][option][0]) for name, option in cases]
    bad = [jnp.float32(OPTION_CASES[name][1][option][1]) for name, option in cases]
    for (name, option), traced, invalid in zip(cases, every_loss(good), every_loss(bad)):
        call, options = OPTION_CASES[name]
        eager = call(**{option: options[option][0]})
        jax.tree_util.tree_map(
            lambda x, y, key=(name, option): np.testing.assert_allclose(
                x, y, rtol=1e-6, atol=1e-7, err_msg=str(key)
            ),
            traced,
            eager,
        )
        # a bad value: ValueError naming the option eagerly, NaN under jit (and SOAP's state
        # left as it was)
        with pytest.raises(ValueError, match=rf"`{option}` must .*; got {options[option][1]}"):
            call(**{option: options[option][1]})
        value = invalid[0] if name == "soap_loss" else invalid
        assert all(np.isnan(leaf).all() for leaf in jax.tree_util.tree_leaves(value)), (
            name,
            option,
        )
        if name == "soap_loss":
            assert not np.asarray(invalid[1].all_above).any(), option


# ----------------------------------------------------------------------------- issue 28
# `nnx.Linear(h, 1)` gives [n, 1] logits: read as n batches of one sample, every loss over pairs,
# lists or sets of samples would be 0 (or constant) with a zero gradient, and the model would
# never move. Each raises at trace time instead, naming the shape, the rule and the fix.

ONE_SAMPLE_LOSSES = {
    "pairwise_auc_loss": lambda p, y: jl.pairwise_auc_loss(p, y),
    "soft_f_beta_loss": lambda p, y: jl.soft_f_beta_loss(p, y),
    "soft_counts": lambda p, y: jl.soft_counts(p, y).tp,
    "auc_margin_loss": lambda p, y: jl.auc_margin_loss(jax.nn.sigmoid(p), y),
    "smooth_ap_loss": lambda p, y: jl.smooth_ap_loss(p, y),
    "partial_auc_loss": lambda p, y: jl.partial_auc_loss(p, y, max_fpr=0.5),
    "approx_ndcg_loss": lambda p, y: jl.approx_ndcg_loss(p, y),
    "listnet_loss": lambda p, y: jl.listnet_loss(p, y),
}


@pytest.mark.parametrize("name", sorted(ONE_SAMPLE_LOSSES))
def test_one_column_of_logits_raises_with_the_shape_named(rng, name):
    loss = ONE_SAMPLE_LOSSES[name]
    logits, labels = problem(rng, n=24)
    first = {"auc_margin_loss": "probs", "approx_ndcg_loss": "scores", "listnet_loss": "scores"}
    first = first.get(name, "logits")  # the predictions' argument name
    shape = rf"`{first}` has shape \(24, 1\); samples lie on the last axis, leading axes are batch"
    fix = rf".*pass `{first}\[\.\.\., 0\]`, shape \(24,\)"
    for call in (
        loss,
        jax.jit(loss),
        jax.grad(lambda p, y: loss(p, y).sum()),
    ):
        with pytest.raises(ValueError, match=shape + fix):
            call(logits[:, None], labels[:, None].astype(np.float32))
    value, gradient = jax.value_and_grad(lambda p: loss(p, labels).sum())(logits)
    assert np.isfinite(float(value)) and np.abs(np.asarray(gradient)).sum() > 0  # as [n]: signal


# losses whose eager call ran operation by operation (6-20 programs for a first call on new
# shapes), each now one program; called with (scores, labels, weights)
ONE_PROGRAM_LOSSES = {
    "soft_counts": lambda s, y, w: jnp.stack(jl.soft_counts(s, y, sample_weight=w)),
    "soft_f_beta_loss": lambda s, y, w: jl.soft_f_beta_loss(s, y, beta=2.0, sample_weight=w),
    "auc_margin_loss": lambda s, y, w: jl.auc_margin_loss(s, y, sample_weight=w),
    "auc_margin_objective": lambda s, y, w: jl.auc_margin_objective(
        s, y, jl.AucMarginState(0.7, 0.3, 0.2), sample_weight=w
    ),
    "smooth_ap_loss": lambda s, y, w: jl.smooth_ap_loss(s, y, temperature=0.1, sample_weight=w),
    "recall_at_precision_objective": lambda s, y, w: jl.recall_at_precision_objective(
        s, y, 0.5, min_precision=0.8, sample_weight=w
    ),
}


@pytest.mark.parametrize("name", sorted(ONE_PROGRAM_LOSSES))
def test_an_eager_loss_compiles_one_program(caplog, name):
    loss = ONE_PROGRAM_LOSSES[name]
    rng = np.random.default_rng(5)

    def problem(n: int):
        labels = np.arange(n) % 2
        return rng.random(n).astype(np.float32), labels, rng.uniform(0.5, 2.0, n).astype(np.float32)

    loss(*problem(7))  # other shapes first: what a process compiles once
    scores, labels, weights = problem(10)
    caplog.clear()
    with caplog.at_level(logging.WARNING), jax.log_compiles():
        jax.block_until_ready(loss(scores, labels, weights))
    messages = [r.getMessage() for r in caplog.records if r.getMessage().startswith("Compiling")]
    # one program (none where another test of this process compiled it: soft_f_beta_loss's
    # soft counts, then its F-beta of counts of the same shape)
    assert len(messages) <= 1, messages
    # an eager gradient (the program differentiated as a whole) equals the compiled one
    gradient = jax.grad(lambda s: loss(s, labels, weights).sum())(scores)
    expected = jax.jit(jax.grad(lambda s: loss(s, labels, weights).sum()))(scores)
    np.testing.assert_allclose(gradient, expected, rtol=1e-5, atol=1e-7)
