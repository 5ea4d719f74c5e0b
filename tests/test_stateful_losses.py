import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import jaxmetrics as jm
from jaxmetrics._src.losses.batches import balanced_batches
from jaxmetrics._src.losses.ranking import AucMarginState, auc_margin_objective
from jaxmetrics._src.losses.stateful import (
    SoapState,
    compositional_auc_loss,
    multilabel_auc_margin_loss,
    soap_loss,
)

SURROGATES = {
    "squared_hinge": lambda d, m: max(0.0, m - d) ** 2,
    "logistic": lambda d, m: math.log1p(math.exp(-d)),
    "hinge": lambda d, m: max(0.0, m - d),
}


def soap_reference_step(
    state, logits, labels, ids, weights, gamma, margin, surrogate="squared_hinge"
):
    """One SOAP step, looping over the batch's positives and all pairs, in float64."""
    u_pos, u_all = (np.array(u, np.float64) for u in state)
    s, term, total_weight = logits.astype(np.float64), SURROGATES[surrogate], weights.sum()
    ratio_sum = positive_weight = 0.0
    for i in range(s.size):
        if labels[i] != 1 or weights[i] == 0:
            continue
        g_pos = sum(weights[j] * labels[j] * term(s[i] - s[j], margin) for j in range(s.size))
        g_all = sum(weights[j] * term(s[i] - s[j], margin) for j in range(s.size))
        k = ids[i]
        u_pos[k] = (1 - gamma) * u_pos[k] + gamma * g_pos / total_weight
        u_all[k] = (1 - gamma) * u_all[k] + gamma * g_all / total_weight
        ratio_sum += weights[i] * u_pos[k] / u_all[k]
        positive_weight += weights[i]
    return 1 - ratio_sum / positive_weight, u_pos, u_all


def soap_gradient_reference(u_pos, u_all, logits, labels, ids, weights, margin):
    """LibAUC's form, differentiated by hand: the gradient of sum_ij c_ij l_ij with
    c_ij = w_i w_j (u+_i - u_i y_j) / u_i^2 / (W+ W) held fixed, l_ij = max(0, m - s_i + s_j)^2."""
    s = logits.astype(np.float64)
    member = (labels == 1) & (weights > 0)
    rows = np.where(member, ids, 0)
    u_p, u_a = u_pos[rows][:, None], u_all[rows][:, None]
    row_weight = np.where(member, weights, 0)
    pair_weight = row_weight[:, None] * weights[None, :] / (row_weight.sum() * weights.sum())
    c = pair_weight * (u_p - u_a * labels[None, :]) / u_a**2
    slope = 2 * np.maximum(0.0, margin - (s[:, None] - s[None, :]))  # d l_ij / d s_j
    return (c * slope).sum(0) - (c * slope).sum(1)


def soap_problem(rng):
    """A training set of 6 positives and 3 batches of 8 that revisit some of them."""
    logits = [rng.normal(size=8).astype(np.float32) for _ in range(3)]
    labels = [[1, 1, 1, 0, 0, 0, 0, 1], [0, 1, 1, 1, 0, 0, 0, 1], [1, 0, 0, 0, 0, 1, 1, 1]]
    ids = [[0, 3, 5, -1, -1, -1, -1, 2], [-1, 1, 3, 4, -1, -1, -1, 7], [2, -1, -1, -1, 9, 5, 3, 0]]
    weights = [np.ones(8, np.float32), rng.random(8).astype(np.float32), np.ones(8, np.float32)]
    weights[1][7] = 0.0  # padding: a positive of weight 0 whose id (7) is out of range
    return [(logits[k], np.array(labels[k]), np.array(ids[k]), weights[k]) for k in range(3)]


SOAP_OPTIONS = {"gamma": 0.7, "margin": 0.8}


@functools.cache
def soap_step():
    """One jitted SOAP step with its gradient, shared by the tests."""
    return jax.jit(
        jax.value_and_grad(
            lambda s, st, y, i, w: soap_loss.loss(st, s, y, i, sample_weight=w, **SOAP_OPTIONS),
            has_aux=True,
        )
    )


