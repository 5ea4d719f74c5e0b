"""The report's validation numbers of probability models: recalibration and decision curves.

One `jm.bootstrap` call, over the probability models together (``[M, n]``), gives every
bootstrapped number of these sections: the recalibration intercept and slope (with their Wald
intervals and Spiegelhalter's test in the same output, whose estimate is the metric on all
rows) and the net benefit at the table's thresholds. The resamples are the ranking's (the same
key, resample count and clusters). Eager calls on the float64 probabilities give what depends
on where a probability falls exactly: the binned and debiased L2 calibration errors (the bins
of the reliability table), and the net benefit, treat-all and interventions avoided at the
table's thresholds and over the plot's grid (`jm.decision_curve`).
"""

from __future__ import annotations

from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.ranking import seed_key
from jaxmetrics.report.result import (
    Data,
    DecisionCurve,
    DecisionCurvePoints,
    Interval,
    Metadata,
    NetBenefit,
    RecalibrationFit,
    Spiegelhalter,
    estimate_outside,
    interval_or_nan,
    numbers,
)

Progress = Callable[[str, int, int], None]
LABEL = "calibration and net benefit"
# the decision curve's table: these thresholds, the given one and the Bayes threshold
DECISION_THRESHOLDS = (0.05, 0.1, 0.2, 0.3)
# the plot's grid: 0.01, 0.02, ..., 0.99
DECISION_GRID = tuple(k / 100 for k in range(1, 100))
# columns of the panel before the net benefits: intercept (value, Wald low, Wald high), slope
# (likewise), Spiegelhalter's z and p
_INTERCEPT, _SLOPE, _Z, _P, _NET_BENEFIT = 0, 3, 6, 7, 8


def decision_thresholds(metadata: Metadata) -> list[tuple[float, tuple[str, ...]]]:
    """The decision table's thresholds in (0, 1), ascending, each with the rules that chose it
    ("given", "bayes"; none for a fixed one)."""
    chosen: dict[float, tuple[str, ...]] = {t: () for t in DECISION_THRESHOLDS}
    extra = [("given", metadata.threshold)]
    if metadata.cost_fp is not None and metadata.cost_fn is not None:
        extra.append(("bayes", metadata.cost_fp / (metadata.cost_fp + metadata.cost_fn)))
    for rule, threshold in extra:
        if 0 < threshold < 1:
            chosen[threshold] = chosen.get(threshold, ()) + (rule,)
    return sorted(chosen.items())


def _panel(thresholds: np.ndarray):
    @jm.estimate_in_loop  # the reader checked the probabilities and labels
    def panel(probs, labels, *, sample_weight):
        weights = dict(sample_weight=sample_weight)
        columns = [
            *jm.calibration_intercept(probs, labels, **weights),
            *jm.calibration_slope(probs, labels, **weights),
            *jm.spiegelhalter_test(probs, labels, **weights),
        ]
        net_benefit = jm.net_benefit(probs, labels, thresholds, **weights)
        return jnp.concatenate([jnp.stack(columns, axis=-1), net_benefit], axis=-1)

    return panel


def _interval(result: jm.BootstrapResult, m: int, k: int, estimate: float, data: Data):
    """(estimate, low, high, undefined, outside) of column `k` of model `m`."""
    low, high = numbers([result.low[m, k], result.high[m, k]])
    values = interval_or_nan((estimate, low, high), data)
    undefined = int(np.isnan(result.samples[:, m, k]).sum())
    return (*values, undefined, estimate_outside(*values))


def _fit(result: jm.BootstrapResult, m: int, k: int, data: Data) -> RecalibrationFit:
    estimate, wald_low, wald_high = numbers(result.estimate[m, k : k + 3])
    _, low, high, undefined, outside = _interval(result, m, k, estimate, data)
    return RecalibrationFit(estimate, wald_low, wald_high, low, high, undefined, outside)


def evaluate_validation(
    probs: np.ndarray,
    labels: np.ndarray,
    data: Data,
    metadata: Metadata,
    clusters: np.ndarray | None = None,
    progress: Progress | None = None,
) -> tuple[list[dict], list[DecisionCurve]]:
    """For the probability models `probs` ``[M, n]``: the fields that complete each one's
    calibration section (the recalibration fits, Spiegelhalter's test and the L2 errors, for
    `Calibration._replace`), and their decision curves."""
    chosen = decision_thresholds(metadata)
    table = np.array([t for t, _ in chosen], np.float64)
    tick = None if progress is None else (lambda done, total: progress(LABEL, done, total))
    result = jm.bootstrap(
        _panel(table),
        probs,
        labels,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        groups=clusters,
        progress=tick,
    )
    # numpy from here on: indexing device arrays compiles one small program per shape
    result = jm.BootstrapResult(*(np.asarray(field) for field in result))
    grid = np.array(DECISION_GRID, np.float64)
    curve = jm.decision_curve(probs, labels, np.concatenate([table, grid]))
    net_benefit, treat_all, avoided, standardized = (
        np.asarray(field)
        for field in (
            curve.net_benefit,
            curve.treat_all,
            curve.interventions_avoided,
            curve.standardized_net_benefit,
        )
    )
    # eagerly, as the ECE: float64 probabilities fall into their bins exactly (a float32 0.3
    # can land in the bin below), which the bootstrap's float32 arrays would not
    bins = dict(num_bins=metadata.calibration_bins)
    l2 = numbers(jm.expected_calibration_error(probs, labels, norm="l2", **bins))
    debiased = numbers(jm.debiased_calibration_error(probs, labels, **bins))
    size = table.size
    completed, curves = [], []
    for m in range(probs.shape[0]):
        estimate = result.estimate[m]
        completed.append(
            dict(
                intercept=_fit(result, m, _INTERCEPT, data),
                slope=_fit(result, m, _SLOPE, data),
                spiegelhalter=Spiegelhalter(*numbers(estimate[_Z : _P + 1])),
                l2_calibration_error=l2[m],
                debiased_calibration_error=debiased[m],
            )
        )
        rows = [numbers(field[m, :size]) for field in (net_benefit, treat_all, avoided)]
        standardized_m = numbers(standardized[m, :size])
        points = tuple(
            NetBenefit(
                threshold=threshold,
                rules=rules,
                net_benefit=Interval(*_interval(result, m, _NET_BENEFIT + t, rows[0][t], data)),
                treat_all=rows[1][t],
                interventions_avoided=rows[2][t],
                standardized_net_benefit=standardized_m[t],
            )
            for t, (threshold, rules) in enumerate(chosen)
        )
        points_on_grid = DecisionCurvePoints(
            DECISION_GRID, numbers(net_benefit[m, size:]), numbers(treat_all[m, size:])
        )
        curves.append(DecisionCurve(points, points_on_grid))
    return completed, curves
