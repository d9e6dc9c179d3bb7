"""Fuzzing checkpoint folders field by field and file by file, run folders, options, JSON with lone surrogates.

The fuzz harness widened (issue #26) to what found the last reproducers: checkpoint
folders mutated field by field (config.json, albert_lab.json, tokenizer_config.json, the
safetensors header) and file by file (a folder, a FIFO, a symlink loop, empty), run folders
for --resume, command-line options, and JSON with escaped lone surrogates. Invariant: a
result or the project's own one-line error, never another exception, never a hang (each
case bounded in time), never random or NaN weights used silently.

Same knob as tests/test_fuzz.py: ALBERT_LAB_FUZZ_EXAMPLES (default 2,400) scales every
test; the shares below add ~850 cases to that file's ~2,400.
"""

from __future__ import annotations

import copy
import json
import os
import time
from pathlib import Path
from unittest import mock

import pytest
from conftest import JSON, fuzz, outcome, run_cli, safetensors_files, scratch_folder
from hypothesis import given
from hypothesis import strategies as st

from albert_lab.checkpoint.discover import summarize_checkpoint
from albert_lab.checkpoint.files import STRUCTURE
from albert_lab.checkpoint.heads import encoder_keys
from albert_lab.data.textfile import jsonl_records, read_json
from albert_lab.training.config import TrainConfig

SHARES = {"folder_fields": 0.1, "file_kinds": 0.02, "load": 0.01, "run_json": 0.1, "cli": 0.03, "surrogates": 0.1}
HANG_S = 30.0  # a case slower than this is a hang (each takes milliseconds; a load about a second)
NASTY = st.sampled_from([0, -1, 1, 4, 1_000_000_000, 2**63, 1.5, 1e308, True, None, "", "x", "\ud800", "a\x00b",
                         "bert", "albert", [], {}, [1], {"a": 1}, "9" * 400])
VALUE = NASTY | JSON


def bounded(call, *args, **kwargs):
    """outcome(), failing a case that takes longer than HANG_S."""
    start = time.perf_counter()
    result = outcome(call, *args, **kwargs)
    assert time.perf_counter() - start < HANG_S, f"{call.__name__} took {time.perf_counter() - start:.0f} s"
    return result


class Files(dict):
    """A folder's files by name; shown by name only in a failing case's report."""

    def __repr__(self) -> str:
        return f"Files({sorted(self)})"


@pytest.fixture(scope="module")
def files(shipped) -> Files:
    folder = shipped / "albert-sop"
    return Files({p.name: p.read_bytes() for p in folder.iterdir() if p.is_file()})


def edited(files: dict[str, bytes], name: str, path: list[str], value: object) -> dict[str, bytes]:
    """`files` with the JSON file `name` holding `value` at `path` (a key, or card.spec.KEY)."""
    data = json.loads(files[name])
    target = data
    for key in path[:-1]:
        if not isinstance(target.get(key), dict):
            target[key] = {}
        target = target[key]
    target[path[-1]] = value
    return {**files, name: json.dumps(data).encode()}  # ensure_ascii: a lone surrogate becomes the escape \ud800


SPEC_KEYS = ["family", "vocab_size", "embedding_size", "hidden_size", "num_layers", "num_heads", "ffn_size", "sharing",
             "num_groups", "inner_group_num", "dropout", "max_positions", "type_vocab_size", "objective", "activation"]
FIELD = st.one_of(
    st.tuples(st.just("config.json"), st.sampled_from([*STRUCTURE, "hidden_act", "layer_norm_eps", "architectures"]).map(lambda k: [k])),
    st.tuples(st.just("albert_lab.json"), st.sampled_from(SPEC_KEYS).map(lambda k: ["spec", k])),
    st.tuples(st.just("albert_lab.json"), st.sampled_from(["mlm", "pair", "x"]).map(lambda k: ["heads", k])),
    st.tuples(st.just("albert_lab.json"), st.sampled_from(["name", "metrics", "provenance", "objective", "spec", "heads"]).map(lambda k: [k])),
    st.tuples(st.just("tokenizer_config.json"), st.sampled_from(["tokenizer_class", "pad_token", "unk_token", "model_max_length",
                                                                 "do_lower_case", "extra_special_tokens"]).map(lambda k: [k])),
)


@fuzz(SHARES["folder_fields"])
@given(fields=st.lists(st.tuples(FIELD, VALUE), min_size=1, max_size=3), header=st.none() | safetensors_files())
def test_checkpoint_folders_mutated_field_by_field(files, fields, header):
    for (name, path), value in fields:
        files = edited(files, name, path, value)
    if header is not None:
        files = {**files, "model.safetensors": header}
    summary = bounded(summarize_checkpoint, scratch_folder(files))
    if summary is not None:
        assert _printable([summary.name, summary.heads.warning, summary.card])  # no lone surrogate reaches the user


def _kind(path: Path, kind: str) -> None:
    path.unlink()
    if kind == "folder":
        path.mkdir()
    elif kind == "fifo":
        os.mkfifo(path)
    elif kind == "loop":
        os.symlink(path.name, path)
    elif kind == "dangling":
        os.symlink("nowhere", path)
    else:
        path.write_bytes(b"")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
@fuzz(SHARES["file_kinds"])
@given(data=st.data())
def test_checkpoint_files_of_every_kind_never_block(files, data):
    folder = scratch_folder(files)
    for name in data.draw(st.lists(st.sampled_from(sorted(files)), min_size=1, max_size=2, unique=True)):
        _kind(folder / name, data.draw(st.sampled_from(["folder", "fifo", "loop", "dangling", "empty"])))
    bounded(summarize_checkpoint, folder)
    bounded(_load, folder)  # the files are refused before a weight is read: as cheap as the summary


