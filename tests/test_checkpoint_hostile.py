"""Hostile releases and archives: what an adversary hands to `--checkpoint`, `import-tf` or the
sidebar's folder field ends in one line within seconds, never serves another model's answers from
the cache, and leaves nothing behind in the cache when it is refused."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli
from tf_bundle import block, mask, varint

from albert_lab.checkpoint.crc32c import crc32c
from albert_lab.checkpoint.tf1 import MAGIC, read_bundle
from albert_lab.errors import CheckpointError

FIXTURE = Path(__file__).parent / "fixtures" / "tf_releases"
ALBERT, BERT = FIXTURE / "albert_tiny", FIXTURE / "uncased_L-2_H-16_A-2"
DATA = "model.ckpt-best.data-00000-of-00001"


@pytest.fixture
def albert(tmp_path) -> Path:
    folder = tmp_path / "albert_base"
    shutil.copytree(ALBERT, folder)
    return folder


def _cache_entries() -> set[str]:
    root = Path(os.environ["ALBERT_LAB_CACHE"]) / "releases"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def _same_times(path: Path, change) -> None:
    """Change `path` with `change(path)` and give it back its size's and times' look (`touch -r`)."""
    info = path.stat()
    change(path)
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns))


# ---- A1: an index whose entries all point at one block ---------------------------------------------
def _repeating_index(path: Path, records: int, pointers: int) -> None:
    """An SSTable whose index block holds `pointers` entries, every one naming the same data block of
    `records` records (each a valid header or entry): parsed naively, pointers x records records."""
    out = bytearray()

    def put(contents: bytes) -> bytes:
        handle = varint(len(out)) + varint(len(contents))
        out.extend(contents + b"\0" + mask(crc32c(contents + b"\0")).to_bytes(4, "little"))
        return handle

    header = b"\x08\x01\x1a\x02\x08\x01"  # num_shards 1, version 1
    data = put(block([(b"", header)] + [(f"v{i:07d}".encode(), b"") for i in range(records)]))
    meta = put(block([]))
    index = put(block([(f"k{i:07d}".encode(), data) for i in range(pointers)]))
    footer = meta + index
    out += footer + b"\0" * (40 - len(footer)) + MAGIC.to_bytes(8, "little")
    path.write_bytes(bytes(out))


@pytest.mark.parametrize("pointers", [2, 10_000, 100_000])
def test_an_index_pointing_at_one_block_many_times_is_refused_at_once(tmp_path, pointers):
    """A 64 KB index took 54 s and 927 MB before refusing; a 604 KB one grew past 6 GiB."""
    prefix = tmp_path / "model.ckpt-best"
    _repeating_index(Path(f"{prefix}.index"), 1_300, pointers)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    started = time.perf_counter()
    with pytest.raises(CheckpointError, match="two index entries point at the block at byte 0"):
        read_bundle(prefix)
    assert time.perf_counter() - started < 2.0  # one block parsed, not pointers x 1,300 records


def test_an_index_of_too_many_records_is_refused(tmp_path):
    prefix = tmp_path / "model.ckpt-best"
    _repeating_index(Path(f"{prefix}.index"), 120_000, 1)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    with pytest.raises(CheckpointError, match="more than 100,000 entries"):
        read_bundle(prefix)


def test_the_repeating_index_in_a_release_is_one_line_for_every_command(albert, tmp_path):
    _repeating_index(albert / "model.ckpt-best.index", 1_300, 10_000)
    for args in (("card", str(albert)), ("import-tf", str(albert), "--out", str(tmp_path / "out"))):
        one_line_error(run_cli(*args), "two index entries point at the block")
    assert not (tmp_path / "out").exists()


# ---- A3: the conversion cache cannot be forged ------------------------------------------------------
def test_a_data_byte_flipped_under_the_same_size_and_time_is_converted_again(albert):
    """The conversion was served again from the cache (keyed on sizes and times): another model's
    probabilities, and another file's SHA-256 on the card. The bytes are the key now."""
    assert run_cli("card", str(albert)).returncode == 0
    data = albert / DATA
    raw = bytearray(data.read_bytes())
    raw[1000] ^= 1
    _same_times(data, lambda p: p.write_bytes(bytes(raw)))
    one_line_error(run_cli("card", str(albert)), "do not match their recorded CRC-32C")


