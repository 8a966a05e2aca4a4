"""The load generator checks itself: event-loop lag and CPU of every process that runs users.

Stage: load. It imports stdlib, gevent, and locust inside ``install`` (the measuring part imports
without it, so tests and the orchestrator can use it). A greenlet sleeps ``INTERVAL_S`` and records how late
it wakes: when the process is busy (too many streams, a slow user), every timestamp it takes is late
by about that much, so the lag bounds how much the client inflated TTFT and inter-token times. CPU
is the process's own CPU time over wall time. Each worker sends its figures to the master; the
collecting process writes ``client.json`` beside ``requests.jsonl``.
"""

from __future__ import annotations

import json
import logging
import time
from array import array
from pathlib import Path
from typing import TYPE_CHECKING, Any

import gevent

from locustfiles.livestats import percentiles
from locustfiles.resultfiles import CLIENT_JSON

if TYPE_CHECKING:
    from locust.env import Environment

    from locustfiles.runstate import LlmRun

log = logging.getLogger("tokenswarm")

INTERVAL_S = 0.01
"""How often the loop is probed; a lag sample costs about 2 µs."""
MAX_SAMPLES = 100_000
"""Enough for about 17 minutes at full resolution; then every other sample is kept (max stays exact)."""
MSG_CLIENT = "tokenswarm_client"


class LoopMonitor:
    """Samples loop lag (ms) and CPU from ``start()`` to ``stop()``."""

    def __init__(self, interval_s: float = INTERVAL_S) -> None:
        self.interval_s = interval_s
        self.lags_ms = array("d")  # 8 bytes a sample, not a Python float's 32: a long run stays small
        self.own_ms = array("d")
        """Per sample, how much of the lag the process surely spent running: its CPU time in the
        interval beyond the interval itself, capped at the lag. The rest it may have waited for a core
        that another process held (a busy host, which more workers would not fix)."""
        self.max_ms = 0.0
        self._greenlet: gevent.Greenlet | None = None
        self._wall0 = self._cpu0 = 0.0

    @property
    def running(self) -> bool:
        return self._greenlet is not None

    def start(self) -> None:
        if self._greenlet is None:
            self._wall0, self._cpu0 = time.perf_counter(), time.process_time()
            self._greenlet = gevent.spawn(self._run)

    def _run(self) -> None:
        while True:
            before, cpu_before = time.perf_counter(), time.process_time()
            gevent.sleep(self.interval_s)
            self.add((time.perf_counter() - before - self.interval_s) * 1000.0,
                     (time.process_time() - cpu_before) * 1000.0)

    def add(self, lag_ms: float, cpu_ms: float | None = None) -> None:
        """One wake-up ``lag_ms`` late, with ``cpu_ms`` of the process's CPU time in the interval."""
        lag_ms = max(0.0, lag_ms)
        self.max_ms = max(self.max_ms, lag_ms)
        self.lags_ms.append(lag_ms)
        own_ms = lag_ms if cpu_ms is None else min(lag_ms, max(0.0, cpu_ms - self.interval_s * 1000.0))
        self.own_ms.append(own_ms)
        if len(self.lags_ms) >= MAX_SAMPLES:
            self.lags_ms, self.own_ms = self.lags_ms[::2], self.own_ms[::2]

    def stop(self, worker: str) -> dict[str, Any]:
        if self._greenlet is not None:
            self._greenlet.kill(block=False)
            self._greenlet = None
        wall = time.perf_counter() - self._wall0
        cpu = time.process_time() - self._cpu0
        lag = percentiles(self.lags_ms) or {"p50": 0.0, "p99": 0.0}
        own = percentiles(self.own_ms) or {"p99": 0.0}
        return {"worker": worker, "duration_s": round(wall, 3),
                "cpu_pct": round(100.0 * cpu / wall, 1) if wall > 0 else None,
                "loop_lag_ms": {"p50": round(lag["p50"], 3), "p99": round(lag["p99"], 3),
                                "max": round(self.max_ms, 3), "samples": len(self.lags_ms),
                                "own_p99": round(own["p99"], 3)}}


def client_file(records_file: str) -> Path:
    """``client.json`` beside ``requests.jsonl``: one entry per process that ran users."""
    return Path(records_file).with_name(CLIENT_JSON)


def install(environment: Environment, run: LlmRun) -> None:
    from locust.runners import MasterRunner, WorkerRunner  # here: importing Locust monkey-patches

    runner = environment.runner
    reports: list[dict[str, Any]] = []

    def write() -> None:
        opts = environment.parsed_options
        if opts is not None and reports:
            client_file(opts.records_file).write_text(json.dumps(reports, indent=2) + "\n")

    if isinstance(runner, MasterRunner):
        def on_report(msg: Any, **_kw: Any) -> None:
            reports.append(msg.data)
        runner.register_message(MSG_CLIENT, on_report)
        environment.events.quitting.add_listener(lambda **_kw: write())
        return

    monitor = LoopMonitor()
    environment.events.test_start.add_listener(lambda **_kw: monitor.start())

    def finish(**_kw: Any) -> None:
        # At test_stopping, before Locust kills the users: tearing them down is not load, and its
        # pause would otherwise be the last (and in a short run, the p99) sample.
        if not monitor.running:
            return
        report = monitor.stop(run.worker)
        if isinstance(runner, WorkerRunner):
            runner.send_message(MSG_CLIENT, report)
        else:
            reports.append(report)
            write()
        log.info("tokenswarm: loop lag p99 %.2f ms, CPU %s %%", report["loop_lag_ms"]["p99"], report["cpu_pct"])

    environment.events.test_stopping.add_listener(finish)
    environment.events.test_stop.add_listener(finish)  # a stop that skipped test_stopping
    environment.events.quitting.add_listener(finish)
