"""Streaming metrics for flax's nnx (`pip install 'jaxmetrics[flax]'`): `StreamingMetric` puts any
state of `jaxmetrics.streaming` into an `nnx.MultiMetric`, beside `nnx.metrics.Average`."""

from jaxmetrics._src.streaming.nnx_metric import StreamingMetric as StreamingMetric

__all__ = ["StreamingMetric"]
