"""The metrics: confusion counts and rates, curves, AUC and average precision, thresholds,
multiclass and multilabel averages, retrieval, calibration. Imports stats, mesh and core."""
