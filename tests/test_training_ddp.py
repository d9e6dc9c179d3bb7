"""The same entry point under torchrun: two CPU processes, gloo backend."""

import json
import os
import subprocess
import sys

import pytest
from conftest import ROOT, run_cli

from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.checkpoint.sources import describe_source
from albert_lab.training.runs import read_run

ARGS = ["train", "--preset", "lab-tiny", "--hidden", "32", "--layers", "2", "--heads", "2", "--embedding", "16",
        "--corpus", "wiki-vital[:600]", "--vocab-size", "1000", "--seq-len", "64", "--batch-size", "8", "--steps", "12",
        "--log-every", "4", "--eval-every", "1000", "--gradflow-every", "6", "--checkpoint-every", "6",
        "--threads", "1", "--foreground"]
pytestmark = pytest.mark.xdist_group("ddp")  # one worker: the single run below is made once for both tests


@pytest.fixture(scope="module")
def single(tmp_path_factory):
    """The run of ARGS in one process (in this one: the torchrun tests' processes are what they test),
    for both tests: the one DDP is compared with, and the start and teacher of the distilled run."""
    runs = tmp_path_factory.mktemp("single-runs")
    done = run_cli(*ARGS, "--run-id", "single", env={"ALBERT_LAB_RUNS": str(runs)})
    assert done.returncode == 0, done.stderr[-3000:]
    return runs / "single"


@pytest.mark.slow
def test_torchrun_two_processes_gloo(tmp_path, single):
    env = {**os.environ, "ALBERT_LAB_RUNS": str(tmp_path / "runs"), "OMP_NUM_THREADS": "1"}
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          "-m", "albert_lab", *ARGS, "--run-id", "ddp"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stdout[-3000:] + ddp.stderr[-3000:]
    runs = tmp_path / "runs"
    info = read_run(runs / "ddp")
    assert info.status == "succeeded" and json.loads((runs / "ddp" / "run.json").read_text())["world_size"] == 2
    assert load_checkpoint(runs / "ddp" / "checkpoint").card["provenance"]["steps"] == 12
    ddp_rows = [m for m in info.metrics() if m["kind"] == "train"]
    single_rows = [m for m in read_run(single).metrics() if m["kind"] == "train"]
    assert [m["step"] for m in ddp_rows] == [m["step"] for m in single_rows] == [1, 4, 8, 12]
    # Same global batches; DDP averages the two halves' gradients, so the runs agree closely.
    assert abs(ddp_rows[-1]["loss"] - single_rows[-1]["loss"]) < 0.05
    assert ddp_rows[-1]["tokens"] == single_rows[-1]["tokens"]  # tokens counted over both ranks
    # rank 0 alone tells the run's story: every rank printed every log line (issue 26's walk)
    log = ddp.stdout + ddp.stderr
    assert log.count(" training ALBERT") == 1 and log.count("run succeeded at step 12") == 1, log[-3000:]


@pytest.mark.slow
def test_torchrun_with_a_teacher(tmp_path, single):
    """Each rank loads the frozen teacher for itself; DDP never sees it (it is no parameter of
    the loss module), so the distilled run trains under torchrun as in one process."""
    env = {**os.environ, "ALBERT_LAB_RUNS": str(tmp_path / "runs"), "OMP_NUM_THREADS": "1"}
    start = str(single / "checkpoint")
    up = ["train", "--init-from", start, "--distil-from", start, "--objective", "sop", "--corpus", "wiki-vital[:600]",
          "--seq-len", "64", "--batch-size", "8", "--steps", "4", "--log-every", "2", "--eval-every", "1000",
          "--gradflow-every", "1000", "--checkpoint-every", "1000", "--threads", "1", "--foreground"]
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          "-m", "albert_lab", *up, "--run-id", "taught"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stdout[-3000:] + ddp.stderr[-3000:]
    rows = [m for m in read_run(tmp_path / "runs" / "taught").metrics() if m["kind"] == "train"]
    assert [m["step"] for m in rows] == [1, 2, 4] and rows[0]["distil_loss"] < 1e-5  # its own start: nothing to learn yet
    assert load_checkpoint(tmp_path / "runs" / "taught" / "checkpoint").card["provenance"]["distilled_from"]["folder"] == describe_source(start)
