"""Do the validation intervals cover? Calibration intercept and slope, the binned and the debiased
calibration error, net benefit and a group gap, on simulated test sets (issue 29, item 5).

Run by `coverage.py` (``--only validation`` runs these cells alone and merges them into
benchmarks/results/coverage.*); the scoring is the one of coverage.py: the share of nominal 95%
intervals that contain the truth, their mean width and the Monte-Carlo standard error of the
coverage, sqrt(c (1 - c) / sets), plus the number of intervals that are undefined (NaN).

The calibration model: p ~ Beta(2, 3) and y ~ Bernoulli(sigmoid(a + b logit p)), so the truth of
the calibration intercept (when b = 1) is a and of the slope b; the true binned calibration error
with equal-width bins, sqrt(sum_b P(b) (E[p | b] - E[y | b])^2) (its L1 version for the ECE), and
the true net benefit P(p >= t, y = 1) - P(p >= t, y = 0) t / (1 - t) are integrals over the Beta
density, computed on a fine grid. The group gap: two groups with binormal scores of different
separations, whose true AUC difference is Phi(mu_0 / sqrt 2) - Phi(mu_1 / sqrt 2).

Every bootstrap interval comes from one `jm.bootstrap` call over all simulated test sets at once
(the sets are a batch axis; the resamples share their weights across sets); percentile and basic
intervals are read off its resampled values, BCa (where run) is the call's own interval.
"""

from __future__ import annotations

import math
import warnings
from statistics import NormalDist

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm

NORMAL = NormalDist()
Z = NORMAL.inv_cdf(0.975)
BETA = (2.0, 3.0)  # the Beta law of the predicted probabilities
GRID = (np.arange(2_000_000) + 0.5) / 2_000_000  # midpoints on (0, 1) for the integrals


def score(low, high, truth) -> dict:
    """Coverage, its Monte-Carlo error and the mean width; a NaN interval counts as a miss."""
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    covered = (low <= truth) & (truth <= high)
    coverage = float(covered.mean())
    undefined = ~(np.isfinite(low) & np.isfinite(high))
    return {
        "coverage": coverage,
        "mc_error": math.sqrt(max(coverage * (1 - coverage), 1e-12) / covered.size),
        "mean_width": float(np.nanmean(high - low)) if not undefined.all() else math.nan,
        "undefined": int(undefined.sum()),
    }


def from_samples(samples, estimate) -> dict[str, tuple]:
    """Percentile and basic 95% intervals from resampled values ``[resamples, *shape]``."""
    low = np.nanquantile(np.asarray(samples, np.float64), 0.025, axis=0)
    high = np.nanquantile(np.asarray(samples, np.float64), 0.975, axis=0)
    estimate = np.asarray(estimate, np.float64)
    return {"percentile": (low, high), "basic": (2 * estimate - high, 2 * estimate - low)}


def bootstrap(metric, *arrays, key, resamples, method="percentile", stratify=None):
    """`jm.bootstrap`, with the RuntimeWarnings of BCa's fallbacks recorded instead of shown."""
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always", RuntimeWarning)
        result = jm.bootstrap(
            metric, *arrays, key=key, num_resamples=resamples, method=method, stratify=stratify
        )
    return result, [str(w.message) for w in caught if issubclass(w.category, RuntimeWarning)]


# ----------------------------------------------------------------------------- the truths


def _beta_density(p):
    a, b = BETA
    return (
        p ** (a - 1)
        * (1 - p) ** (b - 1)
        / math.exp(math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b))
    )


def _outcome_probability(p, a, b):
    """P(y = 1 | p) of the simulation: sigmoid(a + b logit p)."""
    return 1 / (1 + np.exp(-(a + b * np.log(p / (1 - p)))))


def true_binned_error(a: float, b: float, num_bins: int) -> tuple[float, float]:
    """(L1, L2) binned calibration error of the model with `num_bins` equal-width bins."""
    density = _beta_density(GRID) / GRID.size
    gap = (GRID - _outcome_probability(GRID, a, b)) * density
    bins = np.minimum((GRID * num_bins).astype(int), num_bins - 1)
    mass = np.bincount(bins, density, num_bins)
    mean_gap = np.bincount(bins, gap, num_bins) / mass  # E[p | b] - E[y | b]
    return float(np.sum(mass * np.abs(mean_gap))), float(np.sqrt(np.sum(mass * mean_gap**2)))


def true_net_benefit(a: float, b: float, threshold: float) -> float:
    """P(p >= t, y = 1) - P(p >= t, y = 0) t / (1 - t) of the model."""
    density = _beta_density(GRID) / GRID.size * (GRID >= threshold)
    outcome = _outcome_probability(GRID, a, b)
    odds = threshold / (1 - threshold)
    return float(np.sum(density * (outcome - (1 - outcome) * odds)))


