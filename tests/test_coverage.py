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


def test_delong_and_percentile_cover_95_percent_at_n_1000():
    sets = 300
    cell = coverage.auc_cell(jax.random.key(1), sets, 1000, 0.5, 0.75, 200, with_bca=False)
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
    cell = coverage.clinical_cell(jax.random.key(3), sets, 1000, 0.5, 0.75, 200)
    tolerance = 3 * math.sqrt(0.95 * 0.05 / sets)
    for method, result in cell.items():
        assert abs(result["coverage"] - 0.95) < tolerance, (method, result)
