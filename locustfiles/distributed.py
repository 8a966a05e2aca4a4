"""Master ↔ workers: prompts go out from the master's one dispenser, records come back in batches.

Stage: load. A worker host needs neither the dataset nor the orchestrator: it asks the master for
prompts (``tokenswarm_take``), gets at most as many as it has users (``tokenswarm_prompts``), and ships
every finished record back (``tokenswarm_records``, batched, at most ``FLUSH_INTERVAL_S`` late). The
master fires ``LlmRun.record_collected`` for each, so the one ``requests.jsonl`` is written there, and
counts what each worker was handed and returned: a worker that goes missing is reported, with the
requests it took but never returned (``workers.json``), and the run still ends when every other prompt
is answered. Only workers that proved the run's join token take part (``joingate.py``); ``workers.json``
names the others.
"""

from __future__ import annotations

import json
import logging
from collections import Counter, deque
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypedDict

import gevent
from gevent.event import AsyncResult
from locust.env import Environment
from locust.runners import MasterRunner, WorkerRunner

from locustfiles import joingate
from locustfiles.admission import Gate
from locustfiles.arrivals import is_open_loop
from locustfiles.dataset import Prompt
from locustfiles.records import RequestRecord
from locustfiles.resultfiles import WORKERS_JSON
from locustfiles.runstate import MSG_SERVER_LOST

if TYPE_CHECKING:
    from locustfiles.runstate import LlmRun

log = logging.getLogger("tokenswarm")

MSG_TAKE = "tokenswarm_take"
MSG_PROMPTS = "tokenswarm_prompts"
MSG_RECORDS = "tokenswarm_records"
FLUSH_INTERVAL_S = 0.5
"""A finished record reaches the master at most this late (plus the network)."""
FLUSH_MAX = 64
TAKE_TIMEOUT_S = 60.0
WATCH_INTERVAL_S = 1.0


class TakeMessage(TypedDict):
    want: int


class PromptsMessage(TypedDict):
    prompts: list[str]
    """``Prompt.to_json()`` lines."""
    done: bool
    """No prompt is left on the master: a worker that runs dry stops its users."""
    due: list[float]
    """Open loop: each prompt's scheduled wall-clock send time (``arrivals.py``); empty in a closed loop."""


class RecordsMessage(TypedDict):
    records: list[dict[str, Any]]


class WorkerDispenser:
    """The worker's side of the dispenser: ``take()`` blocks the user until the master answers."""

    def __init__(self, runner: WorkerRunner) -> None:
        self.runner = runner
        self.queue: deque[Prompt] = deque()
        self.exhausted = False
        self._pending: AsyncResult | None = None

    def take(self) -> Prompt | None:
        while not self.queue:
            if self.exhausted:
                return None
            if self._pending is None:
                self._pending = AsyncResult()
                want = 1 if is_open_loop(self.runner.environment.parsed_options) else self.runner.user_count
                self.runner.send_message(MSG_TAKE, dict(TakeMessage(want=max(1, want))))  # open loop: no hoarding
            pending = self._pending
            if not pending.wait(TAKE_TIMEOUT_S):
                log.error("tokenswarm: no prompts from the master in %.0f s; stopping this user", TAKE_TIMEOUT_S)
                return None
        return self.queue.popleft()

    def on_prompts(self, msg: Any, **_kw: Any) -> None:
        data: PromptsMessage = msg.data
        self.queue.extend(Prompt.from_json(line) for line in data["prompts"])
        self.exhausted = data["done"]
        pending, self._pending = self._pending, None
        if pending is not None:
            pending.set(True)

    def done(self) -> None:
        """Counted on the master, when the record arrives."""


class WorkerLedger:
    """Per worker: prompt indices handed out and records returned; who went missing.

    An index is owed once per request its prompt makes (each turn of a multi-turn conversation).
    """

    def __init__(self) -> None:
        self.handed: dict[str, Counter[int]] = {}
        self.returned: dict[str, int] = {}
        self.lost: dict[str, list[int]] = {}
        """Worker id → prompt indices it took and never returned a record for."""

    def hand(self, worker: str, indices: list[int]) -> None:
        self.handed.setdefault(worker, Counter()).update(indices)

    def returned_record(self, worker: str, index: int) -> None:
        self.returned[worker] = self.returned.get(worker, 0) + 1
        owed = self.handed.get(worker, Counter())
        if owed[index] > 1:
            owed[index] -= 1
        else:
            owed.pop(index, None)

    def lose(self, worker: str) -> list[int]:
        """Mark a worker lost; returns the prompt index of each request it still owed."""
        self.lost[worker] = sorted(self.handed.pop(worker, Counter()).elements())
        return self.lost[worker]

    def to_json(self) -> dict[str, Any]:
        return {"workers": sorted(set(self.returned) | set(self.handed) | set(self.lost)),
                "records_by_worker": self.returned, "workers_lost": len(self.lost),
                "lost_workers": sorted(self.lost),
                "lost_in_flight": sum(len(v) for v in self.lost.values()),
                "lost_prompt_indices": {w: v for w, v in self.lost.items()}}


