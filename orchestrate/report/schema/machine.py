"""The machines' side of ``summary.json``: the serving machine's energy (``energy``), the host's own load
(``host``), the load generators' self-check (``client``), the workers' ledger (``workers``) and Locust's
own count (``locust_crosscheck``).

Stage: report. ``aggregates/energy.py:energy`` (power readings of ``metrics.jsonl``), ``aggregates/host.py``
(its ``host`` readings, ``load/host_probe.py``), ``aggregates/client.py`` (``client.json``, written by
``locustfiles/selfcheck.py``; Locust's ``--json-file`` and ``_stats.csv``); ``workers`` is ``workers.json`` as
the master wrote it (``locustfiles/distributed.py:WorkerLedger`` and ``locustfiles/admission.py:Gate``).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from orchestrate.report.jsontypes import mapping, omitted
from orchestrate.report.schema.common import MedianMeanMax


@dataclass(frozen=True)
class EnergyWindow:
    """Joules over one window, as far as the power readings reach (``energy._window``); the steady state's
    also has its ``output_tokens_per_joule``."""

    window_s: float | None = None
    """The window's length, s."""
    coverage: float | None = None
    """Share of the window the readings cover, 0–1."""
    joules: float | None = None
    """Energy over the window, J (a last sliver not covered counted at the mean); None below 95 % coverage."""
    mean_watts: float | None = None
    """Mean power over the covered part, W; None without a reading inside the window."""
    unavailable: str | None = None
    """Why there are no joules; None when there are."""
    output_tokens_per_joule: float | None = None
    """The window's decode tok/s ÷ ``mean_watts``; None without joules or decode."""


@dataclass(frozen=True)
class Energy:
    """``energy``: the serving machine's energy over the headline's window (first send to last end). Without
    any reading only ``source`` (None), ``joules`` (None) and ``unavailable`` are there."""

    source: str | None = None
    """``nvml`` (NVML energy counter), ``nvidia-smi`` (power.draw, integrated) or ``rapl`` (CPU packages);
    None without a reading."""
    devices: str | None = omitted()
    """What the power is of: ``every GPU``, ``GPUs 0,1`` (the server's), ``CPU packages``; None when unsaid."""
    window_s: float | None = omitted()
    """The window's length, s."""
    coverage: float | None = omitted()
    """Share of the window the readings cover, 0–1."""
    joules: float | None = None
    """Energy over the window, J; None below 95 % coverage or without readings."""
    mean_watts: float | None = omitted()
    """Mean power over the covered part, W."""
    unavailable: str | None = None
    """Why there are no joules (what the machine lacks, or the coverage); None when there are."""
    idle_watts: float | None = omitted()
    """Mean power sampled before the load, W; None without a sample before it."""
    output_tokens_per_joule: float | None = omitted()
    """Σ output tokens ÷ ``joules``."""
    joules_per_output_token: float | None = omitted()
    """``joules`` ÷ Σ output tokens."""
    prefill_tokens_per_joule: float | None = omitted()
    """Σ prompt tokens ÷ ``joules``."""
    steady_state: EnergyWindow | None = omitted()
    """The same over the steady-state window; None without one."""


@dataclass(frozen=True)
class HostLimits:
    """``host.limits``: past these p50s the host counts as busy (scenario ``host_limits:``)."""

    foreign_cpu_pct: float | None = None
    """Foreign CPU limit, % of one core."""
    steal_pct: float | None = None
    """Steal limit, % of all CPU time."""


@dataclass(frozen=True)
class Host:
    """``host``: how busy the host was while the variant ran, from a reading a second (``host.summarize_host``);
    the block is None without readings."""

    foreign_cpu_pct: MedianMeanMax | None = None
    """CPU used by processes neither the server's nor tokenswarm's, % of one core."""
    steal_pct: MedianMeanMax | None = None
    """CPU time the hypervisor gave to others, % of all CPU time."""
    server_cpu_pct: MedianMeanMax | None = None
    """The server's processes' CPU, % of one core."""
    own_cpu_pct: MedianMeanMax | None = None
    """tokenswarm's own CPU (orchestrator, Locust, workers), % of one core."""
    foreign_gpu_processes: tuple[str, ...] | None = None
    """``pid name`` of every GPU compute process not the server's, sorted; None without ``nvidia-smi``."""
    server_processes: str | None = None
    """How the server's processes were found: ``launcher``, ``port`` or ``unknown`` (its CPU is then foreign)."""
    limits: HostLimits = field(default_factory=HostLimits)
    """The limits judged by."""
    foreign_cpu_s_over_limit: int = 0
    """Readings (seconds) with foreign CPU over its limit."""
    busy: bool = False
    """Past the limits: its numbers are not comparable with a quiet run's (the notes say why)."""


