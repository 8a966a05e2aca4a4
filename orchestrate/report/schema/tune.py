"""A tune's answer (``tune_summary.json``): the best settings as a command line, the runner-up, the frontier and
every candidate of the grid with its figures or why it was dropped.

Stage: report. ``aggregates/tune.py:tune_result`` builds it from the tune's ledger (``tune.json``, written by
``orchestrate.tune.loop``) and each candidate's own ``summary.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class Standing:
    """A candidate as the search weighs it, from its summary alone (``aggregates/tune.py:standing``)."""

    value: float | None = None
    """The objective at its capacity; None: no answer (it did not load, passed no probe, broke a constraint)."""
    capacity: int | float | None = None
    """Its capacity (``capacity.max_passing``); None when no probe passed."""
    memory_gib: float | None = None
    """Its server's peak memory, GiB (the GPU's when sampled, else the process's); None unmeasured."""
    decode_tok_s: float | None = None
    """Steady-state decode tok/s of its probe at capacity: between equal values, clearly more of it wins."""
    out_of_memory: bool = False
    """It failed to load for want of memory, or went past ``constraints.peak_memory_gib``: every candidate that
    needs at least as much is pruned."""
    why: str | None = None
    """Why it has no value, in words; None when it has one."""


@dataclass(frozen=True)
class Candidate:
    """``candidates[]``: one point of the grid, in the grid's order."""

    name: str = ""
    """Its variant's name (``parallel-8_flash-attn-on``), its folder when it ran."""
    values: dict[str, str] = field(default_factory=dict)
    """Axis → the value's name."""
    state: str = "not_tried"
    """``best``, ``runner_up``, ``measured``, ``dropped`` (below the floor probe), ``failed`` (did not load or
    crashed), ``over_memory`` (past the constraint), ``pruned`` (a failure said it would fail) or ``not_tried``."""
    why: str | None = None
    """Why it was dropped, failed, pruned or not tried; None for a measured one."""
    order: int | None = None
    """When it ran, from 1; None when it did not."""
    floor: int | float | None = None
    """The load its first probe ran at (the best capacity so far less the noise); None: a full search."""
    objective: float | None = None
    """The objective at its capacity."""
    capacity: int | float | None = None
    """Its capacity; None when no probe passed."""
    decode_tok_s: float | None = None
    """Steady-state decode tok/s of its probe at capacity."""
    ttft_p99_ms: float | None = None
    """Steady-state TTFT p99 of its probe at capacity, ms."""
    tpot_p99_ms: float | None = None
    """Steady-state TPOT p99 of its probe at capacity, ms."""
    joules_per_output_token: float | None = None
    """Energy per output token of its probe at capacity; None without an energy reading."""
    usd_per_mtok: float | None = None
    """Dollars per million output tokens of its probe at capacity; None without ``cost:`` rates."""
    peak_memory_gib: float | None = None
    """Its server's peak memory, GiB."""
    wall_s: float | None = None
    """From its server's start to its stop, s."""


@dataclass(frozen=True)
class TuneResult:
    """``tune_summary.json``: what the tune asked, what it spent and what it found."""

    objective: str = "capacity"
    """What was optimised, at each candidate's capacity."""
    maximise: bool = True
    """Higher is better (capacity, decode tok/s); else lower (joules or dollars per token)."""
    strategy: str = "climb"
    """``climb`` or ``grid`` (``orchestrate.tune.strategy``)."""
    axes: dict[str, list[str]] = field(default_factory=dict)
    """``tune.space``: each axis's values' names."""
    grid: int = 0
    """Candidates in the grid: the server starts a full grid takes."""
    server_starts: int = 0
    """Servers the tune started (a failed start counts)."""
    wall_s: float | None = None
    """The candidates' time, s, summed."""
    ended: str = ""
    """Why the tune stopped, in words (the climb found no better neighbour, the grid was done, the budget was
    spent, it was interrupted)."""
    best: str | None = None
    """The winning candidate; None when none had a value."""
    command: str | None = None
    """The winner as a ``llama-server`` command line (host and port left to you)."""
    sentence: str = ""
    """The answer in one sentence."""
    runner_up: str | None = None
    """The next best candidate; None when there is none."""
    runner_up_within_noise: bool = False
    """Its capacity is within the capacity search's resolution of the best's (``precision``, or one user): a
    rerun may swap them."""
    frontier_memory: tuple[str, ...] = ()
    """Candidates no other beats on both capacity (higher) and peak memory (lower), by memory."""
    frontier_energy: tuple[str, ...] = ()
    """Candidates no other beats on both capacity and joules per output token, by energy; empty without energy."""
    candidates: tuple[Candidate, ...] = ()
    """Every point of the grid, in the grid's order."""
