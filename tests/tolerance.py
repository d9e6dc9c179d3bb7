"""Tolerances of numeric tests, derived from the computation instead of one machine's result.

A float32 dot product of length K, summed in any order (what differs between CPUs: AVX2, AVX-512
and AMX kernels block and vectorise the sums differently, and their exp, tanh and erf differ in
the last bit), is off from the exact value by at most about K * u * sum(|terms|), u = 2^-24 the
unit roundoff (Higham, Accuracy and Stability of Numerical Algorithms, 3.1). Through a network the
relative errors of the reductions along one output's path add: `path_length` sums their K. So
an output of magnitude |y| may differ between two correct CPUs by up to path_length * u * |y|,
relative where values are large and against the row's largest value where they are near zero
(an output near 0 after cancellation still carries the error of the large terms it came from).
"""

from __future__ import annotations

U32 = 2.0 ** -24  # float32 unit roundoff


def path_length(family: str, hidden: int, embedding: int, heads: int, ffn: int, layers: int, tokens: int,
                head: str = "pair") -> int:
    """Sum of the reduction lengths along one output of a BERT/ALBERT encoder and `head`:
    per layer Q/K/V (H), scores (H / heads), attention times V (T tokens), output (H), FFN in (H),
    FFN out (ffn), two LayerNorms (mean and variance: 2 x H each); the embeddings' LayerNorm (2 x E)
    and ALBERT's E -> H projection (E); the pooler and pair head (H, H) or the MLM transform, its
    LayerNorm and the decoder (H, 2 x E, E)."""
    per_layer = hidden + hidden // heads + tokens + hidden + hidden + ffn + 4 * hidden
    embed = 2 * embedding + (embedding if family == "albert" else 0)
    top = 2 * hidden if head == "pair" else hidden + 3 * embedding
    return embed + layers * per_layer + top


def relative_bound(family: str, spec: dict, tokens: int, head: str = "pair") -> float:
    """path_length * u for a spec's sizes (a ModelSpec's to_dict())."""
    k = path_length(family, spec["hidden_size"], spec["embedding_size"], spec["num_heads"], spec["ffn_size"],
                    spec["num_layers"], tokens, head)
    return k * U32


def probability_bound(relative: float, logits: tuple[float, float]) -> float:
    """How far P(label 0) = softmax(z)[0] may move when each logit moves by `relative` times the
    larger of |z0|, |z1| and 1: dp = p(1 - p) d(z0 - z1), p(1 - p) <= 1/4, |d(z0 - z1)| <= 2 x that."""
    return 0.25 * 2 * relative * max(1.0, *(abs(z) for z in logits))
