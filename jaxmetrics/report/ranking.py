"""The report's bootstrap: every ranking number of every model from the same resamples.

One `jm.bootstrap` of one metric, the panel (ROC AUC, AP, the partial AUC, and the sensitivity
at the clinical and band specificities), gives all the intervals; its samples give the paired
comparison too, both models having been scored on the same resamples.

The panel's metrics depend on the order of the scores only, so it is given exact order keys
(`order_keys`) in place of the float64 scores, which float32 would merge where they are close.
With a `ProgramStore` (the command line with its caches), the panel's programs are kept between
runs with `jax.export` (`stored_panel`): a second run does not trace it again.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics.report.programs import ProgramStore
from jaxmetrics.report.read import ReportError
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
# the smallest normal float32's bits: every key is a positive normal float, ordered as its bits
_FIRST_KEY = np.uint32(0x00800000)
_MOST_KEYS = 0x7F800000 - 0x00800000  # past these, the bits would be infinity and NaN


def order_keys(scores: np.ndarray) -> np.ndarray:
    """float32 keys in the order of `scores`, ties kept: the rank of each score among all the
    distinct scores (every model's), as the bits of a positive float32."""
    distinct, ranks = np.unique(scores, return_inverse=True)
    if distinct.size > _MOST_KEYS:
        raise ReportError(f"{distinct.size} distinct scores: too many to rank exactly")
    return (ranks.reshape(scores.shape).astype(np.uint32) + _FIRST_KEY).view(np.float32)


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


# the keys are checked (the reader checked the scores): the bootstrap takes the estimate from its
# compiled loop, and the panel's eager call (four more programs, 0.7 s of a warm run) is left out
@jm.estimate_in_loop
def ranking_panel(keys, labels, *, sample_weight):
    """Every bootstrapped ranking number of a model on a last axis: ROC AUC, AP, the partial
    AUC, then the sensitivities at the clinical and band specificities (`order_keys` of the
    scores: the metrics depend on their order only)."""
    return _panel(keys, labels, sample_weight)


def stored_panel(store: ProgramStore):
    """`ranking_panel` whose programs `store` keeps.

    The bootstrap evaluates its metric under `jax.vmap` inside its compiled loop; with
    `custom_vmap`, that batched form is a kept program (the panel of a step of resamples, one
    weight vector each), and so is the plain form, which `custom_vmap` traces for its shapes.
    An eager call (the estimate, where the loop has no slot for it) is `ranking_panel`'s."""
    resampled = jax.vmap(_panel, in_axes=(None, None, 0))

    @jax.custom_batching.custom_vmap
    def panel(keys, labels, weights):
        return store.call("ranking-panel", _panel, keys, labels, weights)

    @panel.def_vmap
    def batched(axis_size, in_batched, keys, labels, weights):
        if list(in_batched) == [False, False, True]:  # the bootstrap's step: weights vary
            return store.call("ranking-panel-resampled", resampled, keys, labels, weights), True
        axes = tuple(0 if mapped else None for mapped in in_batched)
        return jax.vmap(_panel, in_axes=axes)(keys, labels, weights), True

    @jm.estimate_in_loop
    def metric(keys, labels, *, sample_weight):
        if not isinstance(sample_weight, jax.core.Tracer):  # an eager call, as without a store
            return _panel(keys, labels, sample_weight)
        return panel(keys, labels, sample_weight)

    return metric


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
) -> Ranking:
    """Bootstrap (percentile) intervals of ROC AUC, AP and the clinical numbers, and the ROC
    band, of `order_keys` of the scores (clustered data: whole clusters resampled)."""
    tick = None if progress is None else (lambda done, total: progress(LABEL, done, total))
    panel = jm.bootstrap(
        ranking_panel if store is None else stored_panel(store),
        keys,
        labels,
        key=seed_key(metadata.seed),
        num_resamples=metadata.resamples,
        groups=clusters,
        progress=tick,
    )
    # numpy from here on: indexing device arrays would compile one small program per shape
    panel = jm.BootstrapResult(*(np.asarray(field) for field in panel))
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
    return Ranking(aucs, aps, clinical, bands, auc, ap)
