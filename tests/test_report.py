"""`jaxmetrics report`'s numbers, text and pictures, checked against scikit-learn, scipy and
brute-force references written here.

The report runs in this process (`cli.main`, with --no-cache), on data sets of one shape (200
rows, two score columns), so JAX compiles the evaluation once for the whole module. The command as
a user runs it, in a subprocess, is tested in test_cli.py.
"""

import contextlib
import io
import json
import math
import signal
import sys
import threading
from fractions import Fraction

import jax
import matplotlib.pyplot as plt
import numpy as np
import pytest
from matplotlib.axes import Axes
from matplotlib.collections import PathCollection
from scipy import stats
from sklearn import calibration as sk_calibration
from sklearn import metrics as sk

import jaxmetrics as jm
from jaxmetrics.report import ReportError, cli, demo_data, load_table, plots, render, to_json
from jaxmetrics.report.evaluate import evaluate

report_modules = {
    name: sys.modules[f"jaxmetrics.report.{name}"]
    for name in ("command", "evaluate", "plots", "programs", "ranking", "read", "render", "result")
}
N = 200  # every data set here has this many rows and two score columns: one compiled shape


def write_csv(path, header, rows, delimiter=","):
    lines = [delimiter.join(header)] + [delimiter.join(str(c) for c in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def report_main(*args):
    return cli.main(["report", *map(str, args), "--no-cache"])


def strict_json(path):
    def refuse(constant):
        raise AssertionError(f"non-standard JSON constant {constant}")

    return json.loads(path.read_text(), parse_constant=refuse)


# --------------------------------------------------------------------------- references


def delong_reference(scores, labels):
    """DeLong et al. (1988) by brute force over all positive-negative pairs (float64)."""
    positive, negative = scores[:, labels == 1], scores[:, labels == 0]
    psi = (positive[:, :, None] > negative[:, None, :]) + 0.5 * (
        positive[:, :, None] == negative[:, None, :]
    )
    v10, v01 = psi.mean(2), psi.mean(1)  # [M, positives], [M, negatives]
    auc = v10.mean(1)
    covariance = np.cov(v10) / positive.shape[1] + np.cov(v01) / negative.shape[1]
    return auc, covariance


def threshold_search(scores, labels, objective, maximise=True):
    """The best objective(tp, fp, fn) over every distinct score (and +inf); lowest threshold on
    ties. Exact arithmetic, so ties are real ties."""
    best = None
    for t in sorted([math.inf, *set(scores.tolist())], reverse=True):
        predicted = scores >= t
        tp = int((predicted & (labels == 1)).sum())
        fp = int((predicted & (labels == 0)).sum())
        fn = int((~predicted & (labels == 1)).sum())
        value = objective(tp, fp, fn)
        if value is None:
            continue
        if best is None or (value >= best[0] if maximise else value <= best[0]):
            best = (value, t)
    return best


def f_beta_fraction(beta2):
    def objective(tp, fp, fn):
        denominator = (1 + beta2) * tp + beta2 * fn + fp
        return Fraction((1 + beta2) * tp, denominator) if denominator else None

    return objective


def on_curve(x, y, reference_x, reference_y):
    """Every point (x, y) is, to 1e-6, one of the reference points."""
    points, reference = np.c_[x, y], np.c_[reference_x, reference_y]
    distance = np.abs(points[:, None, :] - reference[None, :, :]).max(-1).min(-1)
    return bool((distance < 1e-6).all())


def is_float32_shortest(value):
    """True when `value` is the shortest decimal of a float32 (no 0.8125000238418579 noise)."""
    return value is None or float(str(np.float32(value))) == value


# --------------------------------------------------------------------------- data


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    rng = np.random.default_rng(5)
    labels = (rng.random(N) < 0.3).astype(int)
    # three decimals (ties), shifted off the bin edges k/10 so calibration bins are unambiguous
    a = np.clip(0.3 + 0.3 * labels + 0.2 * rng.normal(size=N), 0, 0.999).round(3) + 0.0005
    b = np.clip(0.35 + 0.15 * labels + 0.25 * rng.normal(size=N), 0, 0.999).round(3) + 0.0005
    path = tmp_path_factory.mktemp("data") / "scores.csv"
    write_csv(path, ["outcome", "model_a", "model_b"], zip(labels, a, b))
    return path, labels, a, b


@pytest.fixture(scope="module")
def full_run(two_models, tmp_path_factory):
    """One report with every option: its exit status, output streams, JSON and plot folder."""
    path = two_models[0]
    folder = tmp_path_factory.mktemp("out")
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = report_main(
            path, "--label", "outcome", "--score", "model_a", "--score", "model_b",
            "--resamples", 50, "--seed", 3, "--cost-fp", 1, "--cost-fn", 5,
            "--json", folder / "report.json", "--plots", folder / "plots",
        )  # fmt: skip
    return status, out.getvalue(), err.getvalue(), strict_json(folder / "report.json"), folder


@pytest.fixture(scope="module")
def report(two_models):
    """The typed result for the same data, from `evaluate` directly."""
    path, *_ = two_models
    table = load_table(path, "outcome", ["model_a", "model_b"])
    metadata = report_modules["result"].Metadata(
        str(path), "outcome", ("model_a", "model_b"), None, 0.5, None, None, 20, 0, None, 10, "test"
    )
    return evaluate(table, metadata)


# --------------------------------------------------------------------------- numbers


def test_run_succeeds_with_progress_and_text(full_run):
    status, out, err, _, folder = full_run
    assert status == 0, err
    assert "bootstrap ROC AUC, average precision and sensitivities: 50/50 resamples" in err
    for part in ("prevalence", "majority baseline", "DeLong", "youden", "max_f1", "min_cost"):
        assert part in out
    assert "Paired comparison" in out and "model_a - model_b" in out
    assert f"JSON written to {folder / 'report.json'}" in out


def test_ranking_numbers_match_sklearn_and_delong_by_brute_force(two_models, full_run):
    _, labels, a, b = two_models
    document = full_run[3]
    scores = np.stack([a, b])
    auc, covariance = delong_reference(scores, labels)
    z = stats.norm.ppf(0.975)
    for m, name in enumerate(("model_a", "model_b")):
        model = document["models"][name]
        assert model["roc_auc"]["estimate"] == pytest.approx(
            sk.roc_auc_score(labels, scores[m]), abs=1e-6
        )
        assert model["average_precision"]["estimate"] == pytest.approx(
            sk.average_precision_score(labels, scores[m]), abs=1e-6
        )
        half = z * math.sqrt(covariance[m, m])
        assert model["roc_auc"]["delong_low"] == pytest.approx(auc[m] - half, abs=1e-5)
        assert model["roc_auc"]["delong_high"] == pytest.approx(auc[m] + half, abs=1e-5)
        low, high = model["roc_auc"]["low"], model["roc_auc"]["high"]
        assert low < model["roc_auc"]["estimate"] < high
    comparison = document["comparison"][0]
    difference = comparison["roc_auc_difference"]
    assert difference["estimate"] == pytest.approx(auc[0] - auc[1], abs=1e-6)
    variance = covariance[0, 0] + covariance[1, 1] - 2 * covariance[0, 1]
    assert difference["delong_z"] == pytest.approx(
        (auc[0] - auc[1]) / math.sqrt(variance), rel=1e-4
    )
    assert difference["delong_p_value"] == pytest.approx(
        2 * stats.norm.sf(abs(difference["delong_z"])), rel=1e-4
    )


def test_bootstrap_uses_the_seed_and_resamples_given(two_models, full_run):
    _, labels, a, b = two_models
    key = report_modules["ranking"].seed_key(3)
    booted = jm.bootstrap(jm.roc_auc, np.stack([a, b]), labels, key=key, num_resamples=50)
    model = full_run[3]["models"]["model_a"]["roc_auc"]
    assert model["low"] == pytest.approx(float(booted.low[0]), abs=1e-6)
    assert model["high"] == pytest.approx(float(booted.high[0]), abs=1e-6)


def test_seeds_use_all_64_bits():
    seed_key = report_modules["ranking"].seed_key
    data = jax.random.key_data
    assert np.array_equal(data(seed_key(5)), data(jax.random.key(5)))
    assert not np.array_equal(data(seed_key(2**32)), data(seed_key(0)))  # key(2**32) == key(0)
    assert np.array_equal(data(seed_key(2**64 - 1)), [2**32 - 1, 2**32 - 1])


def test_operating_points_match_brute_force(two_models, full_run):
    _, labels, a, _ = two_models
    points = {p["rule"]: p for p in full_run[3]["models"]["model_a"]["thresholds"]}
    assert list(points) == ["given", "youden", "max_f1", "max_f2", "min_cost", "bayes"]
    assert points["bayes"]["threshold"] == pytest.approx(1 / 6)
    youden, threshold = threshold_search(
        a, labels, lambda tp, fp, fn: Fraction(tp, tp + fn) - Fraction(fp, N - int(labels.sum()))
    )
    assert points["youden"]["threshold"] == threshold
    for beta2, rule in ((1, "max_f1"), (4, "max_f2")):
        value, threshold = threshold_search(a, labels, f_beta_fraction(beta2))
        assert points[rule]["threshold"] == threshold
        assert points[rule]["f1" if beta2 == 1 else "f2"] == pytest.approx(float(value), abs=1e-6)
    cost, threshold = threshold_search(a, labels, lambda tp, fp, fn: fp + 5 * fn, maximise=False)
    assert points["min_cost"]["threshold"] == threshold
    assert points["min_cost"]["cost_per_sample"] == pytest.approx(cost / N)
    for point in points.values():
        predicted = a >= point["threshold"]
        tp = int((predicted & (labels == 1)).sum())
        fp = int((predicted & (labels == 0)).sum())
        assert (point["tp"], point["fp"]) == (tp, fp)
        assert point["fn"] == labels.sum() - tp and point["tn"] == (labels == 0).sum() - fp
        assert point["recall"] == pytest.approx(sk.recall_score(labels, predicted), abs=1e-6)
        assert point["f1"] == pytest.approx(sk.f1_score(labels, predicted), abs=1e-6)
        wilson = stats.binomtest(tp, int(labels.sum())).proportion_ci(method="wilson")
        assert point["recall_wilson"] == pytest.approx([wilson.low, wilson.high], abs=1e-5)


def test_calibration_matches_sklearn_and_ece_uses_the_table_bins(two_models, full_run):
    _, labels, a, _ = two_models
    calibration = full_run[3]["models"]["model_a"]["calibration"]
    assert calibration["num_bins"] == 10 and len(calibration["reliability"]) == 10
    assert calibration["brier"] == pytest.approx(sk.brier_score_loss(labels, a), abs=1e-6)
    assert calibration["log_loss"] == pytest.approx(sk.log_loss(labels, a), abs=1e-5)
    fraction, mean = sk_calibration.calibration_curve(labels, a, n_bins=10)
    filled = [b for b in calibration["reliability"] if b["count"]]
    assert [b["fraction_positive"] for b in filled] == pytest.approx(fraction, abs=1e-6)
    assert [b["mean_predicted"] for b in filled] == pytest.approx(mean, abs=1e-6)
    bins = np.searchsorted(np.linspace(0, 1, 11)[1:-1], a)  # sklearn's binning
    counts = np.bincount(bins, minlength=10)
    assert [b["count"] for b in calibration["reliability"]] == counts.tolist()
    gaps = [abs(f - m) for f, m in zip(fraction, mean)]
    ece = sum(c / N * g for c, g in zip(counts[counts > 0], gaps))
    assert calibration["ece"] == pytest.approx(ece, abs=1e-6)


def test_curves_are_in_the_json_and_lie_on_sklearns(two_models, full_run):
    _, labels, a, _ = two_models
    model = full_run[3]["models"]["model_a"]
    fpr, tpr, _ = sk.roc_curve(labels, a, drop_intermediate=False)
    ours = model["roc_curve"]
    assert ours["thresholds"][0] is None  # +inf: nothing predicted positive
    assert (ours["fpr"][0], ours["tpr"][0], ours["fpr"][-1], ours["tpr"][-1]) == (0, 0, 1, 1)
    assert on_curve(ours["fpr"], ours["tpr"], fpr, tpr)
    precision, recall, _ = sk.precision_recall_curve(labels, a)
    ours = model["precision_recall_curve"]
    assert on_curve(ours["precision"], ours["recall"], precision, recall)
    assert len(ours["recall"]) == len(set(a.tolist())) + 1


def test_json_has_metadata_and_float32_values_without_noise(two_models, full_run):
    path = two_models[0]
    document = full_run[3]
    assert document["metadata"] == {
        "file": str(path),
        "label_column": "outcome",
        "score_columns": ["model_a", "model_b"],
        "positive_class": None,
        "threshold": 0.5,
        "cost_fp": 1.0,
        "cost_fn": 5.0,
        "resamples": 50,
        "seed": 3,
        "cluster_column": None,
        "calibration_bins": 10,
        "jaxmetrics_version": jm.__version__,
        "group_column": None,
    }
    calibration = document["models"]["model_a"]["calibration"]
    values = [calibration["brier"], calibration["log_loss"], calibration["ece"]]
    for b in calibration["reliability"]:
        values += [b["mean_predicted"], b["fraction_positive"], b["low"], b["high"], *b["bin"]]
    assert all(is_float32_shortest(v) for v in values)
    assert calibration["reliability"][1]["bin"] == [0.1, 0.2]


def test_float64_scores_are_ranked_exactly(tmp_path):
    """Scores 0.5 + z * 1e-9 collapse to a few float32 values; the report must rank them as
    float64 and agree with scikit-learn."""
    rng = np.random.default_rng(11)
    labels = (rng.random(N) < 0.4).astype(int)
    close = 0.5 + rng.standard_normal(N) * 1e-9 + 3e-10 * labels
    other = rng.random(N)
    path = write_csv(tmp_path / "close.csv", ["y", "close", "other"], zip(labels, close, other))
    assert report_main(
        path, "--label", "y", "--score", "close", "--score", "other", "--resamples", 20,
        "--json", tmp_path / "out.json", "--quiet",
    ) == 0  # fmt: skip
    model = strict_json(tmp_path / "out.json")["models"]["close"]
    assert model["roc_auc"]["estimate"] == pytest.approx(sk.roc_auc_score(labels, close), abs=1e-6)
    assert model["average_precision"]["estimate"] == pytest.approx(
        sk.average_precision_score(labels, close), abs=1e-6
    )


def test_tsv_with_named_classes(tmp_path):
    rng = np.random.default_rng(2)
    sick = rng.random(N) < 0.3
    first = (rng.random(N) + 0.4 * sick).round(4)
    second = (rng.random(N) + 0.2 * sick).round(4)
    rows = [("sick" if s else "well", x, y) for s, x, y in zip(sick, first, second)]
    path = write_csv(tmp_path / "scores.tsv", ["status", "one", "two"], rows, delimiter="\t")
    assert report_main(
        path, "--label", "status", "--positive", "sick", "--score", "one", "--score", "two",
        "--resamples", 20, "--json", tmp_path / "out.json", "--quiet",
    ) == 0  # fmt: skip
    document = strict_json(tmp_path / "out.json")
    assert document["metadata"]["positive_class"] == "sick"
    assert document["data"]["positives"] == int(sick.sum())
    assert document["models"]["two"]["roc_auc"]["estimate"] == pytest.approx(
        sk.roc_auc_score(sick, second), abs=1e-6
    )
    assert document["models"]["one"]["calibration"] is None  # scores above 1


def test_npz_keeps_float64(tmp_path):
    rng = np.random.default_rng(0)
    labels = rng.random(N) < 0.5
    scores = rng.random((2, N)) * 1e-3 + 1e6  # float32 would merge most of these
    np.savez(tmp_path / "data.npz", y=labels, s=scores[0], t=scores[1])
    table = load_table(tmp_path / "data.npz", "y", ["s", "t"])
    assert table.models["s"].dtype == np.float64 and table.labels.dtype == np.int32
    np.testing.assert_array_equal(table.models["t"], scores[1])
    assert report_main(
        tmp_path / "data.npz", "--label", "y", "--score", "s", "--score", "t", "--resamples", 20,
        "--json", tmp_path / "out.json", "--quiet",
    ) == 0  # fmt: skip
    document = strict_json(tmp_path / "out.json")
    assert document["models"]["s"]["roc_auc"]["estimate"] == pytest.approx(
        sk.roc_auc_score(labels, scores[0]), abs=1e-6
    )


# --------------------------------------------------------------------------- text


def test_render_formats(report):
    fmt, fmt_threshold, fmt_interval = (
        getattr(report_modules["render"], name) for name in ("fmt", "fmt_threshold", "fmt_interval")
    )
    assert fmt(-1e-9) == "0.000" and fmt(-1e-9, 4, sign="+") == "+0.0000"
    assert fmt(float("nan")) == fmt(None) == "–"
    assert fmt_threshold(1.6e-5) == "1.6e-05" and fmt_threshold(0.5) == "0.5"
    assert fmt_interval(-1e-9, 0.5, proportion=True) == "[0.000, 0.500]"
    assert fmt_interval(0.2, float("nan")) == "–"
    text = render(report, source="scores.csv")
    assert "-0.000" not in text
    assert "ECE" in text and "(over the 10 equal-width bins below)" in text
    assert "ECE (15 bins)" not in text


def test_number_keeps_the_precision_computed():
    number = report_modules["result"].number
    assert number(np.float32(0.8125000238418579)) == 0.8125
    assert number(np.float32(1 / 3)) == 0.33333334
    assert number(np.float64(1 / 3)) == 1 / 3
    assert math.isnan(number(np.float32("nan")))


# --------------------------------------------------------------------------- pictures


def test_plots_read_the_curves_from_the_result(report, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("plots must not recompute curves")

    for name in ("roc_curve", "precision_recall_curve", "reliability_bins", "roc_auc"):
        monkeypatch.setattr(jm, name, refuse)
    figures = plots(report)
    assert sorted(figures) == [
        "decision_curve.png",
        "precision_recall.png",
        "reliability.png",
        "roc.png",
    ]
    roc_line = figures["roc.png"].axes[0].lines[0]
    assert list(roc_line.get_xdata()) == list(report.models["model_a"].roc_curve.fpr)
    for figure in figures.values():
        figure.canvas.draw()
        legend = figure.legends[0]  # one legend, outside (below) the axes
        assert all(axes.get_legend() is None for axes in figure.axes)
        assert legend.get_window_extent().y1 <= min(a.get_window_extent().y0 for a in figure.axes)
    plt.close("all")


def test_reliability_plot_breaks_at_empty_bins_and_shows_counts(report):
    model = report.models["model_a"]
    nan = float("nan")
    bins = list(model.calibration.reliability)
    bins[4] = bins[4]._replace(
        count=0, mean_predicted=nan, fraction_positive=nan, low=nan, high=nan
    )
    calibration = model.calibration._replace(reliability=tuple(bins))
    report = report._replace(models={"model_a": model._replace(calibration=calibration)})
    reliability, histogram = plots(report)["reliability.png"].axes
    empty = np.array([entry.count == 0 for entry in bins])
    line = np.asarray(reliability.lines[0].get_ydata(), float)
    assert np.isnan(line[empty]).all() and not np.isnan(line[~empty]).any()  # broken at gaps
    markers = [c for c in reliability.collections if isinstance(c, PathCollection)]
    assert len(set(markers[0].get_sizes().tolist())) > 1  # marker area follows the count
    assert histogram.get_ylabel() == "samples per bin"
    plt.close("all")


def test_plots_written_as_pngs_without_leftovers(full_run):
    folder = full_run[4] / "plots"
    assert sorted(p.name for p in folder.iterdir()) == [
        "decision_curve.png",
        "precision_recall.png",
        "reliability.png",
        "roc.png",
    ]
    for path in folder.iterdir():
        data = path.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_reliability_plot_takes_a_wilson_bound_rounded_past_its_point(report):
    """A float32 Wilson bound can land on the wrong side of its point (wilson_interval(23, 23)
    gave high 0.99999994 < 1.0): matplotlib refuses the negative error bar, and the plot failed
    on real data. The bar is drawn as 0 long instead."""
    model = report.models["model_a"]
    bins = list(model.calibration.reliability)
    bins[9] = bins[9]._replace(count=23, mean_predicted=0.95, fraction_positive=1.0)
    bins[9] = bins[9]._replace(low=0.857, high=0.99999994)
    calibration = model.calibration._replace(reliability=tuple(bins))
    report = report._replace(models={"model_a": model._replace(calibration=calibration)})
    figure = plots(report)["reliability.png"]
    figure.canvas.draw()
    plt.close("all")


def _report_with_failing_reliability_plot(report, monkeypatch):
    """`report_main` computes nothing (the module's `report` stands in for the evaluation) and
    the reliability diagram fails where it drew the real failure: its error bars."""
    monkeypatch.setattr(report_modules["evaluate"], "evaluate", lambda *args, **kwargs: report)

    def broken(self, *args, **kwargs):
        raise ValueError("'yerr' must not contain negative values\nsecond line")

    monkeypatch.setattr(Axes, "errorbar", broken)


def test_a_failed_plot_keeps_the_text_the_json_and_the_other_plots(
    two_models, report, tmp_path, monkeypatch
):
    """A plot that fails costs that plot alone: the text is printed, the JSON written, the other
    plots written, one line on stderr names the plot, and the exit status is 1 (an output that
    was asked for is missing)."""
    _report_with_failing_reliability_plot(report, monkeypatch)
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = report_main(
            two_models[0], "--label", "outcome", "--score", "model_a", "--score", "model_b",
            "--json", tmp_path / "report.json", "--plots", tmp_path / "plots",
        )  # fmt: skip
    assert status == 1
    assert "Ranking" in out.getvalue() and "Calibration of model_a" in out.getvalue()
    assert f"JSON written to {tmp_path / 'report.json'}" in out.getvalue()
    assert "plots written: " in out.getvalue() and "reliability" not in out.getvalue()
    assert strict_json(tmp_path / "report.json")["models"]["model_a"]["roc_auc"]["estimate"]
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "decision_curve.png",
        "precision_recall.png",
        "roc.png",
    ]
    lines = err.getvalue().strip("\n").split("\n")
    assert len(lines) == 1, err.getvalue()
    assert lines[0].startswith("jaxmetrics report: plot ")
    assert str(tmp_path / "plots" / "reliability.png") in lines[0]
    assert "ValueError: 'yerr' must not contain negative values" in lines[0]
    assert not plt.get_fignums()  # the failed figure was closed too


def test_plots_are_written_whole_and_together(report, tmp_path, monkeypatch):
    """A plot whose file cannot be saved is left out (no temporary stays); an interrupt while
    the plots are written leaves none of them, nor the folder it made."""
    command = report_modules["command"]
    save = command.save

    def save_except_pr(figure, handle):
        if "precision_recall" in handle.name:
            plt.close(figure)
            raise RuntimeError("disk full")
        save(figure, handle)

    monkeypatch.setattr(command, "save", save_except_pr)
    written, failed = command.write_plots(tmp_path / "plots", report)
    assert sorted(p.name for p in written) == ["decision_curve.png", "reliability.png", "roc.png"]
    assert list(failed) == ["precision_recall.png"] and "disk full" in str(
        failed["precision_recall.png"]
    )
    assert sorted(p.name for p in (tmp_path / "plots").iterdir()) == [
        "decision_curve.png",
        "reliability.png",
        "roc.png",
    ]

    def interrupted_at_the_second(figure, handle):
        if "precision_recall" in handle.name:
            plt.close(figure)
            raise KeyboardInterrupt
        save(figure, handle)

    monkeypatch.setattr(command, "save", interrupted_at_the_second)
    with pytest.raises(KeyboardInterrupt):
        command.write_plots(tmp_path / "new" / "plots", report)
    assert not (tmp_path / "new").exists()
    command.write_whole(tmp_path / "r.json", "{}\n")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plots", "r.json"]
    plt.close("all")


# --------------------------------------------------------------------------- reading


def test_demo_data_is_float64_probabilities():
    table = demo_data()
    assert set(table.models) == {"A", "B"}
    assert all(s.dtype == np.float64 and ((s > 0) & (s < 1)).all() for s in table.models.values())
    assert 0.04 < table.labels.mean() < 0.06
    assert sk.roc_auc_score(table.labels, table.models["A"]) == pytest.approx(0.856, abs=0.03)


def test_read_long_fields_and_quoted_newlines(tmp_path):
    long_number = "0." + "3" * 200_000  # longer than csv's default field limit
    path = tmp_path / "long.csv"
    path.write_text(f'y,s,note\n1,{long_number},x\n0,0.1,"two\nlines"\n1,0.9,z\n0,oops,w\n')
    with pytest.raises(ReportError, match=r"long.csv: column 's', line 6: score 'oops'"):
        load_table(path, "y", ["s"])  # the quoted newline counts as a line
    path.write_text(f"y,s\n1,{long_number}\n0,0.1\n")
    table = load_table(path, "y", ["s"])
    assert table.models["s"][0] == pytest.approx(1 / 3)


def test_a_class_named_none_is_a_class_and_only_missing_marks_are_missing(tmp_path):
    """Labels "none"/"disease" are two classes; blank cells and the marks tools write for a
    missing value (NA, N/A, NaN, null) are missing."""
    rows = [("none", 0.2), ("disease", 0.9), ("none", 0.1), ("disease", 0.7)]
    path = write_csv(tmp_path / "classes.csv", ["y", "s"], rows)
    table = load_table(path, "y", ["s"], positive="disease")
    assert table.labels.tolist() == [0, 1, 0, 1]
    for mark in ("", " ", "NA", "n/a", "NaN", "null"):
        write_csv(path, ["y", "s"], [("none", 0.2), ("disease", 0.9), (mark, 0.1)])
        with pytest.raises(ReportError, match=r"column 'y', line 4: label is missing"):
            load_table(path, "y", ["s"], positive="disease")
    write_csv(path, ["y", "s"], [("NA", 0.2), ("disease", 0.9)])
    assert load_table(path, "y", ["s"], positive="NA").labels.tolist() == [1, 0]
    read = report_modules["read"]
    nulls = read._Column(["none", "disease", None], None, "row")  # a Parquet null is None
    with pytest.raises(ReportError, match=r"column 'y', row 2: label is missing \(''\)"):
        read._labels(nulls, "y", path, "disease")


def test_read_ignores_unused_duplicate_columns(tmp_path):
    path = write_csv(tmp_path / "d.csv", ["y", "s", "x", "x"], [(1, 0.9, 1, 2), (0, 0.2, 3, 4)])
    table = load_table(path, "y", ["s"])
    assert table.models["s"].tolist() == [0.9, 0.2]
    with pytest.raises(ReportError, match=r"column 'x' appears 2 times in the header \(fields 3"):
        load_table(path, "y", ["x"])


# --------------------------------------------------------------------------- bad input, in-process
# (the cases that test_cli.py runs in a subprocess are the same code path: cli.main)

CSV = "y,s\n1,0.9\n0,0.2\n1,0.7\n0,0.4\n"
SCORE = ["data.csv", "--label", "y", "--score", "s"]
BAD = {
    "missing file": (None, ["missing.csv", "--label", "y", "--score", "s"], ["no such file"]),
    "missing column": (CSV, ["data.csv", "--label", "y", "--score", "t"], ["no column 't'"]),
    "empty table": ("y,s\n", SCORE, ["data.csv: the table is empty"]),
    "text score": ("y,s\n1,0.5\n0,high\n", SCORE, ["line 3: score 'high' is not a number"]),
    "empty score": ("y,s\n1,0.5\n0,\n", SCORE, ["data.csv: column 's', line 3: score is empty"]),
    "nan score": ("y,s\n1,0.5\n0,nan\n", SCORE, ["line 3: score 'nan' is not finite"]),
    "label outside": ("y,s\n1,0.5\n2,0.1\n", SCORE, ["line 3: label '2' is not 0/1"]),
    "blank label": ("y,s\n1,0.5\n,0.1\n", SCORE, ["column 'y', line 3: label is missing"]),
    "third class": (
        "y,s\na,0.5\nb,0.1\nc,0.3\n",
        [*SCORE, "--positive", "a"],
        ["column 'y', line 4: label 'c' is a third class"],
    ),
    "single class": ("y,s\n1,0.5\n1,0.1\n", SCORE, ["column 'y': only one class present"]),
    "ragged row": ("y,s\n1,0.5\n0,0.1,7\n", SCORE, ["line 3 has 3 fields, the header has 2"]),
    "not utf-8": (b"y,s\n1,\xff\n", SCORE, ["data.csv: not a UTF-8 text file"]),
    "score given twice": (CSV, [*SCORE, "--score", "s"], ["--score 's' is given 2 times"]),
    "costs both zero": (CSV, [*SCORE, "--cost-fp", "0", "--cost-fn", "0"], ["both be 0"]),
    "one cost": (CSV, [*SCORE, "--cost-fp", "1"], ["both --cost-fp and --cost-fn"]),
    "few resamples": (CSV, [*SCORE, "--resamples", "1"], ["--resamples must be at least 2"]),
    "demo with a file": (CSV, [*SCORE, "--demo"], ["either FILE or --demo"]),
    "demo with columns": (None, ["--demo", "--label", "y"], ["--demo uses its own data"]),
    "nothing to read": (None, [], ["give a FILE (with --label and --score) or --demo"]),
    "no label": (CSV, ["data.csv", "--score", "s"], ["give the label column with --label"]),
    "unknown option": (CSV, [*SCORE, "--bogus"], ["unrecognized arguments: --bogus"]),
    "json is a folder": (CSV, [*SCORE, "--json", "."], ["--json .: is a directory"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_before_any_work(tmp_path, monkeypatch, capsys, case):
    content, args, parts = BAD[case]
    if isinstance(content, bytes):
        (tmp_path / "data.csv").write_bytes(content)
    elif content is not None:
        (tmp_path / "data.csv").write_text(content)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        report_modules["evaluate"], "evaluate", lambda *a, **k: pytest.fail("evaluated")
    )
    try:
        status = cli.main(["report", *args, "--no-cache"])
    except SystemExit as exit:  # argparse's errors
        status = exit.code
    assert status == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    lines = captured.err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("jaxmetrics report: error: "), captured.err
    for part in parts:
        assert part in lines[0]


def test_high_specificity_numbers_and_band_equal_the_library_on_the_same_resamples(
    two_models, full_run
):
    _, labels, a, b = two_models
    _, out, _, data, _ = full_run
    assert "High-specificity region" in out and "sens @ spec 0.90" in out
    for name, scores in (("model_a", a), ("model_b", b)):
        model = data["models"][name]
        clinical = model["clinical"]
        partial = jm.partial_roc_auc(scores, labels, fpr_range=(0.0, 0.1), correct=True)
        assert clinical["partial_auc"]["estimate"] == pytest.approx(float(partial), rel=1e-5)
        for level, key in (
            (0.90, "sensitivity_at_90_specificity"),
            (0.95, "sensitivity_at_95_specificity"),
        ):
            expected = jm.sensitivity_at_specificity(scores, labels, min_specificity=level).value
            assert clinical[key]["estimate"] == pytest.approx(float(expected), rel=1e-5)
            assert clinical[key]["low"] <= clinical[key]["estimate"] <= clinical[key]["high"]
        band = model["roc_band"]
        assert len(band["specificity"]) == len(band["low"]) == 21
        assert all(lo <= hi for lo, hi in zip(band["low"], band["high"]))
        youden = [p for p in model["thresholds"] if p["rule"] == "youden"][0]
        expected = jm.youden_threshold(scores, labels)
        assert youden["threshold"] == pytest.approx(float(expected.threshold))


def test_cluster_option_resamples_whole_groups_and_drops_delong(tmp_path, two_models):
    _, labels, a, _ = two_models
    # every row three times, each copy in the row's own cluster: the clustered intervals equal
    # those of the single rows, and DeLong (independent rows) is not reported
    path = tmp_path / "clustered.csv"
    rows = [(f"p{i:04d}", y, s) for i, (y, s) in enumerate(zip(labels, a)) for _ in range(3)]
    write_csv(path, ["patient", "outcome", "score"], rows)
    single = tmp_path / "single.csv"
    write_csv(
        single,
        ["patient", "outcome", "score"],
        [(i, y, s) for i, (y, s) in enumerate(zip(labels, a))],
    )
    common = ["--label", "outcome", "--score", "score", "--resamples", 40, "--quiet"]
    assert report_main(path, *common, "--cluster", "patient", "--json", tmp_path / "c.json") == 0
    assert report_main(single, *common, "--json", tmp_path / "s.json") == 0
    clustered, alone = strict_json(tmp_path / "c.json"), strict_json(tmp_path / "s.json")
    assert clustered["metadata"]["cluster_column"] == "patient"
    auc_c, auc_s = clustered["models"]["score"]["roc_auc"], alone["models"]["score"]["roc_auc"]
    assert auc_c["low"] == pytest.approx(auc_s["low"], rel=1e-5)
    assert auc_c["high"] == pytest.approx(auc_s["high"], rel=1e-5)
    assert auc_c["delong_low"] is None and auc_s["delong_low"] is not None


def _demo_table_and_metadata(two_models, resamples):
    path, *_ = two_models
    table = load_table(path, "outcome", ["model_a", "model_b"])
    metadata = report_modules["result"].Metadata(
        str(path), "outcome", ("model_a", "model_b"), None, 0.5, None, None, resamples, 0, None,
        10, "test",
    )  # fmt: skip
    return table, metadata


def test_an_error_of_the_ranking_thread_reaches_the_caller(two_models, monkeypatch):
    """The bootstrap runs on a thread of its own (`evaluate`): what it raises, `evaluate`
    raises, with the same exception."""
    module = sys.modules["jaxmetrics.report.evaluate"]
    failure = RuntimeError("the ranking failed")

    def broken(*args, **kwargs):
        raise failure

    monkeypatch.setattr(module, "evaluate_ranking", broken)
    with pytest.raises(RuntimeError) as caught:
        evaluate(*_demo_table_and_metadata(two_models, 20))
    assert caught.value is failure


def test_an_error_of_the_main_thread_stops_the_ranking_thread(two_models, monkeypatch):
    """A failure (or Ctrl-C) while the other numbers are computed stops the bootstrap at its
    next step instead of leaving it running."""
    import threading

    module = sys.modules["jaxmetrics.report.evaluate"]
    started = threading.Event()
    ranking = module.evaluate_ranking

    def slow_ranking(*args, **kwargs):
        started.set()
        return ranking(*args, **kwargs)

    def broken(*args, **kwargs):
        started.wait(60)
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "evaluate_ranking", slow_ranking)
    monkeypatch.setattr(module, "evaluate_order", broken)
    with pytest.raises(KeyboardInterrupt):
        evaluate(*_demo_table_and_metadata(two_models, 1_000_000))
    threads = [t for t in threading.enumerate() if t.name == "jaxmetrics-ranking"]
    for thread in threads:
        thread.join(15)  # a million resamples take minutes: it stops after one call
        assert not thread.is_alive()


def test_the_ranking_thread_may_report_progress_before_it_is_held(two_models, monkeypatch):
    """The bootstrap's first progress call (which asks whether to stop) may come before the main
    thread runs another line. It failed the README's test command with "NameError: cannot
    access free variable 'background'": the thread started before the name was bound. Here the
    whole bootstrap runs inside `start`, the latest moment the main thread could be at."""

    class AtOnce(threading.Thread):
        def start(self):
            super().start()
            if self.name == "jaxmetrics-ranking":
                self.join()

    monkeypatch.setattr(threading, "Thread", AtOnce)
    calls = []
    result = evaluate(
        *_demo_table_and_metadata(two_models, 20), progress=lambda *call: calls.append(call)
    )
    assert calls[-1][1:] == (20, 20)
    assert set(result.models) == {"model_a", "model_b"}


def test_ctrl_c_swallowed_by_a_finalizer_still_exits_130(two_models, monkeypatch, capsys):
    """A KeyboardInterrupt raised inside a garbage-collector callback or a `__del__` (JAX has
    both) is printed as "Exception ignored" and lost: the report then ran on and exited 0. The
    signal is delivered again; the exit status is 130 whenever the report ends."""
    module = report_modules["evaluate"]
    curves = module.evaluate_order
    signalled = []

    class Finalizer:
        def __del__(self):
            signalled.append(True)
            signal.raise_signal(signal.SIGINT)  # handled at once, inside __del__

    def curves_then_ctrl_c(*args, **kwargs):
        if not signalled:
            Finalizer()  # dropped at once: __del__ runs here, on the main thread
        return curves(*args, **kwargs)

    monkeypatch.setattr(module, "evaluate_order", curves_then_ctrl_c)
    path = two_models[0]
    status = report_main(
        path, "--label", "outcome", "--score", "model_a", "--score", "model_b",
        "--resamples", 20, "--quiet",
    )  # fmt: skip
    assert signalled and status == 130
    captured = capsys.readouterr()
    assert captured.err == "jaxmetrics report: interrupted\n"


# --------------------------------------------------------------------------- friction


def test_calibration_is_decided_per_score_column(two_models):
    """One column of logits leaves the other columns' calibration (and Bayes threshold) in
    place; the text says why the logits have none."""
    table, metadata = _demo_table_and_metadata(two_models, 20)
    logits = np.log(table.models["model_b"] / (1 - table.models["model_b"]))
    table = table._replace(models={"model_a": table.models["model_a"], "logit": logits})
    metadata = metadata._replace(score_columns=("model_a", "logit"), cost_fp=1.0, cost_fn=5.0)
    result = evaluate(table, metadata)
    assert result.models["model_a"].calibration is not None
    assert result.models["logit"].calibration is None
    rules = {name: [p.rule for p in model.thresholds] for name, model in result.models.items()}
    assert "bayes" in rules["model_a"] and "bayes" not in rules["logit"]
    text = render(result, source="scores.csv")
    assert "Calibration of model_a: Brier" in text
    assert "Calibration of logit: skipped, its scores are not all probabilities in [0, 1]" in text


class _Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_is_whole_lines_unless_stderr_is_a_terminal():
    """On a terminal one line is rewritten in place; in a file a carriage return would pile
    every update onto one line: there, whole lines, the first update, one per tenth, the last."""
    Progress = report_modules["command"].Progress
    log = io.StringIO()
    progress = Progress(log)
    for done in [*range(128, 1000, 128), 1000]:
        progress("AUC", done, 1000)
    assert "\r" not in log.getvalue()
    assert log.getvalue().splitlines() == [
        f"bootstrap AUC: {done}/1000 resamples" for done in [*range(128, 1000, 128), 1000]
    ]
    log = io.StringIO()
    progress = Progress(log)
    for done in [*range(128, 100_000, 128), 100_000]:
        progress("AUC", done, 100_000)
    lines = log.getvalue().splitlines()
    assert len(lines) == 11 and lines[0] == "bootstrap AUC: 128/100000 resamples"
    assert lines[-1] == "bootstrap AUC: 100000/100000 resamples"
    terminal = _Terminal()
    progress = Progress(terminal)
    progress("AUC", 128, 1000)
    assert progress.open and terminal.getvalue() == "\rbootstrap AUC: 128/1000 resamples"
    progress.close()
    assert terminal.getvalue().endswith("resamples\n")


# --------------------------------------------------------------------------- intervals that miss


def _flagged(document):
    """Every (path, interval) of the JSON that carries `estimate_outside_interval`."""
    if isinstance(document, dict):
        if "estimate_outside_interval" in document:
            yield document
        for value in document.values():
            yield from _flagged(value)
    elif isinstance(document, list):
        for value in document:
            yield from _flagged(value)


def test_every_bootstrap_interval_says_whether_it_misses_its_estimate(full_run):
    document = full_run[3]
    intervals = list(_flagged(document))
    # per model: AUC, AP, three clinical numbers, the recalibration intercept and slope, and
    # the net benefit at six thresholds (0.05, 0.1, Bayes' 1/6, 0.2, 0.3, the given 0.5); per
    # pair: the AUC and AP differences
    assert len(intervals) == 2 * (5 + 2 + 6) + 2
    for interval in intervals:
        estimate, low, high = interval["estimate"], interval["low"], interval["high"]
        assert interval["estimate_outside_interval"] == (estimate < low or estimate > high)


def test_an_interval_that_misses_its_estimate_is_marked_and_footnoted(report):
    """ECE on 400 rows: 0.032, percentile interval [0.043, 0.093]. Binned and extreme metrics
    are biased on resamples; the text marks such an interval and the JSON says so."""
    interval = report_modules["ranking"].interval
    data = report.data
    samples = np.full((20, 1, 1), 0.06)
    missed = jm.BootstrapResult(*(np.full((1, 1), v) for v in (0.032, 0.043, 0.093, 0.01)), samples)
    assert interval(missed, 0, 0, data).estimate_outside_interval is True
    inside = missed._replace(estimate=np.full((1, 1), 0.05))
    assert interval(inside, 0, 0, data).estimate_outside_interval is False
    few = data._replace(positives=1)  # no interval at all: nothing to miss
    assert interval(missed, 0, 0, few).estimate_outside_interval is False

    model = report.models["model_b"]
    ap = model.average_precision._replace(low=model.average_precision.estimate + 0.01)
    ap = ap._replace(high=ap.low + 0.1, estimate_outside_interval=True)
    marked = report._replace(
        models={**report.models, "model_b": model._replace(average_precision=ap)}
    )
    text = render(marked, source="scores.csv")
    row = next(line for line in text.splitlines() if line.startswith("model_b "))
    assert row.endswith("]*") and row.count("*") == 1
    assert report_modules["render"].OUTSIDE_NOTE in text
    assert report_modules["render"].OUTSIDE_NOTE not in render(report, source="scores.csv")
    document = json.loads(report_modules["result"].to_json(marked))
    assert document["models"]["model_b"]["average_precision"]["estimate_outside_interval"] is True
    assert document["models"]["model_a"]["average_precision"]["estimate_outside_interval"] is False


# --------------------------------------------------------------------------- kept programs

needs_serialization = pytest.mark.skipif(
    not report_modules["programs"].available(),
    reason="jax.export serializes with the flatbuffers package (the report extra)",
)


def _affine(x):
    return 2 * x + 1


def _store(folder, misses):
    return report_modules["programs"].ProgramStore(folder, on_miss=lambda: misses.append(1))


def _affine_through(folder, misses, x):
    """`_affine(x)` through the program kept in `folder`, checked against numpy."""
    result = _store(folder, misses).call("affine", _affine, x)
    return np.array_equal(result, 2 * x + 1)


@needs_serialization
def test_a_kept_program_is_read_back_and_a_damaged_or_foreign_one_rebuilt(tmp_path, monkeypatch):
    x = np.arange(3, dtype=np.float32)
    misses = []
    assert _affine_through(tmp_path, misses, x) and misses == [1]  # exported, and written
    path = _store(tmp_path, misses).path("affine", (x,))
    whole = path.read_bytes()
    assert _affine_through(tmp_path, misses, x) and misses == [1]  # a second run reads it back
    format_line, header, payload = whole.split(b"\n", 2)
    foreign = json.loads(header)
    foreign["version"]["jaxmetrics"] = "0.0.1"  # another version: a whole file, checksum right
    damaged = {
        "truncated": whole[: len(whole) // 2],
        "a payload byte changed": whole[:-1] + bytes([whole[-1] ^ 1]),
        "not a program": b"\x00" * 64,
        "another version": b"\n".join([format_line, json.dumps(foreign).encode(), payload]),
    }

    def refused(*args):
        raise AssertionError("a damaged program was deserialized")

    for case, content in damaged.items():
        path.write_bytes(content)
        misses.clear()
        with monkeypatch.context() as patch:
            if case != "another version":  # never deserialized: its checksum fails first
                patch.setattr(jax.export, "deserialize", refused)
            assert _affine_through(tmp_path, misses, x) and misses == [1], case  # rebuilt
        assert _affine_through(tmp_path, misses, x) and misses == [1], case  # and read back
    wider = np.arange(4, dtype=np.float32)  # other shapes: another program, another file
    assert _affine_through(tmp_path, misses, wider) and misses == [1, 1]
    assert len(list(tmp_path.glob("affine-*.program"))) == 2


def _numbers_of(document):
    """Every number of a JSON report, in order (NaN as None)."""
    if isinstance(document, dict):
        return [x for value in document.values() for x in _numbers_of(value)]
    if isinstance(document, list):
        return [x for value in document for x in _numbers_of(value)]
    if isinstance(document, float):
        return [None if document != document else document]
    return []


@needs_serialization
def test_a_kept_program_is_not_served_for_other_thresholds(two_models, tmp_path):
    """The validation panel's program depends on the decision table's thresholds, not only on
    the input shapes: a second report of the same shapes at another threshold must not reuse
    the first one's program (it did: here the net benefit at 0.5 was printed as the one at
    0.4, silently; with another number of thresholds, an internal error)."""
    table, metadata = _demo_table_and_metadata(two_models, 20)
    other = metadata._replace(threshold=0.4)  # a fifth column of the decision table
    with jm.xla_kernels():
        evaluate(table, metadata, programs=tmp_path)
        kept = evaluate(table, other, programs=tmp_path)
        plain = evaluate(table, other)
    assert render(kept, source="s.csv") == render(plain, source="s.csv")
    rows = kept.models["model_a"].decision_curve.points
    assert [point.threshold for point in rows] == [0.05, 0.1, 0.2, 0.3, 0.4]
    assert len(list(tmp_path.glob("ranking-validation-*.program"))) == 4  # two per table


@needs_serialization
def test_kept_programs_leave_the_report_unchanged(two_models, tmp_path):
    """The command line with its caches keeps the bootstrap's programs with `jax.export`
    (under XLA's kernels): the run that reads them back gives the same report, byte for byte,
    as the run that exported them, and writes nothing. Against the report without kept
    programs (compiled as one program, so XLA may order a float32 sum differently): the same
    text, and every number equal to float32 rounding."""
    table, metadata = _demo_table_and_metadata(two_models, 20)
    with jm.xla_kernels():
        plain = evaluate(table, metadata)
        first = to_json(evaluate(table, metadata, programs=tmp_path))
        kept = {path: path.stat().st_mtime_ns for path in tmp_path.iterdir()}
        second = evaluate(table, metadata, programs=tmp_path)
    assert to_json(second) == first
    assert render(second, source="s.csv") == render(plain, source="s.csv")
    ours, theirs = _numbers_of(json.loads(first)), _numbers_of(json.loads(to_json(plain)))
    assert len(ours) == len(theirs) > 100
    assert [x is None for x in ours] == [x is None for x in theirs]
    defined = [(x, y) for x, y in zip(ours, theirs, strict=True) if x is not None]
    np.testing.assert_allclose(*np.array(defined).T, rtol=1e-6, atol=1e-7)
    assert len(kept) == 2 and all(path.suffix == ".program" for path in kept)
    assert {path: path.stat().st_mtime_ns for path in tmp_path.iterdir()} == kept
