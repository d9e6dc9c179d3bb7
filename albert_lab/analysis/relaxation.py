"""The relaxation curve: what each parameter added back to a shared model buys, from the ALBERT
albertize makes of a BERT (rank 0) to the BERT itself.

For each rank, the relaxed model (albert_lab/relax.py) is measured against its source on the
same held-out text: unique parameters and their share of the source's, the residual energy
its rank keeps, MLM accuracy on the same masked tokens, the pair head's accuracy on the task
that trained it (SOP or NSP), the mean KL divergence from the source's MLM distribution at
those tokens, and the roughness of its oscillation curve (analysis/oscillation.py's measure
of Figure 1's zig-zag). The source is the curve's last row.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from albert_lab.analysis.common import batch_tokens_for, length_batches
from albert_lab.analysis.evaluation import evaluation_pairs
from albert_lab.analysis.intrinsic import MaskedPairs, masked_logits, score_eval_pairs, wilson_interval
from albert_lab.analysis.oscillation import oscillation, verdict
from albert_lab.analysis.registry import Report
from albert_lab.checkpoint.load import ModelBundle
from albert_lab.data.corpus import MAX_LEN
from albert_lab.data.samples import sample_texts
from albert_lab.kernels import tune_for_inference
from albert_lab.params import count
from albert_lab.relax import FULL, Relaxation, load_source, source_eps, source_state
from albert_lab.relaxed import half_of
from albert_lab.spec import Init, Sharing

COLUMNS = ["model", "rank", "rank_attention", "rank_ffn", "parameters", "share_of_source", "energy_kept", "mlm_accuracy",
           "mlm_n", "pair_task", "pair_accuracy", "pair_low", "pair_high", "pair_n", "kl", "roughness", "end"]
DEFAULT_RANKS: tuple[int | str, ...] = (0, 4, 16, 64, FULL)
DEFAULT_PAIRS = 128  # held-out pairs per task (MLM's ~1,800 masked tokens): each rank is two passes over them
SOURCE = "source BERT"
Progress = Callable[[float, str], None]


def curve_name(rank: int | str) -> str:
    return "ALBERT (rank 0)" if rank == 0 else f"rank {rank}"


def relax_curve(source: str | Path, ranks: Sequence[int | str] = DEFAULT_RANKS, embedding_size: int | None = None,
                sharing: Sharing = "all", groups: int | None = None, init: Init = "average", pairs: int = DEFAULT_PAIRS,
                max_len: int = MAX_LEN, seed: int = 0, progress: Progress | None = None) -> pd.DataFrame:
    """One row per rank (in the order given), then the source's: COLUMNS."""
    return curve_and_energy(source, ranks, embedding_size, sharing, groups, init, pairs, max_len, seed, progress)[0]


def energy_frame(relaxation: Relaxation, ranks: Sequence[int | str]) -> pd.DataFrame:
    """Per rank, application (1-based) and map: the share of that residual's energy the rank keeps
    (`energy_kept`), and the residual's own size (`energy`, its squared Frobenius norm): which maps
    sharing changed most, and which need rank most to be given back."""
    rows = []
    for rank in ranks:
        per_half = relaxation.ranks(rank)
        for (index, name), residual in sorted(relaxation.residuals.items()):
            half = half_of(name)
            rows.append(dict(rank=str(rank), application=index + 1, map=name, half=half,
                             energy=float(residual.s.square().sum()), energy_kept=residual.kept(per_half[half])))
    return pd.DataFrame(rows, columns=["rank", "application", "map", "half", "energy", "energy_kept"])


