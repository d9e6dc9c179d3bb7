"""Forward-pass token budgets by device: a CPU cache's size on the CPU, free memory on a GPU."""

from types import SimpleNamespace

import torch
from torch import nn

from albert_lab.analysis.common import GPU_MAX_BATCH_TOKENS, GPU_MEMORY_SHARE, batch_tokens_for


class Placed(nn.Module):
    """A model's config on a device, without weights there."""

    def __init__(self, device: str, **config):
        super().__init__()
        self.config = SimpleNamespace(**config)
        self.device_ = torch.device(device)

    def parameters(self, recurse: bool = True):
        yield SimpleNamespace(device=self.device_)


BASE = dict(intermediate_size=3072, hidden_size=768, num_attention_heads=12, max_position_embeddings=512)


def test_cpu_budget_is_cache_sized():
    assert batch_tokens_for(Placed("cpu", **BASE)) == 2048  # 6,291,456 / 3072
    assert batch_tokens_for(Placed("cpu", **{**BASE, "intermediate_size": 64})) == 16384  # capped
    assert batch_tokens_for(Placed("mps", **BASE)) == 2048


def test_cuda_budget_follows_free_memory(monkeypatch):
    gib = 1 << 30
    memory = {"free": 80 * gib, "reserved": 6 * gib, "allocated": 2 * gib}
    monkeypatch.setattr(torch.cuda, "mem_get_info", lambda device=None: (memory["free"], 141 * gib))
    monkeypatch.setattr(torch.cuda, "memory_reserved", lambda device=None: memory["reserved"])
    monkeypatch.setattr(torch.cuda, "memory_allocated", lambda device=None: memory["allocated"])
    per_token = 2 * 4 * (3072 + 4 * 768 + 12 * 512)  # bytes: twice a layer's live fp32 activations per token
    assert batch_tokens_for(Placed("cuda", **BASE)) == min(GPU_MAX_BATCH_TOKENS, int(GPU_MEMORY_SHARE * 84 * gib // per_token))
    memory.update(free=1 * gib, reserved=0, allocated=0)  # a nearly full GPU: fewer tokens, never below 2048
    assert batch_tokens_for(Placed("cuda", **BASE)) == int(GPU_MEMORY_SHARE * gib // per_token)
    memory.update(free=1 << 20)
    assert batch_tokens_for(Placed("cuda", **BASE)) == 2048
