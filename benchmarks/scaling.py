"""Weak scaling of the exact AUC and ROC curve of split scores: fixed samples per device, D = 1-8.

    python benchmarks/scaling.py                     # emulated CPU devices, 2^18 per device
    python benchmarks/scaling.py --per-device 4096   # a quick look

Each D runs in a fresh process with D emulated CPU devices (``--xla_force_host_platform_
device_count``); the scores are split over a 1-D mesh and `jm.roc_auc` and `jm.roc_curve` run
under `jit`, which takes the distributed sample sort (`jaxmetrics/_src/mesh/sharded.py`; the curve
stays split over the devices). Per device it reports the
compiled program's memory (XLA's own accounting: arguments, outputs and temporaries of one
device's program) and, for comparison, the same for the gather path (the samples made whole on
every device first, what a metric without a sharded form does). Times are wall-clock of the
whole program; emulated devices share this machine's cores, so on a 2-core machine time grows
with D: the memory column is the point of these rows. Results go to
``benchmarks/results/scaling_cpu.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

RESULTS = Path(__file__).resolve().parent / "results"


def probe(devices: int, per_device: int, repeats: int) -> dict:
    """Run in a fresh process with `devices` emulated devices."""
    import jax
    import numpy as np
    from jax.sharding import NamedSharding, PartitionSpec

    import jaxmetrics as jm

    assert jax.device_count() == devices, jax.devices()
    n = devices * per_device
    rng = np.random.default_rng(0)
    labels = (rng.random(n) < 0.1).astype(np.int32)
    scores = (rng.normal(size=n) + labels).astype(np.float32)
    mesh = jax.make_mesh((devices,), ("devices",))
    split = NamedSharding(mesh, PartitionSpec("devices"))
    s, y = jax.device_put(scores, split), jax.device_put(labels, split)

    def gathered(metric):  # the gather path: every device holds every sample
        replicated = NamedSharding(mesh, PartitionSpec())
        return lambda a, b: metric(
            jax.sharding.reshard(a, replicated), jax.sharding.reshard(b, replicated)
        )

    row = dict(devices=devices, n=n, per_device=per_device)
    for metric_name, metric in (("auc", jm.roc_auc), ("curve", jm.roc_curve)):
        for name, function in (("sharded", metric), ("gathered", gathered(metric))):
            # XLA's own kernels for both (a numpy host sort's memory would not be counted)
            with jm.xla_kernels():
                compiled = jax.jit(function).lower(s, y).compile()
            memory = compiled.memory_analysis()
            per_device_bytes = (
                memory.argument_size_in_bytes
                + memory.output_size_in_bytes
                + memory.temp_size_in_bytes
                - memory.alias_size_in_bytes
            )
            result = compiled(s, y)
            best = float("inf")
            for _ in range(repeats):
                start = time.perf_counter()
                jax.block_until_ready(compiled(s, y))
                best = min(best, time.perf_counter() - start)
            key = name if metric_name == "auc" else f"curve_{name}"
            row[f"{key}_s"] = best
            row[f"{key}_mb_per_device"] = per_device_bytes / 2**20
            if metric_name == "auc":
                row[f"{name}_auc"] = float(result)
            else:
                row[f"{key}_points"] = int(np.asarray(result.valid).sum())
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--per-device", type=int, default=2**18)
    parser.add_argument("--devices", type=int, nargs="+", default=[1, 2, 4, 8])
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--probe", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.probe:
        print(json.dumps(probe(args.probe, args.per_device, args.repeats)))
        return 0
    rows = []
    for devices in args.devices:
        env = dict(
            os.environ,
            JAX_PLATFORMS="cpu",
            XLA_FLAGS=f"--xla_force_host_platform_device_count={devices}",
        )
        command = [sys.executable, __file__, "--probe", str(devices)]
        command += ["--per-device", str(args.per_device), "--repeats", str(args.repeats)]
        out = subprocess.run(command, capture_output=True, text=True, check=True, env=env)
        rows.append(json.loads(out.stdout.strip().splitlines()[-1]))
        row = rows[-1]
        print(
            f"D = {devices}: n = {row['n']:>9,}  sharded {row['sharded_s']:.3f} s, "
            f"{row['sharded_mb_per_device']:.1f} MB/device   gathered {row['gathered_s']:.3f} s, "
            f"{row['gathered_mb_per_device']:.1f} MB/device   (AUC {row['sharded_auc']:.6f} / "
            f"{row['gathered_auc']:.6f})\n"
            f"       curve: sharded {row['curve_sharded_s']:.3f} s, "
            f"{row['curve_sharded_mb_per_device']:.1f} MB/device   gathered "
            f"{row['curve_gathered_s']:.3f} s, {row['curve_gathered_mb_per_device']:.1f} MB/device"
            f"   ({row['curve_sharded_points']:,} / {row['curve_gathered_points']:,} points)",
            flush=True,
        )
    if args.per_device == parser.get_default("per_device"):
        RESULTS.mkdir(exist_ok=True)
        path = RESULTS / "scaling_cpu.json"
        machine = dict(cpu_count=os.cpu_count(), date=time.strftime("%Y-%m-%d %H:%M:%S"))
        path.write_text(json.dumps(dict(machine=machine, rows=rows), indent=2) + "\n")
        print(f"results written to {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
