"""The report as text: one function per section, each reading its part of the typed `Report`."""

from __future__ import annotations

import math

from jaxmetrics.report.result import (
    ByGroup,
    Calibration,
    Comparison,
    Data,
    Difference,
    Interval,
    ModelReport,
    Report,
)

DASH = "–"  # an undefined value (NaN in the result, null in the JSON)
OUTSIDE = "*"  # after a bootstrap interval that misses its own estimate
OUTSIDE_NOTE = (
    f"({OUTSIDE} the bootstrap interval misses its own estimate: the metric is biased on "
    "resamples of this data, so that interval is off-centre; do not read it as a 95% range)"
)


def _defined(value: float | None) -> bool:
    return value is not None and not math.isnan(value)


def fmt(value: float | None, digits: int = 3, sign: str = "") -> str:
    """`value` to `digits` decimals, a dash if undefined; never "-0.000"."""
    if not _defined(value):
        return DASH
    return f"{round(value, digits) + 0.0:{sign}.{digits}f}"  # + 0.0 turns -0.0 into 0.0


def fmt_threshold(value: float) -> str:
    """Significant digits, so 1.6e-05 is not shown as 0.0000."""
    if not _defined(value):
        return DASH
    return "inf (flag none)" if value == math.inf else f"{value:.4g}"


def fmt_interval(low: float, high: float, digits: int = 3, proportion: bool = False) -> str:
    if not (_defined(low) and _defined(high)):
        return DASH
    if proportion:  # a rate's interval lies in [0, 1]; rounding must not push it out
        low, high = min(max(low, 0.0), 1.0), min(max(high, 0.0), 1.0)
    return f"[{fmt(low, digits)}, {fmt(high, digits)}]"


def fmt_bootstrap(interval: Interval | Difference) -> str:
    """A bootstrap interval, marked when it misses the estimate (see `OUTSIDE_NOTE`)."""
    marker = OUTSIDE if interval.estimate_outside_interval else ""
    return fmt_interval(interval.low, interval.high) + marker


def _outside_note(intervals) -> list[str]:
    return [OUTSIDE_NOTE] if any(i.estimate_outside_interval for i in intervals) else []


def table(header: list[str], rows: list[list[str]]) -> str:
    """Columns padded to their widest cell: the first left-aligned, the others right-aligned."""
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]

    def line(cells):
        return "  ".join(
            str(c).rjust(w) if i else str(c).ljust(w) for i, (c, w) in enumerate(zip(cells, widths))
        )

    return "\n".join([line(header), "  ".join("-" * w for w in widths), *map(line, rows)])


def render_data(data: Data, source: str) -> list[str]:
    return [
        f"jaxmetrics report: {source}",
        "",
        f"{data.samples} samples, {data.positives} positive, {data.negatives} negative: "
        f"prevalence {data.prevalence:.4f}",
        "majority baseline (always predict the larger class): accuracy "
        f"{data.majority_baseline_accuracy:.4f}",
    ]


def render_ranking(report: Report) -> list[str]:
    meta = report.metadata
    out = [
        "",
        f"Ranking (95% intervals: bootstrap over {meta.resamples} resamples, seed {meta.seed}; "
        "DeLong)",
    ]
    rows = []
    for name, model in report.models.items():
        auc, ap = model.roc_auc, model.average_precision
        rows.append(
            [
                name,
                fmt(auc.estimate, 4),
                fmt_bootstrap(auc),
                fmt_interval(auc.delong_low, auc.delong_high),
                fmt(ap.estimate, 4),
                fmt_bootstrap(ap),
            ]
        )
    out.append(table(["model", "ROC AUC", "bootstrap", "DeLong", "AP", "bootstrap"], rows))
    out += _outside_note(
        i for m in report.models.values() for i in (m.roc_auc, m.average_precision)
    )
    out.append(f"(AP of a random ranking = prevalence = {report.data.prevalence:.4f})")
    undefined = max(m.roc_auc.undefined_resamples for m in report.models.values())
    if undefined:
        out.append(
            f"({undefined} of {meta.resamples} resamples drew a single class and were left out; "
            "with so few of one class the intervals are rough)"
        )
    if min(report.data.positives, report.data.negatives) < 2:
        out.append("(no intervals: they need at least two positives and two negatives)")
    if meta.cluster_column is not None:
        out.append(
            f"(clustered by {meta.cluster_column!r}: whole clusters resampled; DeLong, which "
            "needs independent rows, is not shown)"
        )
    out += ["", "High-specificity region (95% bootstrap intervals, the same resamples)"]
    rows = []
    for name, model in report.models.items():
        rows.append([name])
        for value in model.clinical:
            rows[-1] += [fmt(value.estimate, 4), fmt_bootstrap(value)]
    header = ["model", "pAUC spec>=0.9", "bootstrap", "sens @ spec 0.90", "bootstrap"]
    out.append(table(header + ["sens @ spec 0.95", "bootstrap"], rows))
    out += _outside_note(i for m in report.models.values() for i in m.clinical)
    out.append(
        "(pAUC: McClish-standardised partial AUC over false positive rates 0-0.1, 0.5 for a "
        "random ranking, 1 perfect; sensitivity of the most sensitive threshold meeting the "
        "specificity)"
    )
    return out


