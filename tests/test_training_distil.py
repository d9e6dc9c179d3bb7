"""Distillation while uptraining (--distil-from): what the student is pulled towards, what is
refused, and that a run with a teacher still resumes exactly."""

import json

import pytest
from conftest import cancel_then_resume, one_line_error, run_cli, save_bert

from albert_lab.checkpoint.files import read_card, read_spec
from albert_lab.convert import albertize
from albert_lab.errors import RunError
from albert_lab.training.config import TrainConfig
from albert_lab.training.jobs import create_run
from albert_lab.training.runs import read_run


def _config(init_from, **changes) -> TrainConfig:
    spec = read_spec(init_from, read_card(init_from)).replace(objective="sop", dropout=0.0)
    base = dict(spec=spec.to_dict(), corpus="wiki-vital[:600]", max_seq_len=64, batch_size=8, max_steps=12, warmup_steps=1,
                lr=3e-3, optimizer="adamw", log_every=1, eval_every=1000, eval_limit=16, checkpoint_every=1000,
                gradflow_every=1000, seed=0, threads=1, precision="fp32", init_from=str(init_from))
    return TrainConfig(**{**base, **changes})


def _train(config, runs, name):
    from albert_lab.training.loop import Trainer

    run_dir = create_run(config, runs, name)[0]
    assert Trainer(run_dir, config).run() == "succeeded"
    return [m for m in read_run(run_dir).metrics() if m["kind"] == "train"], run_dir


def test_a_student_equal_to_its_teacher_has_nothing_to_learn_from_it(tiny_bert, tmp_path):
    """Trained for a few steps (so that its card calls the MLM head trained), a BERT is then both
    the start and the teacher of a run: at its first step the hidden states and the MLM
    distributions agree, and the distillation term is zero."""
    folder, _ = tiny_bert
    _, first = _train(_config(folder, max_steps=3), tmp_path / "runs", "first")
    start = first / "checkpoint"
    rows, run_dir = _train(_config(start, max_steps=1, distil_from=str(start), distil_pair=True), tmp_path / "runs", "self")
    assert rows[0]["step"] == 1 and abs(rows[0]["distil_loss"]) < 1e-6
    taught = read_card(run_dir / "checkpoint")["provenance"]["distilled_from"]
    assert taught["folder"].startswith("checkpoint (a folder outside the project; model.safetensors sha256 ")
    assert str(tmp_path) not in json.dumps(read_card(run_dir / "checkpoint")) and taught["mlm_distribution_matched"] is True
    assert taught["pair_distribution_matched"] is True
    assert taught["hidden_states_matched"] == [0, 1, 2, 3]


def test_distillation_pulls_a_shared_student_towards_its_teacher(tiny_bert, tmp_path):
    """An ALBERT made from the BERT (E < H, all layers shared) starts away from it. Trained with
    the BERT as its teacher it ends nearer to it than the same run whose distillation term is
    weighted 1e-6 (logged, hardly learned from)."""
    folder, _ = tiny_bert
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    rows, run_dir = _train(_config(student, distil_from=str(folder), distil_weight=2.0, max_steps=20), tmp_path / "runs", "taught")
    barely, _ = _train(_config(student, distil_from=str(folder), distil_weight=1e-6, max_steps=20), tmp_path / "runs", "barely")
    assert rows[0]["distil_loss"] == pytest.approx(barely[0]["distil_loss"], rel=1e-6) and rows[0]["distil_loss"] > 0.3
    assert rows[-1]["distil_loss"] < 0.75 * barely[-1]["distil_loss"], (rows[-1], barely[-1])
    for r in rows:  # loss = MLM + pair + weight x distillation, as logged
        assert r["loss"] == pytest.approx(r["mlm_loss"] + r["pair_loss"] + 2.0 * r["distil_loss"], rel=1e-5)
    taught = read_card(run_dir / "checkpoint")["provenance"]["distilled_from"]
    assert taught["mlm_distribution_matched"] is False  # a transformers folder without our card: 'present', not trained
    assert taught["hidden_states_matched"] == [0, 1, 2, 3]  # albertize keeps the depth: state i against state i
    plain, _ = _train(_config(student, max_steps=2), tmp_path / "runs", "plain")
    assert "distil_loss" not in plain[0]


