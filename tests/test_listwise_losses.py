import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.test_util import check_grads

import jaxmetrics as jm
from jaxmetrics._src.losses.listwise import approx_ndcg_loss, listnet_loss

LOSSES = {"approx_ndcg": approx_ndcg_loss, "listnet": listnet_loss}


def queries(rng, num_queries=5, m=12, ties=False):
    scores = rng.normal(size=(num_queries, m)).astype(np.float32)
    if ties:
        scores = np.round(scores * 2) / 2
    relevance = rng.integers(0, 4, (num_queries, m)).astype(np.float32)
    relevance[:, 0] = 2  # every query has a relevant item
    mask = (rng.random((num_queries, m)) < 0.8).astype(np.float32)
    mask[:, 0] = 1
    return scores, relevance, mask


def sigmoid(x):
    return 1 / (1 + np.exp(-x))


def approx_ndcg_reference(scores, relevance, mask, temperature):
    """Loops over queries and pairs, in float64."""
    losses = []
    for s, rel, w in zip(scores.astype(np.float64), relevance, mask):
        present = np.flatnonzero(w)
        dcg = 0.0
        for i in present:
            rank = 1 + sum(sigmoid((s[j] - s[i]) / temperature) for j in present if j != i)
            dcg += rel[i] / math.log2(1 + rank)
        ideal = np.sort(rel[present])[::-1]
        idcg = sum(g / math.log2(2 + p) for p, g in enumerate(ideal))
        losses.append(1 - dcg / idcg if idcg > 0 else 0.0)
    return np.array(losses)


def approx_ndcg_matrix_form(scores, relevance, mask, temperature):
    """The same loss as one pair matrix per query, for reference gradients."""
    d = (scores[:, None, :] - scores[:, :, None]) / temperature  # [q, i, j]: s_j - s_i
    off_diagonal = 1 - jnp.eye(scores.shape[-1])
    rank = 1 + (jax.nn.sigmoid(d) * off_diagonal * mask[:, None, :]).sum(-1)
    dcg = (mask * relevance / jnp.log2(1 + rank)).sum(-1)
    ideal = -jnp.sort(-(mask * relevance), axis=-1)
    idcg = (ideal / jnp.log2(2 + jnp.arange(scores.shape[-1]))).sum(-1)
    return 1 - dcg / idcg


def listnet_reference(scores, relevance, mask, temperature):
    losses = []
    for s, rel, w in zip(scores.astype(np.float64), relevance, mask):
        present = w > 0
        z = s[present] / temperature
        log_softmax = z - np.log(np.exp(z - z.max()).sum()) - z.max()
        target = rel[present] / rel[present].sum() if rel[present].sum() > 0 else 0 * z
        losses.append(-(target * log_softmax).sum())
    return np.array(losses)


@pytest.mark.parametrize("ties", [False, True])
def test_approx_ndcg_against_loops_and_pair_matrix_gradients(rng, ties):
    scores, relevance, mask = queries(rng, ties=ties)
    expected = approx_ndcg_reference(scores, relevance, mask, 0.5)
    got = approx_ndcg_loss(scores, relevance, temperature=0.5, sample_weight=mask)
    np.testing.assert_allclose(got, expected, rtol=2e-5, atol=1e-6)
    grad = jax.jit(
        jax.grad(
            lambda s: approx_ndcg_loss(s, relevance, temperature=0.5, sample_weight=mask).sum()
        )
    )(jnp.asarray(scores))
    reference = jax.jit(jax.grad(lambda s: approx_ndcg_matrix_form(s, relevance, mask, 0.5).sum()))(
        jnp.asarray(scores)
    )
    np.testing.assert_allclose(grad, reference, atol=1e-6)
    if ties:
        return
    check_grads(
        lambda s: approx_ndcg_loss(s, relevance, temperature=0.5, sample_weight=mask),
        (jnp.asarray(scores),),
        order=1,
        modes=["rev"],
        eps=1e-3,
        atol=1e-2,
        rtol=1e-2,
    )


def test_approx_ndcg_becomes_one_minus_ndcg_as_temperature_goes_to_zero(rng):
    num_queries, m = 6, 15
    # distinct scores, at least 1e-2 apart within a query
    scores = np.stack([rng.permutation(m) for _ in range(num_queries)]).astype(np.float32) / 10
    relevance = rng.integers(0, 4, (num_queries, m)).astype(np.float32)
    relevance[:, 0] = 3
    mask = (rng.random((num_queries, m)) < 0.7).astype(np.float32)
    mask[:, 0] = 1
    sharp = approx_ndcg_loss(scores, relevance, temperature=1e-5, sample_weight=mask)
    exact = 1 - jm.ndcg(scores, relevance, sample_weight=mask)
    np.testing.assert_allclose(sharp, exact, atol=1e-6)


