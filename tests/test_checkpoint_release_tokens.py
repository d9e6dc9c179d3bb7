"""Google's releases tokenised as their own code tokenises, and scored as transformers 4.46 scores them.

The fixture (tests/fixtures/tokenization) was written by transformers 4.46's slow tokenizers and TF
loaders in a throwaway environment (tests/fixtures/make_tokenization.py): 2,000+ strings of every kind
(numbers with separators, dates, URLs, CJK, Korean, Arabic, Devanagari, emoji, accents, mixed case,
control characters, very long words, odd whitespace, special tokens typed in the text) through six
tokenizers, long pairs cut at 128 tokens, and pair probabilities of the kinds the project once got wrong."""

from __future__ import annotations

import csv
import json
import shutil
import zipfile
from pathlib import Path

import numpy as np
import pytest
import torch
from conftest import ROOT, one_line_error, run_cli
from tf_bundle import Spec, spiece_pieces, write_index
from tolerance import probability_bound, relative_bound

from albert_lab.analysis.pair_encoding import encode_pairs
from albert_lab.checkpoint.release import bert_gelu, release_casing
from albert_lab.checkpoint.tf1 import read_bundle
from albert_lab.tokenizer import release_tokenizer

FIXTURES = Path(__file__).parent / "fixtures"
RELEASES, TOKENS = FIXTURES / "tf_releases", FIXTURES / "tokenization"
ALBERT, BERT = RELEASES / "albert_tiny", RELEASES / "uncased_L-2_H-16_A-2"
STRINGS = json.loads((TOKENS / "strings.json").read_text())
IDS = json.loads((TOKENS / "ids.json").read_text())
SCORES = json.loads((TOKENS / "scores.json").read_text())
TOKENIZERS = {"albert_tiny": (ALBERT / "30k-clean.model", "albert", True), "albert_mixed": (TOKENS / "mixed.model", "albert", True),
              "bert_uncased": (BERT / "vocab.txt", "bert", True), "bert_cased": (BERT / "vocab.txt", "bert", False),
              "bert_mixed_uncased": (TOKENS / "mixed_vocab.txt", "bert", True),
              "bert_mixed_cased": (TOKENS / "mixed_vocab.txt", "bert", False)}


@pytest.mark.parametrize("name", list(TOKENIZERS))
def test_release_tokenizers_give_googles_ids_string_by_string(name):
    tokenizer = release_tokenizer(*TOKENIZERS[name])
    expected = IDS["tokenizers"][name]
    assert len(STRINGS["strings"]) >= 2000
    wrong = [(s, tokenizer(s)["input_ids"], ids) for s, ids in zip(STRINGS["strings"], expected["ids"])
             if tokenizer(s)["input_ids"] != ids]
    assert not wrong, f"{len(wrong)} strings differ, e.g. {wrong[:2]}"
    first, second = [a for a, _ in STRINGS["pairs"]], [b for _, b in STRINGS["pairs"]]
    encoded = encode_pairs(tokenizer, first, second, IDS["max_length"])
    for row, ids in enumerate(expected["pairs"]):  # cut as _truncate_seq_pair cuts, from B on a tie
        assert encoded["input_ids"][row][:len(ids)].tolist() == ids and int(encoded["attention_mask"][row].sum()) == len(ids)


def test_the_fast_tokenizer_would_have_differed(tmp_path):
    """The fixture tells the releases' code from transformers 5's fast ALBERT tokenizer (what releases
    were tokenised with before) on the kinds it got wrong: the comma after a digit, Korean."""
    from transformers import AlbertTokenizer

    shutil.copy(TOKENS / "mixed.model", tmp_path / "spiece.model")
    fast = AlbertTokenizer.from_pretrained(str(tmp_path), do_lower_case=True, keep_accents=False)
    slow = release_tokenizer(*TOKENIZERS["albert_mixed"])
    for text in ("in 1,999, then", "한국어 문장입니다."):
        assert fast(text)["input_ids"] != slow(text)["input_ids"], text


