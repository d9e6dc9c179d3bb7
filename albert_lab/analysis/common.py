"""Pieces shared by the analyses: encoding sentence pairs, batching by length,
running a model fast on CPU."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

from albert_lab.data.corpus import MAX_SEGMENT_CHARS, clip_for_tokens
from albert_lab.errors import DataError

Progress = Callable[[float, str], None]
"""`progress(fraction done, what is being done)`, called between pieces of a long
computation; it may raise to stop the computation there (the app's Stop button does)."""


def check_segment(text: object, what: str, why: str = "a pair needs two non-blank segments") -> str:
    """A non-blank string, capped in length; `tokenizer('A', '')` would silently become a
    single-segment input, so blank segments are refused."""
    if not isinstance(text, str) or not text.strip():
        raise DataError(f"{what} is empty; {why}")
    return " ".join(text.split())[:MAX_SEGMENT_CHARS]


def encode_pairs(tokenizer, first: Sequence[str], second: Sequence[str], max_len: int,
                 device: torch.device | str = "cpu") -> dict[str, torch.Tensor]:
    """[CLS] A [SEP] B [SEP] for each pair, truncated longest-first to `max_len`, padded
    to the longest pair. token_type_ids are asked for explicitly: transformers 5's
    ALBERT tokenizer leaves them out otherwise, and the pair head would see one segment.
    Each side is cut to its first max_len tokens first (clip_sides)."""
    first, second = clip_sides(tokenizer, first, max_len), clip_sides(tokenizer, second, max_len)
    enc = tokenizer(first, second, truncation="longest_first", max_length=max_len, padding=True,
                    return_token_type_ids=True, return_tensors="pt")
    return {k: enc[k].to(device) for k in ("input_ids", "token_type_ids", "attention_mask")}


def clip_sides(tokenizer, texts: Sequence[str], max_len: int) -> list[str]:
    """Each text cut to the characters of its first `max_len` tokens, so that a pair's
    longest-first truncation, whose time and memory grow with the square of the tokens it
    removes (120 pairs of 4,000-letter words: 72 s, 13 GB), never has more than ~2 x max_len
    to go through; the tokens that truncation keeps are the same."""
    texts = [clip_for_tokens(t, max_len) for t in texts]
    try:
        offsets = tokenizer(texts, add_special_tokens=False, return_offsets_mapping=True)["offset_mapping"]
    except (NotImplementedError, ValueError, TypeError):  # a tokenizer without offsets: the character cut alone
        return texts
    return [t if len(spans) <= max_len else t[:spans[max_len][0]] for t, spans in zip(texts, offsets)]


GPU_MEMORY_SHARE = 0.25  # of a GPU's free memory, for one forward pass's activations
GPU_MAX_BATCH_TOKENS = 1 << 17  # beyond ~128k tokens a forward pass is no faster per token


def batch_tokens_for(model: nn.Module) -> int:
    """Padded tokens per forward pass, from the device the model is on.

    CPU (and MPS): the FFN's (tokens, ffn) activation should stay cache-sized (~6M
    elements). Measured on albert-base (ffn 3072): 2048 tokens is ~2x faster per pair than
    32768 in bf16. CUDA: as many as fit in GPU_MEMORY_SHARE of the free memory (what torch
    holds cached counts as free), at fp32's 4 bytes and twice the live activations of a
    layer per token: the FFN's, four of width H, and every head's scores over the longest
    sequence."""
    config = getattr(model, "config", None)
    ffn = getattr(config, "intermediate_size", 3072)
    device = next(model.parameters()).device
    if device.type != "cuda":
        return int(min(16384, max(512, 6_291_456 // ffn)))
    hidden, heads = getattr(config, "hidden_size", 768), getattr(config, "num_attention_heads", 12)
    longest = min(512, getattr(config, "max_position_embeddings", 512))
    free, _ = torch.cuda.mem_get_info(device)
    free += torch.cuda.memory_reserved(device) - torch.cuda.memory_allocated(device)
    per_token = 2 * 4 * (ffn + 4 * hidden + heads * longest)
    return int(min(GPU_MAX_BATCH_TOKENS, max(2048, GPU_MEMORY_SHARE * free // per_token)))


def length_batches(lengths: Sequence[int], batch_tokens: int = 8192, max_batch: int = 128) -> Iterator[np.ndarray]:
    """Indexes grouped into batches of similar length (sorted), each holding about
    `batch_tokens` padded tokens: padding is compute spent on nothing."""
    order = np.argsort(np.asarray(lengths), kind="stable")
    start = 0
    while start < len(order):
        end = start + 1
        while end < len(order) and end - start < max_batch and (end - start + 1) * lengths[order[end]] <= batch_tokens:
            end += 1
        yield order[start:end]
        start = end


def approximate_lengths(tokenizer, first: Sequence[str], second: Sequence[str], max_len: int) -> list[int]:
    """Token counts of each pair (capped at max_len), for length bucketing."""
    a = tokenizer([clip_for_tokens(t, max_len) for t in first], add_special_tokens=False)["input_ids"]
    b = tokenizer([clip_for_tokens(t, max_len) for t in second], add_special_tokens=False)["input_ids"]
    return [min(max_len, len(x) + len(y) + 3) for x, y in zip(a, b)]


def checkpoint_notes(frame, name_column: str = "checkpoint") -> dict[str, str]:
    """Each checkpoint's first non-empty note in an analysis frame (what the analysis could
    not do for it: no shared block, no MLM head, an untrained pair head)."""
    flagged = frame[frame.note.fillna("") != ""]
    return {name: flagged[flagged[name_column] == name].note.iloc[0] for name in flagged[name_column].unique()}
