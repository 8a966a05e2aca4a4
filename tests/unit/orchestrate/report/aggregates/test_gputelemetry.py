"""orchestrate/report/aggregates/gputelemetry.py: the ``gpus`` block, its note and its diagnostics line."""

from __future__ import annotations

from orchestrate.report.aggregates.gputelemetry import gpu_line, gpu_telemetry, throttle_note


def state(index: int, clock: float, reasons: list[str], temp: float = 60.0) -> dict[str, object]:
    return {"index": index, "util_pct": 80.0, "memory_used_bytes": 1000, "temperature_c": temp, "sm_clock_mhz": clock,
            "reasons": reasons}


def test_a_slowdown_is_a_throttle_the_power_cap_and_idle_are_not() -> None:
    samples = [{"gpus": [state(0, 1980.0, ["gpu_idle"]), state(1, 1980.0, ["sw_power_cap"])]},
               {"gpus": [state(0, 1200.0, ["hw_thermal_slowdown", "sw_power_cap"], temp=91.0),
                         state(1, 1950.0, ["sw_power_cap"])]},
               {"gpus": None}, {}]
    block = gpu_telemetry(samples)
    assert block is not None and block.throttled
    zero, one = block.gpus
    assert (zero.throttled_samples, zero.reasons, zero.sm_clock_mhz_min, zero.temperature_c_max) == (
        1, ("hw_thermal_slowdown",), 1200.0, 91.0)
    assert (one.throttled_samples, one.power_capped_samples, one.sm_clock_mhz_median) == (0, 2, 1965.0)
    assert throttle_note(block) == (
        "a GPU throttled while this ran (GPU 0: hw_thermal_slowdown in 1 of 2 samples, SM clock down to 1200 MHz, "
        "up to 91 °C): its figures are those of a slowed GPU, and a comparison with it is confounded (gpu_throttle)")
    assert gpu_line(block) == (
        "GPU 0: 80 % busy on average, up to 91 °C, SM clock 1,590 MHz (lowest 1,200), at its power cap in 1 of 2 "
        "samples, **throttled in 1 of 2 samples "
        "(hw_thermal_slowdown)**; GPU 1: 80 % busy on average, up to 60 °C, SM clock 1,965 MHz (lowest 1,950), at "
        "its power cap in 2 of 2 samples, not throttled")
    assert gpu_telemetry([{"gpus": None}]) is None and throttle_note(None) is None
