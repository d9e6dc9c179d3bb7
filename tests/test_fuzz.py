"""Fuzzing every reader of user bytes: pairs files, training corpora, checkpoint files, tokenizer files.

Property-based (issue #15): pairs files, training corpora, checkpoint folders (config.json,
albert_lab.json, safetensors headers, tokenizer files). Invariant: a result or the project's
own error (an AlbertLabError with a message), never another exception; the valid rows of a
partly bad file all survive. Widened to the command line's option values at their limits
(seeds, threads, steps, tokens, corpus slices, paths no file system takes), outputs that are
inputs (a command's inputs are the same bytes afterwards) and valid-but-odd configs (loaded
with finite outputs, or refused): a result or one line, never a traceback, a hang or a NaN scored.

Deterministic (derandomize) and bounded: ~2,400 cases by default, in well under a
minute on one core; ALBERT_LAB_FUZZ_EXAMPLES=20000 scales every test up in proportion
(conftest.fuzz).
"""

from __future__ import annotations

import csv
import io
import itertools
import json
import math
import os
import struct
from pathlib import Path

import pytest
from conftest import CONFIG, JSON, NASTY, TEXT, fuzz, outcome, safetensors_files, scratch_folder
from hypothesis import given
from hypothesis import strategies as st

from albert_lab.checkpoint.discover import summarize_checkpoint
from albert_lab.checkpoint.files import CARD, SAFETENSORS_DTYPES, read_card, read_config, safetensors_keys
from albert_lab.checkpoint.loadable import make_loadable
from albert_lab.data.corpus import parse_documents, split_sentences
from albert_lab.data.pairs_file import read_pairs
from albert_lab.data.textfile import decode_utf8, text_blocks, text_lines
from albert_lab.errors import DataError

SHARES = {"pairs_bytes": 0.2, "pairs_mixed": 0.3, "corpus_bytes": 0.1, "corpus_docs": 0.1, "corpus_lines": 0.05,
          "card": 0.1, "safetensors": 0.15, "config": 0.05}  # of TOTAL; the tokenizer test is a fixed small share (slow loads)


# ---- pairs files -------------------------------------------------------------------------------
NAMES = st.sampled_from(["p.csv", "p.tsv", "p.jsonl", "p.txt", "P.CSV", "p.json", "p", "p.bin"])
ENDINGS = st.sampled_from(["\n", "\r\n", "\r"])
WORDS = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)) | st.sampled_from(list(NASTY)),
                min_size=1, max_size=40).filter(lambda t: t.split())


@fuzz(SHARES["pairs_bytes"])
@given(data=st.binary(max_size=400) | TEXT.map(str.encode), name=NAMES, prefix=st.sampled_from([b"", b"sentence_a,sentence_b\n",
       b"sentence_a\tsentence_b\n", b'{"sentence_a": "a", "sentence_b": "b"}\n', b"\xef\xbb\xbf"]), max_rows=st.integers(1, 5))
def test_pairs_reader_on_any_bytes(data, name, prefix, max_rows):
    result = outcome(read_pairs, prefix + data, name, max_rows=max_rows)
    if result is not None:
        assert 1 <= len(result.pairs) <= max_rows
        assert all(isinstance(p, str) for p in result.problems)


def _csv_line(a: str, b: str, label: object, delimiter: str, ending: str) -> str:
    out = io.StringIO()
    # the writer quotes fields holding a character of its line terminator: \r\n covers both
    csv.writer(out, delimiter=delimiter, lineterminator="\r\n").writerow([a, b, "" if label is None else label])
    return out.getvalue()[:-2] + ending


JUNK_CSV = st.text(alphabet=st.characters(codec="utf-8", exclude_characters='"\r\n,\t'), max_size=40)
JUNK_JSONL = (st.text(alphabet=st.characters(codec="utf-8", exclude_characters="\r\n"), max_size=40)
              | st.sampled_from(["[" * 5000, '{"sentence_a": 1' + "0" * 5000 + "}", '{"sentence_a": ""}', "null", "[1, 2]",
                                 '{"sentence_a": ["x"], "sentence_b": "y"}', '{"sentence_b": {"a": 1}}', "{", '"\u2028"']))
