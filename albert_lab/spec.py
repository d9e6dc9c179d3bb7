"""ModelSpec: one typed description of an ALBERT- or BERT-style encoder.

The paper's design choices are fields here: the factorised embedding (E vs H), the
cross-layer sharing strategy and its groups, dropout, and the inter-sentence
objective. Everything else (models, parameter counts, training) is derived from it.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Literal, get_args

from albert_lab.errors import SpecError
from albert_lab.fields import check_types, field_names, unknown_field

Family = Literal["albert", "bert"]
Sharing = Literal["all", "attention", "ffn", "none"]
Objective = Literal["sop", "nsp", "none"]
Init = Literal["average", "stepwise", "lower"]  # how albertize starts each shared block (albert_lab.convert)
Half = Literal["attention", "FFN"]  # a block's two halves, each with its closing LayerNorm
HALVES: tuple[Half, ...] = ("attention", "FFN")


@dataclass(frozen=True)
class SharingRule:
    """What the layers of one sharing group share (the paper's Table 4)."""

    label: str  # the paper's name
    shares: tuple[Half, ...]  # the halves of a block the group's layers share, in forward order

    @property
    def whole_block(self) -> bool:
        """The whole block is shared: transformers' own layer groups (num_hidden_groups = N)
        hold it. Otherwise each layer has a module of its own, and the shared half is tied."""
        return self.shares == HALVES

    @property
    def tied(self) -> bool:
        """One module per layer with the shared half tied across the group (models.tie_shared_modules)."""
        return bool(self.shares) and not self.whole_block


# The one home of the sharing strategies: models, params, convert, reapply and gradflow read it;
# a new strategy is a row here (and its name in `Sharing`, which tests keep equal to these keys).
SHARING: dict[str, SharingRule] = {
    "all": SharingRule("all-shared", HALVES),
    "attention": SharingRule("shared-attention", ("attention",)),
    "ffn": SharingRule("shared-FFN", ("FFN",)),
    "none": SharingRule("not-shared", ()),
}
SHARING_LABELS: dict[str, str] = {name: rule.label for name, rule in SHARING.items()}


def derived_heads(hidden: int) -> int:
    """Heads when not given: H // 64 (the paper's models: H/64), or where that does not divide H, the divisor of
    H nearest H/64 (4,092 has 62; H // 64 = 63 made every such H an error about 63 heads nobody asked for)."""
    heads = max(1, hidden // 64)
    if hidden <= 0 or hidden % heads == 0:  # every H that had heads before keeps them (a run's command stays its run)
        return heads
    divisors = {d for low in range(1, math.isqrt(hidden) + 1) if hidden % low == 0 for d in (low, hidden // low)}
    return min(divisors, key=lambda d: (abs(d - hidden / 64), d))


def derived_ffn(hidden: int) -> int:
    """FFN size when not given: 4H, as in every model of the paper."""
    return 4 * hidden


@dataclass(frozen=True)
class ModelSpec:
    """An encoder plus its pretraining heads. `None` fields take the paper's defaults."""

    family: Family = "albert"  # albert: factorised embedding + sharing; bert: neither
    vocab_size: int = 30000  # V: SentencePiece pieces (30,000 in the paper)
    embedding_size: int | None = None  # E: token embedding width; ALBERT 128, BERT = H
    hidden_size: int = 768  # H: width of every transformer layer
    num_layers: int = 12  # L: layer applications (not unique layers when shared)
    num_heads: int | None = None  # attention heads; default H / 64
    ffn_size: int | None = None  # feed-forward inner size; default 4H
    sharing: Sharing | None = None  # which parameters the L layers share (Table 4); default all (ALBERT), none (BERT)
    num_groups: int | None = None  # N sharing groups of L/N layers (sec. 4.5); default 1, L when not shared
    inner_group_num: int = 1  # blocks run per layer application (reference code)
    dropout: float = 0.0  # ALBERT removes dropout (Table 8); BERT used 0.1
    max_positions: int = 512  # learned position embeddings
    type_vocab_size: int = 2  # segment A / segment B
    objective: Objective = "sop"  # inter-sentence loss the pair head is trained with
    activation: str | None = None  # default gelu_new (ALBERT) / gelu (BERT), as in transformers
    # Relaxed sharing (albert_lab/relaxed.py): each layer application adds a rank-r correction to the shared
    # weight matrices of each shared half, and keeps its own biases and LayerNorms. 0: the plain shared model.
    rank_attention: int = 0  # rank of the corrections to Q, K, V and the attention output
    rank_ffn: int = 0  # rank of the corrections to the FFN's two matrices

    def __post_init__(self) -> None:
        _check_choice("family", self.family, Family)
        if self.sharing is None:  # the BERT rule lives here: no sharing, E = H (below)
            object.__setattr__(self, "sharing", "all" if self.family == "albert" else "none")
        _check_choice("sharing", self.sharing, Sharing)
        _check_choice("objective", self.objective, Objective)
        for name in ("vocab_size", "hidden_size", "num_layers", "inner_group_num", "max_positions", "type_vocab_size"):
            _check_positive(name, getattr(self, name))
        defaults = {
            "embedding_size": 128 if self.family == "albert" else self.hidden_size,
            "num_heads": derived_heads(self.hidden_size),
            "ffn_size": derived_ffn(self.hidden_size),
            "num_groups": self.num_layers if self.sharing == "none" else 1,
            "activation": "gelu_new" if self.family == "albert" else "gelu",
        }
        for name, value in defaults.items():
            if getattr(self, name) is None:
                object.__setattr__(self, name, value)
        for name in ("embedding_size", "num_heads", "ffn_size", "num_groups"):
            _check_positive(name, getattr(self, name))
        self._check_consistency()

    def _check_consistency(self) -> None:
        if self.hidden_size % self.num_heads:
            raise SpecError("num_heads", f"hidden_size {self.hidden_size} must be divisible by num_heads {self.num_heads}; "
                            f"allowed: divisors of {self.hidden_size}, e.g. {_divisors_near(self.hidden_size, self.num_heads)}")
        if self.num_groups > self.num_layers or self.num_layers % self.num_groups:
            raise SpecError("num_groups", f"{self.num_groups} must divide num_layers {self.num_layers}; "
                            f"allowed: {_divisors(self.num_layers)[:12]}")
        if self.sharing == "none" and self.num_groups != self.num_layers:
            raise SpecError("num_groups", f"not-shared layers form one group per layer ({self.num_layers}), got {self.num_groups}")
        self._check_ranks()
        if not 0.0 <= self.dropout < 1.0:
            raise SpecError("dropout", f"{self.dropout} is not a probability in [0, 1)")
        if self.family == "bert":
            if self.embedding_size != self.hidden_size:
                raise SpecError("embedding_size", f"BERT has no factorised embedding: E must equal H ({self.hidden_size}), "
                                f"got {self.embedding_size}; use family 'albert' for E != H")
            if self.sharing != "none":
                raise SpecError("sharing", f"BERT shares no layers: allowed 'none', got {self.sharing!r}; use family 'albert' to share")
            if self.inner_group_num != 1:
                raise SpecError("inner_group_num", "BERT runs one block per layer: allowed 1")

    def _check_ranks(self) -> None:
        for half, name in zip(HALVES, ("rank_attention", "rank_ffn")):
            rank = getattr(self, name)
            if isinstance(rank, bool) or not isinstance(rank, int) or rank < 0:
                raise SpecError(name, f"must be a whole number >= 0, got {rank!r}")
            if rank and half not in self.sharing_rule.shares:
                raise SpecError(name, f"relaxes the shared {half} matrices; this model's {half} is not shared "
                                f"(sharing {self.sharing!r}): allowed 0")
            if rank > (full := self.full_rank(half)):
                raise SpecError(name, f"{rank} is above full rank: the {half} matrices have rank at most {full}")
        if self.relaxed and self.inner_group_num != 1:
            raise SpecError("inner_group_num", "relaxed sharing corrects one block per layer application: allowed 1")

    # ---- derived -------------------------------------------------------------------
    def full_rank(self, half: Half) -> int:
        """The rank at which a correction to one of `half`'s matrices is any matrix of its shape:
        min(rows, columns) (H for attention's H x H maps; min(H, FFN size) for the FFN's)."""
        return self.hidden_size if half == "attention" else min(self.hidden_size, self.ffn_size)

    @property
    def relaxed(self) -> bool:
        """Each layer application corrects the shared matrices (rank > 0 on some half)."""
        return bool(self.rank_attention or self.rank_ffn)

    @property
    def ranks(self) -> dict[Half, int]:
        return {"attention": self.rank_attention, "FFN": self.rank_ffn}

    @property
    def per_layer_modules(self) -> bool:
        """One module per layer application (transformers' num_hidden_groups = L), the shared parts tied
        across each group (models.tie_shared_modules): partial sharing, and every relaxed model."""
        return self.family == "albert" and (self.sharing_rule.tied or self.relaxed)

    @property
    def factorised(self) -> bool:
        """True when tokens go V -> E -> H (always for ALBERT, even with E == H)."""
        return self.family == "albert"

    @property
    def sharing_rule(self) -> SharingRule:
        return SHARING[self.sharing]

    @property
    def group_of_layer(self) -> list[int]:
        """Sharing group of each layer application (see `layer_group`)."""
        return [layer_group(i, self.num_layers, self.num_groups) for i in range(self.num_layers)]

    @property
    def label(self) -> str:
        return self.label_with(self.objective.upper())

    def label_with(self, objective: str) -> str:
        """The label with the objective in the caller's words ('pair objective not recorded'
        for a folder whose files never say: the spec's objective is then only a default)."""
        share = SHARING_LABELS[self.sharing] + (f" in {self.num_groups} groups" if 1 < self.num_groups < self.num_layers else "")
        if self.relaxed:
            share += ", relaxed " + relaxed_words(self)
        return f"{self.family.upper()} L={self.num_layers} H={self.hidden_size} E={self.embedding_size} {share}, {objective}"

    def replace(self, **changes: Any) -> ModelSpec:
        """A copy with fields changed; derived defaults are recomputed unless given."""
        base = {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}
        for name in ("sharing", "embedding_size", "num_heads", "ffn_size", "num_groups", "activation"):
            if name not in changes and _was_default(self, name):
                base[name] = None
        base.update(changes)
        return ModelSpec(**base)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ModelSpec:
        check_types(cls, data, SpecError, "spec")
        if (unknown := unknown_field(cls, data)) is not None:  # '' is a key too
            raise SpecError(unknown, f"unknown field; allowed: {field_names(cls)}")
        return cls(**data)

    @classmethod
    def from_name(cls, name: str) -> ModelSpec:
        try:
            return PRESETS[name]
        except KeyError:
            raise SpecError("preset", f"unknown preset {name!r}; allowed: {', '.join(PRESETS)}") from None


def transformers_fields(spec: ModelSpec) -> dict[str, Any]:
    """The fields of the transformers config that builds `spec`, model_type included:
    models.hf_config makes the config of them, and the checkpoint reader checks a folder's
    config.json against them (a config edited under its albert_lab.json builds another model)."""
    fields: dict[str, Any] = dict(
        model_type=spec.family, vocab_size=spec.vocab_size, hidden_size=spec.hidden_size, num_hidden_layers=spec.num_layers,
        num_attention_heads=spec.num_heads, intermediate_size=spec.ffn_size, hidden_act=spec.activation,
        hidden_dropout_prob=spec.dropout, attention_probs_dropout_prob=spec.dropout, max_position_embeddings=spec.max_positions,
        type_vocab_size=spec.type_vocab_size)
    if spec.family == "albert":  # partial sharing needs a module per layer, tied afterwards
        groups = spec.num_layers if spec.per_layer_modules else spec.num_groups
        fields.update(embedding_size=spec.embedding_size, num_hidden_groups=groups,
                      inner_group_num=spec.inner_group_num, classifier_dropout_prob=spec.dropout)
    return fields


def relaxed_words(spec: ModelSpec) -> str:
    """'rank 16', or per half where they differ: 'rank 8 attention, 32 FFN'."""
    shared = [half for half in HALVES if half in spec.sharing_rule.shares]
    ranks = [spec.ranks[half] for half in shared]
    if len(set(ranks)) == 1:
        return f"rank {ranks[0]}"
    return "rank " + ", ".join(f"{spec.ranks[half]} {half}" for half in shared)


def forward_cost(spec: ModelSpec) -> int:
    """A forward pass's cost per token, up to a constant: H^2 per layer application (what
    the progress of a scoring, and the app's time estimates, are weighted by)."""
    return spec.hidden_size ** 2 * spec.num_layers * spec.inner_group_num


def layer_group(layer: int, num_layers: int, num_groups: int) -> int:
    """The sharing group that layer application `layer` (0-based) runs, exactly as
    transformers' AlbertTransformer computes it: int(layer / (L / N)). The reference
    code's int(layer / L * N) is the same number mathematically but not in floating
    point (L = N = 22, layer 15: int(14.999999999999998) = 14), and the model is what counts."""
    return int(layer / (num_layers / num_groups))


def _was_default(spec: ModelSpec, name: str) -> bool:
    """Whether a derived field holds the value its default rule would give."""
    probe = ModelSpec(**{**spec.to_dict(), name: None})
    return getattr(probe, name) == getattr(spec, name)


def _check_choice(name: str, value: object, choices: Any) -> None:
    allowed = get_args(choices)
    if value not in allowed:
        raise SpecError(name, f"{value!r} is not allowed; allowed: {', '.join(map(repr, allowed))}")


def _check_positive(name: str, value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise SpecError(name, f"must be a positive integer, got {value!r}")


def _divisors(n: int) -> list[int]:
    """The divisors of n, ascending, in O(sqrt n) (a config's 1e9 layers must not take a minute)."""
    small = [d for d in range(1, math.isqrt(n) + 1) if n % d == 0]
    return sorted({*small, *(n // d for d in small)})


def _divisors_near(n: int, k: int) -> list[int]:
    return sorted(_divisors(n), key=lambda d: abs(d - k))[:3]


_BERT = dict(family="bert", vocab_size=30522, sharing="none", objective="nsp")
_ALBERT = dict(family="albert", vocab_size=30000, embedding_size=128, sharing="all", objective="sop")
# Lab presets: CPU-sized models this project trains and ships (see checkpoints/).
_LAB = dict(vocab_size=8000, hidden_size=256, num_layers=6, num_heads=4, max_positions=128)

PRESETS: dict[str, ModelSpec] = {
    # The paper's Table 1.
    "bert-base": ModelSpec(**_BERT, hidden_size=768, num_layers=12, dropout=0.1),
    "bert-large": ModelSpec(**_BERT, hidden_size=1024, num_layers=24, dropout=0.1),
    "albert-base": ModelSpec(**_ALBERT, hidden_size=768, num_layers=12),
    "albert-large": ModelSpec(**_ALBERT, hidden_size=1024, num_layers=24),
    "albert-xlarge": ModelSpec(**_ALBERT, hidden_size=2048, num_layers=24),
    "albert-xxlarge": ModelSpec(**_ALBERT, hidden_size=4096, num_layers=12),
    # Lab presets.
    "lab-albert": ModelSpec(family="albert", embedding_size=128, sharing="all", objective="sop", **_LAB),
    "lab-bert": ModelSpec(family="bert", sharing="none", objective="nsp", **_LAB),
    "lab-tiny": ModelSpec(family="albert", vocab_size=2000, embedding_size=32, hidden_size=64, num_layers=4,
                          num_heads=2, max_positions=128, sharing="all", objective="sop"),
}
PRESET_NOTES: dict[str, str] = {
    "bert-base": "Table 1: 108M params, BERT's NSP objective",
    "bert-large": "Table 1: 334M params",
    "albert-base": "Table 1: 12M params",
    "albert-large": "Table 1: 18M params",
    "albert-xlarge": "Table 1: 60M params",
    "albert-xxlarge": "Table 1: 235M params (text: 233M)",
    "lab-albert": "shipped ALBERT checkpoints: all-shared, E=128 < H=256, trains in ~30 min on 2 CPU cores",
    "lab-bert": "shipped BERT baseline: not shared, E = H = 256, same depth and width",
    "lab-tiny": "seconds-scale runs for trying the training page",
}
