import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from sklearn import metrics as skm

from jaxmetrics._src.metrics.label_ranking import (
    coverage_error,
    label_ranking_average_precision,
    label_ranking_loss,
)

# ours, scikit-learn's (a mean over samples), and the value scikit-learn gives a sample where
# ours is NaN (None: ours is never NaN on valid input)
METRICS = {
    "lrap": (label_ranking_average_precision, skm.label_ranking_average_precision_score, 1.0),
    "coverage": (coverage_error, skm.coverage_error, None),
    "loss": (label_ranking_loss, skm.label_ranking_loss, 0.0),
}
NAN = math.nan

# (labels, scores, (lrap, coverage, loss)): scikit-learn's test_ranking.py toy cases, written
# from the definitions; NaN where a sample has no relevant label (LRAP) or no pair (loss)
TOY_CASES = [
    ([0, 1], [0.25, 0.75], (1, 1, 0)),
    ([0, 1], [0.75, 0.25], (1 / 2, 2, 1)),
    ([1, 1], [0.75, 0.25], (1, 2, NAN)),
    ([0, 0], [0.75, 0.25], (NAN, 0, NAN)),
    ([0, 0, 1], [0.25, 0.5, 0.75], (1, 1, 0)),
    ([0, 1, 0], [0.25, 0.5, 0.75], (1 / 2, 2, 1 / 2)),
    ([0, 1, 1], [0.25, 0.5, 0.75], (1, 2, 0)),
    ([1, 0, 0], [0.25, 0.5, 0.75], (1 / 3, 3, 1)),
    ([1, 0, 1], [0.25, 0.5, 0.75], ((2 / 3 + 1) / 2, 3, 1 / 2)),
    ([1, 1, 0], [0.25, 0.5, 0.75], ((2 / 3 + 1 / 2) / 2, 3, 1)),
    ([1, 1, 1], [0.25, 0.5, 0.75], (1, 3, NAN)),
    ([0, 0, 0], [0.25, 0.5, 0.75], (NAN, 0, NAN)),
    # ties count as ranked above: a tied (relevant, irrelevant) pair is a whole error
    ([1, 0], [0.5, 0.5], (1 / 2, 2, 1)),
    ([0, 1], [0.5, 0.5], (1 / 2, 2, 1)),
    ([1, 1], [0.5, 0.5], (1, 2, NAN)),
    ([0, 0], [0.5, 0.5], (NAN, 0, NAN)),
    ([0, 0, 1], [0.25, 0.5, 0.5], (1 / 2, 2, 1 / 2)),
    ([0, 1, 0], [0.25, 0.5, 0.5], (1 / 2, 2, 1 / 2)),
    ([0, 1, 1], [0.25, 0.5, 0.5], (1, 2, 0)),
    ([1, 0, 0], [0.25, 0.5, 0.5], (1 / 3, 3, 1)),
    ([1, 0, 1], [0.25, 0.5, 0.5], ((2 / 3 + 1 / 2) / 2, 3, 1)),
    ([1, 1, 0], [0.25, 0.5, 0.5], ((2 / 3 + 1 / 2) / 2, 3, 1)),
    ([1, 1, 1], [0.5, 0.5, 0.5], (1, 3, NAN)),
    # the non-trivial rows of scikit-learn's tests
    ([0, 1, 0], [0.1, 10.0, -3.0], (1, 1, 0)),
    ([1, 1, 0], [0.0, 1.0, 3.0], ((1 / 2 + 2 / 3) / 2, 3, 1)),
    ([0, 1, 1], [0.0, 2.0, 0.0], ((1 + 2 / 3) / 2, 3, 1 / 2)),
    # scikit-learn's docstring example
    ([1, 0, 0], [0.75, 0.5, 1.0], (1 / 2, 2, 1 / 2)),
    ([0, 0, 1], [1.0, 0.2, 0.1], (1 / 3, 3, 1)),
]


