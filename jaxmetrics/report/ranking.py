"""The report's bootstrap: every ranking number of every model from the same resamples.

One `jm.bootstrap` of one metric, the panel (ROC AUC, AP, the partial AUC, and the sensitivity
at the clinical and band specificities), gives all the intervals; its samples give the paired
comparison too, both models having been scored on the same resamples. The same call bootstraps
the validation section's numbers (`Extra`) on the same resamples: one compiled loop, not two.

The panel's metrics depend on the order of the scores only, so it is given exact order keys
(`order.order_keys`) in place of the float64 scores, which float32 would merge where they are close.
With a `ProgramStore` (the command line with its caches), the panel's programs are kept between
runs with `jax.export` (`programs.kept_metric`): a second run does not trace it again.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.programs import ProgramStore, kept_metric
from jaxmetrics.report.result import (
    AucInterval,
    Clinical,
    Data,
    Interval,
    Metadata,
    RocBand,
    estimate_outside,
    has_intervals,
    interval_or_nan,
    numbers,
)

Progress = Callable[[str, int, int], None]

# The high-specificity region: the partial AUC over specificity >= 0.9 and the sensitivity at
# 90% and 95% specificity; the ROC band: sensitivity intervals at these specificities.
PARTIAL_FPR = (0.0, 0.1)
CLINICAL_SPECIFICITIES = (0.90, 0.95)
BAND_SPECIFICITIES = tuple(k / 20 for k in range(21))
_SENSITIVITIES = jm.SensitivitiesAt(CLINICAL_SPECIFICITIES + BAND_SPECIFICITIES)
LABEL = "ROC AUC, average precision and sensitivities"


def seed_key(seed: int):
    """A threefry key for a seed of up to 64 bits (jax.random.key keeps only 32 without x64)."""
    words = np.array([seed >> 32, seed & 0xFFFFFFFF], np.uint32)
    return jax.random.wrap_key_data(words, impl="threefry2x32")


def _panel(keys, labels, sample_weight):
    weights = dict(sample_weight=sample_weight)
    partial = dict(fpr_range=PARTIAL_FPR, correct=True)
    return jnp.concatenate(
        [
            jnp.stack(
                [
                    jm.roc_auc(keys, labels, **weights),
                    jm.average_precision(keys, labels, **weights),
                    jm.partial_roc_auc(keys, labels, **partial, **weights),
                ],
                axis=-1,
            ),
            _SENSITIVITIES(keys, labels, **weights),
        ],
        axis=-1,
    )


class Extra(NamedTuple):
    """More numbers to bootstrap on the same resamples as the ranking panel: `function(scores,
    labels, weights)` ``[M2, columns]`` of the `rows` of the scores ``[M, n]`` (the probability
    models' numbers of `validation`: one compiled loop and one kept program for both)."""

    rows: tuple[int, ...]
    function: Callable
    columns: int
    constants: tuple  # every value `function` depends on beyond its code (names its program)


@functools.cache  # one function per extra: a second report in a process reuses its compilation
def _joint(extra: Extra | None):
    """The bootstrapped function of (keys, [scores,] labels, weights): the ranking panel
    ``[M, K]`` and the `extra` numbers, flattened into one vector (split again by `_split`)."""

    def joint(keys, *rest):
        *scores, labels, weights = rest
        values = [_panel(keys, labels, weights).reshape(-1)]
        if extra is not None:
            chosen = scores[0][np.array(extra.rows)]
            values.append(extra.function(chosen, labels, weights).reshape(-1))
        return jnp.concatenate(values)

    return joint


@functools.cache
def _unkept(extra: Extra | None):
    """`_joint(extra)` as the bootstrap's metric (no programs kept)."""
    joint = _joint(extra)
    return jm.estimate_in_loop(lambda *arrays, sample_weight: joint(*arrays, sample_weight))


def _split(result: jm.BootstrapResult, shapes: list[tuple[int, ...]]) -> list[jm.BootstrapResult]:
    """`result` of the flat vector `_joint` returns, as one result per part of these shapes."""
    parts, start = [], 0
    for shape in shapes:
        size = int(np.prod(shape))
        parts.append(
            jm.BootstrapResult(
                *(f[..., start : start + size].reshape(f.shape[:-1] + shape) for f in result)
            )
        )
        start += size
    return parts


class Ranking(NamedTuple):
    """Each model's ROC AUC and AP intervals (DeLong's not yet filled in) and clinical numbers,
    its ROC band, and the bootstrap samples of AUC and AP (the paired comparison reuses them)."""

    roc_auc: list[AucInterval]
    average_precision: list[Interval]
    clinical: list[Clinical]
    roc_band: list[RocBand]
    auc_samples: jm.BootstrapResult
    ap_samples: jm.BootstrapResult


def interval(result: jm.BootstrapResult, m: int, k: int, data: Data) -> Interval:
    """Model `m`'s metric `k` of a bootstrap `result` with fields [M, K] (samples [B, M, K])."""
    values = numbers([result.estimate[m, k], result.low[m, k], result.high[m, k]])
    values = interval_or_nan(values, data)
    undefined = int(np.isnan(result.samples[:, m, k]).sum())
    return Interval(*values, undefined, estimate_outside(*values))


def evaluate_ranking(
    keys: np.ndarray,
    labels: np.ndarray,
    data: Data,
    metadata: Metadata,
    progress: Progress | None = None,
    clusters: np.ndarray | None = None,
    store: ProgramStore | None = None,
    scores: np.ndarray | None = None,
    extra: Extra | None = None,
) -> tuple[Ranking, jm.BootstrapResult | None]:
    """Bootstrap (percentile) intervals of ROC AUC, AP and the clinical numbers, and the ROC
    band, of `order.order_keys` of the scores (clustered data: whole clusters resampled); and the
    bootstrap of the `extra` numbers of the `scores` on the same resamples (None without).

    The keys are checked (the reader checked the scores): the estimate comes from the compiled
    loop (`jm.estimate_in_loop`), not from eager calls of the panel (more programs to compile).
    With a `store`, the panel's programs are kept between runs (`programs.kept_metric`)."""
    tick = None if progress is None else (lambda done, total: progress(LABEL, done, total))
    arrays = (keys, labels) if extra is None else (keys, scores, labels)
    if store is None:
        metric = _unkept(extra)
    elif extra is None:
        metric = kept_metric(store, "ranking", _joint(None))
    else:  # the extra's program depends on its rows and its constants (thresholds)
        constants = [list(extra.rows), extra.constants]
        metric = kept_metric(store, "ranking-validation", _joint(extra), constants)
    result = jm.bootstrap(
        metric,
        *arrays,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        groups=clusters,
        progress=tick,
    )
    # numpy from here on: indexing device arrays would compile one small program per shape
    result = jm.BootstrapResult(*(np.asarray(field) for field in result))
    shapes = [(keys.shape[0], 3 + len(CLINICAL_SPECIFICITIES) + len(BAND_SPECIFICITIES))]
    if extra is not None:
        shapes.append((len(extra.rows), extra.columns))
    panel, *others = _split(result, shapes)
    auc, ap = (jm.BootstrapResult(*(field[..., k] for field in panel)) for k in (0, 1))
    nan = float("nan")
    aucs, aps, clinical, bands = [], [], [], []
    first_band = 3 + len(CLINICAL_SPECIFICITIES)
    for m in range(keys.shape[0]):
        auc_m = interval(panel, m, 0, data)
        aucs.append(AucInterval(*auc_m[:3], nan, nan, *auc_m[3:]))
        aps.append(interval(panel, m, 1, data))
        clinical.append(Clinical(*(interval(panel, m, k, data) for k in (2, 3, 4))))
        band = [numbers(field[m, first_band:]) for field in panel[:3]]
        if not has_intervals(data):
            band[1] = band[2] = (nan,) * len(BAND_SPECIFICITIES)
        bands.append(RocBand(BAND_SPECIFICITIES, *band))
    return Ranking(aucs, aps, clinical, bands, auc, ap), (others[0] if others else None)
