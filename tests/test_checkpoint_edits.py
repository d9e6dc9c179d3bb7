"""The shipped albert-sop edited one way: each command answers in one line or loads what the files say."""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import ROOT, one_line_error, run_cli

from albert_lab.checkpoint.discover import summarize_checkpoint
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.errors import CheckpointError

SHIPPED = ROOT / "checkpoints" / "albert-sop"


@pytest.fixture
def folder(tmp_path) -> Path:
    out = tmp_path / "albert-sop"
    shutil.copytree(SHIPPED, out)
    return out


def as_directory(weights: Path) -> None:
    weights.unlink()
    weights.mkdir()


def as_symlink_loop(weights: Path) -> None:
    weights.unlink()
    os.symlink(weights.name, weights)


def as_fifo(weights: Path) -> None:
    weights.unlink()
    os.mkfifo(weights)


# Each command line of argv[1] (JSON) run by albert_lab.cli.main in one process: its exit code and standard error.
COMMANDS = """
import contextlib, io, json, sys
from albert_lab.cli import main
answers = []
for args in json.loads(sys.argv[1]):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            code = main(args)
        except SystemExit as exit_:
            code = exit_.code
    answers.append([code, err.getvalue()])
print(json.dumps(answers))
"""


@pytest.mark.parametrize("make, words", [(as_directory, "is a folder, not a file"),
                                         (as_symlink_loop, "Too many levels of symbolic links"),
                                         (as_fifo, "is a FIFO, not a file")])
def test_weights_that_are_not_a_file_never_block_and_never_trace(folder, pairs_file, make, words):
    make(folder / "model.safetensors")
    commands = [["card", str(folder)], ["score", str(pairs_file), "--checkpoint", str(folder)]]
    if make is as_fifo:  # a FIFO blocked open() for ever: both commands in one subprocess with a timeout
        env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
        done = subprocess.run([sys.executable, "-c", COMMANDS, json.dumps(commands)], capture_output=True, text=True,
                              env=env, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        results = [subprocess.CompletedProcess(args, code, "", err) for args, (code, err) in zip(commands, json.loads(done.stdout))]
    else:
        results = [run_cli(*args) for args in commands]
    for result in results:
        one_line_error(result, "model.safetensors", words)


@pytest.mark.parametrize("name", ["config.json", "tokenizer.json", "spiece.model", "albert_lab.json"])
def test_any_file_the_loader_reads_as_a_fifo_is_refused(folder, name):
    (folder / name).unlink()
    os.mkfifo(folder / name)
    with pytest.raises(CheckpointError, match=f"{name} is a FIFO"):
        summarize_checkpoint(folder)


def edit_json(path: Path, **changes) -> None:
    data = json.loads(path.read_text())
    data.update(changes)
    path.write_text(json.dumps(data))


def card_and_score(folder: Path, pairs_file: Path, *words: str) -> None:
    """`card` and `score` both refuse the folder in one line holding `words`."""
    one_line_error(run_cli("card", str(folder)), *words)
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(folder)), *words)


@pytest.mark.parametrize("changes, words", [
    ({"num_hidden_groups": 0}, "num_hidden_groups 0"),  # ZeroDivisionError in score
    ({"num_hidden_layers": 1_000_000_000}, "num_hidden_layers 1000000000"),  # score never finished
    ({"inner_group_num": 1_000_000}, "inner_group_num 1000000"),  # card grew past 1.3 GB
    ({"model_type": "bert"}, "model_type 'bert'"),  # 112 weights random, card said 'trained'
    ({"num_hidden_groups": 4}, "num_hidden_groups 4"),  # 48 encoder weights random, no warning
])
def test_a_config_that_disagrees_with_the_card_is_refused(folder, pairs_file, changes, words):
    edit_json(folder / "config.json", **changes)
    card_and_score(folder, pairs_file, words, "albert_lab.json")


@pytest.mark.parametrize("changes, words", [
    ({"num_hidden_layers": 1_000_000_000, "num_hidden_groups": 1}, "layer applications, more than 1,024"),
    ({"inner_group_num": 1_000_000}, "layer applications"),
    ({"hidden_size": 65536, "intermediate_size": 262144, "num_attention_heads": 4}, "GiB"),
    ({"num_hidden_groups": 0}, "num_groups: must be a positive integer"),
])
def test_without_a_card_the_model_is_bounded_from_its_config(folder, pairs_file, changes, words):
    (folder / "albert_lab.json").unlink()
    edit_json(folder / "config.json", **changes)
    card_and_score(folder, pairs_file, words)


def test_random_encoder_weights_are_refused_missing_heads_are_reported(folder, pairs_file, minilm):
    (folder / "albert_lab.json").unlink()
    edit_json(folder / "config.json", model_type="bert")
    card_and_score(folder, pairs_file, "encoder weights the model needs are not in the weights file", "randomly")
    bundle = load_checkpoint(minilm, device="cpu")  # a BERT without MLM and NSP heads still loads: heads reported
    assert bundle.heads.mlm == "missing" and bundle.heads.pair == "missing" and not bundle.heads.unused


