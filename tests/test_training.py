"""Training runs: run folders, checkpoints, kill -9 and resume, cancel, the queue, launches in one second, bad input."""

import itertools
import json
import math
import os
import shutil
import signal
import threading
import time
from pathlib import Path

import pytest
from conftest import CORPUS, cancel_then_resume, one_line_error, run_cli, tiny_spec

from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.errors import AlbertLabError, DataError, RunError, SpecError
from albert_lab.runfolder import read_jsonl, write_json_atomic
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import cancel_run, create_run, resume_run, start_run
from albert_lab.training.runs import claim_run_dir, list_runs, read_run, update_run
from albert_lab.training.worker import run_worker


def config(**changes) -> TrainConfig:
    base = dict(spec=tiny_spec(1000, num_layers=2, hidden_size=32).to_dict(), corpus=CORPUS, vocab_size=1000,
                max_seq_len=64, batch_size=8, max_steps=20, warmup_steps=5, lr=2e-3, log_every=5, eval_every=10,
                eval_limit=32, checkpoint_every=10, gradflow_every=10, seed=0, threads=1)
    return TrainConfig(**{**base, **changes})


def test_twenty_steps_write_the_run_folder_and_a_loadable_checkpoint(tmp_path):
    run_dir, _ = create_run(config(name="smoke"))
    assert run_worker(run_dir) == "succeeded"
    assert {"run.json", "metrics.jsonl", "gradflow.jsonl", "checkpoint", "log.txt"} <= {p.name for p in run_dir.iterdir()}
    info = read_run(run_dir)
    assert info.status == "succeeded" and info.step == 20
    train_rows = [m for m in info.metrics() if m["kind"] == "train"]
    assert [m["step"] for m in train_rows] == [1, 5, 10, 15, 20]
    assert all(m["tokens_per_s"] > 0 and 0 <= m["mlm_acc"] <= 1 for m in train_rows)
    final = next(m for m in info.metrics() if m.get("final"))
    assert {"eval_mlm_acc", "eval_nsp_acc", "eval_sop_acc", "eval_sop_interior_acc"} <= set(final)
    snapshots = info.gradflow()
    assert [s["step"] for s in snapshots] == [10, 20]
    assert {r["view"] for r in snapshots[0]["rows"]} == {"per_application", "shared_sum", "hidden", "outside"}
    bundle = load_checkpoint(run_dir / "checkpoint")
    assert bundle.heads.pair == "trained" and bundle.spec.num_layers == 2
    provenance = bundle.card["provenance"]
    assert provenance["steps"] == 20 and provenance["seed"] == 0 and provenance["wall_time_s"] > 0
    assert "CC BY-SA" in provenance["corpus_credit"]


def test_a_run_without_a_pair_task_logs_no_pair_metric(capfd):
    """Under objective 'none' the batches' pair labels are fillers (every pair in order): an
    untrained head that says 0 scored 'pair_acc' 1.0 on them. Not measured is absent."""
    info = start_run(config(name="nopair", objective="none", max_steps=6, log_every=2, eval_every=3,
                            checkpoint_every=100, gradflow_every=100), foreground=True)
    # nor the held-out NSP and SOP accuracy of a pair head nothing trained (the Runs tab drew it at chance)
    evals = [r for r in read_jsonl(info.folder.metrics) if r.get("kind") == "eval"]
    assert [r["step"] for r in evals] == [3, 6, 6] and evals[-1].get("final")
    assert all(0 <= r["eval_mlm_acc"] <= 1 and not any(k.startswith(("eval_nsp", "eval_sop")) for k in r) for r in evals)
    rows = info.metrics("train")
    assert [r["step"] for r in rows] == [1, 2, 4, 6]
    assert all("pair_acc" not in r and "pair_loss" not in r and 0 <= r["mlm_acc"] <= 1 for r in rows)
    assert all("pair_acc" not in r for r in read_jsonl(info.folder.metrics))  # the file itself, not only its reader
    printed = capfd.readouterr()
    assert "step 6: loss" in printed.out + printed.err and ", pair " not in printed.out + printed.err
    sop = start_run(config(name="sop", max_steps=2, log_every=1, eval_every=100, checkpoint_every=100,
                           gradflow_every=100), foreground=True)
    assert all(0 <= r["pair_acc"] <= 1 and r["pair_loss"] > 0 for r in sop.metrics("train"))


