"""orchestrate/load/gputelemetry.py: each GPU's utilization, memory, temperature, SM clock and throttle reasons."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from orchestrate.load.gputelemetry import GpuTelemetryProbe, parse_gpu_query, reason_names

STANDIN = Path(__file__).resolve().parents[3] / "fixtures" / "nvidia-smi" / "nvidia-smi"


def test_a_query_line_per_gpu_with_its_reasons_by_name() -> None:
    out = "0, 87, 1024, 65, 1980, 0x0000000000000000\n1, 99, 2048, 91, 1200, 0x0000000000000044\n2, [N/A], 0, 40, 300, [N/A]\n"
    zero, one, two = parse_gpu_query(out)
    assert zero == {"index": 0, "util_pct": 87.0, "memory_used_bytes": 1024 * 2**20, "temperature_c": 65.0,
                    "sm_clock_mhz": 1980.0, "reasons": []}
    assert one["reasons"] == ["sw_power_cap", "hw_thermal_slowdown"]
    assert two["util_pct"] is None and two["reasons"] is None
    assert reason_names(0x1000) == ["bit_0x1000"]


def test_the_standin_throttles_when_told_and_a_failing_source_is_given_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{STANDIN.parent}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("STANDIN_THROTTLE", "0x40")
    (state,) = GpuTelemetryProbe(("0",)).read() or []
    assert (state["sm_clock_mhz"], state["reasons"]) == (1200.0, ["hw_thermal_slowdown"])
    assert GpuTelemetryProbe(()).read() is None  # a server given no GPU

    def broken(argv: list[str], timeout: float) -> str:
        raise OSError("gone")
    probe = GpuTelemetryProbe(None, nvidia_smi="nvidia-smi", run=broken)
    assert [probe.read() for _ in range(4)] == [None] * 4 and probe.source is None
