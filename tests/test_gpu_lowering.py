"""Every sort a GPU program holds can go to CUB's radix sort (issue 27), checked without a GPU.

XLA's GPU sort rewriter hands a sort to CUB only when it has one operand, or a key and one value
ordered by a single ``compare`` of the two keys; anything else (a float key's NaN-canonicalising
comparator, several keys) runs XLA's own comparison sort. The programs are lowered for CUDA on
this machine (``jax.export``, no execution; the mesh forms for TPU too, on an abstract mesh) and
every ``stablehlo.sort`` in them is checked.
"""

import re

import jax
import jax.numpy as jnp
import pytest

import jaxmetrics as jm
from jaxmetrics._src.core import sorting
from jaxmetrics._src.mesh import forms, sample_sort

N = 64
F32 = jax.ShapeDtypeStruct((N,), jnp.float32)
I32 = jax.ShapeDtypeStruct((N,), jnp.int32)

_SORT = re.compile(r'"stablehlo\.sort"\((.*?)\)\s*<\{(.*?)\}>\s*\(\{(.*?)\}\)', re.DOTALL)


def _cuda_text(function, *shapes):
    with jm.xla_kernels():
        return jax.export.export(jax.jit(function), platforms=["cuda"])(*shapes).mlir_module()


def _sorts(text):
    """(operands, compares in the comparator) of every sort in a module's text."""
    sorts = _SORT.findall(text)
    assert len(sorts) == text.count('"stablehlo.sort"')  # the pattern saw every sort
    return [(operands.count("%"), body.count("stablehlo.compare")) for operands, _, body in sorts]


def _bootstrap_metric(scores, labels, weights):
    # the bootstrap's form: one metric over [R, n] weight rows, the scores shared
    return jax.vmap(lambda w: jm.roc_auc(scores, labels, sample_weight=w))(weights)


def _ndcg(scores, relevance):
    return jm.ndcg(scores.reshape(4, -1), relevance.reshape(4, -1).astype(jnp.float32))


CASES = {
    "roc_auc": (jm.roc_auc, F32, I32),
    "average_precision": (jm.average_precision, F32, I32),
    "roc_curve": (jm.roc_curve, F32, I32),
    "precision_recall_curve": (jm.precision_recall_curve, F32, I32),
    "confusion_counts": (
        lambda s, y: jm.confusion_counts(s, y, jnp.linspace(0, 1, 11)),
        F32,
        I32,
    ),
    "weighted_roc_auc": (lambda s, y, w: jm.roc_auc(s, y, sample_weight=w), F32, I32, F32),
    "batched_roc_auc": (
        jm.roc_auc,
        jax.ShapeDtypeStruct((4, N), jnp.float32),
        jax.ShapeDtypeStruct((4, N), jnp.int32),
    ),
    "bootstrap_rows": (_bootstrap_metric, F32, I32, jax.ShapeDtypeStruct((8, N), jnp.float32)),
    "delong": (
        lambda s, y: jm.delong(s, y).auc,
        jax.ShapeDtypeStruct((3, N), jnp.float32),
        I32,
    ),
    "ndcg": (_ndcg, F32, I32),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_every_sort_of_a_gpu_program_can_use_cub(name):
    function, *shapes = CASES[name]
    sorts = _sorts(_cuda_text(function, *shapes))
    assert sorts, "expected the program to sort"
    for operands, compares in sorts:
        assert operands == 1 or (operands == 2 and compares == 1), (operands, compares)


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_the_score_sort_is_one_unsigned_compare(dtype, request):
    if dtype == "float64":
        request.getfixturevalue("x64")  # a uint64 key, still one compare
    shape = jax.ShapeDtypeStruct((N,), jnp.dtype(dtype))
    text = _cuda_text(sorting.key_sort, shape)
    assert _sorts(text) == [(2, 1)]
    assert re.search(r"stablehlo\.compare\s+LT, %\w+, %\w+, UNSIGNED", text)


# ---------------------------------------------------------------------------- the mesh forms
# Samples split over a mesh are ranked where they are, by the distributed sample sort
# (`mesh/sample_sort.py`). An abstract mesh of four devices needs none: the programs lower with
# their splitters, exchanges and per-device merges, as they would over four GPUs or TPU chips.
MESH = jax.sharding.AbstractMesh((4,), ("devices",), axis_types=(jax.sharding.AxisType.Explicit,))
SPLIT = jax.sharding.NamedSharding(MESH, jax.sharding.PartitionSpec("devices"))
ROWS_SPLIT = jax.sharding.NamedSharding(MESH, jax.sharding.PartitionSpec(None, "devices"))
SPLIT_F32 = jax.ShapeDtypeStruct((N,), jnp.float32, sharding=SPLIT)
SPLIT_I32 = jax.ShapeDtypeStruct((N,), jnp.int32, sharding=SPLIT)


def _state_over_devices(scores, labels, weights):
    # the streaming ExactCurve's merge over devices: its buffers' values, one sample sort
    def on_device(scores, labels, weights):
        return forms.ranking_over_axes(scores, labels, weights, ("devices",))[:2]

    split, whole = jax.sharding.PartitionSpec("devices"), jax.sharding.PartitionSpec()
    return jax.shard_map(
        on_device, mesh=MESH, in_specs=(split,) * 3, out_specs=whole, check_vma=False
    )(scores, labels, weights)


MESH_CASES = {
    "roc_auc": (jm.roc_auc, SPLIT_F32, SPLIT_I32),
    "weighted_average_precision": (
        lambda s, y, w: jm.average_precision(s, y, sample_weight=w),
        SPLIT_F32,
        SPLIT_I32,
        SPLIT_F32,
    ),
    "roc_curve": (jm.roc_curve, SPLIT_F32, SPLIT_I32),
    "precision_recall_curve": (
        lambda s, y: jm.precision_recall_curve(s, y, drop_intermediate=True),
        SPLIT_F32,
        SPLIT_I32,
    ),
    "delong": (
        lambda s, y: jm.delong(s, y).covariance,
        jax.ShapeDtypeStruct((3, N), jnp.float32, sharding=ROWS_SPLIT),
        SPLIT_I32,
    ),
    "ranking_over_axes": (_state_over_devices, SPLIT_F32, SPLIT_I32, SPLIT_F32),
}


def _mesh_text(platform, function, *shapes):
    with jm.xla_kernels():
        exported = jax.export.export(jax.jit(function), platforms=[platform])(*shapes)
    assert exported.nr_devices == 4
    return exported.mlir_module()


@pytest.mark.parametrize("platform", ["cuda", "tpu"])
@pytest.mark.parametrize("name", sorted(MESH_CASES))
def test_every_sort_of_the_mesh_forms_can_use_cub(name, platform):
    function, *shapes = MESH_CASES[name]
    text = _mesh_text(platform, function, *shapes)
    assert "all_to_all" in text  # the sample sort's exchange: the mesh form, not a gather
    sorts = _sorts(text)
    # each device's merge, the splitters and the merge of what it received (curves: and the
    # points' placement); every one a single compare of one key, carrying at most one index
    assert len(sorts) >= 3, sorts
    assert all(operands in (1, 2) and compares == 1 for operands, compares in sorts), sorts


@pytest.mark.parametrize("dtype", ["float32", "int32"])
def test_the_mesh_sort_is_one_unsigned_compare(dtype):
    shape = jax.ShapeDtypeStruct((N,), jnp.dtype(dtype))
    text = _cuda_text(sample_sort.ascending_order, shape)
    assert _sorts(text) == [(2, 1)]
    assert re.search(r"stablehlo\.compare\s+LT, %\w+, %\w+, UNSIGNED", text)
