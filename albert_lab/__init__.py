"""ALBERT Lab: a workbench for understanding ALBERT-style language models.

The library is UI-free (it never imports streamlit). Importing the package is cheap: torch,
transformers and plotly load only when a verb or module that needs them is used.

    import albert_lab as al
    albert = al.load("albert-sop")
    al.oscillation([albert, "bert-nsp"], "My own paragraph. It has two sentences.")   # a Result: .frame, .figure()

The verbs (docs/library.md): load, checkpoints, one per analysis of the registry (evaluate,
oscillation, gradflow, score, extrapolate, logit_lens, lens_top, attention, cka, attribution), slices,
head_view, model_view, params, relax, albertize, train (a Run to follow)."""

from __future__ import annotations

import sys
import types
from typing import Any

# re-exported (the package's __all__, with the verbs, is __getattr__'s: the analysis verbs come from the registry)
from albert_lab.errors import AlbertLabError as AlbertLabError
from albert_lab.spec import PRESETS as PRESETS
from albert_lab.spec import ModelSpec as ModelSpec

__version__ = "0.1.0"
OWN_VERBS = ("load", "checkpoints", "slices", "head_view", "model_view", "params", "relax", "albertize", "train", "Run",
             "Result")  # beside them, a verb per analysis record (its name with underscores), read from the registry


def _lab() -> types.ModuleType:
    """albert_lab.lab, the verbs' module (no torch either), imported on first use."""
    import importlib

    return importlib.import_module("albert_lab.lab")


def _verbs() -> tuple[str, ...]:
    """Every verb: the front door's own, then one per analysis record (lab.VERBS, made from the registry)."""
    return (*OWN_VERBS, *_lab().VERBS)


def __getattr__(name: str) -> Any:
    """The verbs, imported on first use (albert_lab.lab): `import albert_lab` stays cheap; VERBS and __all__ with them."""
    if name == "VERBS":
        return _verbs()
    if name == "__all__":
        return ["PRESETS", "VERBS", "AlbertLabError", "ModelSpec", "__version__", *_verbs()]
    if name in _verbs():
        return getattr(_lab(), name)
    raise AttributeError(f"module 'albert_lab' has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted({*globals(), *_verbs()})


# Two verbs share their names with modules (albert_lab/relax.py, albert_lab/params.py): importing such a module
# sets the package's attribute to it, which would hide the verb. The verb keeps the name; the module is in
# sys.modules (`from albert_lab.relax import relax` and importlib find it; `import albert_lab.relax as m` would not).
SHADOWED = ("relax", "params")


class _FrontDoor(types.ModuleType):
    def __setattr__(self, name: str, value: Any) -> None:
        if name in SHADOWED and isinstance(value, types.ModuleType):
            return
        super().__setattr__(name, value)


sys.modules[__name__].__class__ = _FrontDoor
