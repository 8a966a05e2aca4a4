"""Open-loop arrivals (``--rate``): requests go out on a schedule fixed in advance, not when a user is free.

Stage: load. It imports stdlib, and locust inside ``install`` (the schedule and the clock are
testable without Locust's monkey-patching). A closed loop hides a slow server (coordinated
omission): when every user waits, no new request is due, so queueing never shows in the latencies.
Here the k-th prompt of the run is due ``start + offset_k``; ``users`` is only the cap on requests
in flight. A free user takes the next prompt, sleeps until it is due and sends it; when no user is
free at that time it goes out as soon as one is, and the record says how late (``send_delay_ms``),
so latencies can also be read from the scheduled time, which is what a user of the service waits.

Who owns the schedule: the process with the dispenser (the local runner, or the master). It maps
each prompt index to a wall-clock due time at test start and, in distributed runs, sends the due
time with every prompt it deals (``distributed.py``), so workers need neither the parameters nor
the start time, and a late-joining worker gets the same schedule. Wall clock (``time.time()``)
because the records' ``send_ts`` is wall clock too; across hosts that needs synchronised clocks
(NTP: about a millisecond), the same assumption the records already make.

The schedule starts once Locust has started every user (``spawn_time_s`` after the test start), so
the ramp of the cap is not counted as lateness.
"""

from __future__ import annotations

import json
import logging
import math
import random
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from locustfiles.pacing_params import ARRIVALS
from locustfiles.resultfiles import ARRIVALS_JSON
from locustfiles.runstate import ArrivalClock, LlmRun

if TYPE_CHECKING:
    from locust.env import Environment

    from locustfiles.dataset import Prompt

log = logging.getLogger("tokenswarm")

START_MARGIN_S = 0.1
"""Added to the users' start-up time before the first request is due."""
MASTER_MARGIN_S = 0.5
"""The same with workers: the spawn messages, the workers' own spawning and the first prompts' round trip
(measured: all 8 users of 2 local workers running 0.27 s after the test start)."""


def arrival_offsets(n: int, rate: float, arrival: str = "poisson", burstiness: float = 1.0,
                    seed: int = 0) -> list[float]:
    """Send times (s after the start) of ``n`` requests at ``rate`` requests/s; the first at 0.

    ``poisson``: inter-arrival times drawn from a gamma distribution of shape ``burstiness`` and
    mean ``1 / rate``, as vLLM's ``--burstiness`` (1 = exponential, i.e. Poisson arrivals; < 1
    burstier; > 1 more regular). ``constant``: exactly ``1 / rate`` apart. Seeded, so every process
    computes the same schedule.
    """
    if rate <= 0:
        raise ValueError(f"rate must be > 0, got {rate}")
    if arrival not in ARRIVALS:
        raise ValueError(f"arrival must be one of {ARRIVALS}, got {arrival!r}")
    if burstiness <= 0:
        raise ValueError(f"burstiness must be > 0, got {burstiness}")
    if arrival == "constant":
        return [k / rate for k in range(n)]
    rng = random.Random(seed)
    theta = 1.0 / (rate * burstiness)
    out, t = [], 0.0
    for k in range(n):
        if k:
            t += rng.gammavariate(burstiness, theta)
        out.append(t)
    return out


def spawn_time_s(users: int, spawn_rate: float) -> float:
    """How long Locust takes to start ``users``: batches of ``floor(spawn_rate)`` users, ``batch / spawn_rate``
    seconds apart (``locust.dispatch.UsersDispatcher``), plus a millisecond a user to create it."""
    batch = max(1, math.floor(spawn_rate))
    return (math.ceil(users / batch) - 1) * batch / spawn_rate + users * 0.001


def wait_until_due(run: LlmRun, prompt: Prompt) -> float | None:
    """Called by a user before it sends ``prompt``: returns at its scheduled time (at once when late)."""
    clock = run.arrivals
    return clock.wait(prompt.index) if clock is not None else None


def arrivals_file(records_file: str) -> Path:
    """``arrivals.json`` beside ``requests.jsonl``: the schedule's parameters and start."""
    return Path(records_file).with_name(ARRIVALS_JSON)


