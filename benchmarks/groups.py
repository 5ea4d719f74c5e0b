"""Time metrics by group and fairness metrics against fairlearn's MetricFrame, in one run.

    python benchmarks/groups.py                      # 10^6 rows, 10 groups, best of 3
    python benchmarks/groups.py --rows 100000 --repeats 1

Each jaxmetrics call is eager, as a user makes it, with numpy inputs, after one warm-up call
(compilation); its result is waited for with `block_until_ready`. Each row is the best of
`--repeats` runs of both sides, taking turns on the same data in the same process, and the two
results are checked to agree. The printed table is kept in benchmarks/results/groups.txt.
"""

from __future__ import annotations

import argparse
import platform
import time
from collections.abc import Callable

import jax
import numpy as np
from fairlearn import metrics as flm
from sklearn import metrics as skm

import jaxmetrics as jm


def best_time(fn: Callable[[], object]) -> float:
    start = time.perf_counter()
    jax.block_until_ready(fn())
    return time.perf_counter() - start


def compare(work, ours, reference, repeats, agree):
    """(work, our best time, MetricFrame's, speed-up); ours is warmed up and checked first."""
    agree(ours(), reference())
    t_ours, t_ref = float("inf"), float("inf")
    for _ in range(repeats):
        t_ours = min(t_ours, best_time(ours))
        t_ref = min(t_ref, best_time(reference))
    return work, t_ours, t_ref, t_ref / t_ours


def close(atol):
    def agree(ours, reference):
        np.testing.assert_allclose(np.asarray(ours, np.float64), reference, atol=atol)

    return agree


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10**6)
    parser.add_argument("--groups", type=int, default=10)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    n, num_groups = args.rows, args.groups

    rng = np.random.default_rng(0)
    labels = (rng.random(n) < 0.3).astype(np.int32)
    groups = rng.integers(0, num_groups, n).astype(np.int32)
    scores = (rng.normal(size=n) + labels + 0.1 * groups).astype(np.float32)
    decisions = (scores >= 0.8).astype(np.int32)
    options = dict(groups=groups, num_groups=num_groups)

    def frame(metric, y_pred):
        result = flm.MetricFrame(
            metrics=metric, y_true=labels, y_pred=y_pred, sensitive_features=groups
        )
        return result.by_group.to_numpy(), result.overall, result.difference(), result.ratio()

    def by_group_numbers(result):
        return [np.asarray(field) for field in result]

    def agree_frames(ours, reference):
        for got, expected in zip(by_group_numbers(ours), reference):
            np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)

    rows = [
        compare(
            "jm.by_group(roc_auc): values, overall, difference, ratio",
            lambda: jm.by_group(jm.roc_auc, scores, labels, **options),
            lambda: frame(skm.roc_auc_score, scores),
            args.repeats,
            agree_frames,
        ),
        compare(
            "jm.by_group(jm.selection_rate): values, overall, difference, ratio",
            lambda: jm.by_group(jm.selection_rate, decisions, **options),
            lambda: frame(flm.selection_rate, decisions),
            args.repeats,
            agree_frames,
        ),
        compare(
            "jm.demographic_parity_difference",
            lambda: jm.demographic_parity_difference(decisions, **options),
            lambda: flm.demographic_parity_difference(labels, decisions, sensitive_features=groups),
            args.repeats,
            close(1e-6),
        ),
        compare(
            "jm.equalized_odds_difference",
            lambda: jm.equalized_odds_difference(decisions, labels, **options),
            lambda: flm.equalized_odds_difference(labels, decisions, sensitive_features=groups),
            args.repeats,
            close(1e-6),
        ),
    ]

    import fairlearn

    print(f"python benchmarks/groups.py --rows {n} --groups {num_groups} --repeats {args.repeats}")
    print(
        f"{n:.0e} rows, {num_groups} groups; jax {jax.__version__} on {jax.default_backend()}, "
        f"fairlearn {fairlearn.__version__}, {platform.processor() or platform.machine()}; "
        f"best of {args.repeats}, eager calls with numpy inputs, warm"
    )
    print(f"  {'work':60s} {'jaxmetrics':>11s} {'MetricFrame':>12s} {'speed-up':>9s}")
    for work, ours, theirs, speedup in rows:
        print(f"  {work:60s} {ours:10.4f}s {theirs:11.4f}s {speedup:8.1f}x")


if __name__ == "__main__":
    main()
