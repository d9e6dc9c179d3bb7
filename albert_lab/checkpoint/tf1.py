"""TensorFlow 1 name-based checkpoints (TensorBundle), read without TensorFlow.

A checkpoint `PREFIX` is `PREFIX.index` and `PREFIX.data-SSSSS-of-NNNNN`. The index is an
SSTable in LevelDB's table format: data blocks of prefix-compressed (key, value) entries
with restart points, an index block of (separator key, block handle), a 48-byte footer
ending in a magic number; each block is followed by a type byte (0: stored as is) and the
masked CRC-32C of block and type. Keys are variable names; the empty key holds a
BundleHeaderProto, every other value a BundleEntryProto (dtype, shape, shard, offset, size,
masked CRC-32C of the tensor's bytes). The data files hold the raw little-endian bytes.

Everything is bounded and checked: a damaged or lying file is one CheckpointError naming
the file and the entry, and a tensor is read (seek + read of its recorded size, then its
CRC checked) only when asked for, so the optimizer slots are never read at all.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any

import numpy as np

from albert_lab.checkpoint.crc32c import crc32c, unmask
from albert_lab.checkpoint.files import check_regular
from albert_lab.errors import CheckpointError

MAGIC = 0xDB4775248B80FB57
FOOTER = 48
TRAILER = 5  # type byte + masked CRC-32C
MAX_INDEX_BYTES = 16 << 20  # an xxlarge release's index with its slots is ~40 KB; its blocks are CRC-checked at ~20 MB/s
MAX_SHARDS = 10_000
MAX_RECORDS = 100_000  # an xxlarge release's index holds ~100 variables and their slots; each record takes >= 3 bytes
# Keys are prefix-coded: a 4-byte record may repeat the previous key and add a byte, so keys kept whole
# grow with the square of the record count (a 344 KB index made 2.1 GB of them). What they may take in
# memory is bounded as they are decoded: one key at most MAX_KEY_BYTES (a release's longest name is
# ~90 bytes), all keys together KEY_BYTES_PER_INDEX_BYTE x the index's size (a release's keys take about
# as much as its file: a 16-key restart interval and 20-byte entries), within [MIN_KEY_BYTES, MAX_KEYS_BYTES]
# (MAX_RECORDS names of 100 bytes take 10 MB).
MAX_KEY_BYTES = 4096
KEY_BYTES_PER_INDEX_BYTE, MIN_KEY_BYTES, MAX_KEYS_BYTES = 8, 1 << 20, 32 << 20
MAX_RANK = 8
# tf.DataType numbers: (numpy dtype, bytes); the releases hold float32 weights and an int64 step
DTYPES = {1: ("float32", 4), 2: ("float64", 8), 3: ("int32", 4), 9: ("int64", 8), 14: ("bfloat16", 2), 19: ("float16", 2)}
WEIGHT_DTYPES = ("float32", "float16", "bfloat16")
ADVICE = "re-copy the release (the file is damaged, or not a TensorFlow checkpoint)"


class _Bad(Exception):
    """Raised while parsing; turned into one CheckpointError that names the file."""


@dataclass(frozen=True)
class Entry:
    """One tensor as the index records it."""

    name: str
    dtype: str  # numpy name, or 'dtype N' for a type no release holds
    shape: tuple[int, ...]
    shard: int
    offset: int
    size: int  # bytes
    crc: int | None  # the CRC-32C of its bytes (unmasked), where recorded
    sliced: bool  # a partitioned variable (never in the releases)


@dataclass(frozen=True)
class Bundle:
    """A checkpoint's index, read and checked against its data files' sizes."""

    prefix: Path
    entries: dict[str, Entry]
    shards: tuple[Path, ...]
    index_sha256: str  # of the very bytes the entries were parsed from

    @property
    def index(self) -> Path:
        return Path(f"{self.prefix}.index")

    def bytes_of(self, names: list[str]) -> int:
        return sum(self.entries[n].size for n in names)

    def raw(self, name: str, chunk: int | None = None) -> Iterator[bytes]:
        """The bytes of tensor `name` as its data file holds them, in pieces of at most `chunk`
        bytes (all at once without); a file that ends early is one CheckpointError."""
        entry = self.entries[name]
        file = self.shards[entry.shard]
        check_regular(file)
        try:
            with open(file, "rb") as handle:
                handle.seek(entry.offset)
                done = 0
                while done < entry.size:
                    data = handle.read(min(entry.size - done, chunk or entry.size))
                    if not data:
                        raise CheckpointError(f"{file} is truncated: entry {name!r} needs bytes {entry.offset:,}-"
                                              f"{entry.offset + entry.size:,}, the file ends at {entry.offset + done:,}; {ADVICE}")
                    done += len(data)
                    yield data
        except OSError as err:
            raise CheckpointError(f"{file} cannot be read ({err.strerror or err}); {ADVICE}") from None

    def digest(self, names: list[str]) -> str:
        """SHA-256 of the bytes of tensors `names`, in that order: what a conversion reads, and
        nothing else (an optimizer slot over a sparse terabyte is never touched)."""
        digest = hashlib.sha256()
        for name in names:
            for data in self.raw(name, chunk=16 << 20):
                digest.update(data)
        return digest.hexdigest()

    def read(self, name: str, verify: bool = True, digest: Any = None) -> np.ndarray:
        """The tensor `name` as float32 (weights) or its own dtype; its CRC checked with `verify`, and
        the bytes it was made from fed to `digest` (a hashlib object) where one is given."""
        entry = self.entries[name]
        if entry.sliced or entry.dtype not in DTYPES_BY_NAME:
            raise CheckpointError(f"{self.index}: entry {name!r} is {'a partitioned variable' if entry.sliced else entry.dtype}, "
                                  f"which ALBERT Lab does not read; {ADVICE}")
        data = b"".join(self.raw(name))
        if digest is not None:
            digest.update(data)
        file = self.shards[entry.shard]
        if verify and entry.crc is not None and crc32c(data) != entry.crc:
            raise CheckpointError(f"{file}: the bytes of entry {name!r} do not match their recorded CRC-32C; {ADVICE}")
        array = np.frombuffer(data, dtype="<u2" if entry.dtype == "bfloat16" else f"<{np.dtype(entry.dtype).str[1:]}")
        if entry.dtype == "bfloat16":
            array = (array.astype(np.uint32) << 16).view(np.float32)
        return array.reshape(entry.shape)


DTYPES_BY_NAME = {name for name, _ in DTYPES.values()}


def read_bundle(prefix: Path) -> Bundle:
    """The index of checkpoint `prefix`, every entry checked: a known dtype whose size matches
    its shape, a shard that exists, and bytes inside that shard's data file."""
    index = Path(f"{prefix}.index")
    check_regular(index)
    size = index.stat().st_size
    if size > MAX_INDEX_BYTES:
        raise CheckpointError(f"{index} is {size:,} bytes, more than any release's index ({MAX_INDEX_BYTES:,}); {ADVICE}")
    with open(index, "rb") as handle:
        raw = handle.read(MAX_INDEX_BYTES + 1)
    entry_name = ""
    try:
        records = _table_records(raw)
        if not records or records[0][0] != b"":
            raise _Bad("it has no header entry (the empty key)")
        shards = _header(records[0][1])
        entries = {}
        for key, value in records[1:]:
            entry_name = key.decode("utf-8", errors="replace")[:200]
            entries[entry_name] = _entry(entry_name, value, shards)
    except _Bad as err:
        where = f" (entry {entry_name!r})" if entry_name else ""
        raise CheckpointError(f"{index} is damaged{where}: {err}; {ADVICE}") from None
    files = tuple(Path(f"{prefix}.data-{s:05d}-of-{shards:05d}") for s in range(shards))
    for file in files:
        check_regular(file)
    ends = [os.stat(f).st_size for f in files]
    for entry in entries.values():
        if entry.offset + entry.size > ends[entry.shard]:
            raise CheckpointError(f"{files[entry.shard]} is truncated or the index lies: entry {entry.name!r} needs bytes "
                                  f"{entry.offset:,}-{entry.offset + entry.size:,}, the file has {ends[entry.shard]:,}; {ADVICE}")
    return Bundle(prefix=Path(prefix), entries=entries, shards=files, index_sha256=hashlib.sha256(raw).hexdigest())


