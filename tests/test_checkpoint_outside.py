"""Checkpoints the lab did not train: a real sentence-transformers encoder without MLM or NSP head, hub-style folders."""

import json
import shutil
import zipfile

import pandas as pd
import pytest
import torch
from conftest import CORPUS, HEADER, one_line_error, run_cli, save_bert

from albert_lab.checkpoint.heads import HeadStatus
from albert_lab.cli.inputs import distinct_labels
from albert_lab.errors import AlbertLabError, CheckpointError


def test_minilm_card_shows_both_heads_missing(minilm):
    result = run_cli("card", str(minilm), "--json", "--device", "cpu")
    assert result.returncode == 0, result.stderr
    card = json.loads(result.stdout)
    assert card["heads"] == {"mlm": "missing", "pair": "missing", "pair_kind": "nsp"}
    assert card["spec"]["family"] == "bert" and card["spec"]["num_layers"] == 6 and card["spec"]["hidden_size"] == 384
    assert "MLM head and NSP head weights are missing" in card["warning"] and "ALBERT" not in card["warning"]
    assert card["name"] == "all-MiniLM-L6-v2"  # its model card's title, not its package folder 'model'
    assert card["spec_label"].endswith("pair objective not recorded") and card["spec"]["objective"] == "not recorded"


TEXTS = ["The river flows through the old town. Its bridges date from the middle ages.",
         "Photosynthesis turns light into chemical energy. Plants store it as sugar."]


def test_minilm_oscillation_matches_transformers(minilm):
    from transformers import AutoTokenizer, BertModel

    result = run_cli("oscillation", "--checkpoint", str(minilm), *[a for t in TEXTS for a in ("--text", t)], "--json")
    assert result.returncode == 0, result.stderr
    rows = pd.DataFrame(json.loads(result.stdout))
    tokenizer = AutoTokenizer.from_pretrained(str(minilm))
    model = BertModel.from_pretrained(str(minilm)).eval()  # independent of albert_lab's loading
    enc = tokenizer(TEXTS, padding=True, return_tensors="pt")
    with torch.no_grad():
        states = model(**enc, output_hidden_states=True).hidden_states
    mask = enc["attention_mask"].bool()
    for layer in range(1, 7):
        before, after = states[layer - 1][mask].double(), states[layer][mask].double()
        l2 = (after - before).norm(dim=-1).mean().item()
        cos = torch.nn.functional.cosine_similarity(after, before, dim=-1).clamp(-1, 1)
        angle = torch.rad2deg(torch.arccos(cos)).mean().item()
        row = rows[rows.layer == layer].iloc[0]
        assert row.l2 == pytest.approx(l2, abs=1e-5, rel=1e-5) and row.angle_deg == pytest.approx(angle, abs=1e-4)
    assert list(rows.layer) == [1, 2, 3, 4, 5, 6]


def test_minilm_score_json_has_no_numbers_from_a_random_head(minilm, tmp_path):
    pairs = tmp_path / "pairs.csv"
    pairs.write_text("sentence_a,sentence_b,label\nThe sun rose.,Birds began to sing.,0\nIt rained.,Then it stopped.,0\n")
    result = run_cli("score", str(pairs), "--checkpoint", str(minilm), "--json")
    assert result.returncode == 0, result.stderr
    rows = json.loads(result.stdout)  # valid JSON: no bare NaN
    assert len(rows) == 2 and all(r["p_ab"] is None and r["p_ba"] is None and r["prediction"] is None for r in rows)
    assert all(r["head_status"] == "missing" and r["note"].startswith("not scored") for r in rows)
    assert "MLM head and NSP head" in result.stderr


def test_minilm_gradflow_refuses_in_one_line(minilm):
    line = one_line_error(run_cli("gradflow", "--checkpoint", str(minilm), "--text", TEXTS[0]), alone=True)
    assert "MLM head is missing" in line and "NSP head is missing too" in line


