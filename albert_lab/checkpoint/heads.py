"""Which heads a checkpoint can be trusted with, and what to tell the user about it."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from albert_lab.spec import ModelSpec

PAIR_KEYS = {"albert": "sop_classifier.", "bert": "cls.seq_relationship."}
MLM_KEYS = {"albert": "predictions.", "bert": "cls.predictions."}
POOLER_KEYS = {"albert": "albert.pooler.", "bert": "bert.pooler."}  # the pair head reads the pooler: part of it here
HeadState = Literal["trained", "untrained", "missing", "present", "probe"]


@dataclass(frozen=True)
class HeadStatus:
    """What a checkpoint's heads can be trusted with.

    trained:   weights present and trained by this project (per albert_lab.json);
    untrained: weights present but never trained (objective 'none');
    missing:   not in the checkpoint: transformers initialised them randomly;
    present:   weights present, provenance unknown (e.g. a hub checkpoint);
    probe:     a pair head fitted on the frozen encoder (`albert-lab fit-head`).
    """

    mlm: HeadState
    pair: HeadState
    pair_kind: Literal["sop", "nsp"]  # what the pair head predicts; label 0 = original order / is next
    family: Literal["albert", "bert"] = "albert"
    unused: tuple[str, ...] = ()  # weights in the file that the model has no place for (ignored on load)

    @property
    def pair_usable(self) -> bool:
        return self.pair in ("trained", "present", "probe")

    @property
    def missing(self) -> list[str]:
        """The missing heads by name, e.g. ['MLM head', 'NSP head']."""
        return [f"{name} head" for name, state in (("MLM", self.mlm), (self.pair_kind.upper(), self.pair)) if state == "missing"]

    @property
    def warning(self) -> str | None:
        kind, notes = self.pair_kind.upper(), []
        if self.missing:
            one = len(self.missing) == 1
            uses = " and ".join(use for use, state in (("masked-token predictions", self.mlm), (f"{kind} scores", self.pair))
                                if state == "missing")
            notes.append(f"The {' and '.join(self.missing)} weights are missing from this checkpoint: "
                         f"transformers would initialise {'it' if one else 'them'} randomly, so {uses} would be noise; "
                         "none are computed.")
            if self.pair == "missing":
                hub = (" (the model hub's ALBERT checkpoints ship without it; Google's original release, e.g. "
                       "albert_base_v2.tar.gz, carries the trained one: give its folder to --checkpoint)") if self.family == "albert" else ""
                notes.append(f"An {kind} probe can be fitted on the frozen encoder with `albert-lab fit-head`{hub}.")
        if self.pair == "untrained":
            notes.append(f"This model was trained without an inter-sentence loss: its {kind} head was never trained.")
        if self.pair == "probe":
            notes.append(f"The {kind} head is a probe on a frozen encoder, fitted after pretraining, not trained with the model.")
        if self.unused:
            shown = ", ".join(repr(k[:60]) for k in self.unused[:3]) + (", ..." if len(self.unused) > 3 else "")
            notes.append(f"The weights file holds {len(self.unused):,} weight{'s' * (len(self.unused) != 1)} this model has no "
                         f"place for ({shown}): ignored; the folder may hold another model's weights.")
        return " ".join(notes) or None


def encoder_keys(family: str, keys: set[str]) -> list[str]:
    """The keys that are not of a pretraining head (MLM or pair), sorted."""
    return sorted(k for k in keys if not k.startswith((MLM_KEYS[family], PAIR_KEYS[family], POOLER_KEYS[family])))


def head_status(spec: ModelSpec, missing: set[str], card: dict[str, Any], unused: set[str] = frozenset()) -> HeadStatus:
    """Missing weights win; then what the card records (the training loop writes
    `heads`); then the objective the card names; without a card, 'present'."""
    recorded = card.get("heads", {})

    def state(prefix: tuple[str, ...], head: str, trained: bool) -> HeadState:
        if any(k.startswith(prefix) for k in missing):
            return "missing"
        if not card:
            return "present"
        return recorded.get(head) or ("trained" if trained else "untrained")

    objective = spec.objective
    kind: Literal["sop", "nsp"] = objective if objective in ("sop", "nsp") else ("sop" if spec.family == "albert" else "nsp")
    pair_prefixes = (PAIR_KEYS[spec.family], POOLER_KEYS[spec.family])
    return HeadStatus(mlm=state((MLM_KEYS[spec.family],), "mlm", True),
                      pair=state(pair_prefixes, "pair", objective != "none"), pair_kind=kind, family=spec.family,
                      unused=tuple(sorted(unused)))


def trained_with(spec: ModelSpec, heads: HeadStatus, card: dict[str, Any]) -> str:
    """The pair objective a checkpoint was trained with, as far as its files say: the
    card's, when this project wrote one; else the pair head it carries (a hub BERT with its
    NSP head: 'nsp'); 'unknown' with neither (an encoder without a pair head, such as
    all-MiniLM-L6-v2: nothing says it was trained with NSP, whatever the spec defaults to)."""
    if card:
        return spec.objective
    return heads.pair_kind if heads.pair == "present" else "unknown"