# ---- the SSTable ---------------------------------------------------------------------------
def _table_records(raw: bytes) -> list[tuple[bytes, bytes]]:
    """Every (key, value) of the table, in order; keys strictly increasing."""
    if len(raw) < FOOTER:
        raise _Bad(f"{len(raw)} bytes, shorter than the 48-byte footer")
    footer = raw[-FOOTER:]
    if int.from_bytes(footer[-8:], "little") != MAGIC:
        raise _Bad("the footer's magic number is wrong (not an SSTable)")
    _, pos = _handle(footer, 0, FOOTER - 8)  # the metaindex block: unused
    index_handle, _ = _handle(footer, pos, FOOTER - 8)
    budget = _Budget(key_bytes=min(max(MIN_KEY_BYTES, KEY_BYTES_PER_INDEX_BYTE * len(raw)), MAX_KEYS_BYTES))
    records: list[tuple[bytes, bytes]] = []
    seen: set[int] = set()
    # Each data block is parsed once and its keys checked as it comes: an index whose entries all
    # point at one block of many records made 100k x 1,300 records of a 604 KB file (gigabytes).
    for _, value in _block(raw, index_handle, len(raw) - FOOTER, budget, entries=False):
        handle, _ = _handle(value, 0, len(value))
        if handle[0] in seen:
            raise _Bad(f"two index entries point at the block at byte {handle[0]:,}")
        seen.add(handle[0])
        block = _block(raw, handle, len(raw) - FOOTER, budget)
        for (a, _), (b, _) in pairwise(records[-1:] + block):
            if not a < b:
                raise _Bad(f"its keys are out of order at {b[:80]!r}")
        records += block
    return records


