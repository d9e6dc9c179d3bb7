"""Pair scores and the held-out evaluation: batched against one by one, missing heads, attributions, the card's numbers."""

import collections
import itertools
import random

import numpy as np
import pandas as pd
import pytest
from conftest import ROOT

from albert_lab.analysis.attribution import attribute_pair
from albert_lab.analysis.intrinsic import intrinsic_eval, pair_probabilities
from albert_lab.analysis.pairs import judged, pairs_frame, score_pairs, summarize
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.corpus import MAX_LEN, MAX_SEGMENT_CHARS
from albert_lab.data.heldout import build_eval_pairs
from albert_lab.errors import DataError


def test_batched_scores_equal_one_by_one_and_swaps_are_consistent(bundles):
    a = ["The cat sat on the mat.", "Rome is in Italy.", "A much longer first sentence that goes on and on about rivers."]
    b = ["It was warm.", "It is the capital.", "Short."]
    scores = score_pairs(list(bundles), pairs_frame(a, b, [0, 1, 0]))
    for bundle in bundles:
        mine = scores[scores.checkpoint == bundle.name]
        single = [pair_probabilities(bundle.model, bundle.tokenizer, [x], [y])[0] for x, y in zip(a, b)]
        assert np.allclose(mine.p_ab, single, atol=1e-5)
        swapped = score_pairs(bundle, pairs_frame(b, a))
        assert np.allclose(mine.p_ba, swapped.p_ab, atol=1e-5)  # B->A of (A, B) is A->B of (B, A)
    summary = summarize(scores).set_index("checkpoint")
    for bundle in bundles:
        mine = scores[scores.checkpoint == bundle.name]
        assert summary.loc[bundle.name, "accuracy"] == ((mine.p_ab < 0.5).astype(int) == mine.label).mean()
        by_order = [(ab > ba) if label == 0 else (ba > ab) for ab, ba, label in zip(mine.p_ab, mine.p_ba, mine.label)]
        assert summary.loc[bundle.name, "order_accuracy"] == np.mean(by_order)


def test_missing_pair_head_is_flagged_not_scored(tmp_path, tokenizer):
    from transformers import AlbertConfig, AlbertForMaskedLM

    config = AlbertConfig(vocab_size=len(tokenizer), embedding_size=16, hidden_size=32, num_hidden_layers=2,
                          num_attention_heads=2, intermediate_size=37, max_position_embeddings=64)
    AlbertForMaskedLM(config).save_pretrained(tmp_path / "hub")
    tokenizer.save_pretrained(tmp_path / "hub")
    scores = score_pairs(load_checkpoint(tmp_path / "hub"), pairs_frame(["A b."], ["C d."]))
    assert scores.p_ab.isna().all() and scores.note.iloc[0] == "not scored: pair head missing"


def _truncate_seq_pair(a: list[int], b: list[int], max_length: int) -> tuple[list[int], list[int]]:
    """Google's run_classifier.py, line for line: pop from the longer side, from B on a tie."""
    a, b = list(a), list(b)
    while len(a) + len(b) > max_length:
        (a if len(a) > len(b) else b).pop()
    return a, b


def test_long_pairs_are_cut_as_googles_truncate_seq_pair_cuts_them():
    from albert_lab.analysis.pair_encoding import clip_sides, encode_pairs, truncated_lengths
    from albert_lab.tokenizer import load_tokenizer, release_tokenizer

    tokenizer = load_tokenizer(ROOT / "checkpoints" / "albert-sop")
    rng = random.Random(0)
    word = "".join(rng.choice("abcdefghijklmnopqrstuvwxyz") for _ in range(4000))
    clipped = clip_sides(tokenizer, [word], 128)[0]
    assert len(clipped) < 1100 and len(tokenizer(clipped, add_special_tokens=False)["input_ids"]) <= 128
    text = "The city of Paris is the capital of France, an old place with many people. " * 8
    for a, b in [(text, text), (text, "Short one."), ("Short one.", word), (text, text[:-80])]:
        ids_a, ids_b = (tokenizer(t[:MAX_SEGMENT_CHARS], add_special_tokens=False)["input_ids"] for t in (a, b))
        kept_a, kept_b = _truncate_seq_pair(ids_a, ids_b, 125)
        expected = [tokenizer.cls_token_id, *kept_a, tokenizer.sep_token_id, *kept_b, tokenizer.sep_token_id]
        assert encode_pairs(tokenizer, [a], [b], 128)["input_ids"].tolist() == [expected]
    bert = release_tokenizer(RELEASES / "uncased_L-2_H-16_A-2" / "vocab.txt", "bert", True)  # a side with no token at all
    a_id = bert("a", add_special_tokens=False)["input_ids"]
    assert encode_pairs(bert, ["\x01"], ["\x7f a"], 16)["input_ids"].tolist() == [[bert.cls_token_id, bert.sep_token_id, *a_id,
                                                                                  bert.sep_token_id]]
    assert truncated_lengths(200, 200, 125) == (63, 62)  # on a tie B is cut
    for la, lb, n in itertools.product(range(0, 9), range(0, 9), range(0, 12)):  # the closed form is the loop
        assert truncated_lengths(la, lb, n) == tuple(map(len, _truncate_seq_pair(range(la), range(lb), n)))


