"""Power and energy of the machine serving, read once per sample: the GPUs' (NVML, else ``nvidia-smi``), else
the CPU packages' (RAPL). ``orchestrate.report.aggregates.energy`` turns the samples into joules per token.

Stage: load, beside it (``sampler.MetricsSampler`` reads one ``PowerProbe`` per sample). Which source:

* **NVML** (``nvidia-ml-py``, imported as ``pynvml``, when installed): each GPU's energy counter
  (``nvmlDeviceGetTotalEnergyConsumption``, mJ since the driver loaded) and power (``nvmlDeviceGetPowerUsage``,
  mW). A counter integrates every millisecond the sampler does not see; it is read first.
* **nvidia-smi** ``--query-gpu=power.draw``: watts per GPU at each sample (the report integrates them).
* **RAPL** (``/sys/class/powercap/intel-rapl:N/energy_uj``, one counter per CPU package, wrapping at
  ``max_energy_range_uj``): a CPU-only server's energy, where the host exposes it (readable by root on
  most kernels). This VM has none.

The GPUs charged are the server's (``Launcher.gpus``): the devices a container was given, or
``CUDA_VISIBLE_DEVICES`` of a server tokenswarm starts as a process or embeds; every GPU the driver lists when
they are unknown (a server already running) or not restricted. A server given no GPU is charged its CPU
packages (RAPL). ``devices`` says which. A source that fails three times in a row is given up for the run,
with the reason kept.
"""

from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from orchestrate.processes import run_command

NVIDIA_SMI_POWER = ("--query-gpu=power.draw", "--format=csv,noheader,nounits")
POWERCAP = Path("/sys/class/powercap")
PACKAGE = re.compile(r"^intel-rapl:\d+$")
"""A CPU package's RAPL domain (``intel-rapl:0:0`` and the like are parts of it, counted within)."""
MAX_FAILURES = 3
TIMEOUT_S = 5.0


@dataclass(frozen=True)
class PowerReading:
    watts: float | None
    """Power now, summed over the devices; None when the source gives none (RAPL's first read)."""
    joules: float | None
    """A cumulative energy counter (NVML, RAPL), from this probe's first read; None for ``nvidia-smi``."""
    source: str | None
    error: str | None = None
    """Why there is no reading: no source on this machine, or the one there was stopped answering."""


def parse_power_draw(out: str) -> float | None:
    """Watts summed over GPUs from ``power.draw`` lines; None when any GPU reports no number (``[N/A]``)."""
    lines = [line.strip() for line in out.splitlines() if line.strip()]
    try:
        return sum(float(line) for line in lines) if lines else None
    except ValueError:
        return None


