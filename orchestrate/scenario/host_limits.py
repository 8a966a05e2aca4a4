"""The host's limits: past these p50s a variant's host counts as busy (scenario ``host_limits:``).

Stage: scenario. A spec like the others (``Scenario.host_limits``); the probe that reads the host
is ``load/host_probe.py``, the summary's ``host`` block ``report/aggregates/host.py`` and its note
``report/notes.py:host_note``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from orchestrate.scenario.yamlsource import Checker

FOREIGN_CPU_LIMIT_PCT = 10.0
"""Foreign CPU p50 above this (% of one core), or its mean above ``BURST_SHARE`` of it, makes the host busy."""
STEAL_LIMIT_PCT = 5.0
"""Steal p50 above this (% of all CPU time) makes the host busy."""
BURST_SHARE = 0.5
"""Foreign CPU in bursts makes the host busy too, when its mean passes this share of the limit: on the
real CPU study, 15 s of another job at 70–98 % of a core in a 2-minute variant left the p50 at 2 % but
the mean at 9.7 % (quiet runs: 1.4–1.8 %), and that variant's decode 10 % below its other repeats."""
BURST_MIN_S = 3
"""...when the foreign CPU also passed the limit in at least this many readings (seconds): one reading
over it is an artefact of a process of the run ending (or a short sweep step's), not a load."""


@dataclass(frozen=True)
class HostLimits:
    """Past these p50s the host was busy while a variant ran (scenario ``host_limits:``, ``--host-cpu-limit``)."""

    foreign_cpu_pct: float = FOREIGN_CPU_LIMIT_PCT
    steal_pct: float = STEAL_LIMIT_PCT


def parse_host_limits(check: "Checker", raw: Any) -> HostLimits:
    """``host_limits: {foreign_cpu_pct: 25, steal_pct: 5}``; an unknown key or a negative limit names its line."""
    section = check.mapping(raw, ("host_limits",), {"foreign_cpu_pct", "steal_pct"})
    return HostLimits(**{k: check.number(v, ("host_limits", k), float, 0) for k, v in section.items()})
