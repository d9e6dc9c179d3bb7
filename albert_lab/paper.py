"""The paper's tables as data, with this project's exact counts beside them.

Numbers are copied from Lan et al. (ICLR 2020, arXiv 1909.11942 v6); see
../shared/reference/albert-paper.md. Parameter columns are in millions as printed.
"""

from __future__ import annotations

from typing import Any

from albert_lab.params import count
from albert_lab.spec import PRESETS, SHARING_LABELS, ModelSpec

# Table 1 (configs) with Table 2 (training-data throughput relative to BERT-large).
TABLE1 = [  # preset, paper params (M), paper speedup
    ("bert-base", 108, 4.7), ("bert-large", 334, 1.0), ("albert-base", 12, 5.6),
    ("albert-large", 18, 1.7), ("albert-xlarge", 60, 0.6), ("albert-xxlarge", 235, 0.3),
]
# Table 3: E on ALBERT-base; (sharing, E) -> (params M, avg downstream).
TABLE3 = {
    ("none", 64): (87, 81.3), ("none", 128): (89, 81.7), ("none", 256): (93, 81.8), ("none", 768): (108, 82.3),
    ("all", 64): (10, 79.0), ("all", 128): (12, 80.1), ("all", 256): (16, 79.6), ("all", 768): (31, 79.8),
}
# Table 4: sharing strategy on ALBERT-base; (E, sharing) -> (params M, avg downstream).
TABLE4 = {
    (768, "all"): (31, 79.8), (768, "attention"): (83, 81.6), (768, "ffn"): (57, 79.5), (768, "none"): (108, 82.3),
    (128, "all"): (12, 80.1), (128, "attention"): (64, 81.7), (128, "ffn"): (38, 80.2), (128, "none"): (89, 81.6),
}
# Table 5: intrinsic accuracy (%) of ALBERT-base by inter-sentence loss.
TABLE5 = {"none": (54.9, 52.4, 53.3, 79.0), "nsp": (54.5, 90.5, 52.0, 79.2), "sop": (54.0, 78.9, 86.5, 80.1)}


# Rows where the paper's number is not a rounding of the model it describes.
NOTES = {
    "bert-base": "the paper's BERT counts leave out the pooler: 108.9M without it",
    "bert-large": "the paper's BERT counts leave out the pooler: 334.1M without it",
    "albert-xlarge": "the paper rounds 58.7M up to 60M",
    "albert-xxlarge": "paper's table says 235M and its text 233M; the model as specified has 222.6M",
    ("none", 768): "the paper reuses BERT-base's 108M; ALBERT's layout (E->H projection, V=30,000) has 109.7M",
}


def _row(spec: ModelSpec, paper_m: float, note_key: Any = None, **extra: Any) -> dict[str, Any]:
    exact = count(spec).total
    diff = exact / 1e6 - paper_m
    # The paper truncates some counts and rounds others (87.6M -> 87M, 63.6M -> 64M).
    note = NOTES.get(note_key, "") or ("" if -0.5 <= diff < 1.0 else "differs by more than rounding")
    return {**extra, "spec": spec.label, "paper params (M)": paper_m, "exact params": exact,
            "exact (M)": round(exact / 1e6, 1), "difference (M)": round(diff, 1), "note": note}


def table1() -> list[dict[str, Any]]:
    bert_large = count(PRESETS["bert-large"], seq_len=512).flops_per_token
    rows = []
    for name, paper_m, speedup in TABLE1:
        spec = PRESETS[name]
        flops = count(spec, seq_len=512).flops_per_token
        rows.append(_row(spec, paper_m, note_key=name, model=name, L=spec.num_layers, H=spec.hidden_size, E=spec.embedding_size,
                         shared=spec.sharing == "all", **{"paper speedup": speedup,
                                                          "FLOPs ratio BERT-large / model": round(bert_large / flops, 2)}))
    return rows


def table3() -> list[dict[str, Any]]:
    base = PRESETS["albert-base"]
    return [_row(base.replace(embedding_size=e, sharing=sharing), p, (sharing, e), sharing=SHARING_LABELS[sharing], E=e,
                 **{"paper avg": avg})
            for (sharing, e), (p, avg) in TABLE3.items()]


def table4() -> list[dict[str, Any]]:
    base = PRESETS["albert-base"]
    return [_row(base.replace(embedding_size=e, sharing=sharing), p, (sharing, e), E=e, sharing=SHARING_LABELS[sharing],
                 **{"paper avg": avg})
            for (e, sharing), (p, avg) in TABLE4.items()]