class PowerProbe:
    """The best power source this machine has, read once per sample (``read``)."""

    def __init__(self, gpus: tuple[str, ...] | None = None, nvidia_smi: str | None = None, powercap: Path = POWERCAP,
                 run: Callable[[list[str], float], str] | None = None, nvml: Any = None) -> None:
        """:param gpus: the GPUs to charge, by index or UUID (None: every GPU; empty: none, the CPU's power)."""
        self._run = run or run_command
        self._failures = 0
        self._base: float | None = None
        self._last: tuple[float, float] | None = None
        """(counter, time) of the last RAPL read, for its watts."""
        self.error: str | None = None
        self._gpus = gpus
        self._nvml = None if gpus == () else nvml if nvml is not None else nvml_handles(gpus)
        self._nvidia_smi = None if gpus == () else nvidia_smi if nvidia_smi is not None else shutil.which("nvidia-smi")
        self._rapl = _rapl_packages(powercap)
        self.source: str | None = ("nvml" if self._nvml is not None else "nvidia-smi" if self._nvidia_smi
                                   else "rapl" if self._rapl else None)
        self.devices: str | None = (None if self.source is None else "CPU packages" if self.source == "rapl"
                                    else "every GPU" if gpus is None else "GPUs " + ",".join(gpus))
        """What is charged: ``every GPU``, ``GPUs 0,1`` (the server's), ``CPU packages``."""
        if self.source is None:
            self.error = ("no power reading on this machine: " + ("the server was given no GPU, " if gpus == () else
                          "no nvidia-smi on PATH, nvidia-ml-py not installed, ") +
                          f"and no readable RAPL counter under {powercap}")

    def read(self, now: float) -> PowerReading:
        """One reading at ``now`` (``time.time()``, for RAPL's watts); never raises."""
        if self.source is None:
            return PowerReading(None, None, None, self.error)
        try:
            watts, counter = self._read_source(now)
        except Exception as exc:  # noqa: BLE001 - a power reading never breaks the load
            self._failures += 1
            if self._failures >= MAX_FAILURES:
                self.error = f"{self.source} stopped answering ({type(exc).__name__}: {exc})"[:200]
                self.source = None
            return PowerReading(None, None, self.source, f"{type(exc).__name__}: {exc}"[:200])
        self._failures = 0
        if counter is not None and self._base is None:
            self._base = counter
        joules = None if counter is None or self._base is None else counter - self._base
        return PowerReading(watts, joules, self.source)

    def _read_source(self, now: float) -> tuple[float | None, float | None]:
        if self.source == "nvml":
            assert self._nvml is not None
            nvml, handles = self._nvml
            return (sum(nvml.nvmlDeviceGetPowerUsage(h) for h in handles) / 1000.0,
                    sum(nvml.nvmlDeviceGetTotalEnergyConsumption(h) for h in handles) / 1000.0)
        if self.source == "nvidia-smi":
            assert self._nvidia_smi is not None
            chosen = [f"--id={','.join(self._gpus)}"] if self._gpus else []
            watts = parse_power_draw(self._run([self._nvidia_smi, *NVIDIA_SMI_POWER, *chosen], TIMEOUT_S))
            if watts is None:
                raise ValueError("nvidia-smi reports no power.draw ([N/A])")
            return watts, None
        counter = sum(package.read() for package in self._rapl)
        watts = None
        if self._last is not None and now > self._last[1]:
            watts = (counter - self._last[0]) / (now - self._last[1])
        self._last = (counter, now)
        return watts, counter


class RaplPackage:
    """One package's ``energy_uj`` in joules, unwrapped (it wraps at ``max_energy_range_uj``)."""

    def __init__(self, folder: Path) -> None:
        self.path = folder / "energy_uj"
        self.range_uj = int((folder / "max_energy_range_uj").read_text())
        self.previous = int(self.path.read_text())
        self.total_uj = 0

    def read(self) -> float:
        value = int(self.path.read_text())
        self.total_uj += value - self.previous if value >= self.previous else self.range_uj - self.previous + value
        self.previous = value
        return self.total_uj / 1e6


def _rapl_packages(powercap: Path) -> list[RaplPackage]:
    try:
        return [RaplPackage(folder) for folder in sorted(powercap.iterdir()) if PACKAGE.match(folder.name)]
    except (OSError, ValueError):  # absent, or readable by root only
        return []


def nvml_handles(gpus: tuple[str, ...] | None, check: str = "nvmlDeviceGetTotalEnergyConsumption"
                 ) -> tuple[Any, list[Any]] | None:
    """``(pynvml, device handles)`` when NVML answers ``check`` (a ``pynvml`` function of a handle) on every GPU
    charged (``gpus``: indices or UUIDs, None for all); else None."""
    try:
        import pynvml
        pynvml.nvmlInit()
        handles = ([pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(pynvml.nvmlDeviceGetCount())] if gpus is None
                   else [pynvml.nvmlDeviceGetHandleByIndex(int(g)) if g.isdigit()
                         else pynvml.nvmlDeviceGetHandleByUUID(g) for g in gpus])
        for handle in handles:
            getattr(pynvml, check)(handle)
        return (pynvml, handles) if handles else None
    except Exception:  # noqa: BLE001 - not installed, no driver, no GPU, or too old a GPU for the counter
        return None
