"""albertize: a BERT made into an ALBERT, against transformers' BERT and the truncated SVD."""

import json
import os

import pytest
import torch
from conftest import one_line_error, run_cli, save_bert

from albert_lab.checkpoint.files import read_card
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.convert import albertize
from albert_lab.errors import CheckpointError
from albert_lab.factorise import factorise


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
    zero = factorise(torch.zeros(50, 16), 4)  # an all-zero table kept NaN% of its energy ("SVD kept nan%")
    assert zero.energy_kept == 1.0 and zero.discarded_error == 0


def _inputs(tokenizer):
    return tokenizer(["the city of paris is the capital of france.", "a river runs through it"],
                     ["it has many museums", "the water is cold"], return_tensors="pt", padding=True)


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


def test_albertize_never_replaces_what_is_at_out(tiny_bert, tmp_path):
    """--out naming a shipped checkpoint or a user's file replaced it (the old copy was deleted)."""
    folder, _ = tiny_bert
    taken, a_file = tmp_path / "taken", tmp_path / "pairs.csv"
    taken.mkdir()
    (taken / "config.json").write_text("{}")
    a_file.write_text("a,b\n")
    for out in (taken, a_file):
        result = run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--out", str(out))
        one_line_error(result, "exists; --out names a new folder")
    assert not [p.name for p in tmp_path.iterdir() if p.name.startswith(".")]  # no hidden .old/.tmp copies either
    assert (taken / "config.json").read_text() == "{}" and a_file.read_text() == "a,b\n"
    (empty := tmp_path / "empty").mkdir()
    assert (albertize(folder, empty, embedding_size=8) / "albert_lab.json").is_file()  # an empty folder is fine


def test_albertize_to_a_folder_that_cannot_be_made_is_one_line_before_the_work(tiny_bert, tmp_path):
    """--out /proc/x gave a FileNotFoundError traceback after the conversion."""
    folder, _ = tiny_bert
    (a_file := tmp_path / "a-file").write_text("mine")
    for out in ("/proc/x", str(a_file / "sub")):
        one_line_error(run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--out", out),
                       f"--out {out} cannot be made")
    assert a_file.read_text() == "mine"


def test_albertize_refuses_a_link_at_out_before_the_work_and_a_failure_leaves_no_folder(tiny_bert, tmp_path, monkeypatch):
    """--out at a link to an empty folder, a dangling link or a loop failed only after the 17 s
    conversion; a conversion that failed left the folders above --out that it had made."""
    from albert_lab.checkpoint import load

    folder, _ = tiny_bert
    (empty := tmp_path / "empty").mkdir()
    os.symlink(empty, tmp_path / "to-empty")
    os.symlink("nowhere", tmp_path / "dangling")
    os.symlink("loop", tmp_path / "loop")
    monkeypatch.setattr(load, "load_checkpoint", lambda *a, **k: pytest.fail("the BERT was read before --out was checked"))
    for name, words in (("to-empty", "is a link"), ("dangling", "is a link"), ("loop", "symlink loop")):
        one_line_error(run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--out", str(tmp_path / name)),
                       "--out", words)
    monkeypatch.undo()
    assert not list(empty.iterdir()) and not (tmp_path / "nowhere").exists()
    deep = tmp_path / "a" / "b" / "albert"
    one_line_error(run_cli("albertize", "--checkpoint", str(tmp_path / "no-bert"), "--out", str(deep)), "no such folder")
    albert = albertize(folder, tmp_path / "albert", embedding_size=8)
    one_line_error(run_cli("albertize", "--checkpoint", str(albert), "--out", str(deep)), "albertize converts BERT models")
    assert not (tmp_path / "a").exists()  # neither failure left a/ or a/b/
    assert (albertize(folder, deep, embedding_size=8) / "albert_lab.json").is_file()  # made when the result is saved


