"""orchestrate/report/aggregates/energy.py: joules over the measured window, from watts or a counter."""

from __future__ import annotations

import pandas as pd
import pytest

from orchestrate.report.aggregates.energy import energy
from orchestrate.report.schema.headline import Tokens
from orchestrate.report.schema.machine import Energy
from orchestrate.report.schema.steady import SteadyState

T0 = 1000.0
TOKENS = Tokens(prompt=4000, output=1000)


def samples(watts: list[float | None], counter: list[float | None] | None = None, source: str = "nvidia-smi",
            start: float = T0 - 0.5, error: str | None = None) -> pd.DataFrame:
    """One sample a second from ``start``; a None watts (and counter) is a failed reading."""
    rows = []
    for i, w in enumerate(watts):
        failed = w is None and (counter is None or counter[i] is None)
        rows.append({"t": start + i, "power_watts": w, "energy_joules": None if counter is None else counter[i],
                     "power_source": None if failed and error else source, "power_error": error if failed else None})
    return pd.DataFrame(rows)


def test_a_fixed_power_over_the_window_is_power_times_time() -> None:
    """250 W from before the load to after it: 250 × 10 s, whatever the samples' phase."""
    block = energy(samples([250.0] * 13), T0, T0 + 10.0, TOKENS)
    assert block.joules == pytest.approx(2500.0) and block.mean_watts == pytest.approx(250.0)
    assert block.coverage == 1.0 and block.idle_watts == 250.0
    assert block.output_tokens_per_joule == pytest.approx(0.4)
    assert block.joules_per_output_token == pytest.approx(2.5)
    assert block.prefill_tokens_per_joule == pytest.approx(1.6)


def test_watts_are_integrated_piecewise_linear_and_idle_is_before_the_load() -> None:
    """60 W idle before the load, then a ramp: the trapezoids, cut at the window's ends."""
    block = energy(samples([60.0, 100.0, 200.0, 300.0], start=T0 - 1.0), T0, T0 + 2.0, TOKENS)
    assert block.joules == pytest.approx((100 + 200) / 2 + (200 + 300) / 2)
    assert block.idle_watts == 60.0


def test_a_counter_is_read_at_the_window_ends_not_integrated_from_the_watts() -> None:
    """The counter saw 620 J between T0 and T0 + 2 s; the sampled watts (300) would say 600."""
    block = energy(samples([None, 300.0, 300.0, 300.0], [0.0, 280.0, 600.0, 900.0], "nvml", start=T0 - 1.0),
                   T0, T0 + 2.0, TOKENS)
    assert block.joules == pytest.approx(900.0 - 280.0) and block.source == "nvml"


def test_readings_that_stop_half_way_give_no_joules_and_say_why() -> None:
    why = "nvidia-smi stopped answering (CalledProcessError: ...)"
    block = energy(samples([250.0] * 6 + [None] * 7, error=why), T0, T0 + 10.0, TOKENS)
    assert block.joules is None and block.coverage == pytest.approx(0.45)
    assert block.unavailable == f"power readings cover 45 % of the window (4.5 of 10.0 s): {why}"
    assert block.mean_watts == pytest.approx(250.0) and block.output_tokens_per_joule is None


def test_no_source_says_what_the_machine_lacks_and_a_steady_window_has_its_own_figures() -> None:
    none = energy(samples([None] * 3, error="no power reading on this machine: ..."), T0, T0 + 2.0, TOKENS)
    assert none == Energy(source=None, joules=None, unavailable="no power reading on this machine: ...")
    steady = SteadyState(found=True, start_s=2.0, end_s=6.0, decode_tok_s=100.0)
    block = energy(samples([200.0] * 13), T0, T0 + 10.0, TOKENS, steady)
    assert block.steady_state is not None and block.steady_state.joules == pytest.approx(800.0)
    assert block.steady_state.output_tokens_per_joule == pytest.approx(0.5)
