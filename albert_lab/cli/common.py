"""What the command-line modules share: the command registry and a command's output (a table,
one JSON document, a progress line). Flags and their types are cli.arguments'; checkpoints and
texts read from them cli.inputs'; a command's files cli.outputs'. The command modules import
from here; nothing here imports them."""

from __future__ import annotations

import argparse
import json
import math
import sys
from collections.abc import Callable
from typing import Any

from albert_lab.analysis.registry import text_table as table  # noqa: F401 (the commands' plain tables)
from albert_lab.errors import AlbertLabError
from albert_lab.runfolder import loss_words

Handler = Callable[[argparse.Namespace], int]
COMMANDS: dict[str, tuple[Callable[[argparse.ArgumentParser], None], Handler, str]] = {}


def command(name: str, help: str) -> Callable[[Callable[[argparse.ArgumentParser], None]], Callable[[Handler], Handler]]:
    """Register a sub-command: `@command(name, help)(add_arguments)(handler)`."""
    def with_arguments(add: Callable[[argparse.ArgumentParser], None]) -> Callable[[Handler], Handler]:
        def with_handler(handler: Handler) -> Handler:
            COMMANDS[name] = (add, handler, help)
            return handler
        return with_handler
    return with_arguments


def emit(args: argparse.Namespace, payload: Any, text: str) -> None:
    """`text` for people, or with --json one valid JSON document (NaN and infinities,
    which JSON has no words for, become null)."""
    print(json.dumps(json_safe(payload), indent=2, default=str, allow_nan=False) if getattr(args, "json", False) else text)


def json_safe(value: Any) -> Any:
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if value is not None and type(value).__name__ in ("NAType", "NaTType"):  # pandas' missing values
        return None
    if hasattr(value, "item") and callable(value.item) and getattr(value, "ndim", 1) == 0:  # numpy scalars
        return json_safe(value.item())
    return value


def fail(message: str):
    raise AlbertLabError(message)


def print_frame(args: argparse.Namespace, frame, columns=None) -> None:
    """`columns` chooses what the text table shows; --json prints every column the library returned."""
    view = frame[columns] if columns else frame
    emit(args, frame.to_dict(orient="records"), view.to_string(index=False, float_format=lambda v: f"{v:.4g}"))


def metric_words(row: dict) -> str:
    """A metrics.jsonl row as a person reads it (was the raw dict)."""
    step = f"step {row.get('step', 0):,}"
    if row.get("kind") == "train" and "loss" in row:
        eta = row.get("eta_s")
        left = "" if eta is None else f", about {eta / 60:,.0f} min left" if eta >= 90 else f", about {eta:,.0f} s left"
        return (f"{step}: {loss_words(row)}, {row.get('run_tokens_per_s', row.get('tokens_per_s', 0)):,.0f} "
                f"tokens/s, {row.get('tokens', 0):,} tokens seen{left}")
    if row.get("kind") == "eval":
        names = {"eval_mlm_acc": "MLM", "eval_nsp_acc": "NSP", "eval_sop_acc": "SOP", "eval_sop_interior_acc": "SOP interior"}
        found = [f"{name} {row[key]:.3f}" for key, name in names.items() if isinstance(row.get(key), (int, float))]
        return f"{step}: held-out accuracy " + (", ".join(found) or "-")
    return f"{step}: {row.get('kind', 'event')}"


def progress_line():
    """A progress callback for stderr: one line rewritten in a terminal, a line per step
    in a log (evaluate was silent for minutes)."""
    tty = sys.stderr.isatty()

    def show(fraction: float, what: str) -> None:
        print(f"{chr(13) if tty else ''}[{fraction:4.0%}] scoring {what} ...", end="" if tty else "\n", file=sys.stderr,
              flush=True)

    return show