def test_minilm_evaluate_scores_nothing(minilm):
    result = run_cli("evaluate", "--checkpoint", str(minilm), "--corpus", "wiki-vital[:600]", "--limit", "10", "--no-ood",
                     "--json")
    assert result.returncode == 0, result.stderr
    rows = pd.DataFrame(json.loads(result.stdout))
    assert set(rows.metric) >= {"mlm", "nsp", "sop"} and rows.accuracy.isna().all() and rows.hits.isna().all()
    assert rows.set_index("metric").loc["mlm", "note"] == "not scored: the MLM head is missing from the checkpoint"
    assert (rows.mlm_head == "missing").all() and (rows.pair_head == "missing").all()
    # no card and no pair head: nothing says how it was trained (it was labelled 'trained with NSP')
    assert (rows.trained_with == "unknown").all()
    text = run_cli("evaluate", "--checkpoint", str(minilm), "--corpus", "wiki-vital[:600]", "--limit", "10", "--no-ood")
    assert "NSP" not in text.stdout.splitlines()[2] and "UNKNOWN" in text.stdout.splitlines()[2]


def test_minilm_attribution_refused(minilm):
    from albert_lab.analysis.attribution import attribute_pair
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(minilm, device="cpu")
    assert bundle.heads.mlm == "missing" and bundle.heads.pair == "missing"
    with pytest.raises(AlbertLabError, match="pair head is missing"):
        attribute_pair(bundle, "The sun rose.", "Birds sang.")


def test_warnings_name_each_missing_head_in_the_family_words():
    bert = HeadStatus(mlm="missing", pair="missing", pair_kind="nsp", family="bert")
    assert bert.missing == ["MLM head", "NSP head"] and "ALBERT" not in bert.warning
    albert = HeadStatus(mlm="present", pair="missing", pair_kind="sop", family="albert")
    assert albert.missing == ["SOP head"] and "SOP head weights are missing" in albert.warning
    assert "model hub's ALBERT checkpoints" in albert.warning and "MLM" not in albert.warning
    mlm_only = HeadStatus(mlm="missing", pair="trained", pair_kind="sop", family="albert")
    assert "The MLM head weights are missing" in mlm_only.warning and "initialise it randomly" in mlm_only.warning
    assert mlm_only.missing == ["MLM head"] and "masked-token predictions" in mlm_only.warning
    assert HeadStatus(mlm="trained", pair="trained", pair_kind="sop").warning is None


def test_gradflow_without_pair_head_refuses_or_uses_mlm_only(shipped):
    from albert_lab.analysis.gradflow import gradient_flow
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(shipped / "hub-albert", device="cpu")
    with pytest.raises(CheckpointError, match="--objective none"):
        gradient_flow(bundle, TEXTS, objective="sop")  # asked for: refused, never a random head's gradient
    first, again = (gradient_flow(bundle, TEXTS, objective="none", seed=3) for _ in range(2))
    pd.testing.assert_frame_equal(first, again)  # deterministic for a seed
    pd.testing.assert_frame_equal(gradient_flow(bundle, TEXTS, seed=3), first)  # unasked: the MLM loss alone, as the page
    assert "pair head" not in set(first.component)  # no gradient reaches the random head


def test_labels_distinct_when_folder_names_collide(shipped, tmp_path):
    assert distinct_labels(["model", "model", "x"], ["/p/a/model", "/p/b/model", "x"]) == ["a/model", "b/model", "x"]
    assert distinct_labels(["m", "m"], ["/a/m", "/a/m"]) == ["a/m", "a/m (2)"]
    for parent in ("a", "b"):
        shutil.copytree(shipped / "albert-sop", tmp_path / parent / "model")
    result = run_cli("oscillation", "--checkpoint", str(tmp_path / "a" / "model"), "--checkpoint", str(tmp_path / "b" / "model"),
                     "--text", TEXTS[0], "--json")
    assert result.returncode == 0, result.stderr
    rows = pd.DataFrame(json.loads(result.stdout))
    assert rows.groupby("checkpoint").size().to_dict() == {"a": 3, "b": 3}  # a folder named "model": the one above


