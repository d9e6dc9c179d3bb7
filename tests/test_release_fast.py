"""The release tokenizers' fast path (albert_lab/release_fast.py) gives the ids of their Python path
(Google's tokenization, as transformers 4.46 ported it): on the 2,004 strings of
tests/fixtures/tokenization, on hostile text, and character by character for its whole-string steps."""

import random
import unicodedata

import pytest
from test_checkpoint_release_tokens import IDS, STRINGS, TOKENIZERS

from albert_lab import release_fast
from albert_lab.release_fast import CharMap, lower_chars, python_ids
from albert_lab.tokenizer import release_tokenizer

EVERY_CHARACTER = "".join(chr(c) for c in range(0x110000) if not 0xD800 <= c < 0xE000)
HOSTILE = [
    ",".join(map(str, range(400))), "1,2,3,4,5,6,7,8,9,10," * 40, "$3,500,000 and 1,000,000.5", "١,٢,٣ ²,³ ⅷ,2 3，500",
    "\ufdfa" * 700, "x\ufdfa,1 \ufdfa\ufdfa", "한국어 문장입니다. " * 60, "\u1112\u1161\u11ab\u1100\u1173\u11af",
    "e" + "\u0301" * 60, "Z\u0351\u0358\u0310a\u035cl\u0337g\u0336o\u0489", "\u0301abc \u0345\u0323 \u0f71\u0f72\u0f80",
    "a" * 3000, "".join(random.Random(0).choice("qwertyuiopasdfghjklzxcvbnm") for _ in range(150)) + " end",
    "x" * 99 + " " + "y" * 100 + " " + "z" * 101, "tab\there\nnew\rline\x00nul\x01\x1f\x7f\x85del\u200b\u2028\u2029\ufeff\ufffd",
    "ΣΑΣ ΟΔΟΣ Σ aΣ Σa", "ab\U0001d6ba cd\U0001d6ba.", "``quoted'' \"x\" ''", "\U0001fae8 \U0001f970 emoji",
    "[MASK] x", "<unk> <UNK> <Unk>", "[cls] [CLS]", "[C\x00LS] [MA\u200bSK]", "a[SEP]b", "<p>[1]</p>",
    "北京是中国的首都。漢字 \U00020000", "مَرْحَبًا بِالْعَالَم ١٢٣", "हिन्दी क्षत्रिय", "ภาษาไทย", "İstanbul ǅ ﬁ Å K", "", " ", "\u3000",
]


def random_texts(n: int, seed: int = 0) -> list[str]:
    """Strings of code points drawn from every plane, assigned or not, with spaces and commas between."""
    rng = random.Random(seed)
    pool = [c for c in range(0x110000) if not 0xD800 <= c < 0xE000]
    return ["".join(rng.choice((" ", ",", "1", chr(rng.choice(pool)))) if rng.random() < 0.3 else chr(rng.choice(pool))
                    for _ in range(rng.randint(1, 80))) for _ in range(n)]


@pytest.fixture(scope="module", params=list(TOKENIZERS))
def release(request):
    return request.param, release_tokenizer(*TOKENIZERS[request.param])


def test_the_fast_path_gives_googles_ids_on_the_whole_fixture(release):
    name, tokenizer = release
    expected = [ids[1:-1] for ids in IDS["tokenizers"][name]["ids"]]  # without [CLS] and [SEP]
    assert len(STRINGS["strings"]) == 2004
    assert tokenizer.ids_of(STRINGS["strings"]) == expected == python_ids(tokenizer, STRINGS["strings"])
    assert tokenizer(STRINGS["strings"][:50], add_special_tokens=False)["input_ids"] == expected[:50]


def test_the_fast_path_equals_the_python_path_on_hostile_text(release):
    _, tokenizer = release
    texts = HOSTILE + random_texts(300)
    fast, slow = tokenizer.ids_of(texts), python_ids(tokenizer, texts)
    wrong = [(t[:40], f[:8], s[:8]) for t, f, s in zip(texts, fast, slow) if f != s]
    assert not wrong, f"{len(wrong)} texts differ, e.g. {wrong[:3]}"
    assert tokenizer.ids_of(texts[::-1]) == slow[::-1]  # what a batch holds, and the caches, change nothing


def special_texts(tokenizer, n: int, seed: int = 1) -> list[str]:
    """Texts made of the fixture's strings, hostile ones and the special tokens as typed or in other cases,
    with and without spaces around them: where the Python path cuts a text before its other steps."""
    rng = random.Random(seed)
    tokens = [*tokenizer.all_special_tokens, "<UNK>", "[mask]", "[Mask]", "[CLS ]", "[SEP][SEP]", "<unk><unk>", "[MA\x00SK]"]
    pool = [*STRINGS["strings"][:300], *HOSTILE, " ", "  ", "\n", "x", "Σ", "1,"]
    return ["".join(rng.choice(tokens) if rng.random() < 0.4 else rng.choice(pool) for _ in range(rng.randint(1, 12)))
            for _ in range(n)]


