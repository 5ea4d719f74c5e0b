"""The examples run as a user runs them (quick modes), in a subprocess."""

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
    for part in (
        "well-specified, linear",
        "misspecified, mlp",
        "pairwise AUC",
        "Smooth-AP",
        "DeLong",
    ):
        assert part in result.stdout


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
