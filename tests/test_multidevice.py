"""Multi-device behaviour, checked in a subprocess with four emulated CPU devices.

XLA_FLAGS must be set before JAX starts, so the checks live in multidevice_checks.py and run in
a fresh interpreter.
"""

import subprocess
import sys
from pathlib import Path

import pytest


@pytest.mark.parametrize("name", ["multidevice_checks.py", "multidevice_registry_checks.py"])
def test_four_emulated_devices(name):
    script = Path(__file__).with_name(name)
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ALL OK" in result.stdout
