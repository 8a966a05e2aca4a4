"""``load.until``'s stop: once every target's 95 % interval is as narrow as asked, the rest of the run is wasted.

Stage: load (beside ``locust_run``, which asks ``reached`` every 0.2 s). Every ``CHECK_EVERY_S`` (or ten times as
long as a check took, so judging never takes more than a tenth of the time) it asks ``measure`` (the plan hands it
``report/aggregates/precision.py:precision_now``: the records so far, their steady window as the summary will
find it, each target's relative half width); the first time every one holds, the run stops (``UNTIL``). Each
check goes to ``until.json``, which the summary reads for when each target first held.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from orchestrate.results import VariantPaths, write_json
from orchestrate.scenario.until import UNTIL

Measure = Callable[[], "tuple[dict[str, float | None], float] | None"]
"""Each target's relative half width now, and the run's first send (wall clock); None before any record."""

CHECK_EVERY_S = 2.0
COST_SHARE = 10
"""The next check waits at least this many times as long as the last took."""


class PrecisionWatch:
    """Judges a run's precision as its records arrive; ``reached()`` says ``UNTIL`` once every target holds."""

    def __init__(self, paths: VariantPaths, targets: dict[str, float], measure: Measure,
                 every_s: float = CHECK_EVERY_S) -> None:
        self.paths, self.targets, self.measure, self.every_s = paths, targets, measure, every_s
        self.checks = 0
        self.held_at_s: dict[str, float] = {}
        self.latest: dict[str, float | None] = {}
        self._next = time.monotonic() + every_s

    def reached(self) -> str | None:
        """``UNTIL`` once every target's interval is within its width, else None (and None between checks)."""
        if time.monotonic() < self._next:
            return None
        began = time.monotonic()
        done = self.check()
        self._next = time.monotonic() + max(self.every_s, COST_SHARE * (time.monotonic() - began))
        return UNTIL if done else None

    def check(self) -> bool:
        """One look at the records so far; True when every target holds. Written to ``until.json``."""
        found = self.measure()
        if found is None:
            return False
        self.latest, first_send = found
        self.checks += 1
        for name, width in self.latest.items():
            if width is not None and width <= self.targets[name]:
                self.held_at_s.setdefault(name, round(time.time() - first_send, 3))
        done = all(w is not None and w <= self.targets[name] for name, w in self.latest.items())
        self._write(done)
        return done

    def _write(self, done: bool) -> None:
        data: dict[str, Any] = {"targets": self.targets, "checks": self.checks, "held_at_s": self.held_at_s,
                                "latest": self.latest, "stopped": done}
        write_json(self.paths.until_json, data)
