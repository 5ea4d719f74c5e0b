import math
import pathlib
from fractions import Fraction

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from conftest import tied_problem

import jaxmetrics as jm
from jaxmetrics._src.metrics.operating_points import (
    closest_to_corner_threshold,
    roc_band,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    youden_threshold,
)

ASAH = np.genfromtxt(pathlib.Path(__file__).parent / "data" / "asah.csv", delimiter=",", names=True)
OUTCOME = ASAH["poor_outcome"].astype(np.int32)  # 41 poor (cases), 72 good (controls)

SEARCHES = {
    "youden": lambda s, y, w, level: youden_threshold(s, y, sample_weight=w),
    "corner": lambda s, y, w, level: closest_to_corner_threshold(s, y, sample_weight=w),
    "sensitivity": lambda s, y, w, level: sensitivity_at_specificity(
        s, y, min_specificity=level, sample_weight=w
    ),
    "specificity": lambda s, y, w, level: specificity_at_sensitivity(
        s, y, min_sensitivity=level, sample_weight=w
    ),
}


def brute_force(scores, labels, weights, criterion, level=0.0):
    """Every distinct score (and +inf for the floors) as a threshold, in exact fractions."""
    w = np.ones(scores.size, np.int64) if weights is None else weights.astype(np.int64)
    positives, negatives = int((w * labels).sum()), int((w * (1 - labels)).sum())
    thresholds = sorted(set(scores[w > 0].tolist()))
    if criterion in ("sensitivity", "specificity"):
        thresholds.append(math.inf)  # flag nothing
    if criterion != "specificity":  # ties go to the highest threshold: try it first
        thresholds.reverse()
    best = None
    for t in thresholds:
        flagged = scores >= t
        sens = Fraction(int((w * flagged * labels).sum()), positives)
        spec = Fraction(int((w * ~flagged * (1 - labels)).sum()), negatives)
        if criterion == "youden":
            key, value, feasible = sens + spec, float(sens + spec - 1), True
        elif criterion == "corner":
            square = (1 - sens) ** 2 + (1 - spec) ** 2
            key, value, feasible = -square, math.sqrt(square), True
        elif criterion == "sensitivity":
            key, value, feasible = sens, float(sens), float(spec) >= level
        else:
            key, value, feasible = spec, float(spec), float(sens) >= level
        if feasible and (best is None or key > best[0]):
            best = (key, value, t, float(sens), float(spec))
    return best[1:]


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize(
    "criterion, level",
    [("youden", 0), ("corner", 0), ("sensitivity", 0.8), ("specificity", 0.7)],
)
def test_against_brute_force_on_tied_data(rng, criterion, level, weighted):
    scores, labels, weights = tied_problem(rng, n=32, levels=10, weighted=weighted)
    expected = brute_force(scores, labels, weights, criterion, level)
    point = SEARCHES[criterion](scores, labels, weights, level)
    assert float(point.threshold) == expected[1]
    np.testing.assert_allclose(
        [point.value, point.sensitivity, point.specificity],
        [expected[0], *expected[2:]],
        rtol=1e-6,
    )


@pytest.mark.parametrize("criterion", ["sensitivity", "specificity"])
def test_floors_are_compared_exactly(criterion):
    """A floor just above a rate k/m excludes it although float32 rounds both alike (issue 25:
    0.66666667 admitted a specificity of 2/3); the rule is float64's (the oracle's: 1/5 meets
    0.2)."""
    scores = np.array([0.1, 0.2, 0.6, 0.5, 0.9, 0.7, 0.3, 0.8, 0.4])
    labels = np.array([0, 0, 0, 1, 1, 1, 0, 1, 1])
    levels = [k / m + shift for m in (3, 4, 5) for k in range(1, m) for shift in (0, 1e-8, -1e-8)]
    search = jax.jit(SEARCHES[criterion], static_argnums=3)
    for level in [0.66666667, *levels]:
        expected = brute_force(scores, labels, None, criterion, level)
        assert float(SEARCHES[criterion](scores, labels, None, level).threshold) == expected[1]
        assert float(search(scores, labels, None, level).threshold) == np.float32(expected[1])
    band = roc_band(
        scores, labels, specificities=[0.66666667, 2 / 3], key=jax.random.key(0), num_resamples=8
    )
    expected = [brute_force(scores, labels, None, "sensitivity", s)[0] for s in band.specificity]
    np.testing.assert_array_equal(band.sensitivity, np.float32(expected))


