"""Uptraining from a checkpoint (--init-from): its weights and architecture, only the missing heads added."""

import pytest
import torch
from conftest import one_line_error, run_cli

from albert_lab.checkpoint.files import read_card
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.checkpoint.sources import sha256
from albert_lab.convert import albertize
from albert_lab.errors import RunError
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import create_run


def _config(init_from, **changes) -> TrainConfig:
    from albert_lab.checkpoint.files import read_spec

    spec = read_spec(init_from, read_card(init_from)).replace(objective="sop")
    base = dict(spec=spec.to_dict(), corpus="wiki-vital[:600]", max_seq_len=64, batch_size=8, max_steps=3, warmup_steps=1,
                lr=1e-3, optimizer="adamw", log_every=1, eval_every=10, eval_limit=16, checkpoint_every=10,
                gradflow_every=10, seed=0, threads=1, init_from=str(init_from))
    return TrainConfig(**{**base, **changes})


def test_uptraining_starts_from_the_checkpoint_and_adds_only_missing_heads(tiny_bert, tmp_path):
    from albert_lab.training.loop import Trainer

    folder, _ = tiny_bert
    converted = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")  # MLM head left out at E < H
    loaded = load_checkpoint(converted, device="cpu").model.state_dict()
    config = _config(converted)
    trainer = Trainer(create_run(config, tmp_path / "runs", "up")[0], config)
    own = trainer.model.state_dict()
    encoder = [k for k in own if k.startswith("albert.")]
    assert encoder and all(torch.equal(own[k], loaded[k]) for k in encoder)
    assert torch.equal(own["sop_classifier.classifier.weight"], loaded["sop_classifier.classifier.weight"])
    assert trainer.init_card["heads_added"] == ["predictions"]
    assert trainer.run() == "succeeded"
    card = read_card(tmp_path / "runs" / "up" / "checkpoint")
    assert card["provenance"]["init_from"]["folder"] == f"{converted.name} (a folder outside the project; model.safetensors " \
        f"sha256 {sha256(converted / 'model.safetensors')})"  # no path of this machine
    assert card["provenance"]["init_from"]["conversion"]["embedding_size"] == 8


def test_heads_only_leaves_the_encoder_as_it_was(tiny_bert, tmp_path):
    from albert_lab.training.loop import Trainer

    folder, _ = tiny_bert
    before = load_checkpoint(folder, device="cpu").model.state_dict()
    config = _config(folder, heads_only=True)
    trainer = Trainer(create_run(config, tmp_path / "runs", "probe")[0], config)
    assert trainer.run() == "succeeded"
    after = load_checkpoint(tmp_path / "runs" / "probe" / "checkpoint", device="cpu")
    state = after.model.state_dict()
    assert all(torch.equal(state[k], before[k]) for k in state if k.startswith("bert.") and "pooler" not in k)
    assert not torch.equal(state["cls.predictions.bias"], before["cls.predictions.bias"])  # the head did train
    assert after.heads.mlm == "probe" and after.heads.pair == "probe"


def test_init_from_refuses_another_architecture(tiny_bert, tmp_path):
    folder, _ = tiny_bert
    config = _config(folder)
    config.spec = {**config.spec, "hidden_size": 64, "embedding_size": 64}
    from albert_lab.training.prepare import prepare

    with pytest.raises(RunError, match="hidden_size 64"):
        prepare(config)
    result = run_cli("train", "--init-from", str(folder), "--hidden", "64", "--steps", "1", "--runs-dir", str(tmp_path / "r"))
    one_line_error(result, "--init-from keeps the checkpoint's architecture")
    with pytest.raises(RunError, match="heads_only"):
        TrainConfig(heads_only=True).validate()


