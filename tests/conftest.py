import numpy as np
import pytest


@pytest.fixture
def rng():
    return np.random.default_rng(20261130)


def tied_problem(rng, n=200, levels=7, weighted=False, float_weights=False):
    """Random binary problem with heavy ties (scores take few distinct values)."""
    scores = rng.integers(0, levels, n).astype(np.float32) / levels
    labels = rng.integers(0, 2, n).astype(np.int32)
    labels[:2] = [0, 1]
    weights = None
    if weighted:
        weights = rng.integers(0, 4, n).astype(np.float32)
        if float_weights:
            weights = weights * rng.random(n).astype(np.float32)
        weights[:2] = 1.0
    return scores, labels, weights
