"""The ``cost`` block: the run's seconds and joules at the scenario's prices (``cost:``), per million tokens.

Stage: report. From the summary's own figures only (``duration_s``, ``energy.joules``, ``tokens``), so the block is
the hand computation a reader would do from ``summary.json``.
"""

from __future__ import annotations

from orchestrate.report.schema.cost import Cost
from orchestrate.report.schema.headline import Tokens
from orchestrate.report.schema.machine import Energy
from orchestrate.scenario.cost import CostRates

SECONDS_PER_HOUR = 3600.0
JOULES_PER_KWH = 3.6e6


def cost(rates: CostRates | None, duration_s: float, energy: Energy, tokens: Tokens) -> Cost | None:
    """Dollars over the run and per million tokens; None without prices."""
    if rates is None:
        return None
    usd_time = None if rates.usd_per_hour is None else duration_s / SECONDS_PER_HOUR * rates.usd_per_hour
    usd_energy = (None if rates.usd_per_kwh is None or energy.joules is None
                  else energy.joules / JOULES_PER_KWH * rates.usd_per_kwh)
    parts = [x for x in (usd_time, usd_energy) if x is not None]
    usd = sum(parts) if parts else None
    return Cost(usd_time=usd_time, usd_energy=usd_energy, usd=usd,
                usd_per_mtok_output=usd / tokens.output * 1e6 if usd is not None and tokens.output else None,
                usd_per_mtok_input=usd / tokens.prompt * 1e6 if usd is not None and tokens.prompt else None,
                energy_unpriced=(energy.unavailable or "no energy reading")
                if rates.usd_per_kwh is not None and energy.joules is None else None)
