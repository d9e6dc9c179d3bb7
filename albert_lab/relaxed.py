"""Relaxed sharing (Bae et al., ICLR 2025, "Relaxed Recursive Transformers"): between the paper's
all-shared ALBERT and a BERT with every layer its own.

Each layer application l keeps the shared weight matrix W_g of its sharing group g and adds a
correction of rank r: it computes x (W_g + B_l A_l)^T + b_l, with A_l (r x in) and B_l (out x r)
its own (the matrix W_g + B_l A_l made first: cheaper than two thin products for any batch of more
than a few hundred tokens, and made once and kept where no gradient is taken). Its biases and
LayerNorms (2% of a block) are its own too, so that at full rank (r = min(out, in)) the model is any BERT of its shape again, and
at rank 0 it is the plain shared ALBERT (the spec then is not relaxed: no correction at all).

In memory: one transformers module per layer application (num_hidden_groups = L, as partial
sharing has), whose shared half's six linear maps (query, key, value, attention output, FFN
in, FFN out) are `RelaxedLinear`s; `tie_relaxed` makes the layers of a group hold one and the
same `shared` Parameter (its gradient sums over the applications, as a shared block's does).
On disk each shared matrix is written once, under its group's first layer (`shared_keys` names the
copies left out).
"""

from __future__ import annotations

import torch
from torch import nn
from torch.nn import functional as F

from albert_lab.spec import HALVES, Half, ModelSpec

# AlbertLayer's linear maps of each half: the six a relaxed model corrects
RELAXED_MAPS: dict[Half, tuple[str, ...]] = {
    "attention": ("attention.query", "attention.key", "attention.value", "attention.dense"),
    "FFN": ("ffn", "ffn_output"),
}


def half_of(name: str) -> Half:
    """The half of a block a map of RELAXED_MAPS belongs to."""
    return next(half for half, names in RELAXED_MAPS.items() if name in names)


class RelaxedLinear(nn.Module):
    """x (W + B A)^T + b, W shared with the other applications of its group, A (r x in), B (out x r)
    and b this application's own. `weight` is the matrix it applies, W + B A."""

    def __init__(self, in_features: int, out_features: int, rank: int) -> None:
        super().__init__()
        self.in_features, self.out_features, self.rank = in_features, out_features, rank
        self.shared = nn.Parameter(torch.empty(out_features, in_features))
        self.bias = nn.Parameter(torch.zeros(out_features))
        self.lora_a = nn.Parameter(torch.zeros(rank, in_features))
        self.lora_b = nn.Parameter(torch.zeros(out_features, rank))

    @classmethod
    def of(cls, linear: nn.Linear, rank: int) -> RelaxedLinear:
        """In place of `linear`: its weight as the shared matrix, its bias, and a correction B A = 0
        that can learn: A drawn as LoRA draws it (nn.Linear's init), B zero (both zero would stay so)."""
        relaxed = cls(linear.in_features, linear.out_features, rank).to(linear.weight.device, linear.weight.dtype)
        with torch.no_grad():
            relaxed.shared.copy_(linear.weight)
            relaxed.bias.copy_(linear.bias)
            if rank:
                nn.init.kaiming_uniform_(relaxed.lora_a, a=5 ** 0.5)
        return relaxed

    @property
    def weight(self) -> torch.Tensor:
        """The matrix this application applies (for analyses that read a layer's weights)."""
        return self.shared + self.lora_b @ self.lora_a

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """x (W + B A)^T + b, the matrix made first: out x in x r multiply-adds, where the two thin products
        x A^T, then B, cost tokens x r x (in + out), more whenever a batch holds over in x out / (in + out)
        tokens (192 at H = 384), as every training batch does. Autograd takes the gradient to W, A and B."""
        if not self.rank:
            return F.linear(x, self.shared, self.bias)
        if not torch.is_grad_enabled():  # inference: the matrix made once, kept while W, A and B stay
            return F.linear(x, self._merged(), self.bias)
        return F.linear(x, torch.addmm(self.shared, self.lora_b, self.lora_a), self.bias)

    def _merged(self) -> torch.Tensor:
        """W + B A, kept until one of the three changes (an optimizer step, a load, a move to another
        device or dtype bumps their version or storage). Tensors made under inference_mode count no
        versions; nothing here changes them in place."""
        key = tuple((p.data_ptr(), -1 if p.is_inference() else p._version, p.dtype, p.device)
                    for p in (self.shared, self.lora_a, self.lora_b))
        if getattr(self, "_merged_key", None) != key:
            with torch.no_grad():
                self._merged_weight = torch.addmm(self.shared, self.lora_b, self.lora_a)
            self._merged_key = key
        return self._merged_weight

    def extra_repr(self) -> str:
        return f"in_features={self.in_features}, out_features={self.out_features}, rank={self.rank}"


def encoder_layers(model: nn.Module) -> list[nn.Module]:
    """The AlbertLayer of each layer application (one module each in a relaxed model)."""
    groups = model.albert.encoder.albert_layer_groups if hasattr(model, "albert") else model.encoder.albert_layer_groups
    return [group.albert_layers[0] for group in groups]


def relaxed_maps(spec: ModelSpec) -> list[tuple[Half, str]]:
    """(half, map) of a relaxed model's maps of its shared halves: RelaxedLinears, corrected at the
    half's rank (a shared half of rank 0 keeps its matrices shared, uncorrected)."""
    if not spec.relaxed:
        return []
    return [(half, name) for half in HALVES if half in spec.sharing_rule.shares for name in RELAXED_MAPS[half]]


def relax_modules(model: nn.Module, spec: ModelSpec) -> None:
    """Replace the corrected maps of every layer by RelaxedLinears of the spec's ranks (their shared
    matrices not yet tied: `tie_relaxed`)."""
    for layer in encoder_layers(model):
        for half, name in relaxed_maps(spec):
            owner, _, attr = name.rpartition(".")
            parent = layer.get_submodule(owner) if owner else layer
            setattr(parent, attr, RelaxedLinear.of(getattr(parent, attr), spec.ranks[half]))


def tie_relaxed(model: nn.Module, spec: ModelSpec, check_equal: bool = False) -> None:
    """The layers of each sharing group hold their group's first layer's shared matrices (the same
    Parameter). With `check_equal`, copies that differ are refused (see models.tie_shared_modules)."""
    from albert_lab.errors import CheckpointError

    layers, first = encoder_layers(model), {}
    for index, group in enumerate(spec.group_of_layer):
        source = first.setdefault(group, index)
        if source == index:
            continue
        for _, name in relaxed_maps(spec):
            mine, theirs = layers[index].get_submodule(name), layers[source].get_submodule(name)
            if check_equal and not torch.equal(mine.shared.detach().cpu(), theirs.shared.detach().cpu()):
                raise CheckpointError(f"the checkpoint says layers {source} and {index} share {name}, but their shared "
                                      "matrices differ; the folder was edited or its albert_lab.json is wrong")
            mine.shared = theirs.shared


def shared_keys(spec: ModelSpec, prefix: str = "albert.") -> set[str]:
    """The state-dict names of tied copies of a shared matrix (every layer's but its group's first):
    left out on disk, where each shared matrix is written once."""
    first: dict[int, int] = {}
    keys = set()
    for index, group in enumerate(spec.group_of_layer):
        if first.setdefault(group, index) != index:
            keys |= {f"{prefix}encoder.albert_layer_groups.{index}.albert_layers.0.{name}.shared" for _, name in relaxed_maps(spec)}
    return keys

