"""The multiclass report as text, and its one figure (each class's ROC curve against the rest),
laid out as the binary report's sections are (`render`'s formats and tables)."""

from __future__ import annotations

from jaxmetrics.report.multiclass_result import MulticlassReport
from jaxmetrics.report.render import OUTSIDE_NOTE, fmt, fmt_bootstrap, fmt_interval, table
from jaxmetrics.report.result import Interval


def _row(name: str, auc: Interval, ap: Interval | None) -> list[str]:
    row = [name, fmt(auc.estimate, 4), fmt_bootstrap(auc)]
    return row + (["", ""] if ap is None else [fmt(ap.estimate, 4), fmt_bootstrap(ap)])


def render_data(report: MulticlassReport, source: str) -> list[str]:
    data, classes = report.data, report.classes
    rows = [[name, c.score_column, str(c.samples), f"{c.share:.4f}"] for name, c in classes.items()]
    return [
        f"jaxmetrics report: {source}",
        "",
        f"{data.samples} samples in {len(data.classes)} classes (multiclass: one probability "
        "column per class)",
        table(["class", "column", "samples", "share"], rows),
        f"majority baseline (always predict {data.majority_class!r}): accuracy "
        f"{data.majority_baseline_accuracy:.4f}",
    ]


def render_ranking(report: MulticlassReport) -> list[str]:
    meta, averages = report.metadata, report.averages
    rows = [_row(name, c.roc_auc, c.average_precision) for name, c in report.classes.items()]
    rows.append(_row("macro", averages.roc_auc_macro, averages.average_precision_macro))
    rows.append(_row("weighted", averages.roc_auc_weighted, averages.average_precision_weighted))
    rows.append(_row("one-vs-one", averages.roc_auc_one_vs_one, None))
    out = [
        "",
        f"Ranking, each class against the rest (95% intervals: bootstrap over {meta.resamples} "
        f"resamples, seed {meta.seed})",
        table(["class", "ROC AUC", "bootstrap", "AP", "bootstrap"], rows),
        "(macro: the classes' mean; weighted: by class share; one-vs-one: Hand & Till's mean "
        "AUC over pairs of classes; AP of a random ranking = the class's share)",
    ]
    intervals = [i for c in report.classes.values() for i in (c.roc_auc, c.average_precision)]
    out += _notes(report, intervals + list(averages))
    if meta.cluster_column is not None:
        out.append(f"(clustered by {meta.cluster_column!r}: whole clusters resampled)")
    return out


def _notes(report: MulticlassReport, intervals: list[Interval]) -> list[str]:
    out = [OUTSIDE_NOTE] if any(i.estimate_outside_interval for i in intervals) else []
    undefined = max(i.undefined_resamples for i in intervals)
    if undefined:
        out.append(
            f"({undefined} of {report.metadata.resamples} resamples left a class out and were "
            "left out of some intervals; with so few of a class the intervals are rough)"
        )
    if min(c.samples for c in report.classes.values()) < 2:
        out.append("(no intervals: they need at least two rows of every class)")
    return out


def render_predictions(report: MulticlassReport) -> list[str]:
    predictions, calibration, classes = report.predictions, report.calibration, report.data.classes
    matrix = [
        [name, *(str(count) for count in row)]
        for name, row in zip(classes, predictions.confusion_matrix)
    ]
    k = report.metadata.top_k
    measures = [
        ("accuracy", predictions.accuracy),
        ("Cohen's kappa", predictions.cohen_kappa),
        (f"top-{k} accuracy", predictions.top_k_accuracy),
        ("log loss", calibration.log_loss),
        ("Brier score", calibration.brier),
    ]
    rows = [[name, fmt(i.estimate, 4), fmt_bootstrap(i)] for name, i in measures]
    return [
        "",
        "Predictions: the most probable class (ties to the first class)",
        table(["true \\ predicted", *classes], matrix),
        "",
        "Accuracy and calibration (95% bootstrap intervals, the same resamples)",
        table(["measure", "value", "bootstrap"], rows),
        f"(top-{k}: the true class among the {k} most probable; kappa: agreement beyond chance; "
        "Brier summed over the classes, 0 perfect to 2; log loss as scikit-learn's)",
        *([OUTSIDE_NOTE] if any(i.estimate_outside_interval for _, i in measures) else []),
    ]


def render_multiclass(report: MulticlassReport, *, source: str) -> str:
    """The whole text report."""
    out = render_data(report, source) + render_ranking(report) + render_predictions(report)
    lines = "\n".join(out).split("\n")
    return "\n".join(line.rstrip() for line in lines) + "\n"  # the one-vs-one row has no AP


def roc_figure(plt, report: MulticlassReport):
    """Each class's ROC curve against the rest, with its AUC and bootstrap interval."""
    figure, axes = plt.subplots(figsize=(5.5, 6), layout="constrained")
    for name, c in report.classes.items():
        auc = c.roc_auc
        label = f"{name}: AUC {auc.estimate:.3f} {fmt_interval(auc.low, auc.high)}"
        axes.plot(c.roc_curve.fpr, c.roc_curve.tpr, label=label)
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="random")
    axes.set(xlabel="false positive rate", ylabel="true positive rate (recall)")
    axes.set(title="ROC curve of each class against the rest", xlim=(0, 1), ylim=(0, 1.01))
    figure.legend(loc="outside lower center", frameon=False)
    return figure
