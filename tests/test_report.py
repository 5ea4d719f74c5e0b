"""The `jaxmetrics report` command, run as a user runs it: in a subprocess."""

import json
import subprocess
import sys

import numpy as np
import pytest

import jaxmetrics as jm

COMMAND = [sys.executable, "-m", "jaxmetrics._src.cli", "report"]


def run(*args, cwd=None):
    return subprocess.run([*COMMAND, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


def write_csv(path, header, rows, delimiter=","):
    lines = [delimiter.join(header)] + [delimiter.join(str(c) for c in row) for row in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def two_models(tmp_path_factory):
    rng = np.random.default_rng(5)
    labels = (rng.random(300) < 0.3).astype(int)
    a = np.clip(0.3 + 0.3 * labels + 0.2 * rng.normal(size=300), 0, 1).round(3)
    b = np.clip(0.35 + 0.15 * labels + 0.25 * rng.normal(size=300), 0, 1).round(3)
    path = tmp_path_factory.mktemp("data") / "scores.csv"
    write_csv(path, ["outcome", "model_a", "model_b"], zip(labels, a, b))
    return path, labels, a.astype(np.float32), b.astype(np.float32)


def test_demo_runs_and_prints_the_report():
    result = run("--demo", "--resamples", "100")
    assert result.returncode == 0, result.stderr
    for part in (
        "prevalence",
        "majority baseline",
        "ROC AUC",
        "DeLong",
        "max_f1",
        "Brier",
        "ECE",
        "Paired comparison",
        "A - B",
    ):
        assert part in result.stdout
    assert "bootstrap ROC AUC: 100/100" in result.stderr  # progress


def test_csv_json_numbers_equal_the_library_and_plots_are_pngs(two_models, tmp_path):
    path, labels, a, b = two_models
    out = tmp_path / "report.json"
    plots = tmp_path / "plots"
    result = run(
        str(path),
        "--label",
        "outcome",
        "--score",
        "model_a",
        "--score",
        "model_b",
        "--resamples",
        "150",
        "--seed",
        "3",
        "--cost-fp",
        "1",
        "--cost-fn",
        "5",
        "--json",
        str(out),
        "--plots",
        str(plots),
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""
    document = json.loads(out.read_text())
    model_a = document["models"]["model_a"]
    assert model_a["roc_auc"]["estimate"] == pytest.approx(float(jm.roc_auc(a, labels)), abs=1e-6)
    assert document["models"]["model_b"]["average_precision"]["estimate"] == pytest.approx(
        float(jm.average_precision(b, labels)), abs=1e-6
    )
    booted = jm.bootstrap(
        jm.roc_auc, np.stack([a, b]), labels, key=__import__("jax").random.key(3), num_resamples=150
    )
    assert model_a["roc_auc"]["low"] == pytest.approx(float(booted.low[0]), abs=1e-6)
    delong = jm.delong(np.stack([a, b]), labels)
    assert model_a["roc_auc"]["delong_high"] == pytest.approx(float(delong.high[0]), abs=1e-6)
    given = model_a["thresholds"][0]
    counts = jm.confusion_counts(a, labels, 0.5)
    assert [given[k] for k in ("tp", "fp", "fn", "tn")] == [int(c) for c in counts]
    rules = [p["rule"] for p in model_a["thresholds"]]
    assert rules == ["given", "max_f1", "max_f2", "min_cost", "bayes"]
    assert model_a["calibration"]["brier"] == pytest.approx(
        float(jm.brier_score(a, labels)), abs=1e-6
    )
    comparison = document["comparison"][0]
    test = jm.delong_test(a, b, labels)
    assert comparison["roc_auc_difference"]["delong_p_value"] == pytest.approx(
        float(test.p_value), rel=1e-5
    )
    for name in ("roc.png", "precision_recall.png", "reliability.png"):
        data = (plots / name).read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_tsv_and_named_classes(tmp_path):
    rows = [("sick" if i % 3 == 0 else "well", i / 30) for i in range(30)]
    path = write_csv(tmp_path / "scores.tsv", ["status", "score"], rows, delimiter="\t")
    result = run(
        str(path),
        "--label",
        "status",
        "--positive",
        "sick",
        "--score",
        "score",
        "--resamples",
        "50",
        "--json",
        str(tmp_path / "out.json"),
        "--quiet",
    )
    assert result.returncode == 0, result.stderr
    labels = np.array([r[0] == "sick" for r in rows], int)
    scores = np.array([r[1] for r in rows], np.float32)
    document = json.loads((tmp_path / "out.json").read_text())
    assert document["models"]["score"]["roc_auc"]["estimate"] == pytest.approx(
        float(jm.roc_auc(scores, labels)), abs=1e-6
    )


def test_npz_input(tmp_path):
    rng = np.random.default_rng(0)
    labels = (rng.random(50) < 0.5).astype(np.int32)
    np.savez(tmp_path / "data.npz", y=labels, s=rng.random(50).astype(np.float32))
    result = run(
        str(tmp_path / "data.npz"), "--label", "y", "--score", "s", "--resamples", "20", "--quiet"
    )
    assert result.returncode == 0, result.stderr


BAD = {
    "missing file": (
        None,
        ["missing.csv", "--label", "y", "--score", "s"],
        "missing.csv: no such file",
    ),
    "missing column": (
        "y,s\n1,0.5\n0,0.2\n",
        ["--label", "y", "--score", "t"],
        "no column 't' (columns: 'y', 's')",
    ),
    "empty table": ("y,s\n", ["--label", "y", "--score", "s"], "the table is empty"),
    "text in a score": (
        "y,s\n1,0.5\n0,high\n",
        ["--label", "y", "--score", "s"],
        "column 's', line 3: score 'high' is not a number",
    ),
    "nan score": (
        "y,s\n1,0.5\n0,0.1\n1,nan\n",
        ["--label", "y", "--score", "s"],
        "column 's', line 4: score 'nan' is not finite",
    ),
    "inf score": (
        "y,s\n1,inf\n0,0.1\n",
        ["--label", "y", "--score", "s"],
        "column 's', line 2: score 'inf' is not finite",
    ),
    "label outside": (
        "y,s\n1,0.5\n2,0.1\n",
        ["--label", "y", "--score", "s"],
        "column 'y', line 3: label '2' is not 0/1",
    ),
    "third class": (
        "y,s\na,0.5\nb,0.1\nc,0.3\n",
        ["--label", "y", "--positive", "a", "--score", "s"],
        "column 'y', line 4: label 'c' is a third class",
    ),
    "single class": (
        "y,s\n1,0.5\n1,0.1\n",
        ["--label", "y", "--score", "s"],
        "column 'y': only one class present",
    ),
}


@pytest.mark.parametrize("case", sorted(BAD))
def test_bad_input_exits_with_one_line(tmp_path, case):
    content, args, message = BAD[case]
    if content is not None:
        (tmp_path / "data.csv").write_text(content)
        args = ["data.csv", *args]
    result = run(*args, cwd=tmp_path)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(
        "jaxmetrics report: error: data.csv" if content else "jaxmetrics report: error:"
    )
    assert message in lines[0]


def test_usage_errors(tmp_path):
    result = run()
    assert result.returncode == 2 and "--demo" in result.stderr
    result = run("--demo", "--cost-fp", "1")
    assert result.returncode == 2 and "both --cost-fp and --cost-fn" in result.stderr
