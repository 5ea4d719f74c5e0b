"""pROC's partial AUC, unpaired DeLong test and power calculations, against pROC's own tests.

Expected numbers are those of pROC's test suite (xrobin/pROC, tests/testthat/test-auc.R,
helper-partial-auc-boundary-expected.R, test-roc.test.R, test-power.roc.test.R) on the aSAH data
(tests/data/asah.csv); pROC's `r.wfns`, `r.s100b`, `r.ndka` are the curves of poor_outcome by
those markers, all with pROC's direction "<" (larger is more positive).
"""

import math
from pathlib import Path

import jax
import numpy as np
import pytest
from scipy import stats

from jaxmetrics._src.metrics.partial_auc import partial_roc_auc
from jaxmetrics._src.metrics.ranking import roc_auc
from jaxmetrics._src.stats.delong import delong, delong_test
from jaxmetrics._src.stats.delong_unpaired import delong_test_unpaired
from jaxmetrics._src.stats.power import auc_power, auc_sample_size, delong_power, delong_sample_size

ASAH = np.genfromtxt(Path(__file__).parent / "data" / "asah.csv", delimiter=",", names=True)
LABELS = ASAH["poor_outcome"].astype(np.int32)
MARKERS = {name: ASAH[name].astype(np.float32) for name in ("wfns", "s100b", "ndka")}
AUC = {"wfns": 0.823678861788618, "s100b": 0.731368563685637, "ndka": 0.611957994579946}


def weighted_problem(rng):
    """Two tied models on aSAH's number of samples, with integer weights that also sum to it,
    so that the repeated rows reuse the programs compiled for aSAH."""
    n = len(LABELS)
    labels = rng.integers(0, 2, n)
    scores = rng.integers(0, 7, (2, n)).astype(np.float32) + labels * rng.integers(0, 3, n)
    weights = np.ones(n, np.int64)
    moved = rng.permutation(np.arange(4, n))[:40]
    weights[moved[:20]], weights[moved[20:]] = 0, 2
    labels[:4] = [0, 1, 0, 1]
    return scores, labels, weights


def proc_partial_auc(scores, labels, bounds, focus, correct=False):
    """pROC's ``auc(roc, partial.auc=bounds, partial.auc.focus=focus)`` in our API."""
    high, low = max(bounds), min(bounds)
    if focus == "specificity":  # specificities (high, low) are false positive rates 1 - high..
        return float(
            partial_roc_auc(scores, labels, fpr_range=(1 - high, 1 - low), correct=correct)
        )
    return float(partial_roc_auc(scores, labels, tpr_range=(low, high), correct=correct))


# test-auc.R: (marker, partial.auc, focus, correct) -> value; NaN is pROC's NA (with a warning)
# fmt: off
PROC_PARTIAL_AUC = [
    ("wfns", (1, .9), "specificity", False, 0.0334417344173442),
    ("wfns", (.9, .8), "specificity", False, 0.0598373983739837),
    ("wfns", (.5, 0), "specificity", False, 0.488134475939354),
    ("ndka", (1, .9), "specificity", False, 0.0107046070460705),
    ("ndka", (.9, .8), "specificity", False, 0.0277777777777778),
    ("ndka", (.5, 0), "specificity", False, 0.416836043360434),
    ("wfns", (1, .9), "sensitivity", False, 0.0400999322493225),
    ("wfns", (.9, .8), "sensitivity", False, 0.0609953703703703),
    ("wfns", (.5, 0), "sensitivity", False, 0.483358739837398),
    ("ndka", (1, .9), "sensitivity", False, 0.0037940379403794),
    ("ndka", (.9, .8), "sensitivity", False, 0.0242547425474255),
    ("ndka", (.5, 0), "sensitivity", False, 0.428523035230352),
    ("wfns", (1, .9), "specificity", True, 0.649693339038653),
    ("wfns", (.9, .8), "specificity", True, 0.763749402199904),
    ("wfns", (.5, 0), "specificity", True, 0.952537903757416),
    ("ndka", (1, .9), "specificity", True, 0.530024247610897),
    ("ndka", (.9, .8), "specificity", True, 0.575163398692811),
    ("ndka", (.5, 0), "specificity", True, 0.667344173441734),
    ("wfns", (1, .9), "sensitivity", True, 0.68473648552275),
    ("wfns", (.9, .8), "sensitivity", True, 0.770561002178649),
    ("wfns", (.5, 0), "sensitivity", True, 0.933434959349593),
    ("ndka", (1, .9), "sensitivity", True, math.nan),  # below the diagonal there
    ("ndka", (.9, .8), "sensitivity", True, 0.554439662043679),
    ("ndka", (.5, 0), "sensitivity", True, 0.714092140921409),
]
# fmt: on


