"""CRC-32C (Castagnoli), the checksum TensorFlow records for every index block and tensor.

Pure Python and numpy, no dependency. Large buffers are split into lanes whose CRCs are
computed side by side (one numpy step per byte column) and then joined: a CRC register is
linear over GF(2), so the register after A||B is the register after B from zero XOR the
register after A pushed through |B| zero bytes (a 32 x 32 bit matrix, built by squaring).
About 100 MB/s on one core: the checksums of ALBERT-xxlarge's weights take seconds.
"""

from __future__ import annotations

import numpy as np

POLY = 0x82F63B78  # reflected Castagnoli polynomial
MASK_DELTA = 0xA282EAD8  # LevelDB's and TensorFlow's masking of stored CRCs


def _byte_table() -> list[int]:
    table = []
    for i in range(256):
        c = i
        for _ in range(8):
            c = (c >> 1) ^ (POLY if c & 1 else 0)
        table.append(c)
    return table


TABLE = _byte_table()


def _word_tables() -> tuple[np.ndarray, np.ndarray]:
    """Feeding a 32-bit word in one step: the register after 4 zero bytes from v is
    LOW[v & 0xFFFF] ^ HIGH[v >> 16] (two 256 KB tables, built byte-wise with numpy)."""
    v = np.arange(1 << 16, dtype=np.uint32)
    table = np.array(TABLE, dtype=np.uint32)
    out = []
    for start in (v, v << 16):
        reg = start
        for _ in range(4):
            reg = table[reg & 0xFF] ^ (reg >> 8)
        out.append(reg)
    return out[0], out[1]


LOW, HIGH = _word_tables()
_WORD_LISTS = (LOW.tolist(), HIGH.tolist())
LANES = 8192  # lanes of a large buffer; below SMALL bytes the plain loop is quicker
SMALL = 1 << 16
COLUMNS = 512  # word columns transposed at a time (bounded extra memory: COLUMNS x LANES x 4 bytes)


def crc32c(data: bytes | memoryview | np.ndarray) -> int:
    """The CRC-32C of `data` (the standard one: crc32c(b'123456789') == 0xE3069283)."""
    buf = np.frombuffer(data, dtype=np.uint8) if not isinstance(data, np.ndarray) else data.reshape(-1).view(np.uint8)
    return _register(0xFFFFFFFF, buf) ^ 0xFFFFFFFF


def unmask(masked: int) -> int:
    """The CRC a masked CRC stands for (LevelDB's Mask: rotate right by 15, add a constant)."""
    rot = (masked - MASK_DELTA) & 0xFFFFFFFF
    return ((rot >> 17) | (rot << 15)) & 0xFFFFFFFF


def _scalar(crc: int, buf: np.ndarray) -> int:
    """A word a step (the two word tables, as Python lists), the last 0-3 bytes a byte a step: a small
    block (an index holds thousands of 4 KB ones) at about 4x the speed of a byte a step."""
    words = buf.size // 4
    low, high = _WORD_LISTS
    for word in buf[:4 * words].view("<u4").tolist():
        x = crc ^ word
        crc = low[x & 0xFFFF] ^ high[x >> 16]
    for byte in buf[4 * words:].tobytes():
        crc = TABLE[(crc ^ byte) & 0xFF] ^ (crc >> 8)
    return crc


def _register(crc: int, buf: np.ndarray) -> int:
    """The register after feeding `buf` to a register holding `crc` (no pre- or post-inversion)."""
    if buf.size < SMALL:
        return _scalar(crc, buf)
    n = buf.size // LANES // 4 * 4  # bytes per lane, whole 32-bit words
    lanes = np.zeros(LANES, dtype=np.uint32)
    grid = np.ascontiguousarray(buf[: n * LANES]).view("<u4").reshape(LANES, n // 4)
    for start in range(0, n // 4, COLUMNS):
        for column in grid[:, start:start + COLUMNS].T.copy():  # (columns, LANES): one word of every lane
            x = lanes ^ column
            lanes = LOW[x & 0xFFFF] ^ HIGH[x >> 16]
    shift = _shift_tables(n)
    for lane in lanes.tolist():
        crc = shift[0][crc & 0xFF] ^ shift[1][(crc >> 8) & 0xFF] ^ shift[2][(crc >> 16) & 0xFF] ^ shift[3][crc >> 24] ^ lane
    return _scalar(crc, buf[n * LANES:])


def _apply(matrix: list[int], vector: int) -> int:
    out, bit = 0, 0
    while vector:
        if vector & 1:
            out ^= matrix[bit]
        vector >>= 1
        bit += 1
    return out


def _shift_tables(n: int) -> list[list[int]]:
    """Four 256-entry tables of the linear map 'feed n zero bytes', one per byte of the register."""
    one_byte = [_scalar(1 << j, np.zeros(1, dtype=np.uint8)) for j in range(32)]  # column j: image of bit j
    result = [1 << j for j in range(32)]  # identity
    power = one_byte
    while n:
        if n & 1:
            result = [_apply(power, c) for c in result]
        power = [_apply(power, c) for c in power]
        n >>= 1
    tables = []
    for k in range(4):
        table = [0] * 256
        for b in range(1, 256):
            low = b & -b
            table[b] = table[b ^ low] ^ result[8 * k + low.bit_length() - 1]
        tables.append(table)
    return tables