_POINT_HEADER = ["rule", "threshold", "TP", "FP", "FN", "TN", "accuracy", "precision"]
_POINT_HEADER += ["recall [Wilson]", "specificity", "F1", "F2"]


def render_operating_points(name: str, model: ModelReport) -> list[str]:
    out = ["", f"Operating points of {name} (predicted positive iff score >= threshold)"]
    has_cost = any(p.cost_per_sample is not None for p in model.thresholds)
    rows = []
    for p in model.thresholds:
        recall = f"{fmt(p.recall)} {fmt_interval(*p.recall_wilson, digits=2, proportion=True)}"
        row = [p.rule, fmt_threshold(p.threshold), str(p.tp), str(p.fp), str(p.fn), str(p.tn)]
        row += [fmt(p.accuracy), fmt(p.precision), recall, fmt(p.specificity)]
        row += [fmt(p.f1), fmt(p.f2)]
        if has_cost:
            row.append(fmt(p.cost_per_sample, 4))
        rows.append(row)
    out.append(table(_POINT_HEADER + (["cost/sample"] if has_cost else []), rows))
    out.append("(youden/max_f1/max_f2/min_cost are chosen on this data: choose on validation data)")
    return out


def render_calibration(name: str, calibration: Calibration | None) -> list[str]:
    if calibration is None:
        return [
            "",
            f"Calibration of {name}: skipped, its scores are not all probabilities in [0, 1]",
        ]
    out = [
        "",
        f"Calibration of {name}: Brier {fmt(calibration.brier, 4)}, log loss "
        f"{fmt(calibration.log_loss, 4)}, ECE {fmt(calibration.ece, 4)} (over the "
        f"{calibration.num_bins} equal-width bins below)",
    ]
    rows = []
    for b, entry in enumerate(calibration.reliability):
        opening = "[" if b == 0 else "("  # right-closed bins; the first one holds its left edge
        rows.append(
            [
                f"{opening}{_edge(entry.bin[0])}, {_edge(entry.bin[1])}]",
                str(entry.count),
                fmt(entry.mean_predicted),
                fmt(entry.fraction_positive),
                fmt_interval(entry.low, entry.high, proportion=True),
            ]
        )
    header = ["bin", "count", "mean predicted", "fraction positive", "Wilson 95%"]
    out.append(table(header, rows))
    return out + _render_recalibration(name, calibration)


def _render_recalibration(name: str, calibration: Calibration) -> list[str]:
    if calibration.intercept is None or calibration.slope is None:
        return []
    out = [
        "",
        f"Recalibration of {name}: logit P(y=1) = a + b logit(p) (95% intervals: Wald, and "
        "bootstrap over the same resamples)",
    ]
    rows = []
    for measure, fit in (
        ("intercept a, slope 1 (calibrated: 0)", calibration.intercept),
        ("slope b (calibrated: 1)", calibration.slope),
    ):
        wald = fmt_interval(fit.wald_low, fit.wald_high)
        rows.append([measure, fmt(fit.estimate, 4), wald, fmt_bootstrap(fit)])
    out.append(table(["measure", "value", "Wald", "bootstrap"], rows))
    out += _outside_note([calibration.intercept, calibration.slope])
    test = calibration.spiegelhalter
    if test is not None:
        out.append(
            f"Spiegelhalter's test of calibration: z = {fmt(test.z, 2)}, p = {_p(test.p_value)}"
        )
    out.append(
        f"L2 calibration error over the same bins: {fmt(calibration.l2_calibration_error, 4)} "
        f"binned (biased upwards), {fmt(calibration.debiased_calibration_error, 4)} debiased "
        "(Kumar et al. 2019)"
    )
    return out


def render_decision_curves(report: Report) -> list[str]:
    """The decision curve table of every probability model."""
    curves = {n: m.decision_curve for n, m in report.models.items() if m.decision_curve}
    if not curves:
        return []
    out = [
        "",
        "Decision curve (treat iff probability >= threshold t; net benefit: true positives per "
        "patient less false positives weighted t / (1 - t); treat none: 0; 95% bootstrap "
        "intervals, the same resamples)",
    ]
    rows, intervals = [], []
    first = next(iter(curves.values()))
    for t in range(len(first.points)):
        for index, (name, curve) in enumerate(curves.items()):
            at = curve.points[t]
            intervals.append(at.net_benefit)
            shown = (fmt_threshold(at.threshold), "+".join(at.rules)) if index == 0 else ("", "")
            rows.append(
                [
                    *shown,
                    name,
                    fmt(at.net_benefit.estimate, 4),
                    _interval4(at.net_benefit),
                    fmt(at.treat_all, 4),
                    fmt(100 * at.interventions_avoided, 1),
                ]
            )
    header = ["threshold", "rule", "model", "net benefit", "bootstrap", "treat all"]
    out.append(table(header + ["avoided per 100"], rows))
    out += _outside_note(intervals)
    out.append(
        "(avoided per 100: net interventions avoided per 100 patients against treating all, "
        "(net benefit - treat all) / (t / (1 - t)) x 100)"
    )
    return out