def test_soap_state_values_and_gradients_against_a_loop_over_three_steps(rng):
    step = soap_step()
    state = logistic_state = soap_loss.init(6)
    reference = logistic_reference = soap_loss.init(6)
    for logits, labels, ids, weights in soap_problem(rng):
        (value, state), grad = step(logits, state, labels, ids, weights)
        expected, *u = soap_reference_step(reference, logits, labels, ids, weights, 0.7, 0.8)
        reference = SoapState(*u)
        np.testing.assert_allclose(state.positive_above, reference.positive_above, rtol=1e-5)
        np.testing.assert_allclose(state.all_above, reference.all_above, rtol=1e-5)
        assert float(value) == pytest.approx(expected, rel=1e-5)
        expected_grad = soap_gradient_reference(*reference, logits, labels, ids, weights, 0.8)
        np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-6)
        # another surrogate, called eagerly
        value, logistic_state = soap_loss.loss(
            logistic_state,
            logits,
            labels,
            ids,
            surrogate="logistic",
            sample_weight=weights,
            **SOAP_OPTIONS,
        )
        expected, *u = soap_reference_step(
            logistic_reference, logits, labels, ids, weights, 0.7, 0.8, "logistic"
        )
        logistic_reference = SoapState(*u)
        np.testing.assert_allclose(
            logistic_state.all_above, logistic_reference.all_above, rtol=1e-5
        )
        assert float(value) == pytest.approx(expected, rel=1e-5)
    assert (np.asarray(state.all_above) > 0).all()  # every positive was visited


def test_soap_padding_is_exact_and_one_class_batches_change_nothing(rng):
    (logits, labels, ids, _), *_ = soap_problem(rng)
    state = soap_loss.init(6)
    step = soap_step()
    (value, new_state), grad = step(logits, state, labels, ids, np.ones(8, np.float32))
    padded = (
        np.concatenate([logits, [3.0, -2.0, 9.0]]).astype(np.float32),
        np.concatenate([labels, [1, 0, 1]]),
        np.concatenate([ids, [1, -1, 99]]),
        np.concatenate([np.ones(8), np.zeros(3)]).astype(np.float32),
    )
    (padded_value, padded_state), padded_grad = step(padded[0], state, *padded[1:])
    assert float(padded_value) == pytest.approx(float(value), rel=1e-6)
    np.testing.assert_allclose(padded_grad[:8], grad, rtol=1e-6)
    assert (padded_grad[8:] == 0).all()
    jax.tree_util.tree_map(np.testing.assert_array_equal, padded_state, new_state)
    # no positive: 0 with zero gradient, state untouched
    (value, unchanged), grad = step(logits, new_state, np.zeros(8, int), ids, np.ones(8))
    assert float(value) == 0.0 and (np.asarray(grad) == 0).all()
    jax.tree_util.tree_map(np.testing.assert_array_equal, unchanged, new_state)


EXTREME_STATE = AucMarginState(jnp.float32(0.5), jnp.float32(0.5), jnp.float32(0.3))
EXTREME_LOSSES = {
    "soap": lambda s, y: soap_loss.loss(soap_loss.init(5), s, y, jnp.arange(5))[0],
    "compositional": lambda s, y: compositional_auc_loss(s, y, EXTREME_STATE),
    "multilabel": lambda s, y: multilabel_auc_margin_loss(
        jax.nn.sigmoid(jnp.stack([s, -s])), jnp.stack([y, 1 - y]), EXTREME_STATE
    ),
}


@pytest.mark.parametrize("name", sorted(EXTREME_LOSSES))
def test_finite_values_and_gradients_at_extreme_logits_and_one_class_batches(name):
    value_and_grad = jax.jit(jax.value_and_grad(EXTREME_LOSSES[name]))
    logits = jnp.array([1e4, -1e4, 3e3, -2e3, 0.0], jnp.float32)
    for labels in ([1, 0, 0, 1, 1], [1, 1, 1, 1, 1], [0, 0, 0, 0, 0]):
        value, grad = value_and_grad(logits, jnp.array(labels))
        assert np.isfinite(float(value)) and np.isfinite(np.asarray(grad)).all(), labels


