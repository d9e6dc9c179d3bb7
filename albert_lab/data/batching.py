"""Batches for pretraining, as a pure function of (seed, step).

Every batch is determined by the seed and the step number alone: pairs are rebuilt
per epoch from `default_rng([seed, epoch])` and masks drawn from
`default_rng([seed, step])`. Resuming at step s therefore sees exactly the batches an
uninterrupted run would have seen, with no data-loader state to save.

Within an epoch, pairs are sorted by length inside windows of 50 batches before
batching (then the batches are shuffled), so little compute is spent on padding.
"""

from __future__ import annotations

import itertools
import multiprocessing
import time
from collections.abc import Iterator
from dataclasses import dataclass, field, fields

import numpy as np
import torch

from albert_lab.data.masking import MaskingConfig, mask_sequence, prediction_budget
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
# A compiled step compiles one graph per shape: there the widths are a few buckets, and the
# predictions one count per width (Shapes.bucketed).
WIDTH_BUCKETS = 4


@dataclass
class Batch:
    input_ids: torch.Tensor  # (B, T) masked tokens
    token_type_ids: torch.Tensor  # (B, T) 0 = segment A (with [CLS]), 1 = segment B
    attention_mask: torch.Tensor  # (B, T) 1 = real token
    mlm_positions: torch.Tensor  # (P,) flat indexes into B*T of predicted tokens
    mlm_labels: torch.Tensor  # (P,) original token ids there; -100 for shape padding
    pair_labels: torch.Tensor  # (B,) 0 = original order / is next
    # (real tokens, predictions), counted on the host before a copy to a device, so that
    # reading them never waits for the device
    counts: tuple[int, int] | None = field(default=None, repr=False, compare=False)
    # real tokens in the whole step: every rank's slice (each rank builds the global batch, so
    # each knows it without asking the others)
    step_tokens: int | None = field(default=None, repr=False, compare=False)

    @property
    def num_tokens(self) -> int:
        return self.counts[0] if self.counts else int(self.attention_mask.sum())

    @property
    def num_predictions(self) -> int:
        return self.counts[1] if self.counts else int((self.mlm_labels != -100).sum())

    def tensors(self) -> dict[str, torch.Tensor]:
        return {f.name: getattr(self, f.name) for f in fields(self) if f.name not in ("counts", "step_tokens")}

    def dense_mlm_labels(self) -> torch.Tensor:
        """(B, T) labels with -100 where nothing is predicted (transformers' format)."""
        labels = torch.full(self.input_ids.shape, -100, dtype=torch.long)
        real = self.mlm_labels != -100
        labels.view(-1)[self.mlm_positions[real]] = self.mlm_labels[real]
        return labels

    def to(self, device: torch.device) -> Batch:
        """On `device`; asynchronous from pinned memory (`pin_memory`)."""
        counts = self.counts or (self.num_tokens, self.num_predictions)
        return Batch(**{k: v.to(device, non_blocking=True) for k, v in self.tensors().items()}, counts=counts,
                     step_tokens=self.step_tokens)

    def pin_memory(self) -> Batch:
        """In page-locked host memory, from where a copy to a GPU does not block the host."""
        counts = self.counts or (self.num_tokens, self.num_predictions)
        return Batch(**{k: v.pin_memory() for k, v in self.tensors().items()}, counts=counts, step_tokens=self.step_tokens)

    def __reduce__(self) -> tuple:
        """Pickled by value, its tensors as arrays: a batch made by BatchesAhead's worker crosses the pipe as
        bytes (a few MB a step). torch pickles a tensor for another process into shared memory and hands over
        its file descriptor through a socket in the temporary folder, a path a long TMPDIR makes longer than
        a socket's 108 bytes: the worker died ('AF_UNIX path too long') and with it the run."""
        arrays = {k: v.detach().cpu().numpy() for k, v in self.tensors().items()}
        return _batch_of_arrays, (arrays, self.counts, self.step_tokens)


def _batch_of_arrays(arrays: dict[str, np.ndarray], counts: tuple[int, int] | None, step_tokens: int | None) -> Batch:
    return Batch(**{k: torch.from_numpy(v) for k, v in arrays.items()}, counts=counts, step_tokens=step_tokens)


def encode_pair(a: np.ndarray, b: np.ndarray, cls_id: int, sep_id: int) -> tuple[np.ndarray, np.ndarray]:
    """[CLS] A [SEP] B [SEP] (or [CLS] A [SEP] when B is empty) and its segment ids."""
    parts = [[cls_id], a, [sep_id]] + ([b, [sep_id]] if len(b) else [])
    tokens = np.concatenate([np.asarray(p, dtype=np.int64) for p in parts])
    types = np.zeros(len(tokens), dtype=np.int64)
    types[len(a) + 2:] = 1
    return tokens, types


