"""The uptraining sweep (`albert-lab relax --ranks ... --uptrain STEPS`): every member trained on the same
batches and measured before and after; rank 0 is a plain `train --init-from` of the albertized model; a
sweep killed with -9, or cancelled, resumes to the same numbers; bad input in one line."""

import json
import os
import shlex
import signal
import time

import pytest
import torch
from conftest import CORPUS, one_line_error, run_cli, save_bert
from safetensors.torch import load_file

from albert_lab.runfolder import read_jsonl
from albert_lab.training.runs import read_run

# Tiny: the fixture BERT (H = 32, 3 layers), 8 pairs of 64 tokens a step, 8 held-out pairs per task.
SETTINGS = dict(corpus=CORPUS, batch_size=8, max_seq_len=64, lr=2e-3, warmup_steps=4, threads=1, log_every=5,
                checkpoint_every=10, seed=0)
STEPS = 20
NUMBERS = ["parameters", "mlm_accuracy", "mlm_n", "pair_accuracy", "pair_n", "kl", "roughness", "energy_kept"]


@pytest.fixture
def source(tmp_path, tokenizer):
    return save_bert(tmp_path / "bert", tokenizer)[0]


def plan_of(source, **changes):
    from albert_lab.training.sweep_plan import SweepPlan

    return SweepPlan(**{"source": str(source), "ranks": ("0", "2"), "pairs": 8, **changes})


def config_of(source, steps=STEPS, **changes):
    from albert_lab.training.sweep_plan import sweep_config

    return sweep_config(source, steps, **{**SETTINGS, **changes})


def numbers(frame):
    return frame.set_index("model")[NUMBERS]


def test_a_sweep_trains_each_model_on_the_same_batches_and_measures_it_before_and_after(source):
    from albert_lab.training.sweep import read_sweep, start_sweep
    from albert_lab.training.sweep_plan import member_dir

    plan = plan_of(source, layers=(2,))
    info = start_sweep(config_of(source), plan, foreground=True)
    assert info.status == "succeeded", info.message
    result = read_sweep(info.path)
    names = ["ALBERT (rank 0)", "rank 2", "BERT L=2", "source BERT"]
    assert list(result.before.model) == list(result.after.model) == names
    assert list(result.after["end"]) == ["ALBERT", "", "fewer layers", "source BERT"]
    before, after = numbers(result.before), numbers(result.after)
    assert before.loc["source BERT", "kl"] == 0 and after.loc["source BERT", "kl"] > 0  # against the source as it was
    assert (after.kl != before.kl).all() and (after.parameters == before.parameters).all()
    assert before.loc["ALBERT (rank 0)", "parameters"] < before.loc["rank 2", "parameters"] < before.loc["source BERT", "parameters"]
    assert result.after.mlm_n.nunique() == 1 and result.after.mlm_n.iloc[0] > 0  # the same masked tokens for every model
    assert ((result.after.mlm_low <= result.after.mlm_accuracy) & (result.after.mlm_accuracy <= result.after.mlm_high)).all()
    tokens = set()
    for member in plan.members():  # each trained its steps from its own start, on the same batches
        folder = member_dir(info.path, member)
        card = json.loads((folder / "checkpoint" / "albert_lab.json").read_text())
        assert card["provenance"]["steps"] == STEPS
        tokens.add(card["provenance"]["tokens"])
        run = read_run(folder)
        assert run.status == "succeeded" and run.config["seed"] == 0
        assert run.config["init_from"] == str(plan.source if member.kind == "source" else folder / "init")
    assert tokens == {result.tokens}
    assert read_run(info.path).step == read_run(info.path).total_steps == STEPS * 4


