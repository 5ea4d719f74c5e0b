"""The coverage study's quick mode: intervals that should cover 95% do, within Monte-Carlo error."""

import importlib.util
import math
from pathlib import Path

import jax
import numpy as np
import pytest

import jaxmetrics as jm

spec = importlib.util.spec_from_file_location(
    "coverage", Path(__file__).resolve().parents[1] / "benchmarks" / "coverage.py"
)
coverage = importlib.util.module_from_spec(spec)
spec.loader.exec_module(coverage)


def test_true_auc_of_the_simulation_matches_a_very_large_sample():
    scores, labels = coverage.simulate(jax.random.key(0), 1, 400_000, 0.5, 0.75)
    assert float(jm.roc_auc(scores[0], labels)) == pytest.approx(0.75, abs=0.003)


# 100 resamples per test set (200 before) in the two AUC cells: the tolerance is set by the
# number of test sets, the bootstrap's run time by the resamples (12.1 and 10.3 s -> 5.2 and
# 4.8 s). The coverages moved by at most one test set (percentile 0.927 -> 0.923, stratified
# 0.937 -> 0.933 of 300; the clinical two unchanged), inside the tolerance as before.
def test_delong_and_percentile_cover_95_percent_at_n_1000():
    sets = 300
    cell = coverage.auc_cell(jax.random.key(1), sets, 1000, 0.5, 0.75, 100, with_bca=False)
    tolerance = 3 * math.sqrt(0.95 * 0.05 / sets)  # three Monte-Carlo standard errors
    for method in ("DeLong", "percentile", "percentile (stratified)"):
        assert abs(cell[method]["coverage"] - 0.95) < tolerance, (method, cell[method])
        assert cell[method]["mc_error"] == pytest.approx(
            math.sqrt(cell[method]["coverage"] * (1 - cell[method]["coverage"]) / sets)
        )


def test_recall_intervals_cover():
    cell = coverage.recall_cell(jax.random.key(2), 3000, 200, 0.8)
    for method in ("Wilson", "Clopper-Pearson", "Agresti-Coull"):
        assert abs(cell[method]["coverage"] - 0.95) < 3 * math.sqrt(0.95 * 0.05 / 3000)
    assert np.isfinite(cell["normal (Wald)"]["mean_width"])


def test_partial_auc_and_sensitivity_at_specificity_intervals_cover():
    partial, sensitivity = coverage.true_clinical(0.75)
    # the true values of the binormal model, from their closed forms at the cut points
    assert sensitivity == pytest.approx(0.3716, abs=1e-4)
    assert 0.5 < partial < 0.75
    sets = 200
    cell = coverage.clinical_cell(jax.random.key(3), sets, 1000, 0.5, 0.75, 100)
    tolerance = 3 * math.sqrt(0.95 * 0.05 / sets)
    for method, result in cell.items():
        assert abs(result["coverage"] - 0.95) < tolerance, (method, result)


validation_spec = importlib.util.spec_from_file_location(
    "coverage_validation",
    Path(__file__).resolve().parents[1] / "benchmarks" / "coverage_validation.py",
)
validation = importlib.util.module_from_spec(validation_spec)
validation_spec.loader.exec_module(validation)


def test_true_calibration_error_and_net_benefit_of_the_validation_model():
    from scipy import integrate, stats

    # calibrated (a = 0, b = 1): no binned error; net benefit from the Beta(2, 3) and Beta(3, 3)
    # tails (12 p^2 (1 - p)^2 is 0.4 times the Beta(3, 3) density)
    assert validation.true_binned_error(0.0, 1.0, 10) == pytest.approx((0, 0), abs=1e-12)
    for t in (0.1, 0.2):
        positives = 0.4 * stats.beta(3, 3).sf(t)
        negatives = stats.beta(2, 3).sf(t) - positives
        expected = positives - negatives * t / (1 - t)
        assert validation.true_net_benefit(0.0, 1.0, t) == pytest.approx(expected, abs=1e-9)
    # miscalibrated (a = 0.3, b = 0.6): each bin's gap by adaptive quadrature
    density = stats.beta(2, 3).pdf
    outcome = lambda p: 1 / (1 + np.exp(-(0.3 + 0.6 * np.log(p / (1 - p)))))  # noqa: E731
    l1 = l2 = 0.0
    for low in np.arange(10) / 10:
        mass = integrate.quad(density, low, low + 0.1)[0]
        gap = integrate.quad(lambda p: (p - outcome(p)) * density(p), low, low + 0.1)[0] / mass
        l1, l2 = l1 + mass * abs(gap), l2 + mass * gap**2
    assert validation.true_binned_error(0.3, 0.6, 10) == pytest.approx((l1, l2**0.5), abs=1e-7)


def test_calibration_intercept_and_slope_intervals_cover():
    sets = 200
    cell = validation.calibration_cell(jax.random.key(4), sets, 500, 0.0, 1.0, 100)
    tolerance = 3 * math.sqrt(0.95 * 0.05 / sets)
    for method in ("intercept Wald", "intercept percentile", "slope Wald", "slope percentile"):
        assert abs(cell[method]["coverage"] - 0.95) < tolerance, (method, cell[method])
        assert cell[method]["undefined"] == 0
