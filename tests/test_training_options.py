"""The options table: each training option written once, and what comes from it (the command
line's arguments, the Training form's widgets and bounds, the recorded command, validation,
which runs once per launch)."""

import dataclasses
import shlex

import pytest
from conftest import CORPUS, goto, one_line_error, run_cli

from albert_lab.errors import RunError
from albert_lab.limits import MAX_SEED
from albert_lab.training import jobs
from albert_lab.training.config import (
    MAX_LR,
    OPTIONS,
    OPTIONS_OF_CONFIG,
    SCRATCH_LR,
    UPTRAIN_LR,
    TrainConfig,
)
from albert_lab.training.options import SPEC_OPTIONS, Range
from albert_lab.training.recipe import browser_config, snapshots, uptrain_config
from app.rooms.training.form import ROWS as FORM_ROWS
from app.rooms.training.form import key
from app.rooms.training.widgets import WIDGETS

ROWS = {row.name: row for row in OPTIONS}
RUN_CONTROL = {"--preset", "--runs-dir", "--run-id", "--foreground", "--detach", "--resume", "--help"}  # how, not what, to train


def test_every_config_field_with_a_flag_is_an_argument_and_nothing_else_is():
    """The command line's `train` arguments are the table's flags and the flags that say how to run."""
    from albert_lab.cli import build_parser

    parser = build_parser()._subparsers._group_actions[0].choices["train"]
    flags = {s for action in parser._actions for s in action.option_strings if s.startswith("--")}
    assert flags - RUN_CONTROL == {row.flag for row in OPTIONS if row.flag}
    assert len({row.flag for row in OPTIONS if row.flag}) == len([row for row in OPTIONS if row.flag])  # no flag twice
    assert {f.name for f in dataclasses.fields(TrainConfig)} - {row.name for row in OPTIONS_OF_CONFIG} == \
        {"spec", "objective", "command"}  # the spec's rows set the first two; the third is the launch's


def test_a_bad_value_names_the_option_in_the_library_and_its_flag_on_the_command_line():
    """validate() speaks in fields; with flags=True in the command line's flags (its old map of
    fields to flags, a second copy of the table, is gone)."""
    base = TrainConfig(max_steps=5)
    cases = {"lr": 0.0, "batch_size": 0, "warmup_steps": -1, "seed": MAX_SEED + 1, "pair_weight": 0.0, "threads": 0,
             "optimizer": "sgd", "eval_limit": 0, "max_minutes": -1.0}
    for name, value in cases.items():
        config = dataclasses.replace(base, **{name: value})
        with pytest.raises(Exception, match=f"^{name}: "):
            config.validate()
        with pytest.raises(Exception, match=f"^{ROWS[name].flag}: "):
            config.validate(flags=True)
    with pytest.raises(Exception, match=r"^--steps or --minutes: give --steps or --minutes$"):
        dataclasses.replace(base, max_steps=None).validate(flags=True)
    with pytest.raises(Exception, match=r"^heads_only: .* need init_from$"):
        dataclasses.replace(base, heads_only=True).validate()


def test_the_bounds_a_row_gives_hold_where_validate_holds():
    """Each row's bounds are what validate refuses at and past: the low bound (or just above an
    open one) passes and just past it fails; the same at the high bound."""
    for row in OPTIONS_OF_CONFIG:
        bounds = row.bounds
        if bounds is None:
            continue
        step = 1 if row.base is int else 1e-9
        inside = [v for v in (bounds.low + (step if bounds.open else 0) if bounds.low is not None else None, bounds.high)
                  if v is not None]
        outside = [v for v in (bounds.low if bounds.open else None, (bounds.low - step) if bounds.low is not None else None,
                               bounds.high + step if bounds.high is not None else None) if v is not None]
        for value in inside:
            assert row.problem(row.base(value)) is None, (row.name, value)
        for value in outside:
            assert row.problem(row.base(value)) is not None, (row.name, value)