@pytest.mark.parametrize("marker, bounds, focus, correct, expected", PROC_PARTIAL_AUC)
def test_partial_auc_table_of_proc(marker, bounds, focus, correct, expected):
    for ordered in (bounds, bounds[::-1]):  # "direction is unspecified"
        got = proc_partial_auc(MARKERS[marker], LABELS, ordered, focus, correct)
        if math.isnan(expected):
            assert math.isnan(got)
        else:
            assert got == pytest.approx(expected, abs=1e-6)


def test_partial_auc_over_the_full_band_is_the_auc():
    # test-auc.R: "Full interval == full auc" for both foci, corrected or not (s100b: bounds at
    # the limits)
    for marker, expected in AUC.items():
        for focus in ("specificity", "sensitivity"):
            for correct in (False, True):
                got = proc_partial_auc(MARKERS[marker], LABELS, (1, 0), focus, correct)
                assert got == pytest.approx(expected, abs=1e-6)


def roc_points(scores, labels, weights=None):
    """The empirical ROC curve's points (fpr, tpr), by thresholding at every distinct score."""
    weights = np.ones(len(scores)) if weights is None else np.asarray(weights, float)
    positive, negative = weights * (labels == 1), weights * (labels == 0)
    fpr, tpr = [0.0], [0.0]
    for threshold in np.unique(scores[weights > 0])[::-1]:
        flagged = scores >= threshold
        fpr.append(negative[flagged].sum() / negative.sum())
        tpr.append(positive[flagged].sum() / positive.sum())
    return np.array(fpr), np.array(tpr)