def sklearn_per_sample(name, scores, labels):
    """scikit-learn's value of each sample (its mean over a one-sample problem)."""
    reference = METRICS[name][1]
    return np.array([reference(labels[i : i + 1], scores[i : i + 1]) for i in range(len(labels))])


def degenerate(name, labels, mask=None):
    """The samples where ours is NaN: no relevant label (LRAP), no pair (ranking loss)."""
    present = np.ones_like(labels) if mask is None else mask
    relevant = (labels * present).sum(-1)
    irrelevant = ((1 - labels) * present).sum(-1)
    if name == "lrap":
        return relevant == 0
    if name == "loss":
        return (relevant == 0) | (irrelevant == 0)
    return np.zeros(labels.shape[:-1], bool)


def multilabel_problem(rng, n=12, num_labels=6):
    """Scores rounded to one decimal (many ties), with an all-irrelevant and an all-relevant row."""
    scores = np.round(rng.random((n, num_labels)), 1)
    density = rng.random((n, 1))
    labels = (rng.random((n, num_labels)) < density).astype(np.int32)
    labels[0], labels[1] = 0, 1
    return scores, labels


@pytest.mark.parametrize("name", list(METRICS))
def test_toy_cases_match_definitions_and_sklearn(name):
    ours, reference, convention = METRICS[name]
    column = list(METRICS).index(name)
    for labels, scores, expected in TOY_CASES:
        value = float(ours([scores], [labels])[0])
        expected = expected[column]
        theirs = reference(np.array([labels]), np.array([scores]))
        if math.isnan(expected):
            assert math.isnan(value), (labels, scores, value)
            assert theirs == convention  # scikit-learn's made-up value for an undefined one
        else:
            assert value == pytest.approx(expected, abs=1e-6), (labels, scores)
            assert theirs == pytest.approx(expected, abs=1e-12), (labels, scores)


@pytest.mark.parametrize("name", list(METRICS))
def test_random_ties_and_sample_weights_match_sklearn(rng, name):
    ours, reference, convention = METRICS[name]
    for _ in range(3):  # three draws of one shape: one compiled program
        scores, labels = multilabel_problem(rng)
        value = np.asarray(ours(scores, labels))
        assert value.shape == (12,)
        undefined = degenerate(name, labels)
        assert undefined.any() == (convention is not None)
        np.testing.assert_array_equal(np.isnan(value), undefined)
        expected = sklearn_per_sample(name, scores, labels)
        np.testing.assert_allclose(value[~undefined], expected[~undefined], atol=1e-6)
        # scikit-learn's per-sample `sample_weight` is the weighted mean of ours over the
        # samples once its conventional value is put back where ours is undefined, and over
        # the defined samples alone (what a NaN-skipping mean gives) when they are kept alone
        sample_weight = rng.random(12)
        sample_weight[2] = 0.0
        filled = np.where(undefined, convention if convention is not None else 0.0, value)
        expected_mean = reference(labels, scores, sample_weight=sample_weight)
        assert np.average(filled, weights=sample_weight) == pytest.approx(expected_mean, abs=1e-6)
        defined = ~undefined
        expected_mean = reference(
            labels[defined], scores[defined], sample_weight=sample_weight[defined]
        )
        got = np.average(value[defined], weights=sample_weight[defined])
        assert got == pytest.approx(expected_mean, abs=1e-6)


def all_three(scores, labels, sample_weight):
    return tuple(
        ours(scores, labels, sample_weight=sample_weight) for ours, _, _ in METRICS.values()
    )


# compiled once for the whole file (dtypes kept the same: float32 scores and mask, int32 labels)
jitted_all_three = jax.jit(all_three)
vmapped_all_three = jax.jit(jax.vmap(all_three))


