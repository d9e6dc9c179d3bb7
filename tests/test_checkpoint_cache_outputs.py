"""What an adversary tried on the release cache and on outputs: a file swapped between the hash
and the read is never stored under the genuine release's key, an edited cache entry is converted
again before it is served, a cache folder that is a symlink loop is one line, and no output lands
inside a checkpoint (or the cache) whether or not that checkpoint is one of the command's inputs."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import tarfile
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli
from tf_bundle import Spec, spiece_pieces, write_index

from albert_lab.checkpoint import release_convert
from albert_lab.checkpoint.release_convert import MANIFEST, converted_release, verified
from albert_lab.checkpoint.tf1 import read_bundle
from albert_lab.errors import CheckpointError

FIXTURE = Path(__file__).parent / "fixtures" / "tf_releases"
ALBERT, BERT = FIXTURE / "albert_tiny", FIXTURE / "uncased_L-2_H-16_A-2"
SOP = "cls/seq_relationship/output_weights"


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


@pytest.fixture
def albert(tmp_path) -> Path:
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    return folder


def _swapped_pieces(data: bytes, i: int = 10) -> bytes:
    """A valid SentencePiece model that is not `data`: pieces i and i + 1 in each other's places."""
    ends = spiece_pieces(data)
    a, b, c = ends[i - 1], ends[i], ends[i + 1]
    return data[:a] + data[b:c] + data[a:b] + data[c:]


def _after_the_hash(monkeypatch, change) -> None:
    """Run `change()` right after the cache key (the hash of every file) is computed, before the
    conversion reads the release for its folder: the window the adversary used."""
    key = release_convert.release_cache_key

    def then_change(release):
        name = key(release)
        change()
        return name

    monkeypatch.setattr(release_convert, "release_cache_key", then_change)


def test_a_tokenizer_swapped_after_the_hash_is_not_what_the_cache_holds(albert, monkeypatch):
    """The cache held the swapped spiece.model while the card showed the genuine one's hash."""
    model = albert / "30k-clean.model"
    genuine = model.read_bytes()
    _after_the_hash(monkeypatch, lambda: model.write_bytes(_swapped_pieces(genuine)))
    out = converted_release(albert)
    assert (out / "spiece.model").read_bytes() == genuine
    assert json.loads((out / "albert_lab.json").read_text())["provenance"]["tokenizer_sha256"].endswith(_sha(genuine))


def test_weights_swapped_after_the_hash_are_refused_and_nothing_is_kept(albert, monkeypatch):
    """An entry without a recorded CRC (TensorFlow may omit it) rewritten after the hash: the conversion
    read other bytes than it hashed, and stored them under the genuine key."""
    prefix = albert / "model.ckpt-best"
    bundle = read_bundle(prefix)
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, None if n == SOP else e.crc) for n, e in bundle.entries.items()}
    write_index(Path(f"{prefix}.index"), entries)
    data, sop = next(albert.glob("*.data-*")), bundle.entries[SOP]

    def zero_the_sop_head():
        raw = bytearray(data.read_bytes())
        raw[sop.offset:sop.offset + sop.size] = bytes(sop.size)
        data.write_bytes(bytes(raw))

    cache = Path(os.environ["ALBERT_LAB_CACHE"]) / "releases"
    before = set(cache.iterdir()) if cache.is_dir() else set()
    _after_the_hash(monkeypatch, zero_the_sop_head)
    with pytest.raises(CheckpointError, match="changed while they were converted"):
        converted_release(albert)
    assert (set(cache.iterdir()) if cache.is_dir() else set()) == before  # nothing kept (the folder may never be made)


def _weights_edited(folder: Path) -> bytes:
    """Two 4-byte values of the cached weights swapped (the header's size says where the data begins)."""
    file = folder / "model.safetensors"
    raw = bytearray(file.read_bytes())
    start = 8 + int.from_bytes(raw[:8], "little") + 64
    raw[start:start + 4], raw[start + 4:start + 8] = raw[start + 4:start + 8], raw[start:start + 4]
    file.write_bytes(bytes(raw))
    return bytes(raw)


def test_an_edited_cache_entry_is_converted_again_before_it_is_served(albert):
    """Two values of a tensor swapped in the cached model.safetensors were served silently."""
    out = converted_release(albert)
    genuine = (out / "model.safetensors").read_bytes()
    assert genuine != _weights_edited(out) and not verified(out)
    again = converted_release(albert)
    assert again == out and (again / "model.safetensors").read_bytes() == genuine and verified(again)
    (again / "model-00002.safetensors").write_bytes(genuine)  # a file added: loaders glob for weights
    assert not verified(again)
    assert {p.name for p in converted_release(albert).iterdir()} == {*json.loads((out / MANIFEST).read_text()), MANIFEST}