@pytest.mark.usefixtures("x64")
def test_against_brute_force_in_float64(rng):
    scores, labels, weights = tied_problem(rng, n=200, levels=60, weighted=True)
    for criterion in ("youden", "corner"):
        expected = brute_force(scores, labels, weights, criterion)
        point = SEARCHES[criterion](scores.astype(np.float64), labels, weights, 0)
        assert float(point.threshold) == expected[1]
        np.testing.assert_allclose(
            [point.value, point.sensitivity, point.specificity],
            [expected[0], *expected[2:]],
            rtol=1e-12,
        )


def test_tie_rules_and_flag_nothing():
    scores = [4.0, 3.0, 2.0, 1.0]
    # Youden J and the distance tie at 4 and 2: the highest threshold
    assert float(youden_threshold(scores, [1, 0, 1, 0]).threshold) == 4
    assert float(closest_to_corner_threshold(scores, [1, 0, 1, 0]).threshold) == 4
    # sensitivity 1/2 at 4 and 3: the highest threshold, specificity 1
    point = sensitivity_at_specificity(scores, [1, 0, 0, 1], min_specificity=0.5)
    assert (float(point.threshold), float(point.specificity)) == (4, 1)
    # specificity 1/2 at 3 and 2: the lowest threshold, sensitivity 1
    point = specificity_at_sensitivity(scores, [0, 1, 1, 0], min_sensitivity=0.5)
    assert (float(point.threshold), float(point.sensitivity)) == (2, 1)
    # the top score is a control: only flagging nothing has specificity 1
    point = sensitivity_at_specificity([4.0, 3.0], [0, 1], min_specificity=1)
    assert tuple(map(float, point)) == (0, math.inf, 0, 1)
    point = specificity_at_sensitivity([4.0, 3.0], [0, 1], min_sensitivity=0)
    assert (float(point.value), float(point.threshold)) == (1, math.inf)


# pROC's best thresholds on aSAH (roc(outcome, marker), direction "<"): its threshold is the
# midpoint between neighbouring values (wfns, an ordered factor: the level itself), with the
# sensitivity and specificity there. s100b: test-coords.R ("coords with best threshold works",
# expected.coords); wfns and ndka: the best rows of pROC's published curves (expected.roc in
# helper-roc-expected.R).
PROC_BEST = [
    ("s100b", "youden", 0.205, 26 / 41, 58 / 72),
    ("s100b", "corner", 0.205, 26 / 41, 58 / 72),
    ("wfns", "youden", 4, 26 / 41, 60 / 72),
    ("wfns", "corner", 3, 27 / 41, 57 / 72),
    ("ndka", "youden", 11.08, 29 / 41, 37 / 72),
    ("ndka", "corner", 12.73, 24 / 41, 45 / 72),
]


@pytest.mark.parametrize("marker, criterion, proc_threshold, sens, spec", PROC_BEST)
def test_proc_best_thresholds_on_asah(marker, criterion, proc_threshold, sens, spec):
    scores = ASAH[marker]
    point = SEARCHES[criterion](scores, OUTCOME, None, 0)
    # the same rule: flag the scores above pROC's midpoint, i.e. >= the next score up
    assert float(point.threshold) == scores[scores >= proc_threshold].min()
    np.testing.assert_allclose([point.sensitivity, point.specificity], [sens, spec], rtol=1e-6)
    if criterion == "youden":
        assert float(point.value) == pytest.approx(sens + spec - 1, rel=1e-6)
    else:
        assert float(point.value) ** 2 == pytest.approx((1 - sens) ** 2 + (1 - spec) ** 2)
    if marker == "s100b":  # expected.coords at 0.205: youden 1.43970..., closest.topleft 0.17165...
        expected = 1.43970189701897 - 1 if criterion == "youden" else 0.171657541439913**0.5
        assert float(point.value) == pytest.approx(expected, rel=1e-6)


