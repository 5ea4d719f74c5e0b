"""Every sort a GPU program holds can go to CUB's radix sort (issue 27), checked without a GPU.

XLA's GPU sort rewriter hands a sort to CUB only when it has one operand, or a key and one value
ordered by a single ``compare`` of the two keys; anything else (a float key's NaN-canonicalising
comparator, several keys) runs XLA's own comparison sort. The programs are lowered for CUDA on
this machine (``jax.export``, no execution) and every ``stablehlo.sort`` in them is checked.
"""

import re

import jax
import jax.numpy as jnp
import pytest

import jaxmetrics as jm
from jaxmetrics._src.core import sorting

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