def test_runs_logged_before_read_no_pair_metric_under_none(tmp_path):
    """A 'none' run's metrics.jsonl written before carries pair_acc 1.0: its readers drop it."""
    run = tmp_path / "20261122-000000-old-1"
    run.mkdir()
    write_json_atomic(run / "run.json", {"id": run.name, "status": "succeeded", "created": 1.0, "step": 1,
                                         "config": {"objective": "none", "name": "old"}})
    (run / "metrics.jsonl").write_text(json.dumps({"kind": "train", "step": 1, "loss": 9.0, "mlm_loss": 9.0, "pair_loss": 0.0,
                                                   "mlm_acc": 0.1, "pair_acc": 1.0}) + "\n")
    (run / "metrics.jsonl").write_text(run.joinpath("metrics.jsonl").read_text() + json.dumps(
        {"kind": "eval", "step": 1, "eval_mlm_acc": 0.2, "eval_nsp_acc": 0.5, "eval_sop_acc": 0.49, "eval_sop_pairs": 64}) + "\n")
    (row,) = read_run(run).metrics("train")
    assert row["mlm_acc"] == 0.1 and "pair_acc" not in row and "pair_loss" not in row
    (held_out,) = read_run(run).metrics("eval")
    assert held_out == {"kind": "eval", "step": 1, "eval_mlm_acc": 0.2}


def test_a_foreground_run_prepares_its_corpus_once_and_a_worker_from_the_checked_caches(monkeypatch):
    from albert_lab.data import pairs
    from albert_lab.training import jobs, loop, prepare

    calls, instances = [], []
    counting = lambda config, checked=False, cache_quota=None: calls.append(checked) or prepare.prepare(config, checked, cache_quota)
    monkeypatch.setattr(jobs, "prepare", counting)
    monkeypatch.setattr(loop, "prepare", counting)
    monkeypatch.setattr(prepare, "create_instances", lambda *a, **k: instances.append(1) or pairs.create_instances(*a, **k))
    info = start_run(config(name="once", max_steps=2, eval_every=100, checkpoint_every=100, gradflow_every=100),
                     foreground=True)
    assert info.status == "succeeded" and calls == [False] and instances == [1]  # the launch's check, handed over
    checked = prepare.prepare(config(), checked=True)  # what a background worker does: no pair count, same data
    full = prepare.prepare(config())
    assert instances == [1, 1] and checked.spec == full.spec and checked.eval_pairs.equals(full.eval_pairs)
    assert (checked.train_docs.ids == full.train_docs.ids).all()


