"""Streaming metric states: update batch by batch, merge by addition (psum across devices)."""

from jaxmetrics._src.streaming import Collection as Collection
from jaxmetrics._src.streaming import ConfusionState as ConfusionState
from jaxmetrics._src.streaming import Mean as Mean
from jaxmetrics._src.streaming_curves import BinnedCurve as BinnedCurve
from jaxmetrics._src.streaming_exact import ExactCurve as ExactCurve

__all__ = ["BinnedCurve", "Collection", "ConfusionState", "ExactCurve", "Mean"]
