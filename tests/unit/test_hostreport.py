"""orchestrate/report/hostreport.py: the summary's ``host`` block and its note, from hand-written readings."""

from __future__ import annotations

import pytest

from orchestrate.report.hostreport import host_note, summarize_host
from orchestrate.scenario.hostlimits import HostLimits


def readings(foreign: list[float], steal: list[float], gpu: list[str] | None = None) -> list[dict]:
    return [{"t": i, "host": {"foreign_cpu_pct": f, "steal_pct": s, "server_cpu_pct": 90.0, "own_cpu_pct": 20.0,
                              "server_processes": "launcher", **({"foreign_gpu_processes": gpu} if gpu is not None else {})}}
            for i, (f, s) in enumerate(zip(foreign, steal))]


def test_summary_of_a_quiet_host() -> None:
    host = summarize_host([{"t": 0, "host": {"foreign_cpu_pct": None, "steal_pct": None}}]
                          + readings([1.0, 0.0, 3.0], [0.0, 1.0, 0.5]))
    assert host["foreign_cpu_pct"] == {"p50": 1.0, "mean": 1.33, "max": 3.0}
    assert host["steal_pct"] == {"p50": 0.5, "mean": 0.5, "max": 1.0}
    assert host["busy"] is False and host["foreign_gpu_processes"] is None and host_note(host) is None


@pytest.mark.parametrize("foreign, steal, gpu, said", [
    ([50.0, 60.0, 70.0], [0.0] * 3, None, "other processes used 60 % of a core (p50, max 70 %)"),
    ([0.0] * 3, [8.0, 9.0, 30.0], None, "the hypervisor took 9 % of the CPU time (steal p50, max 30 %)"),
    ([0.0] * 3, [0.0] * 3, ["977 python3"], "other GPU processes ran: 977 python3"),
], ids=["foreign-cpu", "steal", "gpu"])
def test_a_busy_host_is_said(foreign, steal, gpu, said) -> None:
    host = summarize_host(readings(foreign, steal, gpu))
    assert host["busy"] is True
    assert said in host_note(host)


def test_one_busy_second_is_not_a_busy_run_and_limits_are_kept() -> None:
    host = summarize_host(readings([0.0] * 19 + [95.0], [0.0] * 20), HostLimits(foreign_cpu_pct=20.0))
    assert host["busy"] is False and host["foreign_cpu_pct"]["max"] == 95.0  # judged on p50; max shown
    assert host["limits"] == {"foreign_cpu_pct": 20.0, "steal_pct": 5.0}


def test_the_limits_are_the_users() -> None:
    """The same readings are quiet under the default limits and busy under stricter ones."""
    quiet = readings([3.0, 4.0, 4.0], [2.0] * 3)
    assert summarize_host(quiet)["busy"] is False
    strict = summarize_host(quiet, HostLimits(foreign_cpu_pct=3.0, steal_pct=1.0))
    assert strict["busy"] is True and "4 % of a core" in host_note(strict) and "steal p50" in host_note(strict)


def test_no_readings_no_block() -> None:
    assert summarize_host([{"t": 0}]) is None and host_note(None) is None


def test_bursts_that_add_up_make_the_host_busy_though_the_median_is_low() -> None:
    """The real CPU study's case: a median of 2 % but 15 of 116 seconds at 70-98 % of a core."""
    foreign = [2.0] * 101 + [85.0] * 15
    host = summarize_host(readings(foreign, [0.0] * len(foreign)))
    assert host["foreign_cpu_pct"]["p50"] == 2.0 and host["foreign_cpu_pct"]["mean"] > 5.0
    assert host["busy"] is True and "on average, in bursts" in host_note(host)
    assert summarize_host(readings([2.0] * 110 + [85.0] * 2, [0.0] * 112))["busy"] is False  # a blip is not
    short = summarize_host(readings([0.0, 2.0, 0.0, 12.0, 0.0, 0.0, 73.0], [0.0] * 7))  # a sweep step's artefacts
    assert short["foreign_cpu_pct"]["mean"] > 5.0 and short["busy"] is False
