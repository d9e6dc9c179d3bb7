"""Loading through our loader: parity with transformers, tying, head status, bad input."""

import json
import subprocess
import sys

import pytest
import torch
from conftest import tiny_spec
from transformers import (
    AlbertConfig,
    AlbertForMaskedLM,
    AlbertForPreTraining,
    AlbertModel,
    BertConfig,
    BertForMaskedLM,
    BertForPreTraining,
)

from albert_lab.checkpoint.discover import discover_checkpoints, summarize_checkpoint
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.checkpoint.store import save_checkpoint
from albert_lab.errors import CheckpointError
from albert_lab.models import build_model


def _hf_folder(tmp_path, tokenizer, model, name):
    folder = tmp_path / name
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def _logits(model, tokenizer):
    enc = tokenizer(["the river flows to the sea", "a city in france"], ["it is long", "it has a cathedral"],
                    return_tensors="pt", padding=True, return_token_type_ids=True)
    with torch.no_grad():
        out = model.eval()(**enc)
    pair = out.sop_logits if hasattr(out, "sop_logits") else out.seq_relationship_logits
    return out.prediction_logits, pair


@pytest.mark.parametrize("family", ["albert", "bert"])
def test_parity_with_transformers(tmp_path, tokenizer, family):
    torch.manual_seed(0)
    common = dict(vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=3, num_attention_heads=2,
                  intermediate_size=37, max_position_embeddings=64)
    if family == "albert":
        original = AlbertForPreTraining(AlbertConfig(embedding_size=16, **common))
    else:
        original = BertForPreTraining(BertConfig(**common))
    folder = _hf_folder(tmp_path, tokenizer, original, family)
    bundle = load_checkpoint(folder, device="cpu")
    for a, b in zip(_logits(original, tokenizer), _logits(bundle.model, tokenizer)):
        assert (a - b).abs().max() < 1e-5
    assert bundle.heads.mlm == "present" and bundle.heads.pair == "present"  # no card: provenance unknown
    assert bundle.heads.pair_kind == ("sop" if family == "albert" else "nsp")


@pytest.mark.parametrize("sharing", ["attention", "ffn", "all", "none"])
def test_tied_modules_stay_tied_after_save_and_load(make_checkpoint, tokenizer, sharing):
    folder, model = make_checkpoint(sharing=sharing, num_layers=4, num_groups=2 if sharing != "none" else None)
    bundle = load_checkpoint(folder)
    layers = bundle.model.albert.encoder.albert_layer_groups
    if sharing == "attention":
        assert layers[0].albert_layers[0].attention is layers[1].albert_layers[0].attention
        assert layers[0].albert_layers[0].attention is not layers[2].albert_layers[0].attention
        assert layers[0].albert_layers[0].ffn is not layers[1].albert_layers[0].ffn
    if sharing == "ffn":
        assert layers[2].albert_layers[0].ffn is layers[3].albert_layers[0].ffn
        assert layers[2].albert_layers[0].full_layer_layer_norm is layers[3].albert_layers[0].full_layer_layer_norm
    assert sum(p.numel() for p in bundle.model.parameters()) == sum(p.numel() for p in model.parameters())
    for a, b in zip(_logits(model, tokenizer), _logits(bundle.model, tokenizer)):
        assert (a - b).abs().max() < 1e-5
    # Plain transformers reads the same folder (untied copies, same function).
    plain = AlbertForPreTraining.from_pretrained(folder)
    assert (_logits(plain, tokenizer)[0] - _logits(model, tokenizer)[0]).abs().max() < 1e-5


def test_edited_shared_copy_is_refused(make_checkpoint):
    from safetensors.torch import load_file, save_file

    folder, _ = make_checkpoint(sharing="attention", num_layers=2)
    state = load_file(folder / "model.safetensors")
    state["albert.encoder.albert_layer_groups.1.albert_layers.0.attention.query.weight"] += 1.0
    save_file(state, folder / "model.safetensors", metadata={"format": "pt"})
    with pytest.raises(CheckpointError, match="share weights, but layer 1 attention"):
        load_checkpoint(folder)


