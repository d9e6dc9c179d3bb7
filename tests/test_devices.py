"""Device and precision choice: bf16 only where it measures faster, a CPU-only torch known from its files."""

import sys

import pytest
import torch

from albert_lab import devices


@pytest.mark.parametrize(("flags", "speed", "expected"), [(False, 3.0, False), (True, 3.0, True), (True, 0.5, False)])
def test_bf16_autocast_only_where_it_measures_faster(monkeypatch, flags, speed, expected):
    """AVX512-BF16 without AMX can run bf16 GEMMs slower than fp32: the flag alone must not pick bf16."""
    devices.fast_bf16.cache_clear()
    monkeypatch.setattr(devices, "_cpu_has_bf16", lambda: flags)
    monkeypatch.setattr(devices, "bf16_speed", lambda: speed)
    try:
        assert devices.fast_bf16(torch.device("cpu")) is expected
    finally:
        devices.fast_bf16.cache_clear()


def test_bf16_speed_is_measured_once_per_cpu_kind_and_kept(monkeypatch, tmp_path):
    monkeypatch.setenv("ALBERT_LAB_CACHE", str(tmp_path))
    measured = []
    monkeypatch.setattr(devices, "_measure_bf16_speed", lambda: measured.append(1) or 0.25)
    kind = dict(model="AMD EPYC 7B13", flags=["avx2"], torch_capability="AVX2", torch="2.13.0")
    monkeypatch.setattr(devices, "cpu_kind", lambda: dict(kind))
    assert devices.bf16_speed() == devices.bf16_speed() == 0.25 and len(measured) == 1  # the second read the file
    (kept,) = tmp_path.glob("bf16-speed-*.json")
    assert '"speed": 0.25' in kept.read_text() and "AMD EPYC 7B13" in kept.read_text()
    kind["torch"] = "2.14.0"  # another PyTorch: its kernels may differ
    assert devices.bf16_speed() == 0.25 and len(measured) == 2
    kept.write_text("{not json")  # a damaged file: measured again, not a crash
    monkeypatch.setattr(devices, "cpu_kind", lambda: dict(kind, torch="2.13.0"))
    assert devices.bf16_speed() == 0.25 and len(measured) == 3


def test_the_bf16_probe_stays_small_where_bf16_is_emulated(monkeypatch):
    """On an AVX2-only Zen 3 a 2048^3 bf16 product did not finish in 2 minutes: where 128x128
    products show bf16 hopeless, no larger one is tried, and each size is timed under a cap."""
    asked = []

    def rate(dtype, size, budget_s):
        asked.append((dtype, size, budget_s))
        return {torch.bfloat16: 0.2, torch.float32: 40.0}[dtype]

    monkeypatch.setattr(devices, "matmul_rate", rate)
    assert devices._measure_bf16_speed() == pytest.approx(0.005)
    assert [size for _, size, _ in asked] == [128, 128] and all(budget <= 0.5 for *_, budget in asked)
    monkeypatch.setattr(devices, "matmul_rate", lambda dtype, size, budget_s: asked.append(size) or 10.0)
    assert devices._measure_bf16_speed() == 1.0 and asked[-2:] == [512, 512]
    start = __import__("time").perf_counter()
    monkeypatch.undo()
    assert devices.matmul_rate(torch.float32, size=64, repeats=10_000, budget_s=0.05) > 0
    assert __import__("time").perf_counter() - start < 2  # 10,000 repeats asked, the cap ends them


@pytest.mark.parametrize(("speed", "flags", "usable", "note"), [
    (3.0, True, True, None),
    (0.9, True, True, "bfloat16 runs at about float32's pace on this CPU (0.9x)"),
    (0.5, True, True, "bfloat16 is 2.0x slower than float32 on this CPU"),
    (0.2, False, True, "bfloat16 is 5.0x slower than float32 on this CPU (no AVX512-BF16 or AMX)"),
    (0.005, False, False, "bfloat16 is 200x slower than float32 on this CPU (no AVX512-BF16 or AMX): too slow to use here"),
])
def test_the_sidebar_and_commands_say_how_bf16_fares_here(monkeypatch, speed, flags, usable, note):
    from albert_lab.errors import AlbertLabError

    devices.bf16_verdict.cache_clear()
    monkeypatch.setattr(devices, "bf16_speed", lambda: speed)
    monkeypatch.setattr(devices, "_cpu_has_bf16", lambda: flags)
    cpu = torch.device("cpu")
    try:
        assert devices.bf16_verdict(cpu) == (usable, note)
        if usable:
            assert devices.check_bf16(cpu, "--dtype bfloat16") == (note and f"warning: --dtype bfloat16: {note}")
        else:
            with pytest.raises(AlbertLabError, match=r"^--dtype bfloat16: bfloat16 is 200x slower .*; use float32"):
                devices.check_bf16(cpu, "--dtype bfloat16")
    finally:
        devices.bf16_verdict.cache_clear()


def test_commands_warn_of_or_refuse_a_slow_bf16_in_one_line(monkeypatch, shipped):
    from conftest import one_line_error, run_cli

    devices.bf16_verdict.cache_clear()
    monkeypatch.setattr(devices, "bf16_speed", lambda: 0.005)
    monkeypatch.setattr(devices, "_cpu_has_bf16", lambda: False)
    try:
        one_line_error(run_cli("oscillation", "--text", "A short text.", "--checkpoint", str(shipped / "albert-sop"), "--dtype", "bfloat16"),
                       "--dtype bfloat16", "200x slower", "use float32")
        one_line_error(run_cli("train", "--steps", "2", "--precision", "bf16"), "--precision bf16", "200x slower")
        devices.bf16_verdict.cache_clear()
        monkeypatch.setattr(devices, "bf16_speed", lambda: 0.5)
        result = run_cli("oscillation", "--text", "A short text.", "--checkpoint", str(shipped / "albert-sop"), "--dtype", "bfloat16")
        assert result.returncode == 0, result.stderr
        assert [line for line in result.stderr.splitlines() if "bfloat16" in line] == [
            "warning: --dtype bfloat16: bfloat16 is 2.0x slower than float32 on this CPU (no AVX512-BF16 or AMX)"]
    finally:
        devices.bf16_verdict.cache_clear()


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