def test_proc_coords_at_a_floor_on_s100b():
    scores = ASAH["s100b"]
    # test-coords.R, "Coords pick the right end of 'flat' bits of the curve": attained floors
    point = sensitivity_at_specificity(scores, OUTCOME, min_specificity=1)
    assert float(point.value) == pytest.approx(0.2926829268292683, rel=1e-6)
    point = specificity_at_sensitivity(scores, OUTCOME, min_sensitivity=40 / 41)
    assert float(point.value) == pytest.approx(0.13888888888888889, rel=1e-6)
    # "coords with specificity works": pROC interpolates between the points around a floor
    # that no threshold attains, so its sensitivity lies between ours at the floor and ours at
    # the largest attained specificity below it (equal at the attained ends 0 and 1)
    proc = [1, 0.975609756097561, 0.921951219512195, 0.879674796747967, 0.823693379790941]
    proc += [0.774390243902439, 0.675609756097561, 0.655284552845528, 0.634146341463415]
    proc += [0.390243902439024, 0.292682926829268]
    controls = scores[OUTCOME == 0]
    attained = np.array([np.mean(controls < t) for t in np.unique(scores)] + [1.0])
    for level, expected in zip(np.linspace(0, 1, 11), proc):
        ours = float(sensitivity_at_specificity(scores, OUTCOME, min_specificity=level).value)
        below = attained[attained < level - 1e-12]
        above = ours
        if below.size:
            above = sensitivity_at_specificity(scores, OUTCOME, min_specificity=below.max())
            above = float(above.value)
        assert ours - 1e-6 <= expected <= above + 1e-6, level
    assert ours == pytest.approx(proc[-1], rel=1e-6)


@pytest.mark.parametrize("criterion, level", [("youden", 0), ("sensitivity", 0.6)])
def test_integer_weights_equal_repeated_rows(rng, criterion, level):
    scores, labels, _ = tied_problem(rng, n=14, levels=5)
    counts = rng.integers(0, 3, scores.size)
    counts[:2] = 1
    weighted = SEARCHES[criterion](scores, labels, counts, level)
    repeated = SEARCHES[criterion](
        np.repeat(scores, counts), np.repeat(labels, counts), None, level
    )
    np.testing.assert_allclose(np.array(weighted, float), np.array(repeated, float), rtol=1e-6)


@pytest.mark.parametrize("criterion", ["youden", "corner"])
def test_huge_weights_choose_the_same_point(rng, criterion):
    """Weights times 2^100 (exact in float32): the same point. Youden's key tp N - fp P and the
    corner's (fn N)^2 + (fp P)^2 overflowed float32 (inf - inf): J of 0.17 instead of 0.38,
    and the corner's search flagged nothing."""
    scores, labels, weights = tied_problem(rng, n=200, weighted=True)
    search = SEARCHES[criterion]
    base = search(scores, labels, weights, 0.0)
    huge = weights * np.float32(2.0**100)
    for got in (search(scores, labels, huge, 0.0), jax.jit(search)(scores, labels, huge, 0.0)):
        assert np.isfinite(float(got.threshold))
        np.testing.assert_allclose(got, base, rtol=1e-6)


