"""``summary.json`` whole: ``Summary``, its keys in the order the file has them.

Stage: report. ``report/summary.py:build_summary`` writes it: the names, then the run loop's facts
(``RunFacts``, in its order), then the blocks the aggregates compute, in the order it adds
them. A key only some runs have is absent from the others (``omitted``); ``tokenswarm report`` rebuilds the
same file from the variant's files and ``run.json``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from orchestrate.report.jsontypes import mapping, omitted, run_json_only
from orchestrate.report.schema.capacity import Capacity
from orchestrate.report.schema.common import LIMIT_DOC, SETTING_DOC
from orchestrate.report.schema.cost import Cost
from orchestrate.report.schema.gputelemetry import GpuTelemetry
from orchestrate.report.schema.headline import (
    Connections,
    Headline,
    ServerDown,
)
from orchestrate.report.schema.intervals import Intervals
from orchestrate.report.schema.machine import Client, Energy, Host, LocustCrosscheck, Workers
from orchestrate.report.schema.pacing import Arrivals, Stage
from orchestrate.report.schema.request import Request
from orchestrate.report.schema.runfacts import (
    FirstAttempt,
    Machine,
    ModelFile,
    Repeat,
    Resumed,
    Sampling,
    Step,
    Warmup,
)
from orchestrate.report.schema.server import Memory, Server, ServerMetrics
from orchestrate.report.schema.serverside import ServerSide
from orchestrate.report.schema.steady import Goodput, SteadyState
from orchestrate.report.schema.sweep import Sweep
from orchestrate.report.schema.trace import Trace
from orchestrate.report.schema.turns import Conversations, TurnRow
from orchestrate.report.schema.ui import UiSteps, UsersOverTime
from orchestrate.report.schema.until import Until
from orchestrate.scenario.cost import CostRates
from orchestrate.scenario.spec import Factor, LoadSpec


@dataclass(frozen=True)
class Names:
    """Whose result it is."""

    scenario: str = ""
    """The scenario's name."""
    variant: str = ""
    """The variant's name."""


@dataclass(frozen=True)
class RunFacts:
    """What a run knew about a variant, a sweep step or a search probe that its result files do not say.

    The contract between the run loop and the report: the run loop hands one ``RunFacts`` to
    ``summary.build_summary``, which writes it into ``run.json`` beside the summary; ``tokenswarm report``
    reads it back and rebuilds the same summary from the files. So what a rebuild keeps is these fields, by
    construction: a key the run knows and the rebuild forgets cannot exist. Each lands in ``summary.json``
    under its own name (``Summary`` is a ``RunFacts``), but ``load``, kept in ``run.json`` only.
    """

    status: str | None = None
    """``completed``, ``failed`` (every request failed: ``error`` says how and quotes the server), ``failed_to_load``,
    ``crashed``, ``server_lost``, ``error`` or ``interrupted``; None for a folder no run loop wrote (a plain Locust
    run's, rebuilt by ``tokenswarm report``)."""
    error: str | None = None
    """What went wrong, in one line; None when nothing did."""
    stopped_by: str | None = omitted()
    """What ended the load: ``num_prompts``, ``time_cap``, ``ui_stop``, ``server_lost``, ``interrupted``,
    ``cannot_pass`` (a probe that could no longer pass), ...; absent when no load ran."""
    planned_prompts: int | None = omitted()
    """Requests planned (every turn of a conversation; a search's: those dealt to its probes); absent when unknown."""
    sampling: Sampling | None = omitted()
    """How the prompts were sampled; absent in a step's summary and when none were."""
    settings: dict[str, Any] = mapping("setting", omit=True, doc=SETTING_DOC)
    """The variant's flat settings as run (``settings.variant_settings``; ``server.reported.*`` for a server
    tokenswarm did not start): dotted keys, values scalars or lists."""
    load: LoadSpec | None = run_json_only()
    """The load section the result ran (a single run: the variant's; a sweep step or a probe: the step's own);
    None for a sweep's or a search's own summary (no single load) and in ``run.json`` written before it
    (``settings.load_of`` reads it back from ``settings``). Kept in ``run.json`` only: ``summary.json`` records
    the load flat, in ``settings``."""
    factors: dict[str, Factor] = mapping("axis")
    """A matrix's factor levels, by axis (empty without factors)."""
    retried: bool = False
    """This result is the retry of a failed load (``on_load_failure.retry_with``)."""
    first_attempt: FirstAttempt | None = omitted()
    """The failed load before the retry; absent without one."""
    slo: dict[str, float] = mapping("limit", omit=True, doc=LIMIT_DOC)
    """The ``slo:`` limits, ms (``ttft_ms``, ``tpot_ms``, ``e2e_ms``: those set); absent without an SLO."""
    cost_rates: CostRates | None = omitted()
    """The prices the run was given (``cost:``, ``--usd-per-hour``, ``--usd-per-kwh``); absent without prices."""
    save_detailed: bool = run_json_only(False)
    """``--save-detailed``: ``vllm_bench.json`` lists every request (vLLM's flag). Kept in ``run.json`` only, so
    that ``tokenswarm report`` writes the same file again."""
    repeat: Repeat | None = omitted()
    """Which repeat this is; absent without repeats."""
    warmup: Warmup | None = omitted()
    """The warm-up sent before the load; absent without one."""
    machine: Machine | None = omitted()
    """The host measured on; absent in a step's summary."""
    model: ModelFile | None = omitted()
    """The model file; absent in a step's summary."""
    step: Step | None = omitted()
    """A sweep step's or probe's key and value; absent in a variant's summary."""
    ui: bool = omitted(False)
    """Locust's web UI ran the load: a person set the users; absent otherwise."""
    sweep: Sweep | None = omitted()
    """A sweep's steps; absent without a sweep."""
    resumed: Resumed | None = omitted()
    """``--resume`` ran this variant again; absent otherwise."""


