"""Run by test_multidevice.py in a fresh process with four emulated CPU devices: every
registered metric of samples (tests/test_common.py) takes scores split over the devices and gives
the one-device result, under jit over a mesh of Explicit axes (``jax.make_mesh``) and eagerly
over a classic ``Mesh(devices, names)`` of Auto axes (a second script, so that two test workers
share the time)."""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
)  # (and the suite's flags, tests/conftest.py)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import test_common  # noqa: E402
from jax.sharding import AxisType, Mesh, NamedSharding, PartitionSpec  # noqa: E402

assert jax.device_count() == 4, jax.devices()
mesh = jax.make_mesh((4,), ("devices",))
classic = Mesh(np.array(jax.devices()), ("devices",))  # as flax code builds it: Auto axes
assert mesh.axis_types == (AxisType.Explicit,) and classic.axis_types == (AxisType.Auto,)
rng = np.random.default_rng(0)


def split_layout(values, over=mesh):
    return jax.device_put(values, NamedSharding(over, PartitionSpec("devices")))


# every registered metric of samples takes split arrays under jit and gives the one-device
# result

registry_inputs = {
    name: test_common.problem(rng, metric.kind, n=40)
    for name, metric in test_common.METRICS.items()
}
split_inputs = {name: tuple(map(split_layout, xs)) for name, xs in registry_inputs.items()}


def whole_registry(inputs):
    return {
        name: test_common._call(metric, inputs[name], weighted=True)
        for name, metric in test_common.METRICS.items()
    }


# (under jit, one program for all: the eager split path runs the same kernels compiled alone)
expected = whole_registry(registry_inputs)
got = jax.jit(whole_registry)(split_inputs)
for name in expected:
    test_common.assert_same(expected[name], got[name], atol=2e-6)
print(f"all {len(expected)} registered metrics of split samples == one device (jit, Explicit)")

# eagerly, arrays of a classic mesh: their concrete sharding says where the samples are, and the
# library moves them as that mesh allows (`reshard` refuses Auto axes: issue 25)
classic_inputs = {
    name: tuple(split_layout(x, classic) for x in xs) for name, xs in registry_inputs.items()
}
eager = whole_registry(classic_inputs)
for name in expected:
    test_common.assert_same(expected[name], eager[name], atol=2e-6)
assert len(eager["roc_curve"].valid.sharding.device_set) == 4  # sorted where the samples are
print(f"all {len(expected)} registered metrics of split samples == one device (eager, Auto)")
print("ALL OK")
