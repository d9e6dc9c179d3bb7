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

import threading
from collections import defaultdict
from collections.abc import Iterator, Sequence

import numpy as np
import pandas as pd
import torch
from torch import nn

from albert_lab.analysis.reapply import application_groups, blocks, encode, reapply_note, run_applications
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN


def attention_projections(layer: nn.Module) -> tuple[nn.Linear, nn.Linear, nn.Linear, nn.Linear, int]:
    """(query, key, value, output) projections and the head count of an ALBERT or BERT layer."""
    if hasattr(layer.attention, "query"):  # AlbertLayer: one AlbertAttention module
        a = layer.attention
        return a.query, a.key, a.value, a.dense, a.num_attention_heads
    s = layer.attention.self  # BertLayer: BertSelfAttention + BertSelfOutput
    return s.query, s.key, s.value, layer.attention.output.dense, s.num_attention_heads


def head_attention(layer: nn.Module, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
                   keep: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Attention weights alpha (B, heads, T, T) and ||f(x_j)|| per head (B, heads, T) of one
    layer from its query, key and value projections (B, T, H) of the state it read;
    `keep` (B, T) marks real tokens (padding gets no weight)."""
    *_, out, heads = attention_projections(layer)
    b, t, width = q.shape
    d = width // heads

    def split(x: torch.Tensor) -> torch.Tensor:
        return x.float().view(b, t, heads, d).transpose(1, 2)  # (B, heads, T, d)

    q, k, v = split(q), split(k), split(v)
    scores = (q @ k.transpose(-1, -2)) * d ** -0.5
    scores = scores.masked_fill(~keep[:, None, None, :].bool(), torch.finfo(scores.dtype).min)
    alpha = torch.softmax(scores, -1)
    w_o = out.weight.float().view(width, heads, d)  # (H_out, heads, d): the head's slice of W_O
    gram = torch.einsum("ohd,ohe->hde", w_o, w_o)  # (heads, d, d)
    f_norm = ((v @ gram[None]) * v).sum(-1).clamp_min(0).sqrt()  # v G v^T per token: (B, heads, T)
    return alpha, f_norm


def _layers(bundle: ModelBundle, repeat: int) -> list[tuple[int, int, nn.Module]]:
    """(application 1.., inner index, layer) for every transformer layer run."""
    runs = blocks(bundle.model, application_groups(bundle.spec, repeat))
    return [(a + 1, i, layer) for a, layers in enumerate(runs) for i, layer in enumerate(layers)]


@torch.inference_mode()
def per_layer_attention(bundle: ModelBundle, texts: Sequence[str], repeat: int, max_len: int
                        ) -> Iterator[tuple[int, int, torch.Tensor, torch.Tensor, torch.Tensor]]:
    """(application, inner, alpha, ||f(x_j)||, keep) for every layer run, from the query,
    key and value projections the forward pass itself computed (caught by hooks, so
    nothing is computed twice; a shared module's outputs arrive in application order)."""
    inputs = encode(bundle, texts, max_len, mask_rate=0.0)
    layers = _layers(bundle, repeat)
    caught: dict[int, list[torch.Tensor]] = defaultdict(list)
    linears = {id(lin): lin for _, _, layer in layers for lin in attention_projections(layer)[:3]}
    # The app caches one model per checkpoint for all sessions: another thread may run the
    # same modules meanwhile, so only this thread's outputs are caught.
    me = threading.get_ident()

    def catch(module: nn.Module, _, out: torch.Tensor) -> None:
        if threading.get_ident() == me:
            caught[id(module)].append(out)

    handles = [lin.register_forward_hook(catch) for lin in linears.values()]
    try:
        run_applications(bundle, inputs, repeat)
    finally:
        for handle in handles:
            handle.remove()
    for application, inner, layer in layers:
        q, k, v = (caught[id(lin)].pop(0) for lin in attention_projections(layer)[:3])
        alpha, f_norm = head_attention(layer, q, k, v, inputs.attention_mask)
        yield application, inner, alpha, f_norm, inputs.attention_mask.bool()


def attention_maps(bundles: ModelBundle | Sequence[ModelBundle], text: str, repeat: int = 1,
                   max_len: int = MAX_LEN) -> pd.DataFrame:
    """Maps of one text: one row per (checkpoint, application, inner, head, query, key)
    with the raw weight and the norm-weighted value ||alpha_ij f(x_j)||; `repeat` > 1
    applies a shared block beyond depth L (unshared models stay at L, with a note); `depth_L`
    is the trained depth."""
    frames = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        runs = list(per_layer_attention(bundle, [text], repeat, max_len))
        pieces = bundle.tokenizer.convert_ids_to_tokens(encode(bundle, [text], max_len, 0.0).input_ids[0].tolist())
        t, heads = len(pieces), bundle.spec.num_heads
        head, query, key = (np.tile(a.ravel(), len(runs)) for a in np.meshgrid(np.arange(heads), np.arange(t),
                                                                                  np.arange(t), indexing="ij"))
        per_run = heads * t * t
        alpha = torch.cat([r[2][0].reshape(-1) for r in runs])
        weighted = torch.cat([(r[2] * r[3][:, :, None, :])[0].reshape(-1) for r in runs])
        note = (reapply_note(bundle.spec) or "") if repeat > 1 else ""
        frames.append(pd.DataFrame(dict(
            checkpoint=pd.Categorical([bundle.name]).repeat(per_run * len(runs)),
            application=np.repeat([r[0] for r in runs], per_run), inner=np.repeat([r[1] for r in runs], per_run),
            head=head, query=query, key=key, query_token=_token_column(pieces, query), key_token=_token_column(pieces, key),
            weight=alpha.numpy(), norm_weighted=weighted.numpy(), note=pd.Categorical([note]).repeat(per_run * len(runs)),
            depth_L=bundle.spec.num_layers)))  # the trained depth: applications past it are the block applied again
    return pd.concat(frames, ignore_index=True) if len(frames) > 1 else frames[0]


def _token_column(pieces: list[str], index: np.ndarray) -> pd.Categorical:
    """The token at each index, as a categorical (maps have T^2 rows per head)."""
    unique, codes = np.unique(np.asarray(pieces, dtype=str), return_inverse=True)
    return pd.Categorical.from_codes(codes[index], categories=unique)


def attention_entropy(bundles: ModelBundle | Sequence[ModelBundle], texts: Sequence[str], repeat: int = 1,
                      max_len: int = MAX_LEN) -> pd.DataFrame:
    """One row per (checkpoint, application, inner, head): the entropy (nats) of each real
    query token's attention over the real keys, averaged over tokens and texts; the same
    for the norm-weighted distribution (||alpha_ij f(x_j)|| normalised over j); and the
    entropy as a share of its maximum log(keys). Low: focused heads; high: broad ones."""
    rows = []
    for bundle in [bundles] if isinstance(bundles, ModelBundle) else bundles:
        note = (reapply_note(bundle.spec) or "") if repeat > 1 else ""
        for application, inner, alpha, f_norm, keep in per_layer_attention(bundle, texts, repeat, max_len):
            log_keys = torch.log(keep.sum(-1).float())[:, None, None]  # (B, 1, 1)
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
