"""Two processes x two CPU devices over gloo on localhost (``jax.distributed``).

The checks live in multiprocess_checks.py, run once per process in fresh interpreters (the
device count and the distributed runtime must be set before JAX starts).
"""

import socket
import subprocess
import sys
from pathlib import Path


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("localhost", 0))
        return probe.getsockname()[1]


def test_two_processes_of_two_devices():
    script = Path(__file__).with_name("multiprocess_checks.py")
    port = str(_free_port())
    workers = [
        subprocess.Popen(
            [sys.executable, str(script), str(process), port],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
        for process in (0, 1)
    ]
    outputs = []
    try:
        for worker in workers:
            outputs.append(worker.communicate(timeout=240)[0])
    finally:
        for worker in workers:
            worker.kill()
    for process, (worker, output) in enumerate(zip(workers, outputs)):
        assert worker.returncode == 0, output
        assert f"process {process}: ALL OK" in output, output
