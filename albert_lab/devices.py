"""Device and dtype choice: CUDA when present, else MPS, else CPU."""

from __future__ import annotations

import functools
import hashlib
import json
import time
from collections.abc import Iterator
from contextlib import contextmanager

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
    timed once per machine (bf16_speed) and only where the flags make bf16 plausible."""
    if device.type == "cuda":
        return torch.cuda.is_bf16_supported()
    if device.type != "cpu" or not _cpu_has_bf16():
        return False
    return bf16_speed() > FAST


FAST = 1.2  # bf16 counts as fast where its matmuls run at least this many times the fp32 rate
UNUSABLE = 1 / 20  # ... and as unusable where at most this share (an AVX2-only Zen 3: a 2048^3 product > 2 min)


def bf16_speed() -> float:
    """This CPU's bf16 matmul rate as a multiple of its fp32 rate (0.5: twice as slow),
    measured once per machine kind and PyTorch (kept in the cache folder; about a second
    at most, even where bf16 is emulated and very slow: small products first, a time cap)."""
    from albert_lab.paths import cache_dir

    kind = cpu_kind()
    key = "-".join(str(kind[k]) for k in ("model", "torch_capability", "torch")) + "-" + ",".join(kind["flags"])
    path = cache_dir() / f"bf16-speed-{hashlib.sha1(key.encode()).hexdigest()[:16]}.json"
    try:
        found = json.loads(path.read_text())
        if found.get("key") == key and isinstance(found.get("speed"), float) and found["speed"] > 0:
            return found["speed"]
    except (OSError, ValueError, AttributeError):
        pass
    speed = _measure_bf16_speed()
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"key": key, "speed": speed, "cpu": kind}))
    except OSError:
        pass  # a read-only cache: measured again next time
    return speed


def _measure_bf16_speed(budget_s: float = 0.5) -> float:
    """bf16 rate / fp32 rate: 128x128 products first (4 MFLOP: under 0.1 s even at the
    0.1 GFLOP/s of an emulated bf16), 512x512 only where bf16 is not hopeless, each timed
    for at most `budget_s`, on one thread (two threads on a busy 2-core machine measured
    128x128 products 400x slower than one: the ratio is what counts)."""
    def ratio(size: int) -> float:
        return matmul_rate(torch.bfloat16, size=size, budget_s=budget_s) / matmul_rate(torch.float32, size=size,
                                                                                         budget_s=budget_s)

    with one_thread():
        small = ratio(128)
        return small if small < UNUSABLE * 2 else ratio(512)


@contextmanager
def one_thread() -> Iterator[None]:
    """torch computes on the calling thread alone for the block, then on as many as before. For
    work of a moment on cores others use: a team of threads waits for all of its members at every
    operation, and a member the scheduler has put aside holds the others up (benchmarks/bench_quick_lane.py:
    a typed pair through four models beside an upload, 0.50 s on one thread against 0.79 s on two;
    alone 0.060 s against 0.047 s)."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


@functools.cache
def bf16_verdict(device: torch.device) -> tuple[bool, str | None]:
    """(usable, note) for bfloat16 on `device`: note None where it is fast (offer it plainly),
    else one line saying how much slower it measured; usable False where it is too slow to
    finish pages or runs in reasonable time (do not offer it; the commands refuse it)."""
    if device.type == "cuda":
        return (True, None) if torch.cuda.is_bf16_supported() else (False, "this GPU has no bfloat16")
    if device.type != "cpu":
        return True, None
    speed = bf16_speed()
    if speed > FAST or (speed >= 1 / FAST and _cpu_has_bf16()):  # fast, or about fp32's pace with the instructions
        return True, None if speed > FAST else f"bfloat16 runs at about float32's pace on this CPU ({speed:.1f}x)"
    flags = "" if _cpu_has_bf16() else " (no AVX512-BF16 or AMX)"
    if speed <= UNUSABLE:
        return False, f"bfloat16 is {1 / speed:.0f}x slower than float32 on this CPU{flags}: too slow to use here"
    return True, f"bfloat16 is {1 / speed:.1f}x slower than float32 on this CPU{flags}"


def check_bf16(device: torch.device, flag: str) -> str | None:
    """For a command asked for bf16 with `flag`: the one-line warning to print where it is
    slower here, None where it is fast; AlbertLabError where it is too slow to use."""
    usable, note = bf16_verdict(device)
    if not usable:
        raise AlbertLabError(f"{flag}: {note}; use float32 (leave the flag out)")
    return f"warning: {flag}: {note}" if note else None


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


def matmul_rate(dtype: torch.dtype, size: int = 768, repeats: int = 5, budget_s: float = float("inf")) -> float:
    """Best-of-`repeats` square matmul rate on the CPU in GFLOP/s with this process's threads,
    repeating no longer than `budget_s` (one product at least, after one warm-up)."""
    a, b = torch.randn(size, size).to(dtype), torch.randn(size, size).to(dtype)
    end = time.perf_counter() + budget_s
    a @ b  # warm-up: oneDNN picks and caches its kernel
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        a @ b
        best = min(best, time.perf_counter() - start)
        if start > end:
            break
    return 2 * size**3 / best / 1e9
