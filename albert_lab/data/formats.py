"""Readers for the file formats the long-document sources ship in: a Debian package
(an `ar` archive around a tar), an R lazy-load database (Austen's novels), a SWORD
zText Bible module, and the paragraphs of an HTML page. Standard library only; each
reader refuses what it does not understand with a DataError instead of guessing."""

from __future__ import annotations

import gzip
import io
import re
import struct
import tarfile
import zlib
from html.parser import HTMLParser

from albert_lab.errors import DataError


# ---- Debian packages ------------------------------------------------------------------------
def deb_members(data: bytes, name: str = "package.deb") -> dict[str, bytes]:
    """Regular files of a .deb's data.tar.* by path (without the leading './')."""
    if not data.startswith(b"!<arch>\n"):
        raise DataError(f"{name}: not a Debian package (no ar header)")
    offset, payload = 8, None
    while offset + 60 <= len(data):
        header = data[offset:offset + 60]
        member = header[:16].decode("ascii", "replace").strip().rstrip("/")
        size = int(header[48:58].decode("ascii").strip() or 0)
        body = data[offset + 60:offset + 60 + size]
        if member.startswith("data.tar"):
            payload = body
            break
        offset += 60 + size + (size & 1)  # members are 2-byte aligned
    if payload is None:
        raise DataError(f"{name}: no data.tar member")
    return tar_members(payload, name)