def _interval4(interval: Interval) -> str:
    marker = OUTSIDE if interval.estimate_outside_interval else ""
    return fmt_interval(interval.low, interval.high, digits=4) + marker


def _edge(value: float) -> str:
    return f"{value:.1f}" if round(value, 1) == value else f"{value:.3g}"


def render_comparison(comparison: tuple[Comparison, ...], resamples: int) -> list[str]:
    if not comparison:
        return []
    rows = []
    for c in comparison:
        auc, ap = c.roc_auc_difference, c.average_precision_difference
        rows.append(
            [
                f"{c.first} - {c.second}",
                fmt(auc.estimate, 4, sign="+"),
                fmt_bootstrap(auc),
                _p(auc.delong_p_value),
                _p(auc.bootstrap_p_value, resamples),
                fmt(ap.estimate, 4, sign="+"),
                fmt_bootstrap(ap),
                _p(ap.bootstrap_p_value, resamples),
            ]
        )
    header = ["models", "ΔAUC", "bootstrap", "DeLong p", "boot p", "ΔAP", "bootstrap", "boot p"]
    title = "Paired comparison (same samples; differences first - second)"
    differences = [
        i for c in comparison for i in (c.roc_auc_difference, c.average_precision_difference)
    ]
    return ["", title, table(header, rows), *_outside_note(differences)]


def _p(value: float, resamples: int | None = None) -> str:
    """A p-value; a bootstrap p-value of 0 only says it is below the resolution 2 / resamples."""
    if not _defined(value):
        return DASH
    if value == 0 and resamples:
        return f"<{2 / resamples:.2g}"
    return f"{value:.3g}"


def render_groups(by_group: ByGroup, resamples: int) -> list[str]:
    """Each model by group, the gaps between groups, and the fairness differences."""
    out = [
        "",
        f"By group: {by_group.column} (predicted positive iff score >= "
        f"{fmt_threshold(by_group.threshold)}; 95% bootstrap intervals over {resamples} "
        "resamples drawn within each group)",
    ]
    rows, intervals = [], []
    models = list(by_group.models.items())
    for g in range(len(models[0][1].groups) + 1):
        for index, (name, model) in enumerate(models):
            row = (*model.groups, model.overall)[g]
            cells = [row.group, name] if index == 0 else ["", name]
            cells += [str(row.samples), fmt(row.prevalence)] if index == 0 else ["", ""]
            for value in (row.roc_auc, row.sensitivity, row.specificity, row.selection_rate):
                cells += [fmt(value.estimate, 4), fmt_bootstrap(value)]
                intervals.append(value)
            rows.append(cells)
    header = ["group", "model", "n", "prevalence", "ROC AUC", "bootstrap", "sensitivity"]
    header += ["bootstrap", "specificity", "bootstrap", "selection rate", "bootstrap"]
    out.append(table(header, rows))
    rows = []
    measures = ("ROC AUC", "sensitivity", "specificity", "selection rate")
    for k, measure in enumerate(measures):
        for index, (name, model) in enumerate(models):
            gap = (
                model.roc_auc_gap,
                model.sensitivity_gap,
                model.specificity_gap,
                model.selection_rate_gap,
            )[k]
            cells = [measure if index == 0 else "", name]
            for value in gap:
                cells += [fmt(value.estimate, 4), fmt_bootstrap(value)]
                intervals.append(value)
            rows.append(cells)
    for measure in ("demographic parity difference", "equalized odds difference"):
        for index, (name, model) in enumerate(models):
            value = getattr(model, measure.replace(" ", "_"))
            rows.append([measure if index == 0 else "", name, fmt(value.estimate, 4)])
            rows[-1] += [fmt_bootstrap(value), "", ""]
            intervals.append(value)
    out += ["", "Gaps between groups (the same resamples)"]
    out.append(table(["gap", "model", "max - min", "bootstrap", "min / max", "bootstrap"], rows))
    out += _outside_note(intervals)
    out.append(
        "(demographic parity difference: of the selection rate; equalized odds difference: the "
        "larger of the sensitivity's and the false positive rate's; 0 when the groups are equal)"
    )
    out += [f"({note})" for note in by_group.notes]
    return out


def render(report: Report, *, source: str) -> str:
    """The whole text report."""
    out = render_data(report.data, source) + render_ranking(report)
    for name, model in report.models.items():
        out += render_operating_points(name, model)
        out += render_calibration(name, model.calibration)
    out += render_comparison(report.comparison, report.metadata.resamples)
    out += render_decision_curves(report)
    if report.by_group is not None:
        out += render_groups(report.by_group, report.metadata.resamples)
    return "\n".join(out) + "\n"
