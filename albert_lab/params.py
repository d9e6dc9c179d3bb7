"""Exact parameter and FLOP accounting, in closed form.

The formulas mirror transformers' module structure tensor by tensor (see
`models.py`), so no weights are allocated and no torch import is needed: the count
for ALBERT-xxlarge takes microseconds. Tests check every strategy against
`sum(p.numel())` of the materialised model and against a meta-device model.

Two counts per component:
- unique:  what memory holds; a shared block counts once.
- applied: what the forward pass runs; a shared block counts once per layer using it.
FLOPs are 2 x multiply-adds of the matrix products per token of a forward pass;
element-wise work (LayerNorm, softmax, GELU, bias adds) is left out.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, get_args

from albert_lab.spec import HALVES, Half, ModelSpec, Sharing

# Components in forward order. The paper's "params" column is the encoder model
# with pooler (transformers' AlbertModel / BertModel): every component but the heads.
COMPONENTS = (
    "word embeddings",
    "position/type embeddings + LayerNorm",
    "E->H projection",
    "attention",
    "FFN",
    "pooler",
    "MLM head",
    "pair head",
)
HEAD_COMPONENTS = ("MLM head", "pair head")


@dataclass(frozen=True)
class Component:
    name: str
    unique: int
    applied: int
    flops_per_token: float  # forward FLOPs per token at the report's sequence length


@dataclass(frozen=True)
class ParamReport:
    spec: ModelSpec
    seq_len: int
    components: tuple[Component, ...] = field(repr=False)

    def _sum(self, attr: str, heads: bool) -> Any:
        return sum(getattr(c, attr) for c in self.components if heads or c.name not in HEAD_COMPONENTS)

    @property
    def total(self) -> int:
        """Unique parameters of the encoder model incl. pooler: the paper's number."""
        return self._sum("unique", heads=False)

    @property
    def total_with_heads(self) -> int:
        """Unique parameters of the pretraining model (MLM head decoder tied to the embeddings)."""
        return self._sum("unique", heads=True)

    @property
    def applied(self) -> int:
        """Encoder parameters the forward pass applies (shared blocks counted per use)."""
        return self._sum("applied", heads=False)

    @property
    def flops_per_token(self) -> float:
        """Forward FLOPs per token of the encoder (incl. attention scores at seq_len)."""
        return self._sum("flops_per_token", heads=False)

    @property
    def mlm_flops_per_prediction(self) -> float:
        return next(c.flops_per_token for c in self.components if c.name == "MLM head")

    def by_component(self) -> dict[str, dict[str, float]]:
        return {c.name: {"unique": c.unique, "applied": c.applied, "flops_per_token": c.flops_per_token}
                for c in self.components}

    def to_dict(self) -> dict[str, Any]:
        return {
            "spec": self.spec.to_dict(),
            "seq_len": self.seq_len,
            "total": self.total,
            "total_with_heads": self.total_with_heads,
            "applied": self.applied,
            "flops_per_token": self.flops_per_token,
            "mlm_flops_per_prediction": self.mlm_flops_per_prediction,
            "by_component": self.by_component(),
        }


def linear(n_in: int, n_out: int) -> int:
    """Weight + bias of nn.Linear(n_in, n_out)."""
    return n_in * n_out + n_out


def layer_norm(n: int) -> int:
    return 2 * n


def half_sizes(spec: ModelSpec, half: Half) -> tuple[int, int]:
    """(matrices, vectors) of one block's half: attention's Q, K, V and output projection, the
    FFN's two maps; their biases and the LayerNorm that closes the half (post-LN), as in
    AlbertLayer / BertLayer."""
    h, f = spec.hidden_size, spec.ffn_size
    if half == "attention":
        return 4 * h * h, 4 * h + layer_norm(h)
    return 2 * h * f, f + h + layer_norm(h)


def correction_size(spec: ModelSpec, half: Half) -> int:
    """Parameters of one application's low-rank corrections to `half`'s matrices in a relaxed
    model: r x (in + out) per map (A is r x in, B out x r); 0 at rank 0."""
    h, f = spec.hidden_size, spec.ffn_size
    return spec.ranks[half] * (4 * 2 * h if half == "attention" else 2 * (h + f))


def unique_blocks(spec: ModelSpec) -> tuple[int, int]:
    """How many distinct (attention, FFN) blocks memory holds.

    all:       N groups x inner blocks, each a whole block;
    attention: attention per group, FFN per layer;
    ffn:       FFN per group, attention per layer;
    none:      everything per layer.
    """
    per_group = spec.num_groups * spec.inner_group_num
    per_layer = spec.num_layers * spec.inner_group_num
    attention, ffn = (per_group if half in spec.sharing_rule.shares else per_layer for half in HALVES)
    return attention, ffn


def unique_half(spec: ModelSpec, half: Half) -> int:
    """Distinct parameters of `half` over the whole encoder. A relaxed model holds each shared
    matrix once per group, and per application its own vectors and corrections."""
    matrices, vectors = half_sizes(spec, half)
    blocks = unique_blocks(spec)[HALVES.index(half)]
    if not spec.relaxed or half not in spec.sharing_rule.shares:
        return blocks * (matrices + vectors)
    return blocks * matrices + spec.num_layers * (vectors + correction_size(spec, half))


