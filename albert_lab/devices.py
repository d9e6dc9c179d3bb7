"""Device and dtype choice: CUDA when present, else MPS, else CPU."""

from __future__ import annotations

import torch

from albert_lab.errors import AlbertLabError

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}


def available_devices() -> list[str]:
    devices = ["cpu"]
    if torch.cuda.is_available():
        devices.insert(0, "cuda")
    if getattr(torch.backends, "mps", None) and torch.backends.mps.is_available():
        devices.insert(0, "mps")
    return devices


def resolve_device(name: str = "auto") -> torch.device:
    if name == "auto":
        return torch.device(available_devices()[0])
    if name not in ("cpu", "cuda", "mps") and not name.startswith("cuda:"):
        raise AlbertLabError(f"unknown device {name!r}; allowed: auto, {', '.join(available_devices())}")
    if name.split(":")[0] not in available_devices():
        raise AlbertLabError(f"device {name!r} is not available on this machine; available: {', '.join(available_devices())}")
    return torch.device(name)


def resolve_dtype(name: str = "float32") -> torch.dtype:
    try:
        return DTYPES[name]
    except KeyError:
        raise AlbertLabError(f"unknown dtype {name!r}; allowed: {', '.join(DTYPES)}") from None
