"""What the Sentence pairs page's tabs share: the example pair, a label and a head's verdict in words, the page's
kept state, the shipped checkpoints' results file, a model's size and the words for how an estimate was made."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from albert_lab.paths import checkpoints_dir
from app.shell import costs, pace

EXAMPLE_A = "The Nile is a major north-flowing river in northeastern Africa."
EXAMPLE_B = "It flows into the Mediterranean Sea and is among the longest rivers in the world."
# A pair's label in words, for either head: 0 is A then B in the original order (SOP) or B the next segment (NSP)
LABEL_WORDS = {0: "0: original order / B is next", 1: "1: swapped / B is random"}
RIGHT_WORDS = {True: "right", False: "wrong"}  # a head's prediction against the label; blank where there is none
LABEL_CHOICES = ["none", "0", "1"]  # a label picker's values: none, or 0 or 1
LABEL_HELP = ("what the pair is: for an SOP head, 0 when A then B is the original order and 1 when swapped; for an "
              "NSP head, 0 when B is the segment after A and 1 when B is random")


def label_choice(value: str) -> int | None:
    """A label picker's value ('none', '0' or '1') as a label."""
    return None if value == "none" else int(value)


def label_option(value: str) -> str:
    """A label picker's option in words."""
    return "no label" if value == "none" else LABEL_WORDS[int(value)]


def results_path() -> Path:
    """The shipped checkpoints' evaluation rows (read on every run: the folder can change)."""
    return checkpoints_dir() / "results.json"


@dataclass
class PairsState:
    """What the Sentence pairs page keeps between runs (app.shell.state.kept)."""

    t5_asked: tuple[int, tuple[str, ...]] | None = None  # Table 5 measured now: the pairs per task and checkpoints asked for
    upload: tuple[str, bytes] | None = None  # the last pairs file uploaded: name and bytes, kept for the session
    attribution: tuple[tuple, Any] | None = None  # the last attribution: its request and result
    linked_upload: bool = False  # a link opened the Upload pairs tab, without the file its maker scored
    edited: tuple[int, str, str] | None = None  # the upload's pair last re-scored: its row, A and B as edited

    def forget_upload(self) -> None:
        self.upload = None


def model_size(bundle) -> float:
    """A model's forward cost relative to albert-sop's (H = 256, L = 6), the size the guesses are timed at."""
    return costs.size(bundle.spec)


def pace_words(kind: str) -> str:
    return "at this server's pace so far" if pace.measured(kind) else "on two cores, longer when others use them"