def test_a_new_folder_written_meanwhile_by_another_conversion_is_kept(tiny_bert, tmp_path, monkeypatch):
    """Two conversions to one --out both said they had saved; the second silently replaced the first."""
    import albert_lab.checkpoint.store as store
    from albert_lab.errors import CheckpointError

    folder, _ = tiny_bert
    out, fsync = tmp_path / "out", store._fsync_tree
    def the_other_lands_first(tmp):  # between albertize's check and its rename, another run fills `out`
        fsync(tmp)
        out.mkdir()
        (out / "config.json").write_text("the other conversion")
    monkeypatch.setattr(store, "_fsync_tree", the_other_lands_first)
    with pytest.raises(CheckpointError, match="was written by someone else while this one was made; it is kept"):
        albertize(folder, out, embedding_size=8)
    assert (out / "config.json").read_text() == "the other conversion"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bert", "out"]  # no hidden .tmp copy left behind


def test_albertize_refuses_what_is_not_a_bert(make_checkpoint, tmp_path):
    folder, _ = make_checkpoint("an-albert")
    with pytest.raises(CheckpointError, match="converts BERT models"):
        albertize(folder, tmp_path / "out")
    result = run_cli("albertize", "--checkpoint", str(folder), "--out", str(tmp_path / "out2"))
    one_line_error(result, "converts BERT models")
    result = run_cli("albertize", "--checkpoint", str(tmp_path / "nothing-here"), "--out", str(tmp_path / "out3"))
    one_line_error(result)


def test_ablation_results_file_names_its_rows():
    """docs/ablation.json, if present, was written by scripts/ablation.py: rows for the grid."""
    from pathlib import Path

    path = Path(__file__).resolve().parent.parent / "docs" / "ablation.json"
    if not path.is_file():
        pytest.skip("no ablation results committed")
    data = json.loads(path.read_text())
    assert data["command"].startswith("scripts/ablation.py")
    assert {row["name"] for row in data["rows"]} <= {f"e{e}-{s}" for e in (64, 128, 256, 384) for s in ("all", "none", "attention", "ffn")}


def test_a_bert_trained_with_sop_keeps_its_head_as_an_sop_head(tiny_bert, tmp_path):
    """BERT keeps a pair head in its NSP slot whatever trained it; a BERT whose card says SOP
    (bert-sop-minilm) becomes an ALBERT whose pair head predicts order, not 'is next'."""
    from albert_lab.checkpoint.store import save_checkpoint

    folder, _ = tiny_bert
    bundle = load_checkpoint(folder, device="cpu")
    sop = save_checkpoint(bundle.model, bundle.tokenizer, bundle.spec.replace(objective="sop"), tmp_path / "bert-sop",
                          {"name": "bert-sop", "heads": {"mlm": "trained", "pair": "trained"}})
    out = albertize(sop, tmp_path / "albert", embedding_size=8, sharing="all")
    converted = load_checkpoint(out, device="cpu")
    assert converted.spec.objective == "sop" and converted.heads.pair_kind == "sop"
    assert "SOP head" in read_card(out)["conversion"]["heads"]["pair"]
    plain = load_checkpoint(albertize(folder, tmp_path / "from-nsp", embedding_size=8, sharing="all"), device="cpu")
    assert plain.spec.objective == "nsp" and plain.heads.pair_kind == "nsp"


