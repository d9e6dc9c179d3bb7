"""The one decoder of a user's text files: bytes to text (UTF-8, any line ending), JSON
values (bounded nesting and numbers, and no lone surrogates) and JSONL lines. Every
reader of a corpus, a pairs file or a checkpoint's JSON goes through these, so a
file's problem is reported the same way everywhere: a DataError naming the file and
the line, or a problem for the caller to report per line.

A lone surrogate ("\\ud800" escaped in JSON) is valid JSON but no character: Python
reads it into a str that cannot be encoded, and the first tokenizer or write of it
fails far from the file (UnicodeEncodeError); here it is the file's problem."""

from __future__ import annotations

import codecs
import io
import json
import os
import re
import stat
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from albert_lab.errors import DataError

MAX_UPLOAD_MB = 5  # one limit for a user's file, browser and command line alike, in decimal megabytes as
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1_000_000  # the browser's uploader counts them (it refuses 5,000,001 bytes)
MAX_PAIR_ROWS = 5000  # rows of a pairs file that are scored; reading stops after them
READ_BYTES = 1 << 20  # what a streaming reader takes from a file at once

_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")  # \ud800-\udfff; a valid pair also matches, then is checked
_SURROGATE = re.compile("[\ud800-\udfff]")


def decode_utf8(data: bytes, name: str) -> str:
    """UTF-8 text (a BOM is dropped) with every line ending as \\n: files saved with CR-only
    (classic Mac) or mixed line endings read like any other."""
    try:
        text = data.decode("utf-8").removeprefix("\ufeff")  # not utf-8-sig: its error offsets skip the BOM
    except UnicodeDecodeError as err:
        line = data[: err.start].count(b"\n") + 1
        raise DataError(f"{name}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}, offset {err.start}); "
                        "save the file as UTF-8") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def check_size(size: int, name: str, limit: int = MAX_UPLOAD_BYTES) -> None:
    if size > limit:
        raise DataError(f"{name} is {size:,} bytes; the limit is {limit:,} ({limit / 1e6:g} MB): split the file or keep its "
                        "first rows")


