"""The reproducers of issue #15 (inputs an adversarial user sends), one test each.
The property-based harness over the same readers is tests/test_fuzz.py."""

from __future__ import annotations

import json
import random
import re
import struct

import pytest
from conftest import ROOT

from albert_lab.checkpoint.discover import check_folder, summarize_checkpoint
from albert_lab.data.corpus import MAX_SEGMENT_CHARS, jsonl_records, parse_documents
from albert_lab.data.pairs_file import read_pairs
from albert_lab.errors import CheckpointError, DataError

HEADER = b"sentence_a,sentence_b\n"


def rows_of(data: bytes, name: str, max_rows: int = 5000) -> list[tuple[int, str, str]]:
    frame = read_pairs(data, name, max_rows=max_rows).pairs
    return list(zip(frame.row, frame.sentence_a, frame.sentence_b))


# ---- pairs files ------------------------------------------------------------------------------
def test_csv_field_over_the_csv_modules_limit_is_cut_not_a_crash():
    data = HEADER + b"x" * 200_000 + b",second\nfirst,second\n"
    result = read_pairs(data, "big.csv")
    assert list(result.pairs.sentence_a) == ["x" * MAX_SEGMENT_CHARS, "first"]
    assert "row 2: sentence_a has 200,000 characters" in result.problems[0]


@pytest.mark.parametrize("ending", [b"\r", b"\r\n", b"\n"])
@pytest.mark.parametrize("name, sep", [("p.csv", b","), ("p.tsv", b"\t")])
def test_cr_only_and_mixed_line_endings(ending, name, sep):
    lines = [b"sentence_a" + sep + b"sentence_b", b"A one" + sep + b"B one", b"A two" + sep + b"B two"]
    assert rows_of(ending.join(lines) + ending, name) == [(2, "A one", "B one"), (3, "A two", "B two")]
    mixed = lines[0] + b"\r\n" + lines[1] + b"\r" + lines[2] + b"\n"
    assert rows_of(mixed, name) == [(2, "A one", "B one"), (3, "A two", "B two")]


@pytest.mark.parametrize("bad, problem", [
    (b'{"sentence_a": "a", "sentence_b": "b", "label": ' + b"9" * 5000 + b"}", "a number too long to read"),
    (b"[" * 100_000, "nested too deeply"),
    (b'{"sentence_a": ' + b"[" * 100_000 + b"}", "nested too deeply"),
])
def test_jsonl_huge_integer_or_deep_nesting_skips_the_row(bad, problem):
    data = bad + b'\n{"sentence_a": "c", "sentence_b": "d"}\n'
    result = read_pairs(data, "p.jsonl")
    assert rows_of(data, "p.jsonl") == [(2, "c", "d")]
    assert result.problems == [f"row 1: {problem}; skipped"]


@pytest.mark.parametrize("separator", ["\u2028", "\u2029", "\u0085"])
def test_unicode_line_separators_inside_a_jsonl_string_keep_the_row(separator):
    data = (f'{{"sentence_a": "one{separator}two", "sentence_b": "b"}}\n'
            '{"sentence_a": "x", "sentence_b": "y"}\n').encode()
    assert [r[0] for r in rows_of(data, "p.jsonl")] == [1, 2]
    assert next(jsonl_records(data.decode()))[1]["sentence_a"] == f"one{separator}two"


def test_row_cap_counts_only_valid_rows():
    bad = b'{"sentence_a": ""}\nnot json\n'
    good = b"".join(b'{"sentence_a": "a%d", "sentence_b": "b"}\n' % i for i in range(5))
    result = read_pairs(bad * 3 + good, "p.jsonl", max_rows=3)
    assert list(result.pairs.sentence_a) == ["a0", "a1", "a2"]
    assert "only the first 3" in result.problems[-1]
    assert len(read_pairs(bad * 3 + good[:-1], "p.jsonl", max_rows=5).pairs) == 5


def test_non_text_fields_and_labels_are_problems_not_crashes():
    data = (b'{"sentence_a": {"x": 1}, "sentence_b": "b"}\n{"sentence_a": "a", "sentence_b": "b", "label": [1]}\n'
            b'{"sentence_a": 5, "sentence_b": "b", "label": 1}\n')
    result = read_pairs(data, "p.jsonl")
    assert rows_of(data, "p.jsonl") == [(2, "a", "b"), (3, "5", "b")]
    assert result.problems == ["row 1: sentence_a is not text; skipped", "row 2: label 'list' is not 0 or 1; scored without a label"]


def test_unreadable_csv_row_is_skipped_and_the_rest_kept():
    data = HEADER + b'a1,b1\n"bad"x,"\n' + b"a3,b3\n"
    rows = rows_of(data, "p.csv")
    assert rows[0] == (2, "a1", "b1")


# ---- cost -----------------------------------------------------------------------------------
def test_long_words_reach_the_tokenizer_cut_to_max_len_tokens():
    from albert_lab.analysis.common import clip_sides, encode_pairs
    from albert_lab.tokenizer import load_tokenizer

    tokenizer = load_tokenizer(ROOT / "checkpoints" / "albert-sop")
    rng = random.Random(0)
    word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4000))
    clipped = clip_sides(tokenizer, [word], 128)[0]
    assert len(clipped) < 1100 and len(tokenizer(clipped, add_special_tokens=False)["input_ids"]) <= 128
    text = "The city of Paris is the capital of France, an old place with many people. " * 8
    for a, b in [(text, text), (text, "Short one."), ("Short one.", word)]:  # the same tokens as without the cut
        expected = tokenizer([a], [b[:MAX_SEGMENT_CHARS]], truncation="longest_first", max_length=128)["input_ids"]
        assert encode_pairs(tokenizer, [a], [b], 128)["input_ids"].tolist() == expected


