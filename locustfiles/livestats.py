"""Live LLM figures while a run goes on: what the web UI's LLM tab, chart page and CSVs show.

Stage: load (the process that collects the records: the local runner, or the master). ``webui.py`` feeds
it from ``LlmRun.record_collected`` and serves it; this module counts (``livetable.py`` lays the figures
out as the tab's rows and the CSV's).

These are *live* figures for a person ramping users, not the report: ``summary.json`` comes from
the records file and ``orchestrate/report/aggregates/``. The definitions match the report's where they can:

- A request counts when its record reaches this process (local: when it ends; distributed: when
  the worker's batch arrives, at most about a second later).
- **Last 10 s**: the requests counted in the last ``WINDOW_S`` seconds. Prefill (decode) tok/s =
  Σ prompt (output) tokens of the completed ones ÷ 10 s (÷ the time since the first send while the
  run is younger than that). Attributing a request's tokens to its end is unbiased in steady state;
  counting chunk arrivals instead would miss every request still streaming.
- **Since start**: Σ tokens of completed requests ÷ seconds since the first send (frozen when the
  test stops), as the report's throughput.
- **This user level**: the requests sent under the user count set now (``UserLevel``), rates from the
  level's own first send: the report's web UI step, live; its 95 % intervals are the report's (``level_intervals``).
- Percentiles: nearest rank, as the report's. TTFT, TPOT and output tokens per request are over
  completed requests; ITL pools the gaps between content chunks, each weighted by its request's
  tokens per chunk. Memory is bounded: "since start" percentiles are over the last ``KEEP_VALUES``
  values of each metric (ITL: gaps), and the window's ITL over its last ``KEEP_VALUES`` gaps.
- Draft acceptance: Σ draft_accepted ÷ Σ draft_tokens (None without a drafter).
- Embeddings and rerank: inputs (texts, documents) of completed requests ÷ seconds, and E2E percentiles, their one
  latency; a checked run (a JSON schema, tools): valid replies ÷ judged replies.
"""

from __future__ import annotations

import math
import time
from bisect import bisect_left, bisect_right
from collections import Counter, deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from itertools import accumulate
from types import ModuleType
from typing import Any, NamedTuple

from locustfiles.metrics import itl_gaps_ms
from locustfiles.records import CANCELLED, OK, RequestRecord

WINDOW_S = 10.0
"""The "now" figures cover the requests counted in this many seconds."""
KEEP_VALUES = 10_000
"""Values kept per latency metric for the "since start" percentiles (the most recent ones)."""
HISTORY_POINTS = 3_600
"""Points kept for the chart page (one a second: the last hour)."""
PERCENTILES = (50, 90, 99)
RATE_BINS = 600
"""Time bins a user level keeps for its rates' intervals: neighbours merge as it is held longer (bounded memory)."""
RATE_FIELDS = ("decode_tok_s", "prefill_tok_s", "requests_per_s", "inputs_per_s")
"""What a level's bins sum, in this order: output tokens, prompt tokens, completed requests, inputs."""
MIN_COMPLETED, MIN_RATE_S = 10, 10.0
"""A level's figure gets an interval from this many values on, a rate once the level is also held this long."""
LATENCY_INTERVALS = ("ttft_ms", "tpot_ms", "e2e_ms")


def percentiles(values: Iterable[float], weights: Iterable[float] | None = None) -> dict[str, float] | None:
    """p50/p90/p99 by nearest rank; a weight repeats its value (as ``aggregates.stats.weighted_stats``)."""
    if weights is not None:
        pairs = list(zip(values, weights))
        if any(w != 1.0 for _, w in pairs):
            pairs.sort(key=lambda p: p[0])
            cum = list(accumulate(w for _, w in pairs))
            return {f"p{p}": pairs[min(bisect_left(cum, p / 100 * cum[-1]), len(pairs) - 1)][0]
                    for p in PERCENTILES} if pairs else None
        values = [v for v, _ in pairs]
    ordered = sorted(values)  # all weights 1: the first rank >= p% of n is ceil(p% × n), as above
    n = len(ordered)
    return {f"p{p}": ordered[min(max(math.ceil(p / 100 * n) - 1, 0), n - 1)] for p in PERCENTILES} if n else None


