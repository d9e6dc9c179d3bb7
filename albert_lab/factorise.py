"""ALBERT's factorised embedding made from a BERT's: the V x H word-embedding matrix as a V x E
table times an E x H projection by truncated SVD, W ~ (U_E S_E)(V_E^T), with position and
token-type embeddings projected onto the same E directions (albert_lab/convert.py uses it).

ALBERT normalises the E-wide embedding sum before projecting it to H, BERT the H-wide sum after:
with E = H the result is exact (the identity projection, BERT's LayerNorm kept); with E < H the
E-side LayerNorm is left at gain 1 and bias 0, and the projection and its bias are fitted by least
squares to BERT's normalised embeddings of every vocabulary piece at sampled positions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from albert_lab.errors import SpecError

FIT_SAMPLES = 32768  # (piece, position, segment) sums the E < H projection is fitted on


@dataclass(frozen=True)
class Factorised:
    """A V x H matrix as table (V, E) @ basis (E, H); basis rows are orthonormal."""

    table: torch.Tensor  # (V, E) = U_E S_E
    basis: torch.Tensor  # (E, H) = V_E^T
    singular_values: torch.Tensor  # (min(V, H),) all of them, descending
    energy_kept: float  # sum of the kept s^2 / sum of all s^2

    @property
    def discarded_error(self) -> float:
        """||W - table @ basis||_F, which truncated SVD makes sqrt(sum of the discarded s^2)."""
        return float(self.singular_values[self.table.shape[1]:].double().square().sum().sqrt())


def factorise(weight: torch.Tensor, embedding_size: int) -> Factorised:
    """Truncated SVD of `weight` (V, H) to rank E. E = H keeps the matrix as it is
    (identity basis), so the conversion stays exact."""
    hidden = weight.shape[1]
    if not 1 <= embedding_size <= hidden:
        raise SpecError("embedding_size", f"E must be between 1 and H ({hidden}), got {embedding_size}")
    u, s, vh = torch.linalg.svd(weight.double(), full_matrices=False)
    total = float(s.square().sum())
    energy = float(s[:embedding_size].square().sum()) / total if total > 0 else 1.0  # an all-zero table loses nothing
    if embedding_size == hidden:
        return Factorised(weight.float().clone(), torch.eye(hidden), s.float(), 1.0)
    return Factorised((u[:, :embedding_size] * s[:embedding_size]).float(), vh[:embedding_size].float(), s.float(), energy)


def factorised_embeddings(source: dict[str, torch.Tensor], factor: Factorised, eps: float, seed: int) -> dict[str, Any]:
    """The factorised embedding: table, projected positions and segments, and either
    BERT's LayerNorm with an identity projection (E = H) or a least-squares projection."""
    basis = factor.basis  # (E, H)
    pos, seg = source["bert.embeddings.position_embeddings.weight"], source["bert.embeddings.token_type_embeddings.weight"]
    gamma, beta = source["bert.embeddings.LayerNorm.weight"], source["bert.embeddings.LayerNorm.bias"]
    e, h = basis.shape
    state: dict[str, Any] = {
        "albert.embeddings.word_embeddings.weight": factor.table,
        "albert.embeddings.position_embeddings.weight": pos.float() @ basis.T,
        "albert.embeddings.token_type_embeddings.weight": seg.float() @ basis.T,
    }
    if e == h:  # exact: LN_H(w + p + t), then the identity
        state.update({"albert.embeddings.LayerNorm.weight": gamma, "albert.embeddings.LayerNorm.bias": beta,
                      "albert.encoder.embedding_hidden_mapping_in.weight": torch.eye(h),
                      "albert.encoder.embedding_hidden_mapping_in.bias": torch.zeros(h)})
        return state
    # E < H: fit W_in, b_in so that W_in LN_E(z) + b_in ~ LN_H(x), x = w + p + t, z = x's E coordinates.
    g = torch.Generator().manual_seed(seed)
    vocab = factor.table.shape[0]
    ids = torch.arange(FIT_SAMPLES) % vocab
    positions = torch.randint(0, pos.shape[0], (FIT_SAMPLES,), generator=g)
    segments = torch.randint(0, seg.shape[0], (FIT_SAMPLES,), generator=g)
    x = source["bert.embeddings.word_embeddings.weight"].float()[ids] + pos.float()[positions] + seg.float()[segments]
    target = torch.nn.functional.layer_norm(x, (h,), gamma.float(), beta.float(), eps).double()  # (N, H)
    z = factor.table[ids] + state["albert.embeddings.position_embeddings.weight"][positions] \
        + state["albert.embeddings.token_type_embeddings.weight"][segments]
    features = torch.nn.functional.layer_norm(z, (e,), eps=eps).double()  # gain 1, bias 0
    design = torch.cat([features, torch.ones(len(features), 1, dtype=torch.float64)], dim=1)  # (N, E + 1)
    solution = torch.linalg.lstsq(design, target).solution  # (E + 1, H)
    # LN_E's outputs sum to zero, so the design has rank E, not E + 1: lstsq leaves an arbitrary,
    # here enormous (|W| 2.6e5 at E = 128), component of W along the all-ones direction of E. It does
    # not change the function at gain 1, but once the gain trains, each change of it is multiplied
    # by that component (the first gradient norm was 13,900 against 28 at E = H) and uptraining
    # stalled. The minimum-norm solution has none: remove it.
    weight = solution[:e] - solution[:e].mean(0, keepdim=True)  # (E, H), each column orthogonal to the ones
    residual = (features @ weight + solution[e] - target).square().sum()
    total = (target - target.mean(0)).square().sum()
    state.update({"albert.embeddings.LayerNorm.weight": torch.ones(e), "albert.embeddings.LayerNorm.bias": torch.zeros(e),
                  "albert.encoder.embedding_hidden_mapping_in.weight": weight.T.float().contiguous(),
                  "albert.encoder.embedding_hidden_mapping_in.bias": solution[e].float(),
                  "_fit_r2": round(float(1 - residual / total), 6)})
    return state