def test_the_card_says_how_much_of_its_layers_query_key_form_a_shared_block_keeps(tiny_bert, tmp_path):
    """attention_kept: the shared block's ||W_q,h^T W_k,h|| (over heads) against the mean of the
    layers it replaces, computed here head by head: a copied layer keeps its own share, an
    average of unlike layers keeps less, no sharing keeps everything."""
    from albert_lab.convert import query_key_norm

    folder, source = tiny_bert
    layers = source.bert.encoder.layer
    d = 32 // 2

    def form(layer) -> float:
        q, k = layer.attention.self.query.weight.detach(), layer.attention.self.key.weight.detach()
        return float(sum(torch.linalg.matrix_norm(q[h * d:(h + 1) * d].T @ k[h * d:(h + 1) * d]) ** 2 for h in range(2)) ** 0.5)

    own = [form(layer) for layer in layers]
    q_mean = torch.stack([layer.attention.self.query.weight.detach() for layer in layers]).mean(0)
    k_mean = torch.stack([layer.attention.self.key.weight.detach() for layer in layers]).mean(0)
    assert query_key_norm(layers[0].attention.self.query.weight, layers[0].attention.self.key.weight, 2) == pytest.approx(own[0], rel=1e-5)
    facts = {init: read_card(albertize(folder, tmp_path / init, embedding_size=8, sharing="all", init=init))["conversion"]
             for init in ("average", "stepwise")}
    mean = sum(own) / len(own)
    assert facts["stepwise"]["attention_kept"] == pytest.approx(own[0] / mean, abs=1e-4)
    averaged = float(sum(torch.linalg.matrix_norm(q_mean[h * d:(h + 1) * d].T @ k_mean[h * d:(h + 1) * d]) ** 2
                         for h in range(2)) ** 0.5)
    assert facts["average"]["attention_kept"] == pytest.approx(averaged / mean, abs=1e-4)
    assert facts["average"]["attention_kept"] < 0.9  # three random layers' forms partly cancel
    none = read_card(albertize(folder, tmp_path / "none", embedding_size=8, sharing="none"))["conversion"]
    assert none["attention_kept"] == 1.0
    result = run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--sharing", "all", "--out", str(tmp_path / "cli"))
    assert result.returncode == 0 and ("query-key forms keep" in result.stdout) == (facts["average"]["attention_kept"] < 0.5)


def test_a_conversion_saved_in_the_runs_folder_is_listed_and_loads_by_name(tiny_bert, tmp_path, monkeypatch):
    """The README's `albertize ... --out runs/bert-nsp-albert` was not listed by `checkpoints`:
    its path had to be typed everywhere. A trained run's folder is not taken for one."""
    import json

    from albert_lab.checkpoint.discover import discover_checkpoints, resolve_checkpoint

    folder, _ = tiny_bert
    runs = tmp_path / "runs"
    monkeypatch.setenv("ALBERT_LAB_RUNS", str(runs))
    runs.mkdir()
    result = run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--out", str(runs / "tiny-albert"))
    assert result.returncode == 0, result.stderr
    albertize(folder, runs / "albertized" / "from-the-app", embedding_size=8)
    (runs / "plain").mkdir()
    (runs / "plain" / "config.json").write_text(json.dumps({"model_type": "bert"}))  # no conversion card: not listed
    converted = discover_checkpoints(shipped=tmp_path / "none", runs=runs)
    assert [(c.name, c.origin) for c in converted] == [("converted:tiny-albert", "converted"),
                                                       ("converted:from-the-app", "converted")]
    assert resolve_checkpoint("converted:tiny-albert") == str(runs / "tiny-albert")
    assert "converted:tiny-albert" in run_cli("checkpoints").stdout
    import shutil
    from pathlib import Path

    shutil.copytree(runs / "tiny-albert", runs / "albertized" / "tiny-albert")  # one name in both places: both listed
    names = [c.name for c in discover_checkpoints(shipped=tmp_path / "none", runs=runs)]
    assert names == ["converted:tiny-albert", "converted:from-the-app", "converted:albertized/tiny-albert"]
    assert resolve_checkpoint("converted:albertized/tiny-albert") == str(runs / "albertized" / "tiny-albert")
    iterdir = Path.iterdir
    def unreadable(self):
        if self.name == "albertized":
            raise PermissionError(13, "Permission denied")
        return iterdir(self)
    monkeypatch.setattr(Path, "iterdir", unreadable)  # a folder that cannot be read is skipped, not an error
    assert [c.name for c in discover_checkpoints(shipped=tmp_path / "none", runs=runs)] == ["converted:tiny-albert"]


def test_a_bert_without_pooler_weights_converts_as_it_loads(tiny_bert, tmp_path):
    """BertModel / BertForMaskedLM exports often lack the pooler: albertize was a KeyError
    'bert.pooler.dense.weight'. The loader reports the pair head missing; the conversion does too."""
    from safetensors.torch import load_file, save_file

    folder, _ = tiny_bert
    tensors = {k: v for k, v in load_file(str(folder / "model.safetensors")).items() if not k.startswith("bert.pooler.")}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    assert load_checkpoint(folder, device="cpu").heads.pair == "missing"
    out = albertize(folder, tmp_path / "albert", embedding_size=16)
    facts = read_card(out)["conversion"]
    assert facts["heads"]["pair"] == "absent in the source (no pooler weights)"
    bundle = load_checkpoint(out, device="cpu")
    assert bundle.heads.pair == "missing" and bundle.heads.mlm == "missing"  # E < H: the MLM head is left out too
    assert all(not k.startswith("albert.pooler.") for k in load_file(str(out / "model.safetensors")))


