"""orchestrate/load/power.py: which power source a machine has, and readings that never break the load."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from orchestrate.load.power import PowerProbe, nvml_handles, parse_power_draw


def test_power_draw_is_summed_over_gpus_and_na_is_none() -> None:
    assert parse_power_draw("250.5\n99.5\n") == 350.0
    assert parse_power_draw("[N/A]\n") is None and parse_power_draw("") is None


def test_nvidia_smi_power_until_it_stops_answering() -> None:
    answers = iter(["120.0\n", "130.0\n"])

    def run(argv: list[str], timeout_s: float) -> str:
        assert argv[1] == "--query-gpu=power.draw"
        try:
            return next(answers)
        except StopIteration:
            raise subprocess.CalledProcessError(9, argv) from None

    probe = PowerProbe(nvidia_smi="/x/nvidia-smi", powercap=Path("/nonexistent"), run=run, nvml=None)
    assert probe.source == "nvidia-smi"
    assert [probe.read(t).watts for t in (0.0, 1.0)] == [120.0, 130.0]
    failed = [probe.read(t) for t in (2.0, 3.0, 4.0, 5.0)]
    assert all(r.watts is None for r in failed) and failed[-1].source is None
    assert probe.error is not None and probe.error.startswith("nvidia-smi stopped answering (CalledProcessError")


def test_rapl_packages_are_summed_and_unwrapped(tmp_path: Path) -> None:
    """Two packages (their sub-domains are parts of them, not added); package 1 wraps at its range."""
    values = {"intel-rapl:0": [1_000_000, 3_000_000], "intel-rapl:1": [9_000_000, 1_000_000]}
    for name in (*values, "intel-rapl:0:0"):
        folder = tmp_path / name
        folder.mkdir()
        (folder / "max_energy_range_uj").write_text("10000000\n")
        (folder / "energy_uj").write_text(f"{values.get(name, [5])[0]}\n")
    probe = PowerProbe(nvidia_smi="", powercap=tmp_path, nvml=None)
    assert probe.source == "rapl"
    first = probe.read(100.0)
    assert (first.joules, first.watts) == (0.0, None)  # watts need two reads
    for name, (_, later) in values.items():
        (tmp_path / name / "energy_uj").write_text(f"{later}\n")
    second = probe.read(102.0)
    assert second.joules == pytest.approx(2.0 + 2.0) and second.watts == pytest.approx(4.0 / 2.0)


def test_nvml_counters_come_first_when_the_library_answers() -> None:
    """The arithmetic over a stand-in for nvidia-ml-py (the real library needs an NVIDIA driver)."""
    energy = {"a": 1_000_000, "b": 2_000_000}  # mJ
    nvml = SimpleNamespace(nvmlDeviceGetPowerUsage=lambda h: 150_000,
                           nvmlDeviceGetTotalEnergyConsumption=lambda h: energy[h])
    probe = PowerProbe(nvidia_smi="/x/nvidia-smi", nvml=(nvml, ["a", "b"]))
    assert probe.source == "nvml"
    assert probe.read(0.0).joules == 0.0
    energy["a"] += 500_000
    reading = probe.read(1.0)
    assert (reading.watts, reading.joules, reading.source) == (300.0, 500.0, "nvml")


def test_a_machine_without_any_source_says_what_it_lacks(tmp_path: Path) -> None:
    probe = PowerProbe(nvidia_smi="", powercap=tmp_path / "none", nvml=None)
    reading = probe.read(0.0)
    assert (reading.watts, reading.joules, reading.source) == (None, None, None)
    assert reading.error == ("no power reading on this machine: no nvidia-smi on PATH, nvidia-ml-py not installed, "
                             f"and no readable RAPL counter under {tmp_path / 'none'}")


def test_only_the_servers_gpus_are_asked_for_and_none_means_the_cpus() -> None:
    asked: list[list[str]] = []

    def run(argv: list[str], timeout_s: float) -> str:
        asked.append(argv)
        return "90.0\n"

    probe = PowerProbe(("1", "GPU-abc"), nvidia_smi="/x/nvidia-smi", powercap=Path("/nonexistent"), run=run, nvml=None)
    assert probe.read(0.0).watts == 90.0 and asked[0][-1] == "--id=1,GPU-abc" and probe.devices == "GPUs 1,GPU-abc"
    every = PowerProbe(None, nvidia_smi="/x/nvidia-smi", powercap=Path("/nonexistent"), run=run, nvml=None)
    assert every.read(0.0).watts == 90.0 and not asked[-1][-1].startswith("--id") and every.devices == "every GPU"
    none = PowerProbe((), nvidia_smi="/x/nvidia-smi", powercap=Path("/nonexistent"), run=run, nvml=object())
    assert none.source is None and none.devices is None
    assert none.error is not None and "the server was given no GPU" in none.error


def test_nvml_takes_the_servers_gpus_by_index_or_uuid(monkeypatch: pytest.MonkeyPatch) -> None:
    fake = SimpleNamespace(
        nvmlInit=lambda: None, nvmlDeviceGetCount=lambda: 3,
        nvmlDeviceGetHandleByIndex=lambda i: f"index-{i}", nvmlDeviceGetHandleByUUID=lambda u: f"uuid-{u}",
        nvmlDeviceGetTotalEnergyConsumption=lambda h: 1000, nvmlDeviceGetPowerUsage=lambda h: 50_000)
    monkeypatch.setitem(sys.modules, "pynvml", fake)
    assert nvml_handles(("2", "GPU-x")) == (fake, ["index-2", "uuid-GPU-x"])
    assert nvml_handles(None) == (fake, ["index-0", "index-1", "index-2"])
