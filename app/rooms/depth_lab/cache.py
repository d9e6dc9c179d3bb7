"""The depth lab's settings, and its default views precomputed (app/rooms/depth_lab/default.json,
written by scripts/make_depth_default.py): the page's first view and the VGG comparison
at its default settings draw without training anything; other settings train once and
are kept for the process (the VGG nets one by one, so a stopped comparison keeps the
nets it finished)."""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any

import pandas as pd

from albert_lab.analysis.depth import VGG_NETS, DepthConfig

DEFAULT_FILE = Path(__file__).with_name("default.json")
VARIANTS = ["none", "batchnorm_before", "batchnorm_after", "layernorm", "residual"]
# The page's widgets start here (also the "vanishing gradients" preset): the lecture notes' toy
DEFAULTS: dict[str, Any] = dict(depth=16, width=32, init="gaussian", init_std=0.1, steps=300, dropout=0.0,
                                variants=["none", "batchnorm_before", "residual"])
VGG_DEFAULTS: dict[str, Any] = dict(steps=300, lr=0.1)  # the VGG tab's widgets start here; shipped
VGG_RECORD_EVERY = 20


def config(variant: str, depth: int, width: int, init: str, init_std: float, steps: int, dropout: float) -> DepthConfig:
    return DepthConfig(depth=int(depth), width=int(width), init=init, init_std=float(init_std), steps=int(steps),
                       dropout=float(dropout), norm="none" if variant == "residual" else variant,
                       residual=variant == "residual")


def default_configs() -> list[DepthConfig]:
    settings = {k: v for k, v in DEFAULTS.items() if k != "variants"}
    return [config(v, **settings) for v in DEFAULTS["variants"]]


def _key(cfg: DepthConfig) -> str:
    return json.dumps(asdict(cfg), sort_keys=True)


def vgg_key(depth: int, batchnorm: bool, steps: int, lr: float) -> str:
    return json.dumps(dict(depth=int(depth), batchnorm=bool(batchnorm), steps=int(steps), lr=float(lr)), sort_keys=True)


@lru_cache(maxsize=1)
def _precomputed() -> dict[str, tuple[pd.DataFrame, pd.DataFrame]]:
    if not DEFAULT_FILE.is_file():
        return {}
    data = json.loads(DEFAULT_FILE.read_text())
    found = {_key(DepthConfig(**entry["config"])): (_frame(entry["history"]), _frame(entry["flow"]))
             for entry in data["runs"]}
    found |= {vgg_key(**entry["vgg"]): (_frame(entry["history"]), _frame(entry["flow"])) for entry in data.get("vgg", [])}
    return found


def _frame(table: dict) -> pd.DataFrame:
    return pd.DataFrame(table["data"], columns=table["columns"]).assign(model=table["model"])


def precomputed(cfg: DepthConfig) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(history, flow) shipped for this exact configuration, else None."""
    found = _precomputed().get(_key(cfg))
    return None if found is None else (found[0].copy(), found[1].copy())


_VGG_TRAINED: OrderedDict[str, tuple[pd.DataFrame, pd.DataFrame]] = OrderedDict()  # this process's, newest last


def vgg_result(depth: int, batchnorm: bool, steps: int, lr: float) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """One VGG net's (history, flow): shipped, or trained earlier in this process, else None."""
    key = vgg_key(depth, batchnorm, steps, lr)
    found = _precomputed().get(key) or _VGG_TRAINED.get(key)
    return None if found is None else (found[0].copy(), found[1].copy())


def keep_vgg(depth: int, batchnorm: bool, steps: int, lr: float, result: tuple[pd.DataFrame, pd.DataFrame]) -> None:
    _VGG_TRAINED[vgg_key(depth, batchnorm, steps, lr)] = result
    while len(_VGG_TRAINED) > 4 * len(VGG_NETS):  # the last few settings tried, a few MB at most
        _VGG_TRAINED.popitem(last=False)


def write_default(runs: list[tuple[DepthConfig, pd.DataFrame, pd.DataFrame]],
                  vgg: list[tuple[dict, pd.DataFrame, pd.DataFrame]] = (), path: Path = DEFAULT_FILE) -> None:
    """`vgg`: (dict(depth, batchnorm, steps, lr), history, flow) per net."""
    def records(frame: pd.DataFrame) -> dict:  # compact: one model name, columns once, 6 significant digits
        rest = frame.drop(columns="model")
        data = [[float(f"{v:.6g}") if isinstance(v, float) else v for v in row] for row in rest.itertuples(index=False)]
        return {"model": str(frame.model.iloc[0]), "columns": list(rest.columns), "data": data}

    payload = {"about": "written by scripts/make_depth_default.py; the depth lab's first view and default VGG comparison",
               "runs": [{"config": asdict(cfg), "history": records(h), "flow": records(f)} for cfg, h, f in runs],
               "vgg": [{"vgg": settings, "history": records(h), "flow": records(f)} for settings, h, f in vgg]}
    path.write_text(json.dumps(payload, separators=(",", ":")) + "\n")
