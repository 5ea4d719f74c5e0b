"""`jaxmetrics report`'s validation sections (issue 29): recalibration with Wald and bootstrap
intervals, Spiegelhalter's test and the debiased calibration error; the decision curve; and
--group, each model by group with the gaps and fairness differences.

References: statsmodels' logistic GLM, dcurves' `dca`, scikit-learn's AUC, fairlearn's fairness
differences and formulas written here. Two reports run in this process (200 rows, two score
columns, --no-cache), so JAX compiles each section once per group count.
"""

import contextlib
import io
import json
import math
import sys

import numpy as np
import pandas as pd
import pytest
import statsmodels.api as sm
from dcurves import dca
from fairlearn import metrics as fair
from scipy import stats
from sklearn import metrics as sk

import jaxmetrics as jm
from jaxmetrics.report import cli, demo_data, load_table
from jaxmetrics.report.ranking import seed_key
from jaxmetrics.report.read import Table

N = 200
RESAMPLES = 50
SEED = 3


def report_main(*args):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        status = cli.main(["report", *map(str, args), "--no-cache"])
    return status, out.getvalue(), err.getvalue()


def _data(seed):
    rng = np.random.default_rng(seed)
    labels = (rng.random(N) < 0.3).astype(int)
    a = np.clip(0.3 + 0.3 * labels + 0.2 * rng.normal(size=N), 0.001, 0.999).round(3)
    b = np.clip(0.35 + 0.15 * labels + 0.25 * rng.normal(size=N), 0.001, 0.999).round(3)
    site = rng.choice(["east", "north", "west"], size=N, p=[0.5, 0.3, 0.2])
    return labels, a, b, site


@pytest.fixture(scope="module")
def run(tmp_path_factory):
    labels, a, b, site = _data(7)
    folder = tmp_path_factory.mktemp("validation")
    path = folder / "scores.csv"
    pd.DataFrame({"y": labels, "a": a, "b": b, "site": site}).to_csv(path, index=False)
    status, out, err = report_main(
        path, "--label", "y", "--score", "a", "--score", "b", "--group", "site",
        "--resamples", RESAMPLES, "--seed", SEED, "--cost-fp", 1, "--cost-fn", 4,
        "--json", folder / "report.json", "--plots", folder / "plots",
    )  # fmt: skip
    assert status == 0, err
    document = json.loads((folder / "report.json").read_text())
    return document, out, folder, (labels, a, b, site), path


def test_recalibration_matches_statsmodels_and_the_bootstrap(run):
    document, _, _, (labels, *models, _), _ = run
    for name, probs in zip("ab", models):
        calibration = document["models"][name]["calibration"]
        logit = np.log(probs / (1 - probs))
        ones = np.ones((N, 1))
        binomial = sm.families.Binomial()
        intercept = sm.GLM(labels, ones, family=binomial, offset=logit).fit()
        slope = sm.GLM(labels, np.c_[ones, logit], family=binomial).fit()
        for ours, fit, k in (
            (calibration["intercept"], intercept, 0),
            (calibration["slope"], slope, 1),
        ):
            wald = fit.conf_int()[k]
            expected = [fit.params[k], *wald]
            assert [ours["estimate"], ours["wald_low"], ours["wald_high"]] == pytest.approx(
                expected, rel=1e-4, abs=1e-5
            )
            assert ours["wald_low"] < ours["estimate"] < ours["wald_high"]
            if name == "b":
                continue  # one model's bootstrap suffices (each reference compiles)
            function = jm.calibration_intercept if k == 0 else jm.calibration_slope
            boot = jm.bootstrap(
                lambda p, y, sample_weight, f=function: f(p, y, sample_weight=sample_weight).value,
                probs, labels, key=seed_key(SEED), num_resamples=RESAMPLES,
            )  # fmt: skip
            assert [ours["low"], ours["high"]] == pytest.approx(
                [float(boot.low), float(boot.high)], rel=1e-4, abs=1e-5
            )
        # Spiegelhalter (1986), written out
        z = ((labels - probs) * (1 - 2 * probs)).sum() / np.sqrt(
            ((1 - 2 * probs) ** 2 * probs * (1 - probs)).sum()
        )
        test = calibration["spiegelhalter"]
        assert test["z"] == pytest.approx(z, rel=1e-4)
        assert test["p_value"] == pytest.approx(2 * stats.norm.sf(abs(z)), rel=1e-3)
        bins = dict(num_bins=10)
        assert calibration["debiased_calibration_error"] == pytest.approx(
            float(jm.debiased_calibration_error(probs, labels, **bins)), abs=1e-6
        )
        assert calibration["l2_calibration_error"] == pytest.approx(
            float(jm.expected_calibration_error(probs, labels, norm="l2", **bins)), abs=1e-6
        )


