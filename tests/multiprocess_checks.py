"""One process of test_multiprocess.py: 2 processes x 2 CPU devices over gloo on localhost.

Run as ``python multiprocess_checks.py PROCESS_ID PORT``. Every process builds the same global
arrays (each holding only its own shards), computes every check, and compares with the
single-device result on the whole data, which each process can compute alone.
"""

import os
import sys

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=2"
)  # (and the suite's flags, tests/conftest.py)
os.environ["JAX_PLATFORMS"] = "cpu"

import jax  # noqa: E402

jax.config.update("jax_cpu_collectives_implementation", "gloo")
process, port = int(sys.argv[1]), sys.argv[2]
jax.distributed.initialize(f"localhost:{port}", num_processes=2, process_id=process)

import numpy as np  # noqa: E402
from jax.experimental import multihost_utils  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec  # noqa: E402

import jaxmetrics as jm  # noqa: E402
from jaxmetrics import streaming  # noqa: E402

assert jax.process_count() == 2 and jax.device_count() == 4, jax.devices()
mesh = jax.make_mesh((4,), ("devices",))
# the classic mesh, as `Mesh(devices, names)` and most flax code build it: Auto axes
classic = Mesh(np.array(jax.devices()), ("devices",))
assert mesh.axis_types == (AxisType.Explicit,) and classic.axis_types == (AxisType.Auto,)
split = NamedSharding(mesh, PartitionSpec("devices"))


def global_array(values, sharding=split):
    """The global array of `values`, this process holding only its own devices' shards."""
    return jax.make_array_from_callback(values.shape, sharding, lambda index: values[index])


def report(name):
    print(f"process {process}: {name}", flush=True)


rng = np.random.default_rng(0)
n = 4000
labels = (rng.random(n) < 0.3).astype(np.int32)
scores = np.round(rng.normal(size=n) + labels, 1).astype(np.float32)
weights = rng.integers(0, 4, n).astype(np.int32)
s, y, w = global_array(scores), global_array(labels), global_array(weights)
assert not s.is_fully_addressable

# 1. exact AUC / AP / counts / DeLong of split arrays, eagerly or under jit (each mode once
# per function: compilation dominates this test's time; the gathered functions, curves among
# them, are checked on four emulated devices in multidevice_registry_checks.py)
checks = {
    "roc_auc": (lambda a, b, c: jm.roc_auc(a, b, sample_weight=c), ("eager", "jit")),
    "average_precision": (lambda a, b, c: jm.average_precision(a, b, sample_weight=c), ("jit",)),
    "confusion_counts": (lambda a, b, c: jm.confusion_counts(a, b, np.float32([0, 1])), ("eager",)),
    "delong": (lambda a, b, c: jm.delong(a[None], b).variance, ("eager",)),
    "delong_test": (lambda a, b, c: jm.delong_test(a, a * 0.5 + 0.1 * b, b).p_value, ("eager",)),
}
for name, (metric, modes) in checks.items():
    expected = jax.tree_util.tree_leaves(metric(scores, labels, weights))
    for mode in modes:
        got = jax.tree_util.tree_leaves((metric if mode == "eager" else jax.jit(metric))(s, y, w))
        for a, b in zip(got, expected, strict=True):
            assert a.is_fully_replicated, (name, mode, a.sharding)  # readable in every process
            np.testing.assert_allclose(np.asarray(a), b, rtol=2e-6, err_msg=f"{name} {mode}")
    report(f"{name} of split arrays == one device ({', '.join(modes)})")

# a curve of split samples stays split (n + 4 points: a split axis divides evenly over the four
# devices); every process reads it whole with process_allgather
curve = jax.jit(lambda a, b, c: jm.roc_curve(a, b, sample_weight=c))(s, y, w)
assert not curve.fpr.is_fully_addressable
whole = multihost_utils.process_allgather(curve, tiled=True)
expected = jm.roc_curve(scores, labels, sample_weight=weights)
for field in ("fpr", "tpr", "thresholds"):
    got = np.asarray(getattr(whole, field))[np.asarray(whole.valid)]
    np.testing.assert_array_equal(got, np.asarray(getattr(expected, field))[expected.valid])
