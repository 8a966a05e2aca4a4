"""orchestrate/report/aggregates/host.py: the summary's ``host`` block from hand-written readings."""

from __future__ import annotations

from typing import Any

from orchestrate.report.aggregates.host import summarize_host
from orchestrate.report.notes import host_note
from orchestrate.report.schema.common import MedianMeanMax
from orchestrate.report.schema.machine import Host
from orchestrate.report.schema.machine import HostLimits as Limits
from orchestrate.scenario.host_limits import HostLimits


def readings(foreign: list[float], steal: list[float], gpu: list[str] | None = None) -> list[dict[str, Any]]:
    return [{"t": i, "host": {"foreign_cpu_pct": f, "steal_pct": s, "server_cpu_pct": 90.0, "own_cpu_pct": 20.0,
                              "server_processes": "launcher", **({"foreign_gpu_processes": gpu} if gpu is not None else {})}}
            for i, (f, s) in enumerate(zip(foreign, steal))]


def test_summary_of_a_quiet_host() -> None:
    host = summarize_host([{"t": 0, "host": {"foreign_cpu_pct": None, "steal_pct": None}}]
                          + readings([1.0, 0.0, 3.0], [0.0, 1.0, 0.5]))
    assert host is not None
    assert host.foreign_cpu_pct == MedianMeanMax(p50=1.0, mean=1.33, max=3.0)
    assert host.steal_pct == MedianMeanMax(p50=0.5, mean=0.5, max=1.0)
    assert host.busy is False and host.foreign_gpu_processes is None and host_note(host) is None


def test_one_busy_second_is_not_a_busy_run_and_limits_are_kept() -> None:
    host = summarize_host(readings([0.0] * 19 + [95.0], [0.0] * 20), HostLimits(foreign_cpu_pct=20.0))
    assert host is not None and host.foreign_cpu_pct is not None
    assert host.busy is False and host.foreign_cpu_pct.max == 95.0  # judged on p50; max shown
    assert host.limits == Limits(foreign_cpu_pct=20.0, steal_pct=5.0)


def test_bursts_that_add_up_make_the_host_busy_though_the_median_is_low() -> None:
    """The real CPU study's case: a median of 2 % but 15 of 116 seconds at 70-98 % of a core."""
    foreign = [2.0] * 101 + [85.0] * 15
    host = summarize_host(readings(foreign, [0.0] * len(foreign)))
    assert host is not None and host.foreign_cpu_pct is not None
    assert host.foreign_cpu_pct.p50 == 2.0 and (host.foreign_cpu_pct.mean or 0) > 5.0
    assert host.busy is True and "on average, in bursts" in (host_note(host) or "")
    assert busy(summarize_host(readings([2.0] * 110 + [85.0] * 2, [0.0] * 112))) is False  # a blip is not
    short = summarize_host(readings([0.0, 2.0, 0.0, 12.0, 0.0, 0.0, 73.0], [0.0] * 7))  # a sweep step's artefacts
    assert short is not None and short.foreign_cpu_pct is not None
    assert (short.foreign_cpu_pct.mean or 0) > 5.0 and short.busy is False


def busy(host: Host | None) -> bool:
    assert host is not None
    return host.busy
