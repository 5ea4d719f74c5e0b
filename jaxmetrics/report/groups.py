"""The report's by-group section (--group COL): every model's numbers in each group, and the gaps.

One `jm.by_group_bootstrap` call of one metric, the panel of each model's ROC AUC and its
sensitivity, specificity, false positive rate and selection rate at the given threshold, gives
every group's value, the value over all rows and the gaps between groups (largest minus
smallest, smallest over largest), each with a percentile interval from resamples drawn within
each group. The fairness differences at the threshold follow fairlearn's definitions:
demographic parity is the selection rate's difference, equalized odds the larger of the true
and false positive rates' differences (its interval from the same resamples).

The panel ranks `order.order_keys` of the scores (the exact float64 order) and counts the
decisions ``score >= threshold`` made in float64 on the host, so neither depends on float32.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.programs import ProgramStore, kept_metric
from jaxmetrics.report.ranking import seed_key
from jaxmetrics.report.result import (
    ByGroup,
    GroupGaps,
    GroupModel,
    GroupRow,
    GroupValue,
    Metadata,
    estimate_outside,
    numbers,
)

# the panel's columns, by model
_AUC, _SENSITIVITY, _SPECIFICITY, _FPR, _SELECTION = range(5)
CONFIDENCE = 0.95


def _numbers(keys, decisions, labels, sample_weight):
    """``[M, 5]``: ROC AUC of the order keys, then sensitivity, specificity, false positive
    rate and selection rate of the 0/1 decisions."""
    counts = jm.confusion_counts(decisions, labels, 0.5, sample_weight=sample_weight)
    total = counts.tp + counts.fp + counts.fn + counts.tn
    selection = (counts.tp + counts.fp) / jnp.where(total > 0, total, jnp.nan)
    return jnp.stack(
        [
            jm.roc_auc(keys, labels, sample_weight=sample_weight),
            jm.recall(counts),
            jm.specificity(counts),
            jm.false_positive_rate(counts),
            selection.astype(jnp.result_type(float)),
        ],
        axis=-1,
    )


@jax.jit  # `by_group` calls it eagerly for all rows: one program, not one per operation
def _panel(keys, decisions, labels, *, sample_weight):
    """`_numbers` as a metric (no programs kept)."""
    return _numbers(keys, decisions, labels, sample_weight)


def _value(result: jm.BootstrapResult, index: tuple, defined: bool = True) -> GroupValue:
    """The value of `result` at `index` (of its fields without the resample axis)."""
    estimate, low, high = numbers([result.estimate[index], result.low[index], result.high[index]])
    if not defined:
        low = high = float("nan")
    undefined = int(np.isnan(result.samples[(slice(None), *index)]).sum())
    return GroupValue(estimate, low, high, undefined, estimate_outside(estimate, low, high))


def _worse_of(first: np.ndarray, second: np.ndarray, estimate: float) -> GroupValue:
    """The larger of two gaps, per resample (NaN if either is), with its percentile interval."""
    samples = np.maximum(first, second)
    defined = samples[~np.isnan(samples)]
    low = high = float("nan")
    if defined.size:
        alpha = (1 - CONFIDENCE) / 2
        low, high = (float(q) for q in np.quantile(defined, [alpha, 1 - alpha]))
    undefined = int(samples.size - defined.size)
    return GroupValue(estimate, low, high, undefined, estimate_outside(estimate, low, high))


def _row(group: str, samples: int, events: int, part: jm.BootstrapResult, at: tuple) -> GroupRow:
    """A group's row (all rows: "all") of a model, its numbers at `at` (group and model) of
    `part`; no intervals with fewer than two of a class."""
    defined = min(events, samples - events) >= 2
    cells = [_value(part, (*at, k), defined) for k in range(5)]
    return GroupRow(group, samples, events, events / samples, *cells[:_FPR], cells[_SELECTION])


def evaluate_groups(
    scores: np.ndarray,
    keys: np.ndarray,
    labels: np.ndarray,
    groups: np.ndarray,
    names: list[str],
    metadata: Metadata,
    store: ProgramStore | None = None,
) -> ByGroup:
    """The by-group section for `scores` ``[M, n]`` (their order keys `keys`), the group of
    each row `groups` (text; at most `read.MAX_GROUPS` distinct values). With a `store`, the
    panel's programs are kept between runs (`programs.kept_metric`)."""
    distinct, index = np.unique(groups, return_inverse=True)
    group_names = [str(name) for name in distinct]
    index = index.reshape(-1).astype(np.int32)
    num_groups = len(group_names)
    decisions = (scores >= metadata.threshold).astype(np.float32)
    result = jm.by_group_bootstrap(
        _panel if store is None else kept_metric(store, "groups", _numbers),
        keys,
        decisions,
        labels,
        groups=index,
        num_groups=num_groups,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        confidence=CONFIDENCE,
    )
    values, overall, difference, ratio = (
        jm.BootstrapResult(*(np.asarray(field) for field in part)) for part in result
    )
    sizes = np.bincount(index, minlength=num_groups)
    positives = np.bincount(index, weights=labels, minlength=num_groups).astype(int)
    notes = []
    for g, name in enumerate(group_names):
        if positives[g] in (0, sizes[g]):
            only = "positive" if positives[g] else "negative"
            notes.append(
                f"group {name!r}: all {sizes[g]} rows are {only}, so its ROC AUC and its "
                f"{'specificity' if positives[g] else 'sensitivity'} are undefined"
            )
        elif min(positives[g], sizes[g] - positives[g]) < 2:
            notes.append(f"group {name!r}: fewer than two of a class, so no intervals")
    models = {}
    for m, model in enumerate(names):
        rows = tuple(
            _row(name, int(sizes[g]), int(positives[g]), values, (g, m))
            for g, name in enumerate(group_names)
        )
        every = _row("all", int(labels.size), int(labels.sum()), overall, (m,))
        gaps = [
            GroupGaps(_value(difference, (m, k)), _value(ratio, (m, k)))
            for k in (_AUC, _SENSITIVITY, _SPECIFICITY, _SELECTION)
        ]
        odds = np.maximum(difference.estimate[m, _SENSITIVITY], difference.estimate[m, _FPR])
        models[model] = GroupModel(
            rows,
            every,
            *gaps,
            demographic_parity_difference=gaps[3].difference,
            equalized_odds_difference=_worse_of(
                difference.samples[:, m, _SENSITIVITY],
                difference.samples[:, m, _FPR],
                numbers([odds])[0],
            ),
        )
    column = metadata.group_column or ""
    return ByGroup(column, metadata.threshold, models, tuple(notes))