def test_a_teacher_of_another_width_or_vocabulary_is_refused_before_the_run(tiny_bert, tmp_path, tokenizer, small_corpus):
    import json

    from albert_lab.tokenizer import load_tokenizer, train_tokenizer
    from albert_lab.training.prepare import prepare

    folder, _ = tiny_bert
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    wide = tmp_path / "wide"
    save_bert(wide, tokenizer)
    config = json.loads((wide / "config.json").read_text())
    (wide / "config.json").write_text(json.dumps({**config, "hidden_size": 48}))
    with pytest.raises(RunError, match="hidden size is 48, the model's 32"):
        prepare(_config(student, distil_from=str(wide)))
    train_tokenizer([s for d in small_corpus.train for s in d.segments], tmp_path / "other", vocab_size=900)
    vocab, _ = save_bert(tmp_path / "vocab", load_tokenizer(tmp_path / "other"))
    with pytest.raises(RunError, match="another vocabulary"):
        prepare(_config(student, distil_from=str(vocab)))
    result = run_cli("train", "--init-from", str(student), "--distil-from", str(tmp_path / "nowhere"), "--steps", "1",
                     "--runs-dir", str(tmp_path / "r"), "--corpus", "wiki-vital[:600]", "--seq-len", "64")
    one_line_error(result, "distil_from")
    with pytest.raises(RunError, match="distil_weight"):
        TrainConfig(distil_weight=0.0).validate()


def test_a_run_with_a_teacher_resumes_exactly(tiny_bert, tmp_path, monkeypatch):
    folder, _ = tiny_bert
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    config = _config(student, distil_from=str(folder), max_steps=10)
    straight, _ = _train(config, tmp_path / "runs", "straight")
    split = create_run(config, tmp_path / "runs", "split")[0]
    cancel_then_resume(split, 5, monkeypatch)
    a = {m["step"]: m for m in straight}
    b = {m["step"]: m for m in read_run(split).metrics() if m["kind"] == "train"}
    assert read_run(split).status == "succeeded" and sorted(b) == sorted(a)
    for step in (6, 10):
        assert abs(a[step]["loss"] - b[step]["loss"]) < 1e-5 * a[step]["loss"], step
        assert abs(a[step]["distil_loss"] - b[step]["distil_loss"]) < 1e-5 * a[step]["distil_loss"], step


def test_the_pair_terms_match_what_the_pair_head_reads_and_says(tiny_bert, tmp_path):
    """--distil-pair matches [CLS] through the pooled vector instead of layer by layer: it adds
    the relative squared error of the pooled vectors and KL(teacher || student) of the pair
    distributions per pair, and its hidden-state term leaves [CLS] out. All computed by hand
    here from the two models' own states, pooled vectors and pair logits."""
    import torch
    import torch.nn.functional as F

    from albert_lab.distil import distillation_loss, load_teacher
    from albert_lab.models import Parts
    from albert_lab.training.loop import Trainer

    folder, _ = tiny_bert
    _, first = _train(_config(folder, max_steps=3), tmp_path / "runs", "first")
    teacher_dir = first / "checkpoint"
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    config = _config(student, distil_from=str(teacher_dir))
    trainer = Trainer(create_run(config, tmp_path / "runs", "student")[0], config)
    batch = trainer.data.batch(0)
    out = Parts.of(trainer.model).encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                                          token_type_ids=batch.token_type_ids, output_hidden_states=True)
    parts = Parts.of(trainer.model)
    mlm = parts.mlm_head(out.last_hidden_state.reshape(-1, 32).index_select(0, batch.mlm_positions))
    pair = parts.pair_head(out.pooler_output)  # (B, 2)
    spec, tok = trainer.prepared.spec, trainer.prepared.tokenizer
    with_pair = load_teacher(teacher_dir, spec, tok, torch.device("cpu"), pair=True)
    without = load_teacher(teacher_dir, spec, tok, torch.device("cpu"))
    t = Parts.of(with_pair.model)
    with torch.no_grad():
        taught = t.encoder(input_ids=batch.input_ids, attention_mask=batch.attention_mask,
                           token_type_ids=batch.token_type_ids, output_hidden_states=True)
        pooled = taught.pooler_output
        p = F.softmax(t.pair_head(pooled), -1)

    def hidden_error(first: int) -> torch.Tensor:  # relative error from token `first` on, mean over the states
        keep = batch.attention_mask[:, first:, None].float()
        return torch.stack([((s[:, first:] - h[:, first:]).square() * keep).sum() / (h[:, first:].square() * keep).sum()
                            for s, h in zip(out.hidden_states, taught.hidden_states, strict=True)]).mean()

    kl = (p * (p.log() - F.log_softmax(pair, -1))).sum(-1).mean()
    error = (out.pooler_output - pooled).square().sum() / pooled.square().sum()
    args = (batch, out.hidden_states, mlm, out.pooler_output, pair)
    gap = distillation_loss(with_pair, *args) - distillation_loss(without, *args)
    shift = hidden_error(1) - hidden_error(0)  # the hidden-state term without [CLS], less the one with it
    kl, error, gap, shift = (float(x.detach()) for x in (kl, error, gap, shift))
    assert kl > 1e-4 and error > 1e-3 and abs(shift) > 1e-5 and gap == pytest.approx(kl + error + shift, rel=1e-4)


