"""Run by test_multidevice.py in a fresh process with four emulated CPU devices."""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
)  # (and the suite's flags, tests/conftest.py)

import jax  # noqa: E402
import numpy as np  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec  # noqa: E402

import jaxmetrics as jm  # noqa: E402
from jaxmetrics import streaming  # noqa: E402
from jaxmetrics._src.stats import bootstrap  # noqa: E402

assert jax.device_count() == 4, jax.devices()
mesh = jax.make_mesh((4,), ("devices",))
# the classic mesh, as `Mesh(devices, names)` and most flax code build it: its axes are Auto, and
# its arrays' types carry no layout under jit (XLA's partitioner places them), unlike Explicit
classic = Mesh(np.array(jax.devices()), ("devices",))
assert mesh.axis_types == (AxisType.Explicit,) and classic.axis_types == (AxisType.Auto,)
rng = np.random.default_rng(0)
labels = (rng.random(400) < 0.3).astype(np.int32)
scores = np.round(rng.normal(size=400) + labels, 2).astype(np.float32)
sharded = NamedSharding(mesh, PartitionSpec("devices"))


# 1. psum-merged states equal the single-device state
def per_device(s, y):
    state = streaming.BinnedCurve.empty(60, low=-3, high=4).update(s, y)
    return jax.lax.psum(state, "devices")


merged = jax.jit(
    jax.shard_map(
        per_device,
        mesh=mesh,
        in_specs=(PartitionSpec("devices"),) * 2,
        out_specs=PartitionSpec(),
        check_vma=False,
    )
)(jax.device_put(scores, sharded), jax.device_put(labels, sharded))
single = streaming.BinnedCurve.empty(60, low=-3, high=4).update(scores, labels)
for a, b in zip(jax.tree_util.tree_leaves(merged), jax.tree_util.tree_leaves(single)):
    np.testing.assert_array_equal(a, b)
print("psum-merged BinnedCurve == single device")

# 2. sharded bootstrap == single-device bootstrap for the same key, over either kind of mesh
for sampling, over in (("multinomial", mesh), ("poisson", mesh), ("multinomial", classic)):
    key = jax.random.key(11)
    one = jm.bootstrap(jm.roc_auc, scores, labels, key=key, num_resamples=150, sampling=sampling)
    four = jm.bootstrap(
        jm.roc_auc, scores, labels, key=key, num_resamples=150, sampling=sampling, mesh=over
    )
    np.testing.assert_array_equal(np.asarray(one.samples), np.asarray(four.samples))
    assert float(one.low) == float(four.low) and float(one.high) == float(four.high)
print("sharded bootstrap == single device (multinomial, poisson; Explicit and Auto meshes)")

# the resamples really are spread over the four devices
values = bootstrap._sharded_values(
    jm.roc_auc,
    mesh,
    (jax.numpy.asarray(scores), jax.numpy.asarray(labels)),
    (None, None),  # no strata, no clusters
    jax.random.key(0),
    jax.numpy.asarray(0),
    sampling="poisson",
    chunks=2,
    size=4,
    sample_axis=-1,
    num_units=0,
    branch=(True, True),
)
assert len(values.sharding.device_set) == 4 and values.shape == (32,)
print("samples computed on", len(values.sharding.device_set), "devices")

# 3. M models split over the devices
models = np.stack([scores + 0.3 * rng.normal(size=400).astype(np.float32) for _ in range(8)])
per_model = jax.jit(
    jax.shard_map(
        lambda s, y: jm.roc_auc(s, y),
        mesh=mesh,
        in_specs=(PartitionSpec("devices"), PartitionSpec()),
        out_specs=PartitionSpec("devices"),
        check_vma=False,
    )
)(jax.device_put(models, sharded), labels)
np.testing.assert_allclose(np.asarray(per_model), np.asarray(jm.roc_auc(models, labels)), atol=1e-7)
print("8 models split over 4 devices == one device")