@pytest.mark.parametrize("cls, missing_pair, missing_mlm", [(AlbertForMaskedLM, True, False), (AlbertModel, True, True)])
def test_missing_heads_are_detected(tmp_path, tokenizer, cls, missing_pair, missing_mlm):
    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    bundle = load_checkpoint(_hf_folder(tmp_path, tokenizer, cls(config), "hub-like"))
    assert (bundle.heads.pair == "missing") == missing_pair
    assert (bundle.heads.mlm == "missing") == missing_mlm
    assert not bundle.heads.pair_usable
    assert "missing" in bundle.heads.warning and "noise" in bundle.heads.warning


def test_card_drives_head_status(make_checkpoint):
    folder, _ = make_checkpoint("none-objective", objective="none")
    assert load_checkpoint(folder).heads.pair == "untrained"
    folder, _ = make_checkpoint("sop", objective="sop")
    assert load_checkpoint(folder).heads.pair == "trained"


@pytest.mark.parametrize("cls", [AlbertForPreTraining, AlbertForMaskedLM, AlbertModel, BertForMaskedLM])
def test_summary_from_files_matches_the_loaded_model(tmp_path, tokenizer, make_checkpoint, cls):
    """The card the app paints from a folder's files (no model loaded) is the card of the
    loaded model: same spec, heads, warning, provenance, counts."""
    from albert_lab.card import model_card

    family = "bert" if cls is BertForMaskedLM else "albert"
    config = (BertConfig if family == "bert" else AlbertConfig)(
        vocab_size=len(tokenizer), hidden_size=32, num_hidden_layers=2, num_attention_heads=2, intermediate_size=37,
        max_position_embeddings=64)
    folders = [_hf_folder(tmp_path, tokenizer, cls(config), "hub-like")]
    folders += [make_checkpoint(o, objective=o)[0] for o in ("sop", "none")] if cls is AlbertForPreTraining else []
    cards = []
    for folder in folders:
        loaded = model_card(load_checkpoint(folder, device="cpu"))
        summary = summarize_checkpoint(folder)
        assert summary is not None
        assert model_card(summary, device="cpu", dtype="float32") == loaded
        cards.append(loaded)
    expected = {AlbertForPreTraining: ("present", "present"), AlbertForMaskedLM: ("present", "missing"),
                AlbertModel: ("missing", "missing"), BertForMaskedLM: ("present", "missing")}[cls]
    assert (cards[0]["heads"]["mlm"], cards[0]["heads"]["pair"]) == expected
    if cls is AlbertForPreTraining:
        assert [c["heads"]["pair"] for c in cards[1:]] == ["trained", "untrained"]


def test_summary_needs_no_torch_and_names_bad_folders(tmp_path, make_checkpoint):
    folder, _ = make_checkpoint("sop", objective="sop")
    code = ("import sys; from albert_lab.checkpoint.discover import summarize_checkpoint; from albert_lab.card import model_card\n"
            f"card = model_card(summarize_checkpoint({str(folder)!r}), device='cpu', dtype='float32')\n"
            "assert card['heads']['pair'] == 'trained', card\n"
            "assert not {'torch', 'transformers'} & set(sys.modules), 'heavy import'")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) - 10])
    with pytest.raises(CheckpointError, match="truncated"):
        summarize_checkpoint(folder)
    (folder / "model.safetensors").write_bytes(b"\x05\x00")
    with pytest.raises(CheckpointError, match="damaged or truncated"):
        summarize_checkpoint(folder)


def _expect_error(path, match, **kwargs):
    before = sorted(p.name for p in path.parent.iterdir()) if path.parent.exists() else None
    with pytest.raises(CheckpointError, match=match):
        load_checkpoint(path, **kwargs)
    if before is not None:
        assert sorted(p.name for p in path.parent.iterdir()) == before  # nothing written


