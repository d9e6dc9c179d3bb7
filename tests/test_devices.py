"""Device and precision choice: bf16 only where it measures faster, a CPU-only torch known from its files."""

import sys

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


def test_a_cpu_only_torch_is_known_from_its_build_files():
    import torch

    from albert_lab.devices import available_devices
    from albert_lab.torch_build import cpu_only, known_devices

    expected = torch.version.cuda is None and torch.version.hip is None and sys.platform != "darwin"
    assert cpu_only() is expected
    assert known_devices() in (None, available_devices())


def test_a_run_card_names_the_gpu_it_trained_on(monkeypatch):
    """A checkpoint trained on a GPU said only 'x86_64, 16 cores, Linux': the card names the card."""
    from albert_lab.training import provenance

    host = provenance.machine()
    assert provenance.machine(torch.device("cpu")) == host and "cores" in host
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    assert provenance.machine(torch.device("cuda")) == f"NVIDIA H200; {host}"
