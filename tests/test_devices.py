"""Device and precision choice."""

import pytest
import torch

from albert_lab import devices


@pytest.mark.parametrize(("flags", "bf16_rate", "expected"), [(False, 900.0, False), (True, 900.0, True), (True, 150.0, False)])
def test_bf16_autocast_only_where_it_measures_faster(monkeypatch, flags, bf16_rate, expected):
    """AVX512-BF16 without AMX runs bf16 GEMMs slower than fp32: the flag alone must not pick bf16."""
    devices.fast_bf16.cache_clear()
    monkeypatch.setattr(devices, "_cpu_has_bf16", lambda: flags)
    monkeypatch.setattr(devices, "matmul_rate", lambda dtype, **_: bf16_rate if dtype == torch.bfloat16 else 300.0)
    try:
        assert devices.fast_bf16(torch.device("cpu")) is expected
    finally:
        devices.fast_bf16.cache_clear()
