"""What the Oscillation page's measurement says about the paper's claim for the models picked,
and, where a model breaks the paper's pattern, what its card says about why. Pure functions of
the verdicts (albert_lab.analysis.oscillation.verdict) and the checkpoints' cards."""

from __future__ import annotations

import itertools
from collections.abc import Mapping
from typing import Any

import pandas as pd

PAPER = ("Lan et al. plot these two curves for BERT-large and ALBERT-large (Figure 1) and find ALBERT's transitions "
         "from layer to layer much smoother than BERT's: BERT's L2 distance goes up and down, ALBERT's falls steadily "
         "after the first layer.")


def shown(value: float) -> str:
    """A roughness as the page shows it (two decimals): comparisons are made on what a reader sees."""
    return f"{value:.2f}"


# A curve's shape (verdict's `shape`) in words, and the shapes of the paper's Figure 1.
SHAPE_WORDS = {"falls": "falls steadily", "converging": "shrinks toward 0", "zig-zag": "goes up and down",
               "one turn": "turns once", "grows": "grows", "level": "stays level"}
ALBERT_SHAPES = ("falls", "converging")  # ALBERT-large's curve: a steady fall after the first layer
BERT_SHAPE = "zig-zag"


def against_the_paper(verdicts: pd.DataFrame, families: Mapping[str, str], cards: Mapping[str, Mapping[str, Any]]) -> str:
    """Markdown: does every ALBERT picked have a smoother L2 curve (lower roughness, as shown)
    than every BERT picked, as in the paper? If not, the pairs that break it, and for each model
    whose curve is not the shape the paper shows for its kind, what its card says about why."""
    rough = dict(zip(verdicts.checkpoint, verdicts.roughness, strict=True))
    shapes = dict(zip(verdicts.checkpoint, verdicts["shape"], strict=True))
    albert = [n for n in rough if families.get(n) == "albert"]
    bert = [n for n in rough if families.get(n) == "bert"]
    if not albert or not bert:
        only = "ALBERT" if albert else "BERT"
        return (f"**The paper's comparison needs both kinds:** only {only}s are picked. Add "
                f"{'a BERT (e.g. bert-nsp)' if albert else 'an ALBERT (e.g. albert-sop)'} in the sidebar to see whether "
                "ALBERT's curve is the smoother one here.")
    broken = [(a, b) for a in albert for b in bert if not float(shown(rough[a])) < float(shown(rough[b]))]
    if not broken:
        return (f"**As in the paper, for the models picked:** every ALBERT curve ({_listed(albert, rough)}) is smoother "
                f"than every BERT one ({_listed(bert, rough)}).")
    ties = [(a, b) for a, b in broken if shown(rough[a]) == shown(rough[b])]
    rougher = [(a, b) for a, b in broken if (a, b) not in ties]
    involved = dict.fromkeys([a for a, _ in broken if shapes[a] not in ALBERT_SHAPES]
                             + [b for _, b in broken if shapes[b] != BERT_SHAPE])
    reasons = "\n".join(f"- {why(n, families[n], shapes[n], cards.get(n, {}))}" for n in involved)
    tied = "; ".join(_tied([a for a, b in ties if b == bert_name], bert_name, shown(rough[bert_name]))
                     for bert_name in dict.fromkeys(b for _, b in ties))
    if rougher:  # the paper's pattern reversed for at least one pair
        head = "**Not as in the paper, for the models picked:** " + "; ".join(
            f"{a} (ALBERT, {shown(rough[a])}) is rougher than {b} (BERT, {shown(rough[b])})" for a, b in rougher)
        head += f"; {tied}." if ties else "."
    else:  # only ties: the measure does not tell the two kinds apart, it does not put them the other way round
        head = (f"**Neither smoother, for the models picked:** {tied}. The paper's ALBERT is the smoother one; this "
                "measure does not tell these apart.")
    if reasons:
        head += (" The paper's ALBERT falls steadily after its first layer and its BERT goes up and down; where a curve "
                 f"here does otherwise, its card says why:\n{reasons}")
    return (f"{head}\n\nThe paper's models are 24 layers deep and trained from scratch for 125,000 steps; a curve of a "
            "few layers has few places to zig-zag, and it moves with the texts (the error bars).")