def test_eager_jit_vmap_and_batch_agree(rng):
    criterion, level = "specificity", 0.9  # the criterion is traced: one program serves all
    rows = [tied_problem(rng, n=32, levels=10) for _ in range(3)]
    scores = np.stack([r[0] for r in rows])
    labels = np.stack([r[1] for r in rows])
    search = SEARCHES[criterion]
    one_by_one = np.array([search(s, y, None, level) for s, y in zip(scores, labels)], float)
    batched = np.array(search(scores, labels, None, level), float).T
    jitted = jax.jit(lambda s, y: search(s, y, None, level))(scores, labels)
    mapped = jax.jit(jax.vmap(lambda s, y: search(s, y, None, level)))(scores, labels)
    for result in (batched, np.array(jitted, float).T, np.array(mapped, float).T):
        np.testing.assert_allclose(result, one_by_one, rtol=1e-6)


def test_order_and_monotone_transform_invariance(rng):
    scores, labels, weights = tied_problem(rng, n=32, levels=10, weighted=True)
    point = youden_threshold(scores, labels, sample_weight=weights)
    order = rng.permutation(scores.size)
    moved = youden_threshold(
        np.exp(scores[order].astype(np.float64)), labels[order], sample_weight=weights[order]
    )
    assert float(moved.threshold) == np.exp(np.float64(float(point.threshold)))
    np.testing.assert_array_equal(np.array(moved[2:]), np.array(point[2:]))


def test_float64_scores_are_exact_eagerly():
    scores = 1 + np.arange(6) * 1e-12  # one float32 value
    point = youden_threshold(scores, [0, 0, 1, 0, 1, 1])  # J = 2/3 at scores[4] and scores[2]
    assert float(point.threshold) == scores[4]
    assert float(point.value) == pytest.approx(2 / 3)


def test_undefined_and_bad_input():
    point = youden_threshold([0.3, 0.2], [0, 0])  # no case: sensitivity undefined
    assert all(math.isnan(float(x)) for x in point)
    with pytest.raises(ValueError, match=r"`scores` must be finite; found NaN at index 3"):
        youden_threshold([0.1, 0.2, 0.3, np.nan], [0, 1, 0, 1])
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 1"):
        closest_to_corner_threshold([0.1, 0.2], [0, 2])
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative.*at index 0"):
        sensitivity_at_specificity([0.1, 0.2], [0, 1], min_specificity=0.5, sample_weight=[-1, 1])
    with pytest.raises(ValueError, match=r"`min_specificity` must be a number in \[0, 1\]"):
        sensitivity_at_specificity([0.1, 0.2], [0, 1], min_specificity=1.5)
    with pytest.raises(ValueError, match=r"`min_sensitivity` must be a number in \[0, 1\]"):
        specificity_at_sensitivity([0.1, 0.2], [0, 1], min_sensitivity=-0.1)
    with pytest.raises(
        ValueError, match=r"`specificities` must be in \[0, 1\]; found 1.2 at index 1"
    ):
        roc_band([0.1, 0.2], [0, 1], specificities=[0.5, 1.2], key=jax.random.key(0))
    scores = jnp.array([[0.1, 0.2, 0.3, 0.4], [0.1, 0.2, jnp.nan, 0.4]])
    point = jax.jit(lambda s: youden_threshold(s, jnp.array([0, 1, 0, 1])))(scores)
    assert not np.isnan(np.array(point)[:, 0]).any() and np.isnan(np.array(point)[:, 1]).all()


def _sensitivity_at_90(scores, labels, sample_weight):
    """pROC's ci.se at specificity 0.9, as `bootstrap` takes it (one field, an array)."""
    point = sensitivity_at_specificity(
        scores, labels, min_specificity=0.9, sample_weight=sample_weight
    )
    return point.value


def _sensitivity_at_50(scores, labels, sample_weight):
    point = sensitivity_at_specificity(
        scores, labels, min_specificity=0.5, sample_weight=sample_weight
    )
    return point.value


