"""Pretraining data from a tokenized corpus: SOP and NSP pairs, n-gram masking, batches."""

import collections

import numpy as np
import pytest
import torch

from albert_lab.data.batching import PretrainingData, encode_pair
from albert_lab.data.masking import mask_sequence, masking_config, sample_ngram_length
from albert_lab.data.pairs import check_pairable, create_instances
from albert_lab.data.tokenized import tokenize_documents
from albert_lab.errors import DataError


@pytest.fixture(scope="module")
def tokenized(small_corpus, tokenizer):
    return tokenize_documents(small_corpus.train, tokenizer)


def test_tokenized_cache_round_trip(small_corpus, tokenizer, tokenized):
    cached = tokenize_documents(small_corpus.train, tokenizer, cache_key="t")
    again = tokenize_documents(small_corpus.train, tokenizer, cache_key="t")
    assert np.array_equal(cached.ids, tokenized.ids) and np.array_equal(again.ids, tokenized.ids)
    assert np.array_equal(again.document_bounds, tokenized.document_bounds)


def test_threads_of_one_process_fill_the_same_cache_without_colliding(small_corpus, tokenizer):
    """Two launches in the app's server (one process, a thread each) wrote the same temporary file
    name: the second rename found it gone (FileNotFoundError while starting the run)."""
    import threading

    barrier, errors = threading.Barrier(8), []

    def tokenize():
        barrier.wait()
        try:
            tokenize_documents(small_corpus.train, tokenizer, cache_key="threads")
        except OSError as err:
            errors.append(err)

    threads = [threading.Thread(target=tokenize) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []


def test_long_segments_tokenize_without_a_transformers_warning(minilm, monkeypatch):
    """Segments are cut to the model later; tokenising a corpus must not log transformers'
    "longer than the specified maximum ... indexing errors" (it alarmed users in every run log)."""
    from transformers import tokenization_utils_base

    from albert_lab.data.corpus import Document
    from albert_lab.tokenizer import load_tokenizer

    warned = []
    monkeypatch.setattr(tokenization_utils_base.logger, "warning", lambda message, *a, **k: warned.append(message))
    tokenizer = load_tokenizer(minilm)
    long = "antidisestablishmentarianism xylophonists " * 45  # ~1,900 characters, >512 WordPiece tokens
    docs = tokenize_documents([Document("long", (long, "A short one."))], tokenizer)
    assert docs.segments(0)[0].size > tokenizer.model_max_length
    assert not [m for m in warned if "longer than the specified maximum" in m]


def _find(haystack: bytes, needle: np.ndarray, start: int = 0) -> list[int]:
    """Token offsets (4-byte aligned matches) of `needle` in `haystack`."""
    pattern, found, at = needle.astype(np.int32).tobytes(), [], start * 4
    while (at := haystack.find(pattern, at)) != -1:
        if at % 4 == 0:
            found.append(at // 4)
        at += 1
    return found


def _ordered(doc, a, b):
    return any(_find(doc, b, i + len(a)) for i in _find(doc, a))


def test_sop_pairs_are_order_swaps_of_one_document(tokenized):
    instances = create_instances(tokenized, "sop", 128, np.random.default_rng(0))
    labels = collections.Counter(i.label for i in instances)
    assert abs(labels[0] - labels[1]) < 0.1 * len(instances)
    b = tokenized.segment_bounds
    doc_text = [tokenized.ids[b[tokenized.document_bounds[d]]:b[tokenized.document_bounds[d + 1]]].astype(np.int32).tobytes()
                for d in range(tokenized.num_documents)]
    for inst in instances[:300]:
        a, b = (inst.tokens_b, inst.tokens_a) if inst.label == 1 else (inst.tokens_a, inst.tokens_b)
        assert len(a) and len(b) and inst.length <= 128
        # In the original order, A and B are contiguous runs of one document with A first
        # (truncation may trim A's end or B's start, so A + B need not be contiguous).
        assert any(_ordered(doc, a, b) for doc in doc_text if len(doc) >= 4 * (len(a) + len(b))), "not A-before-B in one document"


def _docs(tokens, positions):
    """Documents that contain every token of `tokens` (a crude but sound owner test)."""
    result = None
    for t in set(tokens.tolist()):
        result = positions[t] if result is None else result & positions[t]
    return result or set()


def test_nsp_negatives_come_from_another_document(tokenized):
    rng = np.random.default_rng(1)
    instances = create_instances(tokenized, "nsp", 128, rng)
    owner = np.searchsorted(tokenized.segment_bounds, np.arange(tokenized.num_tokens), side="right") - 1
    doc_of_segment = np.searchsorted(tokenized.document_bounds, np.arange(len(tokenized.segment_bounds) - 1), side="right") - 1
    positions = collections.defaultdict(set)
    for i, t in enumerate(tokenized.ids.tolist()):
        positions[t].add(doc_of_segment[owner[i]])
    assert {0, 1} == {i.label for i in instances}
    for inst in [i for i in instances if i.label == 0][:200]:
        assert _docs(inst.tokens_a, positions) & _docs(inst.tokens_b, positions)
    disjoint = sum(not (_docs(i.tokens_a, positions) & _docs(i.tokens_b, positions)) for i in instances if i.label == 1)
    assert disjoint >= 0.95 * sum(i.label == 1 for i in instances)


def test_unpairable_corpora_are_refused():
    with pytest.raises(DataError, match="single segment"):
        check_pairable([1, 1], "sop")
    with pytest.raises(DataError, match="at least two documents"):
        check_pairable([2], "nsp")
    with pytest.raises(DataError, match="no text"):
        check_pairable([], "none")
    check_pairable([1, 3], "sop")


def test_random_chunk_start_makes_interior_pairs(tokenized):
    share = {start: np.mean([i.first_segment for i in create_instances(tokenized, "sop", 128, np.random.default_rng(2),
                                                                        chunk_start=start)])
             for start in ("document", "random")}
    assert share["document"] > 0.7 and share["random"] < share["document"] - 0.2, share


def test_ngram_lengths_follow_one_over_n(tokenizer):
    cfg = masking_config(tokenizer)
    rng = np.random.default_rng(0)
    counts = collections.Counter(sample_ngram_length(rng, cfg, 3) for _ in range(20_000))
    for n, p in ((1, 6 / 11), (2, 3 / 11), (3, 2 / 11)):
        assert abs(counts[n] / 20_000 - p) < 0.01
    # Realised spans of whole words in a masked sequence. With a budget that rarely binds
    # they follow 1/n; under the paper's cap of 20 predictions, longer n-grams that would
    # overflow it are shortened (as in the reference code), which favours unigrams.
    from dataclasses import replace

    words = np.array(tokenizer(" ".join(["the"] * 2000), add_special_tokens=False)["input_ids"])
    assert len(words) == 2000  # one piece per word
    used = collections.Counter()
    for _ in range(5):
        used.update(mask_sequence(words, replace(cfg, max_predictions=10_000), rng)[3])
    total = sum(used.values())
    for n, p in ((1, 6 / 11), (2, 3 / 11), (3, 2 / 11)):
        assert abs(used[n] / total - p) < 0.04, (n, used)


def test_mask_80_10_10_and_budget(tokenizer):
    cfg = masking_config(tokenizer)
    rng = np.random.default_rng(3)
    tokens, _ = encode_pair(np.arange(5, 65, dtype=np.int32), np.arange(70, 130, dtype=np.int32), 2, 3)
    outcome = collections.Counter()
    for _ in range(250):
        masked, positions, labels, _ = mask_sequence(tokens, cfg, rng)
        assert len(positions) == min(20, round(0.15 * len(tokens)))
        assert np.array_equal(labels, tokens[positions])
        assert not set(positions.tolist()) & {0, 61, len(tokens) - 1}  # never [CLS] / [SEP]
        for p in positions:
            outcome["mask" if masked[p] == cfg.mask_id else "kept" if masked[p] == tokens[p] else "random"] += 1
    total = sum(outcome.values())
    assert abs(outcome["mask"] / total - 0.8) < 0.02  # 5,000 predictions: 3 standard errors
    assert abs(outcome["kept"] / total - 0.1) < 0.015 and abs(outcome["random"] / total - 0.1) < 0.015


def test_masking_reads_wordpiece(minilm):
    from albert_lab.data.masking import masking_config
    from albert_lab.tokenizer import load_tokenizer

    tok = load_tokenizer(minilm)
    cfg = masking_config(tok)
    assert cfg.first_random_id == tok.convert_tokens_to_ids("!")  # after [PAD], [unused*], [UNK], [CLS], [SEP], [MASK]
    ids = tok("unbelievably", add_special_tokens=False)["input_ids"]
    pieces = tok.convert_ids_to_tokens(ids)
    assert len(ids) > 1 and [bool(cfg.word_start[i]) for i in ids] == [not p.startswith("##") for p in pieces]


def _data(tokenized, tokenizer, **kw):
    special = (tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id)
    return PretrainingData(tokenized, "sop", masking_config(tokenizer), special, 64, 8, seed=5, **kw)


def test_batches_are_a_pure_function_of_seed_and_step(tokenized, tokenizer):
    first, second = _data(tokenized, tokenizer), _data(tokenized, tokenizer)
    late = second.batch(57)  # jump ahead first: no state carried between steps
    assert all((getattr(late, f) == getattr(first.batch(57), f)).all() for f in ("input_ids", "mlm_positions", "pair_labels"))
    b = first.batch(0)
    assert b.input_ids.shape[0] == 8 and (b.input_ids[:, 0] == tokenizer.cls_token_id).all()
    assert (b.dense_mlm_labels().view(-1)[b.mlm_positions] == b.mlm_labels).all()


def test_ranks_split_the_same_global_batch(tokenized, tokenizer):
    whole = _data(tokenized, tokenizer).batch(3)
    halves = [_data(tokenized, tokenizer, rank=r, world_size=2).batch(3) for r in (0, 1)]
    assert sorted(whole.pair_labels.tolist()) == sorted(halves[0].pair_labels.tolist() + halves[1].pair_labels.tolist())
    assert sum(h.num_predictions for h in halves) == whole.num_predictions
    assert whole.input_ids.shape[1] % 16 == 0 and len(whole.mlm_labels) % 64 == 0  # few distinct shapes


def test_tokenizer_pair_encoding_matches_training_encoding(tokenizer):
    a, b = "the river is long.", "it flows to the sea."
    enc = tokenizer(a, b, return_token_type_ids=True)
    ids_a = np.array(tokenizer(a, add_special_tokens=False)["input_ids"])
    ids_b = np.array(tokenizer(b, add_special_tokens=False)["input_ids"])
    tokens, types = encode_pair(ids_a, ids_b, tokenizer.cls_token_id, tokenizer.sep_token_id)
    assert enc["input_ids"] == tokens.tolist() and enc["token_type_ids"] == types.tolist()
    assert tokenizer.unk_token_id not in enc["input_ids"]  # real words, not <unk>


def test_batches_made_ahead_are_the_steps_own(tokenized, tokenizer):
    """The background producer hands out exactly batch(step), from any first step (a resume),
    with the counts known on the host; a step out of order and a failing batch are errors
    in the training thread."""
    from albert_lab.data.batching import BatchesAhead

    data, reference = _data(tokenized, tokenizer), _data(tokenized, tokenizer)
    with BatchesAhead(data, 40, torch.device("cpu"), depth=3) as ahead:
        for step in range(40, 46):
            got, want = ahead.take(step), reference.batch(step)
            assert all(torch.equal(a, b) for a, b in zip(got.tensors().values(), want.tensors().values()))
            assert got.counts == (want.num_tokens, want.num_predictions)
        with pytest.raises(ValueError, match="in order"):
            ahead.take(50)

    def broken(step):
        raise DataError(f"no batch {step}")

    data.batch = broken
    with BatchesAhead(data, 0, torch.device("cpu")) as ahead, pytest.raises(DataError, match=r"^no batch 0$"):
        ahead.take(0)


def test_batches_cross_from_the_worker_under_a_temporary_folder_too_long_for_a_socket(tokenized, tokenizer, tmp_path, monkeypatch):
    """A long TMPDIR (a CI's nested temporary folders): the worker's batches do not go through a socket
    there (at most 108 bytes a path; torch's shared tensors did, and the worker died), and they come back
    equal, by value."""
    import multiprocessing.process
    import pickle
    from multiprocessing.reduction import ForkingPickler

    from albert_lab.data.batching import BatchesAhead

    long = tmp_path / ("t" * 100)
    long.mkdir()
    monkeypatch.setitem(multiprocessing.process.current_process()._config, "tempdir", str(long))  # the forked worker's too
    want = _data(tokenized, tokenizer).batch(0)
    sent = ForkingPickler.dumps(want)  # as the worker's queue pickles it: by value, not a handle to shared memory
    assert len(sent) >= sum(t.nbytes for t in want.tensors().values())
    back = pickle.loads(sent)
    assert back.counts == want.counts and back.step_tokens == want.step_tokens
    assert all(torch.equal(a, b) and a.dtype == b.dtype for a, b in zip(back.tensors().values(), want.tensors().values()))
    data, reference = _data(tokenized, tokenizer), _data(tokenized, tokenizer)
    with BatchesAhead(data, 0, torch.device("cpu")) as ahead:
        for step in range(3):
            got, want = ahead.take(step), reference.batch(step)
            assert all(torch.equal(a, b) for a, b in zip(got.tensors().values(), want.tensors().values()))


def test_batches_are_made_outside_the_training_process(tokenized, tokenizer, tmp_path):
    """The producer is another process: it does not hold the training process's Python lock
    while a step launches its work."""
    import os

    from albert_lab.data.batching import BatchesAhead

    data, made = _data(tokenized, tokenizer), tmp_path / "made"
    batch = data.batch

    def recorded(step):
        with open(made, "a") as out:
            out.write(f"{os.getpid()}\n")
        return batch(step)

    data.batch = recorded
    rng = torch.get_rng_state()
    with BatchesAhead(data, 0, torch.device("cpu")) as ahead:
        for step in range(3):
            ahead.take(step)
    pids = set(made.read_text().split())
    assert pids and str(os.getpid()) not in pids
    # nor does starting it draw from the global generator: a resumed run's dropout masks would differ
    assert torch.equal(torch.get_rng_state(), rng)