def test_texts_holding_special_tokens_equal_the_python_path(release):
    """Texts holding special tokens took the Python path whole: 5 MB of '[MASK] [CLS] <unk> [SEP] ' took 21 s.
    They are cut on the tokens as the Python path cuts them now, the rest by the fast path."""
    _, tokenizer = release
    texts = [*special_texts(tokenizer, 400), "[MASK] [CLS] <unk> [SEP] " * 50, " [MASK]x", "x [MASK] ", "[SEP]"]
    fast, slow = tokenizer.ids_of(texts), python_ids(tokenizer, texts)
    wrong = [(t[:60], f[:8], s[:8]) for t, f, s in zip(texts, fast, slow) if f != s]
    assert not wrong, f"{len(wrong)} texts differ, e.g. {wrong[:3]}"


def test_a_text_of_special_tokens_is_not_tokenized_by_the_python_path(release, monkeypatch):
    _, tokenizer = release
    text = "[MASK] [CLS] <unk> [SEP] " * 400
    expected = python_ids(tokenizer, [text])
    monkeypatch.setattr(type(tokenizer), "tokenize", lambda *args, **kwargs: pytest.fail("the Python path"))
    assert tokenizer.ids_of([text]) == expected


def test_tables_that_forget_give_the_same_ids(monkeypatch):
    """The per-tokenizer tables (characters, words, comma pieces) forget all at CACHE_ENTRIES: memory stays small."""
    monkeypatch.setattr(release_fast, "CACHE_ENTRIES", 3)
    texts = HOSTILE + random_texts(50, seed=2)
    for name in ("albert_mixed", "bert_mixed_uncased"):
        tokenizer = release_tokenizer(*TOKENIZERS[name])
        assert tokenizer.ids_of(texts) == python_ids(tokenizer, texts)
        state = tokenizer._albert_lab_fast
        tables = [t for t in state.values() if isinstance(t, CharMap)] + [state[k] for k in ("split", "words") if k in state]
        assert len(tables) in (2, 4) and all(len(table) <= 3 for table in tables)


def test_an_unknown_piece_spelling_a_control_piece_takes_its_id_as_in_the_python_path():
    """The tiny release's SentencePiece has no piece for 'C', 'L', 'S': cased, NFKD makes '［CLS］' the unknown
    piece '[CLS]', which the Python path looks up as the [CLS] piece (2), not <unk> (1)."""
    file, family, _ = TOKENIZERS["albert_tiny"]
    tokenizer = release_tokenizer(file, family, False)
    texts = ["［CLS］ x", "a［SEP］", "［MASK］"]
    assert python_ids(tokenizer, texts) == [[5, 2, 5, 1], [23, 3], [5, 4]] == tokenizer.ids_of(texts)


def test_a_lone_surrogate_fails_as_in_the_python_path():
    tokenizer = release_tokenizer(*TOKENIZERS["albert_mixed"])
    with pytest.raises(RuntimeError):
        python_ids(tokenizer, ["a\ud800b"])
    with pytest.raises(RuntimeError):
        tokenizer.ids_of(["fine", "a\ud800b"])
    bert = release_tokenizer(*TOKENIZERS["bert_mixed_uncased"])  # a control character to BERT: dropped
    assert bert.ids_of(["a\ud800b"]) == python_ids(bert, ["a\ud800b"])


def test_lower_chars_is_lower_case_one_character_at_a_time():
    """LowerFirst's regex lowers each character alone; str.lower looks at the context of a capital sigma only."""
    text = EVERY_CHARACTER + "aΣ bΣc Σ"
    assert lower_chars(text) == "".join(c.lower() for c in text)


def test_nfkd_without_marks_is_a_map_of_each_character():
    """NFKD decomposes each character alone and reorders only combining marks, which ALBERT then drops."""
    unmarked = CharMap(lambda c: "".join(d for d in unicodedata.normalize("NFKD", c) if not unicodedata.combining(d)))
    assigned = "".join(c for c in EVERY_CHARACTER if unicodedata.category(c) not in ("Cn", "Co"))  # the rest is left as it is
    text = assigned + "".join(random.Random(1).sample(assigned[:0x3000], 0x3000))  # marks out of their canonical order
    expected = "".join(c for c in unicodedata.normalize("NFKD", text) if not unicodedata.combining(c))
    assert unmarked.map(text) == expected
