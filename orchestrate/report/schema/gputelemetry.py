"""``gpus``: each charged GPU over the run, beyond its power: how busy, how hot, its SM clock, and whether it
throttled (a throttled variant ran on a slower machine than its neighbour: ``compare`` names it a confound).

Stage: report (``aggregates/gputelemetry.py`` builds it from ``metrics.jsonl``'s ``gpus``).
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class GpuOverRun:
    """One GPU's state over the run's samples."""

    index: int = 0
    """The driver's index of the GPU."""
    samples: int = 0
    """Samples that read it."""
    util_pct_mean: float | None = None
    """Mean utilization, %."""
    temperature_c_max: float | None = None
    """Hottest, °C."""
    sm_clock_mhz_min: float | None = None
    """Lowest SM clock, MHz."""
    sm_clock_mhz_median: float | None = None
    """Median SM clock, MHz."""
    memory_peak_bytes: int | None = None
    """Most memory in use."""
    throttled_samples: int = 0
    """Samples with a slowdown reason active (thermal, hardware, power brake: ``SLOWDOWNS``)."""
    power_capped_samples: int = 0
    """Samples at the board's power cap (``sw_power_cap``): usual at full load, not a confound."""
    reasons: tuple[str, ...] = ()
    """Every slowdown reason seen."""


@dataclass(frozen=True)
class GpuTelemetry:
    """``gpus``; absent without GPU telemetry."""

    throttled: bool = False
    """A charged GPU slowed down (thermal, hardware, power brake) in at least one sample."""
    gpus: tuple[GpuOverRun, ...] = ()
    """Each GPU, by index."""
