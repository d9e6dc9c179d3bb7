"""What a run's checkpoint says about the run that made it: the card written with every
save (its name, what its heads are, held-out metrics, and provenance: the command,
corpus, seed, steps, tokens, machine, library versions and the code's commit)."""

from __future__ import annotations

import os
import platform
import subprocess
import time
from typing import Any

import torch

from albert_lab.checkpoint.sources import describe_source, portable_command, portable_name
from albert_lab.paths import PROJECT_ROOT
from albert_lab.training.config import TrainConfig
from albert_lab.training.prepare import Prepared


def run_card(config: TrainConfig, run_id: str, prepared: Prepared, steps: int, tokens: int, elapsed: float,
             metrics: dict[str, dict[str, float]], init_card: dict[str, Any] | None = None,
             teacher: dict[str, Any] | None = None, device: torch.device | None = None) -> dict[str, Any]:
    """The card of a run's checkpoint after `steps` steps, `tokens` tokens and `elapsed` seconds of training."""
    corpus = prepared.corpus
    return {
        "name": config.name or run_id,
        "heads": {"mlm": "probe" if config.heads_only else "trained",
                  "pair": "untrained" if config.objective == "none" else "probe" if config.heads_only else "trained"},
        "metrics": metrics,
        "provenance": {
            "command": portable_command(config.command), "run_id": run_id, "corpus": corpus.name, "corpus_credit": corpus.credit,
            "corpus_fingerprint": corpus.fingerprint,
            **({"eval_corpus": config.eval_corpus} if config.eval_corpus else {}), "seed": config.seed, "steps": steps, "tokens": tokens,
            "wall_time_s": round(elapsed, 1), "machine": machine(device), "torch": torch.__version__,
            "transformers": transformers_version(), "code": code_version(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "train_config": portable_config(config),
            **({"init_from": init_card} if init_card else {}),
            **({"distilled_from": {"folder": describe_source(config.distil_from), "weight": config.distil_weight,
                                   **teacher}} if teacher else {}),
        },
    }


PATH_FIELDS = ("init_from", "distil_from", "tokenizer", "corpus", "eval_corpus")  # fields that may name a folder or file


def portable_config(config: TrainConfig) -> dict[str, Any]:
    """The run's config as its card records it: a folder or file named as on every machine
    (sources.portable_name), never the path it had on the one that trained."""
    fields = config.to_dict()
    return {**fields, **{name: portable_name(fields[name]) for name in PATH_FIELDS if fields.get(name)}}


def machine(device: torch.device | None = None) -> str:
    """'x86_64, 16 cores, Linux', led by the accelerator's name when the run trained on one."""
    host = f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, {platform.system()}"
    return f"{torch.cuda.get_device_name(device)}; {host}" if device is not None and device.type == "cuda" else host


def code_version() -> str:
    """The git commit the run's code came from (with '+changes' when the tree was dirty)."""
    try:
        commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=PROJECT_ROOT, capture_output=True, text=True,
                                timeout=5).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=PROJECT_ROOT,
                               capture_output=True, text=True, timeout=5).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return (commit or "unknown") + ("+changes" if dirty else "")


def transformers_version() -> str:
    import transformers

    return transformers.__version__
