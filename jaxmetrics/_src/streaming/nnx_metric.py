"""`StreamingMetric`: any streaming state as a flax `nnx.Metric`, for `nnx.MultiMetric`.

The state lives in one `nnx.metrics.MetricState` variable, so the metric passes through
`nnx.jit`, `nnx.scan` and `nnx.split` like flax's own metrics; the state's static configuration
(its threshold grid, capacity) is part of the variable's pytree structure, and its leaf types
never change on update, so a jitted eval step traces once. Published as `jaxmetrics.nnx`.
"""

from __future__ import annotations

from typing import Any

import jax
import jax.numpy as jnp
import numpy as np

try:
    from flax import nnx
except ImportError as error:  # flax is an optional extra
    raise ImportError(
        "`jaxmetrics.nnx` needs flax (>= 0.12), an optional dependency: "
        "pip install 'jaxmetrics[flax]'"
    ) from error


class _EmptyState:
    """The state `reset` returns to, kept as host arrays in a static attribute: compared by
    identity, so that `nnx.jit` neither traces nor hashes its arrays, and shared by copies."""

    def __init__(self, state: Any) -> None:
        if any(isinstance(leaf, jax.core.Tracer) for leaf in jax.tree_util.tree_leaves(state)):
            raise TypeError("create a `StreamingMetric` outside `jax.jit` (its state is traced).")
        self.host = jax.tree_util.tree_map(np.asarray, state)

    def __call__(self) -> Any:
        return jax.tree_util.tree_map(jnp.asarray, self.host)

    def __deepcopy__(self, memo: dict) -> _EmptyState:
        return self


class StreamingMetric(nnx.Metric):
    """A streaming state of `jaxmetrics.streaming` as an `nnx.Metric`.

    ``update(**batch)`` reads the keyword arguments named at construction and ignores the rest,
    as `nnx.MultiMetric` forwards every keyword to every metric; a ``mask`` keyword (the
    per-sample mask `nnx.MultiMetric` passes on) multiplies the weights, so padded rows can be
    masked out. `compute` is the state's `compute`, one compiled program; `reset` returns to
    the state given.

    Int, float and bool masks and weights never change the state's leaf types (integer counts
    take whole weights exactly; create the state with ``dtype=jnp.float32`` for fractional
    weights), so an eval step under `nnx.jit` traces once and `nnx.scan` runs over batches.

    Across devices: the state merges as the states do. Inside `jax.shard_map`,
    ``jax.lax.psum(metric.state.value, axis)`` merges the states that add up (`BinnedCurve`,
    `ConfusionState`, `Mean`, a `Collection` of them); `merge` merges two metrics.

    Args:
      state: an empty streaming state (`BinnedCurve`, `ExactCurve`, `ConfusionState`,
        `Collection`, `Mean`), created outside `jax.jit`.
      scores: the keyword of `update` that holds the scores (``[n]``, ``[L, n]`` multilabel;
        for a multiclass `ConfusionState` the predicted classes; for a `Mean` the values).
      labels: the keyword that holds the labels; None for a `Mean`, which has none.
      sample_weight: the keyword that holds the sample weights, if any (None: no weights).

    Examples:
      >>> import jax.numpy as jnp
      >>> from flax import nnx
      >>> from jaxmetrics import streaming
      >>> from jaxmetrics.nnx import StreamingMetric
      >>> metrics = nnx.MultiMetric(
      ...     auc=StreamingMetric(streaming.BinnedCurve.empty(11), scores="probs"),
      ...     loss=nnx.metrics.Average("loss"),
      ... )
      >>> metrics.update(probs=jnp.array([0.92, 0.65, 0.33, 0.2]), labels=jnp.array([1, 0, 1, 0]),
      ...                loss=jnp.array([0.1, 1.0, 1.1, 0.2]))
      >>> result = metrics.compute()
      >>> round(float(result["auc"]["roc_auc"]), 4), round(float(result["loss"]), 4)
      (0.75, 0.6)
    """

    def __init__(
        self,
        state: Any,
        *,
        scores: str = "scores",
        labels: str | None = "labels",
        sample_weight: str | None = None,
    ) -> None:
        if not all(callable(getattr(state, m, None)) for m in ("update", "merge", "compute")):
            raise TypeError(
                "`state` must be a streaming state with `update`, `merge` and `compute` (e.g. "
                f"`jaxmetrics.streaming.BinnedCurve.empty()`); got {type(state).__name__}."
            )
        if not isinstance(scores, str):
            raise TypeError(f"`scores` must be a keyword name (a str); got {scores!r}.")
        for name, value in (("labels", labels), ("sample_weight", sample_weight)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"`{name}` must be a keyword name (a str) or None; got {value!r}.")
        self.keywords = (scores, labels, sample_weight)
        self.state = nnx.metrics.MetricState(state)
        self.empty = _EmptyState(state)

    def update(self, **batch: Any) -> None:
        """Add one batch: the arrays under the keywords named at construction; others ignored.

        A ``mask`` keyword (``[n]``, bool, int or float, as `nnx.MultiMetric` passes one)
        multiplies the sample weights: 0 leaves a sample out.
        """
        scores, labels, sample_weight = self.keywords
        missing = [name for name in (scores, labels, sample_weight) if name and name not in batch]
        if missing:
            raise TypeError(
                f"`StreamingMetric.update` needs the keyword argument(s) {missing} (the names "
                f"given at construction); got {sorted(batch)}."
            )
        weights = batch[sample_weight] if sample_weight else None
        mask = batch.get("mask")
        if mask is not None:
            weights = mask if weights is None else jnp.asarray(weights) * jnp.asarray(mask)
        arrays = (batch[scores],) if labels is None else (batch[scores], batch[labels])
        self.state.value = self.state.value.update(*arrays, sample_weight=weights)

    def reset(self) -> None:
        """Return to the state given at construction."""
        self.state.value = self.empty()

    def compute(self) -> Any:
        """The state's `compute`: a dict of metrics, computed by one compiled program."""
        return self.state.value.compute()

    def merge(self, other: StreamingMetric) -> None:
        """Add the samples of `other` (a metric of the same configuration), in place."""
        self.state.value = self.state.value.merge(other.state.value)

    def from_model_output(self, **batch: Any) -> StreamingMetric:
        """A new metric of one batch, as clu's and metrax's ``from_model_output`` give one:
        the state given at construction updated with `batch`; `merge` adds it to another."""
        scores, labels, sample_weight = self.keywords
        metric = StreamingMetric(
            self.empty(), scores=scores, labels=labels, sample_weight=sample_weight
        )
        metric.update(**batch)
        return metric
