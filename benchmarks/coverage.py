"""Do the intervals cover? Coverage of every interval method on simulated test sets.

Binormal scores: negatives N(0, 1), positives N(mu, 1), so the true AUC is Phi(mu / sqrt(2))
(the binormal model). Each cell of the grid (test-set size n, prevalence, true AUC) simulates `sets`
independent test sets with fixed class sizes n+ = max(2, round(prevalence * n)) and n- = n - n+,
and records, for each 95% interval method, the share of intervals that contain the true AUC, the
mean width, and the Monte-Carlo standard error of the coverage, sqrt(c (1 - c) / sets).

The study is batched: the test sets are one axis (scores [sets, n]; DeLong treats them as `sets`
"models" on shared labels), the resamples another (jaxmetrics.bootstrap draws them once for all
test sets). Methods: DeLong, Hanley-McNeil, bootstrap percentile, basic and BCa, each bootstrap
also stratified by class (pROC's default). BCa needs n leave-one-out evaluations per test set, so
it runs only where n <= 1,000.

For recall, the true recall at threshold 0 is 1 - Phi(-mu); the number of detected positives is
Binomial(n+, recall), simulated directly, and Wilson, Clopper-Pearson, Agresti-Coull and the
plain normal (Wald) intervals are scored the same way.

The validation intervals of issue 29 (calibration intercept and slope, binned and debiased
calibration error, net benefit, a group gap) are scored in coverage_validation.py, after the grid.

    python benchmarks/coverage.py --quick   # one cell, seconds (the test suite runs this)
    python benchmarks/coverage.py           # the full grid; writes benchmarks/results/coverage.*
    python benchmarks/coverage.py --only validation   # the validation cells alone, merged into
                                                      # the results files (with --quick: printed)
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import time
from pathlib import Path
from statistics import NormalDist

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm

RESULTS = Path(__file__).resolve().parent / "results"
NORMAL = NormalDist()


def _provenance(sets: int, resamples: int, seconds: float) -> dict:
    """What a recorded study says of its run: sizes, time, backend, JAX version, date."""
    return dict(
        sets=sets,
        resamples=resamples,
        seconds=seconds,
        backend=jax.default_backend(),
        jax=jax.__version__,
        date=time.strftime("%Y-%m-%d %H:%M"),
    )


def binormal_mean(auc: float) -> float:
    """mu such that Phi(mu / sqrt(2)) = auc."""
    return math.sqrt(2) * NORMAL.inv_cdf(auc)


def simulate(key, sets: int, n: int, prevalence: float, auc: float):
    positives = max(2, round(prevalence * n))
    labels = np.zeros(n, np.int32)
    labels[:positives] = 1
    noise = jax.random.normal(key, (sets, n))
    scores = noise + binormal_mean(auc) * jnp.asarray(labels)
    return scores.astype(jnp.float32), labels


def score(low, high, truth) -> dict:
    low, high = np.asarray(low, np.float64), np.asarray(high, np.float64)
    covered = (low <= truth) & (truth <= high)
    coverage = float(covered.mean())
    return {
        "coverage": coverage,
        "mc_error": math.sqrt(max(coverage * (1 - coverage), 1e-12) / covered.size),
        "mean_width": float((high - low).mean()),
    }


def auc_cell(key, sets, n, prevalence, auc, resamples, with_bca) -> dict:
    scores, labels = simulate(key, sets, n, prevalence, auc)
    positives = int(labels.sum())
    out = {}
    delong = jm.delong(scores, labels)
    out["DeLong"] = score(delong.low, delong.high, auc)
    z = NORMAL.inv_cdf(0.975)
    se = jm.hanley_mcneil_standard_error(delong.auc, positives, n - positives)
    out["Hanley-McNeil"] = score(
        jnp.clip(delong.auc - z * se, 0, 1), jnp.clip(delong.auc + z * se, 0, 1), auc
    )
    for stratified in (False, True):
        suffix = " (stratified)" if stratified else ""
        method = "bca" if with_bca else "percentile"
        result = jm.bootstrap(
            jm.roc_auc,
            scores,
            labels,
            key=jax.random.fold_in(key, 7 + stratified),
            num_resamples=resamples,
            method=method,
            stratify=labels if stratified else None,
        )
        samples = result.samples
        low = jnp.nanquantile(samples, 0.025, axis=0)
        high = jnp.nanquantile(samples, 0.975, axis=0)
        out["percentile" + suffix] = score(low, high, auc)
        out["basic" + suffix] = score(2 * result.estimate - high, 2 * result.estimate - low, auc)
        if with_bca:
            out["BCa" + suffix] = score(result.low, result.high, auc)
    return out


PARTIAL_MAX_FPR = 0.1
SPECIFICITY = 0.9


def true_clinical(auc: float) -> tuple[float, float]:
    """(McClish-standardised partial AUC over FPR <= 0.1, sensitivity at specificity 0.9) of
    the binormal model: TPR(f) = Phi(mu + Phi^-1(f)), integrated by the trapezoid rule."""
    mu = binormal_mean(auc)
    fpr = np.linspace(1e-12, PARTIAL_MAX_FPR, 200_001)
    tpr = np.array([NORMAL.cdf(mu + NORMAL.inv_cdf(f)) for f in fpr[::100]])
    tpr = np.interp(fpr, fpr[::100], tpr)
    area = float(np.sum((tpr[1:] + tpr[:-1]) / 2 * np.diff(fpr)))
    smallest, largest = PARTIAL_MAX_FPR**2 / 2, PARTIAL_MAX_FPR
    partial = (1 + (area - smallest) / (largest - smallest)) / 2
    return partial, NORMAL.cdf(mu - NORMAL.inv_cdf(SPECIFICITY))


def _clinical(scores, labels, *, sample_weight=None):
    return jnp.stack(
        [
            jm.partial_roc_auc(
                scores,
                labels,
                fpr_range=(0.0, PARTIAL_MAX_FPR),
                correct=True,
                sample_weight=sample_weight,
            ),
            jm.sensitivity_at_specificity(
                scores, labels, min_specificity=SPECIFICITY, sample_weight=sample_weight
            ).value,
        ],
        axis=-1,
    )


def clinical_cell(key, sets, n, prevalence, auc, resamples) -> dict:
    """Stratified percentile bootstrap intervals (pROC's default) of the partial AUC and of the
    sensitivity at 90% specificity."""
    scores, labels = simulate(key, sets, n, prevalence, auc)
    result = jm.bootstrap(
        _clinical,
        scores,
        labels,
        key=jax.random.fold_in(key, 11),
        num_resamples=resamples,
        stratify=labels,
    )
    partial, sensitivity = true_clinical(auc)
    return {
        "partial AUC (percentile)": score(result.low[:, 0], result.high[:, 0], partial),
        "sens @ spec 0.9 (percentile)": score(result.low[:, 1], result.high[:, 1], sensitivity),
    }


def recall_cell(key, sets, positives, recall) -> dict:
    successes = jax.random.binomial(key, positives, recall, (sets,)).astype(jnp.float32)
    trials = jnp.full((sets,), float(positives))
    out = {}
    for name, method in (
        ("Wilson", jm.wilson_interval),
        ("Clopper-Pearson", jm.clopper_pearson_interval),
        ("Agresti-Coull", jm.agresti_coull_interval),
    ):
        low, high = method(successes, trials)
        out[name] = score(low, high, recall)
    p = successes / trials
    half = NORMAL.inv_cdf(0.975) * jnp.sqrt(p * (1 - p) / trials)
    out["normal (Wald)"] = score(p - half, p + half, recall)
    return out


def markdown(rows: list[dict], kind: str) -> str:
    methods = list(rows[0]["methods"])
    if kind == "auc":
        header = "| n | prevalence | n+ | AUC | " + " | ".join(methods) + " |"
    else:
        header = "| n+ | recall | " + " | ".join(methods) + " |"
    lines = [header, "|" + "---|" * (header.count("|") - 1)]
    for row in rows:
        cells = []
        for method in methods:
            m = row["methods"].get(method)
            cells.append("–" if m is None else f"{m['coverage']:.3f} ({m['mean_width']:.3f})")
        if kind == "auc":
            lead = f"| {row['n']} | {row['prevalence']:.0%} | {row['positives']} | {row['auc']} | "
        else:
            lead = f"| {row['positives']} | {row['recall']} | "
        lines.append(lead + " | ".join(cells) + " |")
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="one cell: n = 1000, AUC 0.75, 50%%")
    parser.add_argument("--sets", type=int, default=None, help="simulated test sets per cell")
    parser.add_argument("--resamples", type=int, default=None, help="bootstrap resamples")
    parser.add_argument(
        "--only", choices=["validation"], help="run only these cells; merge them into the results"
    )
    args = parser.parse_args()
    if args.only == "validation":
        validation(args, jax.random.key(29))
        return
    sets = args.sets or 300
    resamples = args.resamples or (300 if args.quick else 400)
    if args.quick:
        sizes, prevalences, aucs = [1000], [0.5], [0.75]
    else:
        sizes, prevalences, aucs = [50, 200, 1000, 10000], [0.5, 0.1, 0.01], [0.6, 0.75, 0.9, 0.98]
    started = time.perf_counter()
    key = jax.random.key(2026)
    auc_rows = []
    for n in sizes:
        for prevalence in prevalences:
            for auc in aucs:
                key, cell_key = jax.random.split(key)
                methods = auc_cell(
                    cell_key,
                    sets,
                    n,
                    prevalence,
                    auc,
                    resamples,
                    with_bca=n <= 1000 and not args.quick,
                )
                positives = max(2, round(prevalence * n))
                auc_rows.append(
                    dict(n=n, prevalence=prevalence, positives=positives, auc=auc, methods=methods)
                )
                summary = ", ".join(f"{k} {v['coverage']:.3f}" for k, v in methods.items())
                print(
                    f"n={n:>5} prevalence={prevalence:<4} n+={positives:<4} AUC={auc}: {summary}",
                    flush=True,
                )
    clinical_rows = []
    for n in [1000] if args.quick else [200, 1000, 10000]:
        for prevalence in [0.5] if args.quick else [0.5, 0.1]:
            for auc in [0.75] if args.quick else [0.75, 0.9]:
                key, cell_key = jax.random.split(key)
                methods = clinical_cell(cell_key, sets, n, prevalence, auc, resamples)
                positives = max(2, round(prevalence * n))
                clinical_rows.append(
                    dict(n=n, prevalence=prevalence, positives=positives, auc=auc, methods=methods)
                )
    recall_rows = []
    for positives in sorted({max(2, round(p * n)) for n in sizes for p in prevalences}):
        for recall in [0.8] if args.quick else [0.5, 0.8, 0.95, 0.99]:
            key, cell_key = jax.random.split(key)
            recall_rows.append(
                dict(
                    positives=positives,
                    recall=recall,
                    methods=recall_cell(cell_key, sets * 10, positives, recall),
                )
            )
    seconds = time.perf_counter() - started
    print("\nAUC: coverage of nominal 95% intervals (mean width)")
    print(markdown(auc_rows, "auc"))
    print(
        "\npartial AUC (FPR <= 0.1, McClish) and sensitivity at 90% specificity: coverage of "
        "nominal 95% stratified percentile intervals (mean width)"
    )
    print(markdown(clinical_rows, "auc"))
    print("\nrecall: coverage of nominal 95% intervals (mean width)")
    print(markdown(recall_rows, "recall"))
    print(
        f"\n{sets} test sets per AUC cell ({sets * 10} per recall cell), {resamples} resamples; "
        f"{seconds:.0f} s on {jax.default_backend()} ({platform.processor() or platform.machine()})"
    )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        record = dict(
            **_provenance(sets, resamples, seconds),
            auc=auc_rows,
            clinical=clinical_rows,
            recall=recall_rows,
        )
        (RESULTS / "coverage.json").write_text(json.dumps(record, indent=1) + "\n")
        (RESULTS / "coverage.md").write_text(
            "# Coverage of nominal 95% intervals (mean width)\n\n## AUC\n\n"
            + markdown(auc_rows, "auc")
            + "\n\n## Partial AUC (FPR <= 0.1) | sensitivity at 90% specificity\n\n"
            + markdown(clinical_rows, "auc")
            + "\n\n## Recall\n\n"
            + markdown(recall_rows, "recall")
            + f"\n\n{sets} test sets per AUC cell, {resamples} resamples, {seconds:.0f} s.\n"
        )
        validation(args, jax.random.key(29))


VALIDATION_HEADING = "## Validation intervals"


def validation(args, key) -> None:
    """The cells of coverage_validation.py; unless `--quick`, their tables replace the previous
    ones in benchmarks/results/coverage.json (key "validation") and coverage.md, the other
    tables kept as they are."""
    import coverage_validation  # benchmarks/ is on sys.path: this file is a script

    sets = args.sets or (200 if args.quick else 400)
    resamples = args.resamples or (200 if args.quick else 500)
    started = time.perf_counter()
    sections = coverage_validation.run(key, sets=sets, resamples=resamples, quick=args.quick)
    seconds = time.perf_counter() - started
    text = coverage_validation.markdown(sections, sets, resamples, seconds)
    print("\n" + text)
    if args.quick:
        return
    RESULTS.mkdir(exist_ok=True)
    json_path, markdown_path = RESULTS / "coverage.json", RESULTS / "coverage.md"
    record = json.loads(json_path.read_text()) if json_path.exists() else {}
    record["validation"] = dict(**_provenance(sets, resamples, seconds), **sections)
    json_path.write_text(json.dumps(record, indent=1) + "\n")
    previous = markdown_path.read_text() if markdown_path.exists() else "# Coverage\n"
    kept = previous.split("\n" + VALIDATION_HEADING)[0].rstrip("\n")
    markdown_path.write_text(kept + "\n\n" + text)


if __name__ == "__main__":
    main()