def tar_members(data: bytes, name: str = "archive.tar") -> dict[str, bytes]:
    """Regular files of a (compressed) tar archive by path."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            return {m.name.removeprefix("./"): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}
    except (tarfile.TarError, EOFError, OSError) as err:
        raise DataError(f"{name}: not a readable tar archive ({err})") from None


# ---- R lazy-load databases (.rdx index + .rdb data) ---------------------------------------------
_NIL, _EMPTY_ENV, _REF, _SYM, _LIST, _CHAR = 254, 242, 255, 1, 2, 9
_VECTORS = {10: "i", 13: "i", 14: "d", 16: None, 19: None}  # logical, integer, double, character, list


class _RReader:
    """R's XDR serialisation (format 2 and 3), the subset data packages use: vectors,
    strings, pair lists (attributes) and symbols."""

    def __init__(self, data: bytes):
        if data[:2] != b"X\n":
            raise DataError("not an R XDR serialisation")
        self.data, self.pos, self.symbols = data, 2, []
        version = self.int()
        self.pos += 8  # writer and minimal reader versions
        if version == 3:
            length = self.int()  # native encoding name
            self.pos += length

    def int(self) -> int:
        (value,) = struct.unpack_from(">i", self.data, self.pos)
        self.pos += 4
        return value

    def item(self) -> object:
        flags = self.int()
        kind, has_attr, has_tag = flags & 0xFF, flags & (1 << 9), flags & (1 << 10)
        if kind in (_NIL, _EMPTY_ENV):
            return None
        if kind == _REF:
            return self.symbols[(flags >> 8) - 1]
        if kind == _SYM:
            self.symbols.append(self.item())
            return self.symbols[-1]
        if kind == _CHAR:
            n = self.int()
            if n < 0:
                return None  # NA_character_
            self.pos += n
            return self.data[self.pos - n:self.pos].decode("utf-8", "replace")
        if kind == _LIST:
            if has_attr:
                self.item()
            tag = self.item() if has_tag else None
            head, tail = self.item(), self.item()
            return [(tag, head), *(tail or [])]
        if kind in _VECTORS:
            n, code = self.int(), _VECTORS[kind]
            if code is None:
                values: object = [self.item() for _ in range(n)]
            else:
                values = list(struct.unpack_from(f">{n}{code}", self.data, self.pos))
                self.pos += n * struct.calcsize(code)
            if has_attr:
                attrs = dict(self.item())
                if "names" in attrs and isinstance(values, list):
                    return dict(zip(attrs["names"], values))
            return values
        raise DataError(f"unsupported R object type {kind} at byte {self.pos}")


def r_unserialize(data: bytes) -> object:
    return _RReader(data).item()


def r_lazyload(rdx: bytes, rdb: bytes) -> dict[str, object]:
    """Every object of an R lazy-load database, by name (zlib-compressed entries)."""
    index = r_unserialize(gzip.decompress(rdx) if rdx[:2] == b"\x1f\x8b" else zlib.decompress(rdx[4:]))
    if not isinstance(index, dict) or index.get("compressed") not in ([1], [True]):
        raise DataError("unsupported R lazy-load database (only zlib-compressed ones are read)")
    out = {}
    for name, (offset, length) in index["variables"].items():
        entry = rdb[offset:offset + length]
        out[name] = r_unserialize(zlib.decompress(entry[4:]))  # 4 bytes: uncompressed length
    return out


# ---- SWORD zText modules ---------------------------------------------------------------------------
_OSIS_NOTE = re.compile(r"<note\b.*?</note>|<title\b.*?</title>", re.S)
_TAG = re.compile(r"<[^>]+>")
_INLINE_TAG = re.compile(r"</?(?:w|q|transChange|seg|hi|foreign|divineName|rdg|name|catchWord)\b[^>]*>")
_CHAPTER = re.compile(r'<chapter\b[^>]*\bsID="([^"]+)"[^>]*/>')


def sword_chapters(files: dict[str, bytes]) -> list[tuple[str, str]]:
    """(chapter id, plain text) of every chapter of a zText module with book-sized
    blocks and OSIS markup (e.g. the World English Bible): blocks are zlib streams
    listed in *.bzs (offset, size, uncompressed size; 12 bytes each); chapters start
    at OSIS `<chapter sID=...>` milestones; notes and headings are dropped."""
    chapters = []
    for testament in ("ot", "nt"):
        index = files.get(f"{testament}.bzs")
        blob = files.get(f"{testament}.bzz")
        if index is None or blob is None:
            raise DataError(f"SWORD module without {testament}.bzs / {testament}.bzz")
        for i in range(len(index) // 12):
            offset, size, _ = struct.unpack_from("<III", index, 12 * i)
            text = zlib.decompress(blob[offset:offset + size]).decode("utf-8", "replace")
            parts = _CHAPTER.split(_OSIS_NOTE.sub(" ", text))
            for osis_id, body in zip(parts[1::2], parts[2::2]):
                chapters.append((osis_id, " ".join(_TAG.sub(" ", _INLINE_TAG.sub("", body)).split())))
    return chapters


# ---- HTML -----------------------------------------------------------------------------------------------
class _Paragraphs(HTMLParser):
    def __init__(self, inline_code: bool, para_class: str | None) -> None:
        super().__init__(convert_charrefs=True)
        self.skip = {"script", "style", "pre", "head"} | (set() if inline_code else {"code"})
        self.para_class = para_class
        self.paragraphs: list[str] = []
        self.current: list[str] | None = None
        self.skipping = 0

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.skip:
            self.skipping += 1
        elif tag == "p" or (tag == "div" and self.para_class and self.para_class in (dict(attrs).get("class") or "").split()):
            self._close()
            self.current = []

    def handle_endtag(self, tag: str) -> None:
        if tag in self.skip:
            self.skipping = max(0, self.skipping - 1)
        elif tag in ("p", "div", "td", "body"):
            self._close()

    def handle_data(self, data: str) -> None:
        if self.current is not None and not self.skipping:
            self.current.append(data)

    def _close(self) -> None:
        if self.current is not None:
            self.paragraphs.append(" ".join("".join(self.current).split()))
            self.current = None


def html_paragraphs(data: bytes, inline_code: bool = False, para_class: str | None = None) -> list[str]:
    """The text of each <p> element (and each <div class=PARA_CLASS>), outside scripts,
    styles and preformatted blocks; inline <code> is dropped unless `inline_code` (the
    software manuals' sentences name their functions and options in it)."""
    parser = _Paragraphs(inline_code, para_class)
    parser.feed(data.decode("utf-8", "replace"))
    parser.close()
    parser._close()
    return [p for p in parser.paragraphs if p]


def html_title(data: bytes) -> str:
    match = re.search(rb"<title>(.*?)</title>", data, re.S | re.I)
    return " ".join(match[1].decode("utf-8", "replace").split()) if match else ""
