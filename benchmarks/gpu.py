"""The GPU benchmark (issue 27): exact ranking at 10^6 to 10^8 samples beside the sorts it rests on.

    python benchmarks/run.py --device gpu     # on a GPU: benchmarks/results/gpu.json (< 4 min)
    python benchmarks/gpu.py --scale 1e-3     # the same rows at a thousandth of the sizes, anywhere

Three kinds of row: "ours" (jaxmetrics, jitted), "before" (an exact AUC ranked by `jnp.argsort`
of the float scores, the sort the library used before issue 27) and "floor" (the sort alone:
`key_sort`'s unsigned key carrying an int32 index, the form XLA hands to CUB's radix sort on a
GPU, and `jnp.argsort` of floats, which XLA keeps on its own comparison sort). Each row is the
best of `--repeats` timed calls after a warm-up call, every output waited for
(`block_until_ready`), with two memory figures: the device's peak (`memory_stats`, where the
device reports one; the process's peak, so a row whose peak did not rise above an earlier row's
gives an upper bound and says so) and XLA's `memory_analysis` of the row's compiled program
(argument + output + temp bytes). Every row's value is checked against a float64 numpy oracle at
its smallest size, and the two exact AUCs against each other at every size: a wrong fast number
fails the run.

The sizes are the issue's times `--scale`. A row whose program would not fit in the device's
memory (its `bytes_limit`, or `--memory-limit`) is shrunk to a size that fits, and says so; a row
that would start after `--time-budget` seconds is skipped, and says so.
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

import jax
import jax.numpy as jnp
import numpy as np

import jaxmetrics as jm
from jaxmetrics import streaming
from jaxmetrics._src.core import sorting

RESULTS = Path(__file__).resolve().parent / "results"

SIZES = (10**6, 10**7, 10**8)  # exact AUC and AP, the before and the floors
COUNTS_SIZE, NUM_THRESHOLDS = 10**8, 10**4
BOOTSTRAP_SIZE, NUM_RESAMPLES = 10**6, 10**4
DELONG_SIZE, NUM_MODELS = 10**7, 10
STREAM_BATCH, STREAM_BATCHES, STREAM_THRESHOLDS = 2**23, 12, 1000
PREVALENCE, SEPARATION = 0.1, 1.2
HOST_DRAW = 1 << 22  # values drawn by numpy rather than by a compiled program
SMALLEST = 500  # no size is scaled below it, so that both classes are there
DELONG_CHECK_SIZE = 3000  # the all-pairs oracle's size
ROW_SECONDS = 20.0  # a row stops repeating once its calls have taken this long
MEMORY_HEADROOM = 0.9  # of the device's limit, what the rows may plan to use
TARGETS = (  # issue 27, "Targets for the H200 run"
    ("exact roc_auc at n = 1e8 < 0.05 s", "roc_auc", 10**8, 0.05),
    ("10^4 bootstrap resamples of roc_auc at n = 1e6 < 1 s", "bootstrap_roc_auc", 10**6, 1.0),
)


# ---- data and the numpy oracles (float64, all the tie rules written out) ----


def binormal(n: int, seed: int = 0, models: int | None = None):
    """Scores ``[n]`` (``[models, n]``, one separation per model) and int32 labels ``[n]`` on
    the device: binormal scores, 10% positives, ties wherever float32 normals tie. Drawn by
    numpy up to `HOST_DRAW` values (no program to compile), on the device past it."""
    if n * (models or 1) > HOST_DRAW:
        return _device_binormal(n, seed, models)
    rng = np.random.default_rng(seed)
    labels = (rng.random(n) < PREVALENCE).astype(np.int32)
    separation = SEPARATION if models is None else np.linspace(0.5, 1.5, models)[:, None]
    normal = rng.standard_normal(n if models is None else (models, n), np.float32)
    scores = (normal + separation * labels).astype(np.float32)
    return jax.device_put(scores), jax.device_put(labels)


@functools.partial(jax.jit, static_argnames=("n", "models"))
def _device_binormal(n: int, seed: int, models: int | None):
    key_labels, key_scores = jax.random.split(jax.random.key(seed))
    labels = jax.random.bernoulli(key_labels, PREVALENCE, (n,)).astype(jnp.int32)
    separation = SEPARATION if models is None else jnp.linspace(0.5, 1.5, models)[:, None]
    normal = jax.random.normal(key_scores, (n,) if models is None else (models, n))
    return normal + separation * labels, labels


def oracle_roc_auc(scores, labels, weights=None) -> float:
    """Weighted Mann-Whitney AUC: a tied positive-negative pair counts 1/2."""
    labels = np.asarray(labels, np.float64)
    weights = np.ones_like(labels) if weights is None else np.asarray(weights, np.float64)
    _, group = np.unique(np.asarray(scores), return_inverse=True)
    positive = np.bincount(group, weights * labels)
    negative = np.bincount(group, weights * (1 - labels))
    below = np.cumsum(negative) - negative
    return float(np.sum(positive * (below + negative / 2)) / (positive.sum() * negative.sum()))


def oracle_average_precision(scores, labels) -> float:
    """AP = sum of (R_k - R_k-1) P_k over the distinct thresholds, from the highest down."""
    labels = np.asarray(labels, np.float64)
    _, group = np.unique(np.asarray(scores), return_inverse=True)
    true_positives = np.cumsum(np.bincount(group, labels)[::-1])
    precision = true_positives / np.cumsum(np.bincount(group)[::-1])
    recall = true_positives / true_positives[-1]
    return float(np.sum(np.diff(recall, prepend=0.0) * precision))


def oracle_counts(scores, labels, thresholds) -> np.ndarray:
    """``[4, T]`` (tp, fp, fn, tn): predicted positive iff score >= threshold."""
    scores, labels = np.asarray(scores), np.asarray(labels)
    positives, negatives = np.sort(scores[labels == 1]), np.sort(scores[labels == 0])
    tp = positives.size - np.searchsorted(positives, thresholds, side="left")
    fp = negatives.size - np.searchsorted(negatives, thresholds, side="left")
    return np.stack([tp, fp, positives.size - tp, negatives.size - fp])


def oracle_delong(scores, labels) -> tuple[np.ndarray, np.ndarray]:
    """(auc ``[M]``, covariance ``[M, M]``) from DeLong's structural components over all pairs."""
    scores, labels = np.asarray(scores, np.float64), np.asarray(labels)
    positive, negative = scores[:, labels == 1, None], scores[:, None, labels == 0]
    psi = (positive > negative) + 0.5 * (positive == negative)
    v10, v01 = psi.mean(2), psi.mean(1)
    return v10.mean(1), np.cov(v10) / v10.shape[1] + np.cov(v01) / v01.shape[1]