@contextmanager
def open_user_file(path: Path, limit: int | None = MAX_UPLOAD_BYTES, give: str = "a file") -> Iterator[BinaryIO]:
    """A regular file of at most `limit` bytes (None: any size), open for reading; DataError
    for a folder, a FIFO or device (whose read could block for ever or never end), a missing
    or unreadable file, or one too big, each saying what to `give` instead."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)  # O_NONBLOCK: opening a FIFO never waits for a writer
    except FileNotFoundError:
        raise DataError(f"{path}: no such file") from None
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            kind = "a folder" if stat.S_ISDIR(info.st_mode) else "not a regular file (a device or a pipe)"
            raise DataError(f"{path}: {kind}; give {give}")
        if limit is not None:
            check_size(info.st_size, str(path), limit)
        handle = os.fdopen(os.dup(fd), "rb")
    except OSError as err:
        raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None
    finally:
        os.close(fd)
    with handle:
        try:
            yield handle
        except OSError as err:  # an I/O error while the caller reads
            raise DataError(f"{path}: cannot be read ({err.strerror or err})") from None


def read_user_file(path: Path, limit: int | None = MAX_UPLOAD_BYTES, give: str = "a file") -> bytes:
    """The bytes of a regular file of at most `limit` bytes (see open_user_file)."""
    with open_user_file(path, limit, give) as handle:
        data = handle.read() if limit is None else handle.read(limit + 1)
    if limit is not None:
        check_size(len(data), str(path), limit)  # it grew while read
    return data


def text_lines(raw: BinaryIO, name: str, max_chars: int) -> Iterator[tuple[int, str, bool]]:
    """(line number, line, cut) of each line of a UTF-8 file (a BOM dropped, any line ending),
    read a piece at a time: a line is at most `max_chars` characters, the rest of a longer one
    is read past and dropped (cut is True), so memory is bounded by `max_chars`, never by the
    file (a 4 GB file with no line break is one cut line). DataError as decode_utf8's where
    the file is not UTF-8. Lines end at \n, \r\n or \r only: U+2028, U+2029 and U+0085 are
    legal inside a JSON string."""
    if raw.read(3) != codecs.BOM_UTF8:  # skipped here: the utf-8-sig decoder reads a file of b"\xef" as ""
        raw.seek(0)
    stream = io.TextIOWrapper(raw, encoding="utf-8", newline=None)
    number = 0
    try:
        while line := stream.readline(max_chars + 1):
            number += 1
            cut = not line.endswith("\n") and len(line) > max_chars
            if cut:
                line = line[:max_chars]
                while (rest := stream.readline(READ_BYTES)) and not rest.endswith("\n"):
                    pass
            yield number, line.removesuffix("\n"), cut
    except UnicodeDecodeError:
        raise _utf8_error(raw, name) from None
    finally:
        if not raw.closed:  # the caller closes the file (first, where it stopped reading early)
            stream.detach()


def _utf8_error(raw: BinaryIO, name: str) -> DataError:
    """decode_utf8's message for the first byte of `raw` that is not UTF-8 (found again from
    the start, a piece at a time: the text decoder does not say where)."""
    raw.seek(0)
    decoder, offset, lines = codecs.getincrementaldecoder("utf-8")(), 0, 0
    while True:
        chunk = raw.read(READ_BYTES)
        pending = decoder.getstate()[0]
        try:
            decoder.decode(chunk, final=not chunk)
        except UnicodeDecodeError as err:
            data = pending + chunk
            line = lines + data[: err.start].count(b"\n") + 1
            return DataError(f"{name}: not UTF-8 text (byte 0x{data[err.start]:02x} at line {line}, offset "
                             f"{offset - len(pending) + err.start}); save the file as UTF-8")
        if not chunk:
            return DataError(f"{name}: not UTF-8 text; save the file as UTF-8")
        offset, lines = offset + len(chunk), lines + chunk.count(b"\n")


def text_blocks(lines: Iterable[tuple[int, str, bool]], max_chars: int) -> Iterator[tuple[int, str]]:
    """(first line number, text) of each block of lines between blank (whitespace-only)
    lines, cut to `max_chars` characters: the rest of a longer block is read past, not kept."""
    start, parts, size = 0, [], 0
    for number, line, cut in lines:
        if not line.strip() and not cut:
            if parts:
                yield start, "".join(parts)
            parts, size = [], 0
            continue
        if not parts:
            start = number
        if size < max_chars:
            parts.append(("\n" + line if parts else line)[: max_chars - size])
            size += len(parts[-1])
    if parts:
        yield start, "".join(parts)


def lone_surrogate(value: object) -> str | None:
    """The first lone surrogate in the strings (keys too) of a JSON value, written as its
    escape (e.g. '\\\\ud800'), or None."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, str):
            if match := _SURROGATE.search(item):
                return f"\\u{ord(match[0]):04x}"
        elif isinstance(item, dict):
            stack.extend(item.keys())
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
    return None


def json_problem(text: str) -> tuple[object, str | None]:
    """(value, None) for JSON text, or (None, what is wrong) in words."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as err:
        return None, f"not valid JSON ({err.msg})"
    except ValueError:  # an integer of more than 4,300 digits
        return None, "a number too long to read"
    except RecursionError:
        return None, "nested too deeply"
    if _SURROGATE_ESCAPE.search(text) and (escape := lone_surrogate(value)):
        return None, f"not valid Unicode (a lone surrogate, {escape}: an escape of no character)"
    return value, None


def read_json(data: bytes, name: str) -> object:
    """A JSON file's value; DataError naming the file and the problem."""
    value, problem = json_problem(decode_utf8(data, name))
    if problem:
        raise DataError(f"{name}: {problem}")
    return value


def jsonl_records(text: str) -> Iterator[tuple[int, dict | None, str | None]]:
    """(line number, object, problem) for each non-blank line of JSONL text; exactly one
    of object and problem is None. Callers decide whether a problem is fatal. Lines end
    at \\n only: U+2028, U+2029 and U+0085 are legal inside a JSON string."""
    for number, line in enumerate(io.StringIO(text, newline="\n"), start=1):  # lazily: a reader may stop early
        if not line.strip():
            continue
        record, problem = json_problem(line)
        if problem:
            yield number, None, problem
        else:
            yield (number, record, None) if isinstance(record, dict) else (number, None, "not a JSON object")
