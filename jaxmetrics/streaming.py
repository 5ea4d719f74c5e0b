"""Streaming metric states: update batch by batch, merge by addition (psum across devices)."""

from jaxmetrics._src.streaming.curves import BinnedCurve as BinnedCurve
from jaxmetrics._src.streaming.exact import ExactCurve as ExactCurve
from jaxmetrics._src.streaming.states import Collection as Collection
from jaxmetrics._src.streaming.states import ConfusionState as ConfusionState
from jaxmetrics._src.streaming.states import Mean as Mean

__all__ = ["BinnedCurve", "Collection", "ConfusionState", "ExactCurve", "Mean"]
