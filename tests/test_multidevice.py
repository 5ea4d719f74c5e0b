"""Multi-device behaviour, checked in a subprocess with four emulated CPU devices.

XLA_FLAGS must be set before JAX starts, so the checks live in multidevice_checks.py and run in
a fresh interpreter.
"""

import subprocess
import sys
from pathlib import Path


def test_four_emulated_devices():
    script = Path(__file__).with_name("multidevice_checks.py")
    result = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "ALL OK" in result.stdout