@dataclass(frozen=True)
class Shapes:
    """The shapes a batch is padded to. Plain: its longest pair rounded up to WIDTH_MULTIPLE, its
    predictions to PREDICTIONS_MULTIPLE (a few dozen shapes over a run). Bucketed (`bucketed`): the
    first of `widths` that holds the longest pair, and as many predictions as that width can have
    (rows x the masking budget of a pair that long), so that each width is one shape."""

    widths: tuple[int, ...] = ()
    masking: MaskingConfig | None = None  # bucketed: the budget of predictions per pair

    @classmethod
    def bucketed(cls, max_seq_len: int, cfg: MaskingConfig, buckets: int = WIDTH_BUCKETS) -> Shapes:
        """`buckets` widths up to max_seq_len, evenly spaced, each a multiple of WIDTH_MULTIPLE where that fits."""
        widths = {min(max_seq_len, -(-max_seq_len * k // (buckets * WIDTH_MULTIPLE)) * WIDTH_MULTIPLE)
                  for k in range(1, buckets + 1)}
        return cls(tuple(sorted(widths)), cfg)

    def width(self, longest: int) -> int:
        if self.widths and longest <= self.widths[-1]:
            return next(w for w in self.widths if w >= longest)
        return -(-longest // WIDTH_MULTIPLE) * WIDTH_MULTIPLE

    def predictions(self, found: int, rows: int, width: int) -> int:
        """Positions to pad `found` predictions to."""
        if self.masking is not None and width in self.widths:
            return rows * prediction_budget(self.masking, width)
        return -(-found // PREDICTIONS_MULTIPLE) * PREDICTIONS_MULTIPLE


def collate(instances: list[Instance], cfg: MaskingConfig, cls_id: int, sep_id: int, pad_id: int,
            rngs: list[np.random.Generator], shapes: Shapes = Shapes()) -> Batch:
    """Pad to the shapes `shapes` gives and mask each pair with its own generator."""
    width = shapes.width(max(i.length for i in instances))
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
    pad = shapes.predictions(len(positions), n, width) - len(positions)
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
                 rank: int = 0, world_size: int = 1, chunk_start: str = "document", shapes: Shapes = Shapes()):
        self.docs, self.objective, self.cfg = docs, objective, cfg
        self.cls_id, self.sep_id, self.pad_id = special
        self.max_seq_len, self.batch_size, self.seed = max_seq_len, batch_size, seed
        self.short_seq_prob, self.rank, self.world_size = short_seq_prob, rank, world_size
        self.chunk_start, self.shapes = chunk_start, shapes
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
        rows, step_batch = range(self.rank, self.batch_size, self.world_size), self.epoch_batches(epoch)[index]
        instances = [step_batch[r] for r in rows]
        # One generator per row of the global batch: masks do not depend on the rank count.
        rngs = [np.random.default_rng([self.seed, 1_000_003, step, r]) for r in rows]
        batch = collate(instances, self.cfg, self.cls_id, self.sep_id, self.pad_id, rngs, self.shapes)
        batch.step_tokens = sum(i.length for i in step_batch)
        return batch

    def epoch_of(self, step: int) -> float:
        epoch, index = self.locate(step)
        return epoch + index / max(1, self._epoch_sizes[epoch])


class BatchesAhead:
    """The batches of steps `first`, `first` + 1, ... made by a worker process up to `depth` steps
    ahead of the step that takes them (on CUDA in pinned memory, copied to the device without
    blocking), so that neither the device nor the training thread waits for the host to mask the
    next pairs: a thread in the training process held Python's lock while the step launched its
    kernels. The batches are `data.batch(step)`'s, unchanged: a pure function of (seed, step), so
    a resumed run sees the batches an uninterrupted one saw.

    The worker is forked where the platform can (the corpus is not copied, nor pickled); an error
    making a batch is raised, as it was, in the training thread. `waited` sums the seconds `take`
    spent waiting for a batch not yet made."""

    def __init__(self, data: PretrainingData, first: int, device: torch.device, depth: int = 2):
        from torch.utils.data import DataLoader

        self.device, self.next, self.waited = device, first, 0.0
        fork = "fork" in multiprocessing.get_all_start_methods()
        # its own generator: a loader draws its workers' seed from the global one, which would then differ
        # between a run and its resume, and with it every dropout mask after the resume
        self._loader = DataLoader(_Steps(data, first), batch_size=None, num_workers=1, prefetch_factor=depth,
                                  pin_memory=device.type == "cuda", multiprocessing_context="fork" if fork else None,
                                  generator=torch.Generator())
        self._items = iter(self._loader)

    def take(self, step: int) -> Batch:
        """The batch of `step` (the next one in order) on the device."""
        if step != self.next:
            raise ValueError(f"batches are made in order: asked for step {step}, the next is {self.next}")
        start = time.perf_counter()
        batch, err = next(self._items)
        self.waited += time.perf_counter() - start
        if err is not None:
            raise err
        self.next += 1
        return batch.to(self.device)

    def close(self) -> None:
        del self._items  # ends the worker

    def __enter__(self) -> BatchesAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class _Steps(torch.utils.data.IterableDataset):
    """(batch(step), None) for step = first, first + 1, ..., or (None, the error) once a batch fails."""

    def __init__(self, data: PretrainingData, first: int):
        self.data, self.first = data, first

    def __iter__(self) -> Iterator[tuple[Batch | None, BaseException | None]]:
        for step in itertools.count(self.first):
            try:
                yield self.data.batch(step), None
            except Exception as err:  # handed to the training thread, raised there as it was
                yield None, err
                return


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