def test_the_last_steps_are_logged_when_not_a_multiple_of_log_every(monkeypatch, capfd):
    from albert_lab.training import evaluation
    from albert_lab.training.evaluation import HeldOut

    run_dir, _ = create_run(config(name="odd", max_steps=7, eval_every=100, checkpoint_every=100, gradflow_every=100))
    seen, score = [], HeldOut._score
    def final_evaluation(self, limit, tasks):  # what run.json says while the last evaluation runs
        seen.append((limit, tuple(tasks), json.loads((run_dir / "run.json").read_text())["message"]))  # (no worker here)
        return score(self, limit, tasks)
    monkeypatch.setattr(HeldOut, "_score", final_evaluation)
    monkeypatch.setattr(evaluation, "FINAL_EVAL_SHARE", 0.0)  # the smallest sample: the calibration's size
    assert run_worker(run_dir) == "succeeded"
    assert seen[0][:2] == (evaluation.CALIBRATION_ROWS, evaluation.TASKS)  # timed first, to size the sample
    assert [s[:2] for s in seen[1:]] == [(evaluation.CALIBRATION_ROWS, (task,)) for task in evaluation.TASKS]
    assert all(message.startswith("final evaluation: ") for *_, message in seen[1:]), seen
    assert "a sample sized to the run" in seen[1][2] and "about" in seen[1][2] and "scored, about" in seen[2][2]
    assert read_run(run_dir).message == ""
    card = load_checkpoint(run_dir / "checkpoint").card
    evaluated = card["evaluation"]
    assert not evaluated["full"] and evaluated["evaluated_rows"] <= 3 * evaluation.CALIBRATION_ROWS < evaluated["held_out_rows"]
    assert card["metrics"]["sop"]["n"] <= evaluation.CALIBRATION_ROWS and card["metrics"]["sop"]["low"] < card["metrics"]["sop"]["high"]
    log = capfd.readouterr().out  # a worker's output is its log.txt
    assert f"final evaluation on {evaluated['evaluated_rows']:,} of {evaluated['held_out_rows']:,} held-out" in log
    assert "(95% intervals)" in log and "sop_interior" in log
    train_rows = [m for m in read_run(run_dir).metrics() if m["kind"] == "train"]
    assert [m["step"] for m in train_rows] == [1, 5, 7]
    assert [s["step"] for s in read_run(run_dir).gradflow()] == [7]  # the last step's snapshot, not one at 100
    assert train_rows[-1]["tokens"] == card["provenance"]["tokens"]



def test_full_eval_scores_every_held_out_pair(capfd):
    run_dir, _ = create_run(config(name="full", max_steps=2, eval_every=100, checkpoint_every=100, gradflow_every=100,
                                   full_eval=True))
    assert run_worker(run_dir) == "succeeded"
    evaluated = load_checkpoint(run_dir / "checkpoint").card["evaluation"]
    assert evaluated["full"] and evaluated["evaluated_rows"] == evaluated["held_out_rows"] > 100
    assert f"final evaluation on all {evaluated['held_out_rows']:,} held-out" in capfd.readouterr().out


def test_loss_decreases_with_a_fixed_seed():
    run_dir, _ = create_run(config(max_steps=120, log_every=20, eval_every=1000, gradflow_every=1000,
                                   checkpoint_every=1000, lr=5e-3, warmup_steps=10))
    assert run_worker(run_dir) == "succeeded"
    rows = [m for m in read_run(run_dir).metrics() if m["kind"] == "train"]
    losses = [m["loss"] for m in rows]
    assert losses[-1] < losses[0] - 0.5, losses
    assert all(b < a + 0.05 for a, b in itertools.pairwise(losses)), losses  # (almost) monotone
    assert rows[-1]["mlm_loss"] < math.log(1000) - 0.5  # better than guessing uniformly over the vocabulary


def wait_for(predicate, timeout=120.0, what="condition"):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.2)
    raise AssertionError(f"timed out waiting for {what}")


def _wait_step(run_dir: Path, step: int) -> None:
    wait_for(lambda: any(m.get("step", 0) >= step for m in read_jsonl(run_dir / "metrics.jsonl")), what=f"step {step}")


