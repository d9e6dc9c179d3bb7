"""Training attention: SDPA and eager with the padding bias train alike, finite, on padded batches."""

import torch
from conftest import tiny_spec

from albert_lab.data.batching import Batch
from albert_lab.kernels import TRAINING_SDPA, attention_bias, autocast, set_attention, tune_for_training
from albert_lab.models import Parts, build_model
from albert_lab.objective import PretrainingLoss
from albert_lab.training.optim import build_optimizer

LENGTHS = [32, 21, 9, 3, 17, 30]  # real tokens per row of a batch 32 wide: every row but one padded


def padded_batch(step: int, vocab: int = 100) -> Batch:
    g = torch.Generator().manual_seed(step)
    width, n = max(LENGTHS), len(LENGTHS)
    mask = (torch.arange(width)[None, :] < torch.tensor(LENGTHS)[:, None]).long()
    ids = torch.randint(5, vocab, (n, width), generator=g) * mask  # padding id 0
    types = (torch.arange(width)[None, :] >= torch.tensor(LENGTHS)[:, None] // 2).long() * mask
    positions = torch.cat([row * width + torch.randperm(length, generator=g)[:max(1, length // 6)]
                           for row, length in enumerate(LENGTHS)])
    labels = torch.randint(5, vocab, (len(positions),), generator=g)
    return Batch(input_ids=ids, token_type_ids=types, attention_mask=mask, mlm_positions=positions, mlm_labels=labels,
                 pair_labels=torch.randint(0, 2, (n,), generator=g))


def train(implementation: str, steps: int, dtype: torch.dtype | None) -> tuple[list[float], torch.nn.Module]:
    model = tune_for_training(build_model(tiny_spec(100, max_positions=64), seed=0)).train()
    set_attention(model, implementation)
    loss_fn, optimizer = PretrainingLoss(model, "sop"), build_optimizer(model, "lamb", 1e-2)
    losses = []
    for step in range(steps):
        with autocast(torch.device("cpu"), dtype):
            loss = loss_fn(padded_batch(step)).loss
        loss.backward()
        optimizer.step()
        optimizer.zero_grad(set_to_none=True)
        losses.append(float(loss.detach()))
    return losses, model


def test_sdpa_and_eager_train_alike_on_padded_batches_in_bf16():
    """Both finite, and the same losses within what bf16 can tell apart. The two paths differ
    only in where the attention's probabilities are rounded (eager rounds them to bf16 before
    P @ V, SDPA keeps fp32 inside the kernel): a relative error of at most u = 2^-8 per
    attention output, carried through the 3 layers (each adds at most u to what reaches the
    loss) and through 4 steps of updates of size lr, each of which moves the loss by at most
    its relative error again: |difference| <= (layers + steps) x u x |loss| = 7 u |loss|."""
    u = 2.0 ** -8
    sdpa, _ = train(TRAINING_SDPA, 4, torch.bfloat16)
    eager, _ = train("eager", 4, torch.bfloat16)
    assert all(torch.isfinite(torch.tensor(sdpa + eager)))
    for a, b in zip(sdpa, eager):
        assert abs(a - b) <= 7 * u * abs(b), (sdpa, eager)


def test_padding_bias_gives_transformers_own_outputs():
    """fp32: the (B, 1, 1, T) bias gives what transformers' (B, 1, T, T) mask gives, on both
    attention paths; padded positions change nothing at the real tokens (fp32 sums in another
    order: 1e-5 on outputs of size ~1)."""
    stock = build_model(tiny_spec(100, max_positions=64), seed=0).eval()
    batch = padded_batch(0)
    inputs = dict(input_ids=batch.input_ids, attention_mask=batch.attention_mask, token_type_ids=batch.token_type_ids)
    with torch.no_grad():
        expected = Parts.of(stock).encoder(**inputs).last_hidden_state
        for implementation in ("eager", TRAINING_SDPA):
            tuned = tune_for_training(build_model(tiny_spec(100, max_positions=64), seed=0)).eval()
            set_attention(tuned, implementation)
            got = Parts.of(tuned).encoder(**inputs).last_hidden_state
            real = batch.attention_mask.bool()
            assert (got[real] - expected[real]).abs().max() < 1e-5, implementation


def test_attention_bias_is_finite_and_never_overflows():
    mask = torch.tensor([[1, 1, 0], [0, 0, 0], [1, 1, 1]])
    for dtype in (torch.float32, torch.bfloat16, torch.float16):
        bias = attention_bias(mask, dtype)
        assert bias.shape == (3, 1, 1, 3) and bias.dtype == dtype and bool(torch.isfinite(bias).all())
        assert bool(torch.isfinite(bias - 1e4 * (dtype != torch.float16) - 100).all())  # scores added: still finite
        assert float(bias[0, 0, 0, 0]) == 0.0 and float(bias[0, 0, 0, 2]) < -1e4
        q = torch.randn(3, 2, 3, 8, dtype=dtype, requires_grad=True)
        out = torch.nn.functional.scaled_dot_product_attention(q, q, q, attn_mask=bias)  # row 1 is all padding
        out.float().sum().backward()
        assert bool(torch.isfinite(out).all()) and bool(torch.isfinite(q.grad).all())
    assert attention_bias(torch.ones(2, 4, dtype=torch.long), torch.float32) is None  # nothing padded: no mask at all


def test_an_unpadded_batch_trains_without_a_mask_decided_on_the_host(monkeypatch):
    """The GPU path's attention (SDPA, flash or memory-efficient) gets no mask for a batch with no
    padding, so flash attention can run it; the choice reads only the counts the batch made on the
    host: a mask that cannot be read (on the meta device) is never touched. A padded batch keeps its bias."""
    seen = []
    original = torch.nn.functional.scaled_dot_product_attention

    def spy(*args, **kwargs):
        seen.append(kwargs.get("attn_mask", args[3] if len(args) > 3 else None))
        return original(*args, **kwargs)

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", spy)
    model = tune_for_training(build_model(tiny_spec(100, max_positions=64, num_layers=2), seed=0)).train()
    set_attention(model, TRAINING_SDPA)
    padded = padded_batch(0)
    full = Batch(**{**padded.tensors(), "attention_mask": torch.ones_like(padded.attention_mask)})
    full = Batch(**{**full.tensors(), "attention_mask": torch.empty(full.attention_mask.shape, device="meta")},
                 counts=(full.input_ids.numel(), len(full.mlm_positions)))
    PretrainingLoss(model, "sop")(full).loss.backward()
    assert len(seen) == 2 and all(mask is None for mask in seen)
    seen.clear()
    PretrainingLoss(model, "sop")(padded.to(torch.device("cpu"))).loss.backward()
    assert len(seen) == 2 and all(mask is not None and mask.shape == (6, 1, 1, 32) for mask in seen)
