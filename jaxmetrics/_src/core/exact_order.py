"""Exact order keys for the metrics of the scores' order only: `order_keys` maps scores that
the engine's float type would change to float32 keys of the same order and ties, and
`ScoreCodec` decodes results that hold scores back into the input's own values.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks
from jaxmetrics._src.core.numerics import float_dtype

# Order keys are float32 bit patterns counted up from the smallest normal float: every rank maps
# to a distinct, positive, normal, finite float32 (no subnormal that XLA could flush to zero), so
# the engine sorts and compares keys exactly like scores, at any number of distinct values.
_FIRST_KEY_BITS = np.uint32(0x00800000)


class ScoreCodec:
    """An exact order-preserving map from the input's scores to float32 keys, and back.

    Ranking metrics depend on the order and the ties of the scores only. When the scores cannot
    enter JAX without losing some of both (float64 values that float32 merges, integers above
    2^24, subnormals that XLA flushes to zero), they are replaced on the host by the rank of
    their value among the distinct values, stored as a float32 key; thresholds are encoded the
    same way, so ``score >= threshold`` holds for the keys exactly when it holds for the values.
    Results that hold scores (curve thresholds, chosen thresholds) are decoded back into the
    input's own values.
    """

    def __init__(self, distinct: np.ndarray | None):
        self.distinct = distinct  # sorted distinct input values; None: scores pass unchanged

    @property
    def active(self) -> bool:
        return self.distinct is not None

    def keys_of_ranks(self, ranks: np.ndarray) -> np.ndarray:
        return (ranks.astype(np.uint32) + _FIRST_KEY_BITS).view(np.float32)

    def encode_thresholds(self, thresholds: np.ndarray) -> np.ndarray:
        """Keys of thresholds: the rank of the first distinct score >= t (so >= is preserved)."""
        ranks = np.searchsorted(self.distinct, thresholds, side="left")
        return self.keys_of_ranks(np.asarray(ranks))

    def decode(self, keys: Any) -> Any:
        """Input values of score keys; +-inf and NaN (markers, the closing curve point) stay."""
        if not self.active:
            return keys
        if not checks.is_concrete(keys):
            # concrete scores closed over inside jit: the result is traced, so the values come
            # back in JAX's float type (float32 unless x64), as everything under jit does
            ranks = jax.lax.bitcast_convert_type(keys, jnp.uint32) - _FIRST_KEY_BITS
            distinct = jnp.asarray(self.distinct, float_dtype())
            values = distinct[jnp.clip(ranks.astype(jnp.int32), 0, self.distinct.size - 1)]
            return jnp.where(jnp.isfinite(keys), values, keys.astype(values.dtype))
        keys = np.asarray(keys, np.float32)
        finite = np.isfinite(keys)
        ranks = keys.view(np.uint32).astype(np.int64) - int(_FIRST_KEY_BITS)
        values = self.distinct[np.clip(ranks, 0, self.distinct.size - 1)].astype(np.float64)
        values = np.where(finite, values, keys.astype(np.float64))
        return jnp.asarray(values) if jax.config.jax_enable_x64 else values


def _needs_codec(host: np.ndarray, dtype: Any) -> bool:
    """True when casting `host` to the engine's float `dtype` would merge, move or flush values."""
    if host.dtype == np.bool_:
        return False
    cast = host.astype(dtype)
    tiny = np.finfo(dtype).tiny
    if np.any((cast != 0) & (np.abs(cast) < tiny)):  # subnormal: XLA's CPU flushes it to zero
        return True
    if host.dtype == dtype:
        return False
    with np.errstate(over="ignore", invalid="ignore"):
        if np.issubdtype(host.dtype, np.integer):
            if host.size == 0:
                return False
            limit = 2 ** (np.finfo(dtype).nmant + 1)
            return bool(np.max(np.abs(host.astype(np.float64))) > limit)
        return bool(np.any(cast.astype(host.dtype) != host))


def order_keys(
    scores: Any, name: str = "scores", *, thresholds: Any = None
) -> tuple[Any, ScoreCodec]:
    """Scores for a metric that depends only on their order, exact on any concrete input.

    Traced scores (under jit) pass unchanged: their values are what JAX made them (float32
    unless x64 is on). Concrete scores that the engine's float type would change are replaced
    by order keys (see `ScoreCodec`); NaN/inf are left for `checks.check_finite` to report.
    """
    host = checks.host_values(scores)
    if host is None or host.dtype.kind not in "biuf":
        return scores, ScoreCodec(None)
    # thresholds compared with the scores must be encoded with them, or not at all
    grid = None if thresholds is None else checks.host_values(thresholds)
    if thresholds is not None and (grid is None or grid.dtype.kind not in "biuf"):
        return scores, ScoreCodec(None)
    needed = _needs_codec(host, float_dtype()) or (
        grid is not None and _needs_codec(grid[~np.isnan(grid)], float_dtype())
    )
    if not needed or not np.all(np.isfinite(host)):
        return scores, ScoreCodec(None)
    distinct = np.unique(host.astype(np.float64) if host.dtype.kind == "f" else host)
    if distinct.size >= 2**31:
        raise ValueError(f"`{name}` has too many distinct values to rank exactly.")
    codec = ScoreCodec(distinct)
    keys = codec.keys_of_ranks(np.searchsorted(distinct, host))
    return keys, codec