def test_attributions_satisfy_completeness(bundles):
    result = attribute_pair(bundles[0], "The river flows north.", "It reaches the sea.", n_steps=64)
    tokens = result.tokens
    assert tokens.token.iloc[0] == "[CLS]" and set(tokens.segment) == {"special", "A", "B"}
    assert result.baseline.endswith(f"replaced by {bundles[0].tokenizer.pad_token}")  # the caption said <pad> for [PAD] too
    total = tokens.attribution.sum()
    assert abs(total - (result.probability - result.baseline_probability) - result.delta) < 1e-4
    assert abs(result.delta) < 0.05 * max(1e-3, abs(result.probability - result.baseline_probability)) + 1e-3
    with pytest.raises(DataError):
        attribute_pair(bundles[0], "", "x")


def test_intrinsic_eval_pairs_and_scores(small_corpus, bundles):
    pairs = build_eval_pairs(small_corpus.heldout)
    natural_sop = pairs[(pairs.task == "sop") & pairs.natural]
    assert 0.3 < natural_sop.label.mean() < 0.7 and pairs[pairs.task == "sop"].interior.any()
    assert (pairs[(pairs.task == "sop") & ~pairs.natural].interior).all()
    nsp_neg = pairs[(pairs.task == "nsp") & (pairs.label == 1)]
    assert len(nsp_neg) and all(row.b not in " ".join(d.segments) for row in nsp_neg.itertuples()
                                for d in small_corpus.heldout if d.title == row.doc)
    result = intrinsic_eval(bundles[0].model, bundles[0].tokenizer, pairs, limit=20)
    assert all(0 <= result[k] <= 1 for k in ("mlm_acc", "nsp_acc", "sop_acc", "sop_lead_acc", "sop_interior_acc"))
    assert result["nsp_pairs"] <= 20


def test_pairs_of_one_task_score_that_task_and_nothing_else(small_corpus, bundles):
    """A pairs frame with SOP rows only (a hand-picked set) scored for every task: the SOP
    numbers equal those of the full set's SOP rows, the absent tasks count no pairs."""
    pairs = build_eval_pairs(small_corpus.heldout)
    sop_only = pairs[pairs.task == "sop"]
    model, tokenizer = bundles[0].model, bundles[0].tokenizer
    alone, full = intrinsic_eval(model, tokenizer, sop_only), intrinsic_eval(model, tokenizer, pairs)
    assert alone["sop_interior_pairs"] == full["sop_interior_pairs"] > 0
    assert alone["sop_interior_acc"] == full["sop_interior_acc"] and alone["sop_acc"] == full["sop_acc"]
    assert not alone.get("mlm_predictions") and not alone.get("nsp_pairs")


def test_a_trained_card_carries_intervals_and_counts():
    """A browser-trained run's card listed raw keys ('sop acc 0.512') without interval or n."""
    from albert_lab.analysis.intrinsic import card_metrics
    from albert_lab.card import metric_lines

    table = pd.DataFrame([dict(metric="sop", source="all", hits=60, n=100, accuracy=0.6, low=0.5, high=0.69)])
    assert metric_lines(card_metrics(table)) == [("sop", "0.600 [0.50, 0.69] n=100")]


class Spy:
    """A tokenizer that counts the strings passed through it (its __call__ and a release's ids_of)."""

    def __init__(self, tokenizer) -> None:
        self.tokenizer, self.seen = tokenizer, collections.Counter()

    def _count(self, *texts) -> None:
        for text in texts:
            self.seen.update([text] if isinstance(text, str) else text or [])

    def __call__(self, text, text_pair=None, **kwargs):
        self._count(text, text_pair)
        return self.tokenizer(text, text_pair, **kwargs)

    def __getattr__(self, name: str):
        found = getattr(self.tokenizer, name)
        if name != "ids_of":
            return found
        return lambda texts: self._count(texts) or found(texts)


RELEASES = ROOT / "tests" / "fixtures" / "tf_releases"
HOSTILE_PAIRS = [("The cat sat on the mat.", "It was warm."), ("Rome is in Italy. " * 30, "Short."),  # A cut
                 ("Short.", "Paris, the capital, is old. " * 40), ("word " * 60, "word " * 60),  # B cut; a tie
                 ("word " * 61, "word " * 60), (".", "a"), ("\x01", "\x7f"), ("[MASK] is here", "<unk> and [SEP]"),
                 ("1,2,3,4,5,6,7,8,9,10," * 20, "$3,500,000"), ("\ufdfa" * 300, "한국어 문장입니다."),
                 ("e\u0301\u0301 naïve café", "\U0001fae8 \U0001f970"), ("x" * 2000, "y" * 150)]