report("roc_curve of split arrays == one device (jit), split across the processes")

# 2. a skewed input: 90% of the samples share one score
skewed = np.where(rng.random(n) < 0.9, np.float32(0.25), scores).astype(np.float32)
auc = jax.jit(checks["roc_auc"][0])  # compiled above: the same shapes and layouts
got = float(auc(global_array(skewed), y, w))
np.testing.assert_allclose(got, float(jm.roc_auc(skewed, labels, sample_weight=weights)), rtol=2e-6)
report("skewed scores (one value 90%) == one device")

# 3. a bad value in one process's shard: both processes raise the same error
bad = scores.copy()
bad[3100] = np.nan  # on a device of process 1
try:
    jm.roc_auc(global_array(bad), y)
except ValueError as error:
    assert "found NaN at index 3100" in str(error), error
else:
    raise AssertionError("no error")
report("a NaN in another process's shard: the same error in every process")

# 4. the bootstrap over a mesh spanning both processes equals the one-device bootstrap, over
# either kind of mesh (a classic one's result could not be read: issue 25)
key = jax.random.key(5)
one = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=64)
for over in (mesh, classic):
    spread = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=64, mesh=over)
    np.testing.assert_allclose(float(spread.low), float(one.low), rtol=1e-6)
    np.testing.assert_allclose(float(spread.high), float(one.high), rtol=1e-6)
report("bootstrap over 2 processes == one device (Explicit and Auto meshes)")

# arrays of a classic mesh spanning both processes: AUC eagerly (ranked where the samples are;
# reshard refused their specs) and under jit (XLA's partitioner places them)
on_classic = NamedSharding(classic, PartitionSpec("devices"))
auto_s, auto_y, auto_w = (global_array(v, on_classic) for v in (scores, labels, weights))
expected = float(jm.roc_auc(scores, labels, sample_weight=weights))
for mode, auc in (("eager", jm.roc_auc), ("jit", jax.jit(jm.roc_auc))):
    got = auc(auto_s, auto_y, sample_weight=auto_w)
    assert got.is_fully_replicated, (mode, got.sharding)  # readable in every process
    np.testing.assert_allclose(float(got), expected, rtol=2e-6, err_msg=mode)
report("roc_auc of arrays split over a classic Mesh (Auto axes) == one device (eager, jit)")


# 5. streaming states merged over the mesh (psum) == the state of all the data
def per_device(a, b):
    state = streaming.BinnedCurve.empty(60, low=-3, high=4).update(a, b)
    return jax.lax.psum(state, "devices")


merged = jax.jit(
    jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(PartitionSpec("devices"),) * 2,
        out_specs=PartitionSpec(),
        check_vma=False,
    )
)(s, y)
single = streaming.BinnedCurve.empty(60, low=-3, high=4).update(scores, labels)
for a, b in zip(jax.tree_util.tree_leaves(merged), jax.tree_util.tree_leaves(single)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
report("psum-merged BinnedCurve == one device")


# 6. ExactCurve states, one per device, computed together by the distributed sample sort
def exact_per_device(a, b):
    state = streaming.ExactCurve.empty(1200)
    state = state.update(a[:500], b[:500]).update(a[500:], b[500:])
    return state.compute(axis_name="devices")


together = jax.jit(
    jax.shard_map(
        exact_per_device,
        mesh=mesh,
        in_specs=(PartitionSpec("devices"),) * 2,
        out_specs=PartitionSpec(),
        check_vma=False,
    )
)(s, y)
np.testing.assert_allclose(float(together["roc_auc"]), float(jm.roc_auc(scores, labels)), rtol=2e-6)
np.testing.assert_allclose(
    float(together["average_precision"]), float(jm.average_precision(scores, labels)), rtol=2e-6
)
assert int(together["count"]) == n
report("ExactCurve.compute(axis_name=...) over 4 devices == one device")
print(f"process {process}: ALL OK", flush=True)