def test_bootstrap_of_sensitivity_at_90_specificity():
    scores = ASAH["s100b"]
    run = lambda seed: jm.bootstrap(  # noqa: E731
        _sensitivity_at_90,
        scores,
        OUTCOME,
        key=jax.random.key(seed),
        num_resamples=200,
        stratify=OUTCOME,
    )
    result = run(0)
    assert float(result.estimate) == pytest.approx(16 / 41, rel=1e-6)  # pROC: 0.390243902439024
    assert float(result.low) <= float(result.estimate) <= float(result.high)
    assert int(result.num_undefined) == 0  # stratified: both classes in every resample
    np.testing.assert_array_equal(run(0).samples, result.samples)
    assert not np.array_equal(run(1).samples, result.samples)


def test_roc_band_equals_per_level_bootstraps():
    # two models on shared resamples, unit weights (they multiply the resample counts)
    scores, key = np.stack([ASAH["s100b"], ASAH["ndka"]]), jax.random.key(7)
    band = roc_band(
        scores,
        OUTCOME,
        specificities=[0.5, 0.9],
        key=key,
        num_resamples=200,
        sample_weight=np.ones(scores.shape[-1]),
    )
    assert band.sensitivity.shape == band.low.shape == band.high.shape == (2, 2)
    assert np.all(band.low <= band.sensitivity) and np.all(band.sensitivity <= band.high)
    for i, metric in enumerate((_sensitivity_at_50, _sensitivity_at_90)):
        alone = jm.bootstrap(
            metric, scores[0], OUTCOME, key=key, num_resamples=200, stratify=OUTCOME
        )
        np.testing.assert_array_equal(
            [band.sensitivity[0, i], band.low[0, i], band.high[0, i]],
            [alone.estimate, alone.low, alone.high],
        )
        point = sensitivity_at_specificity(scores[1], OUTCOME, min_specificity=[0.5, 0.9][i])
        assert float(band.sensitivity[1, i]) == float(point.value)


def _sensitivities_oracle(scores, labels, weights, levels):
    """The most sensitive threshold whose specificity meets each floor, by brute force over the
    scores that carry weight (and "flag nothing"), compared as exact fractions."""
    p, n = weights[labels == 1].sum(), weights[labels == 0].sum()
    carried = np.unique(scores[weights > 0])
    thresholds = [*carried, np.inf]
    found = []
    for level in levels:
        best = 0.0
        for t in thresholds:
            flagged = scores >= t
            tn = weights[(labels == 0) & ~flagged].sum()
            if Fraction(int(tn)) >= Fraction(level) * int(n):
                best = max(best, weights[(labels == 1) & flagged].sum() / p)
        found.append(best)
    return np.array(found)


def test_sensitivities_at_floors_skip_groups_without_weight():
    """`SensitivitiesAt` on resample-like weights (many zero, tie groups with no weight at
    all), floors met exactly by some thresholds: the brute-force answer, with numpy's kernels
    and with XLA's."""
    rng = np.random.default_rng(3)
    scores = rng.integers(0, 12, 60).astype(np.float32) / 12  # 12 tie groups
    labels = (rng.random(60) < 0.4).astype(np.int32)
    weights = rng.poisson(0.7, (6, 60)).astype(np.int32)
    weights[:, scores == scores[0]] = 0  # a whole tie group without weight
    levels = (0.0, 0.25, 0.5, 0.75, 0.9, 1.0)
    at = jm.SensitivitiesAt(levels)
    expected = [_sensitivities_oracle(scores, labels, w, levels) for w in weights]
    negatives = (weights * (1 - labels)).sum(-1)
    assert (negatives % 4 == 0).any() and ((weights * labels).sum(-1) > 0).all()
    eager = at(scores, labels, sample_weight=weights)
    with jm.xla_kernels():
        compiled = jax.jit(lambda w: at(scores, labels, sample_weight=w))(weights)
    np.testing.assert_allclose(eager, expected, rtol=1e-6)
    np.testing.assert_allclose(compiled, expected, rtol=1e-6)