@dataclass(frozen=True)
class LoopLag:
    """``client.loop_lag_ms``: the event-loop lag of the worst process (a 10 ms sleep's lateness), ms."""

    p50: float | None = None
    """Median lag."""
    p99: float | None = None
    """99th percentile lag."""
    max: float | None = None
    """Largest lag."""
    own_p99: float | None = None
    """The largest p99 of the part the process surely spent running its own work."""


@dataclass(frozen=True)
class Client:
    """``client``: the load generators' self-check (``client.summarize_client``); None without ``client.json``."""

    loop_lag_ms: LoopLag = field(default_factory=LoopLag)
    """The worst process's loop lag."""
    cpu_pct: float | None = None
    """The busiest process's CPU, % of one core."""
    workers: int = 0
    """Processes that ran users."""
    saturated: bool = False
    """The client's own work made it late (``own_p99`` over 5 ms) or a process used 90 % of a core."""
    host_busy: bool = False
    """Late (lag p99 over 5 ms) while waiting for a core other processes held: free cores would help."""


@dataclass(frozen=True)
class Rejection:
    """A worker the master refused (``workers.rejected_workers.<worker>``)."""

    reason: str = ""
    """Why (no token, a wrong one, a proof without a challenge)."""
    dropped: dict[str, int] = mapping("message")
    """What it sent afterwards that the master threw away, by message type."""


@dataclass(frozen=True)
class Workers:
    """``workers``: ``workers.json``, the master's ledger of its workers (distributed runs); None otherwise."""

    workers: tuple[str, ...] = ()
    """Every worker id that took part, sorted."""
    records_by_worker: dict[str, int] = mapping("worker")
    """Records each worker returned."""
    workers_lost: int = 0
    """Workers that went missing during the run."""
    lost_workers: tuple[str, ...] = ()
    """Their ids, sorted."""
    lost_in_flight: int = 0
    """Requests the lost workers took and never returned (not in the records)."""
    lost_prompt_indices: dict[str, tuple[int, ...]] = mapping("worker")
    """Each lost worker's prompt indices still owed, one per request."""
    join_token: bool = False
    """The master asked workers for the run's join token."""
    rejected_workers: dict[str, Rejection] = mapping("worker")
    """Every worker refused, by id."""


@dataclass(frozen=True)
class LocustCsv:
    """``locust_crosscheck.csv``: the chat row of Locust's ``_stats.csv``."""

    requests: int = 0
    """Its request count."""
    failures: int = 0
    """Its failure count."""


@dataclass(frozen=True)
class LocustCrosscheck:
    """``locust_crosscheck``: requests, failures and tokens from Locust's own stats files alone (never a result,
    a check of the records); None without Locust's ``--json-file`` output."""

    requests: int = 0
    """Chat requests Locust counted (cancelled ones are not in its rows)."""
    failures: int = 0
    """Chat requests it counted as failed."""
    no_content: int = 0
    """Replies without content it counted."""
    prompt_tokens: int = 0
    """Σ prompt tokens on its TTFT and no-content rows."""
    output_tokens: int = 0
    """Σ output tokens on its chat row."""
    duration_s: float | None = None
    """Its first start to its last request, s; None without a chat row."""
    prefill_tok_s: float | None = None
    """``prompt_tokens`` ÷ ``duration_s``."""
    decode_tok_s: float | None = None
    """``output_tokens`` ÷ ``duration_s``."""
    csv: LocustCsv | None = None
    """The ``_stats.csv`` counts; None without the file."""
