"""The downstream example ``examples/longtools`` passes its own test suite on the installed mcp.

It is run as its author would run it (``python -m pytest`` in its folder, the testing kit's
plugin loading itself), so every tests session of the matrix (1.23.0, 1.30.0, 2.x) runs it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "longtools"


def test_longtools_suite_passes() -> None:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(EXAMPLE), os.environ.get("PYTHONPATH", "")])}
    completed = subprocess.run(
        [sys.executable, "-m", "pytest", "-q"],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    output = completed.stdout + completed.stderr
    assert completed.returncode == 0, output
    assert " passed" in output, output
    assert "failed" not in output, output
    assert "skipped" not in output, output


def test_longtools_server_runs_over_stdio_as_a_module() -> None:
    """``python -m longtools`` is the entry point the example documents (stdin closed: it exits)."""
    env = {**os.environ, "PYTHONPATH": str(EXAMPLE)}
    completed = subprocess.run(
        [sys.executable, "-m", "longtools"],
        cwd=EXAMPLE,
        env=env,
        input="",
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert completed.returncode == 0, completed.stderr
