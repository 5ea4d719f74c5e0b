"""Where an input's samples live: on one device, or split over the devices of a mesh.

Inputs whose sample (last) axis is split over a mesh -- concrete `jax.Array`s with a
`NamedSharding`, or, under `jit`, values of meshes with explicit axes (JAX's default for
``jax.make_mesh``) -- are either ranked where they are (AUC and average precision:
`mesh/forms.py`) or made whole on every device first (`replicate`: every other function, O(n)
memory per device, the same numbers). Under `jit`, arrays of meshes with auto axes (a classic
``Mesh(devices, names)``) are left to XLA's partitioner, which does its own gathering; eagerly
their concrete sharding says where the samples are, as for explicit axes.
"""

from __future__ import annotations

from typing import Any

import jax
from jax.sharding import NamedSharding, PartitionSpec


def _named_sharding(value: Any) -> NamedSharding | None:
    if not isinstance(value, jax.Array) or value.ndim == 0:
        return None
    try:
        if isinstance(value, jax.core.Tracer):
            sharding = jax.typeof(value).sharding
        else:
            sharding = value.sharding
    except (AttributeError, TypeError):  # a tracer without a sharded type
        return None
    return sharding if isinstance(sharding, NamedSharding) else None


def _spec(sharding: NamedSharding, ndim: int) -> tuple[Any, ...]:
    return tuple(sharding.spec) + (None,) * (ndim - len(sharding.spec))


def sample_split(value: Any) -> tuple[Any, tuple[str, ...]] | None:
    """(mesh, mesh axes) over which the last (sample) axis of `value` is split, else None."""
    sharding = _named_sharding(value)
    if sharding is None:
        return None
    axes = _spec(sharding, value.ndim)[value.ndim - 1]
    if axes is None:
        return None
    # (an axis of size 1 counts too: JAX's sort still refuses an operand typed as split)
    return sharding.mesh, axes if isinstance(axes, tuple) else (axes,)


def is_sharded(value: Any) -> bool:
    """Split over a mesh along any axis (batch axes too), as its type or sharding says."""
    sharding = _named_sharding(value)
    return sharding is not None and any(axes is not None for axes in _spec(sharding, value.ndim))


def is_split(value: Any) -> bool:
    """A concrete array whose values are not all on this process's devices in one piece: its
    sample axis is split, or it has shards in other processes (``jax.distributed``)."""
    if not isinstance(value, jax.Array) or isinstance(value, jax.core.Tracer):
        return False
    return sample_split(value) is not None or not value.is_fully_addressable


def replicate(value: Any) -> Any:
    """`value` whole on every device of its mesh (a no-op for arrays of one device).

    A fully replicated array is readable in every process (``np.asarray``), so the eager
    checks and host-side steps run on it as on a single-device array.
    """
    sharding = _named_sharding(value)
    if sharding is None:
        return value
    if all(axes is None for axes in _spec(sharding, value.ndim)):
        return value
    return _laid_out_as(value, NamedSharding(sharding.mesh, PartitionSpec()))


def on_one_device(value: Any) -> Any:
    """A concrete array whole on each of several devices of this process as its copy on one
    of them (no copy is made), else `value` unchanged.

    For work of many programs on the whole data (the bootstrap's): a program over several
    devices runs the CPU's host kernels on the first only, the others waiting for it, which
    on emulated CPU devices starves XLA's thread pool (seen to hang).
    """
    if (
        not isinstance(value, jax.Array)
        or isinstance(value, jax.core.Tracer)
        or len(value.sharding.device_set) == 1
        or not (value.is_fully_replicated and value.is_fully_addressable)
    ):
        return value
    return value.addressable_shards[0].data


def split_like(value: Any, split: tuple[Any, tuple[str, ...]]) -> Any:
    """`value` with its last axis split over the mesh axes of `split` (its other axes whole), as
    `shard_map` needs every operand laid out as its specs say."""
    mesh, axes = split
    spec = PartitionSpec(*([None] * (value.ndim - 1)), axes)
    return _laid_out_as(value, NamedSharding(mesh, spec))


def _laid_out_as(value: Any, sharding: NamedSharding) -> Any:
    """`value` moved to `sharding`, whatever the type of its mesh's axes.

    `reshard` is the move for explicit axes (``jax.make_mesh``'s default), whose layout is part
    of the type. A classic ``Mesh(devices, names)`` has auto axes, which `reshard` refuses in a
    spec and, asked for ``P()``, leaves a concrete array split as it was (then unreadable across
    processes): a concrete array moves with `device_put` (across processes too), a traced one
    with a sharding constraint.
    """
    if sharding.mesh.are_all_axes_explicit:
        return jax.sharding.reshard(value, sharding)
    if isinstance(value, jax.core.Tracer):
        return jax.lax.with_sharding_constraint(value, sharding)
    return jax.device_put(value, sharding)