def test_soap_trains_inside_an_optax_scan(rng):
    features = rng.normal(size=(300, 4)).astype(np.float32)
    direction = np.array([1.0, -2.0, 0.5, 1.0], np.float32)
    labels = (features @ direction + 0.5 * rng.normal(size=300) > 2.0).astype(np.int32)
    ids = np.where(labels == 1, np.cumsum(labels) - 1, -1)
    # 9 batches of 8 positives and 24 negatives (`balanced_batches` is tested below)
    positives, negatives = np.flatnonzero(labels == 1), np.flatnonzero(labels == 0)
    batches = np.concatenate(
        [
            np.stack([rng.choice(positives, 8, replace=False) for _ in range(9)]),
            rng.permutation(negatives)[: 9 * 24].reshape(9, 24),
        ],
        axis=1,
    )
    optimizer = optax.adam(0.1)
    params = jnp.zeros(4)  # all scores tied: AP is the share of positives

    def step(carry, batch):
        params, opt_state, state = carry

        def loss(params):
            x, y, i = (jnp.asarray(a)[batch] for a in (features, labels, ids))
            return soap_loss.loss(state, x @ params, y, i)

        (value, state), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return (optax.apply_updates(params, updates), opt_state, state), value

    start = (params, optimizer.init(params), soap_loss.init(int(labels.sum())))
    (trained, _, state), values = jax.jit(lambda c, b: jax.lax.scan(step, c, b))(start, batches)
    assert np.isfinite(np.asarray(values)).all()
    visited = np.unique(ids[np.asarray(batches)][labels[np.asarray(batches)] == 1])
    assert (np.asarray(state.all_above)[visited] > 0).all()
    before = float(jm.average_precision(features @ np.asarray(params), labels))
    after = float(jm.average_precision(features @ np.asarray(trained), labels))
    assert after > before + 0.5


def test_soap_vmaps_over_independent_problems_and_checks_its_options(rng):
    (logits, labels, ids, _), *_ = soap_problem(rng)
    batch = np.stack([logits, -logits])
    states = jax.tree_util.tree_map(lambda u: jnp.stack([u, u]), soap_loss.init(6))
    values, new_states = jax.jit(
        jax.vmap(lambda st, s: soap_loss.loss(st, s, labels, ids, **SOAP_OPTIONS))
    )(states, batch)
    (value, state), _ = soap_step()(batch[1], soap_loss.init(6), labels, ids, np.ones(8))
    assert float(values[1]) == pytest.approx(float(value), rel=1e-6)
    np.testing.assert_allclose(new_states.all_above[1], state.all_above, rtol=1e-6)
    state = soap_loss.init(6)
    with pytest.raises(ValueError, match=r"`gamma` must be in \(0, 1\]"):
        soap_loss.loss(state, logits, labels, ids, gamma=0.0)
    with pytest.raises(ValueError, match="`surrogate` must be one of"):
        soap_loss.loss(state, logits, labels, ids, surrogate="exponential")
    with pytest.raises(ValueError, match="`logits` must be one batch of shape"):
        soap_loss.loss(state, batch, labels, ids)
    with pytest.raises(ValueError, match=r"`ids` of positives must be in \[0, num_positives=6\)"):
        soap_loss.loss(state, logits, labels, np.where(ids == 5, 6, ids))
    with pytest.raises(ValueError, match="`ids` of the positives of a batch must be distinct"):
        soap_loss.loss(state, logits, labels, np.where(ids == 5, 0, ids))
    with pytest.raises(TypeError, match="`ids` must hold integers"):
        soap_loss.loss(state, logits, labels, ids.astype(np.float32))
    with pytest.raises(ValueError, match="`num_positives` must be an int >= 1"):
        soap_loss.init(0)
    # under jit: a bad batch gives NaN and leaves the state as it was
    jitted = jax.jit(lambda s, i: soap_loss.loss(state, s, labels, i))
    for bad_logits, bad_ids in ((logits, np.where(ids == 5, 0, ids)), (logits * np.nan, ids)):
        value, unchanged = jitted(bad_logits, bad_ids)
        assert math.isnan(float(value))
        jax.tree_util.tree_map(np.testing.assert_array_equal, unchanged, state)