def test_decision_curve_matches_dcurves(run):
    document, _, _, (labels, a, b, _), _ = run
    for name, probs in (("a", a), ("b", b)):
        curve = document["models"][name]["decision_curve"]
        thresholds = [p["threshold"] for p in curve["points"]]
        # fixed ones, the given 0.5 and Bayes' 1 / (1 + 4) = 0.2, merged with the fixed 0.2
        assert thresholds == [0.05, 0.1, 0.2, 0.3, 0.5]
        assert [p["rules"] for p in curve["points"]] == [[], [], ["bayes"], [], ["given"]]
        frame = pd.DataFrame({"y": labels, "m": probs})
        reference = dca(data=frame, outcome="y", modelnames=["m"], thresholds=thresholds)
        model = reference[reference.model == "m"]
        everyone = reference[reference.model == "all"]
        ours = curve["points"]
        nb = [p["net_benefit"]["estimate"] for p in ours]
        assert nb == pytest.approx(model.net_benefit.to_numpy(), abs=1e-6)
        assert [p["treat_all"] for p in ours] == pytest.approx(
            everyone.net_benefit.to_numpy(), abs=1e-6
        )
        avoided = [p["interventions_avoided"] for p in ours]
        assert avoided == pytest.approx(model.net_intervention_avoided.to_numpy(), abs=1e-5)
        if name == "b":
            continue
        boot = jm.bootstrap(
            lambda p, y, sample_weight, t=thresholds: jm.net_benefit(
                p, y, t, sample_weight=sample_weight
            ),
            probs, labels, key=seed_key(SEED), num_resamples=RESAMPLES,
        )  # fmt: skip
        assert [p["net_benefit"]["low"] for p in ours] == pytest.approx(
            np.asarray(boot.low), abs=1e-6
        )
        assert [p["net_benefit"]["high"] for p in ours] == pytest.approx(
            np.asarray(boot.high), abs=1e-6
        )
        grid = curve["curve"]
        assert len(grid["thresholds"]) == 99 and grid["thresholds"][0] == 0.01
        on_grid = dca(data=frame, outcome="y", modelnames=["m"], thresholds=grid["thresholds"])
        assert grid["net_benefit"] == pytest.approx(
            on_grid[on_grid.model == "m"].net_benefit.to_numpy(), abs=1e-6
        )


def test_by_group_matches_sklearn_and_fairlearn(run):
    document, _, _, (labels, a, b, site), _ = run
    section = document["by_group"]
    assert section["column"] == "site" and section["threshold"] == 0.5
    assert document["metadata"]["group_column"] == "site"
    for name, probs in (("a", a), ("b", b)):
        model = section["models"][name]
        decisions = (probs >= 0.5).astype(int)
        aucs, rates = [], []
        for row, group in zip(model["groups"], ["east", "north", "west"]):
            rows = site == group
            assert row["group"] == group and row["samples"] == rows.sum()
            assert row["prevalence"] == pytest.approx(labels[rows].mean())
            auc = sk.roc_auc_score(labels[rows], probs[rows])
            assert row["roc_auc"]["estimate"] == pytest.approx(auc, abs=1e-6)
            assert row["roc_auc"]["low"] < auc < row["roc_auc"]["high"]
            y, d = labels[rows], decisions[rows]
            rate = [d[y == 1].mean(), 1 - d[y == 0].mean(), d.mean()]
            for key, value in zip(("sensitivity", "specificity", "selection_rate"), rate):
                assert row[key]["estimate"] == pytest.approx(value, abs=1e-6)
            aucs.append(auc)
            rates.append(rate)
        assert model["overall"]["group"] == "all"
        assert model["overall"]["roc_auc"]["estimate"] == pytest.approx(
            sk.roc_auc_score(labels, probs), abs=1e-6
        )
        gap = model["roc_auc_gap"]
        assert gap["difference"]["estimate"] == pytest.approx(max(aucs) - min(aucs), abs=1e-6)
        assert gap["ratio"]["estimate"] == pytest.approx(min(aucs) / max(aucs), abs=1e-6)
        parity = fair.demographic_parity_difference(labels, decisions, sensitive_features=site)
        odds = fair.equalized_odds_difference(labels, decisions, sensitive_features=site)
        assert model["demographic_parity_difference"]["estimate"] == pytest.approx(parity, abs=1e-6)
        assert model["equalized_odds_difference"]["estimate"] == pytest.approx(odds, abs=1e-6)
        assert model["selection_rate_gap"]["difference"]["estimate"] == pytest.approx(
            parity, abs=1e-6
        )
        # the intervals come from resamples drawn within each group
        boot = jm.by_group_bootstrap(
            jm.roc_auc, probs, labels, groups=np.unique(site, return_inverse=True)[1],
            num_groups=3, key=seed_key(SEED), num_resamples=RESAMPLES,
        )  # fmt: skip
        assert [gap["difference"]["low"], gap["difference"]["high"]] == pytest.approx(
            [float(boot.difference.low), float(boot.difference.high)], abs=1e-6
        )


