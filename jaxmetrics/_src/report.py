"""`jaxmetrics report`: the whole evaluation of the seed notes for a file of labels and scores.

Three parts, kept apart so each can be tested alone: `load_table` reads and checks the file
(numpy and the standard library only, so bad input fails fast and before JAX starts), `evaluate`
computes every number with the library's public functions, `render` lays them out as text.
"""

from __future__ import annotations

import csv
import json
import math
import sys
from pathlib import Path
from typing import Any, TextIO

import numpy as np


class ReportError(Exception):
    """A problem with the user's input: printed as one line, exit status 2."""


_TRUE = {"1", "1.0", "true", "t", "yes", "y"}
_FALSE = {"0", "0.0", "false", "f", "no", "n"}


# ----------------------------------------------------------------------------- input


def _read_rows(path: Path) -> tuple[list[str], list[list[str]], int]:
    """Header and rows of a CSV/TSV file, and the line number of the first data row."""
    with path.open(newline="", encoding="utf-8-sig") as handle:
        text = handle.read()
    if path.suffix.lower() in (".tsv", ".tab"):
        delimiter = "\t"
    elif path.suffix.lower() == ".csv":
        delimiter = ","
    else:
        try:
            delimiter = csv.Sniffer().sniff(text[:4096], delimiters=",\t;").delimiter
        except csv.Error:
            delimiter = ","
    rows = [row for row in csv.reader(text.splitlines(), delimiter=delimiter)]
    if not rows:
        raise ReportError(f"{path}: the file is empty (no header row)")
    return [name.strip() for name in rows[0]], rows[1:], 2


def _read_columns(path: Path) -> tuple[dict[str, list[Any]], str]:
    """Columns by name, and how to name a position in them ("line" or "index")."""
    if not path.exists():
        raise ReportError(f"{path}: no such file")
    if path.is_dir():
        raise ReportError(f"{path}: is a directory, not a data file")
    suffix = path.suffix.lower()
    if suffix == ".npz":
        try:
            with np.load(path, allow_pickle=False) as data:
                return {name: data[name].reshape(-1).tolist() for name in data.files}, "index"
        except (OSError, ValueError) as error:
            raise ReportError(f"{path}: not a readable .npz file ({error})") from None
    if suffix == ".parquet":
        try:
            import pyarrow.parquet as parquet
        except ImportError:
            raise ReportError(
                f"{path}: reading Parquet needs pyarrow (pip install pyarrow)"
            ) from None
        table = parquet.read_table(path)
        return {name: table.column(name).to_pylist() for name in table.column_names}, "row"
    try:
        header, rows, first_line = _read_rows(path)
    except UnicodeDecodeError:
        raise ReportError(f"{path}: not a UTF-8 text file (CSV/TSV, .npz or .parquet)") from None
    columns: dict[str, list[Any]] = {name: [] for name in header}
    for offset, row in enumerate(rows):
        if not any(cell.strip() for cell in row):
            continue  # blank line
        if len(row) != len(header):
            raise ReportError(
                f"{path}: line {first_line + offset} has {len(row)} fields, the header has "
                f"{len(header)}"
            )
        for name, cell in zip(header, row):
            columns[name].append((cell.strip(), first_line + offset))
    return columns, "line"


def _position(values: list[Any], index: int, unit: str) -> str:
    item = values[index]
    if isinstance(item, tuple):  # CSV cells carry their line number
        return f"line {item[1]}"
    return f"{unit} {index}"


def _cell(item: Any) -> Any:
    return item[0] if isinstance(item, tuple) else item


def _column(columns: dict, name: str, path: Path) -> list[Any]:
    if name not in columns:
        available = ", ".join(repr(c) for c in columns) or "none"
        raise ReportError(f"{path}: no column {name!r} (columns: {available})")
    values = columns[name]
    if not values:
        raise ReportError(f"{path}: column {name!r} has no data rows")
    return values


