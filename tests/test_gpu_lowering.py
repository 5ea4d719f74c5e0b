"""Every sort a GPU program holds can go to CUB's radix sort (issue 27), checked without a GPU.

XLA's GPU sort rewriter hands a sort to CUB only when it has one operand, or a key and one value
ordered by a single ``compare`` of the two keys; anything else (a float key's NaN-canonicalising
comparator, several keys) runs XLA's own comparison sort. The programs are lowered for CUDA on
this machine (``jax.export``, no execution; the mesh forms for TPU too, on an abstract mesh) and
every ``stablehlo.sort`` in them is checked.
"""

import contextlib
import re

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import jaxmetrics as jm
from jaxmetrics import losses, streaming
from jaxmetrics._src.core import sorting
from jaxmetrics._src.losses import batches
from jaxmetrics._src.mesh import forms, sample_sort
from jaxmetrics._src.stats import resampling, venkatraman
from jaxmetrics._src.streaming import exact

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


# ------------------------------------------------------------------ the other sorts (item 1)
# Venkatraman's tests, the streaming ExactCurve, balanced batches, the stratified bootstrap and
# ApproxNDCG sorted by two keys, by signed keys or by floats; each sort is now one unsigned key
# carrying an int32 index (two stable passes, the minor key first, for two keys), or one
# operand. CUB's pair kernels take unsigned keys only (xla/backends/gpu/runtime/
# cub_sort_thunk.cc) and the rewriter sorts along the minor dimension only, so this check is
# stricter than `_sorts`: a pair's one compare is UNSIGNED, the sort dimension the last.
_SORT_TYPED = re.compile(
    r'"stablehlo\.sort"\((.*?)\)\s*<\{dimension = (\d+).*?\}>\s*\(\{(.*?)\}\)'
    r"\s*:\s*\(tensor<([^>]*)>",
    re.DOTALL,
)
_COMPARE = re.compile(r"stablehlo\.compare\s+\w+,\s*%\w+,\s*%\w+(?:,\s*(\w+))?")


def _cub_eligible(text):
    """Assert every sort of a module's text is one CUB takes; return how many there are."""
    sorts = _SORT_TYPED.findall(text)
    assert sorts and len(sorts) == text.count('"stablehlo.sort"')
    for operands, dimension, body, operand_type in sorts:
        compares = _COMPARE.findall(body)
        assert len(compares) == 1, (operands, compares)
        assert int(dimension) == operand_type.count("x") - 1, (dimension, operand_type)
        if operands.count("%") == 2:
            assert compares[0] == "UNSIGNED", (operands, compares)
        else:
            assert operands.count("%") == 1, operands
    return len(sorts)


_KEY = jax.random.key(0)
_BATCH_LABELS = np.arange(N) % 3 == 0


def _exact_curve(scores, labels):
    state = streaming.ExactCurve.empty(N, num_labels=None if scores.ndim == 1 else scores.shape[0])
    return state.update(scores, labels).compute()["roc_auc"]


def _stratified_bootstrap_rows(scores, labels):
    # the stratified bootstrap's form: its [R, n] weight rows, and the metric over them
    weights = jm.resample_weights(_KEY, jnp.arange(8), N, stratify=labels)
    return jax.vmap(lambda w: jm.roc_auc(scores, labels, sample_weight=w))(weights)


OTHER_CASES = {
    "venkatraman_test": (
        lambda a, b, y: jm.venkatraman_test(a, b, y, key=_KEY, num_permutations=8),
        F32,
        F32,
        I32,
    ),
    "venkatraman_test_unpaired": (
        lambda a, y, b, z: jm.venkatraman_test_unpaired(a, y, b, z, key=_KEY, num_permutations=8),
        F32,
        I32,
        jax.ShapeDtypeStruct((40,), jnp.float32),
        jax.ShapeDtypeStruct((40,), jnp.int32),
    ),
    "exact_curve": (_exact_curve, F32, I32),
    "exact_curve_multilabel": (
        _exact_curve,
        jax.ShapeDtypeStruct((3, N), jnp.float32),
        jax.ShapeDtypeStruct((3, N), jnp.int32),
    ),
    "balanced_batches": (  # (its labels are concrete: they fix the number of batches)
        lambda key: losses.balanced_batches(
            key, _BATCH_LABELS, batch_size=4, positive_fraction=0.5
        ),
        jax.ShapeDtypeStruct((2,), jnp.uint32),
    ),
    "stratified_bootstrap_rows": (_stratified_bootstrap_rows, F32, I32),
    "stratified_weights_float": (
        lambda strata: jm.resample_weights(_KEY, jnp.arange(8), N, stratify=strata),
        F32,
    ),
    "approx_ndcg_loss": (
        lambda s, r: losses.approx_ndcg_loss(s.reshape(4, -1), r.reshape(4, -1)),
        F32,
        F32,
    ),
    "soap_loss": (  # a one-operand sort of int32 ids
        lambda s, y, ids: losses.soap_loss.loss(losses.soap_loss.init(16), s, y, ids)[0],
        F32,
        I32,
        I32,
    ),
}


