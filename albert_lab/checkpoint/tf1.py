"""TensorFlow 1 name-based checkpoints (TensorBundle), read without TensorFlow.

A checkpoint `PREFIX` is `PREFIX.index` and `PREFIX.data-SSSSS-of-NNNNN`. The index is an
SSTable in LevelDB's table format, read within bounds by sstable.py. Its keys are variable
names; the empty key holds a BundleHeaderProto, every other value a BundleEntryProto (dtype,
shape, shard, offset, size, masked CRC-32C of the tensor's bytes). The data files hold the raw little-endian bytes.

Everything is bounded and checked: a damaged or lying file is one CheckpointError naming
the file and the entry, and a tensor is read (seek + read of its recorded size, then its
CRC checked) only when asked for, so the optimizer slots are never read at all.
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from albert_lab.checkpoint.crc32c import crc32c, unmask
from albert_lab.checkpoint.files import check_regular
from albert_lab.checkpoint.sstable import _Bad, _table_records, _varint
from albert_lab.errors import CheckpointError

MAX_INDEX_BYTES = 16 << 20  # an xxlarge release's index with its slots is ~40 KB; its blocks are CRC-checked at ~20 MB/s
MAX_SHARDS = 10_000
MAX_RANK = 8
# tf.DataType numbers: (numpy dtype, bytes); the releases hold float32 weights and an int64 step
DTYPES = {1: ("float32", 4), 2: ("float64", 8), 3: ("int32", 4), 9: ("int64", 8), 14: ("bfloat16", 2), 19: ("float16", 2)}
WEIGHT_DTYPES = ("float32", "float16", "bfloat16")
ADVICE = "re-copy the release (the file is damaged, or not a TensorFlow checkpoint)"


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
        raw = handle.read(size + 1)  # what stat said, and one byte more: a file that grew since is read no further
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
