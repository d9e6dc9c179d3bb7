"""albertize (a BERT made into an ALBERT) and uptraining from a checkpoint (--init-from)."""

import json

import pytest
import torch
from conftest import ROOT, one_line_error, run_cli
from transformers import BertConfig, BertForPreTraining

from albert_lab.checkpoint.files import read_card
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.convert import albertize, factorise
from albert_lab.errors import CheckpointError, RunError
from albert_lab.models import Parts
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import create_run


def save_bert(folder, tokenizer, layers: int = 3):
    """A tiny random BertForPreTraining with both heads, saved the way transformers saves."""
    torch.manual_seed(0)
    config = BertConfig(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=layers, num_attention_heads=2,
                        intermediate_size=48, max_position_embeddings=64, hidden_act="gelu")
    model = BertForPreTraining(config).eval()
    with torch.no_grad():  # LayerNorms away from their init, so that copying them is tested
        for module in model.modules():
            if isinstance(module, torch.nn.LayerNorm):
                module.weight.uniform_(0.5, 1.5)
                module.bias.normal_(0, 0.1)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder, model


@pytest.fixture
def tiny_bert(tmp_path, tokenizer):
    return save_bert(tmp_path / "bert", tokenizer)


def _inputs(tokenizer):
    return tokenizer(["the city of paris is the capital of france.", "a river runs through it"],
                     ["it has many museums", "the water is cold"], return_tensors="pt", padding=True)


def test_truncated_svd_error_equals_the_discarded_singular_values():
    torch.manual_seed(0)
    weight = torch.randn(50, 16)
    for e in (1, 6, 15):
        f = factorise(weight, e)
        error = torch.linalg.norm(weight.double() - (f.table @ f.basis).double())
        assert abs(float(error) - f.discarded_error) < 1e-4
        assert f.discarded_error > 0
        assert torch.allclose(f.basis @ f.basis.T, torch.eye(e), atol=1e-5)  # orthonormal directions
        s = torch.linalg.svdvals(weight.double())
        assert f.energy_kept == pytest.approx(float(s[:e].square().sum() / s.square().sum()), abs=1e-9)
    full = factorise(weight, 16)
    assert full.energy_kept == 1.0 and full.discarded_error < 1e-4 and torch.equal(full.table, weight)


def test_e_equals_h_without_sharing_computes_the_source_function(tiny_bert, tokenizer, tmp_path):
    folder, source = tiny_bert
    out = albertize(folder, tmp_path / "albert", embedding_size=32, sharing="none")
    bundle = load_checkpoint(out, device="cpu")
    assert bundle.spec.family == "albert" and bundle.spec.embedding_size == 32 and bundle.spec.sharing == "none"
    enc = _inputs(tokenizer)
    with torch.no_grad():
        want = source(**enc, output_hidden_states=True)  # transformers' own BERT, independent of our code
        got = bundle.model(**enc, output_hidden_states=True)
    for w, g in zip(want.hidden_states, got.hidden_states, strict=True):
        assert torch.allclose(w, g, atol=1e-5)
    assert torch.allclose(want.prediction_logits, got.prediction_logits, atol=1e-5)  # the MLM head, carried over
    assert torch.allclose(want.seq_relationship_logits, got.sop_logits, atol=1e-5)  # NSP head as the pair head
    card = read_card(out)
    assert card["conversion"]["status"] == "converted, not trained"
    assert card["heads"] == {"mlm": "present", "pair": "present"} and bundle.heads.pair_kind == "nsp"


def test_e_below_h_factorises_and_leaves_the_mlm_head_out(tiny_bert, tmp_path):
    folder, source = tiny_bert
    out = albertize(folder, tmp_path / "albert", embedding_size=8, sharing="all", init="average")
    bundle = load_checkpoint(out, device="cpu")
    facts = read_card(out)["conversion"]
    word = source.bert.embeddings.word_embeddings.weight.detach()
    assert facts["embedding_energy_kept"] == pytest.approx(factorise(word, 8).energy_kept, abs=1e-6)
    assert 0 < facts["embedding_fit_r2"] < 1
    assert bundle.heads.mlm == "missing"  # no counterpart at E < H: absent, never random
    assert bundle.heads.pair == "present"
    # one shared block, the average of the three source layers
    block = bundle.model.albert.encoder.albert_layer_groups[0].albert_layers[0]
    mean = torch.stack([layer.attention.self.query.weight for layer in source.bert.encoder.layer]).mean(0)
    assert torch.allclose(block.attention.query.weight, mean, atol=1e-6)