@pytest.mark.parametrize("name", sorted(OTHER_CASES))
def test_every_other_sort_can_use_cub(name):
    function, *shapes = OTHER_CASES[name]
    assert _cub_eligible(_cuda_text(function, *shapes)) >= 1


@pytest.mark.parametrize("name", ["venkatraman_test", "venkatraman_test_unpaired"])
def test_venkatraman_sorts_can_use_cub_with_host_kernels_allowed(name):
    # the default branch on a GPU: the CPU's sorts of several keys are left out of its program
    function, *shapes = OTHER_CASES[name]
    _cub_eligible(jax.export.export(jax.jit(function), platforms=["cuda"])(*shapes).mlir_module())


def test_the_registry_sorts_have_unsigned_keys_on_the_minor_axis():
    for name in ("roc_auc", "bootstrap_rows", "delong", "ndcg"):
        function, *shapes = CASES[name]
        _cub_eligible(_cuda_text(function, *shapes))


# The rewritten sorts give what the old ones gave: the old forms, written out here, are the
# oracles, on keys with ties (distinct where the old sort was unstable and its order of equal
# keys unspecified) and with -0.0, NaN and infinities. Venkatraman's CPU branch keeps one sort
# of both keys, so its checks run on both branches.
BRANCHES = {"host": contextlib.nullcontext, "xla": jm.xla_kernels}