def _load(folder: Path):
    from albert_lab.checkpoint.load import load_checkpoint

    bundle = load_checkpoint(folder, device="cpu")
    import torch

    family = bundle.spec.family
    assert not encoder_keys(family, set(bundle.missing_keys)), "random encoder weights used silently"
    assert all(bool(torch.isfinite(p).all()) for p in bundle.model.parameters()), "NaN weights used silently"
    return bundle


@fuzz(SHARES["load"])
@given(fields=st.lists(st.tuples(FIELD, NASTY), min_size=1, max_size=2))
def test_mutated_folders_load_or_refuse_never_random(files, fields):
    for (name, path), value in fields:
        files = edited(files, name, path, value)
    bounded(_load, scratch_folder(files))


# ---- run folders for --resume ------------------------------------------------------------------------
RUN_KEYS = ["status", "step", "total_steps", "pid", "created", "created_resume", "heartbeat", "message", "config"]
CONFIG_KEYS = sorted(TrainConfig().to_dict())


@fuzz(SHARES["run_json"])
@given(changes=st.dictionaries(st.sampled_from(RUN_KEYS), VALUE, max_size=3),
       config=st.dictionaries(st.sampled_from([*CONFIG_KEYS, "spec.num_layers", "spec.dropout", "bogus"]), VALUE, max_size=3),
       raw=st.none() | st.binary(max_size=40))
def test_run_folders_for_resume(tmp_path_factory, changes, config, raw):
    from albert_lab.training.jobs import resume_run
    from albert_lab.training.runs import list_runs, read_run

    root = scratch_folder({})
    run = root / "r"
    run.mkdir()
    settings = TrainConfig().to_dict()
    for key, value in copy.deepcopy(config).items():  # NASTY's [] and {} are shared objects: never mutate them
        if key.startswith("spec."):
            if isinstance(settings.get("spec"), dict):
                settings["spec"][key[5:]] = value
        else:
            settings[key] = value
    record = {"id": "r", "status": "failed", "created": 1.0, "pid": None, "config": settings, "step": 0, **changes}
    (run / "run.json").write_bytes(raw if raw is not None else json.dumps(record).encode())
    bounded(read_run, run)
    bounded(list_runs, root)
    with mock.patch("albert_lab.training.jobs.spawn_worker", lambda run_dir: 0):  # validated, never started
        bounded(resume_run, run)


# ---- command-line options ------------------------------------------------------------------------------
OPTION_VALUES = st.sampled_from(["-1", "0", "1", "7", "1e30", "inf", "nan", "abc", "", "../x", "/abs", "x" * 300, "a\x00b",
                                 "\u00e9", "65536", "100000"])


@fuzz(SHARES["cli"])
@given(command=st.sampled_from(["params", "score", "runs", "train"]),
       options=st.lists(st.tuples(st.sampled_from(["--layers", "--hidden", "--heads", "--ffn", "--groups", "--inner", "--embedding",
                                                  "--seq-len", "--dropout", "--max-rows", "--out", "--show", "--cancel", "--lr",
                                                  "--run-id", "--vocab"]), OPTION_VALUES), max_size=4))
def test_command_line_options(tmp_path_factory, command, options):
    root = scratch_folder({"p.csv": b"sentence_a,sentence_b\na,b\n"})
    args = [command, *[part for flag, value in options for part in (flag, value)]]
    if command == "score":
        args[1:1] = [str(root / "p.csv"), "--checkpoint", str(root / "none")]
    if command == "train":  # never trains: an absurd learning rate is refused up front, whatever else is given
        args += ["--lr", "inf", "--runs-dir", str(root / "runs"), "--foreground"]
    if command == "runs":
        args += ["--runs-dir", str(root)]
    start = time.perf_counter()
    result = run_cli(*args)
    assert time.perf_counter() - start < HANG_S
    assert "Traceback" not in result.stderr and result.returncode in (0, 2), (args, result.stderr[-1500:])


# ---- JSON with escaped lone surrogates -------------------------------------------------------------------------
SURROGATE = st.integers(0xD800, 0xDFFF).map(lambda c: f"\\u{c:04x}")


@fuzz(SHARES["surrogates"])
@given(parts=st.lists(st.sampled_from(['{"text": "', '"sentence_a": "', "a", " ", "\\ud83d\\ude00", '", ', '"}', "\n"]) | SURROGATE,
                      max_size=12), name=st.sampled_from(["c.jsonl", "p.jsonl", "albert_lab.json", "run.json"]))
def test_json_with_escaped_lone_surrogates(files, parts, name):
    from albert_lab.data.corpus import parse_documents
    from albert_lab.data.pairs_file import read_pairs

    text = "".join(parts)
    value = outcome(read_json, text.encode(), name)
    assert value is None or _printable(value)
    for _, record, _problem in jsonl_records(text):
        assert record is None or _printable(record)
    for reader in (parse_documents, read_pairs):
        result = outcome(reader, text.encode(), name)
        assert result is None or _printable(repr(result))
    folder = scratch_folder({**files, "albert_lab.json": text.encode()})
    summary = bounded(summarize_checkpoint, folder)
    assert summary is None or _printable(summary.card)


def _printable(value: object) -> bool:
    """Every string in `value` encodes to UTF-8: it can be printed, written and tokenised."""
    try:
        json.dumps(value, ensure_ascii=False, default=str).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True

