"""``summary.json``'s ``gpus`` block: each charged GPU's utilization, temperature, SM clock and throttling over the
run, from the samples' ``gpus`` (``load/gputelemetry.py``).

Stage: records → report. A sample whose active clock reasons include a slowdown (``SLOWDOWNS``: thermal,
hardware, power brake) is a throttled one; the power cap (``sw_power_cap``) is counted apart: a GPU at full load
usually sits at it, which is no confound. Idle, application-clock and sync-boost reasons are neither.
"""

from __future__ import annotations

import statistics
from typing import Any

from orchestrate.report.schema.gputelemetry import GpuOverRun, GpuTelemetry

SLOWDOWNS = frozenset({"hw_slowdown", "sw_thermal_slowdown", "hw_thermal_slowdown", "hw_power_brake_slowdown"})
POWER_CAP = "sw_power_cap"


def _values(states: list[dict[str, Any]], key: str) -> list[float]:
    return [float(s[key]) for s in states if isinstance(s.get(key), (int, float))]


def _over_run(index: int, states: list[dict[str, Any]]) -> GpuOverRun:
    util, temp, clock = _values(states, "util_pct"), _values(states, "temperature_c"), _values(states, "sm_clock_mhz")
    memory = _values(states, "memory_used_bytes")
    reasons = [set(s.get("reasons") or ()) for s in states]
    return GpuOverRun(index=index, samples=len(states), util_pct_mean=round(statistics.fmean(util), 2) if util else None,
                      temperature_c_max=max(temp) if temp else None, sm_clock_mhz_min=min(clock) if clock else None,
                      sm_clock_mhz_median=statistics.median(clock) if clock else None,
                      memory_peak_bytes=int(max(memory)) if memory else None,
                      throttled_samples=sum(1 for r in reasons if r & SLOWDOWNS),
                      power_capped_samples=sum(1 for r in reasons if POWER_CAP in r),
                      reasons=tuple(sorted(set().union(*reasons) & SLOWDOWNS)))


def gpu_telemetry(samples: list[dict[str, Any]]) -> GpuTelemetry | None:
    """The block from ``metrics.jsonl``'s rows; None when no sample read a GPU."""
    by_gpu: dict[int, list[dict[str, Any]]] = {}
    for sample in samples:
        for state in sample.get("gpus") or ():
            if isinstance(state, dict) and isinstance(state.get("index"), int):
                by_gpu.setdefault(state["index"], []).append(state)
    if not by_gpu:
        return None
    gpus = tuple(_over_run(index, states) for index, states in sorted(by_gpu.items()))
    return GpuTelemetry(throttled=any(g.throttled_samples for g in gpus), gpus=gpus)


def throttle_note(block: GpuTelemetry | None) -> str | None:
    """The summary's note when a GPU slowed down while the run sampled it."""
    hot = [g for g in (block.gpus if block else ()) if g.throttled_samples]
    if not hot:
        return None
    said = "; ".join(f"GPU {g.index}: {', '.join(g.reasons)} in {g.throttled_samples} of {g.samples} samples"
                     + (f", SM clock down to {g.sm_clock_mhz_min:g} MHz" if g.sm_clock_mhz_min is not None else "")
                     + (f", up to {g.temperature_c_max:g} °C" if g.temperature_c_max is not None else "") for g in hot)
    return (f"a GPU throttled while this ran ({said}): its figures are those of a slowed GPU, and a comparison "
            "with it is confounded (gpu_throttle)")


def gpu_line(block: GpuTelemetry | None) -> str | None:
    """``GPU 0: 87 % busy on average, up to 65 °C, SM clock 1,980 MHz (lowest 1,980), not throttled``."""
    if block is None:
        return None
    parts = []
    for g in block.gpus:
        said = [f"{g.util_pct_mean:.0f} % busy on average" if g.util_pct_mean is not None else None,
                f"up to {g.temperature_c_max:g} °C" if g.temperature_c_max is not None else None,
                f"SM clock {g.sm_clock_mhz_median:,.0f} MHz (lowest {g.sm_clock_mhz_min:,.0f})"
                if g.sm_clock_mhz_median is not None and g.sm_clock_mhz_min is not None else None,
                f"at its power cap in {g.power_capped_samples} of {g.samples} samples" if g.power_capped_samples
                else None,
                f"**throttled in {g.throttled_samples} of {g.samples} samples ({', '.join(g.reasons)})**"
                if g.throttled_samples else "not throttled"]
        parts.append(f"GPU {g.index}: " + ", ".join(x for x in said if x))
    return "; ".join(parts)