def test_bad_folders_give_clear_errors(tmp_path, make_checkpoint):
    _expect_error(tmp_path / "absent", "no such folder")
    (tmp_path / "empty").mkdir()
    _expect_error(tmp_path / "empty", "has no config.json")
    (tmp_path / "file.txt").write_text("x")
    _expect_error(tmp_path / "file.txt", "is a file")
    folder, _ = make_checkpoint("gpt")
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "model_type": "gpt2"}))
    _expect_error(folder, "unsupported model type 'gpt2'")
    folder, _ = make_checkpoint("truncated")
    data = (folder / "model.safetensors").read_bytes()
    (folder / "model.safetensors").write_bytes(data[: len(data) // 2])
    _expect_error(folder, "damaged or truncated")


def test_pickles_refused_unless_allowed(make_checkpoint, tokenizer):
    folder, model = make_checkpoint("pickled")
    state = {k: v.clone() for k, v in model.state_dict().items()}
    (folder / "model.safetensors").unlink()
    torch.save(state, folder / "pytorch_model.bin")
    _expect_error(folder, "only pickled weights")
    bundle = load_checkpoint(folder, allow_pickle=True)
    assert (_logits(bundle.model, tokenizer)[0] - _logits(model, tokenizer)[0]).abs().max() < 1e-5


def test_offline_hub_id_fails_fast():
    with pytest.raises(CheckpointError, match="model hub is unreachable"):
        load_checkpoint("albert-base-v2")


def test_a_misspelt_name_offline_gets_the_name_it_resembles(shipped, monkeypatch):
    """'albert-sopp' was taken for a hub id: 'unreachable ... pick a shipped checkpoint', no list."""
    from albert_lab.checkpoint.discover import discover_checkpoints

    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    names = [info.name for info in discover_checkpoints()]
    assert "albert-sop" in names
    with pytest.raises(CheckpointError, match="did you mean 'albert-sop'"):
        load_checkpoint("albert-sopp")
    with pytest.raises(CheckpointError, match="one of: " + ", ".join(names[:3])):
        load_checkpoint("zzz-nothing-like-it")
    with pytest.raises(CheckpointError, match="no checkpoint given: name a shipped one"):
        load_checkpoint("  ")


def test_save_is_atomic_and_replaces(tmp_path, tokenizer):
    spec = tiny_spec(len(tokenizer))
    model = build_model(spec, seed=1)
    out = save_checkpoint(model, tokenizer, spec, tmp_path / "ck", {"name": "a"})
    save_checkpoint(build_model(spec, seed=2), tokenizer, spec, out, {"name": "b"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["ck"]  # no tmp or old folders left
    assert json.loads((out / "albert_lab.json").read_text())["name"] == "b"
    assert (out / "spiece.model").is_file()
    from safetensors import safe_open

    with safe_open(out / "model.safetensors", "pt") as f:  # the tied MLM decoder is not stored twice
        assert "predictions.decoder.weight" not in f.keys() and "albert.embeddings.word_embeddings.weight" in f.keys()  # noqa: SIM118
    assert (out / "model.safetensors").stat().st_size < 4 * sum(p.numel() for p in model.parameters()) * 1.05


def test_discovery_lists_shipped_and_finished_runs(tmp_path, tokenizer, monkeypatch):
    spec = tiny_spec(len(tokenizer))
    model = build_model(spec, seed=0)
    shipped, runs = tmp_path / "checkpoints", tmp_path / "runs"
    save_checkpoint(model, tokenizer, spec, shipped / "albert-x")
    (shipped / "tokenizer").mkdir()  # a folder without config.json is not a checkpoint
    for run, status in (("r1", "succeeded"), ("r2", "running")):
        save_checkpoint(model, tokenizer, spec, runs / run / "checkpoint")
        (runs / run / "run.json").write_text(json.dumps({"status": status}))
    names = [c.name for c in discover_checkpoints(shipped, runs)]
    assert names == ["albert-x", "run:r1"]