def _pairs_csv(folder: Path) -> Path:
    file = folder / "pairs.csv"
    with open(file, "w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["sentence_a", "sentence_b"])
        writer.writerows(SCORES["pairs"])
    return file


def _hub_copy(tmp_path: Path, drop: str | None = None) -> Path:
    """albert_tiny as a TF-Hub export writes it: every variable under module/ (one left out if `drop`)."""
    folder = tmp_path / "albert_tiny"
    shutil.copytree(ALBERT, folder)
    bundle = read_bundle(folder / "model.ckpt-best")
    entries = {f"module/{n}": Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items() if n != drop}
    write_index(folder / "model.ckpt-best.index", entries)
    return folder


def _flat_zip(tmp_path: Path, source: Path, name: str) -> Path:
    archive = tmp_path / name
    with zipfile.ZipFile(archive, "w") as handle:
        for file in source.iterdir():
            handle.write(file, file.name)
    return archive


@pytest.mark.parametrize(("reference", "source"), [("albert_tiny", "folder"), ("albert_tiny", "module/"),
                                                   ("uncased_tanh", "folder"), ("cased_erf", "flat zip")])
def test_score_equals_transformers_446_on_the_six_kinds(tmp_path, reference, source):
    """`albert-lab score` against transformers 4.46's loader + slow tokenizer: numbers with commas, Korean,
    long pairs, a cased release (a flat zip named cased_L-12_H-768_A-12: cased, and a 2018 name, so the erf
    GELU), TF-Hub's module/ names, and the GELU each release computes."""
    ref = SCORES[reference]
    checkpoint = {"folder": ALBERT if reference == "albert_tiny" else BERT, "module/": _hub_copy(tmp_path),
                  "flat zip": _flat_zip(tmp_path, BERT, "cased_L-12_H-768_A-12.zip")}[source]
    result = run_cli("score", str(_pairs_csv(tmp_path)), "--checkpoint", str(checkpoint), "--json")
    assert result.returncode == 0, result.stderr
    p_ab = np.array([row["p_ab"] for row in json.loads(result.stdout)])
    spec = json.loads(run_cli("card", str(checkpoint), "--json").stdout)["spec"]
    family = "albert" if reference == "albert_tiny" else "bert"
    tokens = max(len(ids) for ids in ref["input_ids"])
    bounds = [probability_bound(relative_bound(family, spec, tokens), z) for z in ref["logits"]]
    assert np.all(np.abs(p_ab - ref["p"]) <= bounds), (np.abs(p_ab - ref["p"]).max(), min(bounds))
    assert np.abs(p_ab - ref["p"]).max() < 1e-5  # the figure, with the bound above as what every CPU holds to


def test_pair_logits_tell_which_gelu_is_computed(tmp_path):
    """The cased 2018-named copy computes the erf GELU, the smaller-BERT-named folder the tanh one: the pair
    logits of the first pair (the same ids in both) match their own form, and the two forms differ by more
    than the bound."""
    from albert_lab.checkpoint.load import load_checkpoint

    logits = {}
    for name, source in (("uncased_tanh", BERT), ("cased_erf", _flat_zip(tmp_path, BERT, "cased_L-12_H-768_A-12.zip"))):
        bundle = load_checkpoint(source, device="cpu")
        ids = SCORES[name]["input_ids"][0]
        assert bundle.tokenizer(*SCORES["pairs"][0], truncation=True, max_length=64)["input_ids"] == ids
        sep = ids.index(bundle.tokenizer.sep_token_id)
        types = [0] * (sep + 1) + [1] * (len(ids) - sep - 1)
        with torch.no_grad():
            out = bundle.model(input_ids=torch.tensor([ids]), token_type_ids=torch.tensor([types]))
        logits[name] = out.seq_relationship_logits[0].numpy()
        bound = relative_bound("bert", bundle.spec.to_dict(), len(ids)) * max(1.0, *np.abs(SCORES[name]["logits"][0]))
        np.testing.assert_allclose(logits[name], SCORES[name]["logits"][0], atol=bound, rtol=0)
    assert SCORES["uncased_tanh"]["input_ids"][0] == SCORES["cased_erf"]["input_ids"][0]
    assert np.abs(np.subtract(SCORES["uncased_tanh"]["logits"][0], SCORES["cased_erf"]["logits"][0])).max() > 2 * bound


def test_casing_and_gelu_follow_the_release_name():
    assert release_casing("cased_L-12_H-768_A-12", "bert")[0] is False
    assert release_casing("uncased_L-12_H-768_A-12", "bert")[0] is True
    assert release_casing("multi_cased_L-12_H-768_A-12", "bert")[0] is False
    assert release_casing("chinese_L-12_H-768_A-12", "bert")[0] is True  # as BERT's validate_case_matches_checkpoint
    assert release_casing("albert_base", "albert")[0] is True
    assert bert_gelu("uncased_L-12_H-768_A-12")[0] == bert_gelu("multi_cased_L-12_H-768_A-12")[0] == "gelu"
    assert bert_gelu("wwm_uncased_L-24_H-1024_A-16")[0] == bert_gelu("uncased_L-4_H-256_A-4")[0] == "gelu_new"
    assert "bee6030" in bert_gelu("cased_L-24_H-1024_A-16")[1]


def test_a_flat_archive_is_named_and_cased_by_its_name_and_casing_can_be_overridden(tmp_path):
    archive = _flat_zip(tmp_path, BERT, "cased_L-12_H-768_A-12.zip")
    card = json.loads(run_cli("card", str(archive), "--json").stdout)
    provenance = card["provenance"]
    assert provenance["release"] == card["name"] == "cased_L-12_H-768_A-12"  # named as import-tf names it, not by its file
    assert provenance["casing"].startswith("cased: the release's name 'cased_L-12_H-768_A-12' says cased")
    assert provenance["activation"].startswith("gelu (exact erf GELU)") and card["spec"]["activation"] == "gelu"
    card = json.loads(run_cli("card", str(archive), "--json", "--uncased").stdout)
    assert card["provenance"]["casing"].startswith("lower-cased: --uncased given (the release says cased")
    pairs = tmp_path / "p.csv"
    pairs.write_text("sentence_a,sentence_b\nThe City Of Paris,The River\n")
    scores = {}
    for flag in ("--cased", "--uncased"):
        result = run_cli("score", str(pairs), "--checkpoint", str(archive), flag, "--json")
        assert result.returncode == 0, result.stderr
        scores[flag] = json.loads(result.stdout)[0]["p_ab"]
    assert scores["--cased"] != scores["--uncased"]  # 'The' is [UNK] cased, 'the' uncased
    one_line_error(run_cli("card", str(ROOT / "checkpoints" / "albert-sop"), "--cased"), "apply to Google's original releases")


# ---- bad releases: one line, exit 2 --------------------------------------------------------------
def test_a_module_prefixed_release_with_a_missing_variable_names_it(tmp_path):
    one_line_error(run_cli("card", str(_hub_copy(tmp_path, drop="cls/seq_relationship/output_bias"))),
                   "lacks 1 variable", "module/cls/seq_relationship/output_bias")


@pytest.mark.parametrize("content", [b"", b"\x00" * 7, b"not a model at all" * 50, None], ids=["empty", "zeros", "text", "truncated"])
def test_a_broken_sentencepiece_model_is_one_line(tmp_path, content):
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    model = folder / "30k-clean.model"
    model.write_bytes(model.read_bytes()[:200] if content is None else content)
    one_line_error(run_cli("card", str(folder)), "not a SentencePiece model")


def test_a_sentencepiece_model_cut_after_its_special_pieces_is_one_line(tmp_path):
    """Cut in half at a piece's end, the model still loads (30 of 60 pieces): `card` said nothing."""
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    model = folder / "30k-clean.model"
    data = model.read_bytes()
    model.write_bytes(data[:spiece_pieces(data)[29]])
    one_line_error(run_cli("card", str(folder)), "holds 30 pieces", "vocab_size 60", "cut short")


@pytest.mark.parametrize("change", ["half", "one more"])
def test_a_vocab_of_another_size_than_its_config_says_is_one_line(tmp_path, change):
    folder = tmp_path / "uncased_L-2_H-16_A-2"
    shutil.copytree(BERT, folder)
    vocab = folder / "vocab.txt"
    lines = vocab.read_text().splitlines(keepends=True)
    vocab.write_text("".join(lines[:len(lines) // 2] if change == "half" else [*lines, "zzzz\n"]))
    one_line_error(run_cli("card", str(folder)), "vocab.txt holds", f"vocab_size {len(lines):,}")


def test_a_graph_fine_tuned_from_a_tf_hub_module_reads_the_module(tmp_path):
    """Every model variable under module/, global_step and a classifier's head outside it (as in every
    graph that used a TF-Hub module): refused as lacking 32 variables. Read from module/ now, the rest
    skipped, never read, and named on the card."""
    folder = _hub_copy(tmp_path)
    bundle = read_bundle(folder / "model.ckpt-best")
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items() if n != "module/global_step"}
    step, sop = bundle.entries["module/global_step"], bundle.entries["module/cls/seq_relationship/output_weights"]
    entries["global_step"] = Spec(step.dtype, step.shape, step.offset, step.size, step.crc)
    for name in ("output_weights", "output_weights/adam_m", "output_bias"):  # a task head and its slot
        entries[name] = Spec(sop.dtype, sop.shape, sop.offset, sop.size, sop.crc)
    write_index(folder / "model.ckpt-best.index", entries)
    result = run_cli("card", str(folder), "--json")
    assert result.returncode == 0, result.stderr
    provenance = json.loads(result.stdout)["provenance"]
    plain = json.loads(run_cli("card", str(ALBERT), "--json").stdout)["provenance"]
    assert provenance["weights_sha256"].split()[0] == plain["weights_sha256"].split()[0]  # the same bytes read
    assert all(name in provenance["skipped"] for name in ("global_step", "output_weights", "output_bias"))
    assert "outside TF-Hub's module/" in provenance["skipped"]


def test_a_vocab_without_cls_is_one_line(tmp_path):
    folder = tmp_path / "uncased_L-2_H-16_A-2"
    shutil.copytree(BERT, folder)
    vocab = folder / "vocab.txt"
    vocab.write_text(vocab.read_text().replace("[CLS]\n", "[CLX]\n"))
    one_line_error(run_cli("card", str(folder)), "vocab.txt lacks [CLS]")


@pytest.mark.parametrize("value", [["gelu"], {"a": 1}, 10**40, 1.5], ids=["list", "object", "40 digits", "float"])
@pytest.mark.parametrize("key", ["hidden_act", "hidden_size", "vocab_size"])
def test_a_config_value_of_any_type_is_one_line(tmp_path, key, value):
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    config = json.loads((folder / "albert_config.json").read_text())
    (folder / "albert_config.json").write_text(json.dumps({**config, key: value}))
    huge = isinstance(value, int) and key != "hidden_act"  # a size no machine holds: said as such
    one_line_error(run_cli("card", str(folder)), "cannot load it" if huge else "albert_config.json")


def test_an_archive_with_two_top_folders_is_one_line(tmp_path):
    archive = tmp_path / "two.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        for top in ("albert_base", "albert_large"):
            for file in ALBERT.iterdir():
                handle.write(file, f"{top}/{file.name}")
    one_line_error(run_cli("card", str(archive)), "several releases")
    with zipfile.ZipFile(archive, "w") as handle:
        for file in ALBERT.iterdir():
            handle.write(file, f"albert_base/{file.name}")
        handle.write(ALBERT / "albert_config.json", "notes/readme.txt")
    one_line_error(run_cli("card", str(tmp_path / "two.zip")), "2 top-level entries")