def binormal_mean(auc: float) -> float:
    """mu such that Phi(mu / sqrt(2)) = auc."""
    return math.sqrt(2) * NORMAL.inv_cdf(auc)


# ----------------------------------------------------------------------------- the cells


def simulate_calibration(key, sets: int, n: int, a: float, b: float):
    """Probabilities ``[sets, n]`` ~ Beta(2, 3) and labels ~ Bernoulli(sigmoid(a + b logit p))."""
    probability_key, label_key = jax.random.split(key)
    probs = jax.random.beta(probability_key, *BETA, (sets, n))
    probs = jnp.clip(probs, 1e-6, 1 - 1e-6)
    outcome = jax.nn.sigmoid(a + b * jnp.log(probs / (1 - probs)))
    labels = jax.random.bernoulli(label_key, outcome).astype(jnp.int32)
    return probs.astype(jnp.float32), labels


def _recalibration(probs, labels, *, sample_weight=None):
    return jnp.stack(
        [
            jm.calibration_intercept(probs, labels, sample_weight=sample_weight).value,
            jm.calibration_slope(probs, labels, sample_weight=sample_weight).value,
        ],
        axis=-1,
    )


def calibration_cell(key, sets, n, a, b, resamples) -> dict:
    """Wald (the functions' own) and bootstrap percentile and basic intervals of the
    calibration intercept (scored only when b = 1, where its truth is a) and slope (truth b)."""
    probs, labels = simulate_calibration(key, sets, n, a, b)
    out = {}
    result, _ = bootstrap(
        _recalibration, probs, labels, key=jax.random.fold_in(key, 1), resamples=resamples
    )
    boot = from_samples(result.samples, result.estimate)
    for column, (name, truth) in enumerate((("intercept", a), ("slope", b))):
        if name == "intercept" and b != 1:
            continue
        wald = (jm.calibration_intercept if column == 0 else jm.calibration_slope)(probs, labels)
        out[f"{name} Wald"] = score(wald.low, wald.high, truth)
        for method, (low, high) in boot.items():
            out[f"{name} {method}"] = score(low[:, column], high[:, column], truth)
    return out


BINS = (10, 15)


def _calibration_errors(probs, labels, *, sample_weight=None):
    """The binned ECE and the debiased squared L2 error, with 10 and 15 equal-width bins."""
    ece = [
        jm.expected_calibration_error(probs, labels, num_bins=k, sample_weight=sample_weight)
        for k in BINS
    ]
    debiased = [
        jm.debiased_calibration_error(
            probs, labels, num_bins=k, squared=True, sample_weight=sample_weight
        )
        for k in BINS
    ]
    return jnp.stack(ece + debiased, axis=-1)


def _one_sided(samples, estimate):
    """Outputs whose defined resamples all lie on one side of the estimate (BCa's z0 infinite)."""
    samples, estimate = np.asarray(samples), np.asarray(estimate)
    defined = (~np.isnan(samples)).sum(0)
    share = ((samples < estimate).sum(0) + 0.5 * (samples == estimate).sum(0)) / defined
    return (share == 0) | (share == 1)


def calibration_error_cell(key, sets, n, a, b, resamples, with_bca) -> tuple[dict, dict]:
    """Percentile, basic and (`with_bca`) BCa intervals of the binned ECE against the true L1
    binned error, and of the debiased calibration error against the true L2 binned error: the
    interval of the squared error (unbiased, may be negative), its ends clipped at 0 and rooted.
    Returns the methods and a record of the truths, mean estimates and BCa's fallbacks."""
    probs, labels = simulate_calibration(key, sets, n, a, b)
    result, caught = bootstrap(
        _calibration_errors,
        probs,
        labels,
        key=jax.random.fold_in(key, 2),
        resamples=resamples,
        method="bca" if with_bca else "percentile",
    )
    intervals = from_samples(result.samples, result.estimate)
    if with_bca:
        intervals["BCa"] = (np.asarray(result.low), np.asarray(result.high))
    one_sided = _one_sided(result.samples, result.estimate)
    estimate = np.asarray(result.estimate, np.float64)
    out, notes = (
        {},
        {
            "truth": {},
            "mean_estimate": {},
            "root_mean_squared": {},
            "bca_fallbacks": {},
            "warnings": caught,
        },
    )
    for index, num_bins in enumerate(BINS):
        l1, l2 = true_binned_error(a, b, num_bins)
        for column, name, truth in ((index, "ECE", l1), (len(BINS) + index, "debiased", l2)):
            label = f"{name} {num_bins} bins"
            notes["truth"][label] = truth
            value = estimate[:, column]
            if name == "debiased":
                value = np.sqrt(np.maximum(value, 0))
            notes["mean_estimate"][label] = float(np.nanmean(value))
            if name == "debiased":  # the root of the mean squared error, unbiased before the root
                squared = np.nanmean(estimate[:, column])
                notes["root_mean_squared"][label] = float(np.sqrt(max(squared, 0.0)))
            notes["bca_fallbacks"][label] = int(one_sided[:, column].sum()) if with_bca else 0
            for method, (low, high) in intervals.items():
                low, high = low[:, column], high[:, column]
                if name == "debiased":
                    low, high = np.sqrt(np.maximum(low, 0)), np.sqrt(np.maximum(high, 0))
                out[f"{label} {method}"] = score(low, high, truth)
    return out, notes