def boundary_windows(points):
    """pROC's helper-partial-auc-boundary.R windows (high, low) over the focus axis' points."""
    pts = np.unique(points)
    n = len(pts)
    windows = {"full": (pts[-1], pts[0]), "between": (0.95, 0.9), "between.low": (0.45, 0.05)}
    if n >= 3:
        windows["on.points"] = (pts[n - 2], pts[1])
        windows["hi.on.point"] = (pts[n - 2], pts[:2].mean())
        windows["lo.on.point"] = (pts[n - 2 :].mean(), pts[1])
    if n >= 2:
        low, high = pts[n // 2 - 1], pts[n // 2]
        windows["same.segment"] = (low + 0.75 * (high - low), low + 0.25 * (high - low))
    return windows


TIES = (np.array([1, 2, 3, 3, 4, 5, 5, 6], np.float32), np.array([0, 0, 0, 1, 1, 1, 0, 1]))
BOUNDARY_CURVES = {
    "s100b": (MARKERS["s100b"], LABELS),
    "s100b.direction": (-MARKERS["s100b"], LABELS),  # pROC's direction ">"
    "ndka": (MARKERS["ndka"], LABELS),
    "wfns.numeric": (MARKERS["wfns"], LABELS),
    "ties": TIES,
    "two.points": (np.array([1.0, 2.0]), np.array([0, 1])),
    "constant": (np.ones(4), np.array([0, 0, 1, 1])),
}
# helper-partial-auc-boundary-expected.R, auc() of each curve/focus/window
BOUNDARY_EXPECTED = {
    "s100b": {
        "specificity": {
            "full": 0.73136856368563685,
            "between": 0.017208672086720844,
            "between.low": 0.36003871467286097,
            "on.points": 0.65548780487804881,
            "hi.on.point": 0.68936314363143636,
            "lo.on.point": 0.65955284552845528,
            "same.segment": 0.0044037940379404346,
        },
        "sensitivity": {
            "full": 0.73136856368563685,
            "between": 0.0098331639566395547,
            "between.low": 0.38641556571815716,
            "on.points": 0.70697831978319781,
            "hi.on.point": 0.71917344173441733,
            "lo.on.point": 0.70697831978319781,
            "same.segment": 0.010416666666666676,
        },
    },
    "s100b.direction": {
        "specificity": {
            "full": 0.26863143631436315,
            "between": 0.0012195121951219497,
            "between.low": 0.17025067750677508,
            "on.points": 0.24728997289972901,
            "hi.on.point": 0.25711382113821141,
            "lo.on.point": 0.2481368563685637,
            "same.segment": 0.0025406504065040763,
        },
        "sensitivity": {
            "full": 0.26863143631436315,
            "between": 0.0,
            "between.low": 0.19219258130081301,
            "on.points": 0.24424119241192413,
            "hi.on.point": 0.25643631436314362,
            "lo.on.point": 0.24424119241192413,
            "same.segment": 0.0019478319783197847,
        },
    },
    "ndka": {
        "specificity": {
            "full": 0.61195799457994582,
            "between": 0.0078590785907859013,
            "between.low": 0.33296070460704608,
            "on.points": 0.597730352303523,
            "hi.on.point": 0.60467479674796742,
            "lo.on.point": 0.59789972899728994,
            "same.segment": 0.0049119241192411749,
        },
        "sensitivity": {
            "full": 0.61195799457994582,
            "between": 0.0023882113821138183,
            "between.low": 0.34329268292682924,
            "on.points": 0.58722899728997291,
            "hi.on.point": 0.59942411924119243,
            "lo.on.point": 0.58739837398373984,
            "same.segment": 0.00863821138211383,
        },
    },
    "wfns.numeric": {
        "specificity": {
            "full": 0.82367886178861793,
            "between": 0.023563685636856336,
            "between.low": 0.39050758075148323,
            "on.points": 0.3101287262872629,
            "hi.on.point": 0.55767276422764223,
            "lo.on.point": 0.31927506775067754,
            "same.segment": 0.013465447154471641,
        },
        "sensitivity": {
            "full": 0.82367886178861782,
            "between": 0.02693865740740737,
            "between.low": 0.38731900218307741,
            "on.points": 0.38431571815718152,
            "hi.on.point": 0.59468157181571812,
            "lo.on.point": 0.39371612466124656,
            "same.segment": 0.0099085365853658625,
        },
    },
    "ties": {
        "specificity": {
            "full": 0.8125,
            "between": 0.01624999999999998,
            "between.low": 0.4,
            "on.points": 0.46875,
            "hi.on.point": 0.59375,
            "lo.on.point": 0.5234375,
            "same.segment": 0.125,
        },
        "sensitivity": {
            "full": 0.8125,
            "between": 0.02874999999999996,
            "between.low": 0.38,
            "on.points": 0.40625,
            "hi.on.point": 0.53125,
            "lo.on.point": 0.4921875,
            "same.segment": 0.109375,
        },
    },
    "two.points": {
        "specificity": {
            "full": 1.0,
            "between": 0.049999999999999933,
            "between.low": 0.4,
            "same.segment": 0.5,
        },
        "sensitivity": {
            "full": 1.0,
            "between": 0.049999999999999933,
            "between.low": 0.4,
            "same.segment": 0.5,
        },
    },
    "constant": {
        "specificity": {
            "full": 0.5,
            "between": 0.0037499999999999955,
            "between.low": 0.3,
            "same.segment": 0.25,
        },
        "sensitivity": {
            "full": 0.5,
            "between": 0.0037499999999999955,
            "between.low": 0.3,
            "same.segment": 0.25,
        },
    },
}


@pytest.mark.parametrize("curve", sorted(BOUNDARY_CURVES))
def test_partial_auc_boundary_cases_of_proc(curve):
    scores, labels = BOUNDARY_CURVES[curve]
    fpr, tpr = roc_points(scores, labels)
    for focus, axis in (("specificity", 1 - fpr), ("sensitivity", tpr)):
        windows = boundary_windows(axis)
        assert sorted(windows) == sorted(BOUNDARY_EXPECTED[curve][focus])
        for window, expected in BOUNDARY_EXPECTED[curve][focus].items():
            got = proc_partial_auc(scores, labels, windows[window], focus)
            assert got == pytest.approx(expected, abs=1e-6), (focus, window)


def band_area_oracle(fpr, tpr, band, focus, grid=200_003):
    """Midpoint-rule integral over the band of the piecewise linear curve through the points
    (a vertical step is a jump of the interpolant: it costs at most one cell's width)."""
    low, high = band
    u = (low + (np.arange(grid) + 0.5) * (high - low) / grid).astype(np.float64)
    if focus == "fpr":
        return np.interp(u, fpr, tpr).mean() * (high - low)
    return (1 - np.interp(u, tpr, fpr)).mean() * (high - low)


BANDS = [(0.0, 0.3), (0.15, 0.62), (0.5, 1.0), (0.33, 0.34), (0.0, 1.0)]


def test_partial_auc_against_integrating_the_curve_on_tied_weighted_data(rng):
    # aSAH's number of samples and integer weights: the programs compiled for aSAH serve
    for _ in range(3):
        labels = rng.integers(0, 2, len(LABELS))
        scores = rng.integers(0, 9, len(LABELS)).astype(np.float32) + 2 * labels
        weights = rng.integers(0, 4, len(LABELS))
        weights[:2], labels[:2] = 1, [0, 1]
        fpr, tpr = roc_points(scores, labels, weights)
        for band in BANDS:
            for focus in ("fpr", "tpr"):
                got = partial_roc_auc(
                    scores, labels, sample_weight=weights, **{f"{focus}_range": band}
                )
                expected = band_area_oracle(fpr, tpr, band, focus)
                assert float(got) == pytest.approx(expected, abs=2e-5), (band, focus)


def test_partial_auc_weighted_equals_repeated_rows(rng):
    scores, labels, weights = weighted_problem(rng)
    repeated = np.repeat(scores[0], weights), np.repeat(labels, weights)
    for focus, band in (("fpr", (0.1, 0.4)), ("tpr", (0.6, 0.95))):
        for correct in (False, True):
            options = {f"{focus}_range": band, "correct": correct}
            weighted = partial_roc_auc(scores[0], labels, sample_weight=weights, **options)
            assert float(weighted) == pytest.approx(
                float(partial_roc_auc(*repeated, **options)), abs=1e-6
            )


def test_partial_auc_batched_jit_and_vmap_agree(rng):
    n = len(LABELS)
    labels = rng.integers(0, 2, (3, n))
    scores = rng.integers(0, 8, (3, n)).astype(np.float32) + labels
    weights = rng.integers(0, 3, (3, n))
    call = lambda s, y, w: partial_roc_auc(  # noqa: E731
        s, y, sample_weight=w, fpr_range=(0.05, 0.45), correct=True
    )
    eager = call(scores, labels, weights)
    assert eager.shape == (3,)
    rows = [float(call(scores[i], labels[i], weights[i])) for i in range(3)]
    np.testing.assert_allclose(eager, rows, rtol=1e-6)
    # one compiled program for both: the batched call and vmap over the rows
    jitted, mapped = jax.jit(lambda *a: (call(*a), jax.vmap(call)(*a)))(scores, labels, weights)
    np.testing.assert_allclose(jitted, eager, rtol=1e-6)
    np.testing.assert_allclose(mapped, eager, rtol=1e-6)
    # one score vector against a batch of weight vectors (sorted once)
    shared = partial_roc_auc(scores[0], labels[0], sample_weight=weights, fpr_range=(0.05, 0.45))
    each = [
        float(partial_roc_auc(scores[0], labels[0], sample_weight=w, fpr_range=(0.05, 0.45)))
        for w in weights
    ]
    np.testing.assert_allclose(shared, each, rtol=1e-6)


def test_corrected_partial_auc_up_to_max_fpr_is_roc_auc_max_fpr():
    for marker in ("wfns", "s100b", "ndka"):
        ours = partial_roc_auc(MARKERS[marker], LABELS, fpr_range=(0, 0.2), correct=True)
        theirs = roc_auc(MARKERS[marker], LABELS, max_fpr=0.2)
        assert float(ours) == pytest.approx(float(theirs), abs=1e-6)


def corrected_oracle(fpr, tpr, band, focus):
    """McClish's corrected area in float64, integrating the height above the diagonal (tpr - fpr)
    along the piecewise linear curve, clipped to the band exactly."""
    low, high = band
    u = fpr if focus == "fpr" else tpr
    height = tpr - fpr
    excess = 0.0
    for u0, u1, h0, h1 in zip(u[:-1], u[1:], height[:-1], height[1:], strict=True):
        left, right = max(u0, low), min(u1, high)
        if right > left:  # a segment with u1 == u0 has no area
            slope = (h1 - h0) / (u1 - u0)
            excess += (right - left) * (h0 + slope * (left - u0) + h0 + slope * (right - u0)) / 2
    span = (high - low) * ((2 - low - high) if focus == "fpr" else (low + high)) / 2
    return (1 + excess / span) / 2


def test_corrected_partial_auc_near_the_plot_edges(rng):
    """McClish's (b^2 - a^2) / 2 cancels in float32 near an edge: (0.9999, 1) was NaN for a perfect
    curve (issue 25); a band narrower than float32 resolves is refused, not NaN."""
    perfect = np.array([0.9, 0.8, 0.7, 0.1, 0.2, 0.3]), np.array([1, 1, 1, 0, 0, 0])
    for focus in ("fpr", "tpr"):
        for band in ((0.9999, 1.0), (0.0, 1e-4)):
            got = partial_roc_auc(*perfect, correct=True, **{f"{focus}_range": band})
            assert float(got) == pytest.approx(1.0, abs=1e-6), (focus, band)
    labels = rng.integers(0, 2, len(LABELS))
    scores = rng.normal(size=len(LABELS)) + labels
    labels[:2] = 0, 1
    fpr, tpr = roc_points(scores, labels)
    for focus in ("fpr", "tpr"):
        for band in ((0.99, 1.0), (0.995, 0.999), (0.0, 0.01), (0.3, 0.3001)):
            band32 = tuple(float(np.float32(b)) for b in band)  # what the kernel integrates over
            got = partial_roc_auc(scores, labels, correct=True, **{f"{focus}_range": band})
            expected = corrected_oracle(fpr, tpr, band32, focus)
            assert float(got) == pytest.approx(expected, abs=1e-4), (focus, band)
    with pytest.raises(ValueError, match="`fpr_range` is narrower than float32"):
        partial_roc_auc(scores, labels, fpr_range=(0.1, 0.1 + 1e-9), correct=True)


def test_partial_auc_is_undefined_with_one_class():
    scores = MARKERS["ndka"]
    assert np.isnan(float(partial_roc_auc(scores, np.ones_like(LABELS), tpr_range=(0.1, 0.3))))
    assert np.isnan(float(partial_roc_auc(scores, np.zeros_like(LABELS), fpr_range=(0.1, 0.3))))


def test_partial_auc_bad_input():
    scores, labels = MARKERS["s100b"], LABELS
    with pytest.raises(ValueError, match=r"`fpr_range` must hold two bounds within \[0, 1\]"):
        partial_roc_auc(scores, labels, fpr_range=(0, 1.2))  # pROC: "within [0, 1]"
    with pytest.raises(ValueError, match=r"`tpr_range` must hold two bounds within \[0, 1\]"):
        partial_roc_auc(scores, labels, tpr_range=(math.nan, 0.8))
    with pytest.raises(TypeError, match="`fpr_range` must be a pair"):
        partial_roc_auc(scores, labels, fpr_range=0.2)
    with pytest.raises(ValueError, match="exactly one of `fpr_range` and `tpr_range`"):
        partial_roc_auc(scores, labels)
    with pytest.raises(ValueError, match="exactly one of"):
        partial_roc_auc(scores, labels, fpr_range=(0, 1), tpr_range=(0, 1))
    with pytest.raises(ValueError, match="two different bounds"):  # pROC: "different"
        partial_roc_auc(scores, labels, fpr_range=(0.2, 0.2), correct=True)
    assert float(partial_roc_auc(scores, labels, fpr_range=(0.2, 0.2))) == 0.0
    with pytest.raises(TypeError, match="`fpr_range` must be a pair of numbers"):
        partial_roc_auc(scores, labels, fpr_range=(True, False))
    with pytest.raises(TypeError, match="`correct` must be True or False; got 'no'"):
        partial_roc_auc(scores, labels, fpr_range=(0, 0.5), correct="no")
    bad = scores.copy()
    bad[7] = np.nan
    with pytest.raises(ValueError, match=r"`scores` must be finite; found NaN at index 7"):
        partial_roc_auc(bad, labels, fpr_range=(0, 0.5))
    bad_labels = labels.copy()
    bad_labels[4] = 2
    with pytest.raises(ValueError, match=r"`labels` must contain only 0 and 1.*found 2 at index 4"):
        partial_roc_auc(scores, bad_labels, fpr_range=(0, 0.5))
    weights = np.ones(len(labels), np.float32)
    weights[9] = -1
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative.*index 9"):
        partial_roc_auc(scores, labels, sample_weight=weights, fpr_range=(0, 0.5))
    # under jit only the bad batch element is NaN
    batch = np.stack([scores, bad])
    got = jax.jit(lambda s: partial_roc_auc(s, labels, fpr_range=(0, 0.5)))(batch)
    assert float(got[0]) == pytest.approx(
        float(partial_roc_auc(scores, labels, fpr_range=(0, 0.5)))
    )
    assert np.isnan(float(got[1]))


# ----------------------------------------------------------------------------- DeLong tests

# test-roc.test.R: unpaired roc.test(a, b, paired=FALSE): (a, b, D, two-sided p)
PROC_UNPAIRED = [
    ("wfns", "s100b", 1.43490640926908, 0.152825378808796),
    ("wfns", "ndka", 3.10125096778969, 0.00220950791756457),
    ("ndka", "s100b", -1.55995743389685, 0.120192832430845),
]


@pytest.mark.parametrize("a, b, statistic, p_value", PROC_UNPAIRED)
def test_unpaired_delong_test_matches_proc(a, b, statistic, p_value):
    test = delong_test_unpaired(MARKERS[a], LABELS, MARKERS[b], LABELS)
    assert float(test.statistic) == pytest.approx(statistic, rel=1e-5)
    assert float(test.p_value) == pytest.approx(p_value, rel=1e-5)
    assert float(test.difference) == pytest.approx(AUC[a] - AUC[b], abs=1e-6)
    # reversed curves: same p, opposite statistic
    reverse = delong_test_unpaired(MARKERS[b], LABELS, MARKERS[a], LABELS)
    assert float(reverse.statistic) == pytest.approx(-statistic, rel=1e-5)
    assert float(reverse.p_value) == pytest.approx(p_value, rel=1e-5)
    # the interval is the t interval on the same degrees of freedom (pROC prints none)
    df = float(test.degrees_of_freedom)
    half = stats.t.ppf(0.975, df) * float(test.difference) / float(test.statistic)
    assert float(test.low) == pytest.approx(float(test.difference) - half, abs=1e-6)
    assert float(test.high) == pytest.approx(float(test.difference) + half, abs=1e-6)
    if (a, b) == ("wfns", "s100b"):  # one-sided p-values of pROC, from our statistic and df
        assert stats.t.sf(float(test.statistic), df) == pytest.approx(0.076412689404398, rel=1e-5)
        assert stats.t.cdf(float(test.statistic), df) == pytest.approx(0.923587310595602, rel=1e-6)


def delong_oracle(scores, labels):
    """AUC and DeLong variance by counting the pairs, in float64."""
    positives, negatives = scores[labels == 1], scores[labels == 0]
    psi = (positives[:, None] > negatives[None, :]) + 0.5 * (positives[:, None] == negatives)
    v10, v01 = psi.mean(1), psi.mean(0)
    return psi.mean(), v10.var(ddof=1) / len(positives) + v01.var(ddof=1) / len(negatives)


def unpaired_oracle(scores_a, labels_a, scores_b, labels_b, confidence=0.95):
    """pROC's unpaired DeLong test (R/delong.R) in float64 numpy, with scipy's t."""
    (auc_a, variance_a), (auc_b, variance_b) = (
        delong_oracle(np.asarray(scores_a, float), labels_a),
        delong_oracle(np.asarray(scores_b, float), labels_b),
    )
    variance = variance_a + variance_b
    df = variance**2 / (variance_a**2 / (len(labels_a) - 1) + variance_b**2 / (len(labels_b) - 1))
    statistic = (auc_a - auc_b) / math.sqrt(variance)
    half = stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(variance)
    difference = auc_a - auc_b
    p_value = 2 * stats.t.sf(abs(statistic), df)
    return statistic, df, p_value, difference, difference - half, difference + half


def test_t_distribution_tails_at_any_degrees_of_freedom():
    from jaxmetrics._src.stats.delong_unpaired import _t_p_value, _t_quantile

    df = np.array([1.0, 2.5, 12.0, 111.0, 299.0, 999.0, 5e3, 1e6], np.float32)
    statistics = np.array([0.01, 0.7, 2.0, 4.5], np.float32)[:, None]
    alphas = np.array([0.5, 0.05, 1e-4], np.float32)[:, None]

    @jax.jit  # one program for both, each element with its own df
    def tails(statistic, df_of_statistic, alpha, df_of_alpha):
        return _t_p_value(statistic, df_of_statistic), _t_quantile(alpha, df_of_alpha)

    p_values, quantiles = tails(
        *np.broadcast_arrays(statistics, df), *np.broadcast_arrays(alphas, df)
    )
    expected = 2 * stats.t.sf(statistics, df.astype(float))
    np.testing.assert_allclose(p_values, expected, rtol=1e-5)
    np.testing.assert_allclose(quantiles, stats.t.isf(alphas / 2, df.astype(float)), rtol=1e-5)


def test_unpaired_delong_test_degenerate_and_bad_input():
    scores, labels = MARKERS["s100b"], LABELS
    bad_labels = labels.copy()
    bad_labels[5] = 2
    with pytest.raises(ValueError, match=r"`labels_b` must contain only 0 and 1.*index 5"):
        delong_test_unpaired(scores, labels, scores, bad_labels)
    with pytest.raises(ValueError, match="two positives and two negatives in `labels_a`"):
        delong_test_unpaired([0.1, 0.5, 0.7], [0, 1, 1], scores, labels)
    bad = scores.copy()
    bad[3] = np.inf
    with pytest.raises(ValueError, match=r"`scores_a` must be finite; found inf at index 3"):
        delong_test_unpaired(bad, labels, scores, labels)
    with pytest.raises(ValueError, match="`confidence`"):
        delong_test_unpaired(scores, labels, scores, labels, confidence=1.0)
    with pytest.raises(ValueError, match="`scores_b` must have shape"):
        delong_test_unpaired(scores, labels, scores[None], labels)
    # one compiled program for the rest, sets of different sizes (113 and 60)
    jitted = jax.jit(delong_test_unpaired)
    rng = np.random.default_rng(7)
    labels_b = rng.integers(0, 2, 60)
    scores_b = (rng.integers(0, 5, 60) + labels_b).astype(np.float32)
    good = jitted(scores, labels, scores_b, labels_b)
    expected = unpaired_oracle(scores, labels, scores_b, labels_b)
    np.testing.assert_allclose(good, expected, rtol=1e-5, atol=1e-6)
    assert all(np.isnan(float(x)) for x in jitted(bad, labels, scores_b, labels_b))
    # two perfectly separating sets: no variance, the statistic alone decides
    perfect, perfect_b = labels.astype(np.float32), labels_b.astype(np.float32)
    test = jitted(perfect, labels, perfect_b, labels_b)
    assert float(test.statistic) == 0.0 and float(test.p_value) == 1.0
    assert np.isnan(float(test.degrees_of_freedom)) and float(test.low) == 0.0
    inverted = jitted(perfect, labels, 1 - perfect_b, labels_b)
    assert float(inverted.statistic) == math.inf and float(inverted.p_value) == 0.0


def test_paired_delong_test_of_proc_intervals_and_identical_curves():
    # test-roc.test.R: roc.test(r.wfns, r.wfns) gives Z = 0, p = 1; conf.int of t2 and t3
    same = delong_test(MARKERS["wfns"], MARKERS["wfns"], LABELS)
    assert float(same.statistic) == 0.0 and float(same.p_value) == 1.0
    t2 = delong_test(MARKERS["wfns"], MARKERS["ndka"], LABELS)
    np.testing.assert_allclose(
        [t2.low, t2.high], [0.0634011709339876, 0.3600405634833566], atol=1e-6
    )
    t3 = delong_test(MARKERS["ndka"], MARKERS["s100b"], LABELS)
    np.testing.assert_allclose(
        [t3.low, t3.high], [-0.2876917446341914, 0.0488706064228094], atol=1e-6
    )
    reverse = delong_test(MARKERS["s100b"], MARKERS["ndka"], LABELS)
    assert float(reverse.statistic) == pytest.approx(1.39077002573558, rel=1e-5)
    assert float(reverse.p_value) == pytest.approx(float(t3.p_value), rel=1e-6)


def test_weighted_delong_test_equals_repeated_rows_and_bad_weights(rng):
    scores, labels, weights = weighted_problem(rng)
    repeated = np.repeat(scores, weights, axis=1), np.repeat(labels, weights)
    assert repeated[1].shape == LABELS.shape  # the programs compiled for aSAH serve
    test = delong_test(scores[0], scores[1], labels, sample_weight=weights)
    expected = delong_test(repeated[0][0], repeated[0][1], repeated[1])
    np.testing.assert_allclose(test, expected, rtol=1e-5, atol=1e-7)
    few = np.zeros_like(weights)
    few[:4] = [1, 1, 1, 3]  # negatives' total weight 2, positives' 4: defined
    assert np.isfinite(float(delong_test(*scores, labels, sample_weight=few).statistic))
    few[2] = 0  # one negative left
    with pytest.raises(ValueError, match=r"total `sample_weight` above 1 in each class"):
        delong_test(*scores, labels, sample_weight=few)
    with pytest.raises(ValueError, match=r"`sample_weight` \[n\]"):
        delong(scores, labels, sample_weight=np.ones((2, len(labels))))
    negative = weights.astype(np.float32)
    negative[6] = -2.0
    with pytest.raises(ValueError, match=r"`sample_weight` must be non-negative.*index 6"):
        delong(scores, labels, sample_weight=negative)
    # under jit (float weights): the same test, and NaN everywhere for a negative weight
    jitted = jax.jit(lambda w: delong_test(*scores, labels, sample_weight=w))
    np.testing.assert_allclose(jitted(weights.astype(np.float32)), test, rtol=1e-5, atol=1e-7)
    assert all(np.isnan(float(x)) for x in jitted(negative))


def test_float64_results_under_x64(rng, x64):
    # weighted == repeated rows to float64 rounding; partial AUC ranks float64 exactly
    scores, labels, weights = weighted_problem(rng)
    repeated = np.repeat(scores, weights, axis=1), np.repeat(labels, weights)
    weighted, expected = delong(scores, labels, sample_weight=weights), delong(*repeated)
    for field in ("auc", "variance", "covariance", "low", "high"):
        np.testing.assert_allclose(
            getattr(weighted, field), getattr(expected, field), rtol=1e-12, atol=1e-15
        )
    exact = np.array([0.5, 0.5 + 1e-12, 0.1, 0.9])  # float32 would tie the first two
    got = partial_roc_auc(exact, np.array([0, 1, 0, 1]), fpr_range=(0, 1))
    assert got.dtype == np.float64 and float(got) == 1.0  # 3.5 / 4 with the tie


# ----------------------------------------------------------------------------- power


def test_power_of_one_auc_matches_proc():
    # test-power.roc.test.R
    assert float(auc_power(0.73, num_positive=41, num_negative=72)) == pytest.approx(
        0.9897453, abs=1e-6
    )
    assert float(auc_power(AUC["s100b"], num_positive=41, num_negative=72)) == pytest.approx(
        0.9904833, abs=1e-6
    )
    # pROC solves for the level and for the AUC (uniroot, tolerance ~1e-4); at its solutions
    # the power is the one asked for
    power = auc_power(0.73, num_positive=41, num_negative=72, alpha=0.009238584)
    assert float(power) == pytest.approx(0.95, abs=1e-6)
    power = auc_power(0.6961054, num_positive=41, num_negative=72)
    assert float(power) == pytest.approx(0.95, abs=5e-5)


def test_sample_size_of_one_auc_matches_proc():
    size = auc_sample_size(AUC["s100b"], power=0.95, negatives_per_positive=1.7)
    assert float(size.num_positive) == pytest.approx(29.29764, rel=1e-6)
    assert float(size.num_negative) == pytest.approx(49.806, rel=1e-6)
    size = auc_sample_size(AUC["s100b"], power=0.9, negatives_per_positive=72 / 41)
    assert float(size.num_positive) == pytest.approx(23.5598674, rel=1e-6)
    assert float(size.num_negative) == pytest.approx(41.3734257, rel=1e-6)
    size = auc_sample_size(AUC["s100b"], power=0.9)
    assert float(size.num_positive) == pytest.approx(29.5697422, rel=1e-6)
    assert float(size.num_negative) == float(size.num_positive)
    # "accepts a vector of AUCs"
    sizes = auc_sample_size(np.array([0.7, 0.8, 0.9]), power=0.9)
    assert sizes.num_positive.shape == (3,)
    single = auc_sample_size(0.8, power=0.9)
    assert float(sizes.num_positive[1]) == pytest.approx(float(single.num_positive), rel=1e-6)


def test_sample_sizes_of_obuchowski_2004_table_4():
    # test-power.roc.test.R, one-sided at 0.05 (= two-sided at 0.1), power 0.9; at least 10 per
    # cell with the complement adapted to kappa, as the published table (pROC's "Fixed" cells)
    kappas, thetas = [0.25, 0.5, 1, 2, 4], np.array([0.6, 0.7, 0.8, 0.9, 0.95])
    negatives = [
        [84, 20, 10, 10, 10],
        [101, 25, 10, 10, 10],
        [135, 33, 14, 10, 10],
        [203, 50, 21, 20, 20],
        [340, 84, 40, 40, 40],
    ]
    positives = [
        [334, 80, 40, 40, 40],
        [202, 49, 20, 20, 20],
        [135, 33, 14, 10, 10],
        [102, 25, 11, 10, 10],
        [85, 21, 10, 10, 10],
    ]
    for i, kappa in enumerate(kappas):
        size = auc_sample_size(thetas, power=0.9, negatives_per_positive=kappa, alpha=0.1)
        for j in range(len(thetas)):
            cases = math.ceil(float(size.num_positive[j]))
            controls = math.ceil(float(size.num_negative[j]))
            assert max(10, (10 if cases < 10 else 0) * kappa, controls) == negatives[i][j]
            assert max(10, (10 if controls < 10 else 0) / kappa, cases) == positives[i][j]


def test_power_of_two_models_matches_proc():
    ndka_wfns = np.stack([MARKERS["ndka"], MARKERS["wfns"]])
    assert float(delong_power(ndka_wfns, LABELS)) == pytest.approx(0.7131594, abs=1e-6)
    size = delong_sample_size(ndka_wfns, LABELS, power=0.9)
    assert float(size.num_positive) == pytest.approx(64.77777, rel=1e-6)
    assert float(size.num_negative) == pytest.approx(113.7561, rel=1e-6)
    # pROC solves for the level: 0.1836639 gives power 0.9
    assert float(delong_power(ndka_wfns, LABELS, alpha=0.1836639)) == pytest.approx(0.9, abs=1e-6)
    # "kappa works with two ROC curves": the observed ratio of negatives to positives
    size = delong_sample_size(np.stack([MARKERS["s100b"], MARKERS["ndka"]]), LABELS, power=0.9)
    assert float(size.num_positive) == pytest.approx(213.117677, rel=2e-6)
    assert float(size.num_negative) == pytest.approx(374.255432, rel=2e-6)


def test_power_bad_options_and_values():
    with pytest.raises(ValueError, match=r"`alpha` must be in \(0, 1\)"):
        auc_power(0.7, num_positive=10, num_negative=10, alpha=1.5)
    with pytest.raises(ValueError, match=r"`power` must be in \(0, 1\)"):
        auc_sample_size(0.7, power=1.0)
    with pytest.raises(ValueError, match=r"`power` must be in \(0, 1\)"):
        delong_sample_size(np.stack([MARKERS["ndka"], MARKERS["wfns"]]), LABELS, power=0)
    with pytest.raises(ValueError, match=r"`alpha` must be in \(0, 1\)"):
        delong_power(np.stack([MARKERS["ndka"], MARKERS["wfns"]]), LABELS, alpha=0.0)
    with pytest.raises(ValueError, match=r"`num_positive` must be positive; found 0 at index 1"):
        auc_power(0.7, num_positive=[5, 0], num_negative=10)
    with pytest.raises(ValueError, match="`num_negative` must be positive; found -3"):
        auc_power(0.7, num_positive=5, num_negative=-3)
    with pytest.raises(ValueError, match=r"`negatives_per_positive` must be a positive number"):
        auc_sample_size(0.7, power=0.8, negatives_per_positive=0)
    # pROC: "'auc' must range from 0 to 1"
    with pytest.raises(ValueError, match=r"`auc` must be in \[0, 1\]; found 1.2 at index 1"):
        auc_sample_size([0.7, 1.2], power=0.9)
    with pytest.raises(ValueError, match=r"`auc` must be in \[0, 1\]; found 73"):
        auc_power(73, num_positive=41, num_negative=72)
    with pytest.raises(ValueError, match=r"`scores` must have shape \[2, n\]"):
        delong_power(MARKERS["ndka"], LABELS)
    jitted = jax.jit(lambda a: auc_power(a, num_positive=41, num_negative=72))
    got = jitted(np.array([0.73, 1.5]))
    assert float(got[0]) == pytest.approx(0.9897453, abs=1e-6) and np.isnan(float(got[1]))
    assert float(auc_power(1.0, num_positive=41, num_negative=72)) == 1.0  # variance limit 0
    assert float(auc_sample_size(0.5, power=0.8).num_positive) == math.inf