class Finished(NamedTuple):
    """What the figures need of one record, taken once when it arrives."""

    t: float
    """When it was counted (the clock of ``LiveStats``, seconds)."""
    status: str
    error_class: str | None
    prompt_tokens: int
    output_tokens: int
    ttft_ms: float | None
    ttfo_ms: float | None
    tpot_ms: float | None
    gaps_ms: list[float]
    tokens_per_chunk: float
    draft_tokens: int | None
    draft_accepted: int | None
    reasoning_tokens: int
    send_ts: float
    target_users: int | None
    """The user count it was sent under (None on a worker)."""
    e2e_ms: float | None = None
    inputs: int = 0
    """Embeddings' texts or rerank's documents (0 for chat and completions)."""
    valid: bool | None = None
    """A checked run's verdict on the reply (None: unchecked)."""

    @classmethod
    def of(cls, record: RequestRecord, t: float) -> Finished:
        ok = record.status == OK
        return cls(t, record.status, record.error_class, (record.prompt_tokens or 0) if ok else 0,
                   (record.output_tokens or 0) if ok else 0, record.ttft_ms if ok else None,
                   record.ttfo_ms if ok else None, record.tpot_ms if ok else None,
                   itl_gaps_ms(record.chunk_offsets_ms) if ok else [], record.tokens_per_chunk or 1.0,
                   record.draft_tokens if ok else None, record.draft_accepted if ok else None,
                   (record.reasoning_tokens or 0) if ok else 0, record.send_ts, record.target_users,
                   record.e2e_ms if ok else None, (record.inputs or 0) if ok else 0, record.valid if ok else None)


@dataclass
class Tally:
    """Counts, token sums and the latest ``keep`` values of each metric over a set of requests."""

    keep: int = KEEP_VALUES
    with_itl: bool = True
    """False: leave ``itl`` empty (the window collects its newest gaps itself)."""
    completed: int = 0
    errors: int = 0
    cancelled: int = 0
    prompt_tokens: int = 0
    output_tokens: int = 0
    draft_tokens: int = 0
    draft_accepted: int = 0
    reasoning_tokens: int = 0
    inputs: int = 0
    checked: int = 0
    valid: int = 0
    drafting: bool = False
    errors_by_class: Counter[str] = field(default_factory=Counter)
    ttft_ms: deque[float] = field(init=False)
    ttfo_ms: deque[float] = field(init=False)
    tpot_ms: deque[float] = field(init=False)
    itl: deque[tuple[float, float]] = field(init=False)
    """(gap ms, tokens per chunk)."""
    tokens_per_request: deque[int] = field(init=False)
    e2e_ms: deque[float] = field(init=False)

    def __post_init__(self) -> None:
        self.ttft_ms, self.ttfo_ms, self.tpot_ms, self.e2e_ms = (deque(maxlen=self.keep) for _ in range(4))
        self.itl, self.tokens_per_request = deque(maxlen=self.keep), deque(maxlen=self.keep)

    def add(self, f: Finished) -> None:
        if f.status == CANCELLED:
            self.cancelled += 1
            return
        if f.status != OK:
            self.errors += 1
            self.errors_by_class[f.error_class or f.status] += 1
            return
        self.completed += 1
        self.prompt_tokens += f.prompt_tokens
        self.output_tokens += f.output_tokens
        self.tokens_per_request.append(f.output_tokens)
        self.reasoning_tokens += f.reasoning_tokens
        self.inputs += f.inputs
        if f.valid is not None:
            self.checked += 1
            self.valid += f.valid
        if f.e2e_ms is not None:
            self.e2e_ms.append(f.e2e_ms)
        if f.ttft_ms is not None:
            self.ttft_ms.append(f.ttft_ms)
        if f.ttfo_ms is not None:
            self.ttfo_ms.append(f.ttfo_ms)
        if f.tpot_ms is not None:
            self.tpot_ms.append(f.tpot_ms)
        if self.with_itl:
            self.itl.extend((gap, f.tokens_per_chunk) for gap in f.gaps_ms[-self.keep:])
        if f.draft_tokens is not None:
            self.drafting = True
            self.draft_tokens += f.draft_tokens
            self.draft_accepted += f.draft_accepted or 0

    def figures(self, seconds: float | None) -> dict[str, Any]:
        """The figures of these requests; rates over ``seconds`` (None: no rate yet)."""
        rate = (lambda n: n / seconds if seconds else None)
        gaps = list(self.itl)
        return {
            "decode_tok_s": rate(self.output_tokens), "prefill_tok_s": rate(self.prompt_tokens),
            "requests_per_s": rate(self.completed),
            "ttft_ms": percentiles(self.ttft_ms), "ttfo_ms": percentiles(self.ttfo_ms),
            "tpot_ms": percentiles(self.tpot_ms), "e2e_ms": percentiles(self.e2e_ms),
            "inputs_per_s": rate(self.inputs), "inputs": self.inputs,
            "valid_share": self.valid / self.checked if self.checked else None, "checked": self.checked,
            "itl_ms": percentiles([g for g, _ in gaps], [w for _, w in gaps]),
            "output_tokens_mean": self.output_tokens / self.completed if self.completed else None,
            "output_tokens_p50": (percentiles(self.tokens_per_request) or {}).get("p50"),
            "acceptance": self.draft_accepted / self.draft_tokens if self.drafting and self.draft_tokens else None,
            "completed": self.completed, "errors": self.errors, "cancelled": self.cancelled,
            "prompt_tokens": self.prompt_tokens, "output_tokens": self.output_tokens,
            "reasoning_tokens": self.reasoning_tokens,
            "errors_by_class": dict(sorted(self.errors_by_class.items())),
        }