@dataclass(frozen=True)
class Summary(Headline, RunFacts, Names):
    """``summary.json``: one variant's (or one sweep step's or search probe's) result: its names, what the run
    knew (``RunFacts``), the headline figures (``Headline``), then the other blocks the aggregates computed from
    its files."""

    goodput: Goodput | None = None
    """Requests within every ``slo:`` limit, over ``duration_s``; None without an SLO."""
    locust_crosscheck: LocustCrosscheck | None = None
    """Locust's own counts; None without its ``--json-file`` output."""
    crosscheck_agrees: bool | None = None
    """Locust's counts equal the records'; None without them."""
    connections: Connections | None = None
    """The connections opened; None for records that do not say."""
    memory: Memory = field(default_factory=Memory)
    """Memory peaks of the server and the GPUs."""
    host: Host | None = None
    """How busy the host was; None without host readings."""
    server_metrics: ServerMetrics = field(default_factory=ServerMetrics)
    """The server's own ``/metrics`` counters against the records."""
    server: Server = field(default_factory=Server)
    """``server.json``: how the server ran (empty in a step's summary)."""
    server_down: ServerDown | None = omitted()
    """When the server went down (``crashed``, ``server_lost`` only); absent otherwise."""
    workers: Workers | None = None
    """``workers.json``, the master's ledger of its workers; None without distributed workers."""
    client: Client | None = None
    """The load generators' self-check; None without ``client.json``."""
    workers_lost: int = 0
    """Workers that went missing (``workers.workers_lost``; 0 without workers)."""
    arrivals: Arrivals | None = omitted()
    """An open loop's schedule asked, kept and missed; absent without a ``rate`` or a trace."""
    trace: Trace | None = omitted()
    """A trace replay: what was replayed and how, prefix reuse, arrivals per second, latency by prompt length;
    absent without ``dataset: trace``."""
    request: Request | None = omitted()
    """What each request was when not plain text chat (completions, embeddings, rerank, a constraint, tools,
    images) and the figures its kind asks for; absent for plain text chat."""
    stages: tuple[Stage, ...] = omitted(())
    """A ramp's stages; absent without ``stages``."""
    users_over_time: UsersOverTime | None = omitted()
    """A web UI run's user levels; absent otherwise (and without Locust's history)."""
    ui_steps: UiSteps | None = omitted()
    """A web UI run's levels as steps; absent otherwise (and without a level to show)."""
    turns: tuple[TurnRow, ...] = omitted(())
    """Multi-turn: figures by turn index; absent for single requests."""
    conversations: Conversations | None = omitted()
    """Multi-turn: the conversations planned, completed and cut; absent for single requests and in a sweep's
    own summary."""
    steady_state: SteadyState | None = None
    """The steady-state window and its figures, or why there is none; None for a run that sent nothing."""
    energy: Energy = field(default_factory=Energy)
    """The serving machine's energy over ``duration_s``."""
    capacity: Capacity | None = omitted()
    """A capacity search's answer; absent without a search."""
    intervals: Intervals | None = omitted()
    """95 % intervals of the headline figures over the whole run, from this run alone (``Intervals``); absent when
    no request completed."""
    server_side: ServerSide | None = omitted()
    """The server's own view from its ``/metrics`` (llama.cpp, vLLM, SGLang, TGI in one vocabulary): queue, running,
    KV-cache use, its latency histograms beside the client's; absent when it exported none of them."""
    gpus: GpuTelemetry | None = omitted()
    """Each charged GPU's utilization, temperature, SM clock and throttling over the run; absent without GPU
    telemetry."""
    until: Until | None = omitted()
    """``load.until``: which precision targets held, when, or why not; absent without targets."""
    cost: Cost | None = omitted()
    """Dollars per million tokens from the run's seconds and joules at ``cost_rates``; absent without prices."""
    notes: tuple[str, ...] = ()
    """Plain-language caveats a reader must see next to the numbers."""
