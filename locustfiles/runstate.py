"""The per-process state of a run (``environment.tokenswarm``): its dispenser, arrival clock and records file.

Stage: load. ``events.install`` creates one ``LlmRun`` per Locust process; the listeners of
``arrivals.py``, ``distributed.py`` and ``selfcheck.py`` are handed it, so they import this module
and never ``events.py``, which imports them.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

import gevent

from locustfiles.serverwatch import RefusalWatch

if TYPE_CHECKING:  # locust is imported where a run starts: the arrival clock is tested without its patching
    from locust.env import Environment
    from locust.event import EventHook

    from locustfiles.dataset import Prompt
    from locustfiles.dispenser import PromptDispenser
    from locustfiles.livestats import LiveStats

log = logging.getLogger("tokenswarm")


@dataclass
class ArrivalClock:
    """Prompt index → wall-clock time it is due (``time.time()`` seconds)."""

    due: dict[int, float] = field(default_factory=dict)
    info: dict[str, Any] = field(default_factory=dict)
    """What ``arrivals.json`` says about the schedule (parameters, start, count)."""

    def plan(self, prompts: list[Prompt], offsets: list[float], start: float) -> None:
        """Fix the schedule: ``prompts[k]`` (the k-th to be handed out) is due at ``start + offsets[k]``."""
        self.due = {p.index: start + off for p, off in zip(prompts, offsets)}

    def learn(self, indices: list[int], due: list[float]) -> None:
        """A worker: the due times of the prompts the master just dealt."""
        self.due.update(zip(indices, due))

    def wait(self, index: int) -> float | None:
        """Sleep until prompt ``index`` is due; its due time, or None outside the open loop."""
        due = self.due.get(index)
        if due is None:
            return None
        while (left := due - time.time()) > 0:
            gevent.sleep(left)
        return due


MSG_SERVER_LOST = "tokenswarm_server_lost"
"""A worker's users found the server lost: the master ends the run (``distributed.py``)."""


class LlmRun:
    """Per-process state of a tokenswarm run, reachable as ``environment.tokenswarm`` (``llm_run``), with
    tokenswarm's own events beside Locust's (each an annotated hook, as in Locust's ``event.py``; made by
    ``events.install`` inside Locust: importing locust here would patch the importer with gevent)."""

    record: EventHook
    """Fired by a user when its request ended, on the process where it ran: its Locust rows are fired there
    (so Locust's own master/worker stats aggregate them) and a worker sends the record on to its master.

    :param record: the ``RequestRecord``.
    """
    record_collected: EventHook
    """Fired once per record on the process that keeps the run (the local runner, or the master): the
    records file, the dispenser's count and the web UI's figures listen to it.

    :param record: the ``RequestRecord``.
    """

    def __init__(self, environment: Environment) -> None:
        self.environment = environment
        self.live: LiveStats | None = None
        """The web UI's LLM figures (``webui.install_webui``), None without the web UI."""
        self.dispenser: PromptDispenser | None = None
        self.arrivals: ArrivalClock | None = None
        """Open loop (``--rate``): when each prompt is due (``arrivals.py``); None in a closed loop."""
        self.records_file: IO[str] | None = None
        self.records_written = 0
        self.prompts: list[Prompt] | None = None
        """Read at init (a bad dataset stops Locust before any user spawns), sent at each test start."""
        self.server_watch = RefusalWatch(on_lost=self.on_server_lost)
        """Refused connections are retried until the server counts as lost (``serverwatch.py``)."""
        self._next_id = 0

    @property
    def worker(self) -> str:
        from locust.runners import WorkerRunner
        runner = self.environment.runner
        return f"w{runner.client_id}" if isinstance(runner, WorkerRunner) else "local"

    @property
    def target_users(self) -> int | None:
        """The user count this run is set to now (a ramp to it included). A worker's own count is only its
        share, so a worker answers the total the web UI's form set (``--ui-target-users``, handed on by the
        master with each spawn), and None in a headless run."""
        from locust.runners import WorkerRunner
        runner = self.environment.runner
        if runner is None:
            return None
        if isinstance(runner, WorkerRunner):
            return getattr(self.environment.parsed_options, "ui_target_users", 0) or None
        return runner.target_user_count

    def next_request_id(self) -> str:
        self._next_id += 1
        prefix = getattr(self.environment.parsed_options, "request_id_prefix", "") or ""
        return f"{prefix}{self.worker}-{self._next_id}"

    def on_server_lost(self, refused_s: float) -> None:
        """Every connection refused for the window: stop sending. A worker tells its master, which ends
        the run for every worker (its users stop one by one meanwhile); a local run or a master quits."""
        log.error("tokenswarm: the server refused every connection for %.1f s: server lost; stopping, "
                  "the prompts not sent yet are counted as unsent", refused_s)
        from locust.runners import WorkerRunner
        runner = self.environment.runner
        if isinstance(runner, WorkerRunner):
            runner.send_message(MSG_SERVER_LOST, {"refused_s": refused_s})
        elif runner is not None:
            gevent.spawn(runner.quit)

    def open_records(self, path: str) -> None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        self.records_file = open(path, "a", buffering=1, encoding="utf-8")  # line-buffered: on disk at once

    def close_records(self) -> None:
        if self.records_file is not None:
            try:
                self.records_file.close()
            except OSError:  # a full disk: the lines written so far are what there is
                pass
            self.records_file = None


def llm_run(environment: Environment) -> LlmRun:
    """The run's state on ``environment`` (``events.install`` puts it there, as ``environment.tokenswarm``)."""
    run = getattr(environment, "tokenswarm")
    assert isinstance(run, LlmRun), "events.install has not run on this environment"
    return run
