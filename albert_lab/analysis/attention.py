"""Attention at every layer application, raw and norm-weighted.

A shared ALBERT applies the same query/key/value weights at every layer, yet the
patterns differ from one application to the next because the states they read
differ. For each application and head we give the attention weights alpha_ij and the
norm-weighted variant of Kobayashi et al. (2020, "Attention is not only a weight"):
||alpha_ij f(x_j)|| with f(x) = (x W_V + b_V) W_O restricted to the head (its value
projection and its slice of the output projection, without the output bias), i.e. how
much token j actually moves token i, not only how much it is looked at.

Since alpha_ij >= 0, ||alpha_ij f(x_j)|| = alpha_ij ||f(x_j)||, and ||f(x_j)||^2 =
v_j W_O,h^T W_O,h v_j^T: a d x d form per head instead of a (T, H) vector per token.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from albert_lab.analysis.reapply import application_groups, blocks, encode, reapply_note, run_applications
from albert_lab.checkpoints import ModelBundle


def attention_projections(layer: nn.Module) -> tuple[nn.Linear, nn.Linear, nn.Linear, nn.Linear, int]:
    """(query, key, value, output) projections and the head count of an ALBERT or BERT layer."""
    if hasattr(layer.attention, "query"):  # AlbertLayer: one AlbertAttention module
        a = layer.attention
        return a.query, a.key, a.value, a.dense, a.num_attention_heads
    s = layer.attention.self  # BertLayer: BertSelfAttention + BertSelfOutput
    return s.query, s.key, s.value, layer.attention.output.dense, s.num_attention_heads


@torch.inference_mode()
def head_attention(layer: nn.Module, h: torch.Tensor, keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention weights alpha (B, heads, T, T) and ||f(x_j)|| per head (B, heads, T) of
    one layer reading h (B, T, H); `keep` (B, T) marks real tokens (padding gets no weight)."""
    query, key, value, out, heads = attention_projections(layer)
    b, t, width = h.shape
    d = width // heads

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.view(b, t, heads, d).transpose(1, 2)  # (B, heads, T, d)

    q, k, v = split(query(h)).float(), split(key(h)).float(), split(value(h)).float()
    scores = (q @ k.transpose(-1, -2)) * d ** -0.5
    scores = scores.masked_fill(~keep[:, None, None, :].bool(), torch.finfo(scores.dtype).min)
    alpha = torch.softmax(scores, -1)
    w_o = out.weight.float().view(width, heads, d)  # (H_out, heads, d): the head's slice of W_O
    gram = torch.einsum("ohd,ohe->hde", w_o, w_o)  # (heads, d, d)
    f_norm = torch.einsum("bhtd,hde,bhte->bht", v, gram, v).clamp_min(0).sqrt()
    return alpha, f_norm


def _layers(bundle: ModelBundle, repeat: int) -> list[tuple[int, int, nn.Module]]:
    """(application 1.., inner index, layer) for every transformer layer run."""
    runs = blocks(bundle.model, application_groups(bundle.spec, repeat))
    return [(a + 1, i, layer) for a, layers in enumerate(runs) for i, layer in enumerate(layers)]


def attention_maps(bundles: ModelBundle | Sequence[ModelBundle], text: str, repeat: int = 1,
                   max_len: int = 128) -> pd.DataFrame:
    """Maps of one text: one row per (checkpoint, application, inner, head, query, key)
    with the raw weight and the norm-weighted value ||alpha_ij f(x_j)||; `repeat` > 1
    applies a shared block beyond depth L (unshared models stay at L, with a note)."""
    frames = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs = encode(bundle, [text], max_len, mask_rate=0.0)
        _, layer_inputs = run_applications(bundle, inputs, repeat, keep_layer_inputs=True)
        pieces = bundle.tokenizer.convert_ids_to_tokens(inputs.input_ids[0].tolist())
        t = len(pieces)
        head, query, key = (a.ravel() for a in np.meshgrid(np.arange(bundle.spec.num_heads), np.arange(t), np.arange(t),
                                                             indexing="ij"))
        tokens = dict(query_token=_token_column(pieces, query), key_token=_token_column(pieces, key))
        note = (reapply_note(bundle.spec) or "") if repeat > 1 else ""
        for (application, inner, layer), h in zip(_layers(bundle, repeat), layer_inputs):
            alpha, f_norm = head_attention(layer, h, inputs.attention_mask)
            weighted = alpha * f_norm[:, :, None, :]  # (1, heads, T, T)
            frames.append(pd.DataFrame(dict(
                checkpoint=bundle.name, application=application, inner=inner, head=head, query=query, key=key, **tokens,
                weight=alpha[0].reshape(-1).cpu().numpy(), norm_weighted=weighted[0].reshape(-1).cpu().numpy(), note=note)))
    return pd.concat(frames, ignore_index=True)


def _token_column(pieces: list[str], index: np.ndarray) -> pd.Categorical:
    """The token at each index, as a categorical (maps have T^2 rows per head)."""
    unique, codes = np.unique(np.asarray(pieces, dtype=str), return_inverse=True)
    return pd.Categorical.from_codes(codes[index], categories=unique)


def attention_entropy(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 1,
                      max_len: int = 128) -> pd.DataFrame:
    """One row per (checkpoint, application, inner, head): the entropy (nats) of each real
    query token's attention over the real keys, averaged over tokens and texts; the same
    for the norm-weighted distribution (||alpha_ij f(x_j)|| normalised over j); and the
    entropy as a share of its maximum log(keys). Low: focused heads; high: broad ones."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        inputs = encode(bundle, texts, max_len, mask_rate=0.0)
        _, layer_inputs = run_applications(bundle, inputs, repeat, keep_layer_inputs=True)
        keep = inputs.attention_mask.bool()  # (B, T)
        log_keys = torch.log(keep.sum(-1).float())[:, None, None]  # (B, 1, 1)
        note = (reapply_note(bundle.spec) or "") if repeat > 1 else ""
        for (application, inner, layer), h in zip(_layers(bundle, repeat), layer_inputs):
            alpha, f_norm = head_attention(layer, h, inputs.attention_mask)
            weighted = alpha * f_norm[:, :, None, :]
            weighted = weighted / weighted.sum(-1, keepdim=True).clamp_min(1e-30)
            raw, normed = _entropy(alpha), _entropy(weighted)  # (B, heads, T)
            for head in range(alpha.shape[1]):
                rows.append(dict(checkpoint=bundle.name, family=bundle.spec.family, application=application, inner=inner,
                                 head=head, entropy=_token_mean(raw[:, head], keep),
                                 entropy_norm_weighted=_token_mean(normed[:, head], keep),
                                 entropy_share=_token_mean((raw / log_keys.clamp_min(1e-9))[:, head], keep),
                                 beyond_L=application > bundle.spec.num_layers, note=note))
    return pd.DataFrame(rows)


def _entropy(p: torch.Tensor) -> torch.Tensor:
    """-sum_j p_j log p_j over the last axis (0 log 0 = 0)."""
    return -(p * torch.log(p.clamp_min(1e-30))).sum(-1)


def _token_mean(values: torch.Tensor, keep: torch.Tensor) -> float:
    """Mean of (B, T) values over the real tokens."""
    return float(values[keep].mean())
