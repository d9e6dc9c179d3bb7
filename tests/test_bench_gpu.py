"""benchmarks/bench_gpu.py stays ready for a GPU: its --smoke run (tiny shapes, on the CPU)
goes through every part and writes real numbers."""

import json
import math
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def numbers(value):
    """Every number in a nested JSON value."""
    if isinstance(value, dict):
        return [n for v in value.values() for n in numbers(v)]
    if isinstance(value, list):
        return [n for v in value for n in numbers(v)]
    return [value] if isinstance(value, (int, float)) and not isinstance(value, bool) else []


@pytest.mark.slow
def test_bench_gpu_smoke_writes_real_numbers(tmp_path):
    out = tmp_path / "bench.json"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "OMP_NUM_THREADS": "1"}  # one core: the other test worker has the other
    done = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_gpu.py"), "--smoke", "--json", str(out)],
                          capture_output=True, text=True, env=env, cwd=tmp_path, timeout=600)
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(out.read_text())
    assert result["smoke"] is True and result["device"]
    assert [(row["shape"].split(",")[0], row["optimizer"]) for row in result["training"]] == [
        ("ALBERT-base", "lamb"), ("MiniLM uptraining", "adamw")]  # both families, both optimizers
    for row in result["training"]:
        for key in ("albert_lab_tokens_per_s", "loop_tokens_per_s", "ratio", "albert_lab_mfu", "loop_mfu"):
            assert row[key]["min"] > 0, (row["shape"], key)
        assert 0 <= row["wait_share"]["median"] < 1
    (score,) = result["score"]  # --smoke: 40 pairs only
    assert score["pairs"] == 40 and score["albert_lab_command_s"]["median"] > 0 and score["loop_s"]["median"] > 0
    # The command scores what the loop scores. In fp32 on both sides (the CPU) only padding and batch composition
    # differ (the order of fp32 sums): a dot product of H terms is off by at most H x 6e-8 relative (H = 768: 5e-5),
    # and a probability by at most a quarter of its logits' difference. On a GPU the command's reduced precision adds
    # at most its bound.
    assert score["max_abs_difference"] < 1e-4 + (score["bound"] or 0)
    assert all(result["analyses"][f"{k}_s"]["median"] > 0 for k in ("oscillation", "gradient_flow", "logit_lens"))
    assert result["bf16_matmul_peak_tflops"]["median"] > 0
    assert all(math.isfinite(n) for n in numbers(result))
    assert "<!-- bench_gpu: start -->" in done.stdout  # the table it would write into docs/benchmarks.md
