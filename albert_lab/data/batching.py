"""Batches for pretraining, as a pure function of (seed, step).

Every batch is determined by the seed and the step number alone: pairs are rebuilt
per epoch from `default_rng([seed, epoch])` and masks drawn from
`default_rng([seed, step])`. Resuming at step s therefore sees exactly the batches an
uninterrupted run would have seen, with no data-loader state to save.

Within an epoch, pairs are sorted by length inside windows of 50 batches before
batching (then the batches are shuffled), so little compute is spent on padding.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from albert_lab.data.masking import MaskingConfig, mask_sequence
from albert_lab.data.pairs import Instance, create_instances
from albert_lab.data.tokenized import TokenizedDocs
from albert_lab.errors import DataError
from albert_lab.spec import Objective

SORT_WINDOW = 50  # batches
# Shapes are rounded up so that a run sees a few dozen distinct tensor shapes instead of
# thousands: oneDNN and PyTorch cache kernels per shape, and with every batch a new
# (width, number of predictions) those caches grew by gigabytes over a run.
WIDTH_MULTIPLE = 16  # sequence length
PREDICTIONS_MULTIPLE = 64  # masked positions; the padding has label -100 (ignored)


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, T) masked tokens
    token_type_ids: torch.Tensor  # (B, T) 0 = segment A (with [CLS]), 1 = segment B
    attention_mask: torch.Tensor  # (B, T) 1 = real token
    mlm_positions: torch.Tensor  # (P,) flat indexes into B*T of predicted tokens
    mlm_labels: torch.Tensor  # (P,) original token ids there; -100 for shape padding
    pair_labels: torch.Tensor  # (B,) 0 = original order / is next

    @property
    def num_tokens(self) -> int:
        return int(self.attention_mask.sum())

    @property
    def num_predictions(self) -> int:
        return int((self.mlm_labels != -100).sum())

    def dense_mlm_labels(self) -> torch.Tensor:
        """(B, T) labels with -100 where nothing is predicted (transformers' format)."""
        labels = torch.full(self.input_ids.shape, -100, dtype=torch.long)
        real = self.mlm_labels != -100
        labels.view(-1)[self.mlm_positions[real]] = self.mlm_labels[real]
        return labels

    def to(self, device: torch.device) -> Batch:
        return Batch(**{k: v.to(device, non_blocking=True) for k, v in self.__dict__.items()})


def encode_pair(a: np.ndarray, b: np.ndarray, cls_id: int, sep_id: int) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] A [SEP] B [SEP] (or [CLS] A [SEP] when B is empty) and its segment ids."""
    parts = [[cls_id], a, [sep_id]] + ([b, [sep_id]] if len(b) else [])
    tokens = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
    types = np.zeros(len(tokens), dtype=np.int64)
    types[len(a) + 2:] = 1
    return tokens, types


def collate(instances: list[Instance], cfg: MaskingConfig, cls_id: int, sep_id: int, pad_id: int,
            rngs: list[np.random.Generator]) -> Batch:
    """Pad to the longest pair (rounded up to WIDTH_MULTIPLE) and mask each pair with its
    own generator."""
    width = -(-max(i.length for i in instances) // WIDTH_MULTIPLE) * WIDTH_MULTIPLE
    n = len(instances)
    ids = np.full((n, width), pad_id, dtype=np.int64)
    types = np.zeros((n, width), dtype=np.int64)
    mask = np.zeros((n, width), dtype=np.int64)
    positions, labels = [], []
    for row, (inst, rng) in enumerate(zip(instances, rngs, strict=True)):
        tokens, segs = encode_pair(inst.tokens_a, inst.tokens_b, cls_id, sep_id)
        masked, pos, lab, _ = mask_sequence(tokens, cfg, rng)
        ids[row, :len(tokens)], types[row, :len(tokens)], mask[row, :len(tokens)] = masked, segs, 1
        positions.append(pos + row * width)
        labels.append(lab)
    positions, labels = np.concatenate(positions), np.concatenate(labels).astype(np.int64)
    pad = -len(positions) % PREDICTIONS_MULTIPLE
    positions = np.concatenate([positions, np.zeros(pad, dtype=np.int64)])
    labels = np.concatenate([labels, np.full(pad, -100, dtype=np.int64)])
    return Batch(
        input_ids=torch.from_numpy(ids), token_type_ids=torch.from_numpy(types), attention_mask=torch.from_numpy(mask),
        mlm_positions=torch.from_numpy(positions), mlm_labels=torch.from_numpy(labels),
        pair_labels=torch.tensor([i.label for i in instances], dtype=torch.long),
    )


class PretrainingData:
    """Deterministic stream of batches over one tokenised corpus.

    With several processes (DDP), every rank builds the same global batch and keeps
    its slice (rank::world_size), so results do not depend on the number of ranks.
    """

    def __init__(self, docs: TokenizedDocs, objective: Objective, cfg: MaskingConfig, special: tuple[int, int, int],
                 max_seq_len: int, batch_size: int, seed: int, short_seq_prob: float = 0.1,
                 rank: int = 0, world_size: int = 1, chunk_start: str = "document"):
        self.docs, self.objective, self.cfg = docs, objective, cfg
        self.cls_id, self.sep_id, self.pad_id = special
        self.max_seq_len, self.batch_size, self.seed = max_seq_len, batch_size, seed
        self.short_seq_prob, self.rank, self.world_size = short_seq_prob, rank, world_size
        self.chunk_start = chunk_start
        self._epoch_batches: dict[int, list[list[Instance]]] = {}
        self._epoch_sizes: list[int] = []  # batches per epoch, computed in order

    def epoch_batches(self, epoch: int) -> list[list[Instance]]:
        if epoch not in self._epoch_batches:
            rng = np.random.default_rng([self.seed, epoch])
            instances = create_instances(self.docs, self.objective, self.max_seq_len, rng, self.short_seq_prob,
                                         self.chunk_start)
            window = self.batch_size * SORT_WINDOW
            ordered = [inst for lo in range(0, len(instances), window)
                       for inst in sorted(instances[lo:lo + window], key=lambda i: i.length)]
            batches = [ordered[lo:lo + self.batch_size] for lo in range(0, len(ordered) - self.batch_size + 1, self.batch_size)]
            self._epoch_batches = {epoch: [batches[j] for j in rng.permutation(len(batches))]}  # keep one epoch
        return self._epoch_batches[epoch]

    def locate(self, step: int) -> tuple[int, int]:
        """(epoch, batch index in the epoch) of global step `step` (0-based)."""
        epoch, first = 0, 0
        while True:
            if epoch == len(self._epoch_sizes):
                self._epoch_sizes.append(len(self.epoch_batches(epoch)))
            if self._epoch_sizes[epoch] == 0:
                raise ValueError("the corpus yields fewer pairs than one batch; lower the batch size")
            if step < first + self._epoch_sizes[epoch]:
                return epoch, step - first
            first += self._epoch_sizes[epoch]
            epoch += 1

    def batch(self, step: int) -> Batch:
        epoch, index = self.locate(step)
        rows = range(self.rank, self.batch_size, self.world_size)
        instances = [self.epoch_batches(epoch)[index][r] for r in rows]
        # One generator per row of the global batch: masks do not depend on the rank count.
        rngs = [np.random.default_rng([self.seed, 1_000_003, step, r]) for r in rows]
        return collate(instances, self.cfg, self.cls_id, self.sep_id, self.pad_id, rngs)

    def epoch_of(self, step: int) -> float:
        epoch, index = self.locate(step)
        return epoch + index / max(1, self._epoch_sizes[epoch])


def batch_from_documents(docs, tokenizer, objective: Objective, max_seq_len: int = 128, seed: int = 0,
                         max_pairs: int = 16) -> Batch:
    """A pretraining batch (pairs as in training, masked with a fixed seed) from a few
    documents: what the gradient-flow view runs the loss on."""
    from albert_lab.data.masking import masking_config
    from albert_lab.data.pairs import check_pairable
    from albert_lab.data.tokenized import tokenize_documents

    check_pairable([len(d.segments) for d in docs], objective, "the text")
    tokenized = tokenize_documents(docs, tokenizer)
    rng = np.random.default_rng(seed)
    instances = create_instances(tokenized, objective, max_seq_len, rng, short_seq_prob=0.0)
    if not instances:
        raise DataError("no sentence pairs could be made from the text; give texts of two or more sentences")
    instances = instances[:max_pairs]
    cfg = masking_config(tokenizer)
    rngs = [np.random.default_rng([seed, i]) for i in range(len(instances))]
    return collate(instances, cfg, tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id, rngs)
