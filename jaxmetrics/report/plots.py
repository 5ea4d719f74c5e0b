"""ROC, precision-recall, reliability and decision-curve diagrams, drawn from a `Report`.

Nothing is recomputed here: every point comes from the result that `evaluate` built (and that
--json writes), so a user can redraw the same pictures from the JSON. Each figure is drawn on its
own (`figure`), so the command can write the others when one fails.
"""

from __future__ import annotations

import numpy as np

from jaxmetrics.report.multiclass_render import roc_figure
from jaxmetrics.report.multiclass_result import MulticlassReport
from jaxmetrics.report.read import ReportError
from jaxmetrics.report.render import fmt_interval
from jaxmetrics.report.result import Report


def pyplot():
    """matplotlib's pyplot on the file-only Agg backend, or a `ReportError` saying how to get it."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ReportError("--plots needs matplotlib: pip install 'jaxmetrics[report]'") from None
    return plt


def _legend_below(figure) -> None:
    # outside and below the axes, where it can never hide a curve
    figure.legend(loc="outside lower center", frameon=False)


def _roc(plt, report: Report):
    figure, axes = plt.subplots(figsize=(5.5, 6), layout="constrained")
    for name, model in report.models.items():
        auc = model.roc_auc
        interval = fmt_interval(auc.low, auc.high)
        (line,) = axes.plot(
            *model.roc_curve[:2], label=f"{name}: AUC {auc.estimate:.3f} {interval}"
        )
        band = model.roc_band  # bootstrap intervals of the sensitivity at fixed specificities
        fpr = 1 - np.asarray(band.specificity, float)
        low, high = np.asarray(band.low, float), np.asarray(band.high, float)
        if np.isfinite(low).any():
            axes.fill_between(fpr, low, high, color=line.get_color(), alpha=0.15, linewidth=0)
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="random")
    axes.set(xlabel="false positive rate", ylabel="true positive rate (recall)")
    axes.set(title="ROC curve (shaded: 95% bootstrap band of the sensitivity)")
    axes.set(xlim=(0, 1), ylim=(0, 1.01))
    _legend_below(figure)
    return figure


def _precision_recall(plt, report: Report):
    figure, axes = plt.subplots(figsize=(5.5, 6), layout="constrained")
    for name, model in report.models.items():
        ap = model.average_precision
        curve = model.precision_recall_curve
        label = f"{name}: AP {ap.estimate:.3f} {fmt_interval(ap.low, ap.high)}"
        axes.step(curve.recall, curve.precision, where="post", label=label)
    prevalence = report.data.prevalence
    axes.axhline(prevalence, color="grey", linestyle="--", linewidth=1)
    axes.lines[-1].set_label(f"random (prevalence {prevalence:.3f})")
    axes.set(xlabel="recall", ylabel="precision", title="Precision-recall curve")
    axes.set(xlim=(0, 1), ylim=(0, 1.01))
    _legend_below(figure)
    return figure


def _reliability(plt, report: Report):
    # each model keeps its colour of the other plots: its place among all models
    calibrated = {
        name: (index, model.calibration)
        for index, (name, model) in enumerate(report.models.items())
        if model.calibration is not None
    }
    if not calibrated:
        return None
    figure, (axes, histogram) = plt.subplots(
        2, 1, figsize=(5.5, 7), sharex=True, height_ratios=(3, 1), layout="constrained"
    )
    largest = max(b.count for _, c in calibrated.values() for b in c.reliability)
    for name, (index, calibration) in calibrated.items():
        color = f"C{index}"
        bins = calibration.reliability
        counts = np.array([b.count for b in bins])
        filled = counts > 0
        x = np.array([b.mean_predicted for b in bins], float)
        y = np.array([b.fraction_positive for b in bins], float)
        # NaN in empty bins breaks the line there: no segment claims data that a bin lacks
        axes.plot(x, y, color=color, linewidth=1, alpha=0.6)
        low = np.array([b.low for b in bins], float)
        high = np.array([b.high for b in bins], float)
        # at least 0: a float32 Wilson bound can round to the wrong side of its point
        # (wilson_interval(23, 23) gave high 0.99999994 < 1), and matplotlib refuses a
        # negative error bar
        below, above = np.maximum(y - low, 0), np.maximum(high - y, 0)
        axes.errorbar(
            x[filled],
            y[filled],
            yerr=[below[filled], above[filled]],
            fmt="none",
            ecolor=color,
            capsize=3,
            alpha=0.7,
        )
        # marker area grows with the bin's count: a well-filled bin is a well-measured point
        sizes = 15 + 185 * np.sqrt(counts[filled] / largest)
        label = f"{name}: ECE {calibration.ece:.3f} ({calibration.num_bins} bins)"
        axes.scatter(x[filled], y[filled], s=sizes, color=color, alpha=0.8, label=label)
        edges = [bins[0].bin[0]] + [b.bin[1] for b in bins]
        histogram.stairs(counts, edges, color=color)
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1)
    axes.lines[-1].set_label("perfectly calibrated")
    axes.set(ylabel="fraction of positives (Wilson 95%)", title="Reliability diagram")
    axes.set(xlim=(0, 1), ylim=(0, 1))
    histogram.set(xlabel="predicted probability (marker area: samples in the bin)")
    histogram.set_ylabel("samples per bin")
    if largest > 0:
        histogram.set_yscale("symlog", linthresh=1)  # counts span orders of magnitude; 0 stays 0
        histogram.set_ylim(0, largest * 2)
    _legend_below(figure)
    return figure


def _decision_curve(plt, report: Report):
    # each model keeps its colour of the other plots: its place among all models
    curves = {
        name: (index, model.decision_curve)
        for index, (name, model) in enumerate(report.models.items())
        if model.decision_curve is not None
    }
    if not curves:
        return None
    figure, axes = plt.subplots(figsize=(5.5, 6), layout="constrained")
    for name, (index, curve) in curves.items():
        points = curve.curve
        axes.plot(points.thresholds, points.net_benefit, color=f"C{index}", label=name)
    points = next(iter(curves.values()))[1].curve
    axes.plot(points.thresholds, points.treat_all, color="grey", linewidth=1, label="treat all")
    axes.axhline(0, color="black", linestyle="--", linewidth=1, label="treat none")
    prevalence = report.data.prevalence
    # treat-all falls without bound: show from a little below 0 to the prevalence (its best)
    axes.set(xlim=(0, 1), ylim=(-0.1 * max(prevalence, 0.01), 1.05 * max(prevalence, 0.01)))
    axes.set(xlabel="threshold probability (treat iff probability >= threshold)")
    axes.set(ylabel="net benefit (true positives per patient)", title="Decision curve")
    _legend_below(figure)
    return figure


_FIGURES = {
    "roc.png": _roc,
    "precision_recall.png": _precision_recall,
    "reliability.png": _reliability,
    "decision_curve.png": _decision_curve,
}
FILES = tuple(_FIGURES)


def figure(name: str, report: Report | MulticlassReport):
    """The figure written as `name` (one of `FILES`), or None: a reliability diagram and a
    decision curve need a model of probabilities, and a multiclass report draws only its
    classes' ROC curves."""
    if isinstance(report, MulticlassReport):
        return roc_figure(pyplot(), report) if name == "roc.png" else None
    return _FIGURES[name](pyplot(), report)


def draw(report: Report | MulticlassReport) -> dict[str, object]:
    """The figures by file name (reliability and decision curve only when some model has
    probabilities)."""
    figures = {name: figure(name, report) for name in FILES}
    return {name: drawn for name, drawn in figures.items() if drawn is not None}


def save(figure, path) -> None:
    """Write `figure` as PNG to `path` (a file or file object) and release it."""
    plt = pyplot()
    try:
        figure.savefig(path, dpi=110, format="png")
    finally:
        plt.close(figure)