def workers_file(records_file: str) -> Path:
    """``workers.json`` beside ``requests.jsonl``: the master's ledger of its workers."""
    return Path(records_file).with_name(WORKERS_JSON)


def install(environment: Environment, run: LlmRun) -> None:
    """Register the master's or the worker's side of the protocol, behind the join gate."""
    runner = environment.runner
    token = joingate.read_token(environment)
    if isinstance(runner, WorkerRunner):
        joingate.install_worker(environment, runner, token)
        _install_worker(environment, runner, run)
    elif isinstance(runner, MasterRunner):
        _install_master(environment, runner, run, joingate.install_master(runner, token))


def _install_worker(environment: Environment, runner: WorkerRunner, run: LlmRun) -> None:
    dispenser = WorkerDispenser(runner)
    run.dispenser = dispenser  # type: ignore[assignment]
    buffer: list[dict[str, Any]] = []

    def flush() -> None:
        if buffer:
            batch = buffer[:]
            buffer.clear()
            runner.send_message(MSG_RECORDS, dict(RecordsMessage(records=batch)))

    def on_record(record: RequestRecord, **_kw: Any) -> None:
        buffer.append(record.__dict__.copy())
        if len(buffer) >= FLUSH_MAX:
            flush()

    def flusher() -> None:
        while True:
            gevent.sleep(FLUSH_INTERVAL_S)
            flush()

    def on_prompts(msg: Any, **kw: Any) -> None:
        due = msg.data.get("due")
        if due and run.arrivals is not None:  # the due times first: the prompts wake the users
            run.arrivals.learn([json.loads(p)["index"] for p in msg.data["prompts"]], due)
        dispenser.on_prompts(msg, **kw)

    runner.register_message(MSG_PROMPTS, on_prompts)
    run.record.add_listener(on_record)
    environment.events.test_stop.add_listener(lambda **_kw: flush())
    environment.events.quitting.add_listener(lambda **_kw: flush())
    gevent.spawn(flusher)


def _install_master(environment: Environment, runner: MasterRunner, run: LlmRun, gate: Gate) -> None:
    ledger = WorkerLedger()
    collected = run.record_collected

    def on_take(msg: Any, **_kw: Any) -> None:
        data: TakeMessage = msg.data
        prompts = []
        if run.dispenser is not None and msg.node_id not in ledger.lost:
            for _ in range(max(1, int(data["want"]))):
                prompt = run.dispenser.take()
                if prompt is None:
                    break
                prompts.append(prompt)
        ledger.hand(msg.node_id, [p.index for p in prompts for _ in range(p.requests)])
        done = run.dispenser is None or run.dispenser.take_would_be_empty()
        clock = run.arrivals
        due = [clock.due[p.index] for p in prompts] if clock and all(p.index in clock.due for p in prompts) else []
        runner.send_message(MSG_PROMPTS, dict(PromptsMessage(prompts=[p.to_json() for p in prompts], done=done,
                                                             due=due)), client_id=msg.node_id)

    def on_records(msg: Any, **_kw: Any) -> None:
        data: RecordsMessage = msg.data
        for raw in data["records"]:
            record = RequestRecord.from_dict(raw)
            ledger.returned_record(msg.node_id, record.prompt_index)
            collected.fire(record=record)

    def watch() -> None:
        """Locust marks a worker missing after ~3 s without heartbeats; settle its debts then."""
        while True:
            gevent.sleep(WATCH_INTERVAL_S)
            for client in runner.clients.missing:
                if client.id in ledger.lost:
                    continue
                owed = ledger.lose(client.id)
                log.error("tokenswarm: worker %s went missing with %d request(s) in flight; going on without it",
                          client.id, len(owed))
                for _ in owed:  # never answered: count them done, so the run can still end
                    if run.dispenser is not None:
                        run.dispenser.done()

    def on_quitting(**_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is not None and run.records_written:
            ledger_json = {**ledger.to_json(), **gate.to_json()}
            workers_file(opts.records_file).write_text(json.dumps(ledger_json, indent=2) + "\n")

    def on_server_lost(msg: Any, **_kw: Any) -> None:
        """A worker judged the server lost: end the run here, or a plain master would wait out its run time."""
        if not run.server_watch.lost:
            run.server_watch.lost = True
            log.error("tokenswarm: worker %s found the server lost (every connection refused for %.1f s); "
                      "ending the run, the prompts not sent yet are counted as unsent", msg.node_id,
                      msg.data.get("refused_s", 0.0))
            gevent.spawn(runner.quit)

    runner.register_message(MSG_TAKE, on_take)
    runner.register_message(MSG_RECORDS, on_records)
    runner.register_message(MSG_SERVER_LOST, on_server_lost)
    environment.events.quitting.add_listener(on_quitting)
    gevent.spawn(watch)