def test_the_form_and_the_command_line_take_the_same_bounds_from_the_same_row(app, monkeypatch):
    """The form took a learning rate of 0, which validate refused, and capped the seed at
    1,000,000 while the command line allowed 2^32-1. Every number box is drawn with its row's
    range (the form narrows only where its row says, for a shared server); what it accepts at
    either end, validate accepts."""
    at = goto(app, "training")
    drawn = {w.key for kind in ("number_input", "selectbox", "radio", "text_input", "file_uploader") for w in getattr(at, kind)
             if (w.key or "").startswith("tr_")}
    assert drawn == {key(name) for name in WIDGETS} | {"tr_preset", "tr_upload"}  # the table's widgets, all
    boxes = {box.key: box for box in at.number_input}
    for row in FORM_ROWS.values():
        if key(row.name) not in boxes:
            continue
        form, box = WIDGETS[row.name], boxes[key(row.name)]
        assert (box.min, box.max) == form.range(row), row.name
        bounds = row.bounds or Range()
        for end in (box.min, box.max):
            assert end == form.off or bounds.holds(end), (row.name, end)
    assert (boxes["tr_lr"].min, boxes["tr_lr"].max) == (0.0001, MAX_LR)  # the smallest rate its 4 decimals show
    assert boxes["tr_lr"].value == SCRATCH_LR  # the library's recipe, no longer the page's own constant
    assert TrainConfig(lr=boxes["tr_lr"].min).validate() and TrainConfig(lr=boxes["tr_lr"].max).validate()
    assert (boxes["tr_seed"].min, boxes["tr_seed"].max) == (0, MAX_SEED)
    assert run_cli("train", "--seed", str(MAX_SEED), "--help").returncode == 0
    one_line_error(run_cli("train", "--seed", str(MAX_SEED + 1)), "--seed", "must be 0..4,294,967,295")
    started = []
    monkeypatch.setattr(jobs, "start_run", lambda config, *a, **k: started.append(config) or (_ for _ in ()).throw(RunError("stop here")))
    at.selectbox(key="tr_corpus").set_value(at.selectbox(key="tr_corpus").options[0])
    at.number_input(key="tr_seed").set_value(MAX_SEED)
    at.number_input(key="tr_lr").set_value(boxes["tr_lr"].min)
    next(b for b in at.button if b.label == "Start training").click().run()
    assert (started[0].seed, started[0].lr) == (MAX_SEED, 0.0001) and f"--seed {MAX_SEED}" in started[0].command


def test_the_recipe_of_a_run_from_the_page_has_one_home():
    """browser_config and uptrain_config each wrote the snapshot schedule, and the learning
    rates of a run from scratch and from a checkpoint lived in the page's form."""
    for steps, (evals, checkpoints, gradflow) in {7: (10, 10, 10), 40: (10, 10, 10), 200: (40, 40, 20),
                                                  1000: (200, 200, 100)}.items():
        assert snapshots(steps) == dict(eval_every=evals, checkpoint_every=checkpoints, gradflow_every=gradflow)
    scratch = browser_config("lab-tiny", "sop", hidden=64, layers=2, embedding=32, heads=2, sharing="all",
                             corpus=CORPUS, steps=200)
    assert scratch.lr == SCRATCH_LR == 3e-3 and "--lr 0.003" in scratch.command
    assert (scratch.eval_every, scratch.checkpoint_every, scratch.gradflow_every) == (40, 40, 20)
    assert "--eval-every 40 --checkpoint-every 40 --gradflow-every 20" in scratch.command


def test_an_uptraining_run_takes_the_librarys_rate_and_schedule(tiny_bert):
    folder, _ = tiny_bert
    config = uptrain_config(str(folder), "sop", corpus=CORPUS, steps=200)
    assert config.lr == UPTRAIN_LR == 1e-3 and "--lr" not in config.command.split()  # the config's default
    assert (config.eval_every, config.checkpoint_every, config.gradflow_every) == (40, 40, 20)


