"""Hostile releases and archives: what an adversary hands to `--checkpoint`, `import-tf` or the
sidebar's folder field ends in one line within seconds, never serves another model's answers from
the cache, and leaves nothing behind in the cache when it is refused."""

from __future__ import annotations

import hashlib
import io
import json
import os
import shutil
import subprocess
import tarfile
import time
import zipfile
from pathlib import Path

import pytest
from conftest import one_line_error, run_cli
from tf_bundle import Coded, block, coded_block, mask, prefix_coded, varint, write_coded_index

from albert_lab.checkpoint.crc32c import crc32c
from albert_lab.checkpoint.sstable import MAGIC, _table_records
from albert_lab.checkpoint.tf1 import read_bundle
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


# ---- prefix-coded keys: each key repeats what it shares with the one before -------------------------
HEADER = b"\x08\x01\x1a\x02\x08\x01"  # num_shards 1, version 1
INDEX_SECONDS, INDEX_BYTES = 2.0, 256 << 20  # a hostile index is refused within these (the bound)


def _growing_keys(n: int) -> tuple[bytes, Coded]:
    """Keys 'a', 'aa', 'aaa', ...: each record (4-6 bytes) repeats the previous key and adds a byte."""
    return b"b", [(0, b"", HEADER)] + [(i, b"a", b"") for i in range(n)]


def _long_prefix_keys(n: int, start: int = 0, length: int = 4000) -> tuple[bytes, Coded]:
    """Keys of a `length`-byte prefix and a 4-byte counter (the first whole, then 2 bytes a record)."""
    def key(i: int) -> bytes:
        return (start + i).to_bytes(4, "big")

    first = b"p" * length + key(0)
    return first[:-4] + key(n - 1), [(0, first, b"")] + [(length + 2, key(i)[-2:], b"") for i in range(1, n)]


def read_bundle_records(index: Path) -> list[tuple[bytes, bytes]]:
    return _table_records(index.read_bytes())


def _refused_within_bounds(prefix: Path, match: str) -> None:
    """read_bundle refuses the index in one CheckpointError, within INDEX_SECONDS, and the bytes Python
    allocated for it peak under INDEX_BYTES (tracemalloc sees every bytes object)."""
    import tracemalloc

    started = time.perf_counter()
    with pytest.raises(CheckpointError, match=match):
        read_bundle(prefix)
    assert time.perf_counter() - started < INDEX_SECONDS
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError):
            read_bundle(prefix)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < INDEX_BYTES, f"{peak / 2**20:,.0f} MiB"


@pytest.mark.parametrize("records", [57_000, 97_000])  # about the 344 KB and 584 KB indexes of the finding
def test_an_index_whose_keys_grow_by_a_byte_is_refused_within_bounds(tmp_path, records):
    """Each key kept whole: a 344 KB index took 2.1 GB, a 584 KB one ended in a MemoryError at 3.9 GB."""
    prefix = tmp_path / "model.ckpt-best"
    write_coded_index(Path(f"{prefix}.index"), [_growing_keys(records)])
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    assert Path(f"{prefix}.index").stat().st_size > 300_000
    _refused_within_bounds(prefix, "than any release's names")


def test_an_index_of_long_shared_prefixes_is_refused_within_bounds(tmp_path):
    prefix = tmp_path / "model.ckpt-best"
    separator, keys = _long_prefix_keys(90_000)
    write_coded_index(Path(f"{prefix}.index"), [(separator, [(0, b"", HEADER), *keys])])
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    _refused_within_bounds(prefix, "unfold to more bytes than any release's names")


def test_an_index_of_many_blocks_each_restarting_a_long_key_is_refused_within_bounds(tmp_path):
    """A 10.6 MB index spread over many blocks took 5.2 GB before it was refused."""
    prefix = tmp_path / "model.ckpt-best"
    blocks = [(b"\0", [(0, b"", HEADER)])] + [_long_prefix_keys(400, start=400 * b) for b in range(2_600)]
    write_coded_index(Path(f"{prefix}.index"), blocks)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    assert Path(f"{prefix}.index").stat().st_size > 10_000_000
    _refused_within_bounds(prefix, "unfold to more bytes than any release's names")