def test_listnet_against_loops_and_its_closed_form_gradient(rng):
    scores, relevance, mask = queries(rng)
    expected = listnet_reference(scores, relevance, mask, 0.7)
    got = listnet_loss(scores, relevance, temperature=0.7, sample_weight=mask)
    np.testing.assert_allclose(got, expected, rtol=2e-5)
    # d loss / d s_i = (softmax_i - target_i) / T on present items, 0 on absent ones
    grad = jax.jit(
        jax.grad(lambda s: listnet_loss(s, relevance, temperature=0.7, sample_weight=mask).sum())
    )(jnp.asarray(scores))
    z = np.where(mask > 0, scores.astype(np.float64) / 0.7, -np.inf)
    softmax = np.exp(z - z.max(-1, keepdims=True))
    softmax /= softmax.sum(-1, keepdims=True)
    target = mask * relevance / (mask * relevance).sum(-1, keepdims=True)
    np.testing.assert_allclose(grad, (softmax - target) / 0.7, atol=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_padding_by_zero_weights_is_exact(rng, name):
    loss = LOSSES[name]
    scores, relevance, _ = queries(rng, m=10)
    padded_scores = np.concatenate([scores, 5 * rng.normal(size=(5, 6))], axis=1)
    padded_relevance = np.concatenate([relevance, rng.integers(0, 4, (5, 6))], axis=1)
    mask = np.concatenate([np.ones((5, 10)), np.zeros((5, 6))], axis=1).astype(np.float32)

    def value_and_grad(s, r, w):
        return jax.value_and_grad(lambda s: loss(s, r, sample_weight=w).sum())(jnp.asarray(s))

    expected, expected_grad = jax.jit(jax.vmap(lambda s, r: value_and_grad(s, r, None)))(
        scores, relevance
    )
    got, grad = jax.jit(jax.vmap(value_and_grad))(
        padded_scores.astype(np.float32), padded_relevance.astype(np.float32), mask
    )
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grad[:, :10], expected_grad, rtol=1e-5, atol=1e-7)
    assert (grad[:, 10:] == 0).all()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_queries_without_relevant_items_give_zero_with_zero_gradient(name):
    loss = LOSSES[name]
    scores = jnp.array([[0.3, -1.0, 2.0, 0.5], [0.3, -1.0, 2.0, 0.5], [1.0, 2.0, 3.0, 4.0]])
    relevance = jnp.array([[0, 0, 0, 0], [0, 0, 1, 2], [0, 0, 0, 3]], jnp.float32)
    mask = jnp.array([[1, 1, 1, 1], [1, 1, 0, 0], [0, 0, 0, 0]], jnp.float32)
    value, grad = jax.jit(
        jax.value_and_grad(lambda s: loss(s, relevance, sample_weight=mask).sum())
    )(scores)
    assert float(value) == 0.0
    assert (np.asarray(grad) == 0).all()


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_finite_values_and_gradients_at_extreme_scores(name):
    temperature = 0.01  # score differences of 2e6 temperatures
    loss = LOSSES[name]
    scores = jnp.array([[1e4, -1e4, 3e3, -2e3, 0.0]] * 3, jnp.float32)
    relevance = jnp.array([[0, 3, 1, 0, 2], [0, 0, 0, 0, 0], [1, 1, 1, 1, 1]], jnp.float32)
    mask = jnp.array([[1, 1, 1, 1, 1], [1, 1, 1, 1, 1], [1, 0, 1, 0, 1]], jnp.float32)
    f = lambda s: loss(s, relevance, temperature=temperature, sample_weight=mask)  # noqa: E731
    values = f(scores)
    grad = jax.jit(jax.grad(lambda s: f(s).sum()))(scores)
    assert np.isfinite(np.asarray(values)).all() and np.isfinite(np.asarray(grad)).all()
    assert float(values[1]) == 0.0


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_batch_axes_eager_jit_and_vmap_agree(rng, name):
    loss = LOSSES[name]
    scores, relevance, mask = queries(rng, num_queries=6)
    shared = relevance[0]  # broadcasts against the scores' batch axes
    batched, batched_mask = scores.reshape(2, 3, -1), mask.reshape(2, 3, -1)
    eager = loss(batched, shared, sample_weight=batched_mask)
    assert eager.shape == (2, 3)
    jitted = jax.jit(lambda s, w: loss(s, shared, sample_weight=w))(batched, batched_mask)
    mapped = jax.jit(jax.vmap(lambda s, w: loss(s, shared, sample_weight=w)))(scores, mask)
    np.testing.assert_allclose(eager.reshape(-1), mapped, rtol=1e-6)
    np.testing.assert_allclose(jitted.reshape(-1), mapped, rtol=1e-6)


@pytest.mark.parametrize("name", sorted(LOSSES))
def test_bad_input_raises_eagerly_and_marks_its_query_under_jit(rng, name):
    loss = LOSSES[name]
    scores, relevance, mask = queries(rng, num_queries=2, m=6)
    bad = scores.copy()
    bad[1, 3] = np.nan
    with pytest.raises(ValueError, match=r"`scores` must be finite; found nan at index \(1, 3\)"):
        loss(bad, relevance)
    negative = relevance.copy()
    negative[0, 2] = -1
    with pytest.raises(ValueError, match=r"`relevance` must be non-negative and finite"):
        loss(scores, negative)
    half = mask.copy()
    half[0, 1] = 0.5
    with pytest.raises(ValueError, match=r"`sample_weight` must be 0 or 1"):
        loss(scores, relevance, sample_weight=half)
    for temperature in (0.0, -1.0, float("nan")):
        with pytest.raises(ValueError, match="`temperature` must be > 0"):
            loss(scores, relevance, temperature=temperature)
    with pytest.raises(ValueError, match="`relevance` must have the same number of samples"):
        loss(scores, relevance[:, :4])
    jitted = jax.jit(lambda s: loss(s, relevance))(bad)
    assert np.isfinite(float(jitted[0])) and math.isnan(float(jitted[1]))


def test_float64_under_x64(rng, x64):
    scores, relevance, mask = queries(rng, num_queries=2)
    for name, loss in LOSSES.items():
        value, grad = jax.jit(
            jax.value_and_grad(lambda s, loss=loss: loss(s, relevance, sample_weight=mask).sum())
        )(jnp.asarray(scores, jnp.float64))
        assert value.dtype == grad.dtype == np.float64, name
