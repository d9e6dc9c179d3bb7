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


def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 matmuls are native here (CUDA with bf16, or a CPU with AVX512-BF16
    or AMX), i.e. whether bf16 autocast is worth it."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu":
        return False
    try:
        with open("/proc/cpuinfo") as handle:
            flags = next((line for line in handle if line.startswith("flags")), "")
    except OSError:
        return False
    return "avx512_bf16" in flags or "amx_bf16" in flags