def test_a_browser_uptraining_run_records_the_command_that_makes_it_again(tiny_bert, monkeypatch):
    """The Training page's 'Start from' a checkpoint: the checkpoint's architecture, and a card
    command that the CLI parses back into the same configuration."""
    import shlex

    import albert_lab.training.jobs as jobs
    from albert_lab.cli import main
    from albert_lab.training.recipe import uptrain_config

    folder, source = tiny_bert
    config = uptrain_config(str(folder), "sop", corpus="wiki-vital[:600]", steps=40, max_seq_len=64, batch_size=8,
                            lr=1e-4, optimizer="adamw", warmup_steps=4, seed=2, name="up", distil_from=str(folder),
                            pair_weight=4.0, distil_pair=True)
    assert "--distil-pair" in config.command.split() and "--pair-weight 4.0" in config.command
    assert config.init_from == str(folder) and config.model_spec().hidden_size == source.config.hidden_size
    assert config.model_spec().dropout == 0.0 and config.command.startswith(f"albert-lab train --init-from {folder} --objective sop")
    captured = []
    monkeypatch.setattr(jobs, "start_run", lambda cfg, *a, **k: captured.append(cfg) or (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        main([*shlex.split(config.command)[1:], "--foreground"])
    assert {k: v for k, v in captured[0].to_dict().items() if k != "command"} == \
        {k: v for k, v in config.to_dict().items() if k != "command"}


@pytest.mark.parametrize("family", ["albert", "bert"])
def test_a_standardized_pooler_passes_on_each_cls_dimension_at_the_same_scale(tiny_bert, tmp_path, family):
    """--pooler-init standardize: over the run's first batches, the pooler's pre-tanh output has
    mean 0 and standard deviation 0.5 in every dimension, however little the [CLS] state varies;
    the card says so, the encoder is untouched, and a resumed run keeps its trained pooler."""
    from albert_lab.models import Parts, pooler_linear
    from albert_lab.training.loop import STANDARDIZE_BATCHES, Trainer

    folder, _ = tiny_bert
    start = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all") if family == "albert" else folder
    config = _config(start, pooler_init="standardize", max_steps=4, checkpoint_every=2)
    plain = Trainer(create_run(_config(start), tmp_path / "runs", "plain")[0], _config(start))
    trainer = Trainer(create_run(config, tmp_path / "runs", "std")[0], config)
    trainer.model.eval()
    cls = torch.cat([Parts.of(trainer.model).encoder(input_ids=b.input_ids, attention_mask=b.attention_mask,
                                                     token_type_ids=b.token_type_ids).last_hidden_state[:, 0]
                     for b in (trainer.data.batch(i) for i in range(STANDARDIZE_BATCHES))])
    with torch.no_grad():
        pre = pooler_linear(trainer.model.train())(cls)  # (N, H)
    torch.testing.assert_close(pre.mean(0), torch.zeros(pre.shape[1]), atol=1e-3, rtol=0)  # 0.2% of the std
    torch.testing.assert_close(pre.std(0), torch.full((pre.shape[1],), 0.5), atol=1e-3, rtol=0)
    mine, theirs = trainer.model.state_dict(), plain.model.state_dict()
    assert all(torch.equal(mine[k], theirs[k]) for k in mine if "pooler" not in k)
    record = trainer.init_card["pooler_standardized"]
    assert record["pairs"] == len(cls) and record["gain"] == 0.5 and record["cls_std_mean"] > 0
    assert trainer.run() == "succeeded"
    card = read_card(tmp_path / "runs" / "std" / "checkpoint")["provenance"]
    assert card["init_from"]["pooler_standardized"] == record and card["train_config"]["pooler_init"] == "standardize"
    with pytest.raises(RunError, match="pooler_init"):
        TrainConfig(pooler_init="standardize").validate()  # nothing to start from
    with pytest.raises(RunError, match="pooler_init"):
        _config(start, pooler_init="standardize", objective="none").validate()


def test_a_run_with_a_standardized_pooler_resumes_exactly(tiny_bert, tmp_path, monkeypatch):
    from conftest import cancel_then_resume

    from albert_lab.training.loop import Trainer
    from albert_lab.training.runs import read_run

    folder, _ = tiny_bert
    config = _config(folder, pooler_init="standardize", max_steps=8, checkpoint_every=100, eval_every=100)
    straight = create_run(config, tmp_path / "runs", "straight")[0]
    assert Trainer(straight, config).run() == "succeeded"
    split = create_run(config, tmp_path / "runs", "split")[0]
    cancel_then_resume(split, 4, monkeypatch)
    a = {m["step"]: m["loss"] for m in read_run(straight).metrics() if m["kind"] == "train"}
    b = {m["step"]: m["loss"] for m in read_run(split).metrics() if m["kind"] == "train"}
    assert sorted(a) == sorted(b) and all(abs(a[s] - b[s]) < 1e-5 * a[s] for s in a), (a, b)


def test_a_relaxed_run_resumes_from_its_checkpoint(tiny_bert, tmp_path, monkeypatch):
    """A relaxed model's checkpoint holds each shared matrix once (under its group's first layer): a resume
    refused it, the other layers' names missing, though they are the same tensor."""
    from conftest import cancel_then_resume

    from albert_lab.relax import relax
    from albert_lab.training.loop import Trainer
    from albert_lab.training.runs import read_run

    relaxed = relax(tiny_bert[0], tmp_path / "relaxed", 2)
    config = _config(relaxed, max_steps=8, checkpoint_every=100, eval_every=100)
    straight = create_run(config, tmp_path / "runs", "straight")[0]
    assert Trainer(straight, config).run() == "succeeded"
    split = create_run(config, tmp_path / "runs", "split")[0]
    cancel_then_resume(split, 4, monkeypatch)
    assert read_run(split).status == "succeeded", read_run(split).message
    a, b = (load_checkpoint(run / "checkpoint", device="cpu").model.state_dict() for run in (straight, split))
    assert all(torch.equal(a[k], b[k]) for k in a)