def test_rank_zero_is_a_plain_train_init_from_of_the_albertized_model(source, tmp_path):
    """The sweep's rank-0 model equals `albertize` then `train --init-from` with the member's own command:
    the same budget, seed and batches give the same weights, bit for bit."""
    from albert_lab.training.sweep import start_sweep
    from albert_lab.training.sweep_plan import member_dir

    plan = plan_of(source, ranks=("0",))
    info = start_sweep(config_of(source, steps=12), plan, foreground=True)
    member = plan.members()[0]
    trained = member_dir(info.path, member)
    albertized = tmp_path / "albertized"
    done = run_cli("albertize", "--checkpoint", str(source), "--embedding", "32", "--out", str(albertized))
    assert done.returncode == 0, done.stderr
    command = shlex.split(read_run(trained).config["command"])  # albert-lab train --init-from <its init> ...
    assert command[:4] == ["albert-lab", "train", "--init-from", str(trained / "init")]
    plain = run_cli("train", "--init-from", str(albertized), *command[4:], "--foreground", "--runs-dir", str(tmp_path / "plain"),
                    "--run-id", "plain")
    assert plain.returncode == 0, plain.stderr
    ours, theirs = (load_file(str(folder / "model.safetensors"))
                    for folder in (trained / "checkpoint", tmp_path / "plain" / "plain" / "checkpoint"))
    assert ours.keys() == theirs.keys()
    assert all(torch.equal(ours[k], theirs[k]) for k in ours), [k for k in ours if not torch.equal(ours[k], theirs[k])]
    start = load_file(str(albertized / "model.safetensors"))
    assert any(not torch.equal(start[k], ours[k]) for k in start if k in ours)  # and it trained


def _wait(predicate, what, timeout=240.0):
    end = time.time() + timeout
    while time.time() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def _member_step(folder) -> int:
    rows = read_jsonl(folder / "metrics.jsonl") if (folder / "metrics.jsonl").is_file() else []
    return max([r.get("step", 0) for r in rows], default=0)


@pytest.mark.slow
def test_a_sweep_killed_with_9_resumes_to_the_same_numbers(source, tmp_path):
    from albert_lab.training.jobs import resume_run
    from albert_lab.training.sweep import read_sweep, start_sweep
    from albert_lab.training.sweep_plan import member_dir

    plan, config = plan_of(source), config_of(source, steps=40)
    straight = start_sweep(config, plan, tmp_path / "straight", foreground=True)
    killed = start_sweep(config, plan, tmp_path / "killed")  # in the background, its own process
    second = member_dir(killed.path, plan.members()[1])  # rank 2: killed after its first checkpoint, before its end
    _wait(lambda: _member_step(second) >= 15, "the second model's step 15")
    os.kill(read_run(killed.path).raw["pid"], signal.SIGKILL)
    _wait(lambda: read_run(killed.path).status == "failed", "the failed status")
    assert "ended without finishing" in read_run(killed.path).message
    resume_run(killed.path, foreground=True)
    assert read_run(killed.path).status == "succeeded"
    rows = read_jsonl(second / "metrics.jsonl")
    assert [r["step"] for r in rows if r["kind"] == "resume"] in ([10], [20])  # from its last checkpoint
    first = member_dir(killed.path, plan.members()[0])
    assert not [r for r in read_jsonl(first / "metrics.jsonl") if r["kind"] == "resume"]  # done before the kill: not redone
    want, got = read_sweep(straight.path), read_sweep(killed.path)
    assert numbers(got.before).equals(numbers(want.before)), (numbers(got.before), numbers(want.before))
    assert numbers(got.after).equals(numbers(want.after)), (numbers(got.after), numbers(want.after))


def test_a_cancelled_sweep_ends_cancelled_and_resumes_to_the_same_numbers(source, tmp_path, monkeypatch):
    from albert_lab.training.jobs import resume_run
    from albert_lab.training.loop import Trainer
    from albert_lab.training.sweep import read_sweep, start_sweep
    from albert_lab.training.sweep_plan import member_dir

    plan, config = plan_of(source, ranks=("2",)), config_of(source)
    straight = start_sweep(config, plan, tmp_path / "straight", foreground=True)
    periodic = Trainer._periodic

    def cancel_at_step_10(self, batch, lr):  # as if someone pressed Cancel on the sweep at the first member's step 10
        periodic(self, batch, lr)
        if self.progress.step == 10 and self.stop_file is not None:
            self.stop_file.touch()

    monkeypatch.setattr(Trainer, "_periodic", cancel_at_step_10)
    cut = start_sweep(config, plan, tmp_path / "cut", foreground=True)
    monkeypatch.undo()
    assert cut.status == "cancelled" and "resume" in cut.message
    first = member_dir(cut.path, plan.members()[0])
    assert read_run(first).status == "cancelled" and read_sweep(cut.path).after is None
    resume_run(cut.path, foreground=True)
    assert read_run(cut.path).status == "succeeded"
    assert numbers(read_sweep(cut.path).after).equals(numbers(read_sweep(straight.path).after))


