"""The relaxation curve: what each parameter added back to a shared model buys, from the ALBERT
albertize makes of a BERT (rank 0) to the BERT itself.

For each rank, the relaxed model (albert_lab/relax.py) is measured against its source on the
same held-out text: unique parameters and their share of the source's, the residual energy
its rank keeps, MLM accuracy on the same masked tokens (with its 95% Wilson interval over
them), the pair head's accuracy on the task that trained it (SOP or NSP, with its interval),
the mean KL divergence from the source's MLM distribution at those tokens, and the roughness
of its oscillation curve (analysis/oscillation.py's measure of Figure 1's zig-zag). The source
is the curve's last row. `measure` does the measuring for any models against a reference: the
uptraining sweep (training/sweep.py) measures its trained models with it.
"""

from __future__ import annotations

import copy
import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

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
from albert_lab.relaxed import RELAXED_MAPS, RelaxedLinear, half_of
from albert_lab.spec import Init, ModelSpec, Sharing

COLUMNS = ["model", "rank", "rank_attention", "rank_ffn", "parameters", "share_of_source", "energy_kept", "mlm_accuracy",
           "mlm_low", "mlm_high", "mlm_n", "pair_task", "pair_accuracy", "pair_low", "pair_high", "pair_n", "kl", "roughness",
           "end"]
DEFAULT_RANKS: tuple[int | str, ...] = (0, 4, 16, 64, FULL)
DEFAULT_PAIRS = 128  # held-out pairs per task (MLM's ~1,800 masked tokens): each rank is two passes over them
SOURCE = "source BERT"
Progress = Callable[[float, str], None]


def curve_name(rank: int | str) -> str:
    return "ALBERT (rank 0)" if rank == 0 else f"rank {rank}"


def curve_end(rank: int | str) -> str:
    """The `end` column of a relaxed model of rank `rank`: 'ALBERT' at 0, '= source' at full rank."""
    return "ALBERT" if rank == 0 else "= source" if rank == FULL else ""


@dataclass(frozen=True)
class CurveModel:
    """One model of a curve, as its row names it: its place (`rank`, `end`), spec and energy kept."""

    bundle: ModelBundle  # named as the row's `model`
    rank: str  # '0', '4', 'full', 'source' ...
    spec: ModelSpec
    energy_kept: float
    end: str  # 'ALBERT', 'source BERT', '= source', or '' (curve_end); other kinds name themselves


