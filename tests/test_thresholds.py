import logging
import math

import jax
import numpy as np
import pytest
from conftest import tied_problem

import jaxmetrics as jm


def brute_force(scores, labels, weights, value_of, feasible_of=lambda c: True, prefer_low=True):
    """Every distinct score as a threshold, scored from its own confusion counts."""
    w = np.ones_like(scores, dtype=np.float64) if weights is None else weights.astype(np.float64)
    best = None
    for t in sorted(set(scores[w > 0].tolist()), reverse=not prefer_low):
        flagged = scores >= t
        c = dict(
            tp=(w * flagged * labels).sum(),
            fp=(w * flagged * (1 - labels)).sum(),
            fn=(w * ~flagged * labels).sum(),
            tn=(w * ~flagged * (1 - labels)).sum(),
        )
        value = value_of(c)
        if feasible_of(c) and not math.isnan(value) and (best is None or value > best[0] + 1e-12):
            best = (value, t)
    return best


def precision_of(c):
    return c["tp"] / (c["tp"] + c["fp"]) if c["tp"] + c["fp"] else math.nan


def recall_of(c):
    return c["tp"] / (c["tp"] + c["fn"])


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("beta", [0.5, 1.0, 2.0])
def test_max_f_beta_against_brute_force(rng, weighted, beta):
    scores, labels, weights = tied_problem(rng, n=120, levels=30, weighted=weighted)
    b2 = beta * beta
    value, threshold = brute_force(
        scores,
        labels,
        weights,
        lambda c: (1 + b2) * c["tp"] / ((1 + b2) * c["tp"] + b2 * c["fn"] + c["fp"]),
    )
    got_value, got_threshold = jm.max_f_beta(scores, labels, beta=beta, sample_weight=weights)
    assert float(got_value) == pytest.approx(value, abs=1e-6)
    assert float(got_threshold) == pytest.approx(threshold)


@pytest.mark.parametrize("floor", [0.3, 0.6, 0.9])
def test_recall_at_precision_against_brute_force(rng, floor):
    scores, labels, _ = tied_problem(rng, n=150, levels=40)
    expected = brute_force(
        scores, labels, None, recall_of, lambda c: precision_of(c) >= floor, prefer_low=False
    )
    value, threshold = jm.recall_at_precision(scores, labels, min_precision=floor)
    if expected is None:
        assert math.isnan(float(value)) and math.isnan(float(threshold))
    else:
        assert float(value) == pytest.approx(expected[0], abs=1e-6)
        assert float(threshold) == pytest.approx(expected[1])


@pytest.mark.parametrize("floor", [0.5, 0.8, 0.95])
def test_precision_at_recall_against_brute_force(rng, floor):
    scores, labels, _ = tied_problem(rng, n=150, levels=40)
    expected = brute_force(scores, labels, None, precision_of, lambda c: recall_of(c) >= floor)
    value, threshold = jm.precision_at_recall(scores, labels, min_recall=floor)
    assert float(value) == pytest.approx(expected[0], abs=1e-6)
    assert float(threshold) == pytest.approx(expected[1])


def test_floors_are_compared_exactly():
    """A precision or recall floor just above a rate k/m excludes it, although float32 rounds both
    to one number (issue 25); the rule is float64's (1/5 meets 0.2), as in the oracle."""
    scores = np.array([0.9, 0.8, 0.7, 0.6, 0.5, 0.4, 0.3, 0.2, 0.1])
    labels = np.array([1, 0, 1, 1, 0, 1, 0, 1, 0])
    rates = sorted({k / m for m in range(1, 10) for k in range(m + 1)})
    for level in [0.66666667, *rates, *(r + 1e-9 for r in rates if r < 1)]:
        for function, rate_of, floor_of in (
            (jm.recall_at_precision, recall_of, precision_of),
            (jm.precision_at_recall, precision_of, recall_of),
        ):
            floor = "min_precision" if function is jm.recall_at_precision else "min_recall"

            def feasible(c, floor_of=floor_of, level=level):
                value = floor_of(c)  # float64, correctly rounded
                return not math.isnan(value) and value >= level

            low = function is jm.precision_at_recall
            expected = brute_force(scores, labels, None, rate_of, feasible, prefer_low=low)
            got = function(scores, labels, **{floor: level})
            if expected is None:
                assert math.isnan(float(got.value)), (function.__name__, level)
            else:
                assert float(got.threshold) == expected[1], (function.__name__, level)


def test_min_expected_cost_against_brute_force(rng):
    scores, labels, _ = tied_problem(rng, n=150, levels=40)
    cost = brute_force(scores, labels, None, lambda c: -(5 * c["fp"] + 50 * c["fn"]) / scores.size)
    value, threshold = jm.min_expected_cost(scores, labels, cost_fp=5, cost_fn=50)
    assert float(value) == pytest.approx(-cost[0], rel=1e-6)
    assert float(threshold) == pytest.approx(cost[1])
    # when misses are cheap, flagging nothing is best: threshold +inf
    value, threshold = jm.min_expected_cost(scores, labels, cost_fp=50, cost_fn=0.01)
    assert float(threshold) == math.inf
    assert float(value) == pytest.approx(0.01 * labels.mean(), rel=1e-6)


def test_bayes_threshold_of_a_miss_costing_100_false_alarms():
    assert jm.bayes_threshold(cost_fp=5, cost_fn=500) == pytest.approx(5 / 505)
    assert jm.bayes_threshold(cost_fp=1, cost_fn=1) == 0.5
    with pytest.raises(ValueError, match="costs"):
        jm.bayes_threshold(cost_fp=0, cost_fn=0)


def test_budget_threshold_tie_rule():
    budget = jm.budget_threshold([0.9, 0.5, 0.5, 0.5, 0.1], k=2)
    assert float(budget.threshold) == 0.5 and int(budget.value) == 4  # >= selects the whole tie
    with pytest.raises(ValueError, match="`k`"):
        jm.budget_threshold([0.9, 0.5], k=3)


def test_no_feasible_threshold_is_nan():
    value, threshold = jm.recall_at_precision([0.9, 0.1], [0, 1], min_precision=0.99)
    assert math.isnan(float(value)) and math.isnan(float(threshold))


def test_an_eager_budget_threshold_compiles_one_program_for_every_budget(caplog):
    # it ran operation by operation: 15 programs to compile for a first call on new shapes
    rng = np.random.default_rng(3)
    jm.budget_threshold(rng.random((3, 7)).astype(np.float32), k=2)  # other shapes first
    scores = np.round(rng.random((2, 11)), 1).astype(np.float32)  # ties at the k-th place

    def compiled(k: int) -> tuple[list[str], jm.BudgetChoice]:
        caplog.clear()
        with caplog.at_level(logging.WARNING), jax.log_compiles():
            choice = jm.budget_threshold(scores, k=k)
        messages = [r.getMessage() for r in caplog.records]
        return [m for m in messages if m.startswith("Compiling")], choice

    first, _ = compiled(3)
    assert len(first) == 1 and "jit(_budget)" in first[0], first
    for k in (1, 4, 11):
        again, (value, threshold) = compiled(k)
        assert again == []  # another budget: the same program
        expected = -np.sort(-scores, axis=-1)[:, k - 1]  # the k-th largest of each row
        np.testing.assert_array_equal(threshold, expected)
        np.testing.assert_array_equal(value, (scores >= expected[:, None]).sum(-1))
