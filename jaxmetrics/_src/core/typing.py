"""Types shared by every module: array inputs and outputs, and the literal options.

Inputs are typed `ArrayLike` (jax's: arrays, numpy arrays and scalars; nested lists of numbers
are accepted too and converted with numpy), outputs `Array`. String options are `Literal` types,
checked at run time by `options.check_option` against the same tuple.
"""

from __future__ import annotations

from typing import Literal, TypeAlias, get_args

import jax
from jax.typing import ArrayLike

__all__ = [
    "Array",
    "ArrayLike",
    "Average",
    "BinningStrategy",
    "BootstrapMethod",
    "CalibrationNorm",
    "Kappa",
    "MultiClass",
    "MultilabelAverage",
    "RocAucAverage",
    "Sampling",
    "Surrogate",
    "options_of",
]

Array: TypeAlias = jax.Array

Average: TypeAlias = Literal["micro", "macro", "weighted"] | None
BootstrapMethod: TypeAlias = Literal["percentile", "basic", "bca"]
Sampling: TypeAlias = Literal["multinomial", "poisson"]
BinningStrategy: TypeAlias = Literal["uniform", "quantile"]
CalibrationNorm: TypeAlias = Literal["l1", "l2", "max"]
Kappa: TypeAlias = Literal["linear", "quadratic"] | None
MultiClass: TypeAlias = Literal["ovr", "ovo"]


def options_of(literal: object) -> tuple:
    """The allowed values of a `Literal` type (None included for an optional one), in order."""
    values: list = []
    for arg in get_args(literal):
        values.extend(get_args(arg) if get_args(arg) else [arg])
    return tuple(None if value is type(None) else value for value in values)


# `multiclass_roc_auc(average=...)` ("micro" with "ovr" only, as in scikit-learn) and the
# pairwise losses' `surrogate`
RocAucAverage: TypeAlias = Literal["micro", "macro", "weighted"] | None
Surrogate: TypeAlias = Literal["logistic", "hinge", "squared_hinge", "sigmoid"]
# `roc_auc(average=...)` / `average_precision(average=...)` over a multilabel label axis
MultilabelAverage: TypeAlias = Literal["micro", "macro", "weighted", "samples"] | None
