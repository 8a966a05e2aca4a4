"""A capacity probe's early stop: once it can no longer reach its attainment, the rest of it is wasted time.

Stage: load (beside ``locust_run``, which asks ``cannot_pass`` every 0.2 s). It reads the probe's
``requests.jsonl`` as the records arrive (``locust_run.complete_lines``, as the progress line does) and judges each by the goodput rule (``scenario.slo.meets_slo``),
like GuideLLM's over-saturation stop. A probe passes on the requests sent in its steady-state window;
that window holds at most all the probe's requests and leaves out at most the ramp's first ``users``
sends (a closed loop's drain sends nothing). So a probe is lost for certain once its misses, less
``users``, exceed what the attainment allows of all its requests: it is stopped then, never sooner.
"""

from __future__ import annotations

import json
from pathlib import Path

from orchestrate.load.locust_run import complete_lines
from orchestrate.scenario.search import CANNOT_PASS
from orchestrate.scenario.slo import meets_slo


class ProbeWatch:
    """Counts a probe's misses from its records file; ``cannot_pass()`` says ``cannot_pass`` once it is lost.

    :param planned: the probe's requests; :param users: requests its window may leave out (the ramp's).
    """

    def __init__(self, records: Path, limits: dict[str, float], attainment: float, planned: int, users: int) -> None:
        self.records, self.limits = records, limits
        self.allowed = (1 - attainment) * planned + users
        self.misses = self.seen = 0
        self._offset = 0

    def cannot_pass(self) -> str | None:
        """``CANNOT_PASS`` once the misses so far rule a pass out, else None."""
        self._read()
        return CANNOT_PASS if self.misses > self.allowed + 1e-9 else None  # 3.999... allows 4

    def _read(self) -> None:
        complete, self._offset = complete_lines(self.records, self._offset)
        for line in complete.splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            self.seen += 1
            self.misses += not meets_slo(record, self.limits)
