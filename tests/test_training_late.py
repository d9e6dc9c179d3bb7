"""A step's numbers are read one step late (training/late.py): over 20 steps the host waits for the
device only at the steps that need their numbers (20/log_every + 1 of them here), and what the run
logs is what it logged reading every step at once."""

import pytest
from conftest import CORPUS, tiny_spec

from albert_lab.errors import RunError
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import create_run
from albert_lab.training.late import LateScalars
from albert_lab.training.runs import read_run


def _config(**changes) -> TrainConfig:
    base = dict(spec=tiny_spec(1000, num_layers=2, hidden_size=32).to_dict(), corpus=CORPUS, vocab_size=1000,
                max_seq_len=64, batch_size=8, max_steps=20, warmup_steps=5, lr=2e-3, log_every=5, eval_every=1000,
                eval_limit=16, checkpoint_every=1000, gradflow_every=1000, seed=0, threads=1, precision="fp32")
    return TrainConfig(**{**base, **changes})


def _run(config, _name):
    from albert_lab.training.loop import Trainer

    run_dir = create_run(config)[0]
    trainer = Trainer(run_dir, config)
    assert trainer.run() == "succeeded"
    rows = [{k: v for k, v in m.items() if k not in ("time", "tokens_per_s", "run_tokens_per_s", "eta_s", "step_s", "elapsed_s")}
            for m in read_run(run_dir).metrics() if m["kind"] == "train"]
    return trainer, rows


def test_twenty_steps_wait_only_where_their_numbers_are_needed(monkeypatch):
    late, rows = _run(_config(name="late"), "late")
    assert late.scalars.blocking == 20 // 5 + 1  # steps 1, 5, 10, 15 and 20 (the last)
    assert [r["step"] for r in rows] == [1, 5, 10, 15, 20]
    take = LateScalars.take
    monkeypatch.setattr(LateScalars, "take", lambda self, now=False: take(self, now=True))  # every step read at once
    eager, eager_rows = _run(_config(name="eager"), "eager")
    assert eager.scalars.blocking == 20
    assert rows == eager_rows  # the same windows, losses, norms and hits


def test_a_loss_that_is_not_finite_still_ends_the_run_before_anything_is_saved(monkeypatch):
    """Read a step late, a NaN is still seen before the next step that saves or evaluates."""
    import torch

    from albert_lab.objective import PretrainingLoss

    forward = PretrainingLoss.forward
    calls = []

    def poisoned(self, batch, *args, **kwargs):
        out = forward(self, batch, *args, **kwargs)
        calls.append(1)
        if len(calls) == 3:
            out.loss = out.loss * torch.tensor(float("nan"))
        return out

    monkeypatch.setattr(PretrainingLoss, "forward", poisoned)
    config = _config(checkpoint_every=4, log_every=1000, name="nan")
    from albert_lab.training.loop import Trainer

    run_dir = create_run(config)[0]
    with pytest.raises(RunError, match="at step 2"):
        Trainer(run_dir, config).run()
    assert not (run_dir / "checkpoint").exists()
