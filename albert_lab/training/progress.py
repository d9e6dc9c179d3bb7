"""How far a run is (steps, tokens, seconds of training), and the metrics line of the steps
since the last one: their means, the token rates and the time left."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


@dataclass
class Progress:
    step: int = 0
    tokens: int = 0
    elapsed: float = 0.0  # seconds of training, summed over resumes
    window: dict[str, float] = field(default_factory=dict)  # sums since the last log line

    def add(self, **values: float) -> None:
        for key, value in values.items():
            self.window[key] = self.window.get(key, 0.0) + value

    def train_row(self, lr: float, epoch: float, max_steps: int | None, budget_s: float | None,
                  distil: bool) -> dict[str, Any]:
        """The window's metrics row (means over its steps, rates, the time left to `max_steps` or
        `budget_s`, whichever comes first), the window emptied."""
        p, w = self, self.window
        rate = w["tokens"] / max(w["time"], 1e-9)
        if max_steps and (not budget_s or p.step / max_steps >= p.elapsed / budget_s):
            eta = (max_steps - p.step) * w["time"] / w["steps"]
        else:
            eta = max(0.0, (budget_s or 0.0) - p.elapsed)
        n = w["steps"]
        # a metric that was not measured is absent, never a number: no pair loss or accuracy under 'none'
        pair = {"pair_loss": w["pair_loss"] / n, "pair_acc": w["pair_hits"] / w["pair_n"]} if w["pair_n"] else {}
        row = {"kind": "train", "step": p.step, "epoch": round(epoch, 3), "loss": w["loss"] / n,
               "mlm_loss": w["mlm_loss"] / n, **pair, "mlm_acc": w["mlm_hits"] / max(1, w["mlm_n"]),
               "grad_norm": w["grad_norm"] / n, "lr": lr,
               "tokens": p.tokens, "tokens_per_s": rate, "run_tokens_per_s": p.tokens / max(p.elapsed, 1e-9),
               "elapsed_s": p.elapsed, "eta_s": eta, **({"distil_loss": w["distil_loss"] / n} if distil else {})}
        p.window = {}
        return row