def _table(path: Path, blocks: list[tuple[int, int]], data: bytes, keys: list[bytes] | None = None) -> None:
    """An SSTable whose data region is `data` and whose index lists `blocks` ((offset, size) handles
    into it, under `keys`: 'k0', 'k1', ... unless given), then an empty metaindex block and the footer."""
    out = bytearray(data)

    def put(contents: bytes) -> bytes:
        handle = varint(len(out)) + varint(len(contents))
        out.extend(contents + b"\0" + mask(crc32c(contents + b"\0")).to_bytes(4, "little"))
        return handle

    keys = keys if keys is not None else [b"k%08d" % i for i in range(len(blocks))]
    meta = put(block([]))
    index = put(coded_block([(0, key, varint(o) + varint(n)) for key, (o, n) in zip(keys, blocks)]))
    footer = meta + index
    out += footer + b"\0" * (40 - len(footer)) + MAGIC.to_bytes(8, "little")
    path.write_bytes(bytes(out))


def _nested(count: int, size: int) -> tuple[list[tuple[int, int]], bytes]:
    """`count` empty blocks inside one another (block i at byte 4i, ending before block i-1's end), each
    with its type byte and CRC: parsed naively, every one is CRC-checked over nearly the whole region."""
    buf, blocks = bytearray(size + 12 * count + 16), []
    for i in range(count):
        end = size + 12 * (count - 1 - i)
        blocks.append((4 * i, (end - 4 * i) // 4 * 4))
    for offset, length in reversed(blocks):  # the innermost first: an outer block's CRC covers the inner ones
        end = offset + length
        buf[end - 4:end] = ((length - 4) // 4).to_bytes(4, "little")  # restart points filling it: no entry
        buf[end] = 0
        buf[end + 1:end + 5] = mask(crc32c(bytes(buf[offset:end + 1]))).to_bytes(4, "little")
    return blocks, bytes(buf[:max(o + n for o, n in blocks) + 5])


def test_blocks_inside_one_another_are_refused_each_byte_checked_once(tmp_path, monkeypatch):
    """Blocks starting at different bytes inside one another were each CRC-checked in full: an 8 MB index
    of 300 such blocks took 10-13 s. Blocks lie one after the other now: every byte is checked once."""
    from albert_lab.checkpoint import sstable

    prefix = tmp_path / "model.ckpt-best"
    blocks, data = _nested(3, 200_000)
    _table(Path(f"{prefix}.index"), blocks, data)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    checked = []
    monkeypatch.setattr(sstable, "crc32c", lambda buf: checked.append(len(buf)) or crc32c(buf))
    with pytest.raises(CheckpointError, match=r"holds no entry|overlap"):
        read_bundle(prefix)
    assert sum(checked) <= Path(f"{prefix}.index").stat().st_size


def test_an_index_of_many_empty_blocks_under_empty_keys_is_refused(tmp_path):
    """700,000 empty blocks listed under empty keys spent no record and no key byte: 12 s and 213 MB."""
    prefix = tmp_path / "model.ckpt-best"
    empty = (0).to_bytes(4, "little") + (1).to_bytes(4, "little")  # one restart point, no entry
    trailer = b"\0" + mask(crc32c(empty + b"\0")).to_bytes(4, "little")
    count = 120_000
    _table(Path(f"{prefix}.index"), [(13 * i, 8) for i in range(count)], (empty + trailer) * count, keys=[b""] * count)
    Path(f"{prefix}.data-00000-of-00001").write_bytes(b"")
    _refused_within_bounds(prefix, "lists more than 100,000 blocks")
    _table(Path(f"{prefix}.index"), [(13 * i, 8) for i in range(3)], (empty + trailer) * 3, keys=[b""] * 3)
    with pytest.raises(CheckpointError, match="holds no entry"):
        read_bundle(prefix)


def test_a_release_index_written_prefix_coded_reads_as_written(albert):
    """TensorFlow's own writer prefix-codes its keys: the bounds refuse no real index."""
    prefix = albert / "model.ckpt-best"
    index = Path(f"{prefix}.index")
    bundle = read_bundle(prefix)
    records = read_bundle_records(index)
    blocks = [records[:7], records[7:]]  # two blocks, keys sharing their prefixes
    write_coded_index(index, [(b[-1][0], prefix_coded(b)) for b in blocks])
    assert read_bundle(prefix).entries == bundle.entries


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


# ---- archives: forged, unreadable, bombs, and the two that were refused by mistake ---------------
def _zip(path: Path, members: dict[str, bytes], **options) -> Path:
    with zipfile.ZipFile(path, "w", **options) as handle:
        for name, data in members.items():
            handle.writestr(name, data)  # writestr records permission bits only (no file type): A11
    return path


def _release_members(top: str = "albert_tiny/") -> dict[str, bytes]:
    return {f"{top}{f.name}": f.read_bytes() for f in sorted(ALBERT.iterdir())}


def test_an_archive_names_itself_and_its_sha256_on_the_card(tmp_path):
    archive = _zip(tmp_path / "albert_tiny.zip", _release_members())
    card = json.loads(run_cli("card", str(archive), "--json").stdout)
    assert card["provenance"]["archive_sha256"] == f"albert_tiny.zip {hashlib.sha256(archive.read_bytes()).hexdigest()}"


def test_an_archive_rewritten_under_the_same_size_and_time_is_unpacked_again(tmp_path):
    """The unpacked copy was keyed on path, size and time: a rewritten archive served the old one."""
    members = _release_members()
    archive = _zip(tmp_path / "albert_tiny.zip", members)
    first = json.loads(run_cli("card", str(archive), "--json").stdout)["provenance"]
    config = json.loads(members["albert_tiny/albert_config.json"])
    members["albert_tiny/albert_config.json"] = json.dumps({**config, "hidden_act": "relu"}).encode()
    _same_times(archive, lambda p: _zip(p, members))
    result = run_cli("card", str(archive), "--json")
    assert result.returncode == 0, result.stderr
    second = json.loads(result.stdout)
    assert second["provenance"]["archive_sha256"] != first["archive_sha256"] and second["spec"]["activation"] == "relu"


def test_archives_packed_from_inside_the_folder_or_by_writestr_are_accepted(tmp_path):
    """`tar -C dir -czf x.tar.gz .` (a './' member first) and zips whose members carry permission
    bits only were refused by mistake."""
    tgz = tmp_path / "albert_tiny.tar.gz"
    with tarfile.open(tgz, "w:gz") as handle:
        handle.add(ALBERT, ".")
    with tarfile.open(tgz) as handle:
        assert handle.getnames()[0] == "."
    zipped = _zip(tmp_path / "albert_tiny.zip", _release_members())
    assert all(i.external_attr >> 16 == 0o600 for i in zipfile.ZipFile(zipped).infolist())
    for archive in (tgz, zipped):
        result = run_cli("card", str(archive), "--json")
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout)["heads"]["pair"] == "trained"


def _corrupt_deflate(path: Path) -> Path:
    _zip(path, _release_members(), compression=zipfile.ZIP_DEFLATED)
    raw = bytearray(path.read_bytes())
    info = zipfile.ZipFile(path).infolist()[-1]
    start = info.header_offset + 30 + len(info.filename.encode())
    raw[start:start + 16] = b"\xff" * 16  # the stream, not the headers
    path.write_bytes(bytes(raw))
    return path


def _encrypted(path: Path) -> Path:
    _zip(path, _release_members())
    raw = bytearray(path.read_bytes())
    for info in zipfile.ZipFile(path).infolist():  # the 'encrypted' flag, in the local and the central header
        raw[info.header_offset + 6] |= 1
    central = raw.rfind(b"PK\x05\x06")
    start = int.from_bytes(raw[central + 16:central + 20], "little")
    pos = start
    while raw[pos:pos + 4] == b"PK\x01\x02":
        raw[pos + 8] |= 1
        pos += 46 + sum(int.from_bytes(raw[pos + k:pos + k + 2], "little") for k in (28, 30, 32))
    path.write_bytes(bytes(raw))
    return path


def _unknown_method(path: Path) -> Path:
    _zip(path, _release_members())
    raw = bytearray(path.read_bytes())
    for info in zipfile.ZipFile(path).infolist():
        raw[info.header_offset + 8:info.header_offset + 10] = (99).to_bytes(2, "little")  # AE-x: not implemented
    central = raw.rfind(b"PK\x05\x06")
    pos = int.from_bytes(raw[central + 16:central + 20], "little")
    while raw[pos:pos + 4] == b"PK\x01\x02":
        raw[pos + 10:pos + 12] = (99).to_bytes(2, "little")
        pos += 46 + sum(int.from_bytes(raw[pos + k:pos + k + 2], "little") for k in (28, 30, 32))
    path.write_bytes(bytes(raw))
    return path


def _corrupt_gzip(path: Path) -> Path:
    with tarfile.open(path, "w:gz") as handle:
        handle.add(ALBERT, "albert_tiny")
    raw = bytearray(path.read_bytes())
    raw[len(raw) // 2:len(raw) // 2 + 64] = b"\xff" * 64
    path.write_bytes(bytes(raw))
    return path


@pytest.mark.parametrize("make", [_corrupt_deflate, _encrypted, _unknown_method, _corrupt_gzip],
                         ids=["corrupt-deflate", "encrypted", "unknown-method", "corrupt-gzip"])
def test_an_unreadable_archive_is_one_line_and_leaves_nothing(tmp_path, make):
    """zlib.error, RuntimeError and NotImplementedError escaped as tracebacks."""
    archive = make(tmp_path / ("albert_tiny.tar.gz" if make is _corrupt_gzip else "albert_tiny.zip"))
    before = _unpacked()
    one_line_error(run_cli("card", str(archive)), "is not a readable", "archive", "download it again")
    assert _unpacked() == before


def _unpacked() -> set[str]:
    root = Path(os.environ["ALBERT_LAB_CACHE"]) / "releases" / "unpacked"
    return {p.name for p in root.iterdir()} if root.is_dir() else set()


def test_a_zip_bomb_is_refused_before_it_is_unpacked(tmp_path):
    """A 3.1 MB zip wrote 3.1 GB into .cache and kept it after the refusal; after a touch, 6.1 GB."""
    members = {"albert_tiny/albert_config.json": (ALBERT / "albert_config.json").read_bytes(),
               **{f"albert_tiny/zeros-{i}": bytes(256 << 20) for i in range(2)}}
    bomb = _zip(tmp_path / "bomb.zip", members, compression=zipfile.ZIP_DEFLATED, compresslevel=9)
    assert bomb.stat().st_size < 2 << 20
    before = _unpacked()
    for _ in range(2):
        one_line_error(run_cli("card", str(bomb)), "unpacks to more than 256 MiB", "not a release archive")
        os.utime(bomb)  # a touch changed the key and unpacked it all again
    assert _unpacked() == before


def test_a_tar_bomb_stops_at_its_budget_and_leaves_nothing(tmp_path):
    """A tar's sizes are known only as it is read: the unpacking stops at the budget, and goes."""
    bomb = tmp_path / "bomb.tar.gz"
    with tarfile.open(bomb, "w:gz", compresslevel=9) as handle:
        handle.add(ALBERT / "albert_config.json", "albert_tiny/albert_config.json")  # listed as a release
        for i in range(3):
            info = tarfile.TarInfo(f"albert_tiny/zeros-{i}")
            info.size = 128 << 20
            handle.addfile(info, io.BytesIO(bytes(info.size)))
    before = _unpacked()
    one_line_error(run_cli("card", str(bomb)), "unpacks to more than 256 MiB")
    assert _unpacked() == before and not list((Path(os.environ["ALBERT_LAB_CACHE"]) / "releases" / "unpacked").glob(".*"))


def test_an_archive_without_a_release_is_not_kept(tmp_path):
    archive = _zip(tmp_path / "notes.zip", {"notes/albert_config.json": (ALBERT / "albert_config.json").read_bytes()})
    before = _unpacked()
    one_line_error(run_cli("card", str(archive)), "holds no albert_config.json or bert_config.json beside a TensorFlow")
    assert _unpacked() == before