@dataclass(frozen=True)
class Measured:
    """What `measure` found for one model."""

    mlm_accuracy: float
    mlm_n: int
    kl: float
    pair_hits: int
    pair_n: int
    roughness: float


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
                     max_len: int = MAX_LEN, seed: int = 0, progress: Progress | None = None,
                     held: pd.DataFrame | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The curve (relax_curve's frame) and the energy kept per rank, application and map (energy_frame).
    `held`: the held-out pairs to measure on (default: long-mix's, evaluation_pairs)."""
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
        models.append(CurveModel(_bundle(curve_name(rank), bundle, conv), str(rank), conv.spec,
                                 relaxation.energy_total(per_half), curve_end(rank)))
    models.append(CurveModel(_bundle(SOURCE, bundle), "source", bundle.spec, 1.0, SOURCE))
    has_mlm = bundle.heads.mlm != "missing" and "predictions." not in relaxation.base.omit  # every rank's MLM head: rank 0's
    held = evaluation_pairs(out_of_domain=False) if held is None else held
    measured = measure([m.bundle for m in models], models[-1].bundle, held, pairs, min(max_len, bundle.spec.max_positions),
                       mlm=has_mlm, progress=lambda f, what: tell(0.15 + 0.85 * f, what))
    tell(1.0, "done")
    return curve_frame(models, measured, pair_task_of(bundle), count(bundle.spec).total), energy_frame(relaxation, ranks)


def pair_task_of(bundle: ModelBundle) -> str | None:
    """The task the source's pair head was trained for, or None where it has none."""
    return bundle.spec.objective if bundle.heads.pair != "missing" and bundle.spec.objective != "none" else None


def curve_frame(models: Sequence[CurveModel], measured: dict[str, Measured], pair_task: str | None,
                source_parameters: int) -> pd.DataFrame:
    """COLUMNS, a row per model in the order given."""
    rows = []
    for m in models:
        got = measured[m.bundle.name]
        mlm_low, mlm_high = wilson_interval(round(got.mlm_accuracy * got.mlm_n), got.mlm_n) if got.mlm_n else (np.nan, np.nan)
        low, high = wilson_interval(got.pair_hits, got.pair_n) if got.pair_n else (np.nan, np.nan)
        relaxed = m.spec.family == "albert"
        rows.append(dict(model=m.bundle.name, rank=m.rank, rank_attention=m.spec.rank_attention if relaxed else None,
                         rank_ffn=m.spec.rank_ffn if relaxed else None, parameters=count(m.spec).total,
                         share_of_source=count(m.spec).total / source_parameters, energy_kept=m.energy_kept,
                         mlm_accuracy=got.mlm_accuracy, mlm_low=mlm_low, mlm_high=mlm_high, mlm_n=got.mlm_n,
                         pair_task=pair_task or "", pair_accuracy=got.pair_hits / got.pair_n if got.pair_n else np.nan,
                         pair_low=low, pair_high=high, pair_n=got.pair_n, kl=got.kl, roughness=got.roughness, end=m.end))
    return pd.DataFrame(rows, columns=COLUMNS)


@torch.inference_mode()
def measure(bundles: Sequence[ModelBundle], reference: ModelBundle, held: pd.DataFrame, pairs: int, max_len: int,
            mlm: bool = True, progress: Progress | None = None, pair_task: str | None = "reference") -> dict[str, Measured]:
    """Each model (by its bundle's name) on the same held-out text: MLM accuracy on the masked tokens of
    `pairs` MLM pairs and the mean KL(reference || model) there (`mlm`: every model has an MLM head), the
    pair head on `pairs` pairs of `pair_task` (by default the reference's, none without a pair head), and the
    oscillation's roughness on the built-in sample. `reference` may be one of `bundles` (its KL is 0)."""
    tell = progress or (lambda _fraction, _what: None)
    pair_task = pair_task_of(reference) if pair_task == "reference" else pair_task
    tell(0.0, f"MLM on {pairs} held-out pairs, {len(bundles)} models")
    scores = _mlm(list(bundles), reference, held, pairs, max_len) if mlm else {}
    scored = {}
    for i, b in enumerate(bundles):
        if pair_task:
            tell(0.3 + 0.4 * i / len(bundles), f"{pair_task.upper()} pairs: {b.name}")
            frame = score_eval_pairs(b.model, b.tokenizer, held, max_len, limit=pairs, tasks=[pair_task])
            scored[b.name] = (int(frame.hits.sum()), len(frame))
    tell(0.7, "oscillation on the built-in sample")
    rough = verdict(oscillation(list(bundles), sample_texts(), max_len=max_len)).set_index("checkpoint").roughness
    tell(1.0, "measured")
    measured = {}
    for b in bundles:
        acc, kl, n = scores.get(b.name, (np.nan, np.nan, 0))
        hits, total = scored.get(b.name, (0, 0))
        measured[b.name] = Measured(acc, n, kl, hits, total, float(rough.get(b.name, np.nan)))
    return measured


@torch.inference_mode()
def map_ablation(bundle: ModelBundle, reference: ModelBundle, held: pd.DataFrame, pairs: int, max_len: int) -> pd.DataFrame:
    """Which corrections a relaxed model leans on: for each map of RELAXED_MAPS, the model with that map's
    corrections taken out of every application (B = 0: the shared matrix alone there), measured as `measure`
    measures MLM (the same masked tokens, KL from `reference`), beside the model whole. One row per map:
    map, mlm_accuracy, kl, mlm_lost and kl_added (against the whole model); the whole model's row has map ''."""
    from albert_lab.models import layer_applications

    variants = [bundle]
    maps = [name for names in RELAXED_MAPS.values() for name in names
            if isinstance(layer_applications(bundle.model)[0].albert_layers[0].get_submodule(name), RelaxedLinear)]
    for name in maps:
        model = copy.deepcopy(bundle.model)
        for module in layer_applications(model):
            module.albert_layers[0].get_submodule(name).lora_b.zero_()
        variants.append(dataclasses.replace(bundle, name=f"without {name}", model=model))
    scores = _mlm(variants, reference, held, pairs, max_len)
    whole_acc, whole_kl, _ = scores[bundle.name]
    rows = [dict(map="" if v is bundle else name, mlm_accuracy=scores[v.name][0], kl=scores[v.name][1],
                 mlm_lost=whole_acc - scores[v.name][0], kl_added=scores[v.name][1] - whole_kl)
            for v, name in zip(variants, ["", *maps], strict=True)]
    return pd.DataFrame(rows, columns=["map", "mlm_accuracy", "kl", "mlm_lost", "kl_added"])


def _bundle(name: str, source: ModelBundle, conv=None) -> ModelBundle:
    """A curve's model as the analyses take it, named by its place on the curve."""
    model, spec = (conv.model.eval(), conv.spec) if conv is not None else (source.model, source.spec)
    return ModelBundle(name=name, source=source.source, model=model, tokenizer=source.tokenizer, spec=spec,
                       heads=source.heads, card=source.card if conv is None else {}, device=source.device, dtype=source.dtype)


def _mlm(bundles: list[ModelBundle], reference: ModelBundle, held: pd.DataFrame, limit: int,
         max_len: int) -> dict[str, tuple[float, float, int]]:
    """Per model: MLM accuracy, and mean KL(reference || model) over the same masked tokens."""
    frame = held[held.task == "mlm"]
    if len(frame) > limit:
        frame = frame.sample(n=limit, random_state=0).sort_index()
    masked = MaskedPairs.of(reference.tokenizer, list(frame.a), list(frame.b), max_len)
    hits, kl, n = np.zeros(len(bundles)), np.zeros(len(bundles)), 0
    for idx in length_batches(masked.lengths, batch_tokens_for(reference.model), max_batch=512):
        inputs, pos, labels, _ = masked.batch(idx)
        ref = torch.log_softmax(masked_logits(reference.model, inputs, pos).float(), -1)
        p = ref.exp()
        negentropy = float((p * ref).sum())  # KL(p || q) = sum p log p - sum p log q, the first term once
        n += len(labels)
        for i, b in enumerate(bundles):
            logq = ref if b is reference else torch.log_softmax(masked_logits(b.model, inputs, pos).float(), -1)
            hits[i] += float((logq.argmax(-1).cpu() == labels).sum())
            kl[i] += 0.0 if b is reference else negentropy - float((p * logq).sum())
    return {b.name: (hits[i] / max(n, 1), kl[i] / max(n, 1), n) for i, b in enumerate(bundles)}


def _interval(row: Any, column: str) -> tuple[float, float, float]:
    """(accuracy, low, high) of `column` ('mlm_accuracy', 'pair_accuracy') in a curve's row (a tuple or a Series)."""
    stem = column.removesuffix("_accuracy")
    return float(getattr(row, column)), float(getattr(row, f"{stem}_low")), float(getattr(row, f"{stem}_high"))


def _standing(row: Any, other: Any, column: str) -> str:
    """'above' or 'below' where the 95% interval of the difference of `row`'s and `other`'s accuracy in
    `column` (two proportions, each on its n) leaves out 0, else 'level'. The models read the same tokens
    and pairs, so their errors go together and the unpaired interval is the cautious one. Without the
    counts, their two intervals apart."""
    (p, low, high), (q, o_low, o_high) = _interval(row, column), _interval(other, column)
    stem = column.removesuffix("_accuracy")
    n, m = float(getattr(row, f"{stem}_n", 0) or 0), float(getattr(other, f"{stem}_n", 0) or 0)
    apart = abs(p - q) > 1.96 * math.sqrt(p * (1 - p) / n + q * (1 - q) / m) if n > 0 and m > 0 else low > o_high or high < o_low
    return ("above" if p > q else "below") if apart else "level"


def _against(row: Any, other: Any, column: str, name: str) -> str:
    """'above the ALBERT's 0.523', or 'level with ...'s 0.945 (a difference within chance)' (_standing)."""
    standing, value = _standing(row, other, column), float(getattr(other, column))
    if standing == "level":
        return f"level with {name}'s {value:.3f} (a difference within chance)"
    return f"{standing} {name}'s {value:.3f}"


def _accuracy_words(row: Any, column: str, label: str, albert: Any, source: Any) -> str | None:
    """'NSP 0.934 [0.896, 0.958]: above the ALBERT's 0.523, level with the source's 0.945 (...)',
    with the share of what sharing lost it recovers where it is above the ALBERT and the two ends differ."""
    value, low, high = _interval(row, column)
    if not np.isfinite(value):
        return None
    words = f"{label} {value:.3f} [{low:.3f}, {high:.3f}]"
    ends = [(end, name) for end, name in ((albert, "the ALBERT"), (source, "the source"))
            if end is not None and np.isfinite(float(end[column]))]
    if ends:
        words += ": " + ", ".join(_against(row, end, column, name) for end, name in ends)
    if albert is not None and source is not None and ends and _standing(row, albert, column) == "above":
        bottom, top = float(albert[column]), float(source[column])
        if top > bottom:
            words += f", {min((value - bottom) / (top - bottom), 1.0):.0%} of what sharing lost"
    return words


def report(frame: pd.DataFrame) -> Report:
    """What `albert-lab relax --ranks` and the Relaxed view say beside the curve, for every panel: each
    rank's MLM and pair accuracy with its 95% interval, set against the ALBERT's and the source's
    (above or below only where the intervals are apart), its KL from the source and its roughness
    (Figure 1's zig-zag) against the source BERT's."""
    ends = {end: frame[frame.end == end].iloc[0] if (frame.end == end).any() else None for end in ("ALBERT", SOURCE)}
    albert, source = ends["ALBERT"], ends[SOURCE]
    remarks = []
    for row in frame[(frame.end == "") | (frame.end == "= source")].itertuples():
        task = (row.pair_task or "pair").upper()
        parts = [w for w in (_accuracy_words(row, "mlm_accuracy", "MLM", albert, source),
                             _accuracy_words(row, "pair_accuracy", task, albert, source)) if w]
        if np.isfinite(row.kl) and albert is not None and np.isfinite(albert.kl):
            parts.append(f"KL from the source {max(row.kl, 0.0):.3f} (the ALBERT's {albert.kl:.3f})")
        if np.isfinite(row.roughness) and source is not None and np.isfinite(source.roughness):
            rough = float(source.roughness)
            than = "rougher than" if row.roughness > rough else "smoother than" if row.roughness < rough else "as rough as"
            parts.append(f"roughness {row.roughness:.2f}, {than} the source BERT's {rough:.2f}")
        if parts:
            remarks.append(f"{row.model} ({row.share_of_source:.0%} of the source's parameters): " + "; ".join(parts))
    return Report(remarks=tuple(remarks))


def uptrain_report(before: pd.DataFrame, after: pd.DataFrame) -> Report:
    """What `albert-lab relax --uptrain` says beside its two curves: for each model, its MLM and pair
    accuracy before and after training with the 95% interval, the share of the source's (trained as
    long) it reaches and whether it is told apart from the source's; then which model of about the
    ALBERT's size (within 10% of its parameters) ends best, and whether chance tells it from the next."""
    source = after[after.end == SOURCE]
    if not len(source):
        return Report()
    top = source.iloc[0]
    start = before.set_index("model")
    remarks = []
    for row in after[after.end != SOURCE].itertuples():
        was = start.loc[row.model] if row.model in start.index else None
        parts = []
        for column, label in (("mlm_accuracy", "MLM"), ("pair_accuracy", (row.pair_task or "pair").upper())):
            (now, low, high), best = _interval(row, column), float(top[column])
            if not (np.isfinite(now) and np.isfinite(best) and best > 0):
                continue
            then = f"{float(was[column]):.3f} -> " if was is not None and np.isfinite(float(was[column])) else ""
            where = _standing(row, top, column)
            parts.append(f"{label} {then}{now:.3f} [{low:.3f}, {high:.3f}], {now / best:.0%} of the source's {best:.3f}"
                         + (" (a difference within chance)" if where == "level" else f" ({where} it)"))
        if parts:
            remarks.append(f"{row.model} ({row.share_of_source:.0%} of the source's parameters): " + "; ".join(parts))
    small = after[after.end != SOURCE]
    albert = small[small.end == "ALBERT"]
    if len(albert) and np.isfinite(small.mlm_accuracy).sum() > 1:
        size = float(albert.parameters.iloc[0])
        near = small[small.parameters <= 1.1 * size].sort_values("mlm_accuracy", ascending=False)
        if len(near) > 1:
            first, second = near.iloc[0], near.iloc[1]
            told = _against(first, second, "mlm_accuracy", second.model)
            remarks.append(f"Of the models within 10% of the ALBERT's {size:,.0f} parameters, {first.model} ends best on MLM "
                           f"({first.mlm_accuracy:.3f}): {told}")
    return Report(remarks=tuple(remarks))
