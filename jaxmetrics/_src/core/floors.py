"""Floors on a rate (a precision, recall, sensitivity or specificity of at least x), decided
exactly.

A float32 floor is not the floor asked for, and a float32 rate not the rate: 0.66666667 and a
specificity of 2/3 round to the same float32. `meets_floor` compares the exact ratio of two
(weighted) counts with the floor as float64 reads it, whatever the working precision.
"""

from __future__ import annotations

from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core.numerics import float_dtype
from jaxmetrics._src.core.options import check_real
from jaxmetrics._src.core.typing import Array


def check_level(value: Any, name: str) -> float:
    """A floor such as `min_precision`: a number in [0, 1] (`options.check_real`)."""
    value = check_real(value, name)
    if not 0 <= value <= 1:
        raise ValueError(f"`{name}` must be a number in [0, 1]; got {value!r}.")
    return float(value)


def split_level(level: float) -> tuple[float, float]:
    """A floor as two numbers of the working float type, for `meets_floor`.

    A float32 floor is not the floor asked for: 0.66666667 rounds to float32 2/3, which a
    specificity of exactly 2/3 then meets. The rule is float64's instead: a rate meets `level`
    when the rate rounded to float64 is at least `level` (so 1/5 meets 0.2, and 2/3 fails
    0.66666667). That holds for rates at least the midpoint between `level` and the float64 just
    below it; the pair (head, tail) is that midpoint, the head rounded to the working type and the
    tail the rest rounded down (about 48 bits in all with x64 off, so rates within ~2^-48 of
    `level` below it are let through).
    """
    dtype = float_dtype()
    head = float(np.asarray(level, dtype))
    rest = (level - head) - (level - float(np.nextafter(level, -np.inf))) / 2
    tail = np.asarray(rest, dtype)
    if float(tail) > rest:  # round down, never above the midpoint
        tail = np.nextafter(tail, np.asarray(-np.inf, dtype))
    return head, float(tail)


def _split(value: Array) -> tuple[Array, Array]:
    """Veltkamp's split of a float into two halves whose products with another half are exact."""
    factor = 4097.0 if value.dtype == jnp.float32 else 134217729.0  # 2^12 + 1, 2^27 + 1
    scaled = factor * value
    high = scaled - (scaled - value)
    return high, value - high


def meets_floor(numerator: Array, denominator: Array, floor: tuple[Array, Array]) -> Array:
    """Whether ``numerator / denominator >= head + tail`` (`split_level`), decided exactly.

    The ratio is not rounded: the product ``head * denominator`` is carried with
    its rounding error (Dekker's two-product, without a fused multiply-add), so a rate of exactly
    2/3 fails a floor of 0.66666667 in float32 as it does in exact arithmetic. False where the
    denominator is 0 (the rate is undefined); where the product overflows (weights near the
    float's limit), the rounded comparison.
    """
    head, tail = (jnp.asarray(part, numerator.dtype) for part in floor)
    product = head * denominator
    head_high, head_low = _split(head)
    denominator_high, denominator_low = _split(denominator)
    error = (
        (head_high * denominator_high - product)
        + head_high * denominator_low
        + head_low * denominator_high
    ) + head_low * denominator_low
    # numerator - product is exact where the two are within a factor of 2 (Sterbenz), which is
    # where the sign can be in doubt
    excess = ((numerator - product) - error) - tail * denominator
    exact = jnp.isfinite(excess)
    return (denominator > 0) & jnp.where(exact, excess >= 0, numerator >= product)
