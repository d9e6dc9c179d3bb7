"""What the Model card page keeps between runs (app.shell.state.kept)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class ModelCardState:
    probe_done: tuple[str, str, float] | None = None  # the probe last fitted here: (name, folder, held-out accuracy)
    albertize_done: tuple[str, str] | None = None  # the checkpoint last converted here: (its name in the sidebar, folder)