def test_sixty_identical_conversions_make_one_folder(tiny_bert, tmp_path):
    """Each Model card 'Convert' wrote a new runs/albertized/<stem>-N (3 clicks: 26 MB)."""
    import os
    import threading

    from albert_lab.convert import albertize_into

    folder, _ = tiny_bert
    root = tmp_path / "runs" / "albertized"
    results = [albertize_into(root, "bert-e8-all-average", folder, 8, "all", 1, "average") for _ in range(58)]
    both = []
    threads = [threading.Thread(target=lambda: both.append(albertize_into(root, "x", folder, 8, "all", None, "average")))
               for _ in range(2)]  # two clicks at the same instant; groups None is one group
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert [p.name for p in root.iterdir() if not p.name.startswith(".")] == ["bert-e8-all-average"]
    assert results[0] == (root / "bert-e8-all-average", False)
    assert all(r == (root / "bert-e8-all-average", True) for r in results[1:] + both)
    options = read_card(root / "bert-e8-all-average")["conversion"]["options"]
    from albert_lab.checkpoint.sources import describe_source

    assert options["source"] == describe_source(folder) and "sha256" in options["source"]  # portable, as the card's source
    assert options == {"source": options["source"], "source_stamp": options["source_stamp"], "embedding_size": 8,
                       "sharing": "all", "groups": 1, "init": "average", "seed": 0} and options["source_stamp"] > 0
    other, reused = albertize_into(root, "bert-e8-none-average", folder, 8, "none", None, "average")  # another choice
    assert not reused and other.name == "bert-e8-none-average"
    weights = folder / "model.safetensors"
    os.utime(weights, (weights.stat().st_atime, weights.stat().st_mtime + 10))  # the source rewritten: converted afresh
    again, reused = albertize_into(root, "bert-e8-all-average", folder, 8, "all", 1, "average")
    assert not reused and again.name == "bert-e8-all-average-2"


def test_a_conversion_past_the_disk_quota_is_refused_before_the_work(tiny_bert, tmp_path):
    from albert_lab.convert import albertize_into
    from albert_lab.errors import AlbertLabError

    folder, _ = tiny_bert
    root = tmp_path / "runs" / "albertized"
    first, _ = albertize_into(root, "a", folder, 8, "all", 1, "average", quota=50 << 20)
    assert albertize_into(root, "a", folder, 8, "all", 1, "average", quota=1) == (first, True)  # reused: no new bytes
    with pytest.raises(AlbertLabError, match=r"^disk quota: .* this conversion needs"):
        albertize_into(root, "b", folder, 16, "all", 1, "average", quota=1)
    assert sorted(p.name for p in root.iterdir() if not p.name.startswith(".")) == ["a"]


def test_an_all_zero_word_embedding_keeps_all_its_energy(tiny_bert, tmp_path):
    """The card held "embedding_energy_kept": NaN and the command printed 'SVD kept nan%'."""
    from safetensors.torch import load_file, save_file

    folder, _ = tiny_bert
    tensors = load_file(str(folder / "model.safetensors"))
    tensors["bert.embeddings.word_embeddings.weight"].zero_()
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    result = run_cli("albertize", "--checkpoint", str(folder), "--embedding", "8", "--out", str(tmp_path / "albert"))
    assert result.returncode == 0 and "SVD kept 100.0% of the word embeddings' energy" in result.stdout, result.stderr[-2000:]
    assert read_card(tmp_path / "albert")["conversion"]["embedding_energy_kept"] == 1.0
    assert "NaN" not in (tmp_path / "albert" / "albert_lab.json").read_text()
