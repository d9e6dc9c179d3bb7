"""What the Parameters page keeps between runs (app.shell.state.kept)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ParametersState:
    previous_h: dict[str, int] = field(default_factory=dict)  # the calculator's last H, by its widget key (one per preset)
    relax_asked: tuple | None = None  # the relaxation curve's inputs when Compute was pressed (relaxed.Request)
    relax_made: tuple[str, str] | None = None  # the relaxed model made last: (its name in the sidebar, its folder)