def test_an_entry_is_hashed_once_per_process_while_its_files_keep_their_stamps(albert, monkeypatch):
    out = converted_release(albert)
    calls = []
    hashed = release_convert.sha256
    monkeypatch.setattr(release_convert, "sha256", lambda path: calls.append(path) or hashed(path))
    assert verified(out) and verified(out)
    assert len(calls) <= len(json.loads((out / MANIFEST).read_text()))  # once at most: the first call may hit the memo
    calls.clear()
    _weights_edited(out)
    assert not verified(out) and calls  # the edit changed the stamp: hashed again


def test_a_cache_folder_that_is_a_symlink_loop_is_one_line(tmp_path):
    (tmp_path / "a").symlink_to(tmp_path / "b")
    (tmp_path / "b").symlink_to(tmp_path / "a")
    result = run_cli("card", str(ALBERT), env={"ALBERT_LAB_CACHE": str(tmp_path / "a")})
    one_line_error(result, "ALBERT_LAB_CACHE", "symlink loop")


# ---- outputs never land inside a checkpoint or the cache ---------------------------------------------
@pytest.fixture
def pairs(tmp_path) -> Path:
    file = tmp_path / "pairs.csv"
    file.write_text("sentence_a,sentence_b\nThe river is long.,It flows to the sea.\n")
    return file


@pytest.fixture
def checkpoint(tmp_path) -> Path:
    """A checkpoint folder that is not the command's input (import-tf of the BERT release)."""
    out = tmp_path / "checkpoints" / "bert-nsp"
    assert run_cli("import-tf", str(BERT), "--out", str(out)).returncode == 0
    return out


def test_score_out_into_another_checkpoint_is_refused(checkpoint, pairs, tmp_path):
    """`score --checkpoint albert-sop --out checkpoints/bert-nsp/config.json` made bert-nsp's config a CSV."""
    config = (checkpoint / "config.json").read_bytes()
    link = tmp_path / "elsewhere"
    link.symlink_to(checkpoint)
    for out in (checkpoint / "config.json", link / "config.json", checkpoint / "scores.csv"):
        one_line_error(run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--out", str(out)), "inside a checkpoint folder")
    assert (checkpoint / "config.json").read_bytes() == config and not (checkpoint / "scores.csv").exists()
    cache = Path(os.environ["ALBERT_LAB_CACHE"])
    one_line_error(run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--out", str(cache / "x.csv")), "cache")
    result = run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--out", str(checkpoint.parent / "scores.csv"))
    assert result.returncode == 0, result.stderr  # beside the checkpoints: no checkpoint's folder


def test_score_out_over_a_release_archive_or_the_shipped_results_is_refused(pairs, tmp_path, monkeypatch):
    """`score --out checkpoints/results.json` replaced the Table 5 results the app reads, and `--out
    rel/albert_tiny.tar.gz` a release's archive that --checkpoint and import-tf load."""
    shipped = tmp_path / "shipped"
    shipped.mkdir()
    (shipped / "results.json").write_text("{}")
    monkeypatch.setenv("ALBERT_LAB_CHECKPOINTS", str(shipped))
    archive = tmp_path / "rel" / "albert_tiny.tar.gz"
    archive.parent.mkdir()
    with tarfile.open(archive, "w:gz") as tar:
        tar.add(ALBERT, arcname="albert_tiny")
    packed = archive.read_bytes()
    for out, words in ((shipped / "results.json", "beside the checkpoints"), (archive, "release's archive")):
        one_line_error(run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--out", str(out)), words)
    assert (shipped / "results.json").read_text() == "{}" and archive.read_bytes() == packed
    assert run_cli("score", str(pairs), "--checkpoint", str(ALBERT), "--out", str(shipped / "new.csv")).returncode == 0


def test_runs_inside_the_checkpoint_a_run_starts_from_are_refused(checkpoint):
    """`train --init-from albert-sop --runs-dir checkpoints/albert-sop/runs --steps 1` trained into albert-sop."""
    result = run_cli("train", "--init-from", str(checkpoint), "--runs-dir", str(checkpoint / "runs"), "--steps", "1",
                     "--foreground")
    one_line_error(result, "--runs-dir", "inside an input")
    assert not (checkpoint / "runs").exists()


def test_import_tf_and_albertize_never_write_inside_a_checkpoint(checkpoint, tmp_path):
    one_line_error(run_cli("import-tf", str(ALBERT), "--out", str(checkpoint / "albert")), "inside a checkpoint folder")
    one_line_error(run_cli("albertize", "--checkpoint", str(BERT), "--out", str(checkpoint / "albert")),
                   "inside a checkpoint folder")
    assert sorted(p.name for p in checkpoint.iterdir()) == ["albert_lab.json", "config.json", "model.safetensors",
                                                            "tokenizer.json", "tokenizer_config.json", "vocab.txt"]
    new = tmp_path / "checkpoints" / "albert_base_v2"  # a new folder beside the checkpoints stays allowed
    assert run_cli("import-tf", str(ALBERT), "--out", str(new)).returncode == 0
