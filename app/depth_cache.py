"""The depth lab's settings, and its default view precomputed (app/depth_default.json,
written by scripts/make_depth_default.py): the page's first view draws without
training anything; other settings train once and are cached."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from albert_lab.analysis.depth import DepthConfig

DEFAULT_FILE = Path(__file__).with_name("depth_default.json")
VARIANTS = ["none", "batchnorm_before", "batchnorm_after", "layernorm", "residual"]
# The page's widgets start here (also the "vanishing gradients" preset): the lecture notes' toy
DEFAULTS: dict[str, Any] = dict(depth=16, width=32, init="gaussian", init_std=0.1, steps=300, dropout=0.0,
                                variants=["none", "batchnorm_before", "residual"])


def config(variant: str, depth: int, width: int, init: str, init_std: float, steps: int, dropout: float) -> DepthConfig:
    return DepthConfig(depth=int(depth), width=int(width), init=init, init_std=float(init_std), steps=int(steps),
                       dropout=float(dropout), norm="none" if variant == "residual" else variant,
                       residual=variant == "residual")


def default_configs() -> list[DepthConfig]:
    settings = {k: v for k, v in DEFAULTS.items() if k != "variants"}
    return [config(v, **settings) for v in DEFAULTS["variants"]]


def _key(cfg: DepthConfig) -> str:
    return json.dumps(asdict(cfg), sort_keys=True)


@lru_cache(maxsize=1)
def _precomputed() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    if not DEFAULT_FILE.is_file():
        return {}
    data = json.loads(DEFAULT_FILE.read_text())
    return {_key(DepthConfig(**entry["config"])): (_frame(entry["history"]), _frame(entry["flow"])) for entry in data["runs"]}


def _frame(table: dict) -> pd.DataFrame:
    return pd.DataFrame(table["data"], columns=table["columns"]).assign(model=table["model"])


def precomputed(cfg: DepthConfig) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(history, flow) shipped for this exact configuration, else None."""
    found = _precomputed().get(_key(cfg))
    return None if found is None else (found[0].copy(), found[1].copy())


def write_default(runs: list[tuple[DepthConfig, pd.DataFrame, pd.DataFrame]], path: Path = DEFAULT_FILE) -> None:
    def records(frame: pd.DataFrame) -> dict:  # compact: one model name, columns once, 6 significant digits
        rest = frame.drop(columns="model")
        data = [[float(f"{v:.6g}") if isinstance(v, float) else v for v in row] for row in rest.itertuples(index=False)]
        return {"model": str(frame.model.iloc[0]), "columns": list(rest.columns), "data": data}

    payload = {"about": "written by scripts/make_depth_default.py; the depth lab's first view",
               "runs": [{"config": asdict(cfg), "history": records(h), "flow": records(f)} for cfg, h, f in runs]}
    path.write_text(json.dumps(payload, separators=(",", ":")) + "\n")
