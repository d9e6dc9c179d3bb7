"""A corpus (--corpus) and an analysis's texts (--file) are read a line at a time and only as
far as the work needs: memory is bounded by what is kept, never by the file. Before, both were
read whole (about 2.3 times the file: a 4 GB sparse corpus was a MemoryError traceback, a
3 GB --file took `attention` to 6.8 GB)."""

import io
import json
import tracemalloc
from argparse import Namespace
from pathlib import Path

import pytest

from albert_lab.data import corpus as corpus_module
from albert_lab.data.corpus import MAX_DOC_CHARS, content_hash, load_builtin, load_file, make_corpus
from albert_lab.data.textfile import text_blocks, text_lines
from albert_lab.errors import AlbertLabError, DataError

SPARSE = 48 << 20  # bytes of a sparse file (NULs on read, no disk): a read-it-whole reader holds 2-3 times this


def _sparse(path: Path, size: int = SPARSE, head: bytes = b"") -> Path:
    with open(path, "wb") as handle:
        handle.write(head)
        handle.truncate(size)
    return path


def _peak(work) -> tuple[object, int]:
    """What `work()` returns, and the most memory Python held while it ran (bytes above the start)."""
    tracemalloc.start()
    try:
        result = work()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def test_a_huge_corpus_file_with_no_line_break_is_one_cut_document_in_bounded_memory(tmp_path):
    corpus, peak = _peak(lambda: load_file(_sparse(tmp_path / "sparse.txt", head=b"A first sentence. ")))
    (doc,) = corpus.train + corpus.heldout
    assert doc.segments == ("A first sentence. " + "\0" * (MAX_DOC_CHARS - 18),)
    assert peak < 12 << 20, f"{peak / 2**20:.0f} MiB held for a {SPARSE >> 20} MiB file"


def test_a_huge_jsonl_line_is_skipped_in_bounded_memory(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_bytes(b'{"text": "Kept. Two sentences."}\n')
    with open(path, "ab") as handle:
        handle.write(b'{"text": "')
        handle.truncate(SPARSE)  # a line of NULs to the end
    corpus, peak = _peak(lambda: load_file(path))
    assert [d.segments for d in corpus.train + corpus.heldout] == [("Kept.", "Two sentences.")]
    assert corpus.skipped == 1 and "line 2: longer than 8 M characters; skipped" in corpus.problems[0]
    assert peak < 40 << 20, f"{peak / 2**20:.0f} MiB held for a {SPARSE >> 20} MiB file"


def test_a_file_of_many_bad_lines_lists_the_first_and_counts_them_all(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_module, "MAX_PROBLEMS", 5)
    path = tmp_path / "c.jsonl"
    path.write_text("nope\n" * 3000 + '{"text": "One. Two."}\n')
    corpus = load_file(path)
    assert len(corpus.problems) == 5 and corpus.skipped == 3000
    assert "3,000 lines skipped (c.jsonl: line 1: not valid JSON" in corpus.describe()
    path.write_text("nope\n" * 3000)
    with pytest.raises(DataError, match=r"no document could be read; 3,000 lines skipped, the first line 1: not valid JSON"):
        load_file(path)


def test_a_corpus_file_gives_at_most_its_limit_of_text(tmp_path, monkeypatch):
    monkeypatch.setattr(corpus_module, "MAX_CORPUS_CHARS", 1000)
    path = tmp_path / "c.txt"
    path.write_text("\n\n".join(f"Document {i} has a sentence. And another one." for i in range(40)))
    with pytest.raises(DataError, match=r"c.txt: more than 0 M characters of text, the most a corpus file may give"):
        load_file(path)
    path.write_text("\n\n".join(f"Document {i} has a sentence. And another one." for i in range(10)))
    assert len(load_file(path).train) + len(load_file(path).heldout) == 10


def test_reading_a_line_at_a_time_reads_what_reading_whole_did(tmp_path):
    """Documents, titles and the fingerprint (a cache key) are those of the whole-file reader."""
    text = ("\ufeffFirst doc. It has two sentences.\r\n\r\n  \r\nSecond doc here.\rAlso two.\n\n\n"
            "Third, with a line\nbreak inside. Done.  \n")
    path = tmp_path / "c.txt"
    path.write_bytes(text.encode())
    corpus = load_file(path)
    docs = sorted(corpus.train + corpus.heldout, key=lambda d: d.title)
    assert [(d.title, d.segments) for d in docs] == [
        ("c.txt #1", ("First doc.", "It has two sentences.")),
        ("c.txt #2", ("Second doc here.", "Also two.")),
        ("c.txt #3", ("Third, with a line break inside.", "Done."))]
    wiki = load_builtin(200)
    whole = list(wiki.train + wiki.heldout)
    assert make_corpus("w", whole).fingerprint == content_hash(json.dumps([(d.title, d.segments) for d in whole]))


def test_lines_and_blocks_are_cut_and_the_rest_read_past():
    raw = io.BytesIO(b"ab\r\ncd\re\n" + b"z" * 30 + b"\nq")
    assert list(text_lines(raw, "n", 10)) == [(1, "ab", False), (2, "cd", False), (3, "e", False),
                                             (4, "z" * 10, True), (5, "q", False)]
    lines = [(1, "one", False), (2, " ", False), (3, "two", False), (4, "three", False), (5, "", False), (6, "x" * 9, True)]
    assert list(text_blocks(lines, 6)) == [(1, "one"), (3, "two\nth"), (6, "xxxxxx")]


def test_the_first_byte_that_is_not_utf8_is_named_in_a_long_file():
    data = "é line\n".encode() * 300_000 + b"\xff"  # past the text reader's buffers and the re-scan's pieces
    with pytest.raises(DataError, match=r"not UTF-8 text \(byte 0xff at line 300001, offset 2400000\)"):
        list(text_lines(io.BytesIO(data), "c.txt", 100))


def _texts(path: Path) -> list[str]:
    from albert_lab.cli.inputs import input_texts

    return input_texts(Namespace(file=path, text=None))


def test_file_texts_are_read_only_as_far_as_an_analysis_reads(tmp_path):
    texts, peak = _peak(lambda: _texts(_sparse(tmp_path / "sparse.txt", head=b"Words first.")))
    assert len(texts) == 1 and len(texts[0]) == MAX_DOC_CHARS and texts[0].startswith("Words first.")
    assert peak < 12 << 20, f"{peak / 2**20:.0f} MiB held for a {SPARSE >> 20} MiB file"
    many = tmp_path / "many.txt"
    many.write_text("\n\n".join(f"Paragraph {i}." for i in range(300)) + "\n")
    with pytest.raises(AlbertLabError, match=r"many.txt: more than 256 texts .* an analysis reads at most 256 at once"):
        _texts(many)
    many.write_text("One.\n \nTwo.\n\n\nThree\nlines.\n")
    assert _texts(many) == ["One.", "Two.", "Three\nlines."]

