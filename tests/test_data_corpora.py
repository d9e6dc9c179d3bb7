"""Training corpora: the built-in one, a user's .txt and .jsonl files, sentence splitting in any script."""

import json
import os
import random

import pytest

from albert_lab.data.corpus import load_builtin, load_file, make_corpus, parse_documents, split_sentences
from albert_lab.errors import DataError


def test_sentence_splitting_keeps_abbreviations_and_initials():
    text = 'J. R. R. Tolkien wrote e.g. The Hobbit. Mr. Smith paid $5.3 million! Why? "Yes." Then (in 1990.) It ended.'
    assert split_sentences(text) == ["J. R. R. Tolkien wrote e.g. The Hobbit.", "Mr. Smith paid $5.3 million!", "Why?",
                                     '"Yes."', "Then (in 1990.)", "It ended."]


@pytest.mark.parametrize("text, sentences", [
    ("Привет, мир. Как дела? Всё хорошо.", ["Привет, мир.", "Как дела?", "Всё хорошо."]),
    ("Élan vital. Über alles.", ["Élan vital.", "Über alles."]),
    ("مرحبا بالعالم. كيف حالك؟ أنا بخير.", ["مرحبا بالعالم.", "كيف حالك؟", "أنا بخير."]),
    ("你好。今天天气很好！我们去公园吧？", ["你好。", "今天天气很好！", "我们去公园吧？"]),
    ("Γειά σου κόσμε. Τι κάνεις σήμερα.", ["Γειά σου κόσμε.", "Τι κάνεις σήμερα."]),
    ("नमस्ते दुनिया। आप कैसे हैं? मैं ठीक हूँ।", ["नमस्ते दुनिया।", "आप कैसे हैं?", "मैं ठीक हूँ।"]),
    ("«Oui.» Non. Ça va.", ["«Oui.»", "Non.", "Ça va."]),
    # what held before still holds: initials, abbreviations, lower case after a full stop
    ("J. R. R. Tolkien wrote it. e.g. this one. Dr. Who came.", ["J. R. R. Tolkien wrote it. e.g. this one.", "Dr. Who came."]),
])
def test_sentences_split_in_any_script(text, sentences):
    assert split_sentences(text) == sentences


def test_a_non_latin_corpus_has_documents_of_several_segments():
    text = "\n\n".join(["Москва — столица России. Это большой город.", "東京は日本の首都です。人口が多いです。",
                        "القاهرة عاصمة مصر. إنها مدينة كبيرة."])
    assert [len(d.segments) for d in parse_documents(text.encode(), "c.txt")] == [2, 2, 2]


def test_builtin_corpus_and_fixed_heldout():
    corpus = load_builtin()
    assert len(corpus.train) + len(corpus.heldout) > 10_000
    assert 0.04 < len(corpus.heldout) / (len(corpus.train) + len(corpus.heldout)) < 0.06
    assert "CC BY-SA" in corpus.credit
    # The held-out set depends on the documents only, not on their order or the rest of the corpus.
    docs = list(corpus.train + corpus.heldout)
    reordered = make_corpus("x", docs[::-1])
    assert {d.title for d in reordered.heldout} == {d.title for d in corpus.heldout}


def test_user_files_txt_jsonl_and_bad_bytes():
    docs = parse_documents(b"First doc. It has two sentences.\n\nSecond doc here. Also two.\n", "c.txt")
    assert [len(d.segments) for d in docs] == [2, 2]
    jsonl = b'{"text": "One. Two."}\n\n{"text": "Three. Four.", "title": "t"}\n'
    assert [d.title for d in parse_documents(jsonl, "c.jsonl")] == ["c.jsonl #1", "t"]
    with pytest.raises(DataError, match=r"not UTF-8 text \(byte 0xff at line 2"):
        parse_documents(b"fine\n\xff bad", "c.txt")
    with pytest.raises(DataError, match="the first line 1: not valid JSON"):
        parse_documents(b"{nope", "c.jsonl")
    with pytest.raises(DataError, match="no string field 'text'"):
        parse_documents(b'{"body": "x"}', "c.jsonl")
    with pytest.raises(DataError, match="empty"):
        parse_documents(b"\n\n  \n", "c.txt")
    with pytest.raises(DataError, match="unsupported corpus file type"):
        parse_documents(b"x", "c.pdf")


@pytest.mark.parametrize("ending", ["\r", "\r\n", "\n"])
def test_txt_corpus_line_endings_separate_documents(ending):
    text = ending.join(["First doc. It has two sentences.", "", "Second doc. Also two here.", "", "Third. Yes."])
    docs = parse_documents(text.encode(), "c.txt")
    assert [d.segments for d in docs] == [("First doc.", "It has two sentences."), ("Second doc.", "Also two here."),
                                          ("Third.", "Yes.")]


def test_jsonl_corpus_deep_nesting_is_a_data_error():
    with pytest.raises(DataError, match=r"c\.jsonl: no document could be read; 1 line skipped, the first line 1: nested too deeply"):
        parse_documents(b'{"text": ' + b"[" * 100_000 + b"}\n", "c.jsonl")
    docs = parse_documents('{"text": "One.\u2028Two.", "title": ["x"]}\n'.encode(), "c.jsonl")
    assert docs[0].title == "c.jsonl #1"


def test_a_lone_surrogate_in_a_jsonl_corpus_is_the_line_reported(tmp_path):
    good = "".join(json.dumps({"text": f"Sentence one of {i}. Sentence two of {i}."}) + "\n" for i in range(3))
    path = tmp_path / "c.jsonl"
    path.write_text(good + '{"text": "Bad \\ud800 text. Second."}\n' + '{"body": "no text"}\n')
    corpus = load_file(path)
    assert len(corpus.train + corpus.heldout) == 3
    assert corpus.problems == ("c.jsonl: line 4: not valid Unicode (a lone surrogate, \\ud800: an escape of no character); "
                               "skipped", "c.jsonl: line 5: has no string field 'text'; skipped")
    assert "2 lines skipped" in corpus.describe()
    escaped_pair = parse_documents(b'{"text": "Smile \\ud83d\\ude00. Yes."}\n', "c.jsonl")  # a valid pair of escapes
    assert escaped_pair[0].segments == ("Smile \U0001f600.", "Yes.")
    with pytest.raises(DataError, match="no document could be read; 1 line skipped, the first line 1: not valid Unicode"):
        parse_documents(b'{"text": "\\udfff"}', "c.jsonl")


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs FIFOs")
def test_a_score_or_corpus_path_that_is_a_fifo_never_blocks(tmp_path):
    from albert_lab.data.textfile import read_user_file

    fifo = tmp_path / "p.csv"
    os.mkfifo(fifo)
    with pytest.raises(DataError, match="not a regular file"):
        read_user_file(fifo)
    with pytest.raises(DataError, match="a folder"):
        read_user_file(tmp_path)


def test_cjk_vocab_error_says_the_vocab_is_too_small(tmp_path):
    from albert_lab.tokenizer import train_tokenizer

    rng = random.Random(0)
    texts = ["".join(chr(rng.randrange(0x4E00, 0x4E00 + 3000)) for _ in range(30)) for _ in range(300)]
    with pytest.raises(DataError, match=r"vocab size 200 is smaller than the \d+ distinct characters this corpus needs"):
        train_tokenizer(texts, tmp_path / "tok", vocab_size=200)