@dataclass
class _Budget:
    """What the table's records may still take, spent record by record as they are decoded."""

    key_bytes: int  # every block's keys, the index block's too
    records: int = MAX_RECORDS + 1  # the data blocks' records: the header and the entries

    def spend(self, key_bytes: int, entry: bool) -> None:
        self.records -= entry
        self.key_bytes -= key_bytes
        if self.records < 0:
            raise _Bad(f"it holds more than {MAX_RECORDS:,} entries, more than any release's index")
        if self.key_bytes < 0:
            raise _Bad("its keys, prefix-coded, unfold to more bytes than any release's names "
                       f"({KEY_BYTES_PER_INDEX_BYTE} times the file's size, at most {MAX_KEYS_BYTES >> 20} MiB)")


def _handle(buf: bytes, pos: int, end: int) -> tuple[tuple[int, int], int]:
    offset, pos = _varint(buf, pos, end)
    size, pos = _varint(buf, pos, end)
    return (offset, size), pos


def _block(raw: bytes, handle: tuple[int, int], limit: int, budget: _Budget, entries: bool = True) -> list[tuple[bytes, bytes]]:
    offset, size = handle
    if offset + size + TRAILER > limit or size < 4:
        raise _Bad(f"a block handle ({offset}, {size}) points past the end of the file")
    contents, kind = raw[offset:offset + size], raw[offset + size]
    if crc32c(raw[offset:offset + size + 1]) != unmask(int.from_bytes(raw[offset + size + 1:offset + size + 5], "little")):
        raise _Bad(f"the block at byte {offset:,} does not match its CRC-32C")
    if kind != 0:
        raise _Bad(f"the block at byte {offset:,} is compressed (type {kind}); TensorFlow's Saver writes them "
                   "uncompressed, and ALBERT Lab reads only those")
    restarts = int.from_bytes(contents[-4:], "little")
    end = size - 4 - 4 * restarts
    if restarts < 1 or end < 0:
        raise _Bad(f"the block at byte {offset:,} has {restarts:,} restart points, more than fit")
    records, key, pos = [], b"", 0
    while pos < end:  # each entry consumes at least 3 bytes: bounded by the block's size
        shared, pos = _varint(contents, pos, end)
        unshared, pos = _varint(contents, pos, end)
        length, pos = _varint(contents, pos, end)
        if shared > len(key) or pos + unshared + length > end:
            raise _Bad(f"an entry in the block at byte {offset:,} runs past the block")
        if shared + unshared > MAX_KEY_BYTES:  # refused before it is made
            raise _Bad(f"a key of {shared + unshared:,} bytes, longer than any release's names (at most {MAX_KEY_BYTES:,} "
                       f"read): {(key[:min(shared, 80)] + contents[pos:pos + 80])[:80]!r}...")
        key = key[:shared] + contents[pos:pos + unshared]
        budget.spend(len(key), entries)
        records.append((key, contents[pos + unshared:pos + unshared + length]))
        pos += unshared + length
    return records