def test_the_recorded_command_has_each_changed_option_once_in_the_tables_order():
    config = browser_config("lab-tiny", "nsp", hidden=64, layers=3, embedding=32, heads=2, sharing="attention",
                            corpus=CORPUS, steps=40, minutes=2.5, vocab=1000, max_seq_len=64, batch_size=8, lr=0.002,
                            seed=3, pair_weight=2.0, name="a b")
    args = shlex.split(config.command)
    flags = [a for a in args if a.startswith("--")]
    assert len(flags) == len(set(flags))
    order = [row.flag for row in OPTIONS_OF_CONFIG]
    recorded = [f for f in flags if f in order]
    assert recorded == sorted(recorded, key=order.index)
    assert args[args.index("--minutes") + 1] == "2.5" and args[args.index("--name") + 1] == "a b"
    assert "--precision" not in flags and "--cased" not in flags  # defaults are left out
    assert "--cased" in shlex.split(browser_config("lab-tiny", "sop", hidden=64, layers=2, embedding=32, heads=2,
                                                   sharing="all", corpus=CORPUS, steps=5, lowercase=False).command)


def test_the_spec_rows_are_the_spec_flags_and_a_run_from_a_checkpoint_keeps_the_rest():
    from albert_lab.spec import ModelSpec
    from albert_lab.training.options import KEPT_BY_UPTRAINING, UPTRAIN_SPEC

    names = {f.name for f in dataclasses.fields(ModelSpec)}
    # a relaxed model's ranks come with the checkpoint it starts from (albert-lab relax): from scratch there
    # is no residual to start the corrections from, so they are no training flag, and uptraining keeps them
    assert {row.name for row in SPEC_OPTIONS} == names - {"type_vocab_size", "activation", "rank_attention", "rank_ffn"}
    assert set(KEPT_BY_UPTRAINING) | set(UPTRAIN_SPEC) == names and not set(KEPT_BY_UPTRAINING) & set(UPTRAIN_SPEC)


@pytest.fixture
def counted(monkeypatch):
    """How many times TrainConfig.validate runs."""
    calls = []
    validate = TrainConfig.validate
    monkeypatch.setattr(TrainConfig, "validate", lambda self, *a, **k: calls.append(1) or validate(self, *a, **k))
    return calls


def test_validate_runs_once_per_launch_from_the_page_and_the_worker_trusts_it(counted, monkeypatch):
    """It ran three times in the app's process (browser_config, the memory check, prepare) and
    once more in the worker."""
    import hashlib

    from albert_lab.limits import APP_RUN_MEMORY_SHARE
    from albert_lab.training.queue import QueueBudget
    from albert_lab.training.worker import run_worker

    config = browser_config("lab-tiny", "sop", hidden=32, layers=2, embedding=16, heads=2, sharing="all", corpus=CORPUS,
                            steps=2, vocab=1000, max_seq_len=64, batch_size=8, warmup_steps=1, threads=1)
    assert counted == []
    monkeypatch.setattr(jobs, "spawn_worker", lambda run_dir: 0)  # the page's start, its worker run here below
    budget = QueueBudget(overall=8, per_owner=2, memory_share=APP_RUN_MEMORY_SHARE)  # as the page's: the memory check too
    info = jobs.start_run(config, owner=hashlib.sha256(b"a browser").hexdigest(), budget=budget)
    assert info.status == "queued" and counted == [1]
    assert run_worker(info.path, use_slot=False) == "succeeded" and counted == [1]


def test_validate_runs_once_per_launch_from_the_command_line(counted, tmp_path):
    result = run_cli("train", "--preset", "lab-tiny", "--hidden", "32", "--layers", "2", "--embedding", "16", "--heads", "2",
                     "--corpus", CORPUS, "--vocab-size", "1000", "--seq-len", "64", "--batch-size", "8", "--steps", "2",
                     "--warmup", "1", "--threads", "1", "--foreground", "--runs-dir", str(tmp_path))
    assert result.returncode == 0, result.stderr[-2000:]
    assert counted == [1]
