"""The steady-state window (``steady_state``) and goodput (``goodput``, also inside the window).

Stage: report. ``aggregates/steadystate.py:steady_state`` finds the window (closed loop: requests in flight
≥ 95 % of the users; open loop: sends within 5 % of the schedule) and measures inside it; without one it says
why. ``aggregates/goodput.py:goodput`` judges requests against the scenario's ``slo:`` limits, over the whole
run and over the window.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.jsontypes import mapping, omitted
from orchestrate.report.schema.common import LIMIT_DOC, Percentiles
from orchestrate.report.schema.intervals import Intervals


@dataclass(frozen=True)
class MissedBy:
    """``missed_by``: requests that missed each SLO limit (a request over two limits counts under both), and
    every error and cancelled request (never good); a completed request is good when it is under no limit."""

    ttft_ms: int | None = omitted()
    """Completed requests over the TTFT limit (one with no content has no TTFT: over); absent without the limit."""
    tpot_ms: int | None = omitted()
    """Completed requests over the TPOT limit (one output token has no TPOT: under); absent without the limit."""
    e2e_ms: int | None = omitted()
    """Completed requests over the E2E limit; absent without the limit."""
    error: int = 0
    """Requests that ended in an error."""
    cancelled: int = 0
    """Requests cancelled by the stop."""


@dataclass(frozen=True)
class Goodput:
    """``goodput``: requests that completed within every ``slo:`` limit (vLLM's ``--goodput``, inclusive);
    the block is None without an SLO."""

    slo: dict[str, float] = mapping("limit", doc=LIMIT_DOC)
    """The limits judged, ms (``ttft_ms``, ``tpot_ms``, ``e2e_ms``: those set)."""
    requests_meeting: int = 0
    """Requests that completed with every limited value ≤ its limit."""
    share: float | None = None
    """``requests_meeting`` ÷ ALL requests sent (errors and cancelled ones included), 0–1; None when none was sent."""
    requests_per_s: float | None = None
    """``requests_meeting`` ÷ the duration (the throughput's, or the window's); None without a window."""
    output_tokens_per_s: float | None = None
    """Σ output tokens of the good requests ÷ the same duration; None without a window."""
    missed_by: MissedBy = field(default_factory=MissedBy)
    """What the other requests missed."""


@dataclass(frozen=True)
class InFlight:
    """``steady_state.in_flight`` (closed loop): requests in flight inside the window."""

    threshold: int = 0
    """The level that defines the window: 95 % of the users, rounded up (31 of 32)."""
    users: int = 0
    """The closed loop's users (``load.users``)."""
    mean: float | None = None
    """Requests in flight on average over the window (time-weighted); None for a window of no width."""
    below_share: float | None = None
    """Share of the window's time below ``threshold`` (between a reply and its user's next request), 0–1."""


@dataclass(frozen=True)
class SteadyState:
    """``steady_state``: the window where the load was what it was meant to be, and its figures
    (``steadystate.steady_state``); the block is None for a run that sent nothing. Without a window (``found``
    false) it holds ``rule``, ``reason`` and ``prompts_needed`` only; with one, the figures."""

    found: bool = False
    """A window was found."""
    rule: str = ""
    """What defines the window: ``requests in flight >= 95 % of the users`` (closed loop) or ``requests sent
    within 5 % of the arrival schedule`` (open loop)."""
    reason: str | None = omitted()
    """Why there is no window (web UI, capacity search, ramp stages, too few sends...); absent with one."""
    prompts_needed: int | None = omitted()
    """About how many prompts would give a closed loop a window; absent with a window, None when no estimate."""
    start_s: float | None = omitted()
    """The window's start, seconds after the first send."""
    end_s: float | None = omitted()
    """The window's end, seconds after the first send."""
    duration_s: float | None = omitted()
    """``end_s`` − ``start_s``."""
    requests: int | None = omitted()
    """Requests sent inside the window."""
    completed: int | None = omitted()
    """Of those, the completed ones."""
    share_of_requests: float | None = omitted()
    """``requests`` ÷ all requests sent, 0–1."""
    prefill_tok_s: float | None = omitted()
    """Prompt tokens of completed requests inside the window (each prompt spread over its send → first
    token) ÷ ``duration_s``."""
    decode_tok_s: float | None = omitted()
    """Output tokens that arrived inside the window (at their chunks' arrivals) ÷ ``duration_s``."""
    requests_per_s: float | None = omitted()
    """Completed requests that ended inside the window ÷ ``duration_s``."""
    ttft_ms: Percentiles | None = omitted()
    """TTFT of the completed requests sent inside the window, ms."""
    tpot_ms: Percentiles | None = omitted()
    """TPOT of the completed requests sent inside the window, ms."""
    goodput: Goodput | None = omitted()
    """Goodput of the requests sent inside the window, over ``duration_s``; None without an SLO."""
    intervals: Intervals | None = omitted()
    """95 % intervals of the window's rates (batch means) and latencies (order statistics); absent without a window."""
    in_flight: InFlight | None = omitted()
    """Closed loop only: requests in flight inside the window."""
    kept_up: bool | None = omitted()
    """Open loop only: the sends kept up with the schedule to its end (false: they fell behind after the window)."""