@pytest.mark.slow
def test_kill_9_then_resume_continues_from_the_checkpoint():
    info = start_run(config(max_steps=60, checkpoint_every=10, eval_every=1000, gradflow_every=1000))
    run_dir = info.path
    _wait_step(run_dir, 25)
    pid = read_run(run_dir).raw["pid"]
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: read_run(run_dir).status == "failed", what="failed status")
    dead = read_run(run_dir)
    assert "ended without finishing" in dead.message
    saved = load_checkpoint(run_dir / "checkpoint")  # complete, never partial
    saved_step = saved.card["provenance"]["steps"]
    assert saved_step >= 20 and saved_step % 10 == 0
    # A save cut short by the kill can only leave hidden copies behind: half-written
    # (.checkpoint.tmp-*) or superseded (.checkpoint.old-*); readers never see them.
    assert all(p.name.startswith((".checkpoint.tmp-", ".checkpoint.old-")) for p in run_dir.iterdir()
               if p.name.startswith(".checkpoint"))
    resume_run(run_dir)
    wait_for(lambda: read_run(run_dir).status == "succeeded", timeout=240, what="resumed run to finish")
    rows = read_run(run_dir).metrics()
    marker = next(i for i, m in enumerate(rows) if m["kind"] == "resume")
    assert rows[marker]["step"] == saved_step
    after = [m["step"] for m in rows[marker:] if m["kind"] == "train"]
    assert saved_step < after[0] <= saved_step + 5  # continues right after the checkpoint (log_every 5)
    assert after[-1] == 60 and after == sorted(set(after))
    assert "resumed from" in (run_dir / "log.txt").read_text()
    assert not [p for p in run_dir.iterdir() if p.name.startswith(".checkpoint")]  # resume cleaned up


@pytest.mark.parametrize("damage, words", [
    ("other-weights", "its weights have other shapes than this run's model"),  # was a RuntimeError traceback
    ("empty-state", "KeyError"),  # trainer_state.json of {}
    ("truncated-state", "cannot be resumed (SafetensorError"),
    ("no-step", "cannot be resumed (KeyError: 'step'"),
])
def test_resuming_a_damaged_checkpoint_fails_in_one_line(damage, words):
    run_dir, _ = create_run(config(name=f"damaged-{damage}", max_steps=4, eval_every=1000, gradflow_every=1000,
                                   checkpoint_every=1000))
    assert run_worker(run_dir) == "succeeded"
    folder = run_dir / "checkpoint"
    if damage == "other-weights":
        other, _ = create_run(config(name="wider", max_steps=1, spec=tiny_spec(1000, num_layers=2, hidden_size=64).to_dict(),
                                     eval_every=1000, gradflow_every=1000, checkpoint_every=1000))
        assert run_worker(other) == "succeeded"
        shutil.copy(other / "checkpoint" / "model.safetensors", folder / "model.safetensors")
    elif damage == "empty-state":
        (folder / "trainer_state.json").write_text("{}")
    elif damage == "no-step":
        state = json.loads((folder / "trainer_state.json").read_text())
        state.pop("step")
        (folder / "trainer_state.json").write_text(json.dumps(state))
    else:
        tensors = folder / "trainer_state.safetensors"
        tensors.write_bytes(tensors.read_bytes()[:7])
    update_run(run_dir, status="failed")
    resume_run(run_dir, foreground=True)
    info = read_run(run_dir)
    assert info.status == "failed" and "cannot be resumed" in info.message and words in info.message, info.message
    assert "Traceback" not in (run_dir / "log.txt").read_text()


def test_resumed_run_matches_an_uninterrupted_one(monkeypatch):
    settings = dict(max_steps=20, eval_every=1000, gradflow_every=1000, checkpoint_every=1000)
    straight, _ = create_run(config(name="straight", **settings))
    run_worker(straight)
    split, _ = create_run(config(name="split", **settings))
    cancel_then_resume(split, 10, monkeypatch)  # as if someone pressed cancel right after step 10
    a = {m["step"]: m["loss"] for m in read_run(straight).metrics() if m["kind"] == "train"}
    b = {m["step"]: m["loss"] for m in read_run(split).metrics() if m["kind"] == "train"}
    assert read_run(split).status == "succeeded" and sorted(b) == sorted(a)
    for step in (15, 20):  # the same batches, weights and optimizer state after the resume
        assert abs(a[step] - b[step]) < 1e-5 * abs(a[step]), (step, a[step], b[step])