THRESHOLDS = (0.1, 0.2)


def net_benefit_cell(key, sets, n, a, b, resamples) -> dict:
    """Bootstrap percentile and basic intervals of the net benefit at each of `THRESHOLDS`."""
    probs, labels = simulate_calibration(key, sets, n, a, b)
    thresholds = jnp.asarray(THRESHOLDS, jnp.float32)

    def metric(probs, labels, *, sample_weight=None):
        return jm.net_benefit(probs, labels, thresholds, sample_weight=sample_weight)

    result, _ = bootstrap(
        metric, probs, labels, key=jax.random.fold_in(key, 3), resamples=resamples
    )
    out = {}
    for method, (low, high) in from_samples(result.samples, result.estimate).items():
        for column, threshold in enumerate(THRESHOLDS):
            truth = true_net_benefit(a, b, threshold)
            out[f"t={threshold} {method}"] = score(low[:, column], high[:, column], truth)
    return out


GROUP_SHARE, GROUP_PREVALENCE = 0.6, 0.25  # group 0's share of the rows; positives per group


def simulate_groups(key, sets, n, auc_0, auc_1):
    """Binormal scores ``[sets, n]`` with fixed labels and groups (the class and group sizes
    are fixed, as in coverage.py's AUC cells): group g's positives are N(mu_g, 1)."""
    sizes = [round(GROUP_SHARE * n), n - round(GROUP_SHARE * n)]
    groups = np.repeat([0, 1], sizes).astype(np.int32)
    labels = np.concatenate([(np.arange(m) < round(GROUP_PREVALENCE * m)) for m in sizes])
    labels = labels.astype(np.int32)
    shift = np.where(groups == 0, binormal_mean(auc_0), binormal_mean(auc_1)) * labels
    scores = jax.random.normal(key, (sets, n)) + jnp.asarray(shift, jnp.float32)
    return scores.astype(jnp.float32), labels, groups


def _auc_gap(scores, labels, groups, *, sample_weight=None):
    """AUC of group 0 minus AUC of group 1, each with a weight mask."""
    weight = jnp.ones(groups.shape) if sample_weight is None else sample_weight
    first = jm.roc_auc(scores, labels, sample_weight=weight * (groups == 0))
    second = jm.roc_auc(scores, labels, sample_weight=weight * (groups == 1))
    return first - second


def group_gap_cell(key, sets, n, auc_0, auc_1, resamples) -> dict:
    """Bootstrap (stratified by group and class) percentile and basic intervals of the AUC gap
    between two groups, and the Wald interval from the two groups' DeLong variances (the groups
    are independent)."""
    scores, labels, groups = simulate_groups(key, sets, n, auc_0, auc_1)
    truth = auc_0 - auc_1
    out = {}
    result, _ = bootstrap(
        _auc_gap,
        scores,
        labels,
        groups,
        key=jax.random.fold_in(key, 4),
        resamples=resamples,
        stratify=2 * groups + labels,
    )
    for method, (low, high) in from_samples(result.samples, result.estimate).items():
        out[f"{method} (stratified)"] = score(low, high, truth)
    first = jm.delong(scores[:, groups == 0], labels[groups == 0])
    second = jm.delong(scores[:, groups == 1], labels[groups == 1])
    gap = first.auc - second.auc
    half = Z * jnp.sqrt(first.variance + second.variance)
    out["DeLong (independent groups)"] = score(gap - half, gap + half, truth)
    return out


# ----------------------------------------------------------------------------- the study

RECALIBRATION_MODELS = ((0.0, 1.0), (-0.5, 1.0), (0.0, 0.6), (0.3, 1.5))
ERROR_MODELS = (("calibrated", 0.0, 1.0), ("overconfident", 0.0, 0.7), ("miscalibrated", 0.3, 0.6))
GROUP_AUCS = ((0.8, 0.8), (0.85, 0.7))