@pytest.mark.parametrize("embedding", [8, 16])
def test_the_fitted_projection_has_no_part_the_layer_norm_cannot_see(tiny_bert, tmp_path, embedding):
    """LN_E's outputs sum to zero, so least squares leaves W's component along the all-ones
    direction free; lstsq made it enormous (|W| 2.6e5 for MiniLM at E = 128), the first
    gradient of the embedding LayerNorm's gain 13,900, and every E < H uptraining stalled
    (docs/ablation.md). The minimum-norm fit has none, and computes the same function."""
    folder, _ = tiny_bert
    out = albertize(folder, tmp_path / "albert", embedding_size=embedding, sharing="none")
    model = load_checkpoint(out, device="cpu").model
    weight = model.albert.encoder.embedding_hidden_mapping_in.weight.detach()  # (H, E)
    assert weight.sum(1).abs().max() < 1e-4 * weight.abs().max()  # W 1 = 0
    assert torch.linalg.matrix_norm(weight, 2) < 10  # the LN'd E-vectors map to H-vectors of the same scale
    model.albert.embeddings.LayerNorm.weight.requires_grad_(True)
    enc = _inputs(load_checkpoint(out, device="cpu").tokenizer)
    model.albert(**enc).last_hidden_state.square().mean().backward()
    gain = model.albert.embeddings.LayerNorm.weight.grad.norm()
    others = max(p.grad.norm() for n, p in model.named_parameters() if p.grad is not None and "embeddings.LayerNorm" not in n)
    assert gain < 10 * others, (float(gain), float(others))


@pytest.mark.parametrize("init, first", [("stepwise", [0, 2]), ("lower", [0, 1]), ("average", None)])
def test_shared_blocks_start_from_the_chosen_layers(tmp_path, tokenizer, init, first):
    folder, source = save_bert(tmp_path / "bert4", tokenizer, layers=4)
    # FFN shared in 2 groups of 2 layers; attention stays per layer
    out = albertize(folder, tmp_path / init, embedding_size=32, sharing="ffn", groups=2, init=init)
    groups = load_checkpoint(out, device="cpu").model.albert.encoder.albert_layer_groups
    layers = source.bert.encoder.layer
    for i, group in enumerate(groups):
        ffn = group.albert_layers[0].ffn.weight
        g = i // 2
        want = (layers[first[g]].intermediate.dense.weight if first else
                torch.stack([layers[j].intermediate.dense.weight for j in (2 * g, 2 * g + 1)]).mean(0))
        assert torch.allclose(ffn, want, atol=1e-6)
        assert torch.equal(group.albert_layers[0].attention.query.weight, layers[i].attention.self.query.weight)


def test_albertize_refuses_what_is_not_a_bert(make_checkpoint, tmp_path):
    folder, _ = make_checkpoint("an-albert")
    with pytest.raises(CheckpointError, match="converts BERT models"):
        albertize(folder, tmp_path / "out")
    result = run_cli("albertize", "--checkpoint", str(folder), "--out", str(tmp_path / "out2"))
    one_line_error(result, "converts BERT models")
    result = run_cli("albertize", "--checkpoint", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "out3"))
    one_line_error(result)


def test_minilm_with_e_equal_h_is_exact(minilm, tmp_path):
    out = albertize(minilm, tmp_path / "minilm-albert", embedding_size=384, sharing="none")
    source, converted = load_checkpoint(minilm, device="cpu"), load_checkpoint(out, device="cpu")
    enc = source.tokenizer(["The cat sat on the mat.", "Order is learned late."], return_tensors="pt", padding=True)
    with torch.no_grad():
        want = Parts.of(source.model).encoder(**enc).last_hidden_state
        got = Parts.of(converted.model).encoder(**enc).last_hidden_state
    assert torch.allclose(want, got, atol=1e-5)
    assert converted.heads.mlm == "missing" and converted.heads.pair == "missing"  # MiniLM has neither head


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
    assert card["provenance"]["init_from"]["folder"] == str(converted)
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


def test_masking_reads_wordpiece(minilm):
    from albert_lab.data.masking import masking_config
    from albert_lab.tokenizer import load_tokenizer

    tok = load_tokenizer(minilm)
    cfg = masking_config(tok)
    assert cfg.first_random_id == tok.convert_tokens_to_ids("!")  # after [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]
    ids = tok("unbelievably", add_special_tokens=False)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    assert len(ids) > 1 and [bool(cfg.word_start[i]) for i in ids] == [not p.startswith("##") for p in pieces]


