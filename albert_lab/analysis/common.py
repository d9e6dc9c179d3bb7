"""Pieces shared by the analyses: the progress callback, batching by length, running a model
fast on CPU, and the notes a frame carries. Sentence pairs are encoded in analysis.pair_encoding."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence

import numpy as np
import torch
from torch import nn

Progress = Callable[[float, str], None]
"""`progress(fraction done, what is being done)`, called between pieces of a long
computation; it may raise to stop the computation there (the app's Stop button does)."""


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


def checkpoint_notes(frame, name_column: str = "checkpoint") -> dict[str, str]:
    """Each checkpoint's first non-empty note in an analysis frame (what the analysis could
    not do for it: no shared block, no MLM head, an untrained pair head)."""
    flagged = frame[frame.note.fillna("") != ""]
    return {name: flagged[flagged[name_column] == name].note.iloc[0] for name in flagged[name_column].unique()}
