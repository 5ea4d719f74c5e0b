"""Run by test_multidevice.py in a fresh process with four emulated CPU devices: every
registered metric of samples (tests/test_common.py) takes scores split over the devices and gives
the one-device result (a second script, so that two test workers share the time)."""

import os

os.environ["XLA_FLAGS"] = (
    os.environ.get("XLA_FLAGS", "") + " --xla_force_host_platform_device_count=4"
)  # (and the suite's flags, tests/conftest.py)

import jax  # noqa: E402
import numpy as np  # noqa: E402
import test_common  # noqa: E402
from jax.sharding import NamedSharding, PartitionSpec  # noqa: E402

assert jax.device_count() == 4, jax.devices()
mesh = jax.make_mesh((4,), ("devices",))
rng = np.random.default_rng(0)


def split_layout(values):
    return jax.device_put(values, NamedSharding(mesh, PartitionSpec("devices")))


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
print(f"all {len(expected)} registered metrics of split samples == one device")
print("ALL OK")