def _parse_labels(values: list[Any], name: str, path: Path, unit: str, positive: str | None):
    labels = np.empty(len(values), np.int32)
    if positive is None:
        for i, item in enumerate(values):
            text = str(_cell(item)).strip().lower()
            if text in _TRUE:
                labels[i] = 1
            elif text in _FALSE:
                labels[i] = 0
            else:
                raise ReportError(
                    f"{path}: column {name!r}, {_position(values, i, unit)}: label "
                    f"{_cell(item)!r} is not 0/1 or true/false (name the positive class with "
                    f"--positive)"
                )
    else:
        other = None
        for i, item in enumerate(values):
            text = str(_cell(item)).strip()
            if text == positive:
                labels[i] = 1
                continue
            if other is None:
                other = text
            elif text != other:
                raise ReportError(
                    f"{path}: column {name!r}, {_position(values, i, unit)}: label {text!r} is a "
                    f"third class (positive {positive!r}, negative {other!r})"
                )
            labels[i] = 0
    present = set(labels.tolist())
    if len(present) < 2:
        only = "positive" if present == {1} else "negative"
        raise ReportError(
            f"{path}: column {name!r}: only one class present (all {len(labels)} rows are "
            f"{only}); ROC AUC and precision need both"
        )
    return labels


def _parse_scores(values: list[Any], name: str, path: Path, unit: str) -> np.ndarray:
    scores = np.empty(len(values), np.float64)
    for i, item in enumerate(values):
        raw = _cell(item)
        try:
            value = float(raw)
        except (TypeError, ValueError):
            raise ReportError(
                f"{path}: column {name!r}, {_position(values, i, unit)}: score {raw!r} is not a "
                f"number"
            ) from None
        if not math.isfinite(value):
            raise ReportError(
                f"{path}: column {name!r}, {_position(values, i, unit)}: score {raw!r} is not "
                f"finite"
            )
        scores[i] = value
    return scores.astype(np.float32)