def test_unused_weights_in_the_file_are_named_on_the_card(folder):
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    tensors["classifier.weight"] = tensors["sop_classifier.classifier.weight"].clone()
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    bundle = load_checkpoint(folder, device="cpu")
    assert bundle.heads.unused == ("classifier.weight",)
    assert "holds 1 weight this model has no place for ('classifier.weight')" in bundle.heads.warning
    result = run_cli("card", str(folder))
    assert result.returncode == 0 and "no place for" in result.stdout


def test_nan_weights_are_refused(folder, pairs_file):
    import torch
    from safetensors.torch import load_file, save_file

    clean = load_file(str(folder / "model.safetensors"))
    tensors = {k: torch.full_like(v, float("nan")) for k, v in clean.items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    card_and_score(folder, pairs_file, "weight tensors hold NaN or infinite values")
    name = "albert.embeddings.LayerNorm.weight"
    save_file({**clean, name: torch.full_like(clean[name], float("inf"))}, str(folder / "model.safetensors"),
              metadata={"format": "pt"})
    card_and_score(folder, pairs_file, f"1 weight tensor holds NaN or infinite values ({name})")  # was '1 weight tensor hold'


def test_malformed_heads_in_the_card_are_one_line(folder, pairs_file):
    edit_json(folder / "albert_lab.json", heads={"mlm": 5, "pair": ["x"]})
    card_and_score(folder, pairs_file, "heads.mlm is 5; allowed: trained, untrained, missing, present, probe")


def test_a_tokenizer_config_of_an_unknown_class_without_special_tokens_is_one_line(folder, pairs_file):
    config = json.loads((folder / "tokenizer_config.json").read_text())
    for key in ("pad_token", "cls_token", "sep_token", "extra_special_tokens"):
        config.pop(key, None)
    config["tokenizer_class"] = "NopeTokenizer"
    (folder / "tokenizer_config.json").write_text(json.dumps(config))
    one_line_error(run_cli("score", str(pairs_file), "--checkpoint", str(folder)), "the tokenizer has no pad_token")


def test_a_lone_surrogate_in_the_card_is_one_line(folder, pairs_file):
    (folder / "albert_lab.json").write_text((folder / "albert_lab.json").read_text().replace('"name": "', '"name": "\\ud800', 1))
    card_and_score(folder, pairs_file, "albert_lab.json", "lone surrogate")


# ---- a model that computes NaN is refused, never scored ------------------------------------------------
@pytest.mark.parametrize("changes, words", [
    ({"layer_norm_eps": float("nan")}, "layer_norm_eps"),  # every score NaN: 'prediction 0', exit 0
    ({"layer_norm_eps": -1}, "layer_norm_eps"),
    ({"layer_norm_eps": 0}, "layer_norm_eps"),
    ({"type_vocab_size": 0}, "type_vocab_size"),
])
def test_config_values_that_make_every_output_nan_are_refused(folder, pairs_file, changes, words):
    edit_json(folder / "config.json", **changes)
    card_and_score(folder, pairs_file, words, "config.json")


def test_weights_whose_forward_pass_overflows_are_refused(folder, pairs_file):
    """Weights x 1e30 are finite, so the finite-weights check passed; every logit was NaN and scored."""
    from safetensors.torch import load_file, save_file

    tensors = {k: v * 1e30 if v.is_floating_point() else v for k, v in load_file(str(folder / "model.safetensors")).items()}
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    card_and_score(folder, pairs_file, "NaN or infinite outputs on a probe input")


def test_an_integer_dtype_for_a_float_weight_is_refused(folder):
    """An F32 LayerNorm weight declared I32 (same size) was read as about 1.07e9."""
    import struct

    data = (folder / "model.safetensors").read_bytes()
    (length,) = struct.unpack("<Q", data[:8])
    header = data[8:8 + length].decode()
    at = header.index('"albert.embeddings.LayerNorm.weight"')
    at = header.index('"F32"', at)
    raw = (header[:at] + '"I32"' + header[at + 5:]).encode()  # same length: the offsets still tile the file
    (folder / "model.safetensors").write_bytes(data[:8] + raw + data[8 + length:])
    with pytest.raises(CheckpointError, match=r"LayerNorm\.weight' is stored as I32, an integer type"):
        summarize_checkpoint(folder)


def test_a_model_of_one_token_type_scores_pairs(folder, pairs_file):
    """type_vocab_size 1 (valid BERT configs have it) was an IndexError in score, evaluate, fit-head and training."""
    from safetensors.torch import load_file, save_file

    tensors = load_file(str(folder / "model.safetensors"))
    name = "albert.embeddings.token_type_embeddings.weight"
    tensors[name] = tensors[name][:1].clone()
    save_file(tensors, str(folder / "model.safetensors"), metadata={"format": "pt"})
    edit_json(folder / "config.json", type_vocab_size=1)
    card = json.loads((folder / "albert_lab.json").read_text())
    card["spec"]["type_vocab_size"] = 1
    (folder / "albert_lab.json").write_text(json.dumps(card))
    result = run_cli("score", str(pairs_file), "--checkpoint", str(folder), "--json")
    assert result.returncode == 0, result.stderr[-2000:]
    row = json.loads(result.stdout)[0]
    assert 0 < row["p_ab"] < 1 and row["prediction"] in (0, 1)