def test_the_command_prints_both_curves(source, tmp_path):
    args = ["relax", "--checkpoint", str(source), "--ranks", "0,2", "--uptrain", "6", "--pairs", "8", "--corpus", CORPUS,
            "--batch-size", "8", "--warmup", "2", "--threads", "1", "--foreground", "--runs-dir",
            str(tmp_path / "runs"), "--run-id", "s"]
    result = run_cli(*args, "--json")
    assert result.returncode == 0, result.stderr
    done = json.loads(result.stdout)
    assert done["status"] == "succeeded" and done["steps"] == 6 and done["tokens"] > 0
    config = read_run(tmp_path / "runs" / "s").config  # the sweep's own defaults where no flag was given
    assert config["checkpoint_every"] == 2 and config["max_seq_len"] == 64 and config["warmup_steps"] == 2
    assert [r["model"] for r in done["before"]] == [r["model"] for r in done["after"]] == ["ALBERT (rank 0)", "rank 2",
                                                                                           "source BERT"]
    shown = run_cli("relax", "--show", "s", "--runs-dir", str(tmp_path / "runs"))
    assert shown.returncode == 0, shown.stderr
    assert "before training" in shown.stdout and "after 6 steps" in shown.stdout and "% of the source's" in shown.stderr


def test_bad_sweeps_are_one_line(source, tmp_path, shipped):
    base = ["relax", "--checkpoint", str(source), "--seq-len", "64"]
    for args, words in [(["--rank", "2", "--uptrain", "5"], "give --ranks"),
                        (["--ranks", "0,40", "--uptrain", "5"], "above full rank"),
                        (["--ranks", "0", "--uptrain", "5", "--layers", "3"], "--layers: 3 is not between 1 and 2"),
                        (["--ranks", "0", "--uptrain", "5", "--layers", "two"], "not whole numbers"),
                        (["--ranks", "0", "--uptrain", "0"], "at least 1 step"),
                        (["--ranks", "0", "--batch-size", "4"], "add --uptrain"),
                        (["--ranks", "0", "--uptrain", "5", "--resume", "x"], "--resume and --show name a sweep")]:
        one_line_error(run_cli(*base, *args, "--runs-dir", str(tmp_path / "runs")), words)
    one_line_error(run_cli("relax", "--checkpoint", str(shipped / "albert-sop"), "--ranks", "0", "--uptrain", "5"), "already shared")
    one_line_error(run_cli("relax"), "give --checkpoint")
    run = tmp_path / "plain"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({"id": "plain", "status": "succeeded", "config": {}}))
    one_line_error(run_cli("relax", "--show", str(run)), "a training run, not a sweep")
    assert not (tmp_path / "runs").exists() or not list((tmp_path / "runs").iterdir())  # nothing made by the refused sweeps


def test_a_shallow_bert_keeps_evenly_spaced_layers_whole(tokenizer, tmp_path):
    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.shallow import kept_layers, shallow

    assert kept_layers(6, 3) == [0, 2, 4] and kept_layers(6, 1) == [0] and kept_layers(4, 2) == [0, 2]
    source = save_bert(tmp_path / "four", tokenizer, layers=4)[0]
    out = shallow(source, tmp_path / "two", 2)
    small, big = (load_checkpoint(folder, device="cpu") for folder in (out, source))
    assert small.spec.num_layers == 2 and small.heads.mlm == big.heads.mlm and small.heads.pair == big.heads.pair
    theirs = big.model.state_dict()
    for name, value in small.model.state_dict().items():  # its layer 1 is the source's layer 2; all else as it was
        assert torch.equal(value, theirs[name.replace("encoder.layer.1.", "encoder.layer.2.")]), name
    assert "layers 1, 3 of" in small.card["provenance"]["origin"]


def test_a_sweep_can_distil_every_model_from_the_source(source):
    from albert_lab.training.sweep import start_sweep
    from albert_lab.training.sweep_plan import member_dir

    plan = plan_of(source, ranks=("2",), layers=(1,))
    info = start_sweep(config_of(source, steps=4, distil_from=str(source)), plan, foreground=True)
    assert info.status == "succeeded", info.message
    for member in plan.members():  # the relaxed model, a BERT of one layer and the source itself, each taught alike
        card = json.loads((member_dir(info.path, member) / "checkpoint" / "albert_lab.json").read_text())
        assert card["provenance"]["distilled_from"]["hidden_states_matched"][0] == 0