def _varint(buf: bytes, pos: int, end: int) -> tuple[int, int]:
    value = 0
    for shift in range(0, 70, 7):
        if pos >= end:
            raise _Bad("a number runs past the end of its record")
        byte = buf[pos]
        pos += 1
        value |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return value, pos
    raise _Bad("a number is longer than 10 bytes")


# ---- the protocol buffers --------------------------------------------------------------------
def _fields(buf: bytes) -> list[tuple[int, int | bytes]]:
    """(field number, value) of a protobuf message: ints for varints and fixed, bytes for the rest."""
    out, pos = [], 0
    while pos < len(buf):  # every field consumes at least one byte
        tag, pos = _varint(buf, pos, len(buf))
        number, wire = tag >> 3, tag & 7
        if wire == 0:
            value, pos = _varint(buf, pos, len(buf))
        elif wire in (1, 5):
            width = 8 if wire == 1 else 4
            if pos + width > len(buf):
                raise _Bad("a fixed-size field runs past its record")
            value, pos = int.from_bytes(buf[pos:pos + width], "little"), pos + width
        elif wire == 2:
            length, pos = _varint(buf, pos, len(buf))
            if pos + length > len(buf):
                raise _Bad("a field runs past its record")
            value, pos = buf[pos:pos + length], pos + length
        else:
            raise _Bad(f"a field of wire type {wire}, which these records never hold")
        out.append((number, value))
    return out


def _header(value: bytes) -> int:
    """The number of shards, from the BundleHeaderProto (little-endian checkpoints only)."""
    fields = dict(_fields(value))
    shards, endianness = fields.get(1, 1), fields.get(2, 0)
    if not isinstance(shards, int) or not 1 <= shards <= MAX_SHARDS:
        raise _Bad(f"the header says {shards} shards")
    if endianness != 0:
        raise _Bad("the checkpoint was written big-endian")
    return shards


def _entry(name: str, value: bytes, shards: int) -> Entry:
    """A BundleEntryProto: dtype 1, shape 2, shard_id 3, offset 4, size 5, crc32c 6, slices 7."""
    fields = _fields(value)
    get = {number: v for number, v in fields}
    ints = {k: get.get(k, 0) for k in (1, 3, 4, 5)}
    if any(not isinstance(v, int) for v in ints.values()) or not isinstance(get.get(2, b""), bytes):
        raise _Bad("a field has the wrong type")
    dtype = DTYPES.get(ints[1], (f"dtype {ints[1]}", 0))
    shape = _shape(get.get(2, b""))
    if ints[3] >= shards:
        raise _Bad(f"shard {ints[3]}, but the header says {shards}")
    sliced = any(number == 7 for number, _ in fields)
    if dtype[1] and not sliced and int(np.prod(shape, dtype=object)) * dtype[1] != ints[5]:
        raise _Bad(f"{ints[5]:,} bytes, but a {dtype[0]} tensor of shape {list(shape)} takes "
                   f"{int(np.prod(shape, dtype=object)) * dtype[1]:,}")
    crc = get.get(6)
    return Entry(name=name, dtype=dtype[0], shape=shape, shard=ints[3], offset=ints[4], size=ints[5],
                 crc=unmask(crc) if isinstance(crc, int) else None, sliced=sliced)


def _shape(value: bytes) -> tuple[int, ...]:
    dims = []
    for number, dim in _fields(value):
        if number == 3 and dim:
            raise _Bad("its shape is of unknown rank")
        if number == 2:
            size = dict(_fields(dim)).get(1, 0) if isinstance(dim, bytes) else -1
            if not isinstance(size, int) or size >= 1 << 40:  # a negative size is a huge varint
                raise _Bad("its shape holds an unknown or impossible size")
            dims.append(size)
    if len(dims) > MAX_RANK:
        raise _Bad(f"its shape has rank {len(dims)}")
    return tuple(dims)
