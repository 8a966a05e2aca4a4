"""locustfiles/selfcheck.py and summarize_client: the load generator's own lag, and when it is saturated."""

from __future__ import annotations

import pytest

from locustfiles.selfcheck import LoopMonitor
from orchestrate.report.aggregates.client import summarize_client


def report(p99: float, cpu: float, worker: str = "local") -> dict:
    return {"worker": worker, "cpu_pct": cpu, "duration_s": 10.0,
            "loop_lag_ms": {"p50": p99 / 4, "p99": p99, "max": p99 * 2, "samples": 1000}}


def test_report_percentiles_are_nearest_rank() -> None:
    monitor = LoopMonitor()
    for lag in range(1, 101):
        monitor.add(float(lag))
    lag = monitor.stop("local")["loop_lag_ms"]
    assert (lag["p50"], lag["p99"], lag["max"], lag["samples"]) == (50.0, 99.0, 100.0, 100)


def test_monitor_keeps_the_max_and_bounds_its_samples(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("locustfiles.selfcheck.MAX_SAMPLES", 10)
    monitor = LoopMonitor()
    for lag in [1.0] * 9 + [50.0] + [-0.2] * 5:  # a late wake-up, then early ones clamp to 0
        monitor.add(lag)
    assert monitor.max_ms == 50.0
    assert len(monitor.lags_ms) == 5  # halved to 5 at the 10th sample and again at the 15th
    assert min(monitor.lags_ms) == 0.0


@pytest.mark.parametrize("reports, saturated, lag_p99, cpu", [
    ([report(0.4, 12.0)], False, 0.4, 12.0),
    ([report(5.0, 50.0)], False, 5.0, 50.0),           # at the threshold: not yet
    ([report(5.1, 50.0)], True, 5.1, 50.0),
    ([report(1.0, 95.0)], True, 1.0, 95.0),            # a full core
    ([report(0.5, 20.0, "w1"), report(30.0, 40.0, "w2")], True, 30.0, 40.0),  # the worst worker counts
])
def test_summarize_client(reports: list[dict], saturated: bool, lag_p99: float, cpu: float) -> None:
    client = summarize_client(reports)
    assert client is not None
    assert (client.saturated, client.loop_lag_ms.p99, client.cpu_pct) == (saturated, lag_p99, cpu)
    assert client.workers == len(reports)


def test_no_reports_no_client_block() -> None:
    assert summarize_client(None) is None and summarize_client([]) is None


def test_lag_spent_waiting_for_a_core_is_not_the_clients_own() -> None:
    monitor = LoopMonitor()
    for _ in range(99):
        monitor.add(0.2, 10.1)  # 10 ms interval: CPU beyond it is surely in the lag
    monitor.add(40.0, 13.0)     # 40 ms late, but the process ran only 3 ms of it: another process had the core
    lag = monitor.stop("local")["loop_lag_ms"]
    assert (lag["p99"], lag["max"], lag["own_p99"]) == (0.2, 40.0, 0.1)


@pytest.mark.parametrize("own_p99, saturated, host_busy", [
    (30.0, True, False),    # late by its own work: add workers
    (5.0, False, True),     # late by as much, but waiting for a core: other processes
    (None, True, False),    # a report without own_p99 counts all the lag as its own
])
def test_host_busy_versus_saturated(own_p99: float | None, saturated: bool, host_busy: bool) -> None:
    r = report(30.0, 20.0)
    if own_p99 is not None:
        r["loop_lag_ms"]["own_p99"] = own_p99
    client = summarize_client([r])
    assert client is not None
    assert (client.saturated, client.host_busy, client.loop_lag_ms.own_p99) == \
        (saturated, host_busy, own_p99 if own_p99 is not None else 30.0)
