"""The report's validation numbers of probability models: recalibration and decision curves.

The ranking's `jm.bootstrap` call, over the probability models together (``[M, n]``), gives
every bootstrapped number of these sections on its resamples (`bootstrapped`, a
`ranking.Extra`): the recalibration intercept and slope (with their Wald intervals and
Spiegelhalter's test in the same output, whose estimate is the metric on all rows) and the net
benefit at the table's thresholds. Eager calls on the float64 probabilities give what depends
on where a probability falls exactly: the binned and debiased L2 calibration errors (the bins
of the reliability table), and the net benefit, treat-all and interventions avoided at the
table's thresholds and over the plot's grid (`jm.decision_curve`).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.ranking import Extra
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


@functools.cache  # one function per table of thresholds: a second report reuses its program
def _panel(thresholds: tuple[float, ...]):
    """The bootstrapped numbers of probability models ``[M, n]``: ``[M, 8 + len(thresholds)]``
    (the reader checked the probabilities and labels)."""
    table = np.array(thresholds, np.float64)

    def panel(probs, labels, sample_weight):
        weights = dict(sample_weight=sample_weight)
        columns = [
            *jm.calibration_intercept(probs, labels, **weights),
            *jm.calibration_slope(probs, labels, **weights),
            *jm.spiegelhalter_test(probs, labels, **weights),
        ]
        net_benefit = jm.net_benefit(probs, labels, table, **weights)
        return jnp.concatenate([jnp.stack(columns, axis=-1), net_benefit], axis=-1)

    return panel


def bootstrapped(rows: tuple[int, ...], metadata: Metadata) -> Extra:
    """What the ranking's bootstrap computes on its resamples for these sections, of the
    probability models, the `rows` of the scores."""
    thresholds = tuple(t for t, _ in decision_thresholds(metadata))
    return Extra(rows, _panel(thresholds), _NET_BENEFIT + len(thresholds), thresholds)


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


class Eager(NamedTuple):
    """The numbers computed eagerly on the float64 probabilities ``[M, n]``: the decision curve
    at the table's thresholds then on the plot's grid, and the L2 calibration errors."""

    net_benefit: np.ndarray
    treat_all: np.ndarray
    avoided: np.ndarray
    standardized: np.ndarray
    l2: tuple[float, ...]
    debiased: tuple[float, ...]


def evaluate_eager(probs: np.ndarray, labels: np.ndarray, metadata: Metadata) -> Eager:
    """The numbers of these sections that depend on where a probability falls exactly (eager
    calls on float64, as the ECE: a float32 0.3 can land in the bin below)."""
    table = np.array([t for t, _ in decision_thresholds(metadata)], np.float64)
    grid = np.array(DECISION_GRID, np.float64)
    curve = jm.decision_curve(probs, labels, np.concatenate([table, grid]))
    bins = dict(num_bins=metadata.calibration_bins)
    return Eager(
        *(
            np.asarray(field)
            for field in (
                curve.net_benefit,
                curve.treat_all,
                curve.interventions_avoided,
                curve.standardized_net_benefit,
            )
        ),
        l2=numbers(jm.expected_calibration_error(probs, labels, norm="l2", **bins)),
        debiased=numbers(jm.debiased_calibration_error(probs, labels, **bins)),
    )


def evaluate_validation(
    result: jm.BootstrapResult, eager: Eager, data: Data, metadata: Metadata
) -> tuple[list[dict], list[DecisionCurve]]:
    """For the probability models, from the bootstrap of their `bootstrapped` numbers (fields
    ``[M, K]``, numpy) and their `eager` numbers: the fields that complete each one's
    calibration section (the recalibration fits, Spiegelhalter's test and the L2 errors, for
    `Calibration._replace`), and their decision curves."""
    chosen = decision_thresholds(metadata)
    net_benefit, treat_all, avoided, standardized = eager[:4]
    size = len(chosen)
    completed, curves = [], []
    for m in range(result.estimate.shape[0]):
        estimate = result.estimate[m]
        completed.append(
            dict(
                intercept=_fit(result, m, _INTERCEPT, data),
                slope=_fit(result, m, _SLOPE, data),
                spiegelhalter=Spiegelhalter(*numbers(estimate[_Z : _P + 1])),
                l2_calibration_error=eager.l2[m],
                debiased_calibration_error=eager.debiased[m],
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
