"""Numerics shared by every layer: the float type of results, and `safe_divide`, the one
division of the library."""

from __future__ import annotations

import math
from typing import Any

import jax
import jax.numpy as jnp

from jaxmetrics._src.core.typing import Array, ArrayLike


def float_dtype() -> Any:
    """Float type of results: float64 whenever x64 is on (results are float64 end to end), else
    float32 (counts stay exact integers; only ratios of them are float)."""
    return jnp.float64 if jax.config.jax_enable_x64 else jnp.float32


def safe_divide(
    numerator: ArrayLike, denominator: ArrayLike, zero_division: float = math.nan
) -> Array:
    r"""Elementwise ``numerator / denominator`` in float, `zero_division` where it divides by 0.

    The one division of the library: every rate goes through it, so undefined values behave the
    same everywhere. Its `zero_division` is scikit-learn's option of the same name (its rates
    take ``0.0``, ``1.0`` or ``np.nan``), with NaN as the default.

    .. math:: \mathrm{safe\_divide}(a, b) = \begin{cases} a / b & b \ne 0 \\
              \mathrm{zero\_division} & b = 0 \end{cases}

    Any numerator over a zero denominator gives `zero_division`, never ``inf``. The
    result is float32 (float64 when `jax_enable_x64` is on) and a true, correctly rounded
    division, not a product with a reciprocal, so it is exact wherever the ratio is
    representable (``41 / 41`` is exactly 1 and an ROC curve ends at exactly (1, 1)).

    Args:
      numerator: an array of any shape, broadcasting against `denominator`.
      denominator: an array of any shape, broadcasting against `numerator`.
      zero_division: the value where the denominator is 0; NaN by default.

    Returns:
      A float array of the broadcast shape of `numerator` and `denominator`.

    Examples:
      >>> import jax.numpy as jnp
      >>> import jaxmetrics as jm
      >>> [float(x) for x in jm.safe_divide(jnp.array([1, 2]), jnp.array([4, 0]))]
      [0.25, nan]
      >>> float(jm.safe_divide(2, 0, zero_division=0.0))
      0.0
    """
    dtype = float_dtype()
    numerator = jnp.asarray(numerator, dtype)
    denominator = jnp.asarray(denominator, dtype)
    shape = jnp.broadcast_shapes(numerator.shape, denominator.shape)
    empty = denominator == 0
    # XLA rewrites a division by a broadcast scalar as a product with its reciprocal, which is
    # not exact (41/41 would be 0.99999994); the barrier keeps it a true, correctly rounded
    # division, so a rate is exact wherever the ratio is representable.
    safe = jax.lax.optimization_barrier(
        jnp.broadcast_to(jnp.where(empty, jnp.ones_like(denominator), denominator), shape)
    )
    return jnp.where(empty, jnp.asarray(zero_division, dtype), _quotient(numerator, safe))


@jax.custom_jvp
def _quotient(numerator: Array, denominator: Array) -> Array:
    return numerator / denominator


@_quotient.defjvp
def _quotient_jvp(primals, tangents):
    """d(a / b) = (da - (a / b) db) / b: JAX's own rule divides by b^2, which overflows float32
    past b ~ 1.8e19 and dropped the denominator's part of the gradient (soft precision with
    weights of 2^62: no gradient on the negatives)."""
    numerator, denominator = primals
    d_numerator, d_denominator = tangents
    quotient = numerator / denominator
    return quotient, (d_numerator - quotient * d_denominator) / denominator


def weight_scale(weights: Array, *, below: int = 0, axis=None) -> Array:
    """The power of two, at least 1, that divides the largest of `weights` below ``2^below``.

    A ratio of weighted sums (a fit, a mean over pairs) is the same for weights times any
    constant; divided by this (exactly: a power of two), weights of 1e30 cannot overflow the
    products and sums of such a ratio, and weights already below ``2^below`` are left as they
    are. `products_bound` gives the `below` under which products of four such values stay finite.
    The largest is over every element, or over `axis` (kept, for broadcasting; ``()`` gives one
    scale per element).
    """
    largest = jnp.max(weights, axis=axis, keepdims=axis is not None)
    _, exponent = jnp.frexp(largest)  # the largest weight is in [2^(e-1), 2^e)
    maxexp = jnp.finfo(weights.dtype).maxexp
    return jnp.ldexp(jnp.ones((), weights.dtype), jnp.clip(exponent - below, 0, maxexp - 1))


def products_bound(dtype) -> int:
    """An exponent b such that a sum of two products of four values below ``2^b`` each is finite
    in `dtype` (float32: 31, float64: 255): counts scaled below it (`weight_scale`) can be
    multiplied and squared, as in ``(fn N)^2 + (fp P)^2``."""
    return jnp.finfo(dtype).maxexp // 4 - 1


def scaled_for_products(counts: tuple[Array, ...], largest: Array) -> tuple[Array, ...]:
    """`counts` divided, exactly, by the power of two that brings `largest` (their largest, per
    element) below ``2^products_bound``: products of four of them cannot overflow (weights of
    1e30 made tp N - fp P inf - inf); counts already below are returned as they are."""
    scale = weight_scale(jnp.abs(largest), below=products_bound(largest.dtype), axis=())
    return tuple(count / scale for count in counts)
