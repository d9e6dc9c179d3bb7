"""The depth lab's settings, and its default views precomputed (app/rooms/depth_lab/default.json,
written by scripts/make_depth_default.py): the page's first view and the VGG comparison
at its default settings draw without training anything; other settings are trained through
the runner, which keeps each net for every visitor (app/rooms/depth_lab/runs.py)."""

from __future__ import annotations

import json
from dataclasses import asdict
from functools import lru_cache
from pathlib import Path
from typing import Any, get_args

import pandas as pd

from albert_lab import devices
from albert_lab.analysis.depth import VGG_NETS, DepthConfig
from albert_lab.analysis.registry import DISC_OPTIONS, VGG_OPTIONS, Variant

DEFAULT_FILE = Path(__file__).with_name("default.json")
VARIANTS = list(get_args(Variant))
# The page's widgets start here (also the "vanishing gradients" preset): the lecture notes' toy, the rows' defaults
DEFAULTS: dict[str, Any] = {row.name: list(row.default) if row.name == "variants" else row.default for row in DISC_OPTIONS}
VGG_DEFAULTS: dict[str, Any] = {row.name: row.default for row in VGG_OPTIONS}  # the VGG tab's widgets start here; shipped
VGG_RECORD_EVERY = 20

# What a fresh run of the shipped settings gives on another CPU, measured by running them on
# one thread on an AVX-512 + AVX512-BF16 CPU natively, with PyTorch, oneDNN and MKL held to AVX2
# (ATEN_CPU_CAPABILITY=avx2 ONEDNN_MAX_CPU_ISA=AVX2 MKL_ENABLE_INSTRUCTIONS=AVX2, which gives the
# 0.1186 an AVX2-only Zen 3 gave for VGG-8 at step 100) and with no SIMD at all
# (ATEN_CPU_CAPABILITY=default): the curves agree to float precision (< 1e-6 relative, the file
# keeps 6 digits) up to these steps; later, SGD at lr 0.1 amplifies the kernels' rounding and a
# step's loss can differ by a third (the BatchNorm MLP parts from step 10 without SIMD) while the
# nets end equally trained: last-10-record mean loss within 14% (MLP) and 2% (VGG-8), final test
# accuracy within 2.1 points. The tests hold fresh runs to these bounds with a margin.
AGREES_UNTIL = {"mlp": 50, "vgg": 20}  # the residual MLP and VGG-8 + BatchNorm
END_LOSS_SPREAD, END_ACCURACY_SPREAD = 0.14, 0.021


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


@lru_cache(maxsize=1)
def made_on() -> dict[str, object]:
    """devices.cpu_kind() of the machine that wrote the shipped file ({} for a file without it); read
    once, as the curves are (parsing the whole file on every visit was most of the page's script)."""
    return json.loads(DEFAULT_FILE.read_text()).get("made_on", {}) if DEFAULT_FILE.is_file() else {}


def shipped_note() -> str:
    """One line for the page: where the shipped curves were computed, and what a fresh run gives here."""
    made, here = made_on(), devices.cpu_kind()
    if not made:
        return "Shipped with the app (computed once); training here may differ in its later steps."
    flags = ", ".join(made.get("flags", [])) or "no AVX"
    where = f"Computed once on {made.get('model', 'a CPU')} ({flags}; PyTorch {made.get('torch', '?')})"
    if all(made.get(k) == here[k] for k in ("flags", "torch_capability", "torch")):
        return f"{where}, a CPU of this machine's kind: training here gives the same curves."
    return (f"{where}; this machine's kernels differ ({', '.join(here['flags']) or 'no AVX'}), so a fresh run agrees "
            "to float precision for the first tens of steps, then its curves part (SGD at lr 0.1 amplifies rounding) "
            f"while ending as well trained: final loss within about {END_LOSS_SPREAD:.0%}, accuracy within "
            f"{END_ACCURACY_SPREAD * 100:.0f} points.")


def _frame(table: dict) -> pd.DataFrame:
    return pd.DataFrame(table["data"], columns=table["columns"]).assign(model=table["model"])


def is_shipped(cfg: DepthConfig | None = None, steps: int | None = None, lr: float | None = None) -> bool:
    """Whether the MLP run `cfg`, or else the VGG comparison at (steps, lr), comes from the shipped file."""
    found = _precomputed()
    if cfg is not None:
        return _key(cfg) in found
    return all(vgg_key(d, bn, steps, lr) in found for d, bn in VGG_NETS)


def precomputed(cfg: DepthConfig) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """(history, flow) shipped for this exact configuration, else None."""
    found = _precomputed().get(_key(cfg))
    return None if found is None else (found[0].copy(), found[1].copy())


def shipped_vgg(depth: int, batchnorm: bool, steps: int, lr: float) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """One VGG net's (history, flow) shipped for these settings, else None."""
    found = _precomputed().get(vgg_key(depth, batchnorm, steps, lr))
    return None if found is None else (found[0].copy(), found[1].copy())


def write_default(runs: list[tuple[DepthConfig, pd.DataFrame, pd.DataFrame]],
                  vgg: list[tuple[dict, pd.DataFrame, pd.DataFrame]] = (), path: Path = DEFAULT_FILE) -> None:
    """`vgg`: (dict(depth, batchnorm, steps, lr), history, flow) per net."""
    def records(frame: pd.DataFrame) -> dict:  # compact: one model name, columns once, 6 significant digits
        rest = frame.drop(columns="model")
        data = [[float(f"{v:.6g}") if isinstance(v, float) else v for v in row] for row in rest.itertuples(index=False)]
        return {"model": str(frame.model.iloc[0]), "columns": list(rest.columns), "data": data}

    payload = {"about": "written by scripts/make_depth_default.py; the depth lab's first view and default VGG comparison",
               "made_on": devices.cpu_kind(),
               "runs": [{"config": asdict(cfg), "history": records(h), "flow": records(f)} for cfg, h, f in runs],
               "vgg": [{"vgg": settings, "history": records(h), "flow": records(f)} for settings, h, f in vgg]}
    path.write_text(json.dumps(payload, separators=(",", ":")) + "\n")
