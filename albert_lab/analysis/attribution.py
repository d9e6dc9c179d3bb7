"""Token attributions for one pair's SOP or NSP decision (captum).

Layer Integrated Gradients on the word embeddings: the path integral of the gradient
of P(label 0) (original order / is next) from a baseline input to the real one. The
baseline keeps [CLS], [SEP] and the segment ids and replaces every other token by
<pad>, so only the words themselves are attributed. By completeness, the
attributions sum to P(input) - P(baseline) up to the reported convergence delta.
"""

from __future__ import annotations

import copy
import html
from dataclasses import dataclass

import pandas as pd
import torch

from albert_lab.analysis.common import Progress
from albert_lab.analysis.pair_encoding import check_segment, encode_pairs
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.errors import AlbertLabError
from albert_lab.models import Parts


@dataclass
class Attribution:
    tokens: pd.DataFrame  # position, token, segment (A/B/special), attribution
    probability: float  # P(label 0) for the input
    baseline_probability: float
    delta: float  # convergence delta: sum(attributions) - (P(input) - P(baseline))
    baseline: str  # description of the baseline used
    head: str  # sop / nsp
    target: int


STEPS_PER_PASS = 16  # integration steps per forward/backward: a long attribution tells progress between passes


def attribute_pair(bundle: ModelBundle, a: str, b: str, target: int = 0, n_steps: int = 50,
                   max_len: int = MAX_LEN, progress: Progress | None = None) -> Attribution:
    """Attribute the pair head's P(label `target`) for (A, B) to the input tokens, in passes
    of STEPS_PER_PASS integration steps; `progress` hears before each (and may raise to stop)."""
    from captum.attr import LayerIntegratedGradients

    if not bundle.heads.pair_usable:
        raise AlbertLabError(f"{bundle.name}: the pair head is {bundle.heads.pair}; its decisions are not worth attributing")
    if target not in (0, 1):
        raise AlbertLabError(f"target must be 0 or 1, got {target}")
    a, b = check_segment(a, "sentence A"), check_segment(b, "sentence B")
    # Gradients in fp32; a bf16 bundle is copied, never cast in place (it may be cached).
    model = bundle.model if bundle.dtype == torch.float32 else copy.deepcopy(bundle.model).float()
    parts = Parts.of(model)
    enc = encode_pairs(bundle.tokenizer, [a], [b], min(max_len, bundle.spec.max_positions), bundle.device)
    ids, types, mask = enc["input_ids"], enc["token_type_ids"], enc["attention_mask"]
    special = torch.tensor([[t in (bundle.tokenizer.cls_token_id, bundle.tokenizer.sep_token_id) for t in ids[0].tolist()]],
                           device=ids.device)
    baseline = torch.where(special, ids, torch.full_like(ids, bundle.tokenizer.pad_token_id))

    passes, done = -(-n_steps // STEPS_PER_PASS), [0]

    def forward(input_ids: torch.Tensor, token_type_ids: torch.Tensor, attention_mask: torch.Tensor) -> torch.Tensor:
        pooled = parts.encoder(input_ids=input_ids, token_type_ids=token_type_ids, attention_mask=attention_mask).pooler_output
        return torch.softmax(parts.pair_head(pooled), -1)[:, target]

    def forward_telling(*inputs: torch.Tensor) -> torch.Tensor:
        if progress is not None and done[0] < passes:
            progress(done[0] / passes, f"integration steps {done[0] * STEPS_PER_PASS + 1}-"
                                       f"{min(n_steps, (done[0] + 1) * STEPS_PER_PASS)} of {n_steps}")
        done[0] += 1
        return forward(*inputs)

    lig = LayerIntegratedGradients(forward_telling, parts.word_embeddings)  # captum removes its hooks however it ends
    attributions, delta = lig.attribute(ids, baselines=baseline, additional_forward_args=(types, mask), n_steps=n_steps,
                                        internal_batch_size=STEPS_PER_PASS, return_convergence_delta=True)
    scores = attributions.sum(-1)[0].detach().cpu()  # (T,)
    with torch.no_grad():
        p_input, p_base = float(forward(ids, types, mask)), float(forward(baseline, types, mask))
    tokens = bundle.tokenizer.convert_ids_to_tokens(ids[0].tolist())
    segment = ["special" if s else ("A" if t == 0 else "B") for s, t in zip(special[0].tolist(), types[0].tolist())]
    frame = pd.DataFrame(dict(position=range(len(tokens)), token=tokens, segment=segment, attribution=scores.numpy()))
    return Attribution(tokens=frame, probability=p_input, baseline_probability=p_base, delta=float(delta),
                       baseline=f"[CLS]/[SEP] and segment ids kept, every other token replaced by {bundle.tokenizer.pad_token}",
                       head=bundle.heads.pair_kind, target=target)


def attribution_html(tokens: pd.DataFrame) -> str:
    """The tokens as inline HTML, each shaded by its attribution (green pushes the
    explained label up, red down, opacity relative to the largest), the value on hover.
    Token text is escaped; SentencePiece's word marker becomes a space."""
    scale = max(1e-12, float(tokens.attribution.abs().max())) if len(tokens) else 1.0
    spans = []
    for row in tokens.itertuples():
        strength = row.attribution / scale
        rgb = "44,160,44" if strength > 0 else "214,39,40"
        text = html.escape(str(row.token).replace("\u2581", " "))
        spans.append(f'<span title="{row.attribution:+.4f} ({html.escape(str(row.segment))})" '
                     f'style="background:rgba({rgb},{abs(strength):.2f});padding:2px 1px;border-radius:3px">{text}</span>')
    return f'<div style="line-height:2.2;font-size:1.05em">{"".join(spans)}</div>'
