"""Each charged GPU's state per sample beyond its power: utilization, memory used, temperature, SM clock and why
its clocks are held down (throttle reasons). A variant whose GPU throttled ran on a slower machine than its
neighbour: the report says so and the comparison counts it as a confound, as it does a busy host.

Stage: load, beside it (``sampler.MetricsSampler`` reads one ``GpuTelemetryProbe`` per sample into ``gpus``).
NVML first (``nvidia-ml-py``, imported as ``pynvml``), else one ``nvidia-smi --query-gpu`` call; no GPU: nothing,
at no cost. The GPUs are the server's (``Launcher.gpus``), every GPU when unknown; a source that fails three times
in a row is given up for the run. Raw values only: ``report/aggregates/gputelemetry.py`` judges them.
"""

from __future__ import annotations

import shutil
from typing import Any, Callable, TypedDict

from orchestrate.load.power import nvml_handles
from orchestrate.processes import run_command

QUERY = ("--query-gpu=index,utilization.gpu,memory.used,temperature.gpu,clocks.sm,clocks_throttle_reasons.active",
         "--format=csv,noheader,nounits")
REASONS = {0x1: "gpu_idle", 0x2: "applications_clocks_setting", 0x4: "sw_power_cap", 0x8: "hw_slowdown",
           0x10: "sync_boost", 0x20: "sw_thermal_slowdown", 0x40: "hw_thermal_slowdown",
           0x80: "hw_power_brake_slowdown", 0x100: "display_clock_setting"}
"""NVML's clock throttle reason bits (``nvmlClocksThrottleReason*``), as ``nvidia-smi`` prints their sum in hex."""
MAX_FAILURES = 3
TIMEOUT_S = 5.0
MIB = 1024 * 1024


class GpuState(TypedDict):
    """One GPU at one sample (a ``gpus`` entry of ``metrics.jsonl``); a value the GPU does not report is None."""

    index: int
    util_pct: float | None
    memory_used_bytes: int | None
    temperature_c: float | None
    sm_clock_mhz: float | None
    reasons: list[str] | None
    """Active clock throttle reasons by name (``hw_thermal_slowdown``...); None when unreported."""


def reason_names(mask: int) -> list[str]:
    """The names of the bits set in a throttle-reasons mask (an unknown bit as ``bit_0x...``)."""
    names = [name for bit, name in REASONS.items() if mask & bit]
    unknown = mask & ~sum(REASONS)
    return names + ([f"bit_{unknown:#x}"] if unknown else [])


def _number(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:  # [N/A], [Not Supported]
        return None


def parse_gpu_query(out: str) -> list[GpuState]:
    """``nvidia-smi --query-gpu=`` ``QUERY``'s lines, one GPU each."""
    found = []
    for line in out.splitlines():
        fields = [f.strip() for f in line.split(",")]
        if len(fields) < 6 or not fields[0].isdigit():
            continue
        memory = _number(fields[2])
        try:
            mask: int | None = int(fields[5], 16)
        except ValueError:
            mask = None
        found.append(GpuState(index=int(fields[0]), util_pct=_number(fields[1]),
                              memory_used_bytes=None if memory is None else int(memory * MIB),
                              temperature_c=_number(fields[3]), sm_clock_mhz=_number(fields[4]),
                              reasons=None if mask is None else reason_names(mask)))
    return found


class GpuTelemetryProbe:
    """Reads the charged GPUs' state (``read``); a machine without NVIDIA GPUs is never asked again."""

    def __init__(self, gpus: tuple[str, ...] | None = None, nvidia_smi: str | None = None,
                 run: Callable[[list[str], float], str] | None = None, nvml: Any = None) -> None:
        """:param gpus: the server's GPUs by index or UUID (None: every GPU; empty: none)."""
        self._run = run or run_command
        self._gpus = gpus
        self._nvml = None if gpus == () else nvml if nvml is not None else nvml_handles(
            gpus, "nvmlDeviceGetCurrentClocksThrottleReasons")
        self._nvidia_smi = None if gpus == () else nvidia_smi if nvidia_smi is not None else shutil.which("nvidia-smi")
        self.source: str | None = "nvml" if self._nvml is not None else "nvidia-smi" if self._nvidia_smi else None
        self._failures = 0

    def read(self) -> list[GpuState] | None:
        """Every charged GPU now; None without a source (or after it stopped answering). Never raises."""
        if self.source is None:
            return None
        try:
            found = self._read_nvml() if self.source == "nvml" else self._read_smi()
        except Exception:  # noqa: BLE001 - telemetry never breaks the load
            self._failures += 1
            if self._failures >= MAX_FAILURES:
                self.source = None
            return None
        self._failures = 0
        return found

    def _read_smi(self) -> list[GpuState]:
        assert self._nvidia_smi is not None
        chosen = [f"--id={','.join(self._gpus)}"] if self._gpus else []
        return parse_gpu_query(self._run([self._nvidia_smi, *QUERY, *chosen], TIMEOUT_S))

    def _read_nvml(self) -> list[GpuState]:
        assert self._nvml is not None
        nvml, handles = self._nvml
        out = []
        for handle in handles:
            out.append(GpuState(
                index=int(nvml.nvmlDeviceGetIndex(handle)),
                util_pct=float(nvml.nvmlDeviceGetUtilizationRates(handle).gpu),
                memory_used_bytes=int(nvml.nvmlDeviceGetMemoryInfo(handle).used),
                temperature_c=float(nvml.nvmlDeviceGetTemperature(handle, nvml.NVML_TEMPERATURE_GPU)),
                sm_clock_mhz=float(nvml.nvmlDeviceGetClockInfo(handle, nvml.NVML_CLOCK_SM)),
                reasons=reason_names(int(nvml.nvmlDeviceGetCurrentClocksThrottleReasons(handle)))))
        return out