def auc_m_reference(probs, labels, weights, a, b, alpha, margin):
    pos, neg = labels == 1, labels == 0
    mean_pos = (weights * probs)[pos].sum() / weights[pos].sum()
    mean_neg = (weights * probs)[neg].sum() / weights[neg].sum()
    spread = (weights * (probs - a) ** 2)[pos].sum() / weights[pos].sum() + (
        weights * (probs - b) ** 2
    )[neg].sum() / weights[neg].sum()
    return spread + 2 * alpha * (margin - mean_pos + mean_neg) - alpha**2


def auc_m_gradient(probs, labels, weights, a, b, alpha):
    """d auc_m_reference / d probs, by hand."""
    pos, neg = labels == 1, labels == 0
    share_pos, share_neg = weights * pos / weights[pos].sum(), weights * neg / weights[neg].sum()
    return 2 * share_pos * (probs - a - alpha) + 2 * share_neg * (probs - b + alpha)


def test_compositional_auc_loss_is_auc_m_after_a_cross_entropy_step(rng):
    logits = rng.normal(size=20).astype(np.float32)
    labels = (rng.random(20) < 0.4).astype(np.int32)
    labels[:2] = [0, 1]
    weights = rng.random(20).astype(np.float32)
    state = AucMarginState(jnp.float32(0.7), jnp.float32(0.2), jnp.float32(0.4))
    z = logits.astype(np.float64)
    sigma = 1 / (1 + np.exp(-z))
    stepped = 1 / (1 + np.exp(-(z - 0.5 * (sigma - labels))))
    expected = auc_m_reference(stepped, labels, weights, 0.7, 0.2, 0.4, 0.9)
    options = {"inner_learning_rate": 0.5, "margin": 0.9, "sample_weight": weights}
    assert float(compositional_auc_loss(logits, labels, state, **options)) == pytest.approx(
        expected, rel=1e-5
    )
    # the chain rule through the step: df/dp * sigma'(z') * (1 - eta sigma'(z))
    grad = jax.jit(jax.grad(lambda s: compositional_auc_loss(s, labels, state, **options)))(logits)
    df_dp = auc_m_gradient(stepped, labels, weights, 0.7, 0.2, 0.4)
    chain = df_dp * stepped * (1 - stepped) * (1 - 0.5 * sigma * (1 - sigma))
    np.testing.assert_allclose(grad, chain, rtol=1e-4, atol=1e-7)
    plain = compositional_auc_loss(logits, labels, state, inner_learning_rate=0.0)
    probs = np.asarray(jax.nn.sigmoid(logits), np.float64)
    assert float(plain) == pytest.approx(
        auc_m_reference(probs, labels, np.ones(20), 0.7, 0.2, 0.4, 1.0), rel=1e-5
    )
    for bad in (-0.1, float("inf"), float("nan")):
        with pytest.raises(ValueError, match="`inner_learning_rate` must be finite and >= 0"):
            compositional_auc_loss(logits, labels, state, inner_learning_rate=bad)


