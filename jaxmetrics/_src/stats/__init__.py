"""Uncertainty: proportion and bootstrap intervals, resampling, DeLong and the tests built on them.
Takes metrics as functions, so it imports the mesh and the core only."""
