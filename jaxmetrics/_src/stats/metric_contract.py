"""The metric that `bootstrap`, `by_group` and `by_group_bootstrap` take: a hashable callable
with a keyword `sample_weight` (resamples and groups are weight vectors; its compiled loop is
kept by the metric), and the `estimate_in_loop` mark of one whose caller checked its input."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any

_ESTIMATE_IN_LOOP = "_jaxmetrics_estimate_in_loop"


def estimate_in_loop(metric: Callable[..., Any]) -> Callable[..., Any]:
    """Mark a metric whose input its caller has checked (a decorator): `bootstrap` takes its
    estimate from a padding slot of its last compiled call (unit weights), not from an eager
    call of the metric (made last without padding, or on a mesh). That call raises a metric's
    own errors on bad input (else a bad value gives NaN, as under jit) at the cost of its eager
    programs (four more to compile for the report's ranking panel)."""
    setattr(metric, _ESTIMATE_IN_LOOP, True)
    return metric


def estimates_in_loop(metric: Callable[..., Any]) -> bool:
    """Whether `metric` was marked with `estimate_in_loop`."""
    return bool(getattr(metric, _ESTIMATE_IN_LOOP, False))


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def check_weighted(metric: Callable[..., Any]) -> None:
    """`TypeError` unless `metric` is a callable that takes a keyword `sample_weight` (a
    signature that cannot be read is trusted): the contract of a bootstrap that resamples by
    weights."""
    if not callable(metric):
        raise TypeError(
            f"`metric` must be a function of the arrays and a keyword `sample_weight`; got "
            f"{_shown(metric)} of type {type(metric).__name__}."
        )
    try:
        signature = inspect.signature(metric)
    except (TypeError, ValueError):
        return
    keywords = [p for p in signature.parameters.values() if p.kind is p.VAR_KEYWORD]
    if "sample_weight" in signature.parameters or keywords:
        return
    raise TypeError(
        f"`metric` must take a keyword argument `sample_weight`; `{getattr(metric, '__name__', '')}"
        f"{signature}` does not. The bootstrap resamples by weights, calling metric(*arrays, "
        "sample_weight=w) with w[i] the times sample i is drawn: add `sample_weight` to it (weight "
        "k counts a sample k times), e.g. `jnp.average(values, weights=sample_weight)` for a mean."
    )


def static_metric(metric: Callable[..., Any]) -> Callable[..., Any]:
    """`metric` as a static argument of `jax.jit`: itself where it hashes (an equal metric reuses
    the compiled program), else a new `functools.partial` of it, which hashes by identity, so an
    unhashable metric (a dataclass with fields, a callable defining `__eq__` alone) is compiled
    per call rather than refused, and never served a program traced before its fields changed.
    Read `estimates_in_loop` of the metric itself, before this."""
    try:
        hash(metric)
    except TypeError:
        return functools.partial(metric)
    return metric
