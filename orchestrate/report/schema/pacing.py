"""An open loop's figures (``arrivals``) and a staged ramp's (``stages``).

Stage: report. ``aggregates/pacing_figures.py:load_mode_summary`` computes both from ``requests.jsonl`` and
the files the Locust side writes: ``arrivals.json`` (the schedule) and ``stages.json`` (the stages and when
each actually began). A request is *sent* when it has a record; *unsent* when it was scheduled and never went
out (a lost worker's requests are neither).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.jsontypes import omitted
from orchestrate.report.schema.common import PercentilesMeanMax, Stats


@dataclass(frozen=True)
class LatencyFromSchedule:
    """``arrivals.latency_from_schedule_ms``: latencies of the completed requests counted from their scheduled
    send time (what a user of the service waits), ms."""

    ttft: Stats | None = None
    """Scheduled send → first token."""
    e2e: Stats | None = None
    """Scheduled send → end of the stream."""


@dataclass(frozen=True)
class Arrivals:
    """``arrivals`` (a ``rate`` or a trace): the schedule asked, kept and missed (``pacing_figures.summarize_arrivals``)."""

    mode: str | None = None
    """The arrival process: ``poisson``, ``constant``, or ``trace`` (a trace's own times)."""
    time_scale: float | None = omitted()
    """``trace``: the replay's speed (2: twice as fast as the trace); absent for a rate."""
    rate_asked: float | None = None
    """The rate asked, requests/s (``load.rate``)."""
    burstiness: float | None = None
    """Poisson only: the gamma shape of the gaps (1: Poisson, < 1 burstier); None for ``constant``."""
    users_cap: int | None = None
    """The most requests in flight (``load.users``)."""
    late_ms: float = 0.0
    """A request sent more than this after its scheduled time is late, ms."""
    seed: int | None = None
    """The schedule's seed."""
    rate_scheduled: float | None = None
    """The rate of the schedule drawn: (scheduled − 1) ÷ its last offset, requests/s."""
    rate_achieved: float | None = None
    """(sent − 1) ÷ first to last send, requests/s; None under two sends."""
    scheduled: int = 0
    """Requests in the schedule."""
    sent: int = 0
    """Requests sent (with a record and a scheduled time)."""
    unsent: int = 0
    """Scheduled and never sent (a lost worker's excluded)."""
    unsent_overdue: int = 0
    """Of those, already due when the run ended: the cap fell behind."""
    unsent_not_due: int = 0
    """Of those, not yet due: the time cap cut the schedule short."""
    late: int = 0
    """Requests sent more than ``late_ms`` after their scheduled time."""
    late_share: float | None = None
    """``late`` ÷ ``sent``; None when none was sent."""
    send_delay_ms: PercentilesMeanMax | None = None
    """Actual − scheduled send time, ms (how long a request waited for a free user)."""
    latency_from_schedule_ms: LatencyFromSchedule = field(default_factory=LatencyFromSchedule)
    """TTFT and E2E from the scheduled time."""
    start_ts: float | None = None
    """Wall clock of the schedule's time 0."""
    end_ts: float | None = None
    """Wall clock the run ended; None when unknown."""
    cap_fell_behind: bool = False
    """Some request was late or overdue: the latencies from the schedule are the ones users would see."""


@dataclass(frozen=True)
class Stage:
    """``stages[]`` (a ``stages`` ramp only): one stage and the requests sent while it was active
    (``pacing_figures.summarize_stages``)."""

    stage: int = 0
    """Its number, from 1."""
    users: int = 0
    """The users it ramps to."""
    duration_s: float | None = None
    """Its length as asked, s."""
    spawn_rate: float | None = None
    """Users started (or stopped) per second; None when unsaid."""
    reached: bool = False
    """The run got to it."""
    started_s: float | None = None
    """When it actually began, s after the ramp's start; None when not reached."""
    active_s: float | None = None
    """How long it was active, s; None when not reached."""
    requests: int = 0
    """Requests sent while it was active."""
    completed: int = 0
    """Of those, completed."""
    errors: int = 0
    """Of those, errors."""
    cancelled: int = 0
    """Of those, cancelled (a ramp-down stops users at once)."""
    peak_in_flight: int = 0
    """The most requests in flight during it."""
    decode_tok_s: float | None = None
    """Output tokens received during it ÷ ``active_s``."""
    ttft_p50_ms: float | None = None
    """TTFT median of its completed requests, ms."""
    ttft_p99_ms: float | None = None
    """TTFT p99 of its completed requests, ms."""
    tpot_p50_ms: float | None = None
    """TPOT median of its completed requests, ms."""