def test_multilabel_auc_margin_loss_is_the_mean_of_per_label_objectives(rng):
    num_labels, n = 3, 16
    probs = rng.random((2, num_labels, n)).astype(np.float32)
    labels = (rng.random((2, num_labels, n)) < 0.5).astype(np.int32)
    labels[..., :2] = [0, 1]
    weights = rng.random((2, num_labels, n)).astype(np.float32)
    state = AucMarginState(*(jnp.asarray(rng.random(num_labels), jnp.float32) for _ in range(3)))
    got = multilabel_auc_margin_loss(probs, labels, state, margin=0.8, sample_weight=weights)
    assert got.shape == (2,)
    for row in range(2):
        expected = np.mean(
            [
                auc_m_reference(
                    probs[row, label].astype(np.float64),
                    labels[row, label],
                    weights[row, label],
                    *(float(field[label]) for field in state),
                    0.8,
                )
                for label in range(num_labels)
            ]
        )
        assert float(got[row]) == pytest.approx(expected, rel=1e-5)
    # jit and vmap agree with the eager call; each label's a, b, alpha get that label's
    # gradient, over L
    options = {"margin": 0.8}
    value, grads = jax.jit(
        jax.value_and_grad(
            lambda st: multilabel_auc_margin_loss(
                probs[0], labels[0], st, sample_weight=weights[0], **options
            )
        )
    )(state)
    assert float(value) == pytest.approx(float(got[0]), rel=1e-6)
    for label in range(num_labels):
        h, y, w = probs[0, label].astype(np.float64), labels[0, label], weights[0, label]
        a, b, alpha = (float(field[label]) for field in state)
        mean_pos, mean_neg = (
            np.average(h[y == 1], weights=w[y == 1]),
            np.average(h[y == 0], weights=w[y == 0]),
        )
        expected = (  # d f / d (a, b, alpha), over L
            -2 * (mean_pos - a) / 3,
            -2 * (mean_neg - b) / 3,
            (2 * (0.8 - mean_pos + mean_neg) - 2 * alpha) / 3,
        )
        np.testing.assert_allclose([g[label] for g in grads], expected, rtol=1e-5)
    mapped = jax.jit(
        jax.vmap(
            lambda p, y, w: multilabel_auc_margin_loss(p, y, state, sample_weight=w, **options)
        )
    )(probs, labels, weights)
    np.testing.assert_allclose(mapped, got, rtol=1e-6)
    with pytest.raises(ValueError, match=r"`state.a` must have shape \[L\]=\(3,\)"):
        multilabel_auc_margin_loss(probs, labels, state._replace(a=jnp.zeros(4)))
    with pytest.raises(ValueError, match=r"`probs` must have shape \[\*batch, L, n\]"):
        multilabel_auc_margin_loss(probs[0, 0], labels[0, 0], state)
    with pytest.raises(ValueError, match=r"`probs` must be finite"):
        multilabel_auc_margin_loss(np.full_like(probs, np.nan), labels, state)


def test_compositional_loss_batch_axes_padding_and_errors(rng):
    logits = rng.normal(size=(3, 12)).astype(np.float32)
    labels = (rng.random((3, 12)) < 0.5).astype(np.int32)
    labels[:, :2] = [0, 1]
    state = AucMarginState(jnp.zeros(3), jnp.zeros(3), jnp.full(3, 0.2))
    z = logits.astype(np.float64)
    stepped = 1 / (1 + np.exp(-(z - (1 / (1 + np.exp(-z)) - labels))))
    expected = [auc_m_reference(p, y, np.ones(12), 0, 0, 0.2, 1.0) for p, y in zip(stepped, labels)]
    loss = jax.jit(lambda s: compositional_auc_loss(s, labels, state))
    np.testing.assert_allclose(loss(logits), expected, rtol=1e-5)
    mapped = jax.jit(jax.vmap(compositional_auc_loss))(logits, labels, state)
    np.testing.assert_allclose(mapped, expected, rtol=1e-5)
    padded = compositional_auc_loss(  # eager
        np.concatenate([logits, 4 * np.ones((3, 4), np.float32)], axis=1),
        np.concatenate([labels, np.ones((3, 4), np.int32)], axis=1),
        state,
        sample_weight=np.concatenate([np.ones((3, 12)), np.zeros((3, 4))], axis=1),
    )
    np.testing.assert_allclose(padded, expected, rtol=1e-5)
    bad = logits.copy()
    bad[1, 4] = np.inf
    with pytest.raises(ValueError, match=r"`logits` must be finite; found inf at index \(1, 4\)"):
        compositional_auc_loss(bad, labels, state)
    marked = loss(bad)
    assert np.isfinite(float(marked[0])) and math.isnan(float(marked[1]))