ROW = st.tuples(WORDS, WORDS, st.sampled_from([None, 0, 1, "1", "x"]))
WIDE = st.lists(JUNK_CSV.filter(str.strip), min_size=4, max_size=6)  # a row with more fields than the header: an unquoted comma


@fuzz(SHARES["pairs_mixed"])
@given(items=st.lists(st.one_of(ROW, JUNK_CSV, JUNK_JSONL, WIDE), max_size=12), kind=st.sampled_from(["csv", "tsv", "jsonl"]),
       endings=st.lists(ENDINGS, min_size=13, max_size=13), ascii_only=st.booleans())
def test_pairs_reader_keeps_every_valid_row(items, kind, endings, ascii_only):
    delimiter = "\t" if kind == "tsv" else ","
    lines, expected, wide = [], [], []
    header = "sentence_a,sentence_b,label" if kind == "csv" else "sentence_a\tsentence_b\tlabel"
    lines.append("" if kind == "jsonl" else header + endings[-1])
    for item, ending in zip(items, endings):
        if isinstance(item, tuple):
            a, b, label = item
            expected.append((" ".join(a.split()), " ".join(b.split())))
            if kind == "jsonl":
                lines.append(json.dumps({"sentence_a": a, "sentence_b": b, "label": label}, ensure_ascii=ascii_only) + "\n")
            else:
                lines.append(_csv_line(a, b, label, delimiter, ending))
        elif isinstance(item, list):
            if kind != "jsonl":
                lines.append(delimiter.join(item) + ending)
                wide.append((" ".join(item[0].split()), " ".join(item[1].split())))
        elif kind == "jsonl" or _is_csv_junk(item):  # junk in a CSV has no quotes: one that opens a field eats rows
            lines.append(item + ("\n" if kind == "jsonl" else ending))
    result = outcome(read_pairs, "".join(lines).encode(), f"p.{kind}")
    got = [] if result is None else list(zip(result.pairs.sentence_a, result.pairs.sentence_b))
    assert _subsequence(expected, got), f"valid rows lost: expected {expected}, got {got}"
    assert not set(wide) - set(expected) & set(got), "a row with too many fields was scored, split at a delimiter"


def _is_csv_junk(item: str) -> bool:
    return not any(c in item for c in '"\r\n,\t')


def _subsequence(needles: list, haystack: list) -> bool:
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


# ---- training corpora ---------------------------------------------------------------------------
@fuzz(SHARES["corpus_bytes"])
@given(data=st.binary(max_size=300) | TEXT.map(str.encode),
       name=st.sampled_from(["c.txt", "c.jsonl", "c.json", "c.md", "c.TXT", "c.csv"]))
def test_corpus_reader_on_any_bytes(data, name):
    docs = outcome(parse_documents, data, name)
    assert docs is None or (docs and all(d.segments for d in docs))


SENTENCE = st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyzé中", min_size=1, max_size=8), min_size=1, max_size=6).map(
    lambda words: " ".join(words).capitalize() + ".")
DOC = st.lists(SENTENCE, min_size=1, max_size=4)


@fuzz(SHARES["corpus_docs"])
@given(docs=st.lists(st.tuples(DOC, st.sampled_from([" ", "\n", "\r", "\r\n", "\u2028 "])), min_size=1, max_size=6),
       gaps=st.lists(st.sampled_from(["\n\n", "\r\r", "\r\n\r\n", "\n \n", "\r\n\r", "\n\r\n\n"]), min_size=6, max_size=6),
       kind=st.sampled_from(["txt", "jsonl"]), ascii_only=st.booleans())
def test_corpus_reader_keeps_every_document(docs, gaps, kind, ascii_only):
    texts = [joiner.join(sentences) for sentences, joiner in docs]
    if kind == "txt":
        data = "".join(text + gap for text, gap in zip(texts, gaps))
    else:
        data = "".join(json.dumps({"text": text}, ensure_ascii=ascii_only) + "\n" for text in texts)
    parsed = parse_documents(data.encode(), f"c.{kind}")
    assert [" ".join(d.segments) for d in parsed] == [" ".join(split_sentences(t)) for t in texts]