@pytest.mark.parametrize("name", list(METRICS))
def test_zero_weight_label_is_the_dropped_column(rng, name):
    ours, reference, _ = METRICS[name]
    scores, labels = multilabel_problem(rng, n=12, num_labels=7)
    mask = (rng.random(scores.shape) < 0.7).astype(np.int32)
    mask[2] = 0  # a sample without any label left: nothing relevant, no pair
    mask[3] = [1, 1, 0, 0, 0, 0, 0]  # two labels left
    masked = np.asarray(ours(scores, labels, sample_weight=mask))
    np.testing.assert_array_equal(np.isnan(masked), degenerate(name, labels, mask))
    for i in range(len(labels)):
        kept = mask[i] == 1
        if not kept.any():
            assert masked[i] == 0 if name == "coverage" else math.isnan(masked[i])
            continue
        dropped = float(ours(scores[i : i + 1, kept], labels[i : i + 1, kept])[0])
        np.testing.assert_equal(masked[i], dropped)
        if kept.sum() >= 2 and not math.isnan(dropped):
            theirs = reference(labels[i : i + 1, kept], scores[i : i + 1, kept])
            assert dropped == pytest.approx(theirs, abs=1e-6)
    # under jit nothing is padded: the mask alone leaves the labels out
    jitted = jitted_all_three(scores, labels, mask.astype(np.float32))[list(METRICS).index(name)]
    np.testing.assert_allclose(jitted, masked, atol=1e-6)


def test_eager_jit_vmap_and_batch_axes_agree(rng):
    # shapes and dtypes of the masked and bad-input problems: the jitted programs are shared
    scores = np.round(rng.random((2, 12, 7)), 1).astype(np.float32)
    labels = (rng.random((2, 12, 7)) < 0.4).astype(np.int32)
    labels[:, :, 0] = 1  # every sample defined
    labels[:, :, 1] = 0
    mask = (rng.random((12, 7)) < 0.8).astype(np.float32)  # broadcast over the batch axis
    mask[:, :2] = 1
    eager = np.stack(all_three(scores, labels, mask))
    assert eager.shape == (3, 2, 12)
    assert not np.isnan(eager).any()
    for b in range(2):
        np.testing.assert_array_equal(np.stack(all_three(scores[b], labels[b], mask)), eager[:, b])
    np.testing.assert_allclose(np.stack(jitted_all_three(scores, labels, mask)), eager, atol=1e-6)
    mapped = vmapped_all_three(scores, labels, np.broadcast_to(mask, scores.shape))
    np.testing.assert_allclose(np.stack(mapped), eager, atol=1e-6)
    # invariances: the order of the samples and of the labels, monotone transforms of scores
    samples, columns = rng.permutation(12), rng.permutation(7)
    permuted = all_three(
        scores[:, samples][..., columns],
        labels[:, samples][..., columns],
        mask[samples][:, columns],
    )
    np.testing.assert_allclose(np.stack(permuted), eager[..., samples], atol=1e-6)
    transformed = all_three(np.exp(3 * scores) - 7, labels, mask)
    np.testing.assert_allclose(np.stack(transformed), eager, atol=1e-6)


# float32 merges 0.5 - 1e-12, 0.5 and 0.5 + 1e-12: ranked apart, the relevant label is 2nd
CLOSE_SCORES = np.array([[0.5, 0.5 + 1e-12, 0.5 - 1e-12], [0.5 + 1e-12, 0.5, 0.5 - 1e-12]])
CLOSE_LABELS = np.array([[1, 0, 0], [0, 0, 1]])
CLOSE_EXPECTED = {"lrap": [1 / 2, 1 / 3], "coverage": [2, 3], "loss": [1 / 2, 1]}


def test_float64_scores_differing_by_1e_12_are_ranked_exactly():
    for name, (ours, _, _) in METRICS.items():
        for i in range(2):  # one sample at a time: the shape of the toy cases, compiled once
            value = ours(CLOSE_SCORES[i : i + 1], CLOSE_LABELS[i : i + 1])
            np.testing.assert_allclose(value, CLOSE_EXPECTED[name][i : i + 1])
        theirs = sklearn_per_sample(name, CLOSE_SCORES, CLOSE_LABELS)
        np.testing.assert_allclose(theirs, CLOSE_EXPECTED[name], rtol=1e-12)