def load_table(
    path: str | Path, label: str, scores: list[str], *, positive: str | None = None
) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Labels (0/1 int32) and score columns (float32) of a CSV, TSV, .npz or .parquet file."""
    path = Path(path)
    if not scores:
        raise ReportError("give at least one --score column")
    columns, unit = _read_columns(path)
    if not columns or all(len(v) == 0 for v in columns.values()):
        raise ReportError(f"{path}: the table is empty (no data rows)")
    labels = _parse_labels(_column(columns, label, path), label, path, unit, positive)
    models = {}
    for name in scores:
        values = _column(columns, name, path)
        models[name] = _parse_scores(values, name, path, unit)
    return labels, models


def demo_data(seed: int = 0, num_samples: int = 4000) -> tuple[np.ndarray, dict[str, np.ndarray]]:
    """Seed 000's classifiers A and B at 5% prevalence, as probabilities.

    Negatives score N(0, 1); positives N(1.5, 1) for A and N(1.5, 2^2) for B. A wins on ROC AUC
    (0.856 in the population), B, whose positives spread far above the negatives, on average
    precision. Both are mapped to probabilities with A's Bayes posterior,
    sigmoid(1.5 s - 1.125 + logit(0.05)), so A is calibrated and B is not.
    """
    rng = np.random.default_rng(seed)
    labels = (rng.random(num_samples) < 0.05).astype(np.int32)
    noise = rng.normal(size=(2, num_samples))
    raw = {
        "A": np.where(labels == 1, 1.5 + noise[0], noise[0]),
        "B": np.where(labels == 1, 1.5 + 2.0 * noise[1], noise[1]),
    }
    intercept = -1.125 + math.log(0.05 / 0.95)
    return labels, {
        name: (1 / (1 + np.exp(-(1.5 * s + intercept)))).astype(np.float32)
        for name, s in raw.items()
    }


# ----------------------------------------------------------------------------- numbers


def _interval(estimate, low, high) -> dict:
    return {"estimate": float(estimate), "low": float(low), "high": float(high)}


def evaluate(
    labels: np.ndarray,
    models: dict[str, np.ndarray],
    *,
    threshold: float = 0.5,
    cost_fp: float | None = None,
    cost_fn: float | None = None,
    resamples: int = 1000,
    seed: int = 0,
    progress=None,
) -> dict:
    """Every number of the report, as plain Python values (the --json document)."""
    import jax

    import jaxmetrics as jm

    names = list(models)
    scores = np.stack([models[name] for name in names])
    n = int(labels.size)
    positives = int(labels.sum())
    prevalence = positives / n
    key = jax.random.key(seed)

    def bootstrapped(metric, label):
        tick = None if progress is None else (lambda done, total: progress(label, done, total))
        return jm.bootstrap(metric, scores, labels, key=key, num_resamples=resamples, progress=tick)

    auc = bootstrapped(jm.roc_auc, "ROC AUC")
    ap = bootstrapped(jm.average_precision, "average precision")
    delong = jm.delong(scores, labels)
    is_probability = bool(np.all((scores >= 0) & (scores <= 1)))

    result: dict[str, Any] = {
        "data": {
            "samples": n,
            "positives": positives,
            "negatives": n - positives,
            "prevalence": prevalence,
            "majority_baseline_accuracy": max(prevalence, 1 - prevalence),
            "resamples": resamples,
            "seed": seed,
        },
        "models": {},
    }
    for m, name in enumerate(names):
        model: dict[str, Any] = {
            "roc_auc": {
                **_interval(auc.estimate[m], auc.low[m], auc.high[m]),
                "delong_low": float(delong.low[m]),
                "delong_high": float(delong.high[m]),
                "undefined_resamples": int(auc.num_undefined[m]),
            },
            "average_precision": {
                **_interval(ap.estimate[m], ap.low[m], ap.high[m]),
                "undefined_resamples": int(ap.num_undefined[m]),
            },
        }
        choices = [("given", threshold)]
        for beta, label in ((1.0, "max_f1"), (2.0, "max_f2")):
            value, t = jm.max_f_beta(scores[m], labels, beta=beta)
            choices.append((label, float(t)))
        if cost_fp is not None and cost_fn is not None:
            cost, t = jm.min_expected_cost(scores[m], labels, cost_fp=cost_fp, cost_fn=cost_fn)
            choices.append(("min_cost", float(t)))
            if is_probability:
                choices.append(("bayes", jm.bayes_threshold(cost_fp=cost_fp, cost_fn=cost_fn)))
        model["thresholds"] = [
            _operating_point(jm, scores[m], labels, rule, t, cost_fp, cost_fn)
            for rule, t in choices
        ]
        if is_probability:
            table = jm.reliability_bins(scores[m], labels, num_bins=10)
            model["calibration"] = {
                "brier": float(jm.brier_score(scores[m], labels)),
                "log_loss": float(jm.log_loss(scores[m], labels)),
                "ece_15_bins": float(jm.expected_calibration_error(scores[m], labels)),
                "reliability": [
                    {
                        "bin": [float(table.edges[b]), float(table.edges[b + 1])],
                        "count": int(table.count[b]),
                        "mean_predicted": _or_none(table.mean_predicted[b]),
                        "fraction_positive": _or_none(table.fraction_positive[b]),
                        "low": _or_none(table.low[b]),
                        "high": _or_none(table.high[b]),
                    }
                    for b in range(table.count.shape[0])
                ],
            }
        result["models"][name] = model

    comparisons = []
    for first in range(len(names)):
        for second in range(first + 1, len(names)):
            test = jm.delong_test(scores[first], scores[second], labels)
            auc_difference = jm.paired_difference(auc, first=first, second=second)
            ap_difference = jm.paired_difference(ap, first=first, second=second)
            comparisons.append(
                {
                    "first": names[first],
                    "second": names[second],
                    "roc_auc_difference": {
                        **_interval(
                            auc_difference.estimate, auc_difference.low, auc_difference.high
                        ),
                        "bootstrap_p_value": float(auc_difference.p_value),
                        "delong_z": float(test.statistic),
                        "delong_p_value": float(test.p_value),
                        "delong_low": float(test.low),
                        "delong_high": float(test.high),
                    },
                    "average_precision_difference": {
                        **_interval(ap_difference.estimate, ap_difference.low, ap_difference.high),
                        "bootstrap_p_value": float(ap_difference.p_value),
                    },
                }
            )
    result["comparison"] = comparisons
    return result


def _or_none(value) -> float | None:
    value = float(value)
    return None if math.isnan(value) else value


def _operating_point(jm, scores, labels, rule, threshold, cost_fp, cost_fn) -> dict:
    counts = jm.confusion_counts(scores, labels, threshold)
    tp, fp, fn, tn = (int(c) for c in counts)
    recall_low, recall_high = jm.wilson_interval(tp, max(tp + fn, 1))
    point = {
        "rule": rule,
        "threshold": threshold,
        "tp": tp,
        "fp": fp,
        "fn": fn,
        "tn": tn,
        "accuracy": float(jm.accuracy(counts)),
        "precision": _or_none(jm.precision(counts)),
        "recall": _or_none(jm.recall(counts)),
        "recall_wilson": [float(recall_low), float(recall_high)],
        "specificity": _or_none(jm.specificity(counts)),
        "f1": _or_none(jm.f_beta(counts)),
        "f2": _or_none(jm.f_beta(counts, beta=2.0)),
    }
    if tp + fp:
        low, high = jm.wilson_interval(tp, tp + fp)
        point["precision_wilson"] = [float(low), float(high)]
    if cost_fp is not None and cost_fn is not None:
        point["cost_per_sample"] = (cost_fp * fp + cost_fn * fn) / (tp + fp + fn + tn)
    return point


# ----------------------------------------------------------------------------- text


def _table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(str(x)) for x in column) for column in zip(header, *rows)]
    lines = [
        "  ".join(h.rjust(w) if i else h.ljust(w) for i, (h, w) in enumerate(zip(header, widths)))
    ]
    lines.append("  ".join("-" * w for w in widths))
    for row in rows:
        lines.append(
            "  ".join(
                str(c).rjust(w) if i else str(c).ljust(w)
                for i, (c, w) in enumerate(zip(row, widths))
            )
        )
    return "\n".join(lines)


def _fmt(value, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    return f"{value:.{digits}f}"


def _ci(block: dict, low="low", high="high") -> str:
    return f"[{block[low]:.3f}, {block[high]:.3f}]"


def render(result: dict, *, source: str) -> str:
    data = result["data"]
    out = [
        f"jaxmetrics report: {source}",
        "",
        f"{data['samples']} samples, {data['positives']} positive, {data['negatives']} negative: "
        f"prevalence {data['prevalence']:.4f}",
        f"majority baseline (always predict the larger class): accuracy "
        f"{data['majority_baseline_accuracy']:.4f}",
        "",
        f"Ranking (95% intervals: bootstrap over {data['resamples']} resamples, seed "
        f"{data['seed']}; DeLong)",
    ]
    rows = []
    for name, model in result["models"].items():
        auc, ap = model["roc_auc"], model["average_precision"]
        rows.append(
            [
                name,
                f"{auc['estimate']:.4f}",
                _ci(auc),
                _ci(auc, "delong_low", "delong_high"),
                f"{ap['estimate']:.4f}",
                _ci(ap),
            ]
        )
    out.append(_table(["model", "ROC AUC", "bootstrap", "DeLong", "AP", "bootstrap"], rows))
    out.append(f"(AP of a random ranking = prevalence = {data['prevalence']:.4f})")
    for name, model in result["models"].items():
        out += ["", f"Operating points of {name} (predicted positive iff score >= threshold)"]
        rows = []
        has_cost = any("cost_per_sample" in p for p in model["thresholds"])
        for p in model["thresholds"]:
            row = [
                p["rule"],
                _fmt(p["threshold"], 4),
                str(p["tp"]),
                str(p["fp"]),
                str(p["fn"]),
                str(p["tn"]),
                _fmt(p["accuracy"]),
                _fmt(p["precision"]),
                f"{_fmt(p['recall'])} [{p['recall_wilson'][0]:.2f}, {p['recall_wilson'][1]:.2f}]",
                _fmt(p["specificity"]),
                _fmt(p["f1"]),
                _fmt(p["f2"]),
            ]
            if has_cost:
                row.append(_fmt(p.get("cost_per_sample"), 4))
            rows.append(row)
        header = [
            "rule",
            "threshold",
            "TP",
            "FP",
            "FN",
            "TN",
            "accuracy",
            "precision",
            "recall [Wilson]",
            "specificity",
            "F1",
            "F2",
        ]
        out.append(_table(header + (["cost/sample"] if has_cost else []), rows))
        out.append("(max_f1/max_f2/min_cost are chosen on this data: choose on validation data)")
        calibration = model.get("calibration")
        if calibration is None:
            out.append("(calibration skipped: scores are not probabilities in [0, 1])")
            continue
        out += [
            "",
            f"Calibration of {name}: Brier {calibration['brier']:.4f}, log loss "
            f"{calibration['log_loss']:.4f}, ECE (15 bins) {calibration['ece_15_bins']:.4f}",
        ]
        rows = [
            [
                f"({b['bin'][0]:.1f}, {b['bin'][1]:.1f}]",
                str(b["count"]),
                _fmt(b["mean_predicted"]),
                _fmt(b["fraction_positive"]),
                "–" if b["low"] is None else f"[{b['low']:.3f}, {b['high']:.3f}]",
            ]
            for b in calibration["reliability"]
        ]
        out.append(
            _table(["bin", "count", "mean predicted", "fraction positive", "Wilson 95%"], rows)
        )
    if result["comparison"]:
        out += ["", "Paired comparison (same samples; differences first - second)"]
        rows = []
        for c in result["comparison"]:
            a, p = c["roc_auc_difference"], c["average_precision_difference"]
            rows.append(
                [
                    f"{c['first']} - {c['second']}",
                    f"{a['estimate']:+.4f}",
                    _ci(a),
                    f"{a['delong_p_value']:.3g}",
                    f"{a['bootstrap_p_value']:.3g}",
                    f"{p['estimate']:+.4f}",
                    _ci(p),
                    f"{p['bootstrap_p_value']:.3g}",
                ]
            )
        out.append(
            _table(
                ["models", "ΔAUC", "bootstrap", "DeLong p", "boot p", "ΔAP", "bootstrap", "boot p"],
                rows,
            )
        )
    return "\n".join(out) + "\n"


# ----------------------------------------------------------------------------- pictures


def plots(labels: np.ndarray, models: dict[str, np.ndarray], result: dict, directory: Path):
    """ROC, precision-recall (with the prevalence baseline) and reliability diagrams as PNG."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        raise ReportError("--plots needs matplotlib: pip install 'jaxmetrics[report]'") from None
    import jaxmetrics as jm

    directory.mkdir(parents=True, exist_ok=True)
    written = []
    prevalence = result["data"]["prevalence"]

    figure, axes = plt.subplots(figsize=(5.5, 5))
    for name, scores in models.items():
        curve = jm.roc_curve(scores, labels)
        valid = np.asarray(curve.valid)
        auc = result["models"][name]["roc_auc"]
        axes.plot(
            np.asarray(curve.fpr)[valid],
            np.asarray(curve.tpr)[valid],
            label=f"{name}: AUC {auc['estimate']:.3f} {_ci(auc)}",
        )
    axes.plot([0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="random")
    axes.set(
        xlabel="false positive rate",
        ylabel="true positive rate (recall)",
        title="ROC curve",
        xlim=(0, 1),
        ylim=(0, 1.01),
    )
    axes.legend(loc="lower right")
    written.append(_save(figure, directory / "roc.png", plt))

    figure, axes = plt.subplots(figsize=(5.5, 5))
    for name, scores in models.items():
        curve = jm.precision_recall_curve(scores, labels)
        valid = np.asarray(curve.valid)
        ap = result["models"][name]["average_precision"]
        axes.step(
            np.asarray(curve.recall)[valid],
            np.asarray(curve.precision)[valid],
            where="post",
            label=f"{name}: AP {ap['estimate']:.3f} {_ci(ap)}",
        )
    axes.axhline(
        prevalence,
        color="grey",
        linestyle="--",
        linewidth=1,
        label=f"random (prevalence {prevalence:.3f})",
    )
    axes.set(
        xlabel="recall",
        ylabel="precision",
        title="Precision-recall curve",
        xlim=(0, 1),
        ylim=(0, 1.01),
    )
    axes.legend(loc="upper right")
    written.append(_save(figure, directory / "precision_recall.png", plt))

    calibrated = {n: m["calibration"] for n, m in result["models"].items() if "calibration" in m}
    if calibrated:
        figure, axes = plt.subplots(figsize=(5.5, 5))
        for name, calibration in calibrated.items():
            bins = [b for b in calibration["reliability"] if b["count"] > 0]
            x = np.array([b["mean_predicted"] for b in bins])
            y = np.array([b["fraction_positive"] for b in bins])
            error = np.array(
                [
                    [b["fraction_positive"] - b["low"] for b in bins],
                    [b["high"] - b["fraction_positive"] for b in bins],
                ]
            )
            axes.errorbar(
                x,
                y,
                yerr=error,
                marker="o",
                capsize=3,
                label=f"{name}: ECE {calibration['ece_15_bins']:.3f}",
            )
        axes.plot(
            [0, 1], [0, 1], color="grey", linestyle="--", linewidth=1, label="perfectly calibrated"
        )
        axes.set(
            xlabel="mean predicted probability (10 bins)",
            ylabel="fraction of positives (Wilson 95%)",
            title="Reliability diagram",
            xlim=(0, 1),
            ylim=(0, 1),
        )
        axes.legend(loc="upper left")
        written.append(_save(figure, directory / "reliability.png", plt))
    return written


def _save(figure, path: Path, plt) -> Path:
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)
    return path