def test_cancel_saves_and_ends_cancelled():
    info = start_run(config(max_steps=100_000, checkpoint_every=10_000, eval_every=10_000, gradflow_every=10_000))
    _wait_step(info.path, 5)
    cancel_run(info.path)
    wait_for(lambda: read_run(info.path).status == "cancelled", what="cancelled status")
    assert load_checkpoint(info.path / "checkpoint").card["provenance"]["steps"] >= 5
    with pytest.raises(RunError, match="only queued or running runs can be cancelled"):
        cancel_run(info.path)


def test_second_run_waits_in_the_queue():
    first = start_run(config(max_steps=100_000, name="first", eval_every=10_000, gradflow_every=10_000,
                             checkpoint_every=10_000))
    _wait_step(first.path, 1)
    second = start_run(config(max_steps=5, name="second"))
    third = start_run(config(max_steps=5, name="third"))
    time.sleep(3)
    assert read_run(second.path).status == "queued" and read_run(third.path).status == "queued"
    wait_for(lambda: "queued: another run in" in read_run(second.path).log_tail(), what="why it waits, in its log")
    cancel_run(third.path)  # cancelling a queued run ends it as cancelled, without training
    wait_for(lambda: read_run(third.path).status == "cancelled", what="queued run cancelled")
    assert read_run(third.path).step == 0
    cancel_run(first.path)
    wait_for(lambda: read_run(second.path).status == "succeeded", what="queued run to run")
    assert sorted(r.status for r in list_runs(first.path.parent)) == ["cancelled", "cancelled", "succeeded"]


