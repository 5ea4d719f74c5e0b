"""The examples run as a user runs them (quick modes), in a subprocess."""

import re
import subprocess
import sys
from pathlib import Path

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def test_surrogate_losses_quick():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "surrogate_losses.py"), "--quick"],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    out = result.stdout
    for part in (
        "well-specified, linear model",
        "well-specified, mlp model",
        "misspecified, mlp model",
        "learning to rank, linear scorer",
        "learning to rank, mlp scorer",
        "pairwise AUC",
        "compositional AUC",
        "Smooth-AP",
        "SOAP",
        "pAUC CVaR",
        "pAUC KL",
        "two-way pAUC",
        "TPAUC",
        "ΔTPAUC [95%]",
        "ApproxNDCG",
        "ListNet",
        "NDCG@10",
        "ΔpAUC [95%]",
        "BCE's rates, seeds at 0.01/0.03/0.1",
        "total time",
    ):
        assert part in out, part
    # the summary sorts every targeted comparison (10 surrogates x 3 configurations, 3 ranking
    # losses x 2 scorers) into better, no clear difference and worse
    summary = out[out.index("Summary:") :]
    verdicts = re.findall(r"^  (better|no clear difference|worse) \((\d+) of 36\):$", summary, re.M)
    assert [v for v, _ in verdicts] == ["better", "no clear difference", "worse"], summary
    assert sum(int(n) for _, n in verdicts) == 36
    assert re.search(r"^    TPAUC +two-way pAUC CVaR ", summary, re.M), summary
    assert "non-finite" not in out


def test_training_loop_on_four_emulated_devices():
    result = subprocess.run(
        [sys.executable, str(EXAMPLES / "training_loop.py")],
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("4 devices")
    assert "test AUC" in result.stdout and "over 4 devices" in result.stdout


README = Path(__file__).resolve().parents[1] / "README.md"


def test_every_readme_snippet_runs_as_pasted():
    """Each ```python block of the README, in a fresh namespace of its own (issue 25: the
    paired-bootstrap snippet used names it never defined)."""
    blocks = re.findall(r"^```python\n(.*?)^```", README.read_text(), re.S | re.M)
    assert len(blocks) >= 4
    for block in blocks:
        namespace = {"__name__": "readme"}
        exec(compile(block, "README.md", "exec"), namespace)  # noqa: S102
    assert float(namespace["ks_statistic"]([0.9, 0.1, 0.8, 0.2], [1, 0, 0, 1])) == 0.5
