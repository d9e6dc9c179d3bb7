"""A test-only TensorBundle index writer (numpy, no TensorFlow): the same SSTable layout TensorFlow's
Saver writes (one data block, an empty metaindex block, an index block, the 48-byte footer), so tests
can write lying indexes and xxlarge-sized ones whose data file is sparse."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from albert_lab.checkpoint.crc32c import MASK_DELTA, crc32c
from albert_lab.checkpoint.sstable import MAGIC

DT = {"float32": 1, "float64": 2, "int32": 3, "int64": 9, "bfloat16": 14, "float16": 19, "string": 7}


@dataclass
class Spec:
    """One index entry: what the writer records (not necessarily the truth)."""

    dtype: str
    shape: tuple[int, ...]
    offset: int
    size: int
    crc: int | None = None  # the CRC-32C of the bytes (unmasked)
    shard: int = 0


def varint(n: int) -> bytes:
    n &= (1 << 64) - 1
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def field(number: int, wire: int, value: int | bytes) -> bytes:
    tag = varint(number << 3 | wire)
    if wire == 0:
        return tag + varint(value)
    if wire == 5:
        return tag + value.to_bytes(4, "little")
    return tag + varint(len(value)) + value


def mask(crc: int) -> int:
    return ((((crc >> 15) | (crc << 17)) & 0xFFFFFFFF) + MASK_DELTA) & 0xFFFFFFFF


def entry_proto(spec: Spec) -> bytes:
    shape = b"".join(field(2, 2, field(1, 0, d)) for d in spec.shape)
    out = field(1, 0, DT[spec.dtype]) + field(2, 2, shape) + field(3, 0, spec.shard) + field(4, 0, spec.offset)
    out += field(5, 0, spec.size)
    return out + (field(6, 5, mask(spec.crc)) if spec.crc is not None else b"")


def block(records: list[tuple[bytes, bytes]]) -> bytes:
    body, restarts = bytearray(), []
    for key, value in records:  # a restart point at every entry: no shared prefixes
        restarts.append(len(body))
        body += varint(0) + varint(len(key)) + varint(len(value)) + key + value
    restarts = restarts or [0]
    return bytes(body) + b"".join(r.to_bytes(4, "little") for r in restarts) + len(restarts).to_bytes(4, "little")


def write_index(index: Path, entries: dict[str, Spec], shards: int = 1) -> None:
    header = field(1, 0, shards) + field(3, 2, field(1, 0, 1))
    records = [(b"", header)] + [(name.encode(), entry_proto(s)) for name, s in sorted(entries.items())]
    out = bytearray()

    def put(contents: bytes) -> bytes:
        handle = varint(len(out)) + varint(len(contents))
        out.extend(contents + b"\0" + mask(crc32c(contents + b"\0")).to_bytes(4, "little"))
        return handle

    data = put(block(records))
    meta = put(block([]))
    index_handle = put(block([(records[-1][0] + b"\0", data)]))
    footer = meta + index_handle
    out += footer + b"\0" * (40 - len(footer)) + MAGIC.to_bytes(8, "little")
    index.write_bytes(bytes(out))



Coded = list[tuple[int, bytes, bytes]]  # a block's records as stored: (bytes shared with the key before, bytes added, value)


def prefix_coded(records: list[tuple[bytes, bytes]]) -> Coded:
    """Whole (key, value) records coded as LevelDB's writer codes them with one restart point."""
    coded, previous = [], b""
    for key, value in records:
        shared = next((i for i, (a, b) in enumerate(zip(previous, key)) if a != b), min(len(previous), len(key)))
        coded.append((shared, key[shared:], value))
        previous = key
    return coded


def coded_block(records: Coded) -> bytes:
    body = b"".join(varint(shared) + varint(len(added)) + varint(len(value)) + added + value for shared, added, value in records)
    return body + (0).to_bytes(4, "little") + (1).to_bytes(4, "little")  # one restart point, at 0


def write_coded_index(index: Path, blocks: list[tuple[bytes, Coded]]) -> None:
    """An SSTable of prefix-coded data blocks, each given with its separator (a key at or above its
    last, below the next block's first), and an index block pointing at each once. The first record
    of the first block should be the header (the empty key)."""
    out = bytearray()

    def put(contents: bytes) -> bytes:
        handle = varint(len(out)) + varint(len(contents))
        out.extend(contents + b"\0" + mask(crc32c(contents + b"\0")).to_bytes(4, "little"))
        return handle

    handles = [(separator, put(coded_block(records))) for separator, records in blocks]
    meta = put(block([]))
    index_handle = put(coded_block(prefix_coded(handles)))
    footer = meta + index_handle
    out += footer + b"\0" * (40 - len(footer)) + MAGIC.to_bytes(8, "little")
    index.write_bytes(bytes(out))


def spiece_pieces(data: bytes) -> list[int]:
    """The byte offsets at which each piece (field 1 of a SentencePiece ModelProto) ends."""
    from albert_lab.checkpoint.sstable import _varint

    ends, pos = [], 0
    while pos < len(data):
        tag, pos = _varint(data, pos, len(data))
        length, pos = _varint(data, pos, len(data))
        pos += length
        if tag >> 3 == 1:
            ends.append(pos)
    return ends


def spiece_of_size(data: bytes, size: int) -> bytes:
    """A SentencePiece model `data` with pieces added up to `size` (repeated fields appended to a
    serialized message merge into it): what a large release's 30,000-piece model is to a reader."""
    import struct

    extra = len(spiece_pieces(data))
    score = int.from_bytes(struct.pack("<f", -100.0), "little")
    return data + b"".join(field(1, 2, field(1, 2, f"\u2581filler{i}".encode()) + field(2, 5, score)) for i in range(size - extra))