def write(records_file: str, info: dict[str, Any]) -> None:
    try:
        arrivals_file(records_file).write_text(json.dumps(info, separators=(",", ":")) + "\n")
    except OSError as exc:
        log.error("tokenswarm: cannot write %s (%s)", arrivals_file(records_file), exc)


def is_open_loop(opts: Any) -> bool:
    """A rate's schedule (``--rate``) or a trace's (``--time-scale``)."""
    return opts is not None and bool(getattr(opts, "rate", 0.0) or getattr(opts, "time_scale", 0.0))


def trace_offsets(prompts: list[Prompt], time_scale: float) -> list[float]:
    """A trace's send times (s after the start): each prompt's ``at_s`` ÷ ``time_scale``, the first at 0."""
    if time_scale <= 0:
        raise ValueError(f"time_scale must be > 0, got {time_scale}")
    missing = [p.index for p in prompts if p.at_s is None]
    if missing:
        raise ValueError(f"--time-scale replays a trace's prompts, but prompt {missing[0]} has no at_s")
    first = min((p.at_s for p in prompts if p.at_s is not None), default=0.0)
    return [(p.at_s - first) / time_scale for p in prompts if p.at_s is not None]


def install(environment: Environment, run: LlmRun) -> None:
    """Plan the schedule at each test start where the dispenser lives; workers learn it from the master.

    Must be called after the listener that creates the dispenser (events.install), so it runs after it.
    """
    from locust.runners import MasterRunner, WorkerRunner
    if isinstance(environment.runner, WorkerRunner):
        run.arrivals = ArrivalClock()  # empty until the master deals prompts with due times
        return

    def on_test_start(environment: Environment, **_kw: Any) -> None:
        opts = environment.parsed_options
        if opts is None or not is_open_loop(opts) or run.dispenser is None:
            run.arrivals = None
            return
        dispenser = run.dispenser
        users = max(1, int(getattr(opts, "num_users", None) or 1))
        lead = spawn_time_s(users, float(getattr(opts, "spawn_rate", None) or users)) + (
            MASTER_MARGIN_S if isinstance(environment.runner, MasterRunner) else START_MARGIN_S)
        prompts = list(dispenser.prompts[:dispenser.limit])
        trace = not opts.rate
        offsets = trace_offsets(prompts, opts.time_scale) if trace else \
            arrival_offsets(dispenser.limit, opts.rate, opts.arrival, opts.burstiness, opts.seed)
        clock = ArrivalClock()
        start = time.time() + lead
        clock.plan(prompts, offsets, start)
        clock.info = {"arrival": "trace" if trace else opts.arrival, "rate": None if trace else opts.rate,
                      "time_scale": opts.time_scale if trace else None,
                      "burstiness": opts.burstiness if opts.arrival == "poisson" and not trace else None,
                      "late_ms": opts.late_ms, "users": users, "seed": opts.seed, "scheduled": dispenser.limit,
                      "start_ts": start, "lead_s": lead, "end_ts": None, "handed_out": None,
                      "prompt_indices": [p.index for p in prompts], "offsets_s": [round(o, 6) for o in offsets]}
        run.arrivals = clock
        write(opts.records_file, clock.info)
        log.info("tokenswarm: open loop, %d requests %s, at most %d in flight, first due in %.2f s", dispenser.limit,
                 f"on the trace's clock ×{opts.time_scale:g}" if trace else f"at {opts.rate:g}/s ({opts.arrival})",
                 users, lead)

    def on_test_stop(**_kw: Any) -> None:
        if run.arrivals is not None and run.arrivals.info and run.arrivals.info["end_ts"] is None:
            run.arrivals.info["end_ts"] = time.time()  # what was due before this and never sent: the cap fell behind

    def on_quitting(environment: Environment, **_kw: Any) -> None:
        opts, clock = environment.parsed_options, run.arrivals
        if opts is None or clock is None or not clock.info:
            return
        on_test_stop()
        clock.info["handed_out"] = run.dispenser.handed_out if run.dispenser is not None else None
        write(opts.records_file, clock.info)

    environment.events.test_start.add_listener(on_test_start)
    environment.events.test_stop.add_listener(on_test_stop)
    environment.events.quitting.add_listener(on_quitting)
