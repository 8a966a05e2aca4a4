"""A scenario's prices (``cost:``, ``--usd-per-hour``, ``--usd-per-kwh``): what the serving machine costs an hour
and what its energy costs, so each variant's dollars per million tokens follow from its measured seconds and joules.

Stage: scenario. Like ``slo:``, prices change no measurement: they are not settings, and ``tokenswarm report``
prices a run again from ``run.json``.

```yaml
cost:
  usd_per_hour: 3.50   # the machine (a cloud GPU's hourly price)
  usd_per_kwh: 0.15    # its energy, when power is measured
```
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from orchestrate.scenario.yamlsource import Checker

COST_KEYS = ("usd_per_hour", "usd_per_kwh")


@dataclass(frozen=True)
class CostRates:
    """Prices in US dollars; None: not priced."""

    usd_per_hour: float | None = None
    """What the serving machine costs an hour."""
    usd_per_kwh: float | None = None
    """What its energy costs a kWh."""


def parse_cost(check: Checker, raw: Any) -> CostRates | None:
    """``cost:`` → its rates (each a finite number >= 0); None without it."""
    item = check.mapping(raw, ("cost",), set(COST_KEYS))
    rates = {}
    for key in COST_KEYS:
        if key in item:
            value = check.number(item[key], ("cost", key), float, 0)
            if not math.isfinite(value):
                raise check.fail(("cost", key), f"must be a finite price in dollars, got {item[key]!r}")
            rates[key] = value
    return CostRates(**rates) if rates else None