def run(key, *, sets: int, resamples: int, quick: bool = False, log=print) -> dict:
    """Every validation cell (one small cell each with `quick`): rows per section."""
    sections = {"recalibration": [], "calibration_error": [], "net_benefit": [], "group_gap": []}

    def cell_key():
        nonlocal key
        key, sub = jax.random.split(key)
        return sub

    for n in [1000] if quick else [200, 1000]:
        for a, b in RECALIBRATION_MODELS[:1] if quick else RECALIBRATION_MODELS:
            methods = calibration_cell(cell_key(), sets, n, a, b, resamples)
            sections["recalibration"].append(dict(n=n, a=a, b=b, methods=methods))
            log(f"recalibration n={n} a={a} b={b}: {_summary(methods)}")
    for n in [400] if quick else [400, 2000]:
        for model, a, b in ERROR_MODELS[1:2] if quick else ERROR_MODELS:
            methods, notes = calibration_error_cell(
                cell_key(), sets, n, a, b, resamples, with_bca=not quick
            )
            row = dict(n=n, model=model, a=a, b=b, methods=methods, **notes)
            sections["calibration_error"].append(row)
            log(f"calibration error n={n} {model}: {_summary(methods)}")
            for warning in notes["warnings"]:
                log(f"  warning: {warning}")
    for n in [1000] if quick else [200, 1000]:
        for model, a, b in ERROR_MODELS[:1] if quick else ERROR_MODELS:
            methods = net_benefit_cell(cell_key(), sets, n, a, b, resamples)
            sections["net_benefit"].append(dict(n=n, model=model, a=a, b=b, methods=methods))
            log(f"net benefit n={n} {model}: {_summary(methods)}")
    for n in [2000] if quick else [400, 2000]:
        for auc_0, auc_1 in GROUP_AUCS[1:] if quick else GROUP_AUCS:
            methods = group_gap_cell(cell_key(), sets, n, auc_0, auc_1, resamples)
            sections["group_gap"].append(dict(n=n, auc_0=auc_0, auc_1=auc_1, methods=methods))
            log(f"group gap n={n} AUC {auc_0} vs {auc_1}: {_summary(methods)}")
    return sections


def _summary(methods: dict) -> str:
    return ", ".join(f"{name} {m['coverage']:.3f}" for name, m in methods.items())


_LEADS = {
    "recalibration": ("n", "a", "b"),
    "calibration_error": ("n", "model", "a", "b"),
    "net_benefit": ("n", "model", "a", "b"),
    "group_gap": ("n", "auc_0", "auc_1"),
}


def _table(rows: list[dict], lead: tuple[str, ...]) -> str:
    methods = list(dict.fromkeys(name for row in rows for name in row["methods"]))
    header = "| " + " | ".join(lead + tuple(methods)) + " |"
    lines = [header, "|" + "---|" * (len(lead) + len(methods))]
    for row in rows:
        cells = [str(row[name]) for name in lead]
        for method in methods:
            m = row["methods"].get(method)
            cells.append("–" if m is None else f"{m['coverage']:.3f} ({m['mean_width']:.3f})")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def _estimates_table(rows: list[dict]) -> str:
    """Truth, mean estimate and BCa's fallbacks of every calibration-error cell."""
    lines = [
        "| n | model | estimator | truth | mean estimate | root of the mean square "
        "| BCa fallbacks (one-sided) |",
        "|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        for label, truth in row["truth"].items():
            root = row["root_mean_squared"].get(label)
            lines.append(
                f"| {row['n']} | {row['model']} | {label} | {truth:.4f} | "
                f"{row['mean_estimate'][label]:.4f} | {'–' if root is None else f'{root:.4f}'} "
                f"| {row['bca_fallbacks'][label]} |"
            )
    return "\n".join(lines)


def markdown(sections: dict, sets: int, resamples: int, seconds: float) -> str:
    b = BETA
    return (
        "## Validation intervals (issue 29)\n\n"
        f"p ~ Beta({b[0]:g}, {b[1]:g}), y ~ Bernoulli(sigmoid(a + b logit p)); {sets} test sets "
        f"per cell, {resamples} resamples, {seconds:.0f} s. Coverage (mean width).\n\n"
        "### Calibration intercept (b = 1 only) and slope\n\n"
        + _table(sections["recalibration"], _LEADS["recalibration"])
        + "\n\n### Binned ECE (truth: the L1 binned error) and debiased L2 error (truth: the L2 "
        "binned error; interval of the squared error, ends clipped at 0 and rooted)\n\n"
        + _table(sections["calibration_error"], _LEADS["calibration_error"])
        + "\n\n"
        + _estimates_table(sections["calibration_error"])
        + "\n\n### Net benefit (bootstrap)\n\n"
        + _table(sections["net_benefit"], _LEADS["net_benefit"])
        + "\n\n### AUC gap between two groups (60% / 40% of the rows, 25% positives in each)\n\n"
        + _table(sections["group_gap"], _LEADS["group_gap"])
        + "\n"
    )
