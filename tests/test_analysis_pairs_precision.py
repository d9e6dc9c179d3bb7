"""Pair scores on a GPU: the precision scoring_precision picks from the derived rounding bound, and TF32
switched on for the scoring alone. The bound is checked on the CPU against the roundings themselves:
TF32 emulated (every matmul's inputs rounded to 10 mantissa bits), bf16 under the CPU's own autocast."""

from dataclasses import replace

import numpy as np
import pytest
import torch
from conftest import ROOT
from torch.overrides import TorchFunctionMode

from albert_lab.analysis import pairs as scoring
from albert_lab.analysis.pairs import (
    BF16_PER_MATMUL,
    TF32_PER_MATMUL,
    pairs_frame,
    rounding_bound,
    score_pairs,
    scoring_precision,
    tf32_matmuls,
)
from albert_lab.checkpoint.load import load_checkpoint
from albert_lab.data.samples import sample_documents
from albert_lab.limits import SCORE_TOLERANCE
from albert_lab.models import pair_linear

CUDA = torch.device("cuda")  # a device object only: nothing is placed on it


def tf32(t):
    """`t` with float32 values rounded to TF32's 10 mantissa bits (to nearest)."""
    if not (isinstance(t, torch.Tensor) and t.dtype == torch.float32):
        return t
    return ((t.view(torch.int32) + 0x1000) & ~0x1FFF).view(torch.float32)


class TF32(TorchFunctionMode):
    """Inputs of every matmul rounded to TF32, as tensor cores read float32 with TF32 on."""

    F = torch.nn.functional
    MATMULS = {F.linear, F.scaled_dot_product_attention, torch.matmul, torch.bmm, torch.baddbmm, torch.addmm,
               torch.einsum, torch.Tensor.matmul, torch.Tensor.__matmul__}

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.MATMULS:
            args = tuple(tf32(a) for a in args)
            kwargs = {k: v if k == "attn_mask" else tf32(v) for k, v in kwargs.items()}
        return func(*args, **kwargs)


def sample_pairs(n: int = 12):
    segments = [(a, b) for d in sample_documents(16) for a, b in zip(d.segments, d.segments[1:])]
    return pairs_frame([a for a, _ in segments[:n]], [b for _, b in segments[:n]])


@pytest.mark.parametrize("name", ["albert-sop", "bert-sop-minilm"])
def test_rounded_scores_stay_within_the_derived_bound(name):
    """Trained pair heads (the shipped checkpoints), scored in full float32, with TF32-rounded matmul
    inputs and under bf16 autocast: each moves every score by less than its rounding_bound."""
    bundle, pairs = load_checkpoint(ROOT / "checkpoints" / name, device="cpu"), sample_pairs()
    exact = score_pairs(bundle, pairs)[["p_ab", "p_ba"]].to_numpy()
    with TF32():
        rounded = score_pairs(bundle, pairs)[["p_ab", "p_ba"]].to_numpy()
    halved = score_pairs(replace(bundle, dtype=torch.bfloat16), pairs)[["p_ab", "p_ba"]].to_numpy()
    assert 0 < np.abs(rounded - exact).max() <= rounding_bound(bundle.model, TF32_PER_MATMUL)
    assert 0 < np.abs(halved - exact).max() <= rounding_bound(bundle.model, BF16_PER_MATMUL)


def test_the_precision_follows_the_bound():
    """On CUDA: TF32 for the trained heads shipped (bf16 would not keep the tolerance), bf16 where even it
    does (a head of small weights), full float32 where TF32 would not (large weights); as loaded elsewhere."""
    shipped = load_checkpoint(ROOT / "checkpoints" / "albert-sop", device="cpu")
    assert scoring_precision(shipped) == (torch.float32, False)
    assert scoring_precision(replace(shipped, dtype=torch.bfloat16, device=CUDA)) == (torch.bfloat16, False)
    on_gpu = replace(shipped, device=CUDA)
    assert rounding_bound(shipped.model, BF16_PER_MATMUL) > SCORE_TOLERANCE >= rounding_bound(shipped.model, TF32_PER_MATMUL)
    assert scoring_precision(on_gpu) == (torch.float32, True)
    weight = pair_linear(shipped.model).weight
    with torch.no_grad():
        weight.mul_(0.99 * SCORE_TOLERANCE / rounding_bound(shipped.model, BF16_PER_MATMUL))  # bf16's bound: just within
        assert scoring_precision(on_gpu) == (torch.bfloat16, False)
        weight.mul_(2 * BF16_PER_MATMUL / TF32_PER_MATMUL)  # TF32's bound: about twice the tolerance
        assert scoring_precision(on_gpu) == (torch.float32, False)


def test_tf32_is_on_while_the_pairs_are_scored_and_only_then(bundles, monkeypatch):
    seen = []

    def spy(model, pairs, device=None, dtype=None, progress=None):
        seen.append((torch.backends.cuda.matmul.fp32_precision, dtype))
        return np.full(len(pairs.ids), 0.5)

    before = torch.backends.cuda.matmul.fp32_precision
    monkeypatch.setattr(scoring, "encoded_probabilities", spy)
    monkeypatch.setattr(scoring, "scoring_precision", lambda bundle: (torch.float32, True))
    scores = score_pairs(replace(bundles[0], device=CUDA), sample_pairs(3))
    assert seen == [("tf32", torch.float32)] and (scores.p_ab == 0.5).all()
    assert torch.backends.cuda.matmul.fp32_precision == before
    with pytest.raises(RuntimeError), tf32_matmuls(True):
        raise RuntimeError("a failed batch")
    assert torch.backends.cuda.matmul.fp32_precision == before
    first, second = tf32_matmuls(True), tf32_matmuls(True)  # two visitors' scorings, overlapping
    first.__enter__(), second.__enter__()
    first.__exit__(None, None, None)
    assert torch.backends.cuda.matmul.fp32_precision == "tf32"  # the second still scores
    second.__exit__(None, None, None)
    assert torch.backends.cuda.matmul.fp32_precision == before