def test_balanced_batches_counts_cycles_and_reproducibility():
    labels = np.zeros(103, np.int32)
    labels[[3, 10, 11, 40, 41, 42, 77, 90, 91, 99]] = 1  # 10 positives, 93 negatives
    key = jax.random.key(7)
    batches = np.asarray(balanced_batches(key, labels, batch_size=8, positive_fraction=0.4))
    # round(0.4 * 8) = 3 positives, 5 negatives; 93 // 5 = 18 batches
    assert batches.shape == (18, 8) and batches.dtype == np.int32
    assert (labels[batches[:, :3]] == 1).all() and (labels[batches[:, 3:]] == 0).all()
    negatives = batches[:, 3:].reshape(-1)
    assert np.unique(negatives).size == negatives.size  # an epoch: each negative at most once
    # 3 batches per permutation of the 10 positives: distinct within each cycle of 3 batches
    for cycle in batches[:, :3].reshape(6, 9):
        assert np.unique(cycle).size == 9
    again = balanced_batches(key, labels, batch_size=8, positive_fraction=0.4)
    np.testing.assert_array_equal(again, batches)
    other = balanced_batches(jax.random.key(8), labels, batch_size=8, positive_fraction=0.4)
    assert not np.array_equal(other, batches)
    # fewer positives than places, and rounding half up: 0.5 * 25 = 12.5 -> 13 positives,
    # dealt from whole permutations of the 10: 7 batches (93 // 12) take 91 = 9 * 10 + 1
    few = np.asarray(balanced_batches(key, labels, batch_size=25, positive_fraction=0.5))
    assert few.shape == (7, 25) and (labels[few].sum(1) == 13).all()
    assert sorted(np.bincount(few[:, :13].reshape(-1), minlength=103)[labels == 1]) == [9] * 9 + [
        10
    ]


def test_balanced_batches_errors():
    labels = np.array([1, 0, 0, 1, 0, 0, 0, 0])
    key = jax.random.key(0)
    with pytest.raises(ValueError, match="`positive_fraction` must be in"):
        balanced_batches(key, labels, batch_size=4, positive_fraction=1.0)
    with pytest.raises(ValueError, match="`positive_fraction` \\* `batch_size` must round"):
        balanced_batches(key, labels, batch_size=4, positive_fraction=0.05)
    with pytest.raises(TypeError, match="`batch_size` must be an int >= 2"):
        balanced_batches(key, labels, batch_size=4.0, positive_fraction=0.5)
    with pytest.raises(ValueError, match="`labels` must hold a positive"):
        balanced_batches(key, np.zeros(8, int), batch_size=4, positive_fraction=0.5)
    with pytest.raises(ValueError, match="at least 7 negatives"):
        balanced_batches(key, labels, batch_size=8, positive_fraction=0.1)
    with pytest.raises(ValueError, match="`labels` must contain only 0 and 1"):
        balanced_batches(key, labels * 2, batch_size=4, positive_fraction=0.5)


def test_float64_under_x64(rng, x64):
    logits = rng.normal(size=8)
    labels = np.array([1, 1, 1, 0, 0, 0, 0, 1])
    ids = np.array([0, 1, 2, -1, -1, -1, -1, 3])
    value, state = soap_loss.loss(soap_loss.init(4), logits, labels, ids)
    assert value.dtype == state.all_above.dtype == np.float64
    state = AucMarginState(0.5, 0.5, 0.1)
    assert compositional_auc_loss(logits, labels, state).dtype == np.float64
    probs = jax.nn.sigmoid(jnp.asarray(np.stack([logits, -logits])))
    ml_state = AucMarginState(jnp.zeros(2), jnp.zeros(2), jnp.zeros(2))
    assert multilabel_auc_margin_loss(probs, np.stack([labels] * 2), ml_state).dtype == np.float64