def test_sentence_transformers_folder_loads_its_transformer(shipped, tmp_path):
    from albert_lab.checkpoint.discover import summarize_checkpoint
    from albert_lab.checkpoint.load import load_checkpoint

    root = tmp_path / "my-encoder"
    shutil.copytree(shipped / "bert-nsp", root / "0_Transformer")
    (root / "1_Pooling").mkdir()
    (root / "modules.json").write_text(json.dumps([
        {"idx": 0, "name": "0", "path": "0_Transformer", "type": "sentence_transformers.models.Transformer"},
        {"idx": 1, "name": "1", "path": "1_Pooling", "type": "sentence_transformers.models.Pooling"}]))
    bundle = load_checkpoint(root, device="cpu")
    assert bundle.name == "my-encoder" and bundle.spec.family == "bert" and bundle.heads.pair == "trained"
    assert summarize_checkpoint(root).name == "my-encoder"


def test_bad_input_ends_in_one_line_saying_what_to_do(shipped, tmp_path):
    archive = tmp_path / "model.zip"
    with zipfile.ZipFile(archive, "w") as z:
        z.write(shipped / "albert-sop" / "config.json", "config.json")
    assert "unpack it" in one_line_error(run_cli("card", str(archive)), alone=True)
    parent = tmp_path / "downloads"
    shutil.copytree(shipped / "albert-sop", parent / "inner")
    line = one_line_error(run_cli("card", str(parent)), alone=True)
    assert "no config.json" in line and str(parent / "inner") in line
    broken = tmp_path / "broken"
    shutil.copytree(shipped / "albert-sop", broken)
    weights = broken / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[: weights.stat().st_size // 2])
    line = one_line_error(run_cli("oscillation", "--checkpoint", str(broken), "--text", TEXTS[0]), alone=True)
    assert "damaged or truncated" in line and "model.safetensors" in line
    assert "invalid choice" in run_cli("card", str(broken), "--device", "gpu0").stderr
    from albert_lab.checkpoint.loadable import make_loadable

    tf = tmp_path / "albert_base"
    tf.mkdir()
    (tf / "model.ckpt-best.index").write_bytes(b"")
    for path in (tf, tf / "model.ckpt-best.index"):
        with pytest.raises(CheckpointError, match=r"TensorFlow checkpoint.*(albert_config.json|release folder)"):
            make_loadable(path)


def test_a_tokenizer_of_another_model_with_more_pieces_is_refused(shipped, minilm, tmp_path):
    """MiniLM's 30,522 pieces beside a 1,000-piece model's weights: attention and evaluate ended in an
    IndexError, oscillation quietly read the text with another model's tokenizer."""
    mixed = tmp_path / "mixed"
    shutil.copytree(shipped / "albert-sop", mixed)
    for name in ("spiece.model", "tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        (mixed / name).unlink(missing_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json", "vocab.txt", "special_tokens_map.json"):
        shutil.copy(minilm / name, mixed / name)
    for command in ("oscillation", "attention"):
        one_line_error(run_cli(command, "--checkpoint", str(mixed), "--text", TEXTS[0]),
                       "the tokenizer has 30,522 pieces but the model's word embeddings hold 1,000")


def test_a_bert_of_one_token_type_is_scored_evaluated_probed_and_trained(tokenizer, tmp_path):
    """type_vocab_size 1 (valid in BERT configs) was an IndexError in score, evaluate, fit-head,
    gradflow, and training with it as --init-from or --distil-from (at the first gradient-flow record)."""
    bert, _ = save_bert(tmp_path / "one-type", tokenizer, layers=2, type_vocab_size=1)
    (pairs := tmp_path / "p.csv").write_bytes(HEADER + b"The sky is blue.,It rains often.\n")
    result = run_cli("score", str(pairs), "--checkpoint", str(bert), "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    assert 0 < json.loads(result.stdout)[0]["p_ab"] < 1
    result = run_cli("evaluate", "--checkpoint", str(bert), "--corpus", CORPUS, "--limit", "8", "--no-ood", "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    rows = json.loads(result.stdout)
    assert {row["metric"] for row in rows} >= {"mlm", "nsp", "sop"} and all(0 <= row["accuracy"] <= 1 for row in rows)
    result = run_cli("gradflow", "--checkpoint", str(bert), "--text", TEXTS[0], "--text", TEXTS[1], "--objective", "nsp", "--json")
    assert result.returncode == 0 and json.loads(result.stdout), result.stderr[-2000:]
    result = run_cli("fit-head", "--checkpoint", str(bert), "--corpus", CORPUS, "--train-pairs", "24", "--heldout-pairs",
                     "16", "--steps", "3", "--replace", "--out", str(tmp_path / "probe"))
    assert result.returncode == 0 and (tmp_path / "probe" / "model.safetensors").is_file(), result.stderr[-2000:]
    result = run_cli("train", "--init-from", str(bert), "--distil-from", str(bert), "--steps", "2", "--foreground",
                     "--corpus", CORPUS, "--batch-size", "4", "--seq-len", "64", "--threads", "1",
                     "--runs-dir", str(tmp_path / "runs"), "--run-id", "one-type")
    assert result.returncode == 0 and "run one-type: succeeded" in result.stdout, result.stderr[-2000:]


def _times_1e30(folder) -> None:
    from safetensors.torch import load_file, save_file

    tensors = {k: v * 1e30 for k, v in load_file(str(folder / "model.safetensors")).items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})


def _config(**changes):
    def edit(folder) -> None:
        config = json.loads((folder / "config.json").read_text())
        (folder / "config.json").write_text(json.dumps({**config, **changes}))
    return edit


@pytest.mark.parametrize("edit, words", [(_config(layer_norm_eps=float("nan")), "layer_norm_eps"),
                                         (_config(layer_norm_eps=-1), "'layer_norm_eps' expected float, got int (value: -1)"),
                                         (_times_1e30, "NaN or infinite outputs on a probe input")])
def test_a_bert_that_computes_nan_is_refused_by_every_command(tiny_bert, tokenizer, tmp_path, pairs_file, edit, words):
    """Its scores were NaN: score printed p_ab null (exit 0), evaluate reported accuracies of NaN logits,
    albertize ended in an lstsq traceback, and as --distil-from the run failed blaming the learning rate."""
    good, _ = tiny_bert
    bad, _ = save_bert(tmp_path / "bad", tokenizer)
    edit(bad)
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(bad)), words)
    one_line_error(run_cli("evaluate", "--checkpoint", str(bad), "--corpus", CORPUS, "--limit", "8", "--no-ood"), words)
    one_line_error(run_cli("albertize", "--checkpoint", str(bad), "--embedding", "8", "--out", str(tmp_path / "albert")), words)
    runs = tmp_path / "runs"
    one_line_error(run_cli("train", "--init-from", str(good), "--distil-from", str(bad), "--steps", "2", "--foreground",
                           "--corpus", CORPUS, "--seq-len", "64", "--runs-dir", str(runs)), "distil_from", words)
    assert not (tmp_path / "albert").exists() and (not runs.exists() or not any(runs.iterdir()))


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs CUDA")
def test_oscillation_on_cuda_matches_cpu(shipped):
    from albert_lab.analysis.oscillation import oscillation
    from albert_lab.checkpoint.load import load_checkpoint

    frames = [oscillation(load_checkpoint(shipped / "albert-sop", device=d), TEXTS) for d in ("cpu", "cuda")]
    assert frames[1].l2.to_numpy() == pytest.approx(frames[0].l2.to_numpy(), rel=1e-4)
