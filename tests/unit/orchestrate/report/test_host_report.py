"""orchestrate/report/host_report.py: what kept the host busy and the note, from hand-written readings."""

from __future__ import annotations

import pytest

from orchestrate.report.aggregates.host import summarize_host
from orchestrate.report.host_report import host_note
from orchestrate.scenario.host_limits import HostLimits
from tests.unit.orchestrate.report.aggregates.test_host import readings


@pytest.mark.parametrize("foreign, steal, gpu, said", [
    ([50.0, 60.0, 70.0], [0.0] * 3, None, "other processes used 60 % of a core (p50, max 70 %)"),
    ([0.0] * 3, [8.0, 9.0, 30.0], None, "the hypervisor took 9 % of the CPU time (steal p50, max 30 %)"),
    ([0.0] * 3, [0.0] * 3, ["977 python3"], "other GPU processes ran: 977 python3"),
], ids=["foreign-cpu", "steal", "gpu"])
def test_a_busy_host_is_said(foreign, steal, gpu, said) -> None:
    host = summarize_host(readings(foreign, steal, gpu))
    assert host["busy"] is True
    assert said in host_note(host)


def test_the_limits_are_the_users() -> None:
    """The same readings are quiet under the default limits and busy under stricter ones."""
    quiet = readings([3.0, 4.0, 4.0], [2.0] * 3)
    assert summarize_host(quiet)["busy"] is False
    strict = summarize_host(quiet, HostLimits(foreign_cpu_pct=3.0, steal_pct=1.0))
    assert strict["busy"] is True and "4 % of a core" in host_note(strict) and "steal p50" in host_note(strict)


def test_no_readings_no_block() -> None:
    assert summarize_host([{"t": 0}]) is None and host_note(None) is None


