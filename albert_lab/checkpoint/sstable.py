"""The SSTable of a TensorFlow 1 checkpoint's index (LevelDB's table format), read within bounds:
data blocks of prefix-compressed (key, value) entries with restart points, an index block of
(separator key, block handle), a 48-byte footer ending in a magic number; each block followed by
a type byte (0: stored as is) and the masked CRC-32C of block and type. Every block is parsed once,
checked against its CRC, and what its records take is spent from a budget record by record as they
are decoded (tf1.py reads the entries from the records)."""

from __future__ import annotations

from dataclasses import dataclass
from itertools import pairwise

from albert_lab.checkpoint.crc32c import crc32c, unmask

MAGIC = 0xDB4775248B80FB57
FOOTER = 48
TRAILER = 5  # type byte + masked CRC-32C
MAX_RECORDS = 100_000  # an xxlarge release's index holds ~100 variables and their slots; each record takes >= 3 bytes
# Keys are prefix-coded: a 4-byte record may repeat the previous key and add a byte, so keys kept whole
# grow with the square of the record count (a 344 KB index made 2.1 GB of them). What they may take in
# memory is bounded as they are decoded: one key at most MAX_KEY_BYTES (a release's longest name is
# ~90 bytes), all keys together KEY_BYTES_PER_INDEX_BYTE x the index's size (a release's keys take about
# as much as its file: a 16-key restart interval and 20-byte entries), within [MIN_KEY_BYTES, MAX_KEYS_BYTES]
# (MAX_RECORDS names of 100 bytes take 10 MB).
MAX_KEY_BYTES = 4096
KEY_BYTES_PER_INDEX_BYTE, MIN_KEY_BYTES, MAX_KEYS_BYTES = 8, 1 << 20, 32 << 20


class _Bad(Exception):
    """Raised while parsing; turned into one CheckpointError that names the file."""


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
    free = 0  # the first byte after the data blocks read so far
    # Each data block is parsed once and its keys checked as it comes: an index whose entries all
    # point at one block of many records made 100k x 1,300 records of a 604 KB file (gigabytes). Data
    # blocks lie one after the other in the file, as TensorFlow writes them, and none is empty: blocks
    # inside one another were each CRC-checked in full (an 8 MB index took 13 s), and 700,000 empty
    # ones spent no record (12 s). So every byte is checked at most once.
    for _, value in _block(raw, index_handle, len(raw) - FOOTER, budget, entries=False):
        handle, _ = _handle(value, 0, len(value))
        if handle[0] in seen:
            raise _Bad(f"two index entries point at the block at byte {handle[0]:,}")
        if handle[0] < free:
            raise _Bad(f"its blocks overlap, or are listed out of their order in the file, at byte {handle[0]:,}")
        seen.add(handle[0])
        free = handle[0] + handle[1] + TRAILER
        block = _block(raw, handle, len(raw) - FOOTER, budget)
        if not block:
            raise _Bad(f"the block at byte {handle[0]:,} holds no entry (TensorFlow's writer never makes one)")
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
    blocks: int = MAX_RECORDS + 1  # the index block's records: one a data block, which holds one record at least

    def spend(self, key_bytes: int, entry: bool) -> None:
        self.records -= entry
        self.blocks -= not entry
        self.key_bytes -= key_bytes
        if self.records < 0:
            raise _Bad(f"it holds more than {MAX_RECORDS:,} entries, more than any release's index")
        if self.blocks < 0:
            raise _Bad(f"its index lists more than {MAX_RECORDS:,} blocks, more than any release's index")
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