def test_a_pair_head_is_distilled_only_from_a_teacher_trained_for_the_same_task(tiny_bert, tmp_path):
    """An NSP student never learns order from a SOP teacher's head, nor from a head nobody trained."""
    from albert_lab.training.prepare import prepare

    folder, _ = tiny_bert
    _, first = _train(_config(folder, max_steps=3), tmp_path / "runs", "sop-teacher")  # trained with SOP
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    with pytest.raises(RunError, match=r"distil_pair: .*pair head is trained with SOP, the model's objective is NSP"):
        prepare(_config(student, objective="nsp", distil_from=str(first / "checkpoint"), distil_pair=True))
    with pytest.raises(RunError, match=r"distil_pair: .*pair head is not known to be trained"):  # a transformers folder: nobody says it trained
        prepare(_config(student, distil_from=str(folder), distil_pair=True))
    with pytest.raises(RunError, match="distil_pair: matches a teacher's pair head"):
        _config(student, distil_pair=True).validate()


def _edited_weights(folder, change, **config_changes):
    import json

    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    change(tensors)
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **config_changes}))
    return folder


def test_bad_starting_checkpoints_and_teachers_are_refused_before_a_run_folder_exists(tiny_bert, tmp_path, tokenizer):
    """A teacher of 1 position broadcast silently (of 32 against --seq-len 64: a shape traceback); NaN weights in
    --init-from or --distil-from, or a tokenizer larger than the embeddings, were refused in the worker after the run
    folder existed (exit 1, a failed run)."""
    import shutil

    folder, _ = tiny_bert
    student = albertize(folder, tmp_path / "conv", embedding_size=8, sharing="all")
    position = "bert.embeddings.position_embeddings.weight"
    for n in (1, 32):
        short = _edited_weights(save_bert(tmp_path / f"short{n}", tokenizer)[0],
                                lambda t, n=n: t.update({position: t[position][:n].clone()}), max_position_embeddings=n)
        with pytest.raises(RunError, match=f"the teacher has {n} positions?, the run's pairs are 64 tokens"):
            from albert_lab.training.prepare import prepare

            prepare(_config(student, distil_from=str(short)))
    nan = tmp_path / "nan"
    shutil.copytree(student, nan)
    _edited_weights(nan, lambda t: t.update({k: v * float("nan") for k, v in t.items() if k.endswith("LayerNorm.weight")}))
    wide = save_bert(tmp_path / "wide", tokenizer, vocab_size=len(tokenizer) // 2)[0]  # more pieces than embeddings
    runs, pieces = tmp_path / "runs", f"the tokenizer has {len(tokenizer):,} pieces but the model's word embeddings hold"
    for flags, words in ((("--init-from", str(nan)), "NaN or infinite values"),
                         (("--init-from", str(student), "--distil-from", str(nan)), "NaN or infinite values"),
                         (("--init-from", str(wide)), pieces), (("--init-from", str(student), "--distil-from", str(wide)), pieces),
                         (("--init-from", str(student), "--distil-from", str(tmp_path / "short32")), "the teacher has 32 positions")):
        result = run_cli("train", *flags, "--steps", "1", "--runs-dir", str(runs), "--corpus", "wiki-vital[:600]",
                         "--seq-len", "64", "--foreground")
        one_line_error(result, words)
        assert not runs.exists() or not any(runs.iterdir()), "a run folder was made for a refused start"
