"""`jaxmetrics report`: a readable evaluation of one or more score columns."""

from __future__ import annotations

from typing import TextIO

import numpy as np

import jaxmetrics as jm


def demo_data(seed: int = 0, num_samples: int = 4000) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Seed 000's classifiers A and B at 5% prevalence.

    Negatives score N(0, 1); positives N(1.5, 1) for A and N(1.5, 2^2) for B, so A wins on ROC AUC
    (0.856 in the population) and B, whose positives spread far above the negatives, on AP.
    """
    rng = np.random.default_rng(seed)
    labels = (rng.random(num_samples) < 0.05).astype(np.int32)
    noise = rng.normal(size=(2, num_samples))
    scores = {
        "A": np.where(labels == 1, 1.5 + noise[0], noise[0]),
        "B": np.where(labels == 1, 1.5 + 2.0 * noise[1], noise[1]),
    }
    # report probabilities, as a calibrated model would, so that 0.5 and calibration make sense
    return labels, {
        name: (1 / (1 + np.exp(-(s - 3.0)))).astype(np.float32) for name, s in scores.items()
    }


def run(args, out: TextIO) -> int:
    if not args.demo:
        out.write("jaxmetrics report: only --demo is available in this version.\n")
        return 2
    labels, models = demo_data()
    out.write(f"demo data: {labels.size} samples, prevalence {labels.mean():.4f}\n")
    out.write(f"{'model':<8}{'ROC AUC':>9}{'AP':>9}{'precision':>11}{'recall':>9}\n")
    for name, scores in models.items():
        counts = jm.confusion_counts(scores, labels, args.threshold)
        out.write(
            f"{name:<8}{float(jm.roc_auc(scores, labels)):>9.4f}"
            f"{float(jm.average_precision(scores, labels)):>9.4f}"
            f"{float(jm.precision(counts)):>11.4f}{float(jm.recall(counts)):>9.4f}\n"
        )
    return 0
