"""Time jaxmetrics against scikit-learn in one run and print the ratios.

    python benchmarks/run.py                 # CPU, all rows
    python benchmarks/run.py --quick         # small sizes, seconds
    python benchmarks/run.py --device gpu    # on a machine with a GPU: the suite of gpu.py

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
    """One row: best-of-`repeats` time of both sides (ours already compiled), and the ratio.

    The two sides take turns, one call each, so a change of load on a shared machine falls on
    both rather than on one side's whole series."""
    t_ours, t_ref = float("inf"), float("inf")
    for _ in range(repeats):
        t_ours = min(t_ours, best_time(ours, 1))
        t_ref = min(t_ref, best_time(reference, 1))
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


def multilabel_rows(scale, repeats):
    """Multilabel macro AUC, LRAP and NDCG@10: one sort per row, no loop over labels/queries."""
    rng = np.random.default_rng(0)
    rows = []
    n, num_labels = 10**5 // scale, 20
    labels = (rng.random((num_labels, n)) < 0.2).astype(np.int32)
    scores = (rng.normal(size=(num_labels, n)) + labels).astype(np.float32)
    macro = jax.jit(functools.partial(jm.roc_auc, average="macro"))
    on_device = jax.device_put(scores), jax.device_put(labels)
    value, reference = float(macro(*on_device)), skm.roc_auc_score(labels.T, scores.T)
    assert abs(value - reference) < 1e-5, (value, reference)
    rows.append(
        compare(
            f"multilabel macro AUC, {n:.0e} x {num_labels} labels",
            functools.partial(macro, *on_device),
            functools.partial(skm.roc_auc_score, labels.T, scores.T),
            repeats,
        )
    )
    n, num_labels = 10**4 // scale, 100
    labels = (rng.random((n, num_labels)) < 0.05).astype(np.int32)
    labels[:, 0] = 1  # every sample has a relevant label (LRAP is defined)
    scores = rng.random((n, num_labels)).astype(np.float32)
    lrap = jax.jit(jm.label_ranking_average_precision)
    on_device = jax.device_put(scores), jax.device_put(labels)
    value = float(jnp.mean(lrap(*on_device)))
    reference = skm.label_ranking_average_precision_score(labels, scores)
    assert abs(value - reference) < 1e-5, (value, reference)
    rows.append(
        compare(
            f"label ranking AP, {n:.0e} x {num_labels} labels",
            functools.partial(lrap, *on_device),
            functools.partial(skm.label_ranking_average_precision_score, labels, scores),
            repeats,
        )
    )
    queries, items = 20000 // scale, 100
    relevance = rng.integers(0, 4, (queries, items)).astype(np.float32)
    scores = rng.random((queries, items)).astype(np.float32)
    ndcg = jax.jit(functools.partial(jm.ndcg, k=10))
    on_device = jax.device_put(scores), jax.device_put(relevance)
    value = float(jnp.nanmean(ndcg(*on_device)))
    reference = skm.ndcg_score(relevance, scores, k=10)
    assert abs(value - reference) < 1e-5, (value, reference)
    rows.append(
        compare(
            f"NDCG@10, {queries} queries x {items} items",
            functools.partial(ndcg, *on_device),
            functools.partial(skm.ndcg_score, relevance, scores, k=10),
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


def bootstrap_rows(n, num_resamples, repeats):
    """1,000 resamples of AUC against a scikit-learn loop (same n), and resamples per second."""
    scores, labels = binormal(n)
    on_device = jax.device_put(scores), jax.device_put(labels)
    rng = np.random.default_rng(1)

    def sklearn_loop():
        values = []
        for _ in range(num_resamples):
            index = rng.integers(0, n, n)
            values.append(skm.roc_auc_score(labels[index], scores[index]))
        return np.percentile(values, [2.5, 97.5])

    t_ref = best_time(sklearn_loop, 1)
    reference_interval = sklearn_loop()
    rows = []
    for sampling in ("poisson", "multinomial"):

        def ours(key=0, sampling=sampling):
            return jm.bootstrap(
                jm.roc_auc,
                *on_device,
                key=jax.random.key(key),
                num_resamples=num_resamples,
                sampling=sampling,
            )

        ours(key=99)  # compile
        result = ours()
        t_ours = best_time(ours, repeats)
        rows.append(
            dict(
                work=f"bootstrap roc_auc, {num_resamples} {sampling} resamples, n = {n:.0e}",
                jaxmetrics_s=t_ours,
                sklearn_s=t_ref,
                speedup=t_ref / t_ours,
                interval=[round(float(result.low), 4), round(float(result.high), 4)],
                sklearn_interval=[round(float(x), 4) for x in reference_interval],
                resamples_per_s=num_resamples / t_ours,
            )
        )

    def ap_loop():
        values = []
        for _ in range(num_resamples // 10):
            index = rng.integers(0, n, n)
            values.append(skm.average_precision_score(labels[index], scores[index]))
        return values

    def ap_ours():
        return jm.bootstrap(
            jm.average_precision,
            *on_device,
            key=jax.random.key(0),
            num_resamples=num_resamples,
            sampling="poisson",
        )

    ap_ours()
    t_ap = best_time(ap_ours, repeats)
    t_ap_ref = best_time(ap_loop, 1) * 10
    rows.append(
        dict(
            work=f"bootstrap average_precision, {num_resamples} poisson resamples, n = {n:.0e}",
            jaxmetrics_s=t_ap,
            sklearn_s=t_ap_ref,
            speedup=t_ap_ref / t_ap,
            resamples_per_s=num_resamples / t_ap,
            note=f"sklearn time x10: a loop over {num_resamples // 10} resamples",
        )
    )
    return rows


def accelerator_rows(n_bootstrap, num_resamples, n_exact, repeats):
    """The accelerator targets: 10^4 AUC resamples at n = 10^6 (< 1 s), exact AUC at n = 10^8
    (< 0.1 s), and the same AUC with the samples split over every device (a mesh of all the
    devices the machine has; the distributed sample sort, exact). Timed only (scikit-learn at
    these sizes would dominate the run); the values are checked against scikit-learn at the
    bootstrap size."""
    from jax.sharding import NamedSharding, PartitionSpec

    rows = []
    scores, labels = binormal(n_bootstrap)
    on_device = jax.device_put(scores), jax.device_put(labels)

    def resamples(key=0):
        result = jm.bootstrap(
            jm.roc_auc, *on_device, key=jax.random.key(key), num_resamples=num_resamples
        )
        return result.samples.block_until_ready()

    resamples(99)  # compile
    rows.append(
        dict(
            work=f"bootstrap roc_auc, {num_resamples} multinomial resamples, n = {n_bootstrap:.0e}",
            jaxmetrics_s=best_time(resamples, repeats),
            sklearn_s=float("nan"),
            speedup=float("nan"),
            target_s=1.0,
        )
    )
    rng = np.random.default_rng(2)
    labels = jax.device_put((rng.random(n_exact) < 0.1).astype(np.int32))
    scores = jax.device_put(rng.normal(size=n_exact).astype(np.float32)) + labels
    auc = jax.jit(jm.roc_auc)
    auc(scores, labels).block_until_ready()
    rows.append(
        dict(
            work=f"exact roc_auc, n = {n_exact:.0e}, one device",
            jaxmetrics_s=best_time(lambda: auc(scores, labels), repeats),
            sklearn_s=float("nan"),
            speedup=float("nan"),
            target_s=0.1,
        )
    )
    devices = len(jax.devices())
    mesh = jax.make_mesh((devices,), ("devices",))
    split = NamedSharding(mesh, PartitionSpec("devices"))
    n_split = n_exact - n_exact % devices
    s, y = jax.device_put(scores[:n_split], split), jax.device_put(labels[:n_split], split)
    single = float(auc(scores[:n_split], labels[:n_split]))
    spread = float(auc(s, y))
    rows.append(
        dict(
            work=f"exact roc_auc, n = {n_split:.0e} split over {devices} device(s) (sample sort)",
            jaxmetrics_s=best_time(lambda: auc(s, y), repeats),
            sklearn_s=float("nan"),
            speedup=float("nan"),
            difference_to_one_device=abs(spread - single),
        )
    )
    return rows


def surrogate_row(n, repeats):
    """Squared-hinge pairwise AUC loss and its gradient over all n+ x n- pairs."""
    import jaxmetrics.losses as jl

    scores, labels = binormal(n, prevalence=0.5)
    on_device = jax.device_put(scores), jax.device_put(labels)
    loss_and_grad = jax.jit(
        jax.value_and_grad(lambda s, y: jl.pairwise_auc_loss(s, y, surrogate="squared_hinge"))
    )
    loss_and_grad(*on_device)
    t = best_time(functools.partial(loss_and_grad, *on_device), repeats)
    positives = int(labels.sum())
    return dict(
        work=f"pairwise_auc_loss squared_hinge + gradient, n = {n:.0e}",
        jaxmetrics_s=t,
        sklearn_s=float("nan"),
        speedup=float("nan"),
        pairs=float(positives) * (n - positives),
        note="O(n log n) sorted prefix sums; no n+ x n- matrix",
    )


def surrogate_round_two_rows(n, queries, repeats):
    """partial_auc_loss (CVaR, squared hinge) at n and approx_ndcg_loss over queries x 100."""
    import jaxmetrics.losses as jl

    rows = []
    scores, labels = binormal(n, prevalence=0.3)
    on_device = jax.device_put(scores), jax.device_put(labels)
    partial = jax.jit(
        jax.value_and_grad(lambda s, y: jl.partial_auc_loss(s, y, max_fpr=0.1, method="cvar"))
    )
    partial(*on_device)
    t = best_time(functools.partial(partial, *on_device), repeats)
    rows.append(
        dict(
            work=f"partial_auc_loss cvar squared_hinge + gradient, n = {n:.0e}",
            jaxmetrics_s=t,
            sklearn_s=float("nan"),
            speedup=float("nan"),
            target_s=0.1,
            note="top negatives by one sort and prefix sums; no n+ x n- array",
        )
    )
    if hasattr(jl, "approx_ndcg_loss"):
        rng = np.random.default_rng(1)
        relevance = jax.device_put(rng.integers(0, 4, (queries, 100)).astype(np.float32))
        query_scores = jax.device_put(rng.normal(size=(queries, 100)).astype(np.float32))
        ndcg = jax.jit(jax.value_and_grad(lambda s, r: jl.approx_ndcg_loss(s, r).mean()))
        ndcg(query_scores, relevance)
        t = best_time(functools.partial(ndcg, query_scores, relevance), repeats)
        rows.append(
            dict(
                work=f"approx_ndcg_loss + gradient, {queries} queries x 100 items",
                jaxmetrics_s=t,
                sklearn_s=float("nan"),
                speedup=float("nan"),
                target_s=0.1,
            )
        )
    return rows


def streaming_row(batch, num_batches, repeats):
    """Update throughput of a 1,000-threshold BinnedCurve (jit, one batch per call)."""
    from jaxmetrics import streaming

    scores, labels = binormal(batch * num_batches)
    batches = [
        (
            jax.device_put(scores[i * batch : (i + 1) * batch]),
            jax.device_put(labels[i * batch : (i + 1) * batch]),
        )
        for i in range(num_batches)
    ]
    update = jax.jit(lambda state, s, y: state.update(s, y))
    empty = streaming.BinnedCurve.empty(1000, low=-4.0, high=5.0)
    update(empty, *batches[0])

    def stream():
        state = empty
        for s, y in batches:
            state = update(state, s, y)
        return state.tp

    t = best_time(stream, repeats)
    return dict(
        work=f"BinnedCurve(1000 thresholds).update, {num_batches} batches of {batch}",
        jaxmetrics_s=t,
        sklearn_s=float("nan"),
        speedup=float("nan"),
        samples_per_s=batch * num_batches / t,
    )


def _peak_rss_mb() -> float:
    """Peak resident memory of this process. VmHWM, not ru_maxrss: on Linux ru_maxrss survives
    exec, so a child started by a big parent reports the parent's size."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 2**10
    except OSError:
        pass
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 2**10


def memory_probe(n, num_resamples):
    """Run in a fresh process: peak resident memory of a large bootstrap."""
    scores, labels = binormal(n)
    on_device = jax.device_put(scores), jax.device_put(labels)
    jm.roc_auc(*on_device).block_until_ready()
    before = _peak_rss_mb()
    start = time.perf_counter()
    result = jm.bootstrap(
        jm.roc_auc, *on_device, key=jax.random.key(0), num_resamples=num_resamples
    )
    result.samples.block_until_ready()
    seconds = time.perf_counter() - start
    print(json.dumps(dict(before_mb=before, peak_mb=_peak_rss_mb(), seconds=seconds)))


def memory_row(n, num_resamples, device):
    import subprocess

    env = dict(os.environ, JAX_PLATFORMS="cpu") if device == "cpu" else dict(os.environ)
    out = (
        subprocess.run(
            [sys.executable, __file__, "--memory-probe", str(n), str(num_resamples)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        .stdout.strip()
        .splitlines()[-1]
    )
    probe = json.loads(out)
    return dict(
        work=f"bootstrap roc_auc, {num_resamples} multinomial resamples, n = {n:.0e}: peak memory",
        jaxmetrics_s=probe["seconds"],
        sklearn_s=float("nan"),
        speedup=float("nan"),
        peak_rss_mb=probe["peak_mb"],
        rss_before_mb=probe["before_mb"],
    )


def first_call_probe(n):
    """Run in a fresh process: what an eager user waits for on first contact."""
    start = time.perf_counter()
    import jaxmetrics as jm

    jm.roc_auc  # noqa: B018 (the package loads its names, and JAX, on first use)
    imported = time.perf_counter() - start
    rng = np.random.default_rng(0)

    def eager_pair(size):
        labels = (rng.random(size) < 0.1).astype(np.int32)
        scores = (rng.normal(size=size) + labels).astype(np.float32)
        start = time.perf_counter()
        float(jm.roc_auc(scores, labels)), float(jm.average_precision(scores, labels))
        return time.perf_counter() - start

    cold = eager_pair(n)
    near = eager_pair(n + 37)  # a new length in the same padding bucket: no compilation
    print(json.dumps(dict(import_s=imported, cold_s=cold, near_s=near)))


def _probe(*arguments, env=None) -> dict:
    import subprocess

    out = subprocess.run(
        [sys.executable, __file__, *arguments],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    ).stdout.strip()
    return json.loads(out.splitlines()[-1])


def first_call_rows(n, device):
    env = dict(os.environ, JAX_PLATFORMS="cpu") if device == "cpu" else dict(os.environ)
    probe = _probe("--first-call-probe", str(n), env=env)
    return [
        dict(
            work=f"eager roc_auc + average_precision, first call at n = {n:.0e} (compiles)",
            jaxmetrics_s=probe["cold_s"],
            sklearn_s=float("nan"),
            speedup=float("nan"),
            import_s=probe["import_s"],
        ),
        dict(
            work=f"eager roc_auc + average_precision at a new length n = {n + 37} after it",
            jaxmetrics_s=probe["near_s"],
            sklearn_s=float("nan"),
            speedup=float("nan"),
            target_s=0.3,
        ),
    ]


def report_rows(device):
    """`jaxmetrics report --demo` in a fresh process: cold (empty compilation cache), then warm."""
    import subprocess
    import tempfile

    rows = []
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, XDG_CACHE_HOME=cache)
        if device == "cpu":
            env["JAX_PLATFORMS"] = "cpu"
        for state, target in (("cold", 8.0), ("warm", 4.0)):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "jaxmetrics.report.cli", "report", "--demo", "--quiet"],
                check=True,
                env=env,
                capture_output=True,
            )
            rows.append(
                dict(
                    work=f"jaxmetrics report --demo, {state} compilation cache (whole process)",
                    jaxmetrics_s=time.perf_counter() - start,
                    sklearn_s=float("nan"),
                    speedup=float("nan"),
                    target_s=target,
                )
            )
    return rows


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
    parser.add_argument("--memory-probe", nargs=2, type=int, help=argparse.SUPPRESS)
    parser.add_argument("--first-call-probe", type=int, help=argparse.SUPPRESS)
    parser.add_argument(
        "--only", choices=["first-call"], help="run one group of rows (for a quick check)"
    )
    args, unknown = parser.parse_known_args()
    if args.device == "gpu" and args.only is None:  # its own suite, which takes its own options
        from gpu import main as gpu_main  # (benchmarks/ is on sys.path: this file is a script)

        return gpu_main([*unknown, "--repeats", str(args.repeats)] + ["--quick"] * args.quick)
    if unknown:
        parser.error(f"unrecognized arguments: {' '.join(unknown)}")
    started = time.perf_counter()
    if args.device == "cpu":
        os.environ.setdefault("JAX_PLATFORMS", "cpu")

    global jax, jnp, np, skm, jm
    if args.first_call_probe:  # before anything is imported: the import is part of it
        import numpy as np

        first_call_probe(args.first_call_probe)
        return 0
    import jax
    import jax.numpy as jnp
    import numpy as np
    from sklearn import metrics as skm

    import jaxmetrics as jm

    if args.memory_probe:
        memory_probe(*args.memory_probe)
        return 0
    if args.only == "first-call":
        print_rows(first_call_rows(10**5, args.device) + report_rows(args.device))
        return 0
    backend = jax.default_backend()
    sizes = [10**4, 10**5] if args.quick else [10**5, 10**6, 10**7]
    # first contact runs in fresh processes, before this one has compiled anything
    rows = first_call_rows(10**4 if args.quick else 10**5, args.device)
    if not args.quick:
        rows += report_rows(args.device)
    rows += ranking_rows(sizes, args.repeats)
    rows += multilabel_rows(10 if args.quick else 1, args.repeats)
    rows.append(threshold_grid_row(10**5 if args.quick else 10**6, 1000, args.repeats))
    rows.append(surrogate_row(2 * 10**4 if args.quick else 2 * 10**5, args.repeats))
    rows += surrogate_round_two_rows(
        2 * 10**4 if args.quick else 2 * 10**5, 100 if args.quick else 1000, args.repeats
    )
    rows.append(
        streaming_row(4096 if args.quick else 65536, 10 if args.quick else 50, args.repeats)
    )
    if args.quick:
        rows += bootstrap_rows(10**4, 200, 1)
    else:
        rows += bootstrap_rows(10**5, 1000, args.repeats)
        rows.append(memory_row(2 * 10**5, 5000, args.device))
    if args.quick:  # the same code at CPU sizes, so that it is known to run
        rows += accelerator_rows(10**4, 100, 10**5, 1)
    print_rows(rows)
    print(f"total {time.perf_counter() - started:.0f} s")

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