@fuzz(SHARES["corpus_lines"])
@given(data=st.binary(max_size=120) | st.text(alphabet=" ab\n\r\u2028é", max_size=120).map(str.encode),
       width=st.integers(1, 12))
def test_reading_a_line_at_a_time_equals_reading_whole_then_cutting(data, width):
    """Lines and blocks read a piece at a time, cut at `width`, are those of the whole text cut
    at `width`; a file that is not UTF-8 is the same one-line error."""
    try:
        whole = decode_utf8(data, "c.txt")
    except DataError as err:
        with pytest.raises(DataError, match=r"not UTF-8 text"):
            list(text_lines(io.BytesIO(data), "c.txt", width))
        assert str(err).split(" (")[0] in str(err)
        return
    lines = whole.split("\n")[: -1 if whole.endswith("\n") else None] if whole else []
    assert list(text_lines(io.BytesIO(data), "c.txt", width)) == [
        (i + 1, line[:width], len(line) > width) for i, line in enumerate(lines)]
    whole_lines = list(text_lines(io.BytesIO(data), "c.txt", 10 ** 6))
    blocks = ["\n".join(line for _, line, _ in group) for blank, group in
              itertools.groupby(whole_lines, key=lambda item: not item[1].strip()) if not blank]
    assert [text for _, text in text_blocks(whole_lines, 10 ** 6)] == blocks
    assert [text for _, text in text_blocks(whole_lines, width)] == [block[:width] for block in blocks]


# ---- checkpoint folders ------------------------------------------------------------------------
SPEC_FIELDS = ["family", "vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads", "ffn_size", "sharing",
               "num_groups", "objective", "max_positions", "dropout", "activation"]
VALID_SPEC = {"family": "albert", "vocab_size": 100, "embedding_size": 8, "hidden_size": 16, "num_layers": 2, "num_heads": 2,
              "ffn_size": 32, "max_positions": 32}


def _write_json(value: object) -> bytes:
    return json.dumps(value).encode()


CARD_VALUE = (JSON | st.fixed_dictionaries({}, optional={"spec": JSON | st.dictionaries(st.sampled_from(SPEC_FIELDS), JSON).map(
    lambda d: {**VALID_SPEC, **d}), "heads": JSON, "metrics": JSON, "objective": JSON}))


@fuzz(SHARES["card"])
@given(card=CARD_VALUE.map(_write_json) | st.binary(max_size=80) | st.just(b"[" * 5000) | st.just(b"1" + b"0" * 5000))
def test_card_reader(card):
    folder = scratch_folder({CARD: card, "config.json": _write_json(CONFIG)})
    assert isinstance(outcome(read_card, folder) or {}, dict)
    outcome(_summary, folder)


def _summary(folder: Path):
    _safetensors(folder, {"albert.embeddings.word_embeddings.weight": ("F32", [2, 2])})
    return summarize_checkpoint(folder)


def _safetensors(folder: Path, tensors: dict[str, tuple[str, list[int]]]) -> None:
    header, offset = {}, 0
    for name, (dtype, shape) in tensors.items():
        size = SAFETENSORS_DTYPES[dtype] * math.prod(shape)
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + size]}
        offset += size
    raw = json.dumps(header).encode()
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", len(raw)) + raw + bytes(offset))


@fuzz(SHARES["safetensors"])
@given(blob=safetensors_files() | st.binary(max_size=64))
def test_safetensors_header_reader(blob):
    folder = scratch_folder({"config.json": _write_json(CONFIG), "model.safetensors": blob})
    keys = outcome(safetensors_keys, folder / "model.safetensors")
    assert keys is None or isinstance(keys, set)
    outcome(make_loadable, folder)