def test_a_release_of_the_same_name_size_and_time_with_other_weights_is_its_own(albert, tmp_path):
    """Another folder of the same name whose weights differ (CRCs rewritten to match): not the
    first one's conversion."""
    from tf_bundle import Spec, write_index

    first = json.loads(run_cli("card", str(albert), "--json").stdout)
    other = tmp_path / "elsewhere" / "albert_base"
    shutil.copytree(albert, other, copy_function=shutil.copy2)
    prefix, data = other / "model.ckpt-best", other / DATA
    bundle = read_bundle(prefix)
    raw = bytearray(data.read_bytes())
    sop = bundle.entries["cls/seq_relationship/output_weights"]
    raw[sop.offset:sop.offset + sop.size] = bytes(sop.size)  # the SOP head zeroed
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items()}
    entries["cls/seq_relationship/output_weights"].crc = crc32c(bytes(sop.size))
    _same_times(data, lambda p: p.write_bytes(bytes(raw)))
    index = Path(f"{prefix}.index")
    _same_times(index, lambda p: write_index(p, entries))
    second = json.loads(run_cli("card", str(other), "--json").stdout)
    assert first["provenance"]["weights_sha256"] != second["provenance"]["weights_sha256"]
    assert first["source"] != second["source"]  # two conversions, not one served twice


def test_a_tokenizer_swapped_under_the_same_size_and_time_is_converted_again(tmp_path):
    bert = tmp_path / "uncased_L-2_H-16_A-2"
    shutil.copytree(BERT, bert)
    first = json.loads(run_cli("card", str(bert), "--json").stdout)["provenance"]["tokenizer_sha256"]
    vocab = bert / "vocab.txt"
    words = vocab.read_text().split("\n")
    i, j = words.index("paris"), words.index("france")
    words[i], words[j] = words[j], words[i]  # the same bytes, another order: other ids for both words
    _same_times(vocab, lambda p: p.write_text("\n".join(words)))
    second = json.loads(run_cli("card", str(bert), "--json").stdout)["provenance"]["tokenizer_sha256"]
    assert first != second


# ---- A7: a slot claiming terabytes over a sparse data file ------------------------------------------
def test_a_sparse_terabyte_slot_is_never_read_or_hashed(albert, monkeypatch):
    """The whole data file was hashed, slots included: killed at 90 s. What is read is hashed."""
    from tf_bundle import Spec, write_index

    prefix = albert / "model.ckpt-best"
    bundle = read_bundle(prefix)
    entries = {n: Spec(e.dtype, e.shape, e.offset, e.size, e.crc) for n, e in bundle.entries.items()}
    end = (albert / DATA).stat().st_size
    slot = next(n for n in entries if n.endswith("/adam_m"))
    size = 1 << 40  # a TiB: 2^38 float32 values
    entries[slot] = Spec("float32", (1 << 19, 1 << 19), end, size)
    write_index(Path(f"{prefix}.index"), entries)
    with open(albert / DATA, "r+b") as handle:
        handle.truncate(end + size)  # sparse: no bytes on disk
    started = time.perf_counter()
    result = run_cli("card", str(albert), "--json")
    assert result.returncode == 0, result.stderr
    assert time.perf_counter() - started < 30
    assert "slots not read" in json.loads(result.stdout)["provenance"]["weights_sha256"]


def test_a_conversion_killed_midway_leaves_no_folder_for_ever(albert):
    """A `.tmp-<pid>` folder of a process that died is removed by the next conversion."""
    root = Path(os.environ["ALBERT_LAB_CACHE"]) / "releases"
    root.mkdir(parents=True, exist_ok=True)
    gone = subprocess.Popen(["true"])
    gone.wait()  # a process id that was and is no more
    dead = root / f".albert-0123.tmp-{gone.pid}"
    dead.mkdir()
    (dead / "model.safetensors").write_bytes(b"\0" * 1000)
    assert run_cli("card", str(albert)).returncode == 0
    assert not dead.exists()