def argsort_roc_auc(scores, labels):
    """Exact AUC ranked by `jnp.argsort` of the float scores (the before): each positive beats
    the negatives below its tie group and half of those in it (average ranks)."""
    n = scores.shape[-1]
    order = jnp.argsort(scores)
    ordered, negative = scores[order], 1 - labels[order]
    below = jnp.concatenate([jnp.zeros(1, jnp.int32), jnp.cumsum(negative)])
    index = jnp.arange(n)
    new = ordered[1:] != ordered[:-1]
    start = jax.lax.cummax(jnp.where(jnp.concatenate([jnp.ones(1, bool), new]), index, 0))
    stop = jnp.where(jnp.concatenate([new, jnp.ones(1, bool)]), index + 1, n)
    stop = jax.lax.cummin(stop, reverse=True)
    num_negative = below[-1]
    beaten = (below[start] + below[stop]).astype(jnp.float32) / (2 * num_negative)
    return jnp.sum(jnp.where(negative == 0, beaten, 0)) / (n - num_negative)


# ---- measuring ----


def device_stats() -> dict:
    return jax.devices()[0].memory_stats() or {}  # None on the CPU


class Budget:
    """The device memory (bytes) and the wall time the rows may use."""

    def __init__(self, memory_limit: float | None, time_budget_s: float):
        host = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        self.limit = int(memory_limit or device_stats().get("bytes_limit") or host // 2)
        self.deadline = time.perf_counter() + time_budget_s

    def free_bytes(self) -> int:
        return int(MEMORY_HEADROOM * self.limit) - device_stats().get("bytes_in_use", 0)

    def out_of_time(self) -> bool:
        return time.perf_counter() > self.deadline


def compile_for(fn: Callable, *args):
    """`fn` jitted and compiled for arguments of these shapes: its memory is known before any
    data is made. A new function each time, so that JAX traces it again and a
    `jm.xla_kernels()` block around the call takes effect."""
    return jax.jit(lambda *arrays: fn(*arrays)).lower(*args).compile()


def program_bytes(compiled) -> int | None:
    try:
        analysis = compiled.memory_analysis()
    except (NotImplementedError, RuntimeError):
        return None
    if analysis is None:
        return None
    return int(
        analysis.argument_size_in_bytes
        + analysis.output_size_in_bytes
        + analysis.temp_size_in_bytes
    )


def vector(n: int, dtype=jnp.float32, models: int | None = None) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct((n,) if models is None else (models, n), dtype)


def fit(n: int, programs_at: Callable[[int], dict], budget: Budget, extra_bytes_per_sample=0):
    """(size, {name: compiled}, note): n, or the largest 1-2-5 size below it whose programs
    (run one at a time on data of that size, counted in their argument bytes) fit in the free
    device memory, taking their bytes to scale with n; size None when not even `SMALLEST` fits."""
    programs = programs_at(n)
    need = max((program_bytes(p) or 0) for p in programs.values()) + extra_bytes_per_sample * n
    free = budget.free_bytes()
    if need <= free:
        return n, programs, None
    fitted = 1
    for step in (10**k * m for k in range(12) for m in (1, 2, 5)):
        if step * need <= free * n:
            fitted = step
    why = f"needs {need / 1e9:.1f} GB at n = {n:.0e}, {free / 1e9:.1f} GB free"
    if fitted < SMALLEST:
        return None, {}, f"skipped: {why}"
    return fitted, programs_at(fitted), f"shrunk to n = {fitted:.0e}: {why}"


def measure(call: Callable[[], object], repeats: int):
    """(warm-up output, timing): the best of up to `repeats` calls after the warm-up, fewer once
    the row has taken `ROW_SECONDS`; the device's peak memory over the row."""
    peak_before = device_stats().get("peak_bytes_in_use")
    start = time.perf_counter()
    output = jax.block_until_ready(call())
    warmup = time.perf_counter() - start
    times = []
    while len(times) < repeats and (not times or warmup + sum(times) < ROW_SECONDS):
        start = time.perf_counter()
        jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    peak = device_stats().get("peak_bytes_in_use")
    return output, dict(
        seconds=min(times),
        runs=len(times),
        warmup_s=warmup,
        peak_device_bytes=peak,
        # the process's peak did not rise during this row: the row's own is at most this
        peak_is_upper_bound=peak is not None and peak_before is not None and peak <= peak_before,
    )


def check(value, reference, tolerance: float, against: str) -> dict:
    difference = np.asarray(value, np.float64) - np.asarray(reference, np.float64)
    error = float(np.max(np.abs(difference))) if difference.size else 0.0
    return dict(against=against, error=error, tolerance=tolerance, passed=bool(error <= tolerance))


def skipped(name: str, kind: str, work: str, n: int, note: str) -> dict:
    return dict(name=name, kind=kind, work=work, n=n, seconds=None, note=note)


# ---- the rows ----

RANKING = {  # name: (kind, work, function of scores and labels)
    "key_sort": (
        "floor",
        "sort alone: key_sort (uint32 key + int32 index)",
        lambda scores, labels: sorting.key_sort(scores),
    ),
    "argsort": (
        "floor",
        "sort alone: jnp.argsort of float32",
        lambda scores, labels: jnp.argsort(scores),
    ),
    "argsort_roc_auc": ("before", "exact AUC ranked by jnp.argsort", argsort_roc_auc),
    "roc_auc": ("ours", "exact jm.roc_auc", jm.roc_auc),
    "average_precision": ("ours", "exact jm.average_precision", jm.average_precision),
}


def ranking_programs(n: int) -> dict:
    shapes = vector(n), vector(n, jnp.int32)
    return {name: compile_for(function, *shapes) for name, (_, _, function) in RANKING.items()}


def ranking_rows(sizes, repeats: int, budget: Budget) -> list[dict]:
    """The floors, the before and ours at each size, on the same data."""
    rows = []
    for position, requested in enumerate(sizes):
        n, programs, note = None, {}, "skipped: time budget spent"
        if not budget.out_of_time():
            n, programs, note = fit(requested, ranking_programs, budget)
        if n is None:
            rows += [skipped(name, k, w, requested, note) for name, (k, w, _) in RANKING.items()]
            continue
        scores, labels = binormal(n, seed=position)
        values = {}
        for name, (kind, work, _) in RANKING.items():
            call = functools.partial(programs[name], scores, labels)
            values[name], timing = measure(call, repeats)
            row = dict(name=name, kind=kind, work=work, n=n, **timing)
            row.update(program_bytes=program_bytes(programs[name]), note=note, check=None)
            rows.append(row)
        found = {row["name"]: row for row in rows[-len(RANKING) :]}
        if position == 0:  # every value against the oracle
            host_scores, host_labels = np.asarray(scores), np.asarray(labels)
            ordered = np.sort(host_scores)
            for name in ("key_sort", "argsort"):
                order = values[name][1] if name == "key_sort" else values[name]
                found[name]["check"] = check(
                    host_scores[np.asarray(order)], ordered, 0.0, "np.sort"
                )
            auc = oracle_roc_auc(host_scores, host_labels)
            for name in ("argsort_roc_auc", "roc_auc"):
                found[name]["check"] = check(values[name], auc, 1e-5, "numpy oracle")
            found["average_precision"]["check"] = check(
                values["average_precision"],
                oracle_average_precision(host_scores, host_labels),
                1e-5,
                "numpy oracle",
            )
        else:  # float32 sums of up to 10^8 terms: the two exact AUCs agree to 1e-4
            found["argsort_roc_auc"]["check"] = check(
                values["argsort_roc_auc"], values["roc_auc"], 1e-4, "jm.roc_auc"
            )
        for row in found.values():
            if row["name"] in ("roc_auc", "argsort_roc_auc", "average_precision"):
                row["value"] = float(values[row["name"]])
        del scores, labels, values
    return rows


def counts_row(n: int, num_thresholds: int, check_size: int, repeats: int, budget: Budget):
    work = f"jm.confusion_counts, {num_thresholds} thresholds"
    if budget.out_of_time():
        return skipped("confusion_counts", "ours", work, n, "skipped: time budget spent")
    thresholds = jnp.linspace(-4.0, 5.0, num_thresholds, dtype=jnp.float32)

    def counts(s, y, t):
        return jnp.stack(jm.confusion_counts(s, y, t))

    def programs_at(size):
        return {"counts": compile_for(counts, vector(size), vector(size, jnp.int32), thresholds)}

    requested = n
    n, programs, note = fit(n, programs_at, budget)
    if n is None:
        return skipped("confusion_counts", "ours", work, requested, note)
    scores, labels = binormal(n, seed=10)
    _, timing = measure(functools.partial(programs["counts"], scores, labels, thresholds), repeats)
    del scores, labels
    size = min(check_size, n)  # checked on a sample of its own, against the oracle
    small = programs if size == n else programs_at(size)
    scores, labels = binormal(size, seed=11)
    reference = oracle_counts(scores, labels, np.asarray(thresholds))
    row = dict(name="confusion_counts", kind="ours", work=work, n=n, **timing)
    row.update(program_bytes=program_bytes(programs["counts"]), note=note)
    row.update(num_thresholds=num_thresholds, thresholds_per_s=num_thresholds * n / row["seconds"])
    row["check"] = check(
        small["counts"](scores, labels, thresholds), reference, 0.0, f"numpy at n = {size}"
    )
    return row


def bootstrap_row(n: int, num_resamples: int, chunk_size: int, repeats: int, budget: Budget):
    work = f"jm.bootstrap(jm.roc_auc), {num_resamples} multinomial resamples"
    if budget.out_of_time():
        return skipped("bootstrap_roc_auc", "ours", work, n, "skipped: time budget spent")
    chunk_size, note = min(chunk_size, num_resamples), None
    # not one program: planned from the chunk's weights, [chunk_size, n] int32, and as much
    # again for the weighted passes over them
    while chunk_size > 8 and 8 * chunk_size * n > budget.free_bytes():
        chunk_size //= 2
        note = f"chunk_size halved to {chunk_size} to fit in the free device memory"
    scores, labels = binormal(n, seed=20)
    key = jax.random.key(0)

    def resamples():
        return jm.bootstrap(
            jm.roc_auc, scores, labels, key=key, num_resamples=num_resamples, chunk_size=chunk_size
        )

    result, timing = measure(resamples, repeats)
    host_scores, host_labels = np.asarray(scores), np.asarray(labels)
    weights = np.asarray(jm.resample_weights(key, jnp.arange(3), n))
    reference = [oracle_roc_auc(host_scores, host_labels)] + [
        oracle_roc_auc(host_scores, host_labels, w) for w in weights
    ]
    row = dict(name="bootstrap_roc_auc", kind="ours", work=work, n=n, **timing)
    row.update(program_bytes=None, note=note, num_resamples=num_resamples, chunk_size=chunk_size)
    row.update(resamples_per_s=num_resamples / row["seconds"], value=float(result.estimate))
    found = np.concatenate([[result.estimate], np.asarray(result.samples[:3])])
    row["check"] = check(found, reference, 1e-5, "numpy oracle: estimate, resamples 0-2")
    return row


def delong_row(n: int, num_models: int, repeats: int, budget: Budget):
    work = f"jm.delong, {num_models} models"
    if budget.out_of_time():
        return skipped("delong", "ours", work, n, "skipped: time budget spent")

    def programs_at(size):
        shapes = vector(size, models=num_models), vector(size, jnp.int32)
        return {"delong": compile_for(lambda s, y: jm.delong(s, y), *shapes)}

    requested = n
    n, programs, note = fit(n, programs_at, budget)
    if n is None:
        return skipped("delong", "ours", work, requested, note)
    scores, labels = binormal(n, seed=30, models=num_models)
    _, timing = measure(functools.partial(programs["delong"], scores, labels), repeats)
    del scores, labels
    size = min(DELONG_CHECK_SIZE, n)
    scores, labels = binormal(size, seed=31, models=num_models)
    result = (programs if size == n else programs_at(size))["delong"](scores, labels)
    auc, covariance = oracle_delong(scores, labels)
    found = np.concatenate([np.asarray(result.auc), np.ravel(result.covariance) * 1e3])
    row = dict(name="delong", kind="ours", work=work, n=n, **timing)
    row.update(program_bytes=program_bytes(programs["delong"]), note=note, models=num_models)
    row["check"] = check(
        found,
        np.concatenate([auc, np.ravel(covariance) * 1e3]),
        1e-5,
        f"all-pairs numpy at n = {size}: auc, 1000 x covariance",
    )
    return row


def streaming_row(batch: int, num_batches: int, repeats: int, budget: Budget):
    work = f"BinnedCurve({STREAM_THRESHOLDS} thresholds).update, {num_batches} batches"
    if budget.out_of_time():
        return skipped("binned_curve_update", "ours", work, batch, "skipped: time budget spent")
    empty = streaming.BinnedCurve.empty(STREAM_THRESHOLDS, low=-4.0, high=5.0)

    def programs_at(size):
        shapes = vector(size), vector(size, jnp.int32)
        return {"update": compile_for(lambda state, s, y: state.update(s, y), empty, *shapes)}

    requested = batch
    waiting = 8 * (num_batches - 1)  # bytes a sample: every batch is there before the stream
    batch, programs, note = fit(batch, programs_at, budget, extra_bytes_per_sample=waiting)
    if batch is None:
        return skipped("binned_curve_update", "ours", work, requested, note)
    update = programs["update"]
    batches = [binormal(batch, seed=40 + i) for i in range(num_batches)]

    def stream():
        state = empty
        for scores, labels in batches:
            state = update(state, scores, labels)
        return state

    state, timing = measure(stream, repeats)
    first = update(empty, *batches[0])
    reference = oracle_counts(*batches[0], np.asarray(empty.thresholds, np.float32))[:2]
    seen = int(state.total_positive) + int(state.total_negative)  # exact in int32 past 2^24
    row = dict(name="binned_curve_update", kind="ours", work=work, n=batch, **timing)
    row.update(program_bytes=program_bytes(update), note=note, num_batches=num_batches)
    row.update(samples_per_s=batch * num_batches / row["seconds"])
    row["check"] = check(
        np.append(np.ravel([first.tp, first.fp]), seen),
        np.append(np.ravel(reference), batch * num_batches),
        0.0,
        "numpy counts of batch 0; the stream's number of samples",
    )
    return row


def run(
    scale: float = 1.0,
    repeats: int = 3,
    chunk_size: int = 128,
    memory_limit: float | None = None,
    time_budget_s: float = 180.0,
    log: Callable[[str], None] = print,
) -> dict:
    """Every row at the issue's sizes times `scale`: {"machine", "options", "rows", "targets"}."""
    started = time.perf_counter()
    budget = Budget(memory_limit, time_budget_s)

    def size(n):
        return max(SMALLEST, round(n * scale))

    rows = []

    def add(new):
        for row in new:
            rows.append(row)
            log(row_line(row))

    add(ranking_rows([size(n) for n in SIZES], repeats, budget))
    resamples = max(32, round(NUM_RESAMPLES * scale))
    add([bootstrap_row(size(BOOTSTRAP_SIZE), resamples, chunk_size, repeats, budget)])
    thresholds = max(100, round(NUM_THRESHOLDS * scale))
    add([counts_row(size(COUNTS_SIZE), thresholds, size(SIZES[0]), repeats, budget)])
    add([delong_row(size(DELONG_SIZE), NUM_MODELS, repeats, budget)])
    add([streaming_row(size(STREAM_BATCH), STREAM_BATCHES, repeats, budget)])
    options = dict(scale=scale, repeats=repeats, chunk_size=chunk_size, time_budget_s=time_budget_s)
    options["memory_limit_bytes"] = budget.limit
    return dict(
        machine=machine(),
        options=options,
        rows=rows,
        targets=targets(rows),
        total_s=time.perf_counter() - started,
    )


def targets(rows) -> list[dict]:
    found = []
    for target, name, n, seconds in TARGETS:
        measured = [r for r in rows if r["name"] == name and r["seconds"] is not None]
        row = max(measured, key=lambda r: r["n"], default=None)
        result = dict(target=target, target_s=seconds, seconds=None, n=None, met=None)
        if row is not None:
            result.update(seconds=row["seconds"], n=row["n"])
            if row["n"] == n and row.get("num_resamples", NUM_RESAMPLES) == NUM_RESAMPLES:
                result["met"] = row["seconds"] < seconds
        found.append(result)
    return found


def machine() -> dict:
    device = jax.devices()[0]
    return dict(
        backend=jax.default_backend(),
        device=getattr(device, "device_kind", str(device)),
        devices=len(jax.devices()),
        memory_stats=device_stats() or None,
        cpu_count=os.cpu_count(),
        platform=platform.platform(),
        python=platform.python_version(),
        jax=jax.__version__,
        numpy=np.__version__,
        date=time.strftime("%Y-%m-%d %H:%M:%S"),
    )


def row_line(row: dict) -> str:
    head = f"{row['kind']:<6} {row['work']:<52} n = {row['n']:>11,}"
    if row["seconds"] is None:
        return f"{head}  {row['note']}"
    parts = [f"{row['seconds'] * 1e3:10.2f} ms (best of {row['runs']})"]
    for rate in ("resamples_per_s", "samples_per_s", "thresholds_per_s"):
        if rate in row:
            parts.append(f"{row[rate]:.3g} {rate[:-6].replace('_', ' ')}/s")
    if row["peak_device_bytes"] is not None:
        bound = "<= " if row["peak_is_upper_bound"] else ""
        parts.append(f"peak {bound}{row['peak_device_bytes'] / 1e9:.2f} GB")
    if row["program_bytes"] is not None:
        parts.append(f"program {row['program_bytes'] / 1e9:.3f} GB")
    if row["check"] is not None:
        verdict = "ok" if row["check"]["passed"] else "FAILED"
        parts.append(f"check {verdict} ({row['check']['error']:.1e})")
    if row["note"]:
        parts.append(row["note"])
    return f"{head}  " + ", ".join(parts)


def target_lines(result: dict) -> list[str]:
    lines = ["targets (issue 27):"]
    for target in result["targets"]:
        if target["seconds"] is None:
            lines.append(f"  {target['target']}: not measured")
            continue
        verdict = {True: "met", False: "MISSED", None: "not at the target's size"}[target["met"]]
        measured = f"{target['seconds']:.4f} s at n = {target['n']:.0e}"
        lines.append(f"  {target['target']}: {measured}, {verdict}")
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=float, default=1.0, help="times every size (1e-3 on CPU)")
    parser.add_argument("--quick", action="store_true", help="--scale 0.01, no results file")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--chunk-size", type=int, default=128, help="bootstrap resamples a step")
    parser.add_argument("--memory-limit", type=float, help="device bytes (default: bytes_limit)")
    parser.add_argument("--time-budget", type=float, default=180.0, help="seconds for the rows")
    parser.add_argument(
        "--out", type=Path, help="results file (a full run's default: results/gpu.json)"
    )
    args = parser.parse_args(argv)
    scale = 0.01 if args.quick else args.scale
    full = scale == 1.0
    if full and jax.default_backend() != "gpu":
        print(
            f"the full sizes are for a GPU, and JAX's backend is {jax.default_backend()}: "
            "pass --scale (e.g. 1e-3) to run the same rows small",
            file=sys.stderr,
        )
        return 1
    result = run(scale, args.repeats, args.chunk_size, args.memory_limit, args.time_budget)
    print("\n".join(target_lines(result)))
    print(f"total {result['total_s']:.0f} s")
    out = args.out or (RESULTS / "gpu.json" if full else None)
    if out is not None:
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(result, indent=2) + "\n")
        print(f"results written to {out}")
    failed = [
        row["work"] for row in result["rows"] if not (row.get("check") or {"passed": 1})["passed"]
    ]
    if failed:
        print(f"CHECK FAILED: {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
