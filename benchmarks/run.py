"""Time jaxmetrics against scikit-learn in one run and print the ratios.

    python benchmarks/run.py                 # CPU, all rows
    python benchmarks/run.py --quick         # small sizes, seconds
    python benchmarks/run.py --device gpu    # on a machine with a GPU

Every jaxmetrics function is compiled (warmed up) before it is timed, every result is waited for
with `block_until_ready`, and each row reports the best of `--repeats` runs of both sides, measured
in the same process on the same data. The results are written to benchmarks/results/<device>.json.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def best_time(fn: Callable[[], object], repeats: int) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        out = fn()
        for leaf in jax.tree_util.tree_leaves(out):
            if hasattr(leaf, "block_until_ready"):
                leaf.block_until_ready()
        times.append(time.perf_counter() - start)
    return min(times)


def binormal(n: int, seed: int = 0, prevalence: float = 0.1):
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < prevalence).astype(np.int32)
    scores = (rng.normal(size=n) + 1.2 * labels).astype(np.float32)
    return scores, labels


def compare(
    work: str, ours: Callable[[], object], reference: Callable[[], object], repeats: int, **extra
) -> dict:
    """One row: best-of-`repeats` time of both sides (ours already compiled), and the ratio."""
    t_ours = best_time(ours, repeats)
    t_ref = best_time(reference, repeats)
    return dict(work=work, jaxmetrics_s=t_ours, sklearn_s=t_ref, speedup=t_ref / t_ours, **extra)


def ranking_rows(sizes, repeats):
    metrics = (
        ("roc_auc", jax.jit(jm.roc_auc), skm.roc_auc_score),
        ("average_precision", jax.jit(jm.average_precision), skm.average_precision_score),
    )
    rows = []
    for n in sizes:
        scores, labels = binormal(n)
        on_device = jax.device_put(scores), jax.device_put(labels)
        for name, ours, theirs in metrics:
            value, reference = float(ours(*on_device)), theirs(labels, scores)  # also compiles
            assert abs(value - reference) < 1e-5, (name, n, value, reference)
            rows.append(
                compare(
                    f"{name}, n = {n:.0e}",
                    functools.partial(ours, *on_device),
                    functools.partial(theirs, labels, scores),
                    repeats,
                )
            )
    return rows


def threshold_grid_row(n, num_thresholds, repeats):
    scores, labels = binormal(n)
    on_device = jax.device_put(scores), jax.device_put(labels)
    grid = jnp.linspace(-3.0, 4.0, num_thresholds, dtype=jnp.float32)
    counts = jax.jit(jm.confusion_counts)
    auc = jax.jit(jm.roc_auc)
    counts(*on_device, grid)
    auc(*on_device)
    t_auc = best_time(functools.partial(auc, *on_device), repeats)
    every = max(1, num_thresholds // 20)
    sample = np.asarray(grid)[::every]

    def sklearn_loop():  # one confusion_matrix per threshold, on every `every`-th threshold
        return [skm.confusion_matrix(labels, scores >= t) for t in sample]

    row = compare(
        f"confusion_counts, {num_thresholds} thresholds, n = {n:.0e}",
        functools.partial(counts, *on_device, grid),
        sklearn_loop,
        1,
        one_auc_s=t_auc,
        note=f"sklearn time x{every}: a loop over every {every}th threshold",
    )
    row["sklearn_s"] *= every
    row["speedup"] *= every
    row["counts_over_auc"] = row["jaxmetrics_s"] / t_auc
    return row


def print_rows(rows):
    width = max(len(r["work"]) for r in rows)
    print(f"{'work':<{width}}  {'jaxmetrics s':>12}  {'sklearn s':>10}  {'speedup':>8}")
    for r in rows:
        print(
            f"{r['work']:<{width}}  {r['jaxmetrics_s']:>12.4f}  {r['sklearn_s']:>10.4f}  "
            f"{r['speedup']:>7.1f}x"
        )
        extra = {
            k: v for k, v in r.items() if k not in ("work", "jaxmetrics_s", "sklearn_s", "speedup")
        }
        if extra:
            print(
                "    "
                + ", ".join(
                    f"{k}={v:.3g}" if isinstance(v, float) else f"{k}={v}" for k, v in extra.items()
                )
            )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", choices=["cpu", "gpu"], default="cpu")
    parser.add_argument("--quick", action="store_true", help="small sizes only")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    if args.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")

    global jax, jnp, np, skm, jm
    import jax
    import jax.numpy as jnp
    import numpy as np
    from sklearn import metrics as skm

    import jaxmetrics as jm

    backend = jax.default_backend()
    if args.device == "gpu" and backend != "gpu":
        print(f"--device gpu asked, but JAX's backend is {backend}", file=sys.stderr)
        return 1
    sizes = [10**4, 10**5] if args.quick else [10**5, 10**6, 10**7]
    rows = ranking_rows(sizes, args.repeats)
    rows.append(threshold_grid_row(10**5 if args.quick else 10**6, 1000, args.repeats))
    print_rows(rows)

    machine = dict(
        backend=backend,
        devices=[str(d) for d in jax.devices()],
        cpu_count=os.cpu_count(),
        platform=platform.platform(),
        python=platform.python_version(),
        jax=jax.__version__,
        sklearn=__import__("sklearn").__version__,
        numpy=np.__version__,
        date=time.strftime("%Y-%m-%d %H:%M:%S"),
    )
    if not args.quick:
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / f"{args.device}.json"
        path.write_text(json.dumps(dict(machine=machine, rows=rows), indent=2) + "\n")
        print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