def _score_pairs_before(bundle, pairs: pd.DataFrame) -> tuple[list[int], list[float], np.ndarray, np.ndarray]:
    """What score_pairs computed before each sentence was tokenised once: the pairs through the
    tokenizer to count their tokens, then every sentence again for A->B and for B->A, cut by Google's
    loop; the model reads the same rows."""
    from albert_lab.analysis.intrinsic import encoded_probabilities
    from albert_lab.analysis.pair_encoding import EncodedPairs
    from albert_lab.analysis.pairs import unknown_shares

    tok = bundle.tokenizer
    length = min(MAX_LEN, bundle.spec.max_positions)
    a, b = list(pairs.sentence_a), list(pairs.sentence_b)
    counted = tok(a, b, truncation=False)["input_ids"]
    first, second = (tok([t[:MAX_SEGMENT_CHARS] for t in side], add_special_tokens=False)["input_ids"] for side in (a + b, b + a))
    rows = [_truncate_seq_pair(x, y, length - 3) for x, y in zip(first, second)]
    ids = [[tok.cls_token_id, *x, tok.sep_token_id, *y, tok.sep_token_id] for x, y in rows]
    types = [[0] * (len(x) + 2) + [1] * (len(y) + 1) for x, y in rows]
    both = encoded_probabilities(bundle.model, EncodedPairs(ids, types, tok.pad_token_id)) if bundle.heads.pair_usable else None
    p = both if both is not None else np.full(2 * len(a), np.nan)
    return [len(i) for i in counted], unknown_shares(counted, tok), p[:len(a)], p[len(a):]


def test_scores_equal_the_path_that_tokenised_each_sentence_three_times(bundles, minilm):
    """Tokens, unknown shares and both probabilities, exactly: lab checkpoints (SentencePiece), Google's
    releases (their Python code, here its fast path), a real WordPiece (MiniLM, no pair head); pairs cut
    on either side or on a tie, near-empty ones, special tokens typed in, hostile text."""
    pairs = pairs_frame([a for a, _ in HOSTILE_PAIRS], [b for _, b in HOSTILE_PAIRS])
    checkpoints = [*bundles, load_checkpoint(RELEASES / "albert_tiny"), load_checkpoint(RELEASES / "uncased_L-2_H-16_A-2"),
                   load_checkpoint(minilm)]
    for bundle in checkpoints:
        scores = score_pairs(bundle, pairs)
        tokens, unknown, p_ab, p_ba = _score_pairs_before(bundle, pairs)
        assert list(scores.tokens) == tokens and list(scores.unknown) == unknown, bundle.name
        np.testing.assert_array_equal(scores.p_ab, p_ab)
        np.testing.assert_array_equal(scores.p_ba, p_ba)
        assert scores.truncated.any() and scores.truncated.sum() < len(pairs), bundle.name


@pytest.mark.parametrize("which", ["albert", "bert", "release"])
def test_each_sentence_passes_through_the_tokenizer_once(bundles, which):
    """200 distinct pairs, 400 sentences: 400 strings through the tokenizer (it was 1,203, three per
    sentence and the load's test sentence)."""
    from dataclasses import replace

    bundle = {"albert": bundles[0], "bert": bundles[1]}.get(which) or load_checkpoint(RELEASES / "albert_tiny")
    spy = Spy(bundle.tokenizer)
    a, b = [f"Sentence number {i} is here." for i in range(200)], [f"And {i} follows it." for i in range(200)]
    scores = score_pairs(replace(bundle, tokenizer=spy), pairs_frame(a, b))
    assert spy.seen == collections.Counter(a + b) and sum(spy.seen.values()) == 400
    assert scores.p_ab.notna().all()


def test_a_label_given_later_judges_each_heads_prediction_without_scoring_again():
    """judged: a label of 1 makes a prediction of 1 right and 0 wrong; a head that predicts nothing, or no label, says
    nothing; the scores are those given."""
    scores = pd.DataFrame({"p_ab": [0.8, 0.3, np.nan], "prediction": pd.array([0, 1, None], dtype="Int64"),
                           "label": pd.array([None] * 3, dtype="Int64")})
    given = judged(scores, 1)
    assert list(given.correct.astype(object).fillna("none")) == [False, True, "none"] and list(given.label) == [1, 1, 1]
    assert judged(scores, None).correct.isna().all()
    pd.testing.assert_series_equal(given.p_ab, scores.p_ab)
