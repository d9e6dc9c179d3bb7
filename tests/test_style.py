"""The code style is checked by the test command (ruff, configured in pyproject.toml)."""

import subprocess
import sys

from conftest import ROOT


def test_ruff_finds_nothing():
    result = subprocess.run([sys.executable, "-m", "ruff", "check", "--no-cache", str(ROOT)], capture_output=True, text=True, cwd=ROOT)
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-1000:]