def count(spec: ModelSpec, seq_len: int = 512) -> ParamReport:
    """Parameters and forward FLOPs per token of `spec` at sequence length `seq_len`."""
    v, e, h, t = spec.vocab_size, spec.embedding_size, spec.hidden_size, seq_len
    applications = spec.num_layers * spec.inner_group_num
    # Each application: Q, K, V, O projections (and their corrections), scores QK^T and weights x V, then the FFN.
    attention, ffn = (sum(half_sizes(spec, half)) + correction_size(spec, half) for half in HALVES)
    attention_flops = 2 * 4 * h * h + 2 * correction_size(spec, "attention") + 2 * 2 * t * h
    ffn_flops = 2 * 2 * h * spec.ffn_size + 2 * correction_size(spec, "FFN")
    if spec.factorised:
        mlm = linear(h, e) + layer_norm(e) + v  # dense H->E, LayerNorm, bias; decoder tied to embeddings
        mlm_flops = 2 * h * e + 2 * e * v
    else:
        mlm = linear(h, h) + layer_norm(h) + v
        mlm_flops = 2 * h * h + 2 * h * v
    projection = linear(e, h) if spec.factorised else 0
    position = (spec.max_positions + spec.type_vocab_size) * e + layer_norm(e)
    pooler, pair = linear(h, h), linear(h, 2)
    rows = [
        Component("word embeddings", v * e, v * e, 0.0),
        Component("position/type embeddings + LayerNorm", position, position, 0.0),
        Component("E->H projection", projection, projection, 2.0 * e * h if spec.factorised else 0.0),
        Component("attention", unique_half(spec, "attention"), applications * attention, float(applications * attention_flops)),
        Component("FFN", unique_half(spec, "FFN"), applications * ffn, float(applications * ffn_flops)),
        Component("pooler", pooler, pooler, 2.0 * h * h / t),  # applied to [CLS] only
        Component("MLM head", mlm, mlm, float(mlm_flops)),  # per predicted token
        Component("pair head", pair, pair, 2.0 * h * 2 / t),
    ]
    return ParamReport(spec=spec, seq_len=seq_len, components=tuple(rows))


# ---- what a machine can hold ---------------------------------------------------------------
MAX_APPLICATIONS = 1024  # layer applications (num_layers x inner_group_num) a model may run: the paper's
# deepest is 48; a config with 1e9 layers is tiny when shared, but its forward pass never ends
TRAIN_BYTES_PER_PARAM = 16  # fp32 weights, gradients and the optimizer's two moments (LAMB, AdamW)


def memory_needed(spec: ModelSpec, batch_size: int = 0, seq_len: int = 128) -> int:
    """Bytes a model of `spec` takes: its fp32 weights alone (batch_size 0: loading to
    analyse), or training it on batches of batch_size x seq_len tokens (weights, gradients,
    optimizer state, and roughly the activations backward keeps per layer application:
    ~12 H + 2 FFN floats per token, plus heads x T attention scores)."""
    weights = count(spec).total_with_heads
    if not batch_size:
        return 4 * weights
    per_token = 12 * spec.hidden_size + 2 * spec.ffn_size + 2 * spec.num_heads * seq_len
    activations = 4 * batch_size * seq_len * spec.num_layers * spec.inner_group_num * per_token
    return TRAIN_BYTES_PER_PARAM * weights + activations


def machine_memory() -> tuple[int, int]:
    """(total, available) bytes of memory on this machine (Linux /proc/meminfo; else the
    physical memory for both)."""
    try:
        with open("/proc/meminfo") as handle:
            fields = dict(line.split(":", 1) for line in handle if ":" in line)
        total, available = (int(fields[k].split()[0]) * 1024 for k in ("MemTotal", "MemAvailable"))
        return total, available
    except (OSError, KeyError, ValueError):
        total = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
        return total, total


def fit_problem(spec: ModelSpec, batch_size: int = 0, seq_len: int = 128) -> str | None:
    """Why this machine cannot build (batch_size 0) or train a model of `spec`, or None:
    computed from the spec alone, before a weight is allocated."""
    applications = spec.num_layers * spec.inner_group_num
    if applications > MAX_APPLICATIONS:
        return (f"{spec.num_layers:,} layers x {spec.inner_group_num:,} inner blocks = {applications:,} layer applications, "
                f"more than {MAX_APPLICATIONS:,} (a forward pass would not end in useful time); use fewer layers")
    need = memory_needed(spec, batch_size, seq_len)
    total, available = machine_memory()
    if need <= available:
        return None
    what = "training it (weights, gradients, optimizer state and activations)" if batch_size else "its fp32 weights"
    return (f"{spec.label} has {count(spec).total_with_heads:,} parameters; {what} would take {need / 2**30:,.1f} GiB, "
            f"more than the {available / 2**30:,.1f} GiB this machine has available ({total / 2**30:,.1f} GiB in all); "
            "choose a smaller spec" + (" or batch" if batch_size else ""))


def human(n: float) -> str:
    """12,345,678 -> '12.3M' (the paper's style of rounding); past trillions, 1.30e+21."""
    if abs(n) >= 1e15:
        return f"{n:.2e}"
    for unit, scale in (("T", 1e12), ("B", 1e9), ("M", 1e6), ("K", 1e3)):
        if abs(n) >= scale:
            return f"{n / scale:.1f}{unit}"
    return f"{n:.0f}"


def sweep(base: ModelSpec, field_name: str, values: list[int], strategies: tuple[str, ...] = get_args(Sharing),
          seq_len: int = 512) -> list[dict[str, Any]]:
    """Parameters and FLOPs/token as one field (embedding_size, hidden_size, num_layers)
    varies, per sharing strategy: tidy rows for a line chart."""
    rows = []
    for sharing in strategies:
        for value in values:
            changes: dict[str, Any] = {field_name: value, "sharing": sharing, "num_groups": None}
            if field_name == "hidden_size":
                changes.update(num_heads=None, ffn_size=None)
            spec = base.replace(**changes)
            report = count(spec, seq_len)
            rows.append({"sharing": sharing, field_name: value, "params": report.total, "applied": report.applied,
                         "flops_per_token": report.flops_per_token})
    return rows
