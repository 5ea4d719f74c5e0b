"""Differentiable surrogates of the metrics, as training losses (published as
`jaxmetrics.losses`)."""