# ---- training corpora -------------------------------------------------------------------------
@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_txt_corpus_line_endings_separate_documents(ending):
    text = ending.join(["First doc. It has two sentences.", "", "Second doc. Also two here.", "", "Third. Yes."])
    docs = parse_documents(text.encode(), "c.txt")
    assert [d.segments for d in docs] == [("First doc.", "It has two sentences."), ("Second doc.", "Also two here."),
                                          ("Third.", "Yes.")]


def test_jsonl_corpus_deep_nesting_is_a_data_error():
    with pytest.raises(DataError, match=r"c\.jsonl: no document could be read; 1 line skipped, the first line 1: nested too deeply"):
        parse_documents(b'{"text": ' + b"[" * 100_000 + b"}\n", "c.jsonl")
    docs = parse_documents('{"text": "One.\u2028Two.", "title": ["x"]}\n'.encode(), "c.jsonl")
    assert docs[0].title == "c.jsonl #1"


def test_cjk_vocab_error_says_the_vocab_is_too_small(tmp_path):
    from albert_lab.tokenizer import train_tokenizer

    rng = random.Random(0)
    texts = ["".join(chr(rng.randrange(0x4E00, 0x4E00 + 3000)) for _ in range(30)) for _ in range(300)]
    with pytest.raises(DataError, match=r"vocab size 200 is smaller than the \d+ distinct characters this corpus needs"):
        train_tokenizer(texts, tmp_path / "tok", vocab_size=200)


# ---- checkpoint folders --------------------------------------------------------------------------
CONFIG = {"model_type": "albert", "vocab_size": 100, "embedding_size": 8, "hidden_size": 16, "num_hidden_layers": 2,
          "num_attention_heads": 2, "intermediate_size": 32, "max_position_embeddings": 32}


def _safetensors(header: object, data: bytes = bytes(32)) -> bytes:
    raw = json.dumps(header).encode()
    return struct.pack("<Q", len(raw)) + raw + data


def _checkpoint(tmp_path, **files: bytes):
    folder = tmp_path / "ckpt"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(CONFIG))
    for name, data in files.items():
        (folder / name.replace("__", ".")).write_bytes(data)
    return folder


@pytest.mark.parametrize("header, message", [
    ({"w": {"dtype": "F99", "shape": [2], "data_offsets": [0, 8]}}, "unknown dtype 'F99'"),
    ({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}, "b": {"dtype": "F32", "shape": [2], "data_offsets": [4, 12]}},
     "overlaps the tensor before it"),
    ([{"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}], "the header is a list"),
    ({"w": {"dtype": "F32", "shape": [2], "data_offsets": ["0", "8"]}}, "data_offsets that are not two increasing"),
    ({"w": {"dtype": "F32", "shape": [3], "data_offsets": [0, 8]}}, "takes 8 bytes, but its dtype and shape need 12"),
])
def test_bad_safetensors_headers_are_named(tmp_path, header, message):
    folder = _checkpoint(tmp_path, model__safetensors=_safetensors(header))
    with pytest.raises(CheckpointError, match=re.escape(message)) as err:
        check_folder(folder)
    assert "model.safetensors" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("file, content, message", [
    ("albert_lab.json", "[1, 2]", "albert_lab.json holds a list, expected a JSON object"),
    ("albert_lab.json", '{"spec": "albert"}', "albert_lab.json: 'spec' is a string, expected an object"),
    ("albert_lab.json", '{"heads": [1]}', "albert_lab.json: 'heads' is a list, expected an object"),
    ("albert_lab.json", '{"spec": {"hidden_size": "big"}}', "albert_lab.json: the spec is not valid"),
    ("config.json", '"albert"', "config.json holds a string, expected a JSON object"),
    ("config.json", '{"model_type": "albert", "hidden_size": "big"}', "config.json: transformers cannot read it"),
])
def test_json_of_the_wrong_shape_is_one_line_naming_the_file(tmp_path, file, content, message):
    weights = {"albert.embeddings.word_embeddings.weight": {"dtype": "F32", "shape": [2, 2], "data_offsets": [0, 16]}}
    folder = _checkpoint(tmp_path, model__safetensors=_safetensors(weights, bytes(16)))
    (folder / file).write_text(content)
    with pytest.raises(CheckpointError, match=re.escape(message)) as err:
        summarize_checkpoint(folder)
    assert "\n" not in str(err.value)


@pytest.mark.parametrize("data", [b"", b"not a pickle", b"\x80\x04\x95\x05\x00\x00\x00\x00\x00\x00\x00]\x94.", bytes(100)])
def test_broken_pickles_with_allow_pickle_are_checkpoint_errors(tmp_path, data):
    from albert_lab.checkpoint.load import load_checkpoint

    folder = _checkpoint(tmp_path, pytorch_model__bin=data)
    with pytest.raises(CheckpointError, match="the weights cannot be loaded"):
        load_checkpoint(folder, device="cpu", allow_pickle=True)