def _distinct_pairs(rng, shape, high_range, low_range):
    """uint32 pairs (high, low) ``[..., m, 2]``, distinct along m, each word with ties."""
    *batch, m = shape
    rows = []
    for _ in range(int(np.prod(batch, dtype=int))):
        codes = rng.choice(high_range * low_range, m, replace=False)
        rows.append(np.stack([codes // low_range, codes % low_range], -1))
    return np.asarray(rows, np.uint32).reshape(*shape, 2)


@pytest.mark.parametrize("branch", sorted(BRANCHES))
def test_venkatraman_two_key_sorts_equal_the_old_ones(branch):
    rng = np.random.default_rng(0)
    # labels by (rank, random ties), and the classes dealt in a random order
    ranks, ties = _distinct_pairs(rng, (32,), 8, 8).T
    labels = rng.integers(0, 2, 32).astype(np.int32)
    old = jax.lax.sort((ranks.astype(np.int32), ties, labels), num_keys=2)[2]
    classes, shuffle = _distinct_pairs(rng, (32,), 2, 32).T
    index = np.arange(32, dtype=np.int32)
    old_dealt = jax.lax.sort((classes.astype(np.int32), shuffle, index), num_keys=2)[2]
    with BRANCHES[branch]():
        new = venkatraman._labels_in_order(jnp.asarray(ranks, jnp.int32), ties, labels)
        new_dealt = venkatraman._by_two_keys(classes, shuffle)
    np.testing.assert_array_equal(new, old)
    np.testing.assert_array_equal(new_dealt, old_dealt)


def test_batch_permutations_equal_the_old_two_key_sort():
    rng = np.random.default_rng(0)
    # balanced batches: permutations by 64 random bits, a leading axis of cycles
    bits = _distinct_pairs(rng, (3, 16), 4, 2**31)
    order = jax.lax.broadcasted_iota(jnp.int32, bits.shape[:-1], 1)
    old = jax.lax.sort((bits[..., 0], bits[..., 1], order), dimension=1, num_keys=2)[2]
    np.testing.assert_array_equal(batches._permutations(jnp.asarray(bits)), old)


def test_exact_curve_ranks_equal_the_old_two_key_sort():
    rng = np.random.default_rng(1)
    keys = jnp.asarray(rng.integers(0, 3, (2, 40, 2)).astype(np.uint32))  # whole keys tied too
    high, low = keys[..., 0], keys[..., 1]
    position = jax.lax.broadcasted_iota(jnp.int32, high.shape, 1)
    high, low, order = jax.lax.sort((high, low, position), dimension=1, num_keys=2)
    changes = (high[..., 1:] != high[..., :-1]) | (low[..., 1:] != low[..., :-1])
    rank = jnp.cumsum(jnp.concatenate([jnp.ones((2, 1), bool), changes], -1), -1) - 1
    _, rank = jax.lax.sort((order, rank.astype(jnp.int32)), dimension=1, num_keys=1)
    old = jax.lax.bitcast_convert_type(rank.astype(jnp.uint32) + 0x00800000, jnp.float32)
    np.testing.assert_array_equal(exact._rank_keys(keys), old)


@pytest.mark.parametrize("kind", ["float32", "int32", "int8", "uint32", "bool", "float64"])
def test_stratum_order_equals_a_stable_argsort(kind, request):
    if kind == "float64":
        request.getfixturevalue("x64")
    rng = np.random.default_rng(2)
    if kind.startswith("float"):
        pool = np.array([-0.0, 0.0, np.nan, -np.nan, np.inf, -np.inf, -1.5, 2.0, 1e-40], kind)
    elif kind == "uint32":
        pool = np.array([0, 1, 2**31 - 1, 2**31, 2**32 - 1], np.uint32)
    elif kind == "bool":
        pool = np.array([False, True])
    else:
        pool = np.array([np.iinfo(kind).min, -1, 0, 1, np.iinfo(kind).max], kind)
    strata = jnp.asarray(rng.choice(pool, 50))
    np.testing.assert_array_equal(
        resampling._stratum_order(strata), jnp.argsort(strata, stable=True).astype(jnp.int32)
    )


@pytest.mark.parametrize("branch", sorted(BRANCHES))
def test_venkatraman_areas_with_tied_knots_equal_the_old_float_sort(branch):
    cumulative = venkatraman.sorting.cumulative

    def old_area(curve_a, curve_b):  # `_area_between` before: a float key carrying the source
        (cdf_a, error_a), (cdf_b, error_b) = curve_a, curve_b
        from_a = jnp.concatenate(
            [jnp.ones_like(cdf_a, jnp.int32), jnp.zeros_like(cdf_b, jnp.int32)]
        )
        grid, from_a = jax.lax.sort((jnp.concatenate([cdf_a, cdf_b]), from_a), num_keys=1)
        below_a = cumulative(from_a)
        below_b = jnp.arange(1, grid.shape[0] + 1, dtype=jnp.int32) - below_a
        gap = jnp.abs(
            venkatraman._on_grid(grid, below_a, cdf_a, error_a)
            - venkatraman._on_grid(grid, below_b, cdf_b, error_b)
        )
        low, high = jnp.maximum(cdf_a[0], cdf_b[0]), jnp.minimum(cdf_a[-1], cdf_b[-1])
        inside = (grid >= low) & (grid <= high)
        areas = (gap[1:] + gap[:-1]) * (grid[1:] - grid[:-1]) / 2
        return jnp.where(inside[1:] & inside[:-1], areas, 0).sum()

    rng = np.random.default_rng(3)
    labels_a = rng.integers(0, 2, (64, 24)).astype(np.int32)
    labels_a[:, :2] = [0, 1]
    labels_b = rng.permuted(labels_a, axis=1)  # the same classes: the curves share many knots

    def areas(area, a, b):
        mixing = jnp.float32(a.sum() / a.shape[0])
        return area(venkatraman._curve(a, mixing), venkatraman._curve(b, mixing))

    old = jax.jit(jax.vmap(lambda a, b: areas(old_area, a, b)))(labels_a, labels_b)
    with BRANCHES[branch]():
        new = jax.jit(jax.vmap(lambda a, b: areas(venkatraman._area_between, a, b)))(
            labels_a, labels_b
        )
    assert (old > 0).sum() > 32
    np.testing.assert_array_equal(new, old)


def test_the_ideal_order_of_gains_equals_the_old_float_sort():
    # ApproxNDCG's ideal DCG: gains in descending order, -0.0, NaN and ties included (bitwise)
    gains = jnp.asarray([2.0, -0.0, 0.0, np.nan, 3.0, 2.0, 0.0, -np.nan, 1.0, -0.0], jnp.float32)
    new = gains[sample_sort.ascending_order(gains)][::-1]
    old = jnp.sort(gains)[::-1]
    bits = lambda x: jax.lax.bitcast_convert_type(x, jnp.uint32)  # noqa: E731
    np.testing.assert_array_equal(bits(new), bits(old))
