"""The GPU benchmark (benchmarks/gpu.py) at tiny sizes on the CPU, so that it never rots.

`python benchmarks/run.py --device gpu` is for a lent GPU; here the same rows run at 1e-4 of
its sizes under `jm.xla_kernels()` (XLA's sort and scans, the accelerator code path), in this
process: every row present, finite and equal to its reference. No time is asserted. The
suite's own oracles are checked against scikit-learn and pROC's published values.
"""

import importlib.util
import json
import math
from pathlib import Path
from types import SimpleNamespace

import jax
import numpy as np
import pytest
from sklearn import metrics as skm

import jaxmetrics as jm

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("gpu_benchmark", ROOT / "benchmarks" / "gpu.py")
gpu = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu)

SCALE = 1e-4
RANKING_SIZES = [500, 1000, 10_000]  # max(SMALLEST, size * SCALE)
OTHERS = {"bootstrap_roc_auc": 500, "confusion_counts": 10_000, "delong": 1000}


def _stamp(path: Path):
    return path.stat().st_mtime_ns if path.exists() else None


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    official = ROOT / "benchmarks" / "results" / "gpu.json"
    before = _stamp(official)
    out = tmp_path_factory.mktemp("gpu") / "gpu.json"
    with jm.xla_kernels():
        code = gpu.main(["--scale", str(SCALE), "--repeats", "1", "--out", str(out)])
    assert _stamp(official) == before  # the recorded GPU run is left alone
    return code, json.loads(out.read_text())


def test_every_row_is_there_finite_and_checked(results):
    code, result = results
    assert code == 0
    rows = result["rows"]
    expected = [(name, n) for n in RANKING_SIZES for name in gpu.RANKING]
    expected += [*OTHERS.items(), ("binned_curve_update", 839)]
    assert [(row["name"], row["n"]) for row in rows] == expected
    for row in rows:
        assert math.isfinite(row["seconds"]) and row["seconds"] > 0, row
        assert row["runs"] == 1 and row["note"] is None, row
        assert row["peak_device_bytes"] is None  # the CPU reports none ...
        if row["name"] != "bootstrap_roc_auc":  # ... so XLA's account of the program is given
            assert row["program_bytes"] > 0, row
        if "value" in row:
            assert 0 < row["value"] < 1, row
    checked = [row for row in rows if row["check"] is not None]
    assert all(row["check"]["passed"] for row in checked), checked
    # the smallest size against the oracle, the before against ours at every size
    assert len(checked) == len(gpu.RANKING) + 2 + len(OTHERS) + 1
    rates = {row["name"]: row for row in rows if row["name"] not in gpu.RANKING}
    assert rates["bootstrap_roc_auc"]["num_resamples"] == 32
    assert rates["bootstrap_roc_auc"]["chunk_size"] == 32  # at most the resamples
    for name, rate in [
        ("bootstrap_roc_auc", "resamples_per_s"),
        ("confusion_counts", "thresholds_per_s"),
        ("binned_curve_update", "samples_per_s"),
    ]:
        assert math.isfinite(rates[name][rate]) and rates[name][rate] > 0


def test_recorded_values_match_sklearn(results):
    # the data are the suite's own draw, the reference is scikit-learn's
    _, result = results
    scores, labels = (np.asarray(x) for x in gpu.binormal(RANKING_SIZES[0], seed=0))
    smallest = result["rows"][: len(gpu.RANKING)]
    values = {row["name"]: row["value"] for row in smallest if "value" in row}
    auc = skm.roc_auc_score(labels, scores)
    assert values["roc_auc"] == pytest.approx(auc, abs=1e-6)
    assert values["argsort_roc_auc"] == pytest.approx(auc, abs=1e-6)
    ap = skm.average_precision_score(labels, scores)
    assert values["average_precision"] == pytest.approx(ap, abs=1e-6)