def test_text_has_the_new_sections_and_the_plot_is_written(run):
    _, out, folder, _, _ = run
    for part in (
        "Recalibration of a", "Spiegelhalter's test of calibration: z = ",
        "debiased (Kumar et al. 2019)", "Decision curve (treat iff probability >= threshold",
        "avoided per 100", "By group: site", "Gaps between groups",
        "demographic parity difference", "equalized odds difference",
    ):  # fmt: skip
        assert part in out, part
    assert (folder / "plots" / "decision_curve.png").read_bytes().startswith(b"\x89PNG")


@pytest.mark.parametrize(
    "extra, message",
    [
        (["--group", "nope"], "no column 'nope'"),
        (["--group", "y"], "--group 'y' is the label column"),
        (["--group", "many"], "'many' has 60 distinct values; --group takes at most 50"),
        (["--group", "site", "--cluster", "site"], "give --group or --cluster, not both"),
    ],
)
def test_bad_group_columns_exit_2_with_one_line(tmp_path, extra, message):
    labels, a, _, site = _data(7)
    path = tmp_path / "scores.csv"
    many = [f"g{i % 60}" for i in range(N)]
    pd.DataFrame({"y": labels, "a": a, "site": site, "many": many}).to_csv(path, index=False)
    status, _, err = report_main(path, "--label", "y", "--score", "a", *extra)
    assert status == 2
    assert message in err and len(err.strip().splitlines()) == 1, err


def test_demo_has_a_seeded_site_column_and_unchanged_numbers():
    table = demo_data()
    # the columns as the demo drew them before it had sites: the same draws
    rng = np.random.default_rng(0)
    labels = (rng.random(4000) < 0.05).astype(np.int32)
    noise = rng.normal(size=(2, 4000))
    assert (table.labels == labels).all()
    raw_a = np.where(labels == 1, 1.5 + noise[0], noise[0])
    intercept = -1.125 + math.log(0.05 / 0.95)
    expected_a = 1 / (1 + np.exp(-(1.5 * raw_a + intercept)))
    assert np.array_equal(table.models["A"], expected_a)
    assert set(np.unique(table.groups)) == {"north", "central", "south"}
    assert (demo_data().groups == table.groups).all() and (
        demo_data(1).groups != table.groups
    ).any()
    prevalence = {g: table.labels[table.groups == g].mean() for g in ("north", "south")}
    assert prevalence["south"] > 2 * prevalence["north"]  # the sites differ in prevalence


def test_demo_shows_the_site_section_and_a_one_class_group(run, monkeypatch, tmp_path):
    """--demo reports by site, as --group site would; a group of one class gets NaN (null)
    for its AUC and sensitivity and a note. The demo's data is replaced by a small table."""
    _, _, _, _, path = run
    table = load_table(path, "y", ["a", "b"], group="site")
    groups = table.groups.copy()
    groups[np.flatnonzero(table.labels == 0)[:8]] = "tiny"  # eight negatives only
    command = sys.modules["jaxmetrics.report.command"]
    small = Table(table.labels, {"A": table.models["a"], "B": table.models["b"]}, None, groups)
    monkeypatch.setattr(command, "demo_data", lambda seed: small)
    status, out, err = report_main("--demo", "--resamples", 20, "--json", tmp_path / "demo.json")
    assert status == 0, err
    assert "By group: site" in out and "group 'tiny': all 8 rows are negative" in out
    document = json.loads((tmp_path / "demo.json").read_text())
    assert document["metadata"]["group_column"] == "site"
    rows = {row["group"]: row for row in document["by_group"]["models"]["A"]["groups"]}
    tiny = rows["tiny"]
    assert list(rows) == ["east", "north", "tiny", "west"] and tiny["samples"] == 8
    assert tiny["roc_auc"]["estimate"] is None and tiny["sensitivity"]["estimate"] is None
    assert tiny["specificity"]["estimate"] is not None
    status, _, err = report_main("--demo", "--group", "region")
    assert status == 2 and "group column is 'site'" in err
