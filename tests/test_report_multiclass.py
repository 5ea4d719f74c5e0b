"""`jaxmetrics report`'s multiclass mode: its numbers against scikit-learn, its text and JSON, the
mapping of score columns to classes, the choice of mode, and bad input.

Every evaluated data set here has the same shape (`N` rows, three classes), so JAX compiles the
report's bootstrap once for the module.
"""

import contextlib
import io
import json
from types import SimpleNamespace

import matplotlib.pyplot as plt
import numpy as np
import pytest
from sklearn import metrics as sk
from sklearn.preprocessing import label_binarize

from jaxmetrics.report import cli, command, load_table, plots
from jaxmetrics.report import multiclass as multiclass_module
from jaxmetrics.report.multiclass_read import load
from jaxmetrics.report.read import MulticlassTable, Table, is_multiclass, multiclass_demo_data

N = 150
CLASSES = ("ant", "bee", "cow")


def write_csv(path, header, rows):
    lines = [",".join(header)] + [",".join(str(c) for c in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def probabilities(rng, labels, decimals=4):
    """Rows of class probabilities that lean to the true class, rounded to `decimals` and summing
    to 1, with no tie for second place (scikit-learn's top-k breaks such ties by class index)."""
    while True:
        logits = rng.normal(size=(labels.size, 3)) + 1.5 * np.eye(3)[labels]
        probs = np.exp(logits) / np.exp(logits).sum(-1, keepdims=True)
        probs = probs.round(decimals)
        largest = probs.argmax(-1)
        probs[np.arange(labels.size), largest] += 1 - probs.sum(-1)
        ordered = np.sort(probs, -1)
        if (np.diff(ordered, axis=-1) > 0).all():
            return probs


def run(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            status = cli.main(["report", *map(str, args), "--no-cache"])
        except SystemExit as exit:  # argparse's errors
            status = exit.code
    return status, out.getvalue(), err.getvalue()


@pytest.fixture(scope="module")
def animals(tmp_path_factory):
    """Text classes, with the probability columns named after them in another order."""
    rng = np.random.default_rng(29)
    labels = rng.choice(3, size=N, p=[0.5, 0.3, 0.2])
    probs = probabilities(rng, labels)
    folder = tmp_path_factory.mktemp("data")
    header = ["animal", "cow", "ant", "bee"]
    rows = [(CLASSES[y], p[2], p[0], p[1]) for y, p in zip(labels, probs)]
    return write_csv(folder / "animals.csv", header, rows), labels, probs


@pytest.fixture(scope="module")
def animals_run(animals, tmp_path_factory):
    path = animals[0]
    folder = tmp_path_factory.mktemp("out")
    scores = ["--score", "cow", "--score", "ant", "--score", "bee"]
    status, out, err = run(
        path, "--label", "animal", *scores, "--resamples", 50, "--seed", 7,
        "--json", folder / "report.json", "--plots", folder / "plots",
    )  # fmt: skip
    assert status == 0, err
    return out, err, json.loads((folder / "report.json").read_text()), folder


def test_numbers_equal_sklearn(animals, animals_run):
    _, labels, probs = animals
    document = animals_run[2]
    predicted = probs.argmax(-1)
    per_class = document["classes"]
    assert list(per_class) == list(CLASSES)
    auc = sk.roc_auc_score(labels, probs, multi_class="ovr", average=None)
    onehot = label_binarize(labels, classes=[0, 1, 2])
    ap = [sk.average_precision_score(onehot[:, c], probs[:, c]) for c in range(3)]
    for c, name in enumerate(CLASSES):
        assert per_class[name]["roc_auc"]["estimate"] == pytest.approx(auc[c], abs=1e-6)
        assert per_class[name]["average_precision"]["estimate"] == pytest.approx(ap[c], abs=1e-6)
        assert per_class[name]["samples"] == int((labels == c).sum())
    averages = document["averages"]
    expected = {
        "roc_auc_macro": sk.roc_auc_score(labels, probs, multi_class="ovr"),
        "roc_auc_weighted": sk.roc_auc_score(labels, probs, multi_class="ovr", average="weighted"),
        "roc_auc_one_vs_one": sk.roc_auc_score(labels, probs, multi_class="ovo"),
        "average_precision_macro": sk.average_precision_score(onehot, probs),
        "average_precision_weighted": sk.average_precision_score(onehot, probs, average="weighted"),
    }
    for name, value in expected.items():
        assert averages[name]["estimate"] == pytest.approx(value, abs=1e-6), name
    predictions = document["predictions"]
    assert predictions["confusion_matrix"] == sk.confusion_matrix(labels, predicted).tolist()
    checks = {
        "accuracy": sk.accuracy_score(labels, predicted),
        "cohen_kappa": sk.cohen_kappa_score(labels, predicted),
        "top_k_accuracy": sk.top_k_accuracy_score(labels, probs, k=2),
    }
    for name, value in checks.items():
        assert predictions[name]["estimate"] == pytest.approx(value, abs=1e-6), name
    calibration = document["calibration"]
    assert calibration["log_loss"]["estimate"] == pytest.approx(
        sk.log_loss(labels, probs), rel=1e-6
    )
    assert calibration["brier"]["estimate"] == pytest.approx(
        sk.brier_score_loss(labels, probs, scale_by_half=False), rel=1e-6
    )


def test_every_interval_is_a_bootstrap_interval_of_its_estimate(animals_run):
    document = animals_run[2]
    intervals = [
        i for c in document["classes"].values() for i in (c["roc_auc"], c["average_precision"])
    ]
    intervals += list(document["averages"].values()) + list(document["calibration"].values())
    intervals += [v for k, v in document["predictions"].items() if k != "confusion_matrix"]
    assert len(intervals) == 16
    for interval in intervals:
        assert interval["low"] <= interval["estimate"] <= interval["high"]
        assert interval["high"] - interval["low"] < 0.5
        assert interval["undefined_resamples"] == 0 and not interval["estimate_outside_interval"]


def test_json_document(animals_run):
    document = animals_run[2]
    assert list(document) == [
        "mode", "metadata", "data", "classes", "averages", "predictions", "calibration",
    ]  # fmt: skip
    assert document["mode"] == "multiclass"
    metadata = document["metadata"]
    assert metadata["label_column"] == "animal" and metadata["top_k"] == 2
    assert metadata["score_columns"] == ["ant", "bee", "cow"]  # the column of each class
    assert (metadata["resamples"], metadata["seed"]) == (50, 7)
    assert document["data"]["classes"] == list(CLASSES)
    assert document["data"]["majority_class"] == "ant"
    curve = document["classes"]["bee"]["roc_curve"]
    assert curve["fpr"][-1] == curve["tpr"][-1] == 1.0 and curve["thresholds"][0] is None


def test_text_states_the_classes_and_every_section(animals, animals_run):
    out, err, _, folder = animals_run
    assert "bootstrap multiclass ranking, predictions and calibration: 50/50 resamples" in err
    assert "150 samples in 3 classes" in out
    stated = [row.split()[:3] for row in out.splitlines()]
    for name, count in zip(CLASSES, np.bincount(animals[1])):  # class, its column, its rows
        assert [name, name, str(count)] in stated, name
    for part in ("one-vs-one", "macro", "weighted", "true \\ predicted", "Cohen's kappa"):
        assert part in out
    for part in ("top-2 accuracy", "log loss", "Brier score", f"JSON written to {folder}"):
        assert part in out
    assert all(line == line.rstrip() for line in out.splitlines())


def test_plots_draw_one_roc_curve_per_class(animals_run):
    folder = animals_run[3] / "plots"
    assert [p.name for p in folder.iterdir()] == ["roc.png"]
    assert folder.joinpath("roc.png").read_bytes().startswith(b"\x89PNG")


def test_columns_not_named_after_classes_follow_the_sorted_classes(tmp_path, animals):
    """Integer classes sort numerically (2 before 10), as scikit-learn's `classes_`."""
    _, labels, probs = animals
    names = np.array([2, 10, 33])[labels]
    sites = np.arange(N) // 10
    header = ["y", "p2", "p10", "p33", "site"]
    path = write_csv(tmp_path / "d.csv", header, zip(names, *probs.T, sites))
    table = load(path, "y", ["p2", "p10", "p33"], cluster="site")
    assert isinstance(table, MulticlassTable)
    assert table.clusters.tolist() == sites.astype(str).tolist()
    assert table.classes == ("2", "10", "33") and table.columns == ("p2", "p10", "p33")
    np.testing.assert_array_equal(table.labels, labels)
    np.testing.assert_array_equal(table.probs, probs)
    status, out, _ = run(path, "--label", "y", "--score", "p2", "--score", "p10",
                         "--score", "p33", "--resamples", 50, "--quiet")  # fmt: skip
    assert status == 0 and out == ""


def test_the_mode_is_chosen_by_the_labels(tmp_path, animals):
    path = animals[0]
    forced = load(path, "animal", ["ant", "bee", "cow"], multiclass=True)
    assert forced.classes == CLASSES
    binary = write_csv(
        tmp_path / "b.csv", ["y", "s"], [(1, 0.9), (0, 0.2), ("yes", 0.7), ("no", 0.1)]
    )
    table = load(binary, "y", ["s"])
    assert isinstance(table, Table)
    np.testing.assert_array_equal(table.labels, load_table(binary, "y", ["s"]).labels)
    cases = {("0", "1", "1.0"): False, ("a", "b", "NA"): False, ("1", "2", "3"): True,
             ("true", "0", "n"): False, ("cat", "dog", "fox"): True}  # fmt: skip
    for texts, expected in cases.items():
        assert is_multiclass(SimpleNamespace(cells=list(texts))) is expected, texts


def test_demo_with_multiclass_runs_the_multiclass_demo(animals, monkeypatch):
    _, labels, probs = animals  # the module's shape: nothing new to compile
    table = MulticlassTable(labels.astype(np.int32), probs, CLASSES, CLASSES)
    monkeypatch.setattr(command, "multiclass_demo_data", lambda seed: table)
    status, out, _ = run("--demo", "--multiclass", "--resamples", 50)
    assert status == 0
    assert out.startswith("jaxmetrics report: built-in demo (a classifier of cats, dogs and foxes")


def test_demo_data_is_three_classes_of_probabilities():
    table = multiclass_demo_data(seed=1)
    assert table.classes == table.columns == ("cat", "dog", "fox")
    assert table.probs.shape == (3000, 3) and table.probs.dtype == np.float64
    np.testing.assert_allclose(table.probs.sum(-1), 1.0, rtol=1e-12)
    assert np.bincount(table.labels).tolist() == sorted(np.bincount(table.labels), reverse=True)
    assert sk.roc_auc_score(table.labels, table.probs, multi_class="ovr") > 0.8


def test_a_report_needs_two_rows_of_each_class_for_intervals(animals):
    _, labels, probs = animals
    labels = labels.copy()
    labels[np.flatnonzero(labels == 2)[1:]] = 0  # a single cow
    table = MulticlassTable(labels.astype(np.int32), probs, CLASSES, CLASSES)
    metadata = multiclass_module.MulticlassMetadata(None, "y", CLASSES, 50, 0, None, 2, "test")
    report = multiclass_module.evaluate_multiclass(table, metadata)
    assert report.classes["cow"].samples == 1
    assert np.isnan(report.averages.roc_auc_macro.low)
    assert report.averages.roc_auc_macro.estimate == pytest.approx(
        sk.roc_auc_score(labels, probs, multi_class="ovr"), abs=1e-6
    )
    text = multiclass_module_text(report)
    assert "(no intervals: they need at least two rows of every class)" in text
    figure = plots(report)["roc.png"]
    assert len(figure.axes[0].lines) == 4  # three classes and the diagonal
    plt.close("all")


def multiclass_module_text(report):
    from jaxmetrics.report.multiclass_render import render_multiclass

    return render_multiclass(report, source="test")


# --------------------------------------------------------------------------- bad input

ROWS = "y,a,b,c\na,0.7,0.2,0.1\nb,0.2,0.5,0.3\nc,0.1,0.3,0.6\n"
ARGS = ["data.csv", "--label", "y", "--score", "a", "--score", "b", "--score", "c"]
BAD = {
    "missing class column": (ROWS, ARGS[:-2], ["3 classes (a, b, c): give one --score column"]),
    "stray column": (
        ROWS.replace("y,a,b,c", "y,a,b,x"),
        [*ARGS[:-1], "x"],
        ["--score 'x': not a class of column 'y' (a, b, c); name every score column"],
    ),
    "row sum": (
        ROWS.replace("b,0.2,0.5,0.3", "b,0.2,0.5,0.2"),
        ARGS,
        ["data.csv: line 3: the class probabilities (a, b, c) sum to 0.9; each row must sum"],
    ),
    "outside": (
        ROWS.replace("c,0.1,0.3,0.6", "c,-0.1,0.5,0.6"),
        ARGS,
        ["column 'a', line 4: -0.1 is not a probability in [0, 1]"],
    ),
    "text score": (ROWS.replace("0.5", "high"), ARGS, ["column 'b', line 3: score 'high'"]),
    "missing label": (ROWS + "NA,0.1,0.3,0.6\n", ARGS, ["line 5: label is missing ('NA')"]),
    "two classes forced": (
        "y,a,b,c\na,0.7,0.2,0.1\nb,0.2,0.5,0.3\n",
        [*ARGS, "--multiclass"],
        ["column 'y' has 2 classes (a, b); --multiclass needs at least 3"],
    ),
    "positive": (ROWS, [*ARGS, "--multiclass", "--positive", "a"], ["--positive names"]),
    "costs": (ROWS, [*ARGS, "--cost-fp", "1", "--cost-fn", "2"], ["--cost-fp and --cost-fn are"]),
}


@pytest.mark.parametrize("case", list(BAD))
def test_bad_input_is_one_line_before_any_work(tmp_path, monkeypatch, case):
    content, args, parts = BAD[case]
    (tmp_path / "data.csv").write_text(content)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(
        multiclass_module, "evaluate_multiclass", lambda *a, **k: pytest.fail("evaluated")
    )
    status, out, err = run(*args)
    assert status == 2 and out == ""
    lines = err.strip("\n").split("\n")
    assert len(lines) == 1 and lines[0].startswith("jaxmetrics report: error: "), err
    for part in parts:
        assert part in lines[0], lines[0]
