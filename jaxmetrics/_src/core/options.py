"""Checks of options (the keyword arguments that are not data): names from a `Literal`, counts,
real numbers and probability levels. Each raises a `TypeError` or `ValueError` naming the option,
what was expected and what came; a bool or a string is never read as a number.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

import jax.numpy as jnp
import numpy as np

from jaxmetrics._src.core import checks


def check_option(value: Any, name: str, allowed: Sequence[Any]) -> Any:
    """A string/None option must be one of `allowed` (the `Literal` it is typed with)."""
    if not any(value is a or (isinstance(value, str) and value == a) for a in allowed):
        raise ValueError(f"`{name}` must be one of {tuple(allowed)}; got {value!r}.")
    return value


def check_count(value: Any, name: str, *, minimum: int = 1) -> int:
    """A static count option (`k`, `num_resamples`, `num_bins`): a Python or numpy integer."""
    if isinstance(value, bool | np.bool_) or not isinstance(value, int | np.integer):
        raise TypeError(f"`{name}` must be an int >= {minimum}; got {value!r}.")
    if value < minimum:
        raise ValueError(f"`{name}` must be an int >= {minimum}; got {value!r}.")
    return int(value)


def check_real(value: Any, name: str, *, traced: bool = False) -> Any:
    """A real-number option: a Python or numpy real, never a bool or a string.

    Python's `float` reads ``"0.9"`` and ``True`` as numbers, so options checked with it took
    them silently. A concrete scalar array is read as the number it holds. With `traced`, a
    traced scalar is accepted too (a hyper-parameter that may follow a schedule inside a jitted
    step); otherwise the option is static, and a traced value is refused saying so.
    """
    if isinstance(value, bool | np.bool_ | str | bytes) or value is None:
        kind = "a number" if traced else "a Python number"
        raise TypeError(f"`{name}` must be {kind}; got {value!r} of type {type(value).__name__}.")
    if isinstance(value, numbers.Real):
        return value.item() if isinstance(value, np.generic) else value
    dtype = getattr(value, "dtype", None)
    real = dtype is not None and (
        jnp.issubdtype(dtype, jnp.floating) or jnp.issubdtype(dtype, jnp.integer)
    )
    if real and np.ndim(value) == 0:
        if not checks.is_concrete(value):
            if traced:
                return value
            raise TypeError(
                f"`{name}` must be a Python number (a static option), not a traced value; got "
                f"{value!r}. Pass it as a constant, or mark it static in `jax.jit`."
            )
        return np.asarray(value).item()
    raise TypeError(
        f"`{name}` must be a number; got {value!r} of type {type(value).__name__}"
        + (f" and shape {np.shape(value)}." if dtype is not None else ".")
    )


def check_probability_level(value: Any, name: str = "confidence") -> float:
    """A level strictly inside (0, 1), e.g. `confidence`: a Python number."""
    level = float(check_real(value, name))
    if not 0 < level < 1:
        raise ValueError(f"`{name}` must be in (0, 1); got {value!r}.")
    return level