def test_x64_matches_sklearn_eager_and_jit(rng, x64):
    scores, labels = multilabel_problem(rng, num_labels=8)
    scores[-2:, :3], labels[-2:, :3] = CLOSE_SCORES, CLOSE_LABELS
    labels[-2:, 3:] = 0
    scores[-2:, 3:] = 0.1
    for name, (ours, _, _) in METRICS.items():
        undefined = degenerate(name, labels)
        expected = sklearn_per_sample(name, scores, labels)
        # the close rows, with five more irrelevant labels ranked below all three
        close = {"lrap": [1 / 2, 1 / 3], "coverage": [2, 3], "loss": [1 / 7, 2 / 7]}[name]
        np.testing.assert_allclose(expected[-2:], close, rtol=1e-12)
        for value in (ours(scores, labels), jax.jit(ours)(scores, labels)):
            assert value.dtype == jnp.float64
            np.testing.assert_array_equal(np.isnan(value), undefined)
            np.testing.assert_allclose(
                np.asarray(value)[~undefined], expected[~undefined], rtol=1e-12
            )


def bad_inputs(rng):
    # the shapes and dtypes of the masked problem: the jitted programs are shared
    scores = np.round(rng.random((12, 7)), 1).astype(np.float32)
    labels = np.tile(np.array([1, 0, 1, 0, 0, 1, 0], np.int32), (12, 1))
    mask = np.ones((12, 7), np.float32)
    return scores, labels, mask


@pytest.mark.parametrize(
    ("argument", "row", "value", "message"),
    [
        ("scores", 1, np.nan, "`scores` must be finite; found NaN at index \\(1, 2\\)"),
        ("scores", 1, np.inf, "`scores` must be finite; found inf"),
        ("labels", 3, 2, "`labels` must contain only 0 and 1.*found 2 at index \\(3, 2\\)"),
        ("sample_weight", 4, 0.5, "`sample_weight` must be 0 or 1.*found 0.5 at index \\(4, 2\\)"),
        ("sample_weight", 4, -1, "`sample_weight` must be 0 or 1.*found -1.0"),
        ("sample_weight", 4, np.nan, "`sample_weight` must be 0 or 1.*found nan"),
    ],
)
def test_bad_values_raise_eagerly_and_are_nan_under_jit_and_vmap(
    rng, argument, row, value, message
):
    clean = dict(zip(("scores", "labels", "sample_weight"), bad_inputs(rng)))
    bad = {key: array.copy() for key, array in clean.items()}
    bad[argument][row, 2] = value
    for ours, _, _ in METRICS.values():
        with pytest.raises(ValueError, match=message):
            ours(bad["scores"], bad["labels"], sample_weight=bad["sample_weight"])
    expected = np.stack(all_three(*clean.values()))
    stacked = [np.stack([clean[key], bad[key]]) for key in clean]
    for got in (jitted_all_three(*bad.values()), vmapped_all_three(*stacked)):
        got = np.stack(got)
        if got.ndim == 3:  # vmapped: the clean batch element is untouched
            np.testing.assert_allclose(got[:, 0], expected, atol=1e-6)
            got = got[:, 1]
        assert np.isnan(got[:, row]).all()
        others = np.arange(12) != row
        np.testing.assert_allclose(got[:, others], expected[:, others], atol=1e-6)


def test_layout_errors():
    with pytest.raises(ValueError, match="`scores` must have shape \\[\\*batch, n, L\\]"):
        label_ranking_loss([0.2, 0.7], [0, 1])
    with pytest.raises(ValueError, match="`labels` must have the same number"):
        coverage_error([[0.2, 0.7, 0.1]], [[0, 1]])
    with pytest.raises(ValueError, match="`sample_weight` must have the same number"):
        label_ranking_average_precision([[0.2, 0.7]], [[0, 1]], sample_weight=[[1]])
