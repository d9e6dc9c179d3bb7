"""Device and dtype choice: CUDA when present, else MPS, else CPU."""

from __future__ import annotations

import functools
import time

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


@functools.cache
def fast_bf16(device: torch.device) -> bool:
    """Whether bf16 autocast is worth it here: CUDA with bf16; on a CPU, bf16 matmuls
    measured faster than fp32 on this machine. A CPU flag is not enough: AVX512-BF16
    without AMX runs bf16 GEMMs at about half the fp32 rate in oneDNN, so the choice is
    timed once per process (about 50 ms) and only where the flags make bf16 plausible."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu" or not _cpu_has_bf16():
        return False
    return matmul_rate(torch.bfloat16) > 1.2 * matmul_rate(torch.float32)


# The CPU flags that change which kernels PyTorch, oneDNN and MKL run (and so their rounding and speed)
KERNEL_FLAGS = ("avx2", "avx512f", "avx512_bf16", "amx_bf16", "amx_tile")


@functools.cache
def _cpuinfo() -> tuple[str, frozenset[str]]:
    """(model name, flags) of the first CPU in /proc/cpuinfo; ("", {}) where there is none (macOS, Windows)."""
    try:
        with open("/proc/cpuinfo") as handle:
            lines = handle.read().splitlines()
    except OSError:
        return "", frozenset()
    def field(name: str) -> str:
        return next((line.split(":", 1)[1].strip() for line in lines if line.split(":", 1)[0].strip() == name), "")
    return field("model name"), frozenset(field("flags").split())


def cpu_kind() -> dict[str, object]:
    """What decides this CPU's kernels: its model name, the flags among KERNEL_FLAGS it has,
    and the vector level PyTorch runs at (lower than the flags allow under ATEN_CPU_CAPABILITY)."""
    model, flags = _cpuinfo()
    return {"model": model or "unknown CPU", "flags": [f for f in KERNEL_FLAGS if f in flags],
            "torch_capability": torch.backends.cpu.get_cpu_capability(), "torch": torch.__version__}


def _cpu_has_bf16() -> bool:
    flags = _cpuinfo()[1]
    return "avx512_bf16" in flags or "amx_bf16" in flags


def matmul_rate(dtype: torch.dtype, size: int = 768, repeats: int = 5) -> float:
    """Best-of-`repeats` square matmul rate on the CPU in GFLOP/s with this process's threads."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    a @ b  # warm-up: oneDNN picks and caches its kernel
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
    return 2 * size**3 / best / 1e9