def test_launches_in_the_same_second_get_distinct_run_folders(tmp_path):
    start, claimed = threading.Barrier(8), []

    def launch():
        start.wait()
        claimed.append(claim_run_dir(tmp_path, "same name"))

    threads = [threading.Thread(target=launch) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(claimed) == 8 and len({p.name for p in claimed}) == 8 and all(p.is_dir() for p in claimed)
    assert len({p.name.split("-same-name")[0] for p in claimed}) <= 2  # the same second (or two), told apart by suffix
    assert list_runs(tmp_path) == []  # claimed folders hold no run.json yet: readers skip them


def test_concurrent_atomic_writes_of_one_file_never_collide(tmp_path):
    path, errors = tmp_path / "run.json", []

    def write(n: int):
        try:
            for i in range(30):
                write_json_atomic(path, {"writer": n, "i": i})
        except OSError as err:
            errors.append(err)

    threads = [threading.Thread(target=write, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == [] and json.loads(path.read_text())["i"] == 29
    assert [p.name for p in tmp_path.iterdir()] == ["run.json"]


def test_corrupted_metrics_line_is_skipped(tmp_path):
    path = tmp_path / "metrics.jsonl"
    path.write_text('{"kind": "train", "step": 1}\n{"kind": "tra\n[1, 2]\n{"kind": "train", "step": 2}\n')
    assert [r["step"] for r in read_jsonl(path)] == [1, 2]


@pytest.mark.parametrize("changes, error, message", [
    (dict(lr=0.0), RunError, "lr: learning rate must be positive"),
    (dict(spec=tiny_spec(1000, num_layers=0).to_dict() if False else {**tiny_spec().to_dict(), "num_layers": 0}),
     SpecError, "num_layers: must be a positive integer"),
    (dict(vocab_size=50_000), DataError, "larger than this corpus supports"),
    (dict(max_seq_len=4096), RunError, "max_seq_len"),
])
def test_bad_config_fails_before_any_run_folder(changes, error, message, tmp_path):
    with pytest.raises(error, match=message):
        create_run(config(**changes))
    runs = Path(os.environ["ALBERT_LAB_RUNS"])
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".train")]


def test_bad_corpora_fail_before_any_run_folder(tmp_path):
    cases = {
        "empty.txt": (b"\n\n", "empty"),
        "single.txt": (b"Only one sentence.\n\nAnother lonely one.\n", "single segment"),
        "latin1.txt": ("Caf\u00e9 au lait. Tr\u00e8s bien.".encode("latin-1"), "not UTF-8"),
    }
    for name, (data, message) in cases.items():
        path = tmp_path / name
        path.write_bytes(data)
        with pytest.raises(AlbertLabError, match=message):
            create_run(config(corpus=str(path), vocab_size=100))
    runs = Path(os.environ["ALBERT_LAB_RUNS"])
    assert not runs.exists() or not [p for p in runs.iterdir() if not p.name.startswith(".")]


def test_unwritable_runs_folder(tmp_path):
    blocked = tmp_path / "blocked"
    blocked.write_text("a file where a folder should be")
    with pytest.raises(RunError, match="cannot write runs"):
        create_run(config(), root=blocked / "runs")


@pytest.mark.parametrize("flags, words", [
    (("--lr", "-1"), "--lr: learning rate must be positive"),
    (("--steps", "0"), "--steps: must be at least 1, got 0"),
    (("--seq-len", "3"), "--seq-len: must be between 16"),
    (("--distil-pair",), "--distil-pair: matches a teacher's pair head: needs --distil-from"),
])
def test_cli_train_bad_input_is_one_line_in_flags_before_any_work(tmp_path, flags, words):
    """The CLI named config fields ('max_steps: ...'), after printing 'preparing corpus'."""
    result = run_cli("train", "--preset", "lab-tiny", "--corpus", CORPUS, "--steps", "5", *flags, "--runs-dir", str(tmp_path))
    assert one_line_error(result, words) and "preparing corpus" not in result.stderr
    assert not list(tmp_path.iterdir())  # no run folder


def test_the_pair_weight_scales_the_pair_gradient_and_nothing_else(tokenizer):
    """--pair-weight w trains on MLM + w x pair: every parameter's gradient is the MLM gradient
    plus w times the pair gradient, each taken on its own, and w = 1 is the paper's loss bit for bit."""
    import torch
    from conftest import TEXTS

    from albert_lab.data.batching import batch_from_documents
    from albert_lab.data.corpus import Document, split_sentences
    from albert_lab.models import build_model
    from albert_lab.objective import PretrainingLoss

    docs = [Document(str(i), tuple(split_sentences(t))) for i, t in enumerate(TEXTS[:2] * 2)]
    batch = batch_from_documents(docs, tokenizer, "sop", 64, seed=0)
    model = build_model(tiny_spec(len(tokenizer), num_layers=2, hidden_size=32), seed=0)
    params = [p for p in model.parameters() if p.requires_grad]

    def grads(weight, part=None):
        out = PretrainingLoss(model, "sop", pair_weight=weight)(batch)
        loss = getattr(out, part) if part else out.loss
        return out, torch.autograd.grad(loss, params, allow_unused=True)

    plain, _ = grads(1.0)
    _, mlm = grads(1.0, "mlm_loss")
    _, pair = grads(1.0, "pair_loss")
    out, weighted = grads(7.0)
    assert out.loss.item() == pytest.approx(out.mlm_loss.item() + 7.0 * out.pair_loss.item(), rel=1e-6)
    assert plain.loss.item() == (plain.mlm_loss + plain.pair_loss).item()
    moved = 0
    for param, g, m, p in zip(params, weighted, mlm, pair):
        zero = torch.zeros_like(param)
        m, p = zero if m is None else m, zero if p is None else p
        torch.testing.assert_close(zero if g is None else g, m + 7.0 * p, rtol=1e-4, atol=1e-7)
        moved += bool(p.abs().sum() > 0 and m.abs().sum() == 0)  # the pooler and pair head: only the pair loss reaches them
    assert moved >= 2
    with pytest.raises(RunError, match="pair_weight: must be positive"):
        config(pair_weight=0.0).validate()
    with pytest.raises(RunError, match="pair_weight: must be a finite number"):
        config(pair_weight=float("inf")).validate()
