"""A checkpoint folder's files: damaged or misshapen ones named in one line, saves cut short, the name a folder shows."""

import json
import re
import struct
import subprocess
from pathlib import Path

import pytest
from conftest import CONFIG

from albert_lab.checkpoint.discover import discover_checkpoints, summarize_checkpoint
from albert_lab.checkpoint.loadable import make_loadable
from albert_lab.checkpoint.store import recover_checkpoint_dir
from albert_lab.errors import CheckpointError
from albert_lab.runfolder import RunFolder


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
        make_loadable(folder)
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


def _dead_pid() -> int:
    process = subprocess.Popen(["true"])
    process.wait()
    return process.pid


def _killed_between_renames(run: Path, pid: int) -> Path:
    """A run folder as a save killed between its two renames leaves it: no checkpoint/,
    the previous one parked as .checkpoint.old-<pid>, the new one half-written."""
    run.mkdir(parents=True)
    RunFolder(run).run_json.write_text(json.dumps({"id": run.name, "status": "cancelled", "config": {}}))
    old = run / f".checkpoint.old-{pid}"
    old.mkdir()
    (old / "config.json").write_text(json.dumps(CONFIG))
    (run / f".checkpoint.tmp-{pid}").mkdir()
    return old


def test_a_checkpoint_killed_between_its_renames_is_recovered_by_readers(tmp_path):
    runs = tmp_path / "runs"
    _killed_between_renames(runs / "r1", _dead_pid())
    found = discover_checkpoints(shipped=tmp_path / "none", runs=runs)
    assert [info.name for info in found] == ["run:r1"] and (runs / "r1" / "checkpoint" / "config.json").is_file()

    _killed_between_renames(runs / "r2", _dead_pid())
    folder = runs / "r2" / "checkpoint"
    with pytest.raises(CheckpointError, match="no weights"):  # the loading path: recovered, then refused for its weights
        make_loadable(folder)
    assert (folder / "config.json").is_file() and not list((runs / "r2").glob(".checkpoint.old-*"))


def test_a_save_still_in_progress_is_left_alone(tmp_path):
    old = _killed_between_renames(tmp_path / "r", 1)  # pid 1 is alive: its save is mid-way, not killed
    discover_checkpoints(shipped=tmp_path / "none", runs=tmp_path)
    assert old.is_dir() and not (tmp_path / "r" / "checkpoint").exists()


def test_interrupted_checkpoint_swap_is_recovered(tmp_path):
    folder = tmp_path / "checkpoint"
    old = tmp_path / ".checkpoint.old-123"
    old.mkdir()
    (old / "config.json").write_text("{}")
    (tmp_path / ".checkpoint.tmp-9").mkdir()
    recover_checkpoint_dir(folder)
    assert (folder / "config.json").is_file() and not old.exists() and not (tmp_path / ".checkpoint.tmp-9").exists()


def test_a_generic_folder_is_named_from_its_own_files(tmp_path):
    from albert_lab.checkpoint.files import checkpoint_label

    card = tmp_path / "pkg" / "model"
    card.mkdir(parents=True)
    (card / "README.md").write_text("---\nlicense: apache-2.0\n---\n\n# all-MiniLM-L6-v2\nThis is a model.\n")
    assert checkpoint_label(card) == "all-MiniLM-L6-v2"
    bare = tmp_path / "my-encoder" / "weights"
    bare.mkdir(parents=True)
    assert checkpoint_label(bare) == "my-encoder"  # no card: the folder above
    snapshot = tmp_path / "models--org--tiny-bert" / "snapshots" / ("a" * 40)
    snapshot.mkdir(parents=True)
    assert checkpoint_label(snapshot) == "org/tiny-bert"  # a hub cache: its repository
    assert checkpoint_label(tmp_path / "albert-sop") == "albert-sop" and checkpoint_label(card, "given") == "given"


@pytest.mark.parametrize("name, how", [("x.tar.gz", "mkdir x && tar -xf x.tar.gz -C x"), ("x.tgz", "mkdir x && tar -xf x.tgz -C x"),
                                       ("x.zip", "unzip x.zip -d x")])
def test_an_archive_that_is_no_release_names_the_command_that_unpacks_it(tmp_path, name, how):
    """'x.tar.gz' said `unzip x.tar.gz -d x.tar`: the wrong tool and a folder named '.tar'."""
    (tmp_path / name).write_bytes(b"not an archive")
    with pytest.raises(CheckpointError, match=f"unpack it \\(e.g. `{re.escape(how)}`\\)"):
        make_loadable(tmp_path / name)