def test_targets_and_options_are_recorded(results, capsys):
    _, result = results
    assert [t["target_s"] for t in result["targets"]] == [0.05, 1.0]
    for target in result["targets"]:
        assert target["met"] is None and target["seconds"] > 0  # not at the targets' sizes
    assert result["targets"][0]["n"] == RANKING_SIZES[-1]
    assert result["options"]["scale"] == SCALE and result["options"]["memory_limit_bytes"] > 0
    assert result["machine"]["backend"] == "cpu"


def test_oracles_match_sklearn_with_ties_and_weights(rng):
    scores = rng.integers(0, 8, 300).astype(np.float32)
    labels = rng.integers(0, 2, 300)
    weights = rng.integers(0, 4, 300)
    assert gpu.oracle_roc_auc(scores, labels, weights) == pytest.approx(
        skm.roc_auc_score(labels, scores, sample_weight=weights), abs=1e-12
    )
    assert gpu.oracle_average_precision(scores, labels) == pytest.approx(
        skm.average_precision_score(labels, scores), abs=1e-12
    )
    thresholds = np.array([-1, 0, 2.5, 3, 7, 8], np.float32)
    brute = [
        [np.sum(p & (labels == 1)), np.sum(p & (labels == 0)), np.sum(~p & (labels == 1))]
        + [np.sum(~p & (labels == 0))]
        for p in (scores[None] >= thresholds[:, None])
    ]
    np.testing.assert_array_equal(gpu.oracle_counts(scores, labels, thresholds).T, brute)
    before = jax.jit(gpu.argsort_roc_auc)(scores, labels.astype(np.int32))
    assert float(before) == pytest.approx(skm.roc_auc_score(labels, scores), abs=1e-6)


def test_delong_oracle_matches_proc_on_asah():
    # pROC's var/cov(method = "delong") on its asah data (as tests/test_intervals.py)
    data = np.genfromtxt(ROOT / "tests" / "data" / "asah.csv", delimiter=",", names=True)
    scores = np.stack([data["wfns"], data["s100b"], data["ndka"]])
    auc, covariance = gpu.oracle_delong(scores, data["poor_outcome"].astype(int))
    np.testing.assert_allclose(auc, [0.823678861788618, 0.731368563685637, 0.611957994579946])
    np.testing.assert_allclose(
        np.diag(covariance), [0.00146991470882363, 0.00266868245717244, 0.0031908105493913]
    )
    assert covariance[0, 2] == pytest.approx(-0.000532967856762438)


def _programs(bytes_per_sample):
    analysis = SimpleNamespace(output_size_in_bytes=0, temp_size_in_bytes=0)

    def programs_at(n):
        sized = SimpleNamespace(**vars(analysis), argument_size_in_bytes=bytes_per_sample * n)
        return {"program": SimpleNamespace(memory_analysis=lambda: sized)}

    return programs_at


def test_a_row_that_would_not_fit_is_shrunk_or_skipped_and_says_so():
    budget = gpu.Budget(memory_limit=10**6, time_budget_s=60)  # 0.9 MB free on the CPU
    n, programs, note = gpu.fit(10**6, _programs(4), budget)  # needs 4 MB
    assert n == 200_000 and gpu.program_bytes(programs["program"]) == 800_000
    assert note == "shrunk to n = 2e+05: needs 0.0 GB at n = 1e+06, 0.0 GB free"
    n, programs, note = gpu.fit(10**4, _programs(10**4), budget)
    assert n is None and programs == {} and note.startswith("skipped: needs 0.1 GB")
    assert gpu.fit(10**5, _programs(4), budget)[0] == 10**5


def test_rows_past_the_time_budget_are_skipped_and_said_so():
    result = gpu.run(scale=SCALE, time_budget_s=-1, log=lambda line: None)
    assert len(result["rows"]) == 3 * len(gpu.RANKING) + 4
    for row in result["rows"]:
        assert row["seconds"] is None and row["note"] == "skipped: time budget spent"
        assert "skipped" in gpu.row_line(row)
    assert all(t["seconds"] is None for t in result["targets"])
    assert "not measured" in "\n".join(gpu.target_lines(result))


def test_the_full_sizes_refuse_a_cpu(capsys):
    assert gpu.main([]) == 1
    assert "pass --scale" in capsys.readouterr().err