def test_soap_at_huge_logits(rng):
    # at logits x 1e10 the value was NaN (u^2 overflowed in the gradient form), and counts past
    # the float range were written into the state, poisoning every later step
    (logits, labels, ids, weights), *_ = soap_problem(rng)
    state = soap_loss.init(6)
    step = soap_step()
    huge = logits * np.float32(1e10)
    (value, new_state), grad = step(huge, state, labels, ids, weights)
    expected, *u = soap_reference_step(state, huge, labels, ids, weights, 0.7, 0.8)
    assert float(value) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(new_state.all_above, u[1], rtol=1e-5)
    np.testing.assert_allclose(new_state.positive_above, u[0], rtol=1e-5)
    expected_grad = soap_gradient_reference(*u, huge, labels, ids, weights, 0.8)
    np.testing.assert_allclose(grad, expected_grad, rtol=1e-4, atol=1e-6 * abs(expected_grad).max())
    # the hinge's counts of logits 1e20 apart are still finite floats
    hinge = {"surrogate": "hinge", "margin": 0.8, "sample_weight": weights}
    value, hinge_state = soap_loss.loss(state, huge * 1e10, labels, ids, gamma=0.7, **hinge)
    expected, *u = soap_reference_step(state, huge * 1e10, labels, ids, weights, 0.7, 0.8, "hinge")
    assert float(value) == pytest.approx(expected, rel=1e-5)
    np.testing.assert_allclose(hinge_state.all_above, u[1], rtol=1e-5)
    # squared hinges of logits 1e20 apart overflow: a ValueError eagerly; under jit NaN, and
    # the state is left as it was
    with pytest.raises(ValueError, match=r"`logits` must keep SOAP's counts finite in float32"):
        soap_loss.loss(state, huge * 1e10, labels, ids, sample_weight=weights)
    (value, unchanged), _ = step(huge * 1e10, new_state, labels, ids, weights)
    assert math.isnan(float(value))
    jax.tree_util.tree_map(np.testing.assert_array_equal, unchanged, new_state)


def test_state_of_the_wrong_batch_shape_is_named():
    # it failed inside JAX's broadcasting with a message about shapes of internal arrays
    # (or, for a state wider than the batch, gave a loss of the state's shape)
    logits = np.linspace(-2, 2, 24, dtype=np.float32).reshape(3, 8)
    labels = np.tile([1, 0], (3, 4))
    wrong = AucMarginState(jnp.zeros(4), jnp.zeros(3), jnp.float32(0.1))
    with pytest.raises(
        ValueError,
        match=r"`state.a` must be a scalar or broadcast to the batch shape \(3,\) of `logits`; "
        r"got shape \(4,\)",
    ):
        compositional_auc_loss(logits, labels, wrong)
    wide = AucMarginState(jnp.float32(0.0), jnp.zeros(3), jnp.float32(0.1))
    with pytest.raises(ValueError, match=r"`state.b` .* batch shape \(\) of `logits`; got shape"):
        compositional_auc_loss(logits[0], labels[0], wide)
    with pytest.raises(ValueError, match=r"`state.a` .* batch shape \(3,\) of `probs`"):
        auc_margin_objective(jax.nn.sigmoid(logits), labels, wrong)
    assert compositional_auc_loss(logits, labels, wrong._replace(a=jnp.zeros(3))).shape == (3,)


def test_balanced_batches_names_a_key_that_is_not_a_key():
    """`key=0` failed inside jax.random with an unclear error (issue 25, item 12)."""
    with pytest.raises(TypeError, match=r"`key` must be a JAX PRNG key .*got int 0"):
        balanced_batches(0, np.array([0, 1, 0, 1]), batch_size=2, positive_fraction=0.5)
