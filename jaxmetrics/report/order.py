"""Each model's numbers of its scores' order, from one program over every model.

The ROC and precision-recall curves, the thresholds that Youden's J, the largest F1 and F2 and
the least expected cost choose, the confusion counts, rates and Wilson intervals at those and at
the given (and Bayes) thresholds, and DeLong's intervals and tests depend on the order of the
scores and its ties only. One function of the exact order keys of all models (`Order`) computes
them all with the public `jaxmetrics` functions: one compilation for every model, and with a
`ProgramStore` one kept program, so that a second run neither traces nor lowers it (as a dozen
eager calls, each its own program, it was most of the main thread's time).

Thresholds come back as keys and are decoded into the input's own values, as the library's
eager calls decode theirs: a model's float64 scores that float32 would change give float64
thresholds, scores that float32 holds exactly give float32 ones.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.programs import ProgramStore, named
from jaxmetrics.report.read import ReportError
from jaxmetrics.report.result import (
    Data,
    Metadata,
    OperatingPoint,
    PrPoints,
    RocPoints,
    has_intervals,
    number,
    numbers,
)

# A curve keeps at most this many points in the report (and its JSON): more than a plot resolves.
MAX_CURVE_POINTS = 2000
# the smallest normal float32's bits: every key is a positive normal float, ordered as its bits
_FIRST_KEY = np.uint32(0x00800000)
_MOST_KEYS = 0x7F800000 - 0x00800000  # past these, the bits would be infinity and NaN


def order_keys(scores: np.ndarray) -> np.ndarray:
    """float32 keys in the order of `scores`, ties kept: the rank of each score among all the
    distinct scores (every model's), as the bits of a positive float32."""
    return Order.of(scores).keys


class Order(NamedTuple):
    """The scores ``[M, n]`` as exact order keys, and what decodes keys back into scores."""

    keys: np.ndarray  # float32 [M, n]: the rank among `distinct`, as a float's bits
    distinct: np.ndarray  # float64: every model's distinct scores, ascending
    float32: np.ndarray  # bool [M]: float32 holds that model's scores exactly

    @classmethod
    def of(cls, scores: np.ndarray) -> Order:
        distinct, ranks = np.unique(scores, return_inverse=True)
        if distinct.size > _MOST_KEYS:
            raise ReportError(f"{distinct.size} distinct scores: too many to rank exactly")
        keys = _keys(ranks.reshape(scores.shape))
        single = scores.astype(np.float32)
        tiny = np.finfo(np.float32).tiny  # XLA flushes subnormals: the library ranks those
        exact = (single == scores) & ~((single != 0) & (np.abs(single) < tiny))
        return cls(keys, distinct, exact.reshape(-1, scores.shape[-1]).all(axis=-1))

    def encode(self, thresholds: Any) -> np.ndarray:
        """Keys of thresholds: ``key >= encode(t)`` exactly when ``score >= t``."""
        return _keys(np.searchsorted(self.distinct, thresholds, side="left"))

    def decode(self, keys: np.ndarray, model: int) -> np.ndarray:
        """The scores of `keys` (+-inf and NaN stay), in model `model`'s precision."""
        keys = np.asarray(keys, np.float32)
        ranks = keys.view(np.uint32).astype(np.int64) - int(_FIRST_KEY)
        values = self.distinct[np.clip(ranks, 0, self.distinct.size - 1)]
        values = np.where(np.isfinite(keys), values, keys.astype(np.float64))
        return values.astype(np.float32) if self.float32[model] else values


def _keys(ranks: np.ndarray) -> np.ndarray:
    return (np.asarray(ranks).astype(np.uint32) + _FIRST_KEY).view(np.float32)


@jax.jit
def _rates(tp, fp, fn, tn) -> tuple[dict[str, Any], Any, Any]:
    """The rates at some thresholds and the Wilson intervals of recall and precision."""
    counts = jm.Counts(tp, fp, fn, tn)
    values = {
        "accuracy": jm.accuracy(counts),
        "precision": jm.precision(counts),
        "recall": jm.recall(counts),
        "specificity": jm.specificity(counts),
        "f1": jm.f_beta(counts),
        "f2": jm.f_beta(counts, beta=2.0),
    }
    recall = jnp.stack(jm.wilson_interval(tp, tp + fn))  # tp + fn: never 0
    precision = jnp.stack(jm.wilson_interval(tp, jnp.maximum(tp + fp, 1)))
    return values, recall, precision


@functools.cache  # one function per options: a second report in a process reuses its program
def _program(costs: tuple[float, float] | None, pairs: tuple[tuple[int, int], ...] | None):
    """The numbers of keys ``[M, n]``, labels and `fixed` keys (the given threshold's, then the
    Bayes threshold's with `costs`); DeLong's with `pairs` (every pair of models), else none."""

    def numbers_of(keys, labels, fixed):
        roc = jm.roc_curve(keys, labels)
        pr = jm.precision_recall_curve(keys, labels)
        chosen = [
            jm.youden_threshold(keys, labels).threshold,
            jm.max_f_beta(keys, labels, beta=1.0).threshold,
            jm.max_f_beta(keys, labels, beta=2.0).threshold,
        ]
        if costs is not None:
            cost_fp, cost_fn = costs
            best = jm.min_expected_cost(keys, labels, cost_fp=cost_fp, cost_fn=cost_fn)
            chosen.append(best.threshold)
        fixed = jnp.broadcast_to(fixed, (keys.shape[0], fixed.shape[0]))
        thresholds = jnp.concatenate([fixed[:, :1], jnp.stack(chosen, axis=-1), fixed[:, 1:]], -1)
        counts = jax.vmap(lambda k, t: jm.confusion_counts(k, labels, t))(keys, thresholds)
        values = [*roc, *pr, thresholds, *counts, _rates(*counts)]
        if pairs is not None:
            delong = jm.delong(keys, labels)
            tests = [jnp.stack(jm.delong_test(keys[i], keys[j], labels)) for i, j in pairs]
            values += [delong.low, delong.high, tests]
        return values

    return jax.jit(numbers_of)


class Numbers(NamedTuple):
    """What `evaluate_order` gives: each model's curves and operating points, and DeLong's."""

    roc: list[RocPoints]
    pr: list[PrPoints]
    thresholds: list[tuple[OperatingPoint, ...]]
    delong_low: tuple[float, ...]
    delong_high: tuple[float, ...]
    tests: dict[tuple[int, int], tuple[float, ...]]  # (z, p, low, high) of each pair


def evaluate_order(
    order: Order,
    labels: np.ndarray,
    data: Data,
    metadata: Metadata,
    probability: tuple[int, ...],
    clustered: bool,
    store: ProgramStore | None = None,
) -> Numbers:
    """The order's numbers of every model; through the kept program with a `store`.

    DeLong's are NaN where they have no meaning: with clusters (it needs independent rows) or
    too few of a class. The Bayes threshold is for models whose scores are probabilities."""
    models = range(order.keys.shape[0])
    pairs = tuple((first, second) for first in models for second in models if first < second)
    delong = has_intervals(data) and not clustered
    costs = None
    fixed = [metadata.threshold]
    if metadata.cost_fp is not None and metadata.cost_fn is not None:
        costs = (metadata.cost_fp, metadata.cost_fn)
        fixed.append(float(jm.bayes_threshold(cost_fp=costs[0], cost_fn=costs[1])))
    program = _program(costs, pairs if delong else None)
    arguments = (order.keys, labels, order.encode(np.array(fixed, np.float64)))
    if store is None:
        values = program(*arguments)
    else:
        constants = {"costs": costs, "delong": delong}
        values = store.call(named("order", constants), program, *arguments, once=True)
    values = jax.tree.map(np.asarray, values)
    roc, pr = jm.RocCurve(*values[:4]), jm.PrCurve(*values[4:8])
    thresholds, counts, (rate_values, recall, precision) = values[8], values[9:13], values[13]
    rules = ["given", "youden", "max_f1", "max_f2"] + ["min_cost"] * (costs is not None)
    result = Numbers([], [], [], *_delong(values[14:] if delong else None, len(models), pairs))
    for m in models:
        model_roc, model_pr = (type(c)(*(field[m] for field in c)) for c in (roc, pr))
        decode = functools.partial(order.decode, model=m)
        roc_points, pr_points = curve_points(model_roc, model_pr, decode)
        result.roc.append(roc_points)
        result.pr.append(pr_points)
        choices = [(rules[0], metadata.threshold)]
        for k, rule in enumerate(rules[1:], 1):
            choices.append((rule, number(order.decode(thresholds[m][k], m))))
        if costs is not None and m in probability:
            choices.append(("bayes", fixed[1]))
        point_counts = [c[m][: len(choices)] for c in counts]
        point_rates = {name: v[m][: len(choices)] for name, v in rate_values.items()}
        intervals = (recall[:, m, : len(choices)], precision[:, m, : len(choices)])
        result.thresholds.append(
            operating_points(choices, point_counts, point_rates, intervals, metadata, labels.size)
        )
    return result


def _delong(values: list | None, models: int, pairs: tuple[tuple[int, int], ...]):
    """(lows, highs, tests by pair) of the program's DeLong outputs; NaN without them."""
    if values is None:
        nan = (float("nan"),) * models
        return nan, nan, {pair: (float("nan"),) * 4 for pair in pairs}
    low, high, tests = values
    return numbers(low), numbers(high), {pair: numbers(t) for pair, t in zip(pairs, tests)}


def operating_points(
    choices: list[tuple[str, float]],
    counts: list[np.ndarray],
    rates: dict[str, np.ndarray],
    intervals: tuple[np.ndarray, np.ndarray],
    metadata: Metadata,
    size: int,
) -> tuple[OperatingPoint, ...]:
    """An `OperatingPoint` for each (rule, threshold) of `choices`, from the counts ``[T]``
    (tp, fp, fn, tn), the rates and the Wilson intervals of recall and precision at them."""
    cost_fp, cost_fn = metadata.cost_fp, metadata.cost_fn
    tp, fp, fn, tn = (c.astype(np.int64) for c in counts)
    rates = {name: numbers(values) for name, values in rates.items()}
    recall, precision = intervals
    points = []
    for i, (rule, threshold) in enumerate(choices):
        precision_wilson = (
            (number(precision[0][i]), number(precision[1][i]))
            if tp[i] + fp[i]
            else (float("nan"), float("nan"))
        )
        cost = None
        if cost_fp is not None and cost_fn is not None:
            cost = (cost_fp * int(fp[i]) + cost_fn * int(fn[i])) / int(size)
        points.append(
            OperatingPoint(
                rule=rule,
                threshold=threshold,
                tp=int(tp[i]),
                fp=int(fp[i]),
                fn=int(fn[i]),
                tn=int(tn[i]),
                **{name: values[i] for name, values in rates.items()},
                recall_wilson=(number(recall[0][i]), number(recall[1][i])),
                precision_wilson=precision_wilson,
                cost_per_sample=cost,
            )
        )
    return tuple(points)


def curve_points(
    roc: jm.RocCurve, pr: jm.PrCurve, decode: Callable[[np.ndarray], np.ndarray] = np.asarray
) -> tuple[RocPoints, PrPoints]:
    """One model's curves as the report keeps them: their valid points, thinned (`thin`), with
    the thresholds through `decode` (order keys into scores)."""
    keep = np.asarray(roc.valid)
    fpr, tpr, thresholds = (np.asarray(a)[keep] for a in (roc.fpr, roc.tpr, roc.thresholds))
    roc_points = RocPoints(*thin(fpr, tpr, decode(thresholds)))
    keep = np.asarray(pr.valid)
    recall, precision, thresholds = (
        np.asarray(a)[keep] for a in (pr.recall, pr.precision, pr.thresholds)
    )
    return roc_points, PrPoints(*thin(recall, precision, decode(thresholds)))


def thin(*columns: np.ndarray) -> list[tuple[float, ...]]:
    """At most `MAX_CURVE_POINTS` points, evenly spaced along the curve, both ends kept."""
    size = columns[0].shape[0]
    keep = np.unique(np.linspace(0, size - 1, min(size, MAX_CURVE_POINTS)).round().astype(int))
    return [numbers(c[keep]) for c in columns]
