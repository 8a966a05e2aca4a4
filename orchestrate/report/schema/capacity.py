"""A capacity search's answer (``capacity``): its settings, every probe judged, the boundary, the cliff.

Stage: report. ``aggregates/capacity.py:capacity_block`` builds it from ``search.json`` and each probe's own
``summary.json`` under ``steps/``; ``aggregates/capacity.py:judge`` gives each probe's verdict (``Verdict``).
A probe passes when it completed, had a steady-state window, the share of the requests sent in that window
that met every SLO limit reached ``attainment``, and, in an open loop, the sends kept up with the schedule.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.jsontypes import mapping, omitted
from orchestrate.report.schema.common import LIMIT_DOC
from orchestrate.report.schema.intervals import Interval
from orchestrate.report.schema.steady import MissedBy


@dataclass(frozen=True)
class ProbeFigures:
    """A probe's steady-state figures, picked from its summary's ``steady_state``."""

    found: bool = False
    """The probe had a steady-state window."""
    decode_tok_s: float | None = None
    """The window's decode tok/s; None without a window."""
    requests_per_s: float | None = None
    """The window's completed requests per second; None without a window."""
    ttft_p99_ms: float | None = None
    """The window's TTFT p99, ms; None without a window or a completed request in it."""
    tpot_p99_ms: float | None = None
    """The window's TPOT p99, ms; None without a window or a TPOT in it."""
    requests: int | None = None
    """Requests sent inside the window; None without a window."""


@dataclass(frozen=True)
class Verdict:
    """One probe's verdict and figures from its summary alone (``capacity.judge``)."""

    attainment: float | None = None
    """Share of the requests sent in its window that met every SLO limit (its ``goodput.share``), 0–1;
    None without a window."""
    passed: bool = False
    """It completed, had a window, reached the search's ``attainment`` and (open loop) kept up."""
    stopped_early: bool = False
    """The run stopped it because it could no longer pass (``stopped_by: cannot_pass``)."""
    why: str | None = None
    """Why it failed, in words; None when it passed."""
    missed_by: MissedBy | None = None
    """What its requests missed: in its window, or over all of them when it had none; None without goodput."""
    steady_state: ProbeFigures = field(default_factory=ProbeFigures)
    """Its steady-state figures."""
    attainment_interval: Interval | None = omitted()
    """The 95 % interval of ``attainment`` (``steady_state.intervals.goodput_share``); absent without one."""
    uncertain: bool = omitted(False)
    """The interval straddles the search's attainment: this verdict could have gone the other way by chance."""


@dataclass(frozen=True)
class ProbeHead:
    """Which probe: its number, load and folder (``search.json``'s record of it)."""

    n: int = 0
    """Its place in the order run, from 1."""
    value: int | float = 0
    """The load it ran: users, or requests/s (``over``)."""
    label: str = ""
    """Its folder under ``steps/`` and its name in messages (``probe-03-users-8``)."""


@dataclass(frozen=True)
class Probe(Verdict, ProbeHead):
    """``capacity.probes[]``: a probe (``ProbeHead``'s keys first) and its verdict; a probe without a
    summary is judged as ``not_run``."""


@dataclass(frozen=True)
class Cliff:
    """``capacity.cliff``: the first load at which steady-state decode tok/s fell 10 % below a lower load's
    (the median over each load's probes that ran to the end)."""

    value: int | float = 0
    """The load where throughput fell."""
    decode_tok_s: float | None = None
    """Its steady-state decode tok/s."""
    peak_value: int | float = 0
    """The lower load with the highest decode tok/s before it."""
    peak_decode_tok_s: float | None = None
    """That load's steady-state decode tok/s."""


@dataclass(frozen=True)
class Capacity:
    """``capacity`` (a capacity search only): the highest load whose probes' steady state had ``attainment`` of
    its requests within every ``slo:`` limit, against one server start (``capacity.capacity_block``)."""

    over: str = ""
    """What was searched: ``users`` (closed loop) or ``rate`` (open loop, requests/s)."""
    unit: str = ""
    """The load's unit in words: ``users`` or ``req/s``."""
    range: tuple[int | float, ...] = ()
    """[low, high]: the loads searched between."""
    slo: dict[str, float] = mapping("limit", doc=LIMIT_DOC)
    """The SLO limits judged, ms."""
    attainment: float | None = None
    """Share of a probe's steady-state requests that must meet every limit, 0–1."""
    precision: float | None = None
    """Bisecting stops when the highest passing and lowest failing loads differ by this share or less."""
    max_passing: int | float | None = None
    """The capacity: the highest load that passed (every probe of it); None when none passed."""
    min_failing: int | float | None = None
    """The lowest load that failed; None when none failed."""
    converged: bool = False
    """The boundary is as close as ``precision`` asks (false: the probe limit came first, or no probe ran)."""
    limited_by: str | None = None
    """The SLO key (or ``error``) the requests at ``min_failing`` missed most; None when nothing was missed."""
    probes: tuple[Probe, ...] = ()
    """Every probe, in the order run."""
    cliff: Cliff | None = None
    """Where throughput fell while load rose; None when it never did."""
    wall_s: float | None = None
    """The search's wall time, s; None when it never ended (``search.json`` has no end)."""
    uncertain: tuple[int | float, ...] = omitted(())
    """The boundary loads (``max_passing``, ``min_failing``) with a probe whose attainment interval straddled the
    attainment: the capacity may be a step off; absent when none."""
    sentence: str = ""
    """The answer in one sentence (``serves 8 users within TTFT ≤ 150 ms for 99 % of requests ...``)."""