def test_ablation_results_file_names_its_rows():
    """docs/ablation.json, if present, was written by scripts/ablation.py: rows for the grid."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "docs" / "ablation.json"
    if not path.is_file():
        pytest.skip("no ablation results committed")
    data = json.loads(path.read_text())
    assert data["command"].startswith("scripts/ablation.py")
    assert {row["name"] for row in data["rows"]} <= {f"e{e}-{s}" for e in (64, 128, 256, 384) for s in ("all", "none", "attention", "ffn")}


def test_the_model_card_albertizes_a_bert(shipped, monkeypatch, tmp_path):
    """The card of a BERT offers albertize; the result lands in runs/albertized/ and can be picked."""
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120).run()
    assert not at.exception
    assert not [e for e in at.expander if "albertize" in e.label]  # albert-sop is already an ALBERT
    at.selectbox(key="card_checkpoint").set_value("bert-nsp").run()
    assert [e for e in at.expander if "albertize" in e.label]
    at.number_input(key="alb_e").set_value(8)
    at.selectbox(key="alb_sharing").set_value("all")
    at.button[[b.label for b in at.button].index("Convert (seconds)")].click().run()
    assert not at.exception, [e.value for e in at.exception]
    done = next(s.value for s in at.success if "Saved" in s.value)
    assert "E=8" in done and "all sharing in 1 group(s)" in done
    out = tmp_path / "runs" / "albertized" / "bert-nsp-e8-all-average"
    card = read_card(out)
    assert card["conversion"]["status"] == "converted, not trained" and card["provenance"]["command"].startswith("albert-lab albertize")
    at.button(key="albertize_pick").click().run()
    assert "bert-nsp-e8-all-average" in at.sidebar.multiselect(key="picked").value


def test_a_browser_uptraining_run_records_the_command_that_makes_it_again(tiny_bert, monkeypatch):
    """The Training page's 'Start from' a checkpoint: the checkpoint's architecture, and a card
    command that the CLI parses back into the same configuration."""
    import shlex

    import albert_lab.training.jobs as jobs
    from albert_lab.cli import main
    from albert_lab.training.config import uptrain_config

    folder, source = tiny_bert
    config = uptrain_config(str(folder), "sop", corpus="wiki-vital[:600]", steps=40, max_seq_len=64, batch_size=8,
                            lr=1e-4, optimizer="adamw", warmup_steps=4, seed=2, name="up")
    assert config.init_from == str(folder) and config.model_spec().hidden_size == source.config.hidden_size
    assert config.model_spec().dropout == 0.0 and config.command.startswith(f"albert-lab train --init-from {folder} --objective sop")
    captured = []
    monkeypatch.setattr(jobs, "start_run", lambda cfg, *a, **k: captured.append(cfg) or (_ for _ in ()).throw(SystemExit))
    with pytest.raises(SystemExit):
        main([*shlex.split(config.command)[1:], "--foreground"])
    assert {k: v for k, v in captured[0].to_dict().items() if k != "command"} == \
        {k: v for k, v in config.to_dict().items() if k != "command"}


def test_the_training_page_starts_a_run_from_a_picked_checkpoint(shipped, monkeypatch):
    import streamlit as st
    from streamlit.testing.v1 import AppTest

    import albert_lab.training.jobs as jobs

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    st.cache_data.clear()
    st.cache_resource.clear()
    started = []
    monkeypatch.setattr(jobs, "start_run", lambda cfg, *a, **k: started.append(cfg) or (_ for _ in ()).throw(RunError("stop here")))
    at = AppTest.from_file(str(ROOT / "app" / "main.py"), default_timeout=120).run()
    at.switch_page("../pages/training.py").run()
    assert not at.exception
    start = at.selectbox(key="tr_start")
    assert start.value == "random weights" and "bert-nsp" in start.options
    start.set_value("bert-nsp").run()
    assert any("Starting from **bert-nsp**" in c.value for c in at.caption)
    at.selectbox(key="tr_corpus").set_value(at.selectbox(key="tr_corpus").options[0])
    at.number_input(key="tr_seq").set_value(64)  # the fixture's positions
    at.button[[b.label for b in at.button].index("Start training")].click().run()
    assert len(started) == 1, [e.value for e in at.error]
    config = started[0]
    assert config.init_from == str(shipped / "bert-nsp") and config.command.startswith("albert-lab train --init-from")
    assert any("stop here" in e.value for e in at.error)  # the guard's one-line message, no traceback
