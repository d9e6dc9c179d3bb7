"""What the Parameters page keeps between runs (app.shell.state.kept)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParametersState:
    previous_h: dict[str, int] = field(default_factory=dict)  # the calculator's last H, by its widget key (one per preset)