# ----------------------------------------------------------------------------- command


def run(args, out: TextIO = sys.stdout, err: TextIO = sys.stderr) -> int:
    if args.demo and args.file:
        raise ReportError("give either FILE or --demo, not both")
    if args.demo:
        labels, models = demo_data(seed=args.seed)
        source = "built-in demo (seed 000's classifiers A and B, 5% positives)"
    else:
        if not args.file:
            raise ReportError("give a FILE (with --label and --score) or --demo")
        if not args.label:
            raise ReportError("give the label column with --label")
        labels, models = load_table(args.file, args.label, args.score, positive=args.positive)
        source = str(args.file)
    if (args.cost_fp is None) != (args.cost_fn is None):
        raise ReportError("give both --cost-fp and --cost-fn, or neither")
    if args.resamples < 2:
        raise ReportError(f"--resamples must be at least 2; got {args.resamples}")

    def progress(label, done, total):
        err.write(f"\rbootstrap {label}: {done}/{total} resamples")
        if done == total:
            err.write("\n")
        err.flush()

    result = evaluate(
        labels,
        models,
        threshold=args.threshold,
        cost_fp=args.cost_fp,
        cost_fn=args.cost_fn,
        resamples=args.resamples,
        seed=args.seed,
        progress=None if args.quiet else progress,
    )
    if not args.quiet:
        out.write(render(result, source=source))
    if args.json:
        path = Path(args.json)
        path.write_text(json.dumps(result, indent=2) + "\n")
        if not args.quiet:
            out.write(f"\nJSON written to {path}\n")
    if args.plots:
        written = plots(labels, models, result, Path(args.plots))
        if not args.quiet:
            out.write("plots written: " + ", ".join(str(p) for p in written) + "\n")
    return 0