# 4. exact AUC / AP of scores split over the mesh: the distributed sample sort
from sklearn.metrics import average_precision_score, roc_auc_score, roc_curve  # noqa: E402

from jaxmetrics._src.mesh import forms, sample_sort  # noqa: E402


def split_layout(values):
    return jax.device_put(values, sharded_layout)


sharded_layout = NamedSharding(mesh, PartitionSpec("devices"))
n = 800
y = (rng.random(n) < 0.3).astype(np.int32)
cases = {
    "ties": np.round(rng.normal(size=n) + y, 1),
    "distinct": rng.normal(size=n) + y,
    "one value for 95%": np.where(rng.random(n) < 0.95, 0.5, rng.normal(size=n)),
    "all equal": np.full(n, 0.3),
}
# -0.0 and +0.0 one tie group: the sample sort's unsigned keys fold them, as a float sort did (its
# own generator: the draws of the checks below stay as they were)
signs = np.random.default_rng(1).choice([-1.0, 1.0], n)
cases["signed zeros"] = signs * np.where(signs > 0, np.round(cases["ties"], 0), 0.0)
weights_cases = {  # all int32: one compiled program per metric serves every case
    "unit": np.ones(n, np.int32),
    "int with zeros": rng.integers(0, 3, n).astype(np.int32),
    "a device without weight": np.where(np.arange(n) < n // 4, 0, rng.integers(1, 5, n)),
}


def every_layout(weights):
    """(case, layout, weights' name, scores, labels, weights) of every case, as drawn and
    sorted by score, under each of `weights` (int32)."""
    for case, values in cases.items():
        values = values.astype(np.float32)
        for layout in ("as drawn", "sorted"):
            order = np.argsort(values, kind="stable") if layout == "sorted" else np.arange(n)
            for wname, w in weights.items():
                yield case, layout, wname, values[order], y[order], w[order].astype(np.int32)


auc_and_ap = jax.jit(
    lambda v, y, w: (jm.roc_auc(v, y, sample_weight=w), jm.average_precision(v, y, sample_weight=w))
)
for case, layout, wname, v, labels_here, w in every_layout(weights_cases):
    got = auc_and_ap(split_layout(v), split_layout(labels_here), split_layout(w))
    expected = (
        roc_auc_score(labels_here, v, sample_weight=w),
        average_precision_score(labels_here, v, sample_weight=w),
    )
    for a, b in zip(got, expected):
        assert abs(float(a) - b) < 2e-6, (case, layout, wname, float(a), b)
huge = np.full(n, 1e20, np.float32)  # each term a share: pair counts would overflow float32
got = auc_and_ap(*map(split_layout, (cases["distinct"].astype(np.float32), y, huge)))
for a, b in zip(
    got, (roc_auc_score(y, cases["distinct"]), average_precision_score(y, cases["distinct"]))
):
    assert abs(float(a) - b) < 2e-6, ("weights of 1e20", float(a), b)
print("split AUC / AP == scikit-learn (ties, skew, all equal, sorted layouts, weights, 1e20)")

# the single-device rules hold over the mesh too (one copy of them, `core/terms.py`): a separated
# set is exactly 1 and a reversed one exactly 0, and AP without negatives is NaN
separated = rng.random(n).astype(np.float32)
above = (separated > 0.5).astype(np.int32)
some_weights = rng.integers(1, 4, n).astype(np.int32)
auc, ap = auc_and_ap(*map(split_layout, (separated, above, some_weights)))
assert float(auc) == 1.0 and float(ap) == 1.0, (float(auc), float(ap))
auc, _ = auc_and_ap(*map(split_layout, (-separated, above, some_weights)))
assert float(auc) == 0.0, float(auc)
only_positives = auc_and_ap(*map(split_layout, (separated, np.ones(n, np.int32), some_weights)))
assert all(np.isnan(float(value)) for value in only_positives), only_positives
print("split AUC / AP: separated exactly 1, reversed exactly 0, one class NaN")

# ROC and precision-recall curves of split samples: sorted where they are, the points placed
# into each device's block of the output (n + 4 long: a split axis divides evenly), equal to one
# device's curve point for point, drop_intermediate's neighbours across device boundaries too
four_curves = jax.jit(
    lambda v, y, w: [
        curve(v, y, sample_weight=w, drop_intermediate=drop)
        for curve in (jm.roc_curve, jm.precision_recall_curve)
        for drop in (True, False)
    ]
)
only_one_device = np.where((np.arange(n) >= n // 2) & (np.arange(n) < 3 * n // 4), 1, 0)
curve_weights = {
    "unit": weights_cases["unit"],
    "a device without weight": weights_cases["a device without weight"],
    "weight on one device only": only_one_device.astype(np.int32),
}
for case, layout, wname, v, labels_here, w in every_layout(curve_weights):
    got = four_curves(split_layout(v), split_layout(labels_here), split_layout(w))
    expected = [
        curve(v, labels_here, sample_weight=w, drop_intermediate=drop)
        for curve in (jm.roc_curve, jm.precision_recall_curve)
        for drop in (True, False)
    ]
    for a, b in zip(got, expected):
        assert len(a.valid.sharding.device_set) == 4  # the curve stays split
        for field, x, r in zip(b._fields, a, b):
            x, r = np.asarray(x), np.asarray(r)
            where = (case, layout, wname, type(b).__name__, field)
            np.testing.assert_array_equal(x[: n + 1], r, err_msg=str(where))
            padding = np.zeros(3, bool) if field == "valid" else r[-1:].repeat(3)
            np.testing.assert_array_equal(x[n + 1 :], padding, err_msg=str(where))
print("split ROC / PR curves == one device (ties, skew, all equal, sorted, weights on one device)")

# a receive buffer too small for the entries (forced): NaN from the program, never a partial
# sum, and an eager call recomputes it exactly on the gathered samples
values = split_layout(cases["distinct"].astype(np.float32))
ones = split_layout(np.ones(n, np.int32))
original = sample_sort.default_capacity
sample_sort.default_capacity = lambda local, devices: 8
try:
    for metric in (forms.auc_over_axes, forms.ap_over_axes):
        got, fits = forms.sharded_metric(
            metric, values, split_layout(y), ones, (mesh, ("devices",))
        )
        assert not bool(fits) and np.isnan(float(got))
finally:
    sample_sort.default_capacity = original
distinct = cases["distinct"].astype(np.float32)
pair = np.stack([distinct, distinct[::-1].copy()])  # (a shape traced nowhere else in this script)
sample_sort.default_capacity = lambda local, devices: 8
try:
    eager = float(jm.roc_auc(values, split_layout(y)))
    eager_curve = jm.roc_curve(values, split_layout(y))
    # what the sharded program gave before the eager call recomputed it (cached: no compile)
    jit_curve, fits = forms.sharded_curve(
        "roc", values, split_layout(y), ones, (mesh, ("devices",)), drop_intermediate=True
    )
    split_pair = jax.device_put(pair, NamedSharding(mesh, PartitionSpec(None, "devices")))
    assert np.isnan(np.asarray(jax.jit(jm.delong)(split_pair, split_layout(y)).auc)).all()
    eager_delong = jm.delong(split_pair, split_layout(y))
finally:
    sample_sort.default_capacity = original
assert abs(eager - roc_auc_score(y, distinct)) < 2e-6
assert not bool(fits) and np.isnan(np.asarray(jit_curve[0])).all()
assert not np.asarray(jit_curve[3]).any()
sklearn_fpr, _, _ = roc_curve(y, distinct)
np.testing.assert_allclose(np.asarray(eager_curve.fpr)[np.asarray(eager_curve.valid)], sklearn_fpr)
np.testing.assert_allclose(
    np.asarray(eager_delong.variance), np.asarray(jm.delong(pair, y).variance), rtol=1e-5
)
print("an overflowing buffer: NaN under jit, the exact gathered value eagerly (AUC, curve, DeLong)")

# DeLong of one split model and counts at thresholds (summed over devices): equal to one device
ties = cases["ties"].astype(np.float32)
int_weights = weights_cases["int with zeros"]
kwargs = {"sample_weight": int_weights}
split_kwargs = {"sample_weight": split_layout(int_weights)}
models = np.stack([ties, np.round(ties + rng.normal(0, 0.5, n), 1), (y == 1).astype(np.float32)])
split_models = jax.device_put(models, NamedSharding(mesh, PartitionSpec(None, "devices")))
expected = jm.delong(models, y, **kwargs)
for got in (
    jm.delong(split_models, split_layout(y), **split_kwargs),
    jax.jit(lambda a, b, kw: jm.delong(a, b, **kw))(split_models, split_layout(y), split_kwargs),
):
    for field in expected._fields:
        np.testing.assert_allclose(
            np.asarray(getattr(got, field)),
            np.asarray(getattr(expected, field)),
            rtol=2e-5,
            atol=1e-9,
            err_msg=field,
        )
test = jm.delong_test(
    split_layout(models[0]), split_layout(models[1]), split_layout(y), **split_kwargs
)
for a, b in zip(test, jm.delong_test(models[0], models[1], y, **kwargs)):
    np.testing.assert_allclose(float(a), float(b), rtol=2e-5)
grid = np.float32([0.1, 0.5, 0.9])
counts = jm.confusion_counts(split_layout(ties), split_layout(y), grid, **split_kwargs)
for a, b in zip(counts, jm.confusion_counts(ties, y, grid, **kwargs)):
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
print("split DeLong (3 models, a perfect one among them), its test and counts == one device")

# a batch axis split over the mesh (rows on different devices), samples whole: as one device
rows_y = (rng.random((4, 100)) < 0.3).astype(np.int32)
rows = np.round(rng.normal(size=(4, 100)) + rows_y, 1).astype(np.float32)
by_row = NamedSharding(mesh, PartitionSpec("devices", None))
for metric in (jm.roc_auc, jm.average_precision):
    got = jax.jit(metric)(jax.device_put(rows, by_row), jax.device_put(rows_y, by_row))
    np.testing.assert_allclose(np.asarray(got), np.asarray(metric(rows, rows_y)), rtol=1e-6)
print("a split batch axis (one row per device) == one device")


# arrays on a classic mesh (Auto axes), eagerly: DeLong ranks them where they are, as on an
# Explicit mesh (reshard refused their specs, issue 25), and the bootstrap takes them (the
# registry's metrics: multidevice_registry_checks.py)
def on_classic(values, *axes):
    return jax.device_put(values, NamedSharding(classic, PartitionSpec(*(axes or ("devices",)))))


auto_y, auto_w = on_classic(y), on_classic(int_weights)
got = jm.delong(on_classic(models, None, "devices"), auto_y, sample_weight=auto_w)
np.testing.assert_allclose(np.asarray(got.covariance), np.asarray(expected.covariance), rtol=2e-5)
# the bootstrap of split arrays (either mesh) runs on one device, where the CPU's host kernels
# need no other device to wait for them (a program over four with them was seen to hang)
options = dict(key=jax.random.key(11), num_resamples=150)  # section 2's single-device run
alone = np.asarray(jm.bootstrap(jm.roc_auc, scores, labels, **options).samples)
for place in (on_classic, split_layout):
    result = jm.bootstrap(jm.roc_auc, *map(place, (scores, labels)), **options)
    np.testing.assert_array_equal(np.asarray(result.samples), alone, err_msg=place.__name__)
print("arrays on a classic Mesh (Auto axes), eagerly: DeLong, bootstrap == one device")

# one class only: NaN, as on one device
assert np.isnan(float(jm.roc_auc(values, split_layout(np.zeros(n, np.int32)))))
print("ALL OK")