@dataclass
class Timeline:
    """``RATE_FIELDS``' sums by when they were counted, in at most ``RATE_BINS`` equal bins (pairs merge, twice as
    wide, as time goes on): cut later into any slices, in bounded memory however long a level is held."""

    width: float = 0.05
    origin: float = 0.0
    bins: list[list[float]] = field(default_factory=list)

    def add(self, t: float, sums: tuple[float, ...]) -> None:
        self.origin = self.origin if self.bins else t
        i = max(int((t - self.origin) // self.width), 0)
        while i >= RATE_BINS:
            self.bins = [[sum(col) for col in zip(*self.bins[j:j + 2])] for j in range(0, len(self.bins), 2)]
            self.width, i = self.width * 2, i // 2
        self.bins.extend([0.0] * len(sums) for _ in range(i + 1 - len(self.bins)))
        self.bins[i] = [a + b for a, b in zip(self.bins[i], sums)]

    def within(self, windows: list[tuple[float, float]]) -> list[list[float]]:
        """Each window's sums: a bin goes to the window that holds its middle, or the nearest one (a record counted
        after the stop), so the windows hold every sum; a bin is at most 1/30 of a window, past a 30-s level."""
        out, starts = [[0.0] * len(RATE_FIELDS) for _ in windows], [low for low, _ in windows]
        for j, sums in enumerate(self.bins):
            k = min(max(bisect_right(starts, self.origin + (j + 0.5) * self.width) - 1, 0), len(windows) - 1)
            out[k] = [o + v for o, v in zip(out[k], sums)]
        return out


@dataclass
class UserLevel:
    """The user count the run is set to now, and the requests sent under it: what the report calls a step
    (``ui_steps``), live."""

    users: int
    after: float
    """The previous level began here (clock seconds): a request with this count sent since is this level's
    (a count set before, and set again, is another level)."""
    set_at: float
    """When the sampler saw it set (up to a sample late)."""
    tally: Tally
    first_send_ts: float | None = None
    timeline: Timeline = field(default_factory=Timeline)

    def add(self, f: Finished) -> None:
        self.tally.add(f)
        self.first_send_ts = f.send_ts if self.first_send_ts is None else min(self.first_send_ts, f.send_ts)
        if f.status == OK:
            self.timeline.add(f.t, (f.output_tokens, f.prompt_tokens, 1, f.inputs))


def report_intervals() -> ModuleType | None:
    """``orchestrate/report/aggregates/intervals.py``: the report's; None where ``locustfiles/`` runs alone."""
    try:
        from orchestrate.report.aggregates import intervals
        return intervals
    except ImportError:
        return None


def level_intervals(level: UserLevel, end: float) -> dict[str, Any] | None:
    """The level's 95 % intervals up to ``end``: ``{metric: {p50|p90|p99: {low, high}}}`` (``LATENCY_INTERVALS``),
    ``{rate: {low, high}}`` (``RATE_FIELDS``), None for none yet; None without the report's functions."""
    report = report_intervals()
    if report is None:
        return None
    latency = {metric: _percentiles_within(report, list(getattr(level.tally, metric))) for metric in LATENCY_INTERVALS}
    return {**latency, **_rate_intervals(report, level, end)}


def _percentiles_within(report: ModuleType, values: list[float]) -> dict[str, Any] | None:
    return {f"p{p}": _bounds(report.percentile_interval(values, p / 100)) for p in PERCENTILES} if len(
        values) >= MIN_COMPLETED else None


def _rate_intervals(report: ModuleType, level: UserLevel, end: float) -> dict[str, Any]:
    """Batch means over ``BATCHES`` equal slices from the level's first send to ``end``, as the report's."""
    start = level.first_send_ts
    if start is None or end - start < MIN_RATE_S or level.tally.completed < MIN_COMPLETED:
        return dict.fromkeys(RATE_FIELDS)
    windows = report.slices(start, end)
    sums, width = level.timeline.within(windows), (end - start) / len(windows)
    return {key: _bounds(report.batch_means([s[i] / width for s in sums])) for i, key in enumerate(RATE_FIELDS)}


def _bounds(interval: Any) -> dict[str, float | None] | None:
    """An ``Interval`` as JSON: ``{"low", "high"}`` (a side None: too few values to bound it)."""
    return None if interval is None else {"low": interval.low, "high": interval.high}


class LiveStats:
    """The live figures of one test: ``add`` each collected record, read ``snapshot``.

    :param clock: wall-clock seconds (``time.time``, the clock of ``RequestRecord.send_ts``).
    :param in_flight: how many requests are out now (the dispenser's count), or None if unknown.
    """

    def __init__(self, clock: Callable[[], float] = time.time, window_s: float = WINDOW_S,
                 keep: int = KEEP_VALUES, in_flight: Callable[[], int | None] = lambda: None) -> None:
        self.clock, self.window_s, self.keep, self.in_flight = clock, window_s, keep, in_flight
        report_intervals()  # imported now, not at a mid-test snapshot: half a second that would stall the users
        self.reset()

    def reset(self) -> None:
        """A new test (or Locust's "reset stats"): forget everything."""
        self.test_number = getattr(self, "test_number", 0) + 1  # a chart page starts over when it changes
        self.run = Tally(self.keep)
        self.window: deque[Finished] = deque()
        self.first_send_ts: float | None = None
        self.chart_origin: float | None = None
        """The chart's time 0: the first sample with users or requests out (the test started), or the first
        send when a request ended before that sample."""
        self.stopped_at: float | None = None
        self.history: deque[dict[str, Any]] = deque(maxlen=HISTORY_POINTS)
        self.level: UserLevel | None = None

    def add(self, record: RequestRecord) -> None:
        """One finished request (O(its chunks)); called for every collected record."""
        now = self.clock()
        f = Finished.of(record, now)
        self.run.add(f)
        level = self.level
        if level is not None and f.target_users == level.users and f.send_ts > level.after:
            level.add(f)
        self.window.append(f)
        self._evict(now)
        if self.first_send_ts is None or record.send_ts < self.first_send_ts:
            self.first_send_ts = record.send_ts

    def set_level(self, users: int | None) -> None:
        """The user count the run is set to now (Locust's ``target_user_count``; None: unknown, a worker's)."""
        if users is None or users <= 0 or (self.level is not None and self.level.users == users):
            return
        now = self.clock()
        after = self.level.set_at if self.level is not None else float("-inf")
        self.level = UserLevel(users, after, now, Tally(self.keep))

    def stop(self) -> None:
        """The test stopped: "since start" rates stop counting time."""
        self.stopped_at = self.clock()

    def _evict(self, now: float) -> None:
        while self.window and self.window[0].t <= now - self.window_s:
            self.window.popleft()

    def snapshot(self) -> dict[str, Any]:
        """``{"elapsed_s", "window_s", "span_s", "in_flight", "now": figures, "run": figures, "level": ...}``.

        ``now`` covers the window (its rates ÷ ``span_s``: the window, or the run's age if younger),
        ``run`` everything since the first send (rates ÷ ``elapsed_s``); figures as ``Tally.figures``; ``level``
        (None until a user count is seen) also ``users``, ``set_s_ago``, ``seconds``, ``intervals``.
        """
        now = self.clock()
        elapsed = None if self.first_send_ts is None else (self.stopped_at or now) - self.first_send_ts
        span, window = self._window(now)
        level = self.level
        level_s = None if level is None or level.first_send_ts is None else (
            (self.stopped_at or now) - level.first_send_ts)
        return {"elapsed_s": elapsed, "window_s": self.window_s, "span_s": span, "in_flight": self.in_flight(),
                "now": window, "run": self.run.figures(elapsed if elapsed is not None and elapsed > 0 else None),
                "level": None if level is None else {
                    "users": level.users, "set_s_ago": (self.stopped_at or now) - level.set_at, "seconds": level_s,
                    **level.tally.figures(level_s if level_s is not None and level_s > 0 else None),
                    "intervals": level_intervals(level, self.stopped_at or now)}}

    def _window(self, now: float, itl: bool = True) -> tuple[float, dict[str, Any]]:
        """The window's span (seconds) and figures (``itl=False``: without the ITL percentiles)."""
        self._evict(now)
        tally = Tally(self.keep, with_itl=False)
        for f in self.window:
            tally.add(f)
        budget = self.keep if itl else 0
        for f in reversed(self.window):  # the newest gaps, at most ``keep``
            if budget <= 0:
                break
            gaps = f.gaps_ms[-budget:]
            tally.itl.extend((gap, f.tokens_per_chunk) for gap in gaps)
            budget -= len(gaps)
        # Young runs: rates over the time since the first send, not over a window mostly empty.
        span = self.window_s if self.first_send_ts is None else min(self.window_s, now - self.first_send_ts)
        return span, tally.figures(span if span > 0 else None)

    def sample(self, users: int | None = None, spawn_rate: float | None = None,
               target: int | None = None) -> dict[str, Any] | None:
        """Append one chart point (time since the test started, users, in flight, the "now" figures) from
        the first second users run, so the ramp is drawn before any request has ended; None (and nothing
        kept) before the test starts or after the stop."""
        if self.stopped_at is not None:
            return None
        self.set_level(target)
        t, in_flight = self.clock(), self.in_flight()
        if self.chart_origin is None:
            if self.first_send_ts is None and not users and not in_flight:
                return None
            self.chart_origin = self.first_send_ts if self.first_send_ts is not None else t
        _, now = self._window(t, itl=False)  # only what the chart draws: this runs every second
        point = {"t": t - self.chart_origin, "users": users, "spawn_rate": spawn_rate, "in_flight": in_flight,
                 "decode_tok_s": now["decode_tok_s"] or 0.0, "prefill_tok_s": now["prefill_tok_s"] or 0.0,
                 "requests_per_s": now["requests_per_s"] or 0.0,
                 "ttft_p50_ms": (now["ttft_ms"] or {}).get("p50"), "ttft_p99_ms": (now["ttft_ms"] or {}).get("p99"),
                 "tpot_p50_ms": (now["tpot_ms"] or {}).get("p50"), "errors": self.run.errors}
        self.history.append(point)
        return point
