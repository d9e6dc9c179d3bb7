"""The model card of a checkpoint, as plain data (the app and CLI render it): from a
loaded ModelBundle, or from a CheckpointSummary (the folder's files, nothing loaded)."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

from albert_lab.checkpoint.discover import CheckpointSummary
from albert_lab.checkpoint.heads import trained_with
from albert_lab.data.corpora import OOD
from albert_lab.params import count

if TYPE_CHECKING:
    from albert_lab.checkpoint.load import ModelBundle


def model_card(bundle: ModelBundle | CheckpointSummary, device: str | None = None, dtype: str | None = None
               ) -> dict[str, Any]:
    """`device` and `dtype` default to the bundle's (a summary has none: pass what it
    would load on)."""
    report = count(bundle.spec, seq_len=min(512, bundle.spec.max_positions))
    trained = trained_with(bundle.spec, bundle.heads, bundle.card)
    spec = bundle.spec.to_dict() | ({"objective": "not recorded"} if trained == "unknown" else {})
    params = report.to_dict()
    # a head the checkpoint lacks holds no parameters in it (the chart drew all-MiniLM's 'pair head 770')
    absent = {name for name, state in (("MLM head", bundle.heads.mlm), ("pair head", bundle.heads.pair)) if state == "missing"}
    params["total_with_heads"] -= sum(params["by_component"][name]["unique"] for name in absent)
    params["by_component"] = {k: v for k, v in params["by_component"].items() if k not in absent}
    provenance = dict(bundle.card.get("provenance", {}))
    if not bundle.card:
        provenance = {"origin": "no albert_lab.json: provenance unknown (not trained by ALBERT Lab)"}
    return {
        "name": bundle.name,
        "source": bundle.source,
        "spec": spec,
        "spec_label": bundle.spec.label_with("pair objective not recorded" if trained == "unknown" else trained.upper()),
        "params": params,
        "heads": {"mlm": bundle.heads.mlm, "pair": bundle.heads.pair, "pair_kind": bundle.heads.pair_kind},
        "trained_with": trained,  # 'unknown' where nothing records it
        "warning": bundle.heads.warning,
        "provenance": provenance,
        "metrics": bundle.card.get("metrics", {}),
        "probe": bundle.card.get("probe"),  # a pair head fitted on the frozen encoder (albert-lab fit-head)
        "relaxation": bundle.card.get("relaxation"),  # a relaxed model's ranks, parameters added, energy kept (albert-lab relax)
        "device": device or str(getattr(bundle, "device", "not loaded")),
        "dtype": dtype or str(getattr(bundle, "dtype", "not loaded")).replace("torch.", ""),
        "folder": str(Path(bundle.source)) if Path(bundle.source).exists() else None,
    }


def metric_counts(metrics: dict[str, Any]) -> dict[str, dict[str, int]]:
    """{domain: {metric: n}} of a card's metrics with intervals ('ood_' keys: 'out'), for
    evaluation.count_notes."""
    counts: dict[str, dict[str, int]] = {}
    for key, value in metrics.items():
        if isinstance(value, dict) and "n" in value:
            domain = "out" if key.startswith("ood_") else "in"
            counts.setdefault(domain, {})[key.removeprefix("ood_")] = int(value["n"])
    return counts


def count_notes(counts: dict[str, dict[str, int]]) -> list[str]:
    """What the SOP counts mean, from {domain ('in' | 'out'): {metric: n}}: which pairs each
    scores (so why SOP lead's and SOP interior's add up to more than SOP's), and when SOP and
    SOP interior are nearly the same pairs."""
    notes = []
    for domain, n in counts.items():
        sop, lead, interior = n.get("sop"), n.get("sop_lead"), n.get("sop_interior")
        if not (sop and lead is not None and interior):
            continue
        where = "Held-out" if domain == "in" else f"Out of domain ({', '.join(OOD)})"
        held = "the 1 of them that holds" if lead == 1 else f"the {lead:,} of them that hold"
        note = (f"{where}: SOP scores all {sop:,} pairs made as training makes them. SOP lead scores {held} "
                "a document's first sentence (lead pairs); SOP interior scores the other "
                f"{sop - lead:,} (interior pairs, which do not) and {interior - (sop - lead):,} more interior pairs that "
                "SOP does not score, one from inside each document of three or more segments. So SOP lead and SOP "
                f"interior together count {lead + interior:,} pairs, more than SOP's {sop:,}: they are not a split of "
                "SOP's pairs.")
        if lead <= 0.05 * sop:
            note += (f" Only {lead:,} of the {sop:,} hold a document's first sentence (long documents): SOP and SOP "
                     "interior score almost the same pairs, so they read alike.")
        notes.append(note)
    return notes


def metric_lines(metrics: dict[str, Any]) -> list[tuple[str, str]]:
    """(metric, text) for a card's held-out metrics: '0.912 [0.89, 0.93] n=515' for
    metrics with an interval (written by scripts/export_checkpoints.py), '0.912' for
    plain numbers (older cards), skipping other bookkeeping fields."""
    lines = []
    for key, value in metrics.items():
        if isinstance(value, dict) and {"accuracy", "low", "high", "n"} <= set(value):
            lines.append((key, f"{value['accuracy']:.3f} [{value['low']:.2f}, {value['high']:.2f}] n={int(value['n']):,}"))
        elif isinstance(value, float):
            lines.append((key, f"{value:.3f}"))
    return lines