@fuzz(SHARES["config"])
@given(config=st.one_of(JSON, st.dictionaries(st.sampled_from([*CONFIG, "hidden_act", "num_hidden_groups",
                                                                               "hidden_dropout_prob", "type_vocab_size"]),
                                               JSON).map(lambda d: {**CONFIG, **d})).map(_write_json) | st.binary(max_size=40))
def test_config_reader(config):
    folder = scratch_folder({"config.json": config})
    outcome(read_config, folder)
    _safetensors(folder, {"albert.embeddings.word_embeddings.weight": ("F32", [2, 2])})
    outcome(summarize_checkpoint, folder)


TOKENIZER_FILES = ["spiece.model", "tokenizer.json", "tokenizer_config.json", "special_tokens_map.json"]


@pytest.fixture(scope="module")
def shipped_tokenizer() -> dict[str, bytes]:
    from conftest import ROOT

    folder = ROOT / "checkpoints" / "albert-sop"
    return {name: (folder / name).read_bytes() for name in TOKENIZER_FILES if (folder / name).is_file()}


@fuzz(0.01)
@given(data=st.data())
def test_tokenizer_files_reader(shipped_tokenizer, data):
    from albert_lab.tokenizer import load_tokenizer

    files = dict(shipped_tokenizer)
    for name in data.draw(st.lists(st.sampled_from(sorted(files)), max_size=2, unique=True)):
        action = data.draw(st.sampled_from(["drop", "truncate", "junk", "json"]))
        if action == "drop":
            del files[name]
        elif action == "truncate":
            files[name] = files[name][:data.draw(st.integers(0, len(files[name])))]
        elif action == "junk":
            files[name] = data.draw(st.binary(max_size=64))
        else:
            files[name] = _write_json(data.draw(JSON))
    outcome(load_tokenizer, scratch_folder(files))


# ---- options at their limits, outputs that are inputs, valid-but-odd configs ----------------------------
LIMITS = {"--seed": ["-1", "0", str(2**32 - 1), str(2**32), str(2**70), "1e21"], "--threads": ["0", "1", "1000000000", "-3"],
          "--steps": ["0", "1", "100000", "100001", "1" + "0" * 21], "--train-pairs": ["0", str(10**12)],
          "--max-tokens": ["1", "2", "8192", "8193", "1000000000"], "--top-k": ["0", "101"],
          "--corpus": ["wiki-vital[:abc]", "wiki-vital[:]", "wiki-vital[:-5]", "wiki-vital[:0]", "wiki-vital[:99999999999999]",
                       "~nouser-albert-lab/c.txt", "a\x00b", "x" * 300]}
TAKES = {"train": ["--seed", "--threads", "--steps", "--corpus"], "fit-head": ["--seed", "--steps", "--train-pairs", "--corpus"],
         "cka": ["--max-tokens"], "extrapolate": ["--seed"], "logit-lens": ["--seed"], "gradflow": ["--seed"],
         "lens-top": ["--top-k"], "albertize": ["--seed"]}


@fuzz(0.01)
@given(data=st.data(), command=st.sampled_from(sorted(TAKES)))
def test_option_values_at_their_limits(data, command):
    """Each value at, just inside or past its bound: a result or one line (exit 2), never a traceback or a hang.
    The checkpoint named does not exist and train's learning rate is refused: no case does any work."""
    from conftest import run_cli

    root = scratch_folder({})
    flags = data.draw(st.lists(st.sampled_from(TAKES[command]), min_size=1, max_size=3, unique=True))
    args = [command, *[part for flag in flags for part in (flag, data.draw(st.sampled_from(LIMITS[flag])))]]
    if command == "train":
        args += ["--lr", "inf", "--runs-dir", str(root / "runs"), "--foreground"]
    else:
        args += ["--checkpoint", str(root / "none")] + (["--out", str(root / "out")] if command == "albertize" else [])
    result = run_cli(*args, cwd=root)
    assert result.returncode == 2 and "Traceback" not in result.stderr, (args, result.stderr[-1500:])
    assert len(result.stderr) < 5000
    assert not (root / "runs").exists() or not any((root / "runs").iterdir())


