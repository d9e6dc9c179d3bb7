"""benchmarks/bench_notebook.py runs through, briefly: the notebook's verb and the app's page on the same texts,
the page showing the notebook's verdicts, and every figure it prints a number."""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.slow
def test_bench_notebook_prints_both_doors_and_their_ratio(shipped, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(ROOT), "ALBERT_LAB_CHECKPOINTS": str(shipped), "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_notebook.py"), "--rounds", "2", "--warmup", "0",
                           "--texts", "2"], capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    out = done.stdout
    for side in ("notebook", "notebook, loaded", "app"):
        (line,) = [line for line in out.splitlines() if re.match(rf"\s+{side}\s+median ", line)]
        median, low, high = map(float, re.search(r"median ([\d.]+) s \[([\d.]+)-([\d.]+)\]", line).groups())
        assert 0 < low <= median <= high, line
    assert re.search(r"notebook / app: median [\d.]+x \[[\d.]+-[\d.]+\]; target: within 1.2x \((met|NOT met)\)", out), out
