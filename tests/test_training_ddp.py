"""The same entry point under torchrun: two CPU processes, gloo backend, each rank with its own frozen teacher."""

import json
import os
import subprocess
import sys

import pytest
from conftest import CORPUS, ROOT, run_cli

from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.checkpoint.sources import describe_source
from albert_lab.training.runs import read_run

START = ["train", "--preset", "lab-tiny", "--hidden", "32", "--layers", "2", "--heads", "2", "--embedding", "16",
         "--corpus", CORPUS, "--vocab-size", "1000", "--seq-len", "64", "--batch-size", "8", "--steps", "4",
         "--log-every", "4", "--eval-every", "1000", "--gradflow-every", "1000", "--checkpoint-every", "1000",
         "--threads", "1", "--foreground"]


@pytest.mark.slow
def test_torchrun_two_processes_gloo_train_as_one_each_rank_with_its_teacher(tmp_path):
    """A run that starts from a checkpoint and distils from it, in one process and under torchrun with
    two: each rank loads the frozen teacher for itself (DDP never sees it: it is no parameter of the loss
    module), both see the same global batches and DDP averages the halves' gradients, so the losses agree
    closely; tokens are counted over both ranks, and rank 0 alone tells the run's story (every rank
    printed every log line: issue 26's walk)."""
    runs = tmp_path / "runs"
    made = run_cli(*START, "--run-id", "start", env={"ALBERT_LAB_RUNS": str(runs)})  # in this process: it is not tested
    assert made.returncode == 0, made.stderr[-3000:]
    start = str(runs / "start" / "checkpoint")
    taught = ["train", "--init-from", start, "--distil-from", start, "--objective", "sop", "--corpus", CORPUS,
              "--seq-len", "64", "--batch-size", "8", "--steps", "8", "--log-every", "4", "--eval-every", "1000",
              "--gradflow-every", "4", "--checkpoint-every", "4", "--threads", "1", "--foreground"]
    single = run_cli(*taught, "--run-id", "single", env={"ALBERT_LAB_RUNS": str(runs)})
    assert single.returncode == 0, single.stderr[-3000:]
    env = {**os.environ, "ALBERT_LAB_RUNS": str(runs), "OMP_NUM_THREADS": "1"}
    ddp = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc_per_node=2",
                          "-m", "albert_lab", *taught, "--run-id", "ddp"], cwd=ROOT, env=env, capture_output=True,
                         text=True, timeout=600)
    assert ddp.returncode == 0, ddp.stdout[-3000:] + ddp.stderr[-3000:]
    info = read_run(runs / "ddp")
    assert info.status == "succeeded" and json.loads((runs / "ddp" / "run.json").read_text())["world_size"] == 2
    card = load_checkpoint(runs / "ddp" / "checkpoint").card
    assert card["provenance"]["steps"] == 8 and card["provenance"]["distilled_from"]["folder"] == describe_source(start)
    ddp_rows = [m for m in info.metrics() if m["kind"] == "train"]
    single_rows = [m for m in read_run(runs / "single").metrics() if m["kind"] == "train"]
    assert [m["step"] for m in ddp_rows] == [m["step"] for m in single_rows] == [1, 4, 8]
    assert ddp_rows[0]["distil_loss"] < 1e-5  # its own start: nothing to learn yet
    assert abs(ddp_rows[-1]["loss"] - single_rows[-1]["loss"]) < 0.05
    assert ddp_rows[-1]["tokens"] == single_rows[-1]["tokens"]  # tokens counted over both ranks
    log = ddp.stdout + ddp.stderr
    assert log.count(" training ALBERT") == 1 and log.count("run succeeded at step 8") == 1, log[-3000:]