@torch.inference_mode()
def curve_and_energy(source: str | Path, ranks: Sequence[int | str] = DEFAULT_RANKS, embedding_size: int | None = None,
                     sharing: Sharing = "all", groups: int | None = None, init: Init = "average", pairs: int = DEFAULT_PAIRS,
                     max_len: int = MAX_LEN, seed: int = 0, progress: Progress | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve (relax_curve's frame) and the energy kept per rank, application and map (energy_frame)."""
    tell = progress or (lambda _fraction, _what: None)
    tell(0.0, "loading the source and decomposing its residuals")
    bundle = load_source(source)
    relaxation = Relaxation.of(source_state(bundle), bundle.spec, embedding_size or bundle.spec.hidden_size, sharing, groups,
                               init, source_eps(bundle), seed)
    models = []
    for rank in ranks:
        per_half = relaxation.ranks(rank)
        conv = relaxation.at(per_half, seed)
        tune_for_inference(conv.model)
        models.append((curve_name(rank), rank, per_half, conv))
    bundles = [_bundle(name, bundle, conv) for name, _, _, conv in models] + [_bundle(SOURCE, bundle)]
    has_mlm = all("predictions." not in conv.omit for *_, conv in models) and bundle.heads.mlm != "missing"
    pair_task = bundle.spec.objective if bundle.heads.pair != "missing" and bundle.spec.objective != "none" else None
    held = evaluation_pairs(out_of_domain=False)
    length = min(max_len, bundle.spec.max_positions)
    tell(0.15, f"MLM on {pairs} held-out pairs, {len(bundles)} models")
    mlm = _mlm(bundles, held, pairs, length) if has_mlm else {}
    scored = {}
    for i, b in enumerate(bundles):
        if pair_task:
            tell(0.4 + 0.3 * i / len(bundles), f"{pair_task.upper()} pairs: {b.name}")
            frame = score_eval_pairs(b.model, b.tokenizer, held, length, limit=pairs, tasks=[pair_task])
            scored[b.name] = (int(frame.hits.sum()), len(frame))
    tell(0.75, "oscillation on the built-in sample")
    rough = verdict(oscillation(bundles, sample_texts(), max_len=length)).set_index("checkpoint").roughness
    source_params = count(bundle.spec).total
    rows = []
    for name, rank, per_half, conv in [*models, (SOURCE, "source", None, None)]:
        spec = conv.spec if conv is not None else bundle.spec
        hits, n = scored.get(name, (0, 0))
        low, high = wilson_interval(hits, n) if n else (np.nan, np.nan)
        acc, kl, mlm_n = mlm.get(name, (np.nan, np.nan, 0))
        rows.append(dict(model=name, rank=str(rank), rank_attention=spec.rank_attention if conv else None,
                         rank_ffn=spec.rank_ffn if conv else None, parameters=count(spec).total,
                         share_of_source=count(spec).total / source_params,
                         energy_kept=relaxation.energy_total(per_half) if per_half else 1.0, mlm_accuracy=acc, mlm_n=mlm_n,
                         pair_task=pair_task or "", pair_accuracy=hits / n if n else np.nan, pair_low=low, pair_high=high,
                         pair_n=n, kl=kl, roughness=float(rough.get(name, np.nan)),
                         end="ALBERT" if rank == 0 else "source BERT" if conv is None else "= source" if rank == FULL else ""))
    tell(1.0, "done")
    return pd.DataFrame(rows, columns=COLUMNS), energy_frame(relaxation, ranks)


def _bundle(name: str, source: ModelBundle, conv=None) -> ModelBundle:
    """A curve's model as the analyses take it, named by its place on the curve."""
    model, spec = (conv.model.eval(), conv.spec) if conv is not None else (source.model, source.spec)
    return ModelBundle(name=name, source=source.source, model=model, tokenizer=source.tokenizer, spec=spec,
                       heads=source.heads, card=source.card if conv is None else {}, device=source.device, dtype=source.dtype)


def _mlm(bundles: list[ModelBundle], held: pd.DataFrame, limit: int, max_len: int) -> dict[str, tuple[float, float, int]]:
    """Per model: MLM accuracy, and mean KL(source || model) over the same masked tokens (the source is
    the last bundle: its KL is 0)."""
    frame = held[held.task == "mlm"]
    if len(frame) > limit:
        frame = frame.sample(n=limit, random_state=0).sort_index()
    source = bundles[-1]
    masked = MaskedPairs.of(source.tokenizer, list(frame.a), list(frame.b), max_len)
    hits, kl, n = np.zeros(len(bundles)), np.zeros(len(bundles)), 0
    for idx in length_batches(masked.lengths, batch_tokens_for(source.model), max_batch=512):
        inputs, pos, labels, _ = masked.batch(idx)
        reference = torch.log_softmax(masked_logits(source.model, inputs, pos).float(), -1)
        p = reference.exp()
        negentropy = float((p * reference).sum())  # KL(p || q) = sum p log p - sum p log q, the first term once
        n += len(labels)
        for i, b in enumerate(bundles):
            logq = reference if b is source else torch.log_softmax(masked_logits(b.model, inputs, pos).float(), -1)
            hits[i] += float((logq.argmax(-1).cpu() == labels).sum())
            kl[i] += 0.0 if b is source else negentropy - float((p * logq).sum())
    return {b.name: (hits[i] / max(n, 1), kl[i] / max(n, 1), n) for i, b in enumerate(bundles)}


def report(frame: pd.DataFrame) -> Report:
    """What `albert-lab relax --ranks` says beside its table: how much of the source's MLM accuracy
    each rank recovers, for what share of its parameters."""
    remarks = []
    source = frame[frame.end == "source BERT"]
    albert = frame[frame.end == "ALBERT"]
    if len(source) and len(albert) and np.isfinite(source.mlm_accuracy.iloc[0]):
        top, bottom = float(source.mlm_accuracy.iloc[0]), float(albert.mlm_accuracy.iloc[0])
        for row in frame[(frame.end == "") | (frame.end == "= source")].itertuples():
            if top <= bottom or not np.isfinite(row.mlm_accuracy):
                continue
            share = (row.mlm_accuracy - bottom) / (top - bottom)
            if share <= 0:
                remarks.append(f"{row.model}: {row.share_of_source:.0%} of the source's parameters recover none of the MLM "
                               f"accuracy sharing lost ({row.mlm_accuracy:.3f}, the ALBERT {bottom:.3f}, the source {top:.3f})")
            else:
                remarks.append(f"{row.model}: {row.share_of_source:.0%} of the source's parameters recover {share:.0%} of the "
                               f"MLM accuracy sharing lost ({bottom:.3f} -> {row.mlm_accuracy:.3f}, the source {top:.3f})")
    return Report(remarks=tuple(remarks))
