"""Streaming metric states for training loops; published as `jaxmetrics.streaming`."""
