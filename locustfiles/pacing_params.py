"""The parameters of open-loop arrivals and ramp stages that both sides read: the Locust flags
(``options.py``, ``arrivals.py``, ``stages.py``) and the scenario (``orchestrate/scenario/pacing.py``).

Stage: load. It imports stdlib only, so the orchestrator can import it (``arrivals.py`` imports gevent
and ``stages.py`` Locust, which the orchestrator never does).
"""

from __future__ import annotations

from dataclasses import dataclass

ARRIVALS = ("poisson", "constant")
"""``poisson``: gamma-distributed gaps (vLLM's ``--burstiness`` is the shape); ``constant``: evenly spaced."""
DEFAULT_LATE_MS = 10.0
"""A request sent more than this after its scheduled time counts as late."""


@dataclass(frozen=True)
class Stage:
    """One ramp stage: hold ``users`` for ``duration_s`` seconds, reaching them at ``spawn_rate`` users/s."""

    duration_s: float
    users: int
    spawn_rate: float


def default_spawn_rate(users: int, previous: Stage | None) -> float:
    """A stage's spawn rate when none is given: it reaches its users within about a second, also when
    ramping down (Locust stops users at the spawn rate too: 6 → 1 users at 1/s would take 5 s)."""
    return float(max(users, previous.users if previous is not None else 0))