def why(name: str, family: str, shape: str, card: Mapping[str, Any]) -> str:
    """One line from the checkpoint's card on why its curve does not have the paper's shape for its kind."""
    provenance = card.get("provenance", {}) or {}
    curve = f"its curve {SHAPE_WORDS.get(shape, shape)} from layer 2 on"
    distilled = provenance.get("distilled_from") or {}
    start = provenance.get("init_from") or {}
    start_name = start.get("name") if isinstance(start, dict) else str(start)
    if family == "albert" and isinstance(distilled, dict) and distilled.get("hidden_states_matched"):
        return (f"**{name}** ({curve}) was trained to match the hidden state of {distilled.get('name', 'a teacher')} "
                "after each of its layers (distillation): its path through the layers copies that unshared model's "
                "rather than what sharing one block makes of it.")
    if family == "albert" and "albertize" in str(provenance.get("source_model", "")) + str(start):
        return (f"**{name}** ({curve}) began as a BERT whose layers were averaged into one shared block "
                "(albertize): it inherits the BERT's path through the layers.")
    if start_name:
        return (f"**{name}** ({curve}) was uptrained from {start_name}, a pretrained model, not trained from "
                f"scratch as the paper's {family.upper()}-large was.")
    return (f"**{name}** ({curve}) was trained from scratch {'with one shared block' if family == 'albert' else 'without sharing'}"
            f", as the paper's {family.upper()}, and still differs from it on these texts.")


def _tied(alberts: list[str], bert: str, score: str) -> str:
    """ALBERTs whose roughness, as shown, equals a BERT's."""
    flat = ": no zig-zag in either" if len(alberts) == 1 else ": no zig-zag in any of them"
    return (f"{_and(alberts)} (ALBERT) {'is' if len(alberts) == 1 else 'are'} as smooth as {bert} (BERT), {score} "
            f"each{flat if float(score) == 0 else ''}")


def _and(names: list[str]) -> str:
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _listed(names: list[str], rough: Mapping[str, float]) -> str:
    return ", ".join(f"{n} {shown(rough[n])}" for n in names)


def smoother_sentence(verdicts, where: str = "on these texts") -> str:
    """What the data say, in the words of the paper's claim (lower roughness: smoother), and on
    which texts (`where`: 'on your 2 texts'), so a reader knows what was measured."""
    ranked = list(verdicts.sort_values("roughness", kind="stable").itertuples())
    if len(ranked) < 2:
        return f"Roughness of {ranked[0].checkpoint} {where}: {ranked[0].roughness:.2f}."
    text = f"{ranked[0].checkpoint} ({ranked[0].roughness:.2f})"
    for before, row in itertools.pairwise(ranked):  # equal as shown is '=': '0.00 < 0.00' read as a ranking
        text += f" {'=' if f'{row.roughness:.2f}' == f'{before.roughness:.2f}' else '<'} {row.checkpoint} ({row.roughness:.2f})"
    return f"Smoothest to roughest {where}: {text}."


def reading(frame: pd.DataFrame, cards: Mapping[str, Mapping[str, Any]] | None = None, where: str = "on these texts") -> str:
    """Everything the Oscillation page says beside its figures, as markdown: each checkpoint's verdict,
    smoothest to roughest, and the comparison with the paper (`cards`: each checkpoint's, for why a curve
    breaks the paper's pattern). `frame`: albert_lab.analysis.oscillation.oscillation's."""
    from albert_lab.analysis.oscillation import verdict

    verdicts = verdict(frame)
    lines = [f"**{row.checkpoint}**: {verdict_words(row)}" for row in verdicts.itertuples()]
    families = dict(zip(frame.checkpoint, frame.family, strict=False))
    return "\n\n".join(["\n".join(f"- {line}" for line in lines), smoother_sentence(verdicts, where),
                         against_the_paper(verdicts, families, cards or {})])


def verdict_words(row: Any) -> str:
    """A verdict row in the page's words: the shape's headline in bold, never 'oscillating' alone, then its roughness."""
    return f"**{row.headline}**: {row.detail}; roughness {row.roughness:.2f} (lower is smoother)"
