"""The release tokenizers' ids of many texts at once, equal to their Python path's.

`ReleaseAlbertTokenizer` and `ReleaseBertTokenizer` (tokenizer.py) run Google's tokenization in
Python one character, one piece and one word at a time: 4.9 MB of U+FDFA took 73 s, 4.35 MB of
plain text 56 s. Here the same steps run as whole-string operations (str.translate, str.lower,
unicodedata.normalize), SentencePiece encodes a batch in C++ and gives ids, and WordPiece splits
each distinct word once. They are equal because:
- LowerFirst lowers each character alone; str.lower differs from that only at a final capital
  sigma (the one context CPython's str.lower looks at), so Σ becomes σ first;
- ALBERT drops combining marks after NFKD, which decomposes each character alone and then only
  reorders the combining marks it drops: together a map of each character (`CharMap`);
- BERT's per-character rules (control, whitespace, CJK, punctuation, Mn) are the Python path's own
  functions, asked once per distinct character; NFC and NFD run on the whole text, as there;
- SentencePiece's ids are the ids the Python path looks its pieces up by, except where an unknown
  piece's text is itself a piece or an added token, or ends in a digit and a comma (`_unsure_unknowns`);
- WordPiece's greedy longest-match-first finds the same longest piece walking up from one
  character (`Prefixes`) as the Python path's walk down from the whole word;
- a text that holds a special token is cut where the Python path's `tokenize` cuts it (LowerFirst's
  lowering, then the split on added tokens, whose lstrip/rstrip strip the text beside them) by one
  regular expression, equal to its trie where no two added tokens overlap (`with_added_tokens`),
  and the text between the tokens takes the steps above; the Python path where they could overlap.
The `tokenizers` library's BERT pipeline is not used: its Unicode tables are older than Python's
(it drops U+1FAE8, an emoji of Unicode 15, as a control character; the Python path makes it [UNK]),
and its WordPiece walks down from the whole word (115 us for a random 52-letter word).
Tests check the ids against the Python path on the 2,004 strings of tests/fixtures/tokenization,
on hostile text, and the per-character equalities on every code point.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from transformers.tokenization_python import _is_control, _is_punctuation, _is_whitespace

CACHE_ENTRIES = 1 << 16  # characters, words or comma pieces remembered per table, then forgotten at once (a few MB)
ENCODE_CHARS = 1 << 20  # characters SentencePiece encodes in one call: its output as Python lists stays tens of MB


class CharMap(dict):
    """`rule` applied to each character of a text, as one str.translate (`map(text)`): a table that
    asks the rule about a character the first time it meets it."""

    def __init__(self, rule: Callable[[str], str]) -> None:
        super().__init__()
        self.rule = rule

    def __missing__(self, code: int) -> str | int:
        out = self.rule(chr(code))
        return _remember(self, code, code if out == chr(code) else out)

    def map(self, text: str) -> str:
        return text.translate(self)


def lower_chars(text: str) -> str:
    """Each character lower-cased alone (LowerFirst's regex), in one call."""
    return text.replace("\u03a3", "\u03c3").lower()


def python_ids(tokenizer: Any, texts: Sequence[str]) -> list[list[int]]:
    """The Python path: what `tokenizer(texts, add_special_tokens=False)["input_ids"]` gives."""
    return [tokenizer.convert_tokens_to_ids(tokenizer.tokenize(t)) for t in texts]


def with_added_tokens(tokenizer: Any, texts: Sequence[str], fast: Callable[[Any, Sequence[str], bool], list[list[int]]]
                      ) -> list[list[int]]:
    """Ids of texts that hold added tokens (the special tokens), as the Python path gives them: the text
    lower-cased outside the tokens (LowerFirst), cut on the tokens as PreTrainedTokenizer.tokenize cuts it
    (each token kept whole, its lstrip/rstrip stripping the text beside it), the text between them by
    `fast` (each distinct piece once; one its own checks still send to the Python path goes there whole,
    never cut again: it holds no added token). A regular expression finds the tokens as the Python path's trie
    does where no token overlaps another and none is single_word; else the Python path itself."""
    plan = _split_plan(tokenizer)
    if plan is None:
        return python_ids(tokenizer, texts)
    pattern, added = plan
    cut: list[list[str]] = []
    for text in texts:
        if tokenizer.do_lower_case:  # LowerFirst: each character alone, the tokens as they are
            text = "".join(p if i % 2 else lower_chars(p) for i, p in enumerate(pattern.split(text)))
        pieces = pattern.split(text)  # text, token, text, ..., text
        for i in range(1, len(pieces), 2):
            token = added[pieces[i]]
            if token.rstrip:
                pieces[i + 1] = pieces[i + 1].lstrip()
            if token.lstrip:
                pieces[i - 1] = pieces[i - 1].rstrip()
        cut.append(pieces)
    distinct = list(dict.fromkeys(p for pieces in cut for p in pieces[::2] if p))
    ids = dict(zip(distinct, fast(tokenizer, distinct, False)))
    token_ids = {token: tokenizer.convert_tokens_to_ids(token) for token in added}
    return [[i for n, p in enumerate(pieces) if p for i in (ids[p] if n % 2 == 0 else [token_ids[p]])] for pieces in cut]


def _split_plan(tokenizer: Any) -> tuple[Any, dict[str, Any]] | None:
    """(a pattern that splits a text on the added tokens, keeping them; token -> its AddedToken), or None
    where a regular expression could cut otherwise than the Python path's trie: tokens that overlap
    (one inside another, or one's end another's start), or a single_word token (merged with its neighbour)."""
    import re

    from transformers.tokenization_utils_base import AddedToken

    added = {t: tokenizer._added_tokens_decoder.get(tokenizer._added_tokens_encoder[t]) for t in tokenizer._added_tokens_encoder}
    added = {t: (a if isinstance(a, AddedToken) else AddedToken(t)) for t, a in added.items()}
    overlap = any(a != b and (a in b or any(b.startswith(a[k:]) for k in range(1, len(a)))) for a in added for b in added)
    if not added or overlap or any(a.single_word for a in added.values()):
        return None
    return re.compile("(" + "|".join(re.escape(t) for t in sorted(added, key=len, reverse=True)) + ")"), added


def _state(tokenizer: Any, make: Callable[[Any], dict]) -> dict:
    """What the fast path keeps per tokenizer (made at its first use)."""
    state = tokenizer.__dict__.get("_albert_lab_fast")
    if state is None:
        state = tokenizer.__dict__["_albert_lab_fast"] = {"special": tuple(tokenizer.all_special_tokens), **make(tokenizer)}
    return state


def _holds_special(state: dict, *texts: str) -> bool:
    return any(token in text for token in state["special"] for text in texts)


def _remember(cache: dict, key: Any, value: Any) -> Any:
    if len(cache) >= CACHE_ENTRIES:
        cache.clear()
    cache[key] = value
    return value


# ---- ALBERT: SentencePiece after ALBERT's preprocessing ----------------------------------------
def _nfkd_unmarked(c: str) -> str:
    return "".join(d for d in unicodedata.normalize("NFKD", c) if not unicodedata.combining(d))


def _albert_state(tokenizer: Any) -> dict:
    sp, added = tokenizer.sp_model, tokenizer.added_tokens_encoder
    pieces = {sp.IdToPiece(i): i for i in range(sp.get_piece_size())} | added
    return dict(pieces=pieces, comma={i for p, i in pieces.items() if tokenizer.comma_piece(p)}, split={},
                unmarked=CharMap(_nfkd_unmarked), unsure=_unsure_unknowns(tokenizer),
                ids=all(sp.PieceToId(token) == i for token, i in added.items()))  # else SentencePiece's ids are not the ids


def _unsure_unknowns(tokenizer: Any) -> tuple[str, ...]:
    """The texts an unknown piece's text may hold that make the Python path's lookup differ from <unk>:
    a piece the encoder never gives or an added token, looked up as itself, made only of characters with
    no piece of their own (an unknown piece's text is a run of those); a comma, when it has no piece (a
    piece ending in a digit and a comma is split again)."""
    sp = tokenizer.sp_model

    def own_piece(c: str) -> bool:
        i = sp.PieceToId(c)
        return i != sp.unk_id() and not (sp.IsControl(i) or sp.IsUnused(i) or sp.IsUnknown(i) or sp.IsByte(i))

    never = [sp.IdToPiece(i) for i in range(sp.get_piece_size())
             if sp.IsControl(i) or sp.IsUnused(i) or sp.IsUnknown(i) or sp.IsByte(i)]
    unsure = {t for t in [*never, *tokenizer.added_tokens_encoder]
              if not any(map(own_piece, t)) and tokenizer._convert_token_to_id_with_added_voc(t) != sp.unk_id()}
    return tuple(sorted(unsure | ({","} if not own_piece(",") else set())))


def _albert_prepared(tokenizer: Any, text: str, state: dict) -> str:
    """`preprocess_text` (whitespace collapsed, quotes, NFKD without marks, lower case) of lower-cased text."""
    text = " ".join(text.strip().split()).replace("``", '"').replace("''", '"')
    if not tokenizer.keep_accents and not text.isascii():
        text = state["unmarked"].map(text)
    return text.lower() if tokenizer.do_lower_case else text


def _split_commas(tokenizer: Any, ids: list[int], state: dict) -> list[int]:
    """`_tokenize`'s comma rule on known pieces' ids."""
    comma, split = state["comma"], state["split"]
    if comma.isdisjoint(ids):
        return ids
    out: list[int] = []
    for i in ids:
        if i in comma:
            again = split.get(i)
            out += again if again is not None else _remember(
                split, i, tokenizer.convert_tokens_to_ids(tokenizer.split_comma(tokenizer.sp_model.IdToPiece(i))))
        else:
            out.append(i)
    return out


def albert_ids(tokenizer: Any, texts: Sequence[str], cut: bool = True) -> list[list[int]]:
    """`ReleaseAlbertTokenizer`'s ids of `texts` (no special tokens added), from batched SentencePiece; a text
    holding a special token cut on it (`cut`), else the Python path's."""
    state = _state(tokenizer, _albert_state)
    out: list[list[int]] = [[] for _ in texts]
    todo: list[tuple[int, str]] = []
    special: list[int] = []
    for i, text in enumerate(texts):
        lowered = lower_chars(text) if tokenizer.do_lower_case else text
        if _holds_special(state, text, lowered):
            special.append(i)
        else:
            todo.append((i, _albert_prepared(tokenizer, lowered, state)))
    held = [texts[i] for i in special]
    for i, ids in zip(special, with_added_tokens(tokenizer, held, albert_ids) if cut else python_ids(tokenizer, held)):
        out[i] = ids
    for chunk in _chunks(todo):
        try:
            _encode_albert(tokenizer, chunk, out, state)
        except (TypeError, RuntimeError, UnicodeError):  # e.g. a lone surrogate: the Python path, text by text
            for i, _ in chunk:
                out[i] = python_ids(tokenizer, [texts[i]])[0]
    return out


def _encode_albert(tokenizer: Any, chunk: list[tuple[int, str]], out: list[list[int]], state: dict) -> None:
    """SentencePiece's own ids, but for texts where an unknown piece's text may decide its id (or
    every text, when an added token took another id): their pieces, looked up as the Python path does."""
    sp, unk, unsure = tokenizer.sp_model, tokenizer.sp_model.unk_id(), state["unsure"]
    texts = [t for _, t in chunk]
    again = list(range(len(chunk)))
    if state["ids"]:
        encoded = sp.encode(texts, out_type=int)
        for (i, _), ids in zip(chunk, encoded):
            out[i] = _split_commas(tokenizer, ids, state)
        maybe = [k for k, ids in enumerate(encoded) if unsure and unk in ids]
        normal = sp.normalize([texts[k] for k in maybe]) if maybe else []  # an unknown piece's text is part of it
        again = [k for k, text in zip(maybe, normal) if any(u in text for u in unsure)]
    for k, pieces in zip(again, sp.encode([texts[k] for k in again], out_type=str) if again else []):
        out[chunk[k][0]] = _piece_ids(tokenizer, pieces, state)


def _piece_ids(tokenizer: Any, pieces: list[str], state: dict) -> list[int]:
    """`_tokenize`'s comma rule on SentencePiece's pieces, then their ids as the Python path converts them."""
    known, to_id = state["pieces"], tokenizer._convert_token_to_id_with_added_voc
    out: list[int] = []
    for piece in pieces:
        if tokenizer.comma_piece(piece):
            out += tokenizer.convert_tokens_to_ids(tokenizer.split_comma(piece))
        else:
            i = known.get(piece)
            out.append(i if i is not None else to_id(piece))  # an unknown piece: its text, looked up
    return out


def _chunks(todo: list[tuple[int, str]]) -> list[list[tuple[int, str]]]:
    """`todo` in runs of about ENCODE_CHARS characters."""
    chunks: list[list[tuple[int, str]]] = [[]]
    size = 0
    for item in todo:
        if size >= ENCODE_CHARS:
            chunks.append([])
            size = 0
        chunks[-1].append(item)
        size += len(item[1])
    return chunks


# ---- BERT: BasicTokenizer + WordPiece ------------------------------------------------------------
class Prefixes:
    """WordPiece's greedy longest-match-first over a vocabulary: every prefix of its tokens -> whether
    it is a token (`starts`), and the same for the '##' pieces that continue a word (`rest`, '##' left out)."""

    def __init__(self, vocab: dict[str, int], unk: str, max_chars: int) -> None:
        self.unk, self.max_chars = unk, max_chars
        self.starts, self.rest = self._prefixes(vocab), self._prefixes([t[2:] for t in vocab if t.startswith("##")])

    @staticmethod
    def _prefixes(tokens: Iterable[str]) -> dict[str, bool]:
        tokens = [t for t in tokens if t]
        return {t[:k]: False for t in tokens for k in range(1, len(t))} | dict.fromkeys(tokens, True)

    def pieces(self, word: str) -> list[str]:
        """WordpieceTokenizer.tokenize of one word."""
        if len(word) > self.max_chars:
            return [self.unk]
        out, start, prefixes = [], 0, self.starts
        while start < len(word):
            best, end = -1, start + 1
            while end <= len(word) and (token := prefixes.get(word[start:end])) is not None:
                best = end if token else best
                end += 1
            if best < 0:
                return [self.unk]
            out.append("##" + word[start:best] if start else word[:best])
            start, prefixes = best, self.rest
        return out


def _bert_state(tokenizer: Any) -> dict:
    basic, wordpiece = tokenizer.basic_tokenizer, tokenizer.wordpiece_tokenizer

    def cleaned(c: str) -> str:  # _clean_text, then _tokenize_chinese_chars
        if ord(c) in (0, 0xFFFD) or _is_control(c):
            return ""
        if _is_whitespace(c):
            return " "
        return f" {c} " if basic.tokenize_chinese_chars and basic._is_chinese_char(ord(c)) else c

    def apart(c: str) -> str:  # _run_split_on_punc
        return f" {c} " if _is_punctuation(c) else c

    return dict(cleaned=CharMap(cleaned), apart=CharMap(apart), words={},
                unmarked_apart=CharMap(lambda c: "" if unicodedata.category(c) == "Mn" else apart(c)),
                prefixes=Prefixes(wordpiece.vocab, wordpiece.unk_token, wordpiece.max_input_chars_per_word))


def _bert_words(tokenizer: Any, text: str, state: dict) -> list[str] | None:
    """BasicTokenizer's words of `text`, or None where the Python path must say (a special token)."""
    basic = tokenizer.basic_tokenizer
    lower = basic.do_lower_case
    lowered = lower_chars(text) if lower else text
    if _holds_special(state, text, lowered):
        return None
    text = unicodedata.normalize("NFC", state["cleaned"].map(lowered))
    if _holds_special(state, text):  # a word equal to a special token is kept whole there
        return None
    if lower:
        text = text.lower()
    if basic.strip_accents or (lower and basic.strip_accents is None):
        return state["unmarked_apart"].map(unicodedata.normalize("NFD", text)).split()
    return state["apart"].map(text).split()


def bert_ids(tokenizer: Any, texts: Sequence[str], cut: bool = True) -> list[list[int]]:
    """`ReleaseBertTokenizer`'s ids of `texts` (no special tokens added): each distinct word split once; a
    text holding a special token cut on it (`cut`), else the Python path's."""
    if not (tokenizer.do_basic_tokenize and tokenizer.basic_tokenizer.do_split_on_punc):
        return python_ids(tokenizer, texts)
    state = _state(tokenizer, _bert_state)
    words, prefixes, to_id = state["words"], state["prefixes"], tokenizer._convert_token_to_id_with_added_voc
    out: list[list[int]] = []
    special: list[int] = []
    for text in texts:
        split = _bert_words(tokenizer, text, state)
        if split is None:
            special.append(len(out))
            out.append([])
            continue
        ids: list[int] = []
        for word in split:
            got = words.get(word)
            ids += got if got is not None else _remember(words, word, [to_id(p) for p in prefixes.pieces(word)])
        out.append(ids)
    held = [texts[i] for i in special]
    for i, ids in zip(special, with_added_tokens(tokenizer, held, bert_ids) if cut else python_ids(tokenizer, held)):
        out[i] = ids
    return out