@pytest.fixture(scope="module")
def shipped_files(shipped) -> dict[str, bytes]:
    class Files(dict):  # a failing case's report names the files, not their megabytes
        def __repr__(self) -> str:
            return f"Files({sorted(self)})"

    return Files({p.name: p.read_bytes() for p in (shipped / "albert-sop").iterdir() if p.is_file()})


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@fuzz(0.005)
@given(out=st.sampled_from(["pairs", "config.json", "model.safetensors", "folder", "folder/new.csv", "loop", "fifo",
                            "/dev/full", "new.csv", "text"]), command=st.sampled_from(["score", "attention"]))
def test_an_output_that_is_an_input_never_changes_it(shipped_files, out, command):
    """Whatever the output names, the command's inputs are the same bytes afterwards; a result or one line."""
    from conftest import run_cli

    root = scratch_folder({"p.csv": b"sentence_a,sentence_b\nThe sky is blue.,It rains.\n", "t.txt": b"The river runs.\n"})
    folder = root / "ckpt"
    folder.mkdir()
    for name, blob in shipped_files.items():
        (folder / name).write_bytes(blob)
    os.symlink("loop", root / "loop")
    os.mkfifo(root / "fifo")
    target = {"pairs": root / "p.csv", "text": root / "t.txt", "folder": folder, "loop": root / "loop", "fifo": root / "fifo",
              "new.csv": root / "new.csv", "/dev/full": Path("/dev/full")}.get(out, folder / out)
    inputs = [root / "p.csv"] if command == "score" else [root / "t.txt"]  # score reads no text file: t.txt is an output
    before = {p: p.read_bytes() for p in [*inputs, *folder.iterdir()]}
    if command == "score":
        args = ["score", str(root / "p.csv"), "--checkpoint", str(folder), "--out", str(target)]
    else:
        args = ["attention", "--checkpoint", str(folder), "--file", str(root / "t.txt"), "--maps-out", str(target)]
    result = run_cli(*args, cwd=root)
    assert result.returncode in (0, 2) and "Traceback" not in result.stderr, (args, result.stderr[-1500:])
    assert {p: p.read_bytes() for p in before} == before, "an input was changed"
    other = "text" if command == "score" else "pairs"  # the other command's input: a plain file here
    written = out in ("new.csv", other)  # only a file outside every input is written
    assert (result.returncode == 0) == written, result.stderr


ODD_CONFIG = st.fixed_dictionaries({}, optional={
    "layer_norm_eps": st.sampled_from([float("nan"), float("inf"), -1.0, 0.0, 1e-300, 1e-12, 0.5, 2.0, True, "x"]),
    "type_vocab_size": st.sampled_from([0, 1, 2, 3, -1]), "max_position_embeddings": st.sampled_from([0, 1, 8, 64, 10**6]),
    "hidden_act": st.sampled_from(["gelu", "relu", "gelu_new", "tanh", "nope"]), "hidden_dropout_prob": st.sampled_from([0.0, 0.5, 1.0])})


@fuzz(0.005)
@given(changes=ODD_CONFIG)
def test_valid_but_odd_configs_load_with_finite_outputs_or_are_refused(shipped_files, changes):
    """A config a reader accepts may still compute NaN (layer_norm_eps -1) or index past a table (type_vocab_size 1):
    loaded, the model's outputs on a probe are finite; else refused in one line. Never a NaN scored."""
    import torch

    from albert_lab.checkpoint.load import load_checkpoint

    config = json.loads(shipped_files["config.json"])
    folder = scratch_folder({**shipped_files, "config.json": json.dumps({**config, **changes}).encode()})
    bundle = outcome(load_checkpoint, folder, device="cpu")
    if bundle is not None:
        ids = torch.tensor([[2, 40, 41, 3, 50, 51, 3]])
        with torch.no_grad():
            out = bundle.model(input_ids=ids, token_type_ids=torch.tensor([[0, 0, 0, 0, 1, 1, 1]]))
        assert all(bool(torch.isfinite(t).all()) for t in (out.prediction_logits, out.sop_logits))
